/* SPDX-License-Identifier: MIT */
/* The tree's data, shared by the files that implement tree.h: tree.c (nodes, handles,
 * lookups, attributes, visibility) below, and above it file.c (opening, reading, writing,
 * removing files), publish.c (rename), listing.c (directories) and xattr.c. Not for other
 * components. */
#pragma once

#include <pthread.h>

#include "snapshot/digest.h"
#include "fs/tree/grants.h"
#include "fs/base/idmap.h"
#include "fs/base/lockorder.h"
#include "fs/config/roles.h"
#include "fs/tree/staging.h"
#include "snapshot/store.h"
#include "fs/tree/scope.h"
#include "fs/tree/tree.h"
#include "fs/tree/watch.h"

/* Locks, outermost first (the whole order, the registry's and --store's above these, is
 * fs/base/lockorder.h's): t->lock, then a staging file's stg->lock, then the store's own. A staging
 * file's stg pointer is read only under t->lock (publishing frees it). t->ids_lock is a leaf:
 * it guards the id maps alone, changed under t->lock too, so a request can find its node or
 * handle without t->lock. */

struct sfs_node {
        enum sfs_kind kind;       /* STAGING_FILE -> SNAPSHOT once, under t->lock; atomic */
        uint64_t ino;             /* the node id the kernel knows it by (FUSE_ROOT_ID is 1) */
        struct sfs_idlink id;     /* in t->nodes, under ino */
        uint64_t nlookup;         /* references the kernel holds */
        uint32_t pins;            /* open handles */
        bool linked;              /* staging file still listed in .staging/ */
        struct snap_object *obj;  /* SNAPSHOT: one store reference, owned by the node */
        struct sfs_staging *stg;  /* STAGING_FILE */
        struct sfs_node *next_staged; /* STAGING_FILE: in its owner's list */
        struct sfs_uidstage *held_by; /* unlinked while open: still counted in held_by's
                                         staging files until the last handle goes */
        /* A snapshot in a scope's view shows the scope's own record of it, never what the
         * store knows of its other references (who else published it, and when): */
        uint32_t vuid;            /* its owner there */
        struct timespec vtime;    /* its times there */
        bool revoked;             /* its grant went (a view), or it was collected as content
                                     only grants kept (the main mount): nlink 0, no new
                                     lookup finds it, and its content reference goes with
                                     its last handle (sfs_node_drop_content) */
        struct sfs_watch *watch;  /* WATCH: the entry it watches (watch.c) */
        bool held_in_usage;       /* a scope's snapshot unpublished or revoked while open:
                                     still counted in its scope's usage (one snapshot, its
                                     bytes) until its last handle goes */
        struct sfs_node *prev, *next; /* every live node, so the tree can free them all */
};

struct sfs_handle {
        struct sfs_idlink id;     /* in t->handles: the file handle the kernel knows */
        struct sfs_node *node;
        struct sfs_ctl *ctl;      /* CONTROL: this descriptor's one transaction */
        bool write;     /* opened for writing */
        bool writing;   /* counted in stg->writers: written to since its last flush */
        struct sfs_handle *prev, *next;
};

/* One per uid that ever staged; never freed before the tree, so a staging file can keep a
 * pointer to its owner's bytes. count and head change under t->lock; bytes atomically, since
 * writes to different staging files of one uid run in parallel. */
struct sfs_uidstage {
        uid_t uid;
        unsigned count;
        uint64_t bytes;         /* content of this uid's staging files */
        struct sfs_node *head;
};

/* A scope's own state, in its tree (under t->lock but for what says otherwise). */
struct sfs_scope_state {
        char name[SNAP_NAME_MAX + 1];
        struct sfs_scope_users users;   /* t->cfg.scope_users points here */
        struct sfs_scope_limits limits;
        bool publish;
        struct sfs_grants grants;
        uint64_t used_snapshots;        /* grants published in the scope, and their bytes */
        uint64_t used_bytes;
        uint64_t staging_bytes;         /* every staging file's bytes (atomic: written in
                                           parallel) */
        int (*save)(void *ctx, const struct sfs_scope_op *op);
        void *save_ctx;
        size_t max_grants;              /* SFS_SCOPE_GRANTS_MAX, or less */
        /* The view's own inode numbers, never reused: its grants and staging files count
         * here, not in the store, so a sandbox learns nothing from them of what another
         * scope or the operator publishes or grants (kept in the scope's file). */
        uint64_t next_ino;
        struct sfs_tree *main;          /* the main tree, which outlives every scope's */
};

