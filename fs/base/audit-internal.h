/* SPDX-License-Identifier: MIT */
/* Tunables of the audit queue, for the unit tests (tests/unit/test_audit.c): the defaults
 * suit the daemon. Not for other components. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fs/base/audit.h"

struct sfs_audit_limits {
        size_t queue_max;       /* lines queued at most; refusals coalesce from half of it */
        unsigned burst;         /* refusals of one uid written one by one ... */
        unsigned per_sec;       /* ... and then this many a second */
        uint64_t interval_ms;   /* how often coalesced refusals are written */
        uint64_t (*now_ms)(void); /* CLOCK_MONOTONIC in ms */
};

#define SFS_AUDIT_QUEUE_MAX 4096
#define SFS_AUDIT_BURST 64
#define SFS_AUDIT_PER_SEC 16
#define SFS_AUDIT_INTERVAL_MS 1000

/* Replaces the limits; only before sfs_audit_start. */
void sfs_audit_set_limits(struct sfs_audit *a, const struct sfs_audit_limits *lim);
