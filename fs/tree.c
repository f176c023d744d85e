/* SPDX-License-Identifier: MIT */
/* Nodes, lookups, attributes, listings, xattrs, unlink and the access policy. Staging files
 * and publishing live in staging.c. */
#include "tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "binding.h"
#include "tree-internal.h"
#include "util.h"

#define DIR_ATTR_TIMEOUT 1.0

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

/* ---- policy ---- */

/* Metadata (names, sizes, bindings) is visible to readers and publishers; content only to
 * readers; staging only to publishers. An empty set admits every uid. */
bool sfs_may_see(const struct sfs_tree *t, const struct sfs_caller *c)
{
        return sfs_uidset_contains(&t->cfg.readers, c->uid) ||
               sfs_uidset_contains(&t->cfg.publishers, c->uid);
}

bool sfs_may_read(const struct sfs_tree *t, const struct sfs_caller *c)
{
        return sfs_uidset_contains(&t->cfg.readers, c->uid);
}

bool sfs_may_publish(const struct sfs_tree *t, const struct sfs_caller *c)
{
        return !t->cfg.read_only && !c->read_view &&
               sfs_uidset_contains(&t->cfg.publishers, c->uid);
}

/* When metadata is not visible to every uid, nothing may be cached by the kernel: its caches
 * are per superblock, not per uid, so a cached entry would answer an excluded uid. */
static double meta_timeout(const struct sfs_tree *t, double want)
{
        if (!t->cfg.readers.any && !t->cfg.publishers.any)
                return 0;
        return want;
}

int sfs_refused(struct sfs_tree *t, const struct sfs_caller *c, const char *event,
                const char *op, const char *name, const char *target, int err)
{
        const char *digest = NULL;
        /* A well-formed digest goes in the digest field so audits can be joined on it. */
        if (name && snap_is_digest_name(name)) {
                digest = name;
                name = NULL;
        }
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = event,
                                             .op = op,
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = digest,
                                             .name = name,
                                             .target = target,
                                             .err = err,
                                     });
        return -err;
}

int sfs_tree_refuse(struct sfs_tree *t, const struct sfs_caller *c, const char *op,
                    const char *name, int err)
{
        return sfs_refused(t, c, "refused", op, name, NULL, err);
}

/* ---- lifecycle ---- */

int sfs_tree_new(const struct sfs_tree_config *cfg, struct sfs_tree **out)
{
        struct sfs_tree *t;
        int r;

        if (!cfg->max_snapshot_size || !cfg->max_bytes || !cfg->max_snapshots ||
            !cfg->max_staging)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->cfg = *cfg;
        if (!t->cfg.max_staging_bytes) {
                /* One uid must not be able to fill the whole byte budget with staging files
                 * it never publishes; it must still be able to stage one largest snapshot. */
                t->cfg.max_staging_bytes = cfg->max_bytes / 4;
                if (t->cfg.max_staging_bytes < cfg->max_snapshot_size)
                        t->cfg.max_staging_bytes = cfg->max_snapshot_size;
        }
        r = snap_store_new(&(struct snap_store_config){
                                   .max_object_size = cfg->max_snapshot_size,
                                   .max_bytes = cfg->max_bytes,
                                   .max_objects = cfg->max_snapshots,
                                   .first_ino = SFS_STAGING_INO + 1,
                           },
                           &t->store);
        if (r < 0) {
                free(t);
                return r;
        }
        pthread_mutex_init(&t->lock, NULL);
        t->root.kind = SFS_KIND_ROOT;
        t->root.ino = SFS_ROOT_INO;
        t->staging.kind = SFS_KIND_STAGING_DIR;
        t->staging.ino = SFS_STAGING_INO;
        clock_gettime(CLOCK_REALTIME, &t->dir_mtime);
        *out = t;
        return 0;
}

static void node_free(struct sfs_tree *t, struct sfs_node *n)
{
        if (n->kind == SFS_KIND_SNAPSHOT) {
                if (n->obj->priv == n)
                        n->obj->priv = NULL;
                snap_store_release(t->store, n->obj);
        } else if (n->stg) {
                sfs_staging_free(t, n->stg);
        }
        LIST_DEL(t->nodes, n);
        t->nnodes--;
        free(n);
}

