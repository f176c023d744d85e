/* SPDX-License-Identifier: MIT */
/* The scope registry (docs/design.md, "Scopes"): the daemon's scopes by name, each with its
 * tree (fs/tree/scope.h), its view (mounted and served by a backend: fs/fuse/scopeview.c in the daemon,
 * a fake in the unit tests), its users, limits and until-pid. Creating, listing, showing,
 * removing scopes and granting and revoking snapshots are its operations, every change
 * persisted in --store (DIR/scopes/NAME.json) before it is made and audited. The control
 * channel's protocol (fs/control/protocol.c) calls these.
 *
 * Locks: the registry's is taken first, before --store's, a scope's tree's and the store's
 * (docs/design.md, "Locks"); no view's request ever takes it, which is what lets an operation
 * send the kernel invalidations while it holds it (never a tree or store lock). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/config/roles.h"
#include "fs/tree/scope.h"
#include "fs/tree/tree.h"

struct sfs_view; /* a backend's mounted view */
struct sfs_audit;
struct sfs_ocistore;

/* How a scope's view is mounted. */
struct sfs_view_request {
        const char *scope;
        const char *path;  /* absolute, prepared (fs/scopes/viewpath.h) */
        bool allow_other;  /* a uid or gid other than the daemon's is a user */
        bool ro;           /* the scope does not publish */
        bool no_open;      /* OPEN answered ENOSYS: the kernel lets the daemon's uid alone in */
};

/* What mounts and serves views. */
struct sfs_view_ops {
        /* Mounts and checks a view of tree at req->path and serves it: 0, *view and *dev
         * (its superblock's device); or a negative errno with msg saying why, nothing left
         * mounted. */
        int (*mount)(void *ctx, const struct sfs_view_request *req, struct sfs_tree *tree,
                     struct sfs_view **view, uint64_t *dev, char *msg, size_t msgsize);
        /* Detaches the view lazily (descriptors open in it keep reading); its session serves
         * until the kernel ends it, then the backend frees it and tree, which it owns from
         * here on. */
        void (*detach)(void *ctx, struct sfs_view *view, struct sfs_tree *tree);
        /* Drops the kernel's cached entry of name in the view's root. */
        void (*invalidate)(void *ctx, struct sfs_view *view, const char *name);
        /* Drops the kernel's cached attributes of inode ino in the view. */
        void (*invalidate_inode)(void *ctx, struct sfs_view *view, uint64_t ino);
        /* Whether the view is still served (false once unmounted from outside). */
        bool (*alive)(void *ctx, struct sfs_view *view);
        /* Clears a dead snapfs mount left at path by a daemon that was killed: 0 or -errno. */
        int (*clear_stale)(void *ctx, const char *path);
        /* Stops serving and unmounts the view at exit; tree stays the caller's. */
        void (*shutdown)(void *ctx, struct sfs_view *view);
        /* Whether a predecessor handed over a live connection mounted at path, which mount
         * adopts: the path is then not prepared (a lookup there would wait for this very
         * daemon). NULL: never. */
        bool (*handed_over)(void *ctx, const char *path);
        /* How many views detached are still held open (their sessions not ended by the
         * kernel yet); when text is not NULL, a list of them for a refusal ("PATH (N open)",
         * N the files and directories open in it, or "PATH (held)" for a view that declines
         * OPEN and so never hears of them; comma-separated, cut to size with "..."). */
        unsigned (*lingering)(void *ctx, char *text, size_t size);
        void *ctx;
};

struct sfs_registry_config {
        struct sfs_tree *main;         /* the main mount's tree: its store, configuration */
        struct sfs_ocistore *store;    /* --store, or NULL */
        /* --runtime-store (paired with --store when both are given: one lock): the scopes'
         * files and what is published for them, or NULL. With --store and without it, a
         * scope-create is refused (a scope's content must never reach a disk). */
        struct sfs_ocistore *scope_store;
        struct sfs_audit *audit;
        const struct sfs_view_ops *views;
        uid_t uid;                     /* the daemon's own */
        gid_t gid;
        unsigned max_scopes;           /* a create past it is ENOSPC (0: SFS_MAX_SCOPES_LIMIT);
                                          removed scopes' views still held open count */
        /* What a view may not cover, be or lie in (NULL: none): the main mount, the read
         * view, --store, --runtime-store. Absolute; the registry resolves each one's parent
         * directory. */
        const char *mountpoint, *read_view, *store_dir, *runtime_dir;
};

struct sfs_registry;

/* 0 and *out, or -ENOMEM. Nothing runs until sfs_registry_start. */
int sfs_registry_new(const struct sfs_registry_config *cfg, struct sfs_registry **out);
/* At start, after the snapshots: every scope of --store back, its grants, its view mounted
 * again at its path (a dead snapfs mount there cleared), its until-pid tied again if that
 * process still runs (same start time, same boot) and the scope deleted if not; then every
 * snapshot neither held nor granted is collected. What could not come back is reported
 * through warn and left as it is. 0, or an errno that stops the start. */
