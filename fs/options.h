/* SPDX-License-Identifier: MIT */
/* The daemon's options: the configuration a tree is built with, and the defaults derived
 * from other options. Values are parsed by common/values.h. Pure: no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/values.h"

/* The daemon's defaults (docs/design.md, "Limits"), and the largest snapshot it accepts. */
#define SFS_DEFAULT_MAX_SNAPSHOT_SIZE (256ULL << 10)
#define SFS_MAX_SNAPSHOT_SIZE_LIMIT (1ULL << 30)
#define SFS_DEFAULT_MAX_BYTES (64ULL << 20)
#define SFS_DEFAULT_MAX_SNAPSHOTS 4096
#define SFS_DEFAULT_MAX_STAGING 16
/* Published snapshots never change: the kernel may cache their entries and attributes a day. */
#define SFS_DEFAULT_CACHE_TIMEOUT 86400.0
#define SFS_DEFAULT_STAGING_TTL_MS (10 * 60 * 1000)

struct sfs_audit;
struct sfs_ocistore;
struct snap_trust;

/* What a tree is built with: limits, roles, caching, and the mount it serves. */
struct sfs_tree_config {
        uint64_t max_snapshot_size;
        uint64_t max_bytes;        /* snapshots + staging together */
        uint64_t max_snapshots;
        unsigned max_staging;      /* staging files per uid */
        uint64_t max_staging_bytes; /* staging bytes per uid; 0: a quarter of max_bytes, but
                                       at least max_snapshot_size */
        uint64_t max_uid_snapshots; /* published snapshots per uid other than the owner,
                                       unlinked-but-open ones included; 0: a quarter of
                                       max_snapshots */
        uint64_t max_uid_bytes;    /* their bytes; 0: a quarter of max_bytes, but at least
                                       max_snapshot_size */
        struct value_uid_list readers;
        struct value_uid_list publishers; /* empty (not any, no uid): the mount owner and
                                             root (roles.c) */
        bool read_only;            /* no .staging/ */
        bool unlink_own;           /* a publisher may remove its own snapshots */
        uid_t owner_uid;           /* owner shown on the directories */
        gid_t owner_gid;
        uint64_t dev;              /* st_dev of the mount, for the binding xattr (0 if unknown) */
        uint64_t read_view_dev;    /* st_dev of the read-only view, if there is one */
        double cache_timeout;      /* seconds the kernel may cache immutable entries/attrs */
        uint64_t staging_ttl_ms;   /* closed staging files idle this long are removed; 0 never */
        struct sfs_audit *audit;   /* may be NULL */
        struct sfs_ocistore *ocistore; /* --store: snapshots written there first; or NULL */
        struct snap_trust *trust;  /* --trust-key: publish only what signed manifests name */
};

/* Fills the limits left 0 in cfg from the others, as docs/design.md ("Limits") says: staging
 * bytes per uid and bytes per uid a quarter of max_bytes but at least max_snapshot_size, and
 * snapshots per uid a quarter of max_snapshots (at least 1). */
void sfs_tree_config_derive(struct sfs_tree_config *cfg);