void sfs_tree_free(struct sfs_tree *t)
{
        if (!t)
                return;
        while (t->handles) {
                struct sfs_handle *h = t->handles;
                LIST_DEL(t->handles, h);
                free(h);
        }
        while (t->dirs) {
                struct sfs_dir *d = t->dirs;
                LIST_DEL(t->dirs, d);
                free(d);
        }
        while (t->nodes)
                node_free(t, t->nodes);
        for (size_t i = 0; i < t->nstages; i++)
                free(t->stages[i]);
        free(t->stages);
        snap_store_free(t->store);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

void sfs_tree_set_dev(struct sfs_tree *t, uint64_t dev, bool view)
{
        pthread_mutex_lock(&t->lock);
        if (view)
                t->cfg.read_view_dev = dev;
        else
                t->cfg.dev = dev;
        pthread_mutex_unlock(&t->lock);
}

struct sfs_node *sfs_tree_root(struct sfs_tree *t)
{
        return &t->root;
}

enum sfs_kind sfs_node_kind(const struct sfs_node *n)
{
        return node_kind(n);
}

uint64_t sfs_node_ino(const struct sfs_node *n)
{
        return n->ino;
}

struct sfs_node *sfs_node_new(struct sfs_tree *t, enum sfs_kind kind, uint64_t ino)
{
        struct sfs_node *n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;
        n->kind = kind;
        n->ino = ino;
        LIST_ADD(t->nodes, n);
        t->nnodes++;
        return n;
}

/* A node lives while the kernel references it, a handle is open on it, or (staging) it is
 * still listed. Called with t->lock held. */
void sfs_node_maybe_free(struct sfs_tree *t, struct sfs_node *n)
{
        if (n == &t->root || n == &t->staging)
                return;
        if (n->kind == SFS_KIND_STAGING_FILE && n->linked)
                return;
        if (n->pins == 0 && n->stg)
                /* Unlinked and closed: nobody can reach these bytes again, so give their
                 * quota back now rather than when the kernel gets round to forgetting. */
                sfs_staging_drop_content(t, n->stg);
        if (n->nlookup || n->pins)
                return;
        node_free(t, n);
}

struct sfs_handle *sfs_handle_new(struct sfs_tree *t, struct sfs_node *n, bool write)
{
        struct sfs_handle *h = calloc(1, sizeof(*h));
        if (!h)
                return NULL;
        h->node = n;
        h->write = write;
        n->pins++;
        LIST_ADD(t->handles, h);
        return h;
}

struct sfs_node *sfs_handle_node(const struct sfs_handle *h)
{
        return h->node;
}

void sfs_touch_root(struct sfs_tree *t)
{
        clock_gettime(CLOCK_REALTIME, &t->dir_mtime);
}

const char *sfs_node_label(struct sfs_node *n, char *buf)
{
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                snap_digest_to_hex(&n->obj->digest, buf);
                return buf;
        case SFS_KIND_STAGING_FILE:
                snprintf(buf, SNAP_DIGEST_HEX_LEN + 1, "%s", n->stg->name);
                return buf;
        case SFS_KIND_STAGING_DIR:
                return SFS_STAGING_NAME;
        default:
                return NULL;
        }
}

/* ---- attributes ---- */

void sfs_fill_attr(struct sfs_tree *t, struct sfs_node *n, struct stat *st)
{
        memset(st, 0, sizeof(*st));
        st->st_ino = n->ino;
        st->st_blksize = 128 * 1024;
        switch (node_kind(n)) {
        case SFS_KIND_ROOT:
                st->st_mode = S_IFDIR | 0555;
                st->st_nlink = t->cfg.read_only ? 2 : 3;
                st->st_uid = t->cfg.owner_uid;
                st->st_gid = t->cfg.owner_gid;
                st->st_atim = st->st_mtim = st->st_ctim = t->dir_mtime;
                break;
        case SFS_KIND_STAGING_DIR:
                /* Sticky and world-writable like /tmp: every publisher writes here, and each
                 * sees only its own entries. The daemon, not these bits, enforces that. */
                st->st_mode = S_IFDIR | 01777;
                st->st_nlink = 2;
                st->st_uid = t->cfg.owner_uid;
                st->st_gid = t->cfg.owner_gid;
                st->st_atim = st->st_mtim = st->st_ctim = t->dir_mtime;
                break;
        case SFS_KIND_SNAPSHOT:
                /* Mode 0000: no path-based access right exists; the daemon mediates all. */
                st->st_mode = S_IFREG;
                st->st_nlink = n->unlinked ? 0 : 1;
                st->st_uid = n->obj->publisher_uid;
                st->st_gid = t->cfg.owner_gid;
                st->st_size = (off_t)n->obj->size;
                st->st_blocks = (blkcnt_t)((n->obj->size + 511) / 512);
                st->st_atim = st->st_mtim = st->st_ctim = n->obj->created;
                break;
        case SFS_KIND_STAGING_FILE:
                pthread_mutex_lock(&n->stg->lock);
                sfs_staging_fill_attr(n->stg, st);
                pthread_mutex_unlock(&n->stg->lock);
                break;
        }
}

