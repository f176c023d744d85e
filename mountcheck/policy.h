/* SPDX-License-Identifier: MIT */
/* What a compliant mount looks like: presets and per-field overrides. Pure parsing, no I/O,
 * so it can be unit-tested and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per-mount options a policy can require or forbid. RO/RW are the effective state: a mount is
 * read-only when either its own flag or its superblock says so. */
enum {
        MC_OPT_RO = 1U << 0,
        MC_OPT_RW = 1U << 1,
        MC_OPT_NOSUID = 1U << 2,
        MC_OPT_NODEV = 1U << 3,
        MC_OPT_NOEXEC = 1U << 4,
        MC_OPT_NOATIME = 1U << 5,
        MC_OPT_NODIRATIME = 1U << 6,
        MC_OPT_NOSYMFOLLOW = 1U << 7,
        MC_OPT_ALL = (1U << 8) - 1,
};
/* relatime/strictatime are left out on purpose: statmount reports relatime as 0, the same as
 * strictatime, so the two backends could not agree on them (and neither matters here). */

#define MC_FSTYPE_MAX 64

/* How a check treats snapfs scope views: fuse.snapfs mounts whose root names a scope in the
 * xattr user.snapfs.scope (docs/design.md, "Scopes"). */
enum mc_scope_mode {
        MC_SCOPE_IGNORE, /* ask nothing */
        /* Ask a read-write fuse.snapfs mount, the only kind the rule can refuse: a view of a
         * scope that does not allow publishing (no .staging/ in its root) must be read-only
         * (scope-writable). */
        MC_SCOPE_JUDGE,
        /* MC_SCOPE_JUDGE, and ask a read-only fuse.snapfs mount too, to report its scope. */
        MC_SCOPE_REPORT,
};

struct mc_policy {
        /* Exact filesystem type as mountinfo spells it ("fuse.snapfs", "tmpfs"); "" = any. */
        char fstype[MC_FSTYPE_MAX];
        uint32_t require; /* MC_OPT_* the mount must carry (missing-option) */
        uint32_t forbid;  /* MC_OPT_* it must not carry (forbidden-option) */
        /* Refuse shared and slave propagation: a mount event elsewhere must never reach in. */
        bool require_private;
        /* The superblock's user_id= (who mounted the FUSE filesystem) must equal owner. */
        bool check_owner;
        uint32_t owner;
        /* Accept a FUSE mount made by the checking process's own (non-root) uid. Off by
         * default: any process of that uid can unmount it (fusermount3 -u) and mount a server
         * of its own at the same path, which then serves whatever bytes it likes. */
        bool insecure_own_mount;
        /* Accept a FUSE superblock whose user namespace cannot be shown to be the initial
         * one (or a check run from inside another user namespace). Off by default: uids are
         * translated through the superblock's namespace, so its user_id= says 0 for whoever
         * created that namespace. */
        bool trust_user_namespace;
        /* The mount root directory's permission bits (07777) must equal mode. */
        bool check_mode;
        uint32_t mode;
        /* The superblock's size= bound (tmpfs) must exist and be at most max_size bytes. */
        bool check_size;
        uint64_t max_size;
        /* Liveness probe: one statx(AT_STATX_FORCE_SYNC) on the mount root, which is a FUSE
         * round trip (GETATTR); a dead daemon gives transport-not-connected. Everything else
         * the check does sends no FUSE request. A daemon checking its own mount before its
         * session loop runs must set this false, or the probe waits forever for INIT. */
        bool probe_transport;
        /* Scope views (only with the probe: the answers come from the daemon). Asking costs
         * FUSE requests (OPENDIR, GETXATTR; a LOOKUP of .staging for a view): the snapfs
         * preset asks only where the answer can refuse, a read-write mount. */
        enum mc_scope_mode scope;
};

/* Fills *pol from a named preset: "snapfs" (fuse.snapfs, nosuid,nodev,noexec, private,
 * owner = uid 0, own mounts and foreign user namespaces refused, a read-write view of a scope
 * that does not publish refused: MC_SCOPE_JUDGE) or "tmpfs" (rw,nosuid,nodev,noexec, private,
 * mode 01777, size <= 1 MiB, scopes ignored). Both probe the transport. -EINVAL for an unknown name, pol untouched. */
int mc_policy_preset(struct mc_policy *pol, const char *name);

/* Overrides one field from text, as the CLI options spell it:
 *   preset   snapfs|tmpfs          (resets every field)
 *   fstype   TYPE | any
 *   require  OPT[,OPT...]         (replaces the required set; "" requires nothing)
 *   forbid   OPT[,OPT...]         (replaces the forbidden set)
 *            (an option both required and forbidden, or ro and rw together, is refused)
 *   ro       (value ignored)       (require ro, stop requiring rw)
 *   mode     octal <= 07777 | any
 *   max-size SIZE | any            (a size of common/values.h, at least 1)
 *   owner    UID | any             (a uid of common/values.h)
 *   insecure-own-mount   yes|no  (accept a mount made by the caller's own uid)
 *   user-namespace       refuse|trust
 *   probe    yes|no
 * Returns 0, -EINVAL (or -ERANGE, for a size or uid out of range) for a bad value (pol
 * untouched), -ENOENT for an unknown key. */
int mc_policy_set(struct mc_policy *pol, const char *key, const char *value);

/* The value grammar of key's values other than "any" (common/values.h): *type a
 * VALUE_* type and the range a value must meet, for the message of a refusal. 0, -ENOENT
 * for a key with a grammar of its own (preset, fstype, require, forbid, mode, the yes/no
 * keys), -EINVAL for NULL. */
int mc_policy_value_of(const char *key, int *type, uint64_t *min, uint64_t *max);

/* Parses a comma-separated option list ("nosuid,nodev") into MC_OPT_* bits. "" is 0.
 * -EINVAL on an unknown or empty item. */
int mc_parse_options(const char *s, uint32_t *bits);

/* The name of one MC_OPT_* bit ("nosuid"), or NULL if it is not exactly one known bit. */
const char *mc_option_name(uint32_t bit);
