/* SPDX-License-Identifier: MIT */
/* Shared between tree.c (nodes, lookups, listing, attributes) and staging.c (staging files
 * and publishing). Not for other components. */
#pragma once

#include <pthread.h>

#include "digest.h"
#include "store.h"
#include "tree.h"

/* Locks, outermost first: t->lock, then a staging file's stg->lock, then the store's own.
 * A staging file's stg pointer is read only under t->lock (publishing frees it). */

#define SFS_HASH_BROKEN UINT64_MAX

struct sfs_staging {
        pthread_mutex_t lock;
        char name[SFS_STAGING_NAME_MAX + 1];
        uid_t owner;
        gid_t group;
        uint8_t *buf;
        size_t len;             /* content length; exactly this many bytes are reserved */
        size_t cap;
        unsigned writers;       /* write handles not flushed since they last wrote */
        bool publishing;        /* a rename is hashing it: no writes, no truncation */
        struct snap_hasher *hasher;
        uint64_t hashed;        /* bytes fed to hasher in order, or SFS_HASH_BROKEN */
        bool digest_valid;
        struct snap_digest digest;
        struct timespec mtime;
        uint64_t last_active_ms;      /* CLOCK_MONOTONIC of the owner's last create, open,
                                         write, truncate or close: what --staging-ttl measures */
        struct sfs_node *next_staged; /* in its owner's list */
        struct sfs_uidstage *stage;   /* its owner's counters */
};

struct sfs_node {
        enum sfs_kind kind;       /* STAGING_FILE -> SNAPSHOT once, under t->lock; atomic */
        uint64_t ino;
        uint64_t nlookup;         /* references the kernel holds */
        uint32_t pins;            /* open handles */
        bool linked;              /* staging file still listed in .staging/ */
        bool unlinked;            /* snapshot removed from the tree */
        struct snap_object *obj;  /* SNAPSHOT: one store reference, owned by the node */
        struct sfs_staging *stg;  /* STAGING_FILE */
        struct sfs_node *prev, *next; /* every live node, so the tree can free them all */
};

struct sfs_handle {
        struct sfs_node *node;
        bool write;     /* opened for writing */
        bool writing;   /* counted in stg->writers: written to since its last flush */
        struct sfs_handle *prev, *next;
};

/* One per uid that ever staged; never freed before the tree, so a staging file can keep a
 * pointer to its owner's. count and head change under t->lock; bytes atomically, since
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
        struct sfs_node root;
        struct sfs_node staging;
        struct sfs_node *nodes;        /* list of dynamic nodes */
        struct sfs_handle *handles;    /* list of open handles */
        struct sfs_dir *dirs;          /* list of open directory listings */
        struct sfs_uidstage **stages;
        size_t nstages;
        size_t capstages;
        uint64_t nnodes;
        uint64_t staging_files;
        struct timespec dir_mtime;
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

struct sfs_dir {
        struct sfs_dir *prev, *next;
        size_t n;
        struct sfs_dirent e[];
};

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

/* tree.c */
/* -EACCES outside the policy, -ENOENT for another uid's staging file. t->lock held. */
int sfs_check_visible(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n);
bool sfs_may_see(const struct sfs_tree *t, const struct sfs_caller *c);
bool sfs_may_read(const struct sfs_tree *t, const struct sfs_caller *c);
bool sfs_may_publish(const struct sfs_tree *t, const struct sfs_caller *c);
int sfs_refused(struct sfs_tree *t, const struct sfs_caller *c, const char *event,
                const char *op, const char *name, const char *target, int err);
struct sfs_node *sfs_node_new(struct sfs_tree *t, enum sfs_kind kind, uint64_t ino);
void sfs_node_maybe_free(struct sfs_tree *t, struct sfs_node *n);
void sfs_fill_attr(struct sfs_tree *t, struct sfs_node *n, struct stat *st);
struct sfs_handle *sfs_handle_new(struct sfs_tree *t, struct sfs_node *n, bool write);
void sfs_touch_root(struct sfs_tree *t);
/* What an audit line calls a node: a snapshot's digest, a staging file's name, or NULL.
 * buf needs SNAP_DIGEST_HEX_LEN + 1 bytes. t->lock held. */
const char *sfs_node_label(struct sfs_node *n, char *buf);

/* staging.c */
uint64_t sfs_now_ms(void);
bool sfs_staging_name_valid(const char *name);
struct sfs_uidstage *sfs_stage_find(struct sfs_tree *t, uid_t uid, bool create);
struct sfs_node *sfs_stage_lookup(struct sfs_uidstage *st, const char *name);
void sfs_staging_free(struct sfs_tree *t, struct sfs_staging *stg);
void sfs_staging_drop_content(struct sfs_tree *t, struct sfs_staging *stg);
void sfs_staging_fill_attr(struct sfs_staging *stg, struct stat *st);
int sfs_staging_digest(struct sfs_staging *stg, struct snap_digest *out);
int sfs_staging_unlink(struct sfs_tree *t, const struct sfs_caller *c, const char *name);
/* Takes a staging file out of its owner's list (it stays alive while referenced). */
void sfs_stage_remove(struct sfs_tree *t, struct sfs_node *n);
/* Gives delta staged bytes back to the owner's quota. */
void sfs_stage_uncharge(struct sfs_staging *stg, uint64_t delta);
/* Shortens the content to len bytes, giving the quota back. stg->lock held. */
void sfs_staging_truncate_locked(struct sfs_tree *t, struct sfs_staging *stg, size_t len);
