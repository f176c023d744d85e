/* SPDX-License-Identifier: MIT */
/* The judge: everything known about one check (struct mc_facts) and the pure function that
 * turns it plus a policy into findings (mc_judge), for both backends alike. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mountcheck/policy.h"
#include "mountcheck/record.h"
#include "mountcheck/verdict.h"

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
        /* The liveness probe got EOVERFLOW: FUSE refuses to send a request whose uid or gid it
         * cannot express in the user namespace of the connection, so this superblock belongs
         * to a user namespace that does not map the caller (never the initial one, which maps
         * every uid), and no request of the caller can ever reach its daemon. */
        bool caller_unmapped;
        /* Who asks, never taken from the mount table: */
        uint32_t caller_uid;  /* the checking process's real uid */
        /* The checking process runs in the initial user namespace (asked of the kernel by
         * pidfd, never through a path): only there are the uids it sees the host's own. */
        bool caller_initial_userns;
        /* The mount root's owner as the kernel shows it to the caller, read right after the
         * forced GETATTR of the liveness probe (as cached when there was none). FUSE maps
         * every uid a server reports through the superblock's user namespace, so from the
         * initial namespace this is the real uid (or the overflow uid), whatever the server
         * or user_id= claims. */
        bool has_root_uid;
        uint32_t root_uid;
        bool changed;         /* re-opening the path at the end reached another mount */
        /* What the root of a live fuse.snapfs mount said about scopes, when the policy asked
         * (mc_policy.scope): it names a scope in user.snapfs.scope (a scope view), scope is
         * that name as given (raw bytes, "" when unreadable; NULL when not a view), and it has
         * a .staging/ directory (the scope allows publishing). */
        bool is_scope;
        bool scope_publishes;
        const char *scope;
};

/* True if path is absolute and canonical: no empty, "." or ".." component, no trailing
 * slash (except "/" itself). */
bool mc_path_is_canonical(const char *path);

/* The judge: appends to v every finding the facts support under pol and sets v->compliant.
 * Pure: no I/O, no allocation; safe on arbitrary records (the fuzz target). */
void mc_judge(const struct mc_facts *f, const struct mc_policy *pol, struct mc_verdict *v);