static double attr_timeout(struct sfs_tree *t, struct sfs_node *n)
{
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                return meta_timeout(t, t->cfg.cache_timeout);
        case SFS_KIND_STAGING_FILE:
                return 0; /* per uid, and changing */
        default:
                return meta_timeout(t, DIR_ATTR_TIMEOUT);
        }
}

/* Visibility of a node to a caller: -EACCES outside the policy, -ENOENT for another uid's
 * staging file (it must be indistinguishable from an absent one). */
static int check_visible(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n)
{
        switch (node_kind(n)) {
        case SFS_KIND_STAGING_FILE:
                if (!n->linked || n->stg->owner != c->uid)
                        return -ENOENT;
                return sfs_may_publish(t, c) ? 0 : -EACCES;
        case SFS_KIND_STAGING_DIR:
                return sfs_may_publish(t, c) ? 0 : -EACCES;
        default:
                return sfs_may_see(t, c) ? 0 : -EACCES;
        }
}

int sfs_tree_getattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct stat *st, double *timeout)
{
        int r;

        pthread_mutex_lock(&t->lock);
        r = check_visible(t, c, n);
        if (r == 0) {
                sfs_fill_attr(t, n, st);
                *timeout = attr_timeout(t, n);
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

/* ---- lookup ---- */

/* The node for a published object, creating it on first lookup. Takes over the reference
 * the caller holds on obj. Called with t->lock held. */
static struct sfs_node *snapshot_node(struct sfs_tree *t, struct snap_object *obj)
{
        struct sfs_node *n = obj->priv;

        if (n) {
                snap_store_release(t->store, obj);
                return n;
        }
        n = sfs_node_new(t, SFS_KIND_SNAPSHOT, obj->ino);
        if (!n) {
                snap_store_release(t->store, obj);
                return NULL;
        }
        n->obj = obj;
        obj->priv = n;
        return n;
}

static int lookup_locked(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                         const char *name, struct sfs_node **out)
{
        struct snap_digest d;
        struct snap_object *obj;

        switch (node_kind(parent)) {
        case SFS_KIND_ROOT:
                if (!sfs_may_see(t, c))
                        return -EACCES;
                if (!t->cfg.read_only && !c->read_view && strcmp(name, SFS_STAGING_NAME) == 0) {
                        *out = &t->staging;
                        return 0;
                }
                if (snap_digest_from_hex(name, strlen(name), &d) < 0)
                        return -ENOENT;
                obj = snap_store_lookup(t->store, &d);
                if (!obj)
                        return -ENOENT;
                *out = snapshot_node(t, obj);
                return *out ? 0 : -ENOMEM;
        case SFS_KIND_STAGING_DIR: {
                struct sfs_uidstage *st;
                if (!sfs_may_publish(t, c))
                        return -EACCES;
                st = sfs_stage_find(t, c->uid, false);
                *out = st ? sfs_stage_lookup(st, name) : NULL;
                return *out ? 0 : -ENOENT;
        }
        default:
                return -ENOTDIR;
        }
}

int sfs_tree_lookup(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, struct sfs_entry *e)
{
        struct sfs_node *n = NULL;
        int r;

        pthread_mutex_lock(&t->lock);
        r = lookup_locked(t, c, parent, name, &n);
        if (r == 0) {
                n->nlookup++;
                e->node = n;
                sfs_fill_attr(t, n, &e->st);
                e->attr_timeout = attr_timeout(t, n);
                /* Staging entries differ per uid: never let the kernel answer from its
                 * dcache. Snapshots never change while they exist, and every removal goes
                 * through this mount, so their entries can be cached long. */
                e->entry_timeout = node_kind(n) == SFS_KIND_STAGING_FILE
                                           ? 0
                                           : meta_timeout(t, t->cfg.cache_timeout);
        }
        pthread_mutex_unlock(&t->lock);
        if (r == -EACCES)
                sfs_tree_refuse(t, c, "lookup", name, EACCES);
        return r;
}

void sfs_tree_forget(struct sfs_tree *t, struct sfs_node *n, uint64_t nlookup)
{
        pthread_mutex_lock(&t->lock);
        n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
        sfs_node_maybe_free(t, n);
        pthread_mutex_unlock(&t->lock);
}

/* ---- access, setattr on things that never change ---- */

int sfs_tree_access(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                    int mask)
{
        int r;

        pthread_mutex_lock(&t->lock);
        r = check_visible(t, c, n);
        if (r == 0) {
                switch (node_kind(n)) {
                case SFS_KIND_SNAPSHOT:
                        if (mask & W_OK)
                                r = -EROFS;
                        else if (mask & X_OK)
                                r = -EACCES;
                        else if ((mask & R_OK) && !sfs_may_read(t, c))
                                r = -EACCES;
                        break;
                case SFS_KIND_ROOT:
                        if (mask & W_OK)
                                r = -EROFS;
                        break;
                case SFS_KIND_STAGING_DIR:
                        break; /* visible means may publish */
                case SFS_KIND_STAGING_FILE:
                        if (mask & X_OK)
                                r = -EACCES;
                        break;
                }
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

int sfs_tree_setxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *op, const char *name)
{
        char buf[SNAP_DIGEST_HEX_LEN + 1];
        const char *label;
        int r;

        (void)name; /* the attribute's name says nothing about what was attacked */
        pthread_mutex_lock(&t->lock);
        r = check_visible(t, c, n);
        label = sfs_node_label(n, buf);
        pthread_mutex_unlock(&t->lock);
        if (r == -ENOENT)
                return r;
        return sfs_tree_refuse(t, c, op, label, r == -EACCES ? EACCES : EROFS);
}

/* ---- xattrs ---- */

static int xattr_value(char *out, size_t outsize, const char *value, size_t vlen, size_t *len)
{
        *len = vlen;
        if (outsize == 0)
                return 0;
        if (outsize < vlen)
                return -ERANGE;
        memcpy(out, value, vlen);
        return 0;
}

int sfs_tree_getxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *name, char *buf, size_t bufsize, size_t *len)
{
        char value[SNAP_BINDING_TEXT_MAX];
        struct snap_digest d;
        struct sfs_staging *stg;
        int r;

        pthread_mutex_lock(&t->lock);
        r = check_visible(t, c, n);
        if (r < 0) {
                pthread_mutex_unlock(&t->lock);
                return r;
        }
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                if (strcmp(name, SFS_XATTR_SHA256) == 0) {
                        snap_digest_to_hex(&n->obj->digest, value);
                } else if (strcmp(name, SFS_XATTR_BINDING) == 0) {
                        struct snap_binding b = {
                                .sha256 = n->obj->digest,
                                .size = n->obj->size,
                                .dev = c->read_view ? t->cfg.read_view_dev : t->cfg.dev,
                                .ino = n->obj->ino,
                        };
                        r = snap_binding_format(&b, value, sizeof(value));
                } else {
                        r = -ENODATA;
                }
                pthread_mutex_unlock(&t->lock);
                break;
        case SFS_KIND_STAGING_FILE:
                if (strcmp(name, SFS_XATTR_SHA256) != 0) {
                        pthread_mutex_unlock(&t->lock);
                        return -ENODATA;
                }
                stg = n->stg;
                pthread_mutex_lock(&stg->lock);
                pthread_mutex_unlock(&t->lock);
                /* The digest of bytes still being written would be a lie a moment later. */
                if (stg->writers)
                        r = -EBUSY;
                else
                        r = sfs_staging_digest(stg, &d);
                pthread_mutex_unlock(&stg->lock);
                if (r == 0)
                        snap_digest_to_hex(&d, value);
                break;
        default:
                pthread_mutex_unlock(&t->lock);
                return -ENODATA;
        }
        if (r < 0)
                return r;
        return xattr_value(buf, bufsize, value, strlen(value), len);
}

int sfs_tree_listxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                       char *buf, size_t bufsize, size_t *len)
{
        static const char snapshot_names[] = SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING;
        static const char staging_names[] = SFS_XATTR_SHA256;
        enum sfs_kind kind;
        int r;

        pthread_mutex_lock(&t->lock);
        r = check_visible(t, c, n);
        kind = node_kind(n);
        pthread_mutex_unlock(&t->lock);
        if (r < 0)
                return r;
        if (kind == SFS_KIND_SNAPSHOT)
                return xattr_value(buf, bufsize, snapshot_names, sizeof(snapshot_names), len);
        if (kind == SFS_KIND_STAGING_FILE)
                return xattr_value(buf, bufsize, staging_names, sizeof(staging_names), len);
        *len = 0;
        return 0;
}

