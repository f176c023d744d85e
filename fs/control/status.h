/* SPDX-License-Identifier: MIT */
/* The daemon's health (docs/design.md, "Health and metrics"): what the control channel's
 * status and metrics operations answer, and the one-line summary a service manager shows
 * (STATUS= to $NOTIFY_SOCKET, sent when it changes, at most once a second). Read from the
 * registry (the scopes and their views), the main tree (limits, usage), --store and the
 * counters of fs/base/metrics.h. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <sys/types.h>

#include "fs/base/metrics.h"

struct sfs_registry;

/* What only the daemon's start knows: where it serves. Copied; NULL strings are fine. Sets
 * the start time too. 0 or -ENOMEM. */
int sfs_status_set_daemon(const char *mount, const char *read_view, const char *store_dir);
/* The supervisor that keeps the mounts' connections (0: none) and how many successors took
 * them over so far. */
void sfs_status_set_takeover(pid_t supervisor, unsigned count);
/* Forgets it (at exit). */
void sfs_status_clear_daemon(void);

/* The status object: pid, version, started, uptime, mounts (main, read view, scopes), store,
 * limits, usage, counters. 0 and *out, or -ENOMEM. */
int sfs_status_json(struct sfs_registry *r, json_object **out);
/* The metrics text in format: 0, *out (malloc'd) and *len, or -ENOMEM. */
int sfs_status_metrics(struct sfs_registry *r, enum sfs_metrics_format format, char **out,
                       size_t *len);
/* The summary line ("serving MNT: 3 snapshots, ..."), at most size - 1 bytes. */
void sfs_status_line(struct sfs_registry *r, char *buf, size_t size);

/* Starts the thread that sends STATUS= when the summary changes (checked once a second, and
 * only after an event: a publish, a refusal, a scope's change), when $NOTIFY_SOCKET is set;
 * nothing otherwise. 0 or -errno. */
int sfs_status_notifier_start(struct sfs_registry *r);
/* Stops it. Fine when it never started. */
void sfs_status_notifier_stop(void);
