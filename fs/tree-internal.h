/* SPDX-License-Identifier: MIT */
/* The tree's data, shared by the files that implement tree.h: tree.c (nodes, handles,
 * lookups, attributes, visibility) below, and above it file.c (opening, reading, writing,
 * removing files), publish.c (rename), listing.c (directories) and xattr.c. Not for other
 * components. */
#pragma once

#include <pthread.h>

#include "snapshot/digest.h"
#include "fs/idmap.h"
#include "fs/roles.h"
#include "fs/staging.h"
#include "snapshot/store.h"
#include "fs/tree.h"

/* Locks, outermost first: t->lock, then a staging file's stg->lock, then the store's own.
 * A staging file's stg pointer is read only under t->lock (publishing frees it). t->ids_lock
 * is a leaf: it guards the id maps alone, changed under t->lock too, so a request can find its
 * node or handle without t->lock. */

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
        struct sfs_node *prev, *next; /* every live node, so the tree can free them all */
};

struct sfs_handle {
        struct sfs_idlink id;     /* in t->handles: the file handle the kernel knows */
        struct sfs_node *node;
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

struct sfs_tree {
        pthread_mutex_t lock;
        struct sfs_tree_config cfg;
        struct snap_store *store;
        struct sfs_staging_budget budget; /* what staging files are charged to */
        uint64_t reserve_objects;      /* kept for the owner: nobody else may use them */
        uint64_t reserve_bytes;
        struct sfs_node root;
        struct sfs_node staging;
        struct sfs_node *nodes;        /* list of dynamic nodes */
        /* What the kernel is handed, found again by id: nodes by inode number, open files and
         * directories by handle id. Never a memory address: a successor daemon could rebuild
         * every id from the store (docs/design.md, "Inode numbers and node ids"). */
        pthread_mutex_t ids_lock;
        struct sfs_idmap ids_nodes, ids_handles, ids_dirs;
        uint64_t next_fh;              /* handle ids, from 1 (0 is "no handle") */
        struct sfs_handle *handles;    /* list of open handles */
        struct sfs_dir *dirs;          /* list of open directory listings */
        struct sfs_uidstage **stages;
        size_t nstages;
        size_t capstages;
        uint64_t nnodes;
        uint64_t staging_files;
        struct timespec dir_mtime;
        char *view_path;               /* the read view's absolute path, or NULL */
};

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
/* roles.h's sfs_may_check_store, for the files that ask roles through the tree. */
bool sfs_tree_may_check_store(struct sfs_tree *t, const struct sfs_caller *c);
/* Audits a refusal (event "refused", "publish-refused", ...) and returns -err. Without
 * t->lock. */
int sfs_refused(struct sfs_tree *t, const struct sfs_caller *c, const char *event,
                const char *op, const char *name, const char *target, int err);
struct sfs_node *sfs_node_new(struct sfs_tree *t, enum sfs_kind kind, uint64_t ino);
/* The snapshot node of obj under inode number ino, made on first use; takes over the
 * caller's reference on obj. NULL (the reference dropped) without memory. */
struct sfs_node *sfs_snapshot_node(struct sfs_tree *t, struct snap_object *obj, uint64_t ino);
/* A handle id never handed out before in this tree. */
uint64_t sfs_next_handle_id(struct sfs_tree *t);
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

/* Per-uid staging lists. */
struct sfs_uidstage *sfs_stage_find(struct sfs_tree *t, uid_t uid, bool create);
struct sfs_node *sfs_stage_lookup(struct sfs_uidstage *st, const char *name);
/* Lists a new staging file node under its owner. */
void sfs_stage_add(struct sfs_tree *t, struct sfs_uidstage *st, struct sfs_node *n);
/* Takes a staging file out of its owner's list (it stays alive while referenced). With
 * hold, a file still open keeps counting against its owner's staging files until its last
 * handle goes: unlinking what one holds open must not make room for more. */
void sfs_stage_remove(struct sfs_tree *t, struct sfs_node *n, bool hold);