/* ---- unlink ---- */

int sfs_tree_unlink(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name)
{
        struct snap_digest d;
        struct snap_object *obj;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        uint64_t size;

        switch (node_kind(parent)) {
        case SFS_KIND_ROOT:
                break;
        case SFS_KIND_STAGING_DIR:
                return sfs_staging_unlink(t, c, name);
        default:
                return -ENOTDIR;
        }

        pthread_mutex_lock(&t->lock);
        if (!sfs_may_see(t, c)) {
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "unlink", name, EACCES);
        }
        if (strcmp(name, SFS_STAGING_NAME) == 0) {
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "unlink", name, EPERM);
        }
        if (snap_digest_from_hex(name, strlen(name), &d) < 0 ||
            !(obj = snap_store_lookup(t->store, &d))) {
                pthread_mutex_unlock(&t->lock);
                return -ENOENT;
        }
        /* Only the publisher (or root) may withdraw a snapshot: another sandboxed process
         * running as a different uid must not be able to pull a config out from under the
         * runtime that published it. */
        if (c->uid != obj->publisher_uid && c->uid != 0) {
                snap_store_release(t->store, obj);
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "unlink", name, EPERM);
        }
        size = obj->size;
        snap_store_detach(t->store, obj);
        if (obj->priv)
                ((struct sfs_node *)obj->priv)->unlinked = true;
        snap_store_release(t->store, obj); /* the tree's reference */
        snap_store_release(t->store, obj); /* ours from the lookup */
        sfs_touch_root(t);
        pthread_mutex_unlock(&t->lock);

        snap_digest_to_hex(&d, hex);
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = "unlink",
                                             .op = "unlink",
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = hex,
                                             .size = size,
                                     });
        return 0;
}