/* The scopes' grant, for a publish for a scope (sfs_tree_set_scope_grant). */
struct sfs_grant_hook {
        int (*grant)(void *ctx, const struct sfs_caller *c, const char *scope,
                     const struct snap_digest *d, const char *entry);
        void *ctx;
};

/* The control channel's hook (sfs_tree_set_control). */
struct sfs_control_hook {
        int (*exec)(void *ctx, const struct sfs_caller *c, const char *req, size_t len,
                    char **reply, size_t *reply_len);
        void *ctx;
};

/* What a publish on the main mount tells (sfs_tree_set_published). */
struct sfs_published_hook {
        void (*fn)(void *ctx, const struct snap_digest *d);
        void *ctx;
};

struct sfs_tree {
        pthread_mutex_t lock;
        struct sfs_tree_config cfg;
        struct snap_store *store;      /* the main tree's own; a scope's tree borrows it */
        struct sfs_scope_state *scope; /* a scope's view; NULL on the main mount */
        struct sfs_control_hook control_hook;
        struct sfs_published_hook published_hook;
        struct sfs_grant_hook grant_hook;
        struct sfs_staging_budget budget; /* what staging files are charged to */
        uint64_t reserve_objects;      /* kept for the owner: nobody else may use them */
        uint64_t reserve_bytes;
        struct sfs_node root;
        struct sfs_node staging;
        struct sfs_node control;       /* the main mount's .control */
        struct sfs_node *nodes;        /* list of dynamic nodes */
        /* What the kernel is handed, found again by id: nodes by inode number, open files and
         * directories by handle id. Never a memory address: a successor daemon could rebuild
         * every id from the store (docs/design.md, "Inode numbers and node ids"). */
        pthread_mutex_t ids_lock;
        struct sfs_idmap ids_nodes, ids_handles, ids_dirs;
        uint64_t next_fh;              /* handle ids, from fh_base (0 is "no handle") */
        uint64_t fh_base;              /* this process's first handle id: those below are a
                                          predecessor's (docs/design.md, "Taking over") */
        struct sfs_handle *handles;    /* list of open handles */
        struct sfs_dir *dirs;          /* list of open directory listings */
        struct sfs_uidstage **stages;
        size_t nstages;
        size_t capstages;
        uint64_t nnodes;
        uint64_t staging_files;
        struct timespec dir_mtime;
        char *view_path;               /* the read view's absolute path, or NULL */
        struct sfs_watches watches;    /* a scope view's watches (watch.h) */
        uint64_t next_watch_ino;       /* from SFS_WATCH_FIRST_INO */
};

/* A tree's lock, in the daemon's lock order (fs/base/lockorder.h): never a second tree's inside. */
static inline void tree_lock(struct sfs_tree *t)
{
        sfs_lock_order(&t->lock, SFS_LOCK_TREE);
}

static inline void tree_unlock(struct sfs_tree *t)
{
        sfs_unlock_order(&t->lock, SFS_LOCK_TREE);
}

static inline enum sfs_kind node_kind(const struct sfs_node *n)
{
        return __atomic_load_n(&n->kind, __ATOMIC_ACQUIRE);
}

struct sfs_dirent {
        uint64_t ino;
        mode_t mode;
        char name[SFS_STAGING_NAME_MAX + 1]; /* digests and staging names both fit */
};

/* An open directory. The root is listed straight from the store, in inode order, at every
 * READDIR: a handle holds a few numbers, not a copy of the listing, however many snapshots
 * there are (the attack: 2,000 handles on 4,096 snapshots took the daemon to 649 MB). Only
 * snapshots published before opendir are listed (seq <= max_seq), so a snapshot removed and
 * published again meanwhile is never listed twice. .staging/ holds at most max_staging of the
 * caller's own files: those are taken at opendir. */
struct sfs_dir {
        struct sfs_idlink id;  /* in t->ids_dirs: the directory handle the kernel knows */
        struct sfs_dir *prev, *next;
        bool root;
        bool staging_entry; /* root: list .staging */
        bool control_entry; /* root: list .control (the mount owner and root) */
        uint64_t ino;       /* the directory's own */
        uint64_t max_seq;
        size_t n;
        struct sfs_dirent e[];
};

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define container_of_or_null(ptr, type, member)                                                \
        ({                                                                                     \
                __typeof__(ptr) _p = (ptr);                                                    \
                _p ? container_of(_p, type, member) : NULL;                                    \
        })

