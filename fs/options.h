/* SPDX-License-Identifier: MIT */
/* The daemon's options: the configuration a tree is built with, and the parsers of their
 * values (sizes with K/M/G suffixes, counts, durations, uid lists). The parsers are pure
 * functions (no I/O), so they can be unit-tested and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "4096", "256K", "64M", "1G" (binary units; a trailing "iB"/"B" is not accepted). Refuses
 * empty strings, signs, spaces, overflow and unknown suffixes: 0 and *out, or -EINVAL/-ERANGE. */
int sfs_parse_size(const char *s, uint64_t *out);

/* Decimal count without suffix, 1..max: 0 and *out, or -EINVAL/-ERANGE. */
int sfs_parse_count(const char *s, uint64_t max, uint64_t *out);

/* "90", "90s", "15m", "2h": a duration in milliseconds; "0" means zero. Refuses signs,
 * spaces, other suffixes and overflow: 0 and *out_ms, or -EINVAL/-ERANGE. */
int sfs_parse_duration(const char *s, uint64_t *out_ms);

#define SFS_UIDSET_MAX 64

/* A set of uids, or every uid (any). The publishers' empty set means the default: the mount
 * owner and root (roles.c). */
struct sfs_uidset {
        bool any;
        unsigned n;
        uid_t uids[SFS_UIDSET_MAX];
};

/* "1000,1001": decimal uids separated by commas, no spaces, at most SFS_UIDSET_MAX, each
 * below 4294967295 (the kernel's "no uid"); or "any". 0 and *out, or -EINVAL/-ERANGE/-E2BIG. */
int sfs_parse_uidset(const char *s, struct sfs_uidset *out);

bool sfs_uidset_contains(const struct sfs_uidset *set, uid_t uid);

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
struct sfs_scope_users;

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
        struct sfs_uidset readers;
        struct sfs_uidset publishers;
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
        /* A scope's view (docs/design.md, "Scopes"): its users read it, and publish when it
         * allows that, instead of readers and publishers. NULL on the main mount. */
        const struct sfs_scope_users *scope_users;
};