/* ---- directories ---- */

struct collect {
        struct sfs_dir *d;
        size_t cap;
};

static int dir_add(struct collect *cl, const char *name, uint64_t ino, mode_t mode)
{
        struct sfs_dirent *e;

        if (cl->d->n == cl->cap) {
                size_t ncap = cl->cap * 2;
                struct sfs_dir *nd = realloc(cl->d, sizeof(*nd) + ncap * sizeof(nd->e[0]));
                if (!nd)
                        return -ENOMEM;
                cl->d = nd;
                cl->cap = ncap;
        }
        e = &cl->d->e[cl->d->n++];
        e->ino = ino;
        e->mode = mode;
        snprintf(e->name, sizeof(e->name), "%s", name);
        return 0;
}

static int collect_object(const struct snap_object *o, void *ctx)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        snap_digest_to_hex(&o->digest, hex);
        return dir_add(ctx, hex, o->ino, S_IFREG);
}

int sfs_tree_opendir(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct sfs_dir **out)
{
        struct collect cl = { .cap = 16 };
        struct snap_store_stats stats;
        int r;

        pthread_mutex_lock(&t->lock);
        r = check_visible(t, c, n);
        if (r < 0)
                goto out;
        if (node_kind(n) != SFS_KIND_ROOT && node_kind(n) != SFS_KIND_STAGING_DIR) {
                r = -ENOTDIR;
                goto out;
        }
        if (node_kind(n) == SFS_KIND_ROOT) {
                snap_store_get_stats(t->store, &stats);
                cl.cap += stats.indexed;
        }
        cl.d = malloc(sizeof(*cl.d) + cl.cap * sizeof(cl.d->e[0]));
        if (!cl.d) {
                r = -ENOMEM;
                goto out;
        }
        cl.d->n = 0;
        r = dir_add(&cl, ".", n->ino, S_IFDIR);
        if (r == 0)
                r = dir_add(&cl, "..", SFS_ROOT_INO, S_IFDIR);
        if (r == 0 && node_kind(n) == SFS_KIND_ROOT) {
                if (!t->cfg.read_only && !c->read_view)
                        r = dir_add(&cl, SFS_STAGING_NAME, SFS_STAGING_INO, S_IFDIR);
                if (r == 0)
                        r = snap_store_foreach(t->store, collect_object, &cl);
        } else if (r == 0) {
                struct sfs_uidstage *st = sfs_stage_find(t, c->uid, false);
                for (struct sfs_node *s = st ? st->head : NULL; s && r == 0;
                     s = s->stg->next_staged)
                        r = dir_add(&cl, s->stg->name, s->ino, S_IFREG);
        }
        if (r < 0) {
                free(cl.d);
                goto out;
        }
        LIST_ADD(t->dirs, cl.d);
        *out = cl.d;
out:
        pthread_mutex_unlock(&t->lock);
        if (r == -EACCES)
                sfs_tree_refuse(t, c, "opendir", NULL, EACCES);
        return r;
}