int sfs_registry_restore(struct sfs_registry *r, void (*warn)(void *ctx, const char *msg),
                         void *ctx);
/* Starts what runs beside the requests (the until-pid watcher): 0 or -errno. */
int sfs_registry_start(struct sfs_registry *r);
/* Stops it all: views unmounted (the scopes stay in --store), trees freed. NULL is fine. */
void sfs_registry_free(struct sfs_registry *r);

/* Why an operation refused, for the reply. */
struct sfs_msg {
        char text[256];
};

/* A scope as scope-create asks for it. */
struct sfs_scope_request {
        const char *name;
        const char *view;
        struct value_uid_list uids;
        bool has_gid;
        gid_t gid;
        bool publish;
        struct sfs_scope_limits limits; /* 0: the default */
        pid_t until_pid;                /* 0: none */
        pid_t client_pid;               /* the client's getpid(), when until_pid is set */
};

/* A scope as the control channel reports it (fs/scopes/scopejson.h writes it as JSON). */
struct sfs_scope_info {
        char name[SNAP_NAME_MAX + 1];
        char *view;                     /* malloc'd: sfs_scope_info_clear */
        bool mounted;                   /* its view is served, on device dev */
        uint64_t dev;
        struct sfs_scope_users users;
        bool publish;
        pid_t until_pid;                /* 0: none */
        struct sfs_scope_limits limits;
        struct sfs_scope_usage usage;
};
/* Frees what s holds (NULL is fine); sfs_scope_infos_free, an array of n and what each
 * holds. */
void sfs_scope_info_clear(struct sfs_scope_info *s);
void sfs_scope_infos_free(struct sfs_scope_info *v, size_t n);

/* Every function below returns 0 or a negative errno, *msg saying why; those that change
 * something audit it (and audit their refusals). c is who asked. */

/* scope-create: *scope (sfs_scope_info_clear). -EINVAL (a bad name, path, field; a client_pid
 * that is not the caller's: its pid namespace is another), -EEXIST (the name or the view
 * taken), -ENOSPC (--max-scopes reached, counting the views of removed scopes still held
 * open: the message names them), -EBUSY (the path is a mount point or on one of the daemon's mounts, or it would
 * cover one: an ancestor of another view, of the main mount, of the read view or of --store;
 * or it is --store or lies in it), -ESRCH (no such until-pid: a thread id, a zombie), or the
 * errno of mounting it. */
int sfs_registry_create(struct sfs_registry *r, const struct sfs_caller *c,
                        const struct sfs_scope_request *req, struct sfs_scope_info *scope,
                        struct sfs_msg *msg);
/* scope-remove: every grant revoked (what nothing else references collected), the view
 * detached lazily, its directory removed if the daemon made it. -ENOENT: no such scope. */
int sfs_registry_remove(struct sfs_registry *r, const struct sfs_caller *c, const char *name,
                        struct sfs_msg *msg);
/* scope-list: every scope, in name order: *scopes (sfs_scope_infos_free) and *n. -ENOMEM. */
int sfs_registry_list(struct sfs_registry *r, struct sfs_scope_info **scopes, size_t *n);
/* scope-show: *scope (sfs_scope_info_clear) and its grants, *grants (malloc'd) and *n_grants,
 * in listing order. -ENOENT. */
int sfs_registry_show(struct sfs_registry *r, const char *name, struct sfs_scope_info *scope,
                      struct sfs_grant_info **grants, size_t *n_grants, struct sfs_msg *msg);
/* grant: *grant, the grant made. -ENOENT (no such scope or snapshot), -EINVAL (a bad
 * entry), -ENOSPC. */
int sfs_registry_grant(struct sfs_registry *r, const struct sfs_caller *c, const char *scope,
                       const struct snap_digest *d, const char *entry,
                       struct sfs_grant_info *grant, struct sfs_msg *msg);
/* sfs_registry_grant for a publish for a scope (sfs_tree_set_scope_grant's hook; ctx is the
 * registry): 0 or the refusal's negative errno. */
int sfs_registry_grant_hook(void *ctx, const struct sfs_caller *c, const char *scope,
                            const struct snap_digest *d, const char *entry);
/* revoke: by digest (d, entry NULL) or by entry (d NULL). -ENOENT. */
int sfs_registry_revoke(struct sfs_registry *r, const struct sfs_caller *c, const char *scope,
                        const struct snap_digest *d, const char *entry, struct sfs_msg *msg);
/* Removes every scope's idle staging files (sfs_tree_expire_staging). NULL is fine. */
void sfs_registry_expire_staging(struct sfs_registry *r, uint64_t now_ms);
/* Audits a control request refused before it reached an operation (a bad request). */
void sfs_registry_audit_refused(struct sfs_registry *r, const struct sfs_caller *c,
                                const char *op, const char *scope, int err);

/* The main mount's tree and --store (NULL without) the registry was made with: what
 * fs/control/status.c reads for the daemon's status. */
struct sfs_tree *sfs_registry_main(struct sfs_registry *r);
struct sfs_ocistore *sfs_registry_store(struct sfs_registry *r);