/* ---- intrusive lists ---- */

#define LIST_ADD(head, item)                                                                   \
        do {                                                                                   \
                (item)->prev = NULL;                                                           \
                (item)->next = (head);                                                         \
                if (head)                                                                      \
                        (head)->prev = (item);                                                 \
                (head) = (item);                                                               \
        } while (0)

#define LIST_DEL(head, item)                                                                   \
        do {                                                                                   \
                if ((item)->prev)                                                              \
                        (item)->prev->next = (item)->next;                                     \
                else                                                                           \
                        (head) = (item)->next;                                                 \
                if ((item)->next)                                                              \
                        (item)->next->prev = (item)->prev;                                     \
                (item)->prev = (item)->next = NULL;                                            \
        } while (0)

/* ---- tree.c: the functions below need t->lock held unless they say otherwise ---- */

/* -EACCES outside the roles, -ENOENT for another uid's staging file. */
int sfs_check_visible(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n);
/* roles.h's sfs_may_check_store, for the files that ask roles through the tree. Without
 * t->lock: the roles are configuration, fixed once the tree is made. */
bool sfs_tree_may_check_store(struct sfs_tree *t, const struct sfs_caller *c);
/* Audits a refusal (event "refused", "publish-refused", ...) and returns -err. Without
 * t->lock. */
int sfs_refused(struct sfs_tree *t, const struct sfs_caller *c, const char *event,
                const char *op, const char *name, const char *target, int err);
/* A new inode number: the view's own in a scope's view, the store's on the main mount.
 * t->lock held. */
uint64_t sfs_tree_alloc_ino(struct sfs_tree *t);
/* The space t's numbers are kept in for a successor (fs/base/inostate.h): 0 for the main
 * tree, a scope's name's FNV-1a (never 0) for a view, which numbers its own inodes. */
uint32_t sfs_tree_ino_space(const struct sfs_tree *t);
struct sfs_node *sfs_node_new(struct sfs_tree *t, enum sfs_kind kind, uint64_t ino);
/* The node this tree knows under ino, or NULL; never one made again for a predecessor's
 * number (sfs_tree_node does that). Takes the id table's lock alone. */
struct sfs_node *sfs_node_find(struct sfs_tree *t, uint64_t ino);
/* The snapshot node of obj under inode number ino, made on first use; takes over the
 * caller's reference on obj. NULL (the reference dropped) without memory. */
struct sfs_node *sfs_snapshot_node(struct sfs_tree *t, struct snap_object *obj, uint64_t ino);
/* A handle id never handed out before in this tree. */
uint64_t sfs_next_handle_id(struct sfs_tree *t);
/* Drops a revoked snapshot node's content reference once no handle is open on it: the kernel's
 * lookup count keeps the node, never the bytes (n->obj is NULL then: ESTALE to an open). */
void sfs_node_drop_content(struct sfs_tree *t, struct sfs_node *n);
/* The main tree's node of obj, collected because the last grant of content only grants kept
 * went: revoked, its content dropped with its last handle. Takes t->lock (no other tree lock
 * held). */
void sfs_tree_drop_collected(struct sfs_tree *t, struct snap_object *obj);
/* Frees n once nothing holds it: no kernel reference, no handle, not listed in .staging/. */
void sfs_node_maybe_free(struct sfs_tree *t, struct sfs_node *n);
void sfs_fill_attr(struct sfs_tree *t, struct sfs_node *n, struct stat *st);
struct sfs_handle *sfs_handle_new(struct sfs_tree *t, struct sfs_node *n, bool write);
/* Unlinks h from the tree and unpins its node; the caller frees h. */
void sfs_handle_del(struct sfs_tree *t, struct sfs_handle *h);
void sfs_touch_root(struct sfs_tree *t);
/* What an audit line calls a node: a snapshot's digest, a staging file's name, or NULL.
 * buf needs SNAP_DIGEST_HEX_LEN + 1 bytes. */
const char *sfs_node_label(struct sfs_node *n, char *buf);