int sfs_tree_readdir(struct sfs_tree *t, struct sfs_dir *d, off_t off,
                     int (*fill)(void *ctx, const char *name, uint64_t ino, mode_t mode,
                                 off_t next_off),
                     void *ctx)
{
        (void)t;
        /* The listing is private to this handle: no lock needed. */
        for (size_t i = off < 0 ? 0 : (size_t)off; i < d->n; i++)
                if (fill(ctx, d->e[i].name, d->e[i].ino, d->e[i].mode, (off_t)(i + 1)))
                        break;
        return 0;
}

void sfs_tree_releasedir(struct sfs_tree *t, struct sfs_dir *d)
{
        pthread_mutex_lock(&t->lock);
        LIST_DEL(t->dirs, d);
        pthread_mutex_unlock(&t->lock);
        free(d);
}

/* ---- statfs and stats ---- */

void sfs_tree_statfs(struct sfs_tree *t, struct statvfs *sv)
{
        struct snap_store_stats s;
        const unsigned long bsize = 4096;
        uint64_t used;

        snap_store_get_stats(t->store, &s);
        used = s.bytes + s.reserved;
        memset(sv, 0, sizeof(*sv));
        sv->f_bsize = bsize;
        sv->f_frsize = bsize;
        sv->f_blocks = t->cfg.max_bytes / bsize;
        sv->f_bfree = used >= t->cfg.max_bytes ? 0 : (t->cfg.max_bytes - used) / bsize;
        sv->f_bavail = sv->f_bfree;
        sv->f_files = t->cfg.max_snapshots;
        sv->f_ffree = s.objects >= t->cfg.max_snapshots ? 0 : t->cfg.max_snapshots - s.objects;
        sv->f_favail = sv->f_ffree;
        sv->f_namemax = SNAP_DIGEST_HEX_LEN;
}

void sfs_tree_get_stats(struct sfs_tree *t, struct sfs_tree_stats *st)
{
        struct snap_store_stats s;

        pthread_mutex_lock(&t->lock);
        snap_store_get_stats(t->store, &s);
        st->snapshots = s.indexed;
        st->bytes = s.bytes;
        st->reserved = s.reserved;
        st->staging_files = t->staging_files;
        st->nodes = t->nnodes;
        pthread_mutex_unlock(&t->lock);
}

/* ---- content for the page cache ---- */

int sfs_tree_get_content(struct sfs_tree *t, struct sfs_node *n, struct snap_object **ref,
                         const void **data, uint64_t *size)
{
        int r = 0;

        pthread_mutex_lock(&t->lock);
        if (node_kind(n) != SFS_KIND_SNAPSHOT) {
                r = -EINVAL;
        } else if (n->pins) {
                r = -EBUSY;
        } else {
                snap_store_ref(t->store, n->obj);
                *ref = n->obj;
                *data = n->obj->data;
                *size = n->obj->size;
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

void sfs_tree_put_content(struct sfs_tree *t, struct snap_object *ref)
{
        snap_store_release(t->store, ref);
}
