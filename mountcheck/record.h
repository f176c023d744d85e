/* SPDX-License-Identifier: MIT */
/* A backend-neutral mount record, the set of records a backend gathers, and the pure function
 * that turns records plus policy into findings. Both backends fill the same fields the same
 * way (strings unescaped, options normalised) so one judge decides for both. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "verdict.h"

enum {
        MC_PROP_SHARED = 1U << 0,     /* shared:N — mount events propagate both ways */
        MC_PROP_SLAVE = 1U << 1,      /* master:N — mount events propagate in */
        MC_PROP_UNBINDABLE = 1U << 2, /* harmless, recorded for completeness */
};

struct mc_mount {
        /* One id kind per set: unique ids from statmount, reusable ids from mountinfo. */
        uint64_t id;
        uint64_t parent_id;
        char *mount_point;  /* absolute, raw bytes (never escaped) */
        char *root;         /* path of the mount's root inside its filesystem, "/" if whole */
        char *fstype;       /* "tmpfs", or type.subtype: "fuse.snapfs" */
        char *source;       /* may be NULL */
        uint32_t options;   /* effective MC_OPT_* (RO if the mount or its superblock is ro) */
        uint32_t propagation; /* MC_PROP_* */
        bool idmapped;
        bool has_user_id;   /* superblock user_id= (FUSE: the uid that mounted) */
        uint32_t user_id;
        bool has_size;      /* superblock size= (tmpfs); 0 means unlimited */
        uint64_t size;
        bool user_id_bad;   /* malformed or contradictory: stays unknown */
        bool size_bad;
};

struct mc_mount_set {
        struct mc_mount *v;
        size_t n, cap;
};

/* Appends a zeroed record and returns it, or NULL on ENOMEM (set unchanged). */
struct mc_mount *mc_mount_set_push(struct mc_mount_set *set);
/* Drops the last record (a backend that failed half-way through filling it). */
void mc_mount_set_pop(struct mc_mount_set *set);
/* The record with this id, or NULL. */
const struct mc_mount *mc_mount_set_find(const struct mc_mount_set *set, uint64_t id);
void mc_mount_set_free(struct mc_mount_set *set);

/* Sets a string field to a copy of s (NULL stays NULL). 0 or -ENOMEM. */
int mc_mount_set_str(char **field, const char *s);

/* Applies one superblock option ("ro", "size=1024k", "user_id=0", ...) to m; options that do
 * not matter to any policy are ignored. A malformed value of an option that matters clears
 * what is known about it, so the policy check refuses rather than guesses. */
void mc_mount_apply_sb_option(struct mc_mount *m, const char *opt);

/* Everything known about one check, gathered by the orchestrator and a backend. */
struct mc_facts {
        const char *path;     /* exactly as the caller gave it */
        /* 0 when the path was opened; -ELOOP when a component is a symlink; -ENOENT or
         * -ENOTDIR when it does not resolve (an over-mounted ancestor can hide it). */
        int open_error;
        uint64_t mount_id;    /* the mount the descriptor reached (kind matches the set) */
        bool mount_root;      /* the descriptor is the root of that mount */
        uint32_t root_mode;   /* its permission bits (07777) */
        const struct mc_mount *mounts; /* the reached mount, its parent, its children, and any */
        size_t n_mounts;               /* other mount recorded at the path */
        bool transport_dead;  /* the liveness probe got ENOTCONN */
        /* Who asks, never taken from the mount table: */
        uint32_t caller_uid;  /* the checking process's real uid */
        /* The checking process runs in the initial user namespace (asked of the kernel by
         * pidfd, never through a path): only there are the uids it sees the host's own. */
        bool caller_initial_userns;
        /* The mount root's owner as the kernel shows it to the caller, read right after the
         * forced GETATTR of the liveness probe. FUSE maps every uid a server reports through
         * the superblock's user namespace, so from the initial namespace this is the real
         * uid (or the overflow uid), whatever the server or user_id= claims. */
        bool has_root_uid;
        uint32_t root_uid;
        bool changed;         /* re-opening the path at the end reached another mount */
};

/* True if path is absolute and canonical: no empty, "." or ".." component, no trailing
 * slash (except "/" itself). */
bool mc_path_is_canonical(const char *path);

/* The judge: appends to v every finding the facts support under pol and sets v->compliant.
 * Pure: no I/O, no allocation; safe on arbitrary records (the fuzz target). */
void mc_judge(const struct mc_facts *f, const struct mc_policy *pol, struct mc_verdict *v);