/* The parts of a tree every tree starts with (locks, id maps, root, .staging, the staging
 * budget of its limits): 0 or -ENOMEM. t->cfg and t->store set first. */
int sfs_tree_init_common(struct sfs_tree *t);
/* Whether a main-mount snapshot may be seen by c: one some uid holds, by anyone the roles
 * admit; one only scopes reference, by the mount owner and root alone, never through the read
 * view. Without t->lock. */
bool sfs_main_may_see_snapshot(struct sfs_tree *t, const struct sfs_caller *c,
                               struct snap_object *obj);

/* ---- control.c ---- */

/* One .control descriptor's transaction (control.c). */
struct sfs_ctl {
        bool busy;    /* its request is being executed */
        bool done;    /* its request was executed: further writes are refused */
        char *reply;
        size_t len;
};
/* Frees a control descriptor's transaction (NULL is fine). */
void sfs_ctl_free(struct sfs_ctl *ctl);
/* Opens .control: -EACCES for anyone but the mount owner and root. t->lock held. */
int sfs_control_open(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct sfs_handle **h, struct sfs_open_info *oi);
/* The one request of a descriptor, executed now: 0 (its reply is ready to read), -EINVAL for
 * a write that is no whole request or for one that is no JSON object (nothing executed),
 * -EBUSY for a second request, -EACCES. Without t->lock. */
int sfs_control_write(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_handle *h,
                      const void *buf, size_t size, off_t off);
/* Reads the reply (nothing before the request, and past its end). Without t->lock. */
int sfs_control_read(struct sfs_tree *t, struct sfs_handle *h, size_t size, off_t off,
                     int (*reply)(void *ctx, const void *data, size_t len), void *ctx);

/* ---- a scope's grants in tree.c, t->lock held ---- */

/* One snapshot of size bytes more (add) or less in the scope's usage, and in what the store
 * keeps for its minimum: what counts toward the scope's limits counts toward it too. */
static inline void sfs_scope_count(struct sfs_tree *t, bool add, uint64_t size)
{
        t->scope->used_snapshots += add ? 1 : (uint64_t)-1;
        t->scope->used_bytes += add ? size : (uint64_t)0 - size;
        snap_store_keep_use(t->store, t->budget.keep, add, size);
}

/* Frees a scope tree's own state: each grant's references dropped (no collection: the scope
 * was revoked already, or the daemon is stopping). */
void sfs_scope_state_free(struct sfs_tree *t);
/* The grant of d in a scope's tree, or NULL. */
struct sfs_grant *sfs_scope_grant_of(struct sfs_tree *t, const struct snap_digest *d);
/* A name of a scope's root: the grant it shows (a digest, or an entry's target), or NULL. */
struct sfs_grant *sfs_scope_resolve(struct sfs_tree *t, const char *name);
/* Refreshes a scope's snapshot node from its grant (found again, after a revoke too). */
void sfs_scope_node_refresh(struct sfs_node *n, const struct sfs_grant *g);

/* ---- scope.c, t->lock held ---- */
/* Whether op would apply now, and room for it: 0, or what sfs_scope_apply_locked would
 * answer (but for -ENOMEM in its effects). */
int sfs_scope_check_locked(struct sfs_tree *t, const struct sfs_scope_op *op);
/* sfs_scope_apply under t->lock. obj: SFS_SCOPE_PUBLISH's object, with a store grant already
 * taken for it and one reference the grant takes over. */
int sfs_scope_apply_locked(struct sfs_tree *t, const struct sfs_scope_op *op,
                           struct snap_object *obj, struct sfs_grant_info *info,
                           struct sfs_scope_effects *fx);

/* Per-uid staging lists. */
struct sfs_uidstage *sfs_stage_find(struct sfs_tree *t, uid_t uid, bool create);
struct sfs_node *sfs_stage_lookup(struct sfs_uidstage *st, const char *name);
/* Lists a new staging file node under its owner. */
void sfs_stage_add(struct sfs_tree *t, struct sfs_uidstage *st, struct sfs_node *n);
/* Takes a staging file out of its owner's list (it stays alive while referenced). With
 * hold, a file still open keeps counting against its owner's staging files until its last
 * handle goes: unlinking what one holds open must not make room for more. */
void sfs_stage_remove(struct sfs_tree *t, struct sfs_node *n, bool hold);
