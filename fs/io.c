/* SPDX-License-Identifier: MIT */
/* Open handles: opening snapshots and staging files, reading, flushing, releasing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tree-internal.h"
#include "util.h"

int sfs_tree_open(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n, int flags,
                  struct sfs_handle **h, struct sfs_open_info *oi)
{
        bool write = (flags & O_ACCMODE) != O_RDONLY;
        struct sfs_staging *stg;
        int r = 0;

        pthread_mutex_lock(&t->lock);
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                if (!sfs_may_read(t, c))
                        r = -EACCES;
                else if (write || (flags & (O_TRUNC | O_APPEND)))
                        r = -EROFS;
                if (r < 0)
                        break;
                *h = sfs_handle_new(t, n, false);
                if (!*h) {
                        r = -ENOMEM;
                        break;
                }
                /* Immutable content: the page cache never goes stale. */
                oi->keep_cache = true;
                oi->direct_io = false;
                break;
        case SFS_KIND_STAGING_FILE:
                if (!n->linked || n->stg->owner != c->uid) {
                        r = -ENOENT;
                        break;
                }
                if (!sfs_may_publish(t, c)) {
                        r = -EACCES;
                        break;
                }
                if (flags & (O_APPEND | O_DIRECT)) {
                        r = -EINVAL;
                        break;
                }
                stg = n->stg;
                pthread_mutex_lock(&stg->lock);
                if (stg->publishing && (write || (flags & O_TRUNC))) {
                        r = -EBUSY;
                } else if (!(*h = sfs_handle_new(t, n, write))) {
                        r = -ENOMEM;
                } else {
                        stg->last_active_ms = sfs_now_ms();
                        if (write) {
                                (*h)->writing = true;
                                stg->writers++;
                        }
                        if (write && (flags & O_TRUNC)) {
                                sfs_staging_truncate_locked(t, stg, 0);
                                clock_gettime(CLOCK_REALTIME, &stg->mtime);
                                stg->last_active_ms = sfs_now_ms();
                        }
                }
                pthread_mutex_unlock(&stg->lock);
                oi->direct_io = true;
                oi->keep_cache = false;
                oi->flush = write;
                break;
        default:
                r = -EISDIR;
                break;
        }
        if (r == -EACCES || r == -EROFS || r == -EINVAL || r == -EBUSY) {
                char buf[SNAP_DIGEST_HEX_LEN + 1];
                const char *label = sfs_node_label(n, buf);
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "open", label, -r);
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

static int read_snapshot(struct sfs_tree *t, struct sfs_node *n, size_t size, off_t off,
                         int (*reply)(void *ctx, const void *data, size_t len), void *ctx);

int sfs_tree_read(struct sfs_tree *t, struct sfs_handle *h, size_t size, off_t off,
                  int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        struct sfs_node *n = h->node;
        struct sfs_staging *stg;
        int r;

        if (off < 0)
                return -EINVAL;
        /* Snapshot content never changes and the handle keeps it alive: no lock. */
        if (node_kind(n) != SFS_KIND_SNAPSHOT) {
                pthread_mutex_lock(&t->lock);
                if (node_kind(n) != SFS_KIND_SNAPSHOT) {
                        stg = n->stg;
                        pthread_mutex_lock(&stg->lock);
                        pthread_mutex_unlock(&t->lock);
                        if ((uint64_t)off >= stg->len)
                                r = reply(ctx, "", 0);
                        else
                                r = reply(ctx, stg->buf + off,
                                          size < stg->len - (size_t)off ? size
                                                                        : stg->len - (size_t)off);
                        pthread_mutex_unlock(&stg->lock);
                        return r;
                }
                pthread_mutex_unlock(&t->lock);
        }
        return read_snapshot(t, n, size, off, reply, ctx);
}

int sfs_tree_read_node(struct sfs_tree *t, struct sfs_node *n, size_t size, off_t off,
                       int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        if (off < 0)
                return -EINVAL;
        if (node_kind(n) != SFS_KIND_SNAPSHOT)
                return -EBADF;
        return read_snapshot(t, n, size, off, reply, ctx);
}

static int read_snapshot(struct sfs_tree *t, struct sfs_node *n, size_t size, off_t off,
                         int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        struct snap_object *obj = n->obj;
        int r;

        if ((uint64_t)off >= obj->size)
                return reply(ctx, "", 0);
        /* The reply completes the kernel's READ inside writev(), and with it the kernel may
         * send the RELEASE that unpins this node, which another thread can process while this
         * one is still returning from writev(). Hold the content for the whole reply rather
         * than rely on that ordering. */
        snap_store_ref(t->store, obj);
        r = reply(ctx, obj->data + off,
                  size < obj->size - (uint64_t)off ? size : (size_t)(obj->size - (uint64_t)off));
        snap_store_release(t->store, obj);
        return r;
}

void sfs_tree_flush(struct sfs_tree *t, struct sfs_handle *h)
{
        struct sfs_node *n = h->node;

        pthread_mutex_lock(&t->lock);
        if (node_kind(n) == SFS_KIND_STAGING_FILE) {
                pthread_mutex_lock(&n->stg->lock);
                if (h->writing) {
                        h->writing = false;
                        n->stg->writers--;
                }
                n->stg->last_active_ms = sfs_now_ms();
                pthread_mutex_unlock(&n->stg->lock);
        }
        pthread_mutex_unlock(&t->lock);
}

void sfs_tree_release(struct sfs_tree *t, struct sfs_handle *h)
{
        struct sfs_node *n = h->node;

        pthread_mutex_lock(&t->lock);
        if (node_kind(n) == SFS_KIND_STAGING_FILE) {
                pthread_mutex_lock(&n->stg->lock);
                if (h->writing)
                        n->stg->writers--;
                n->stg->last_active_ms = sfs_now_ms();
                pthread_mutex_unlock(&n->stg->lock);
        }
        n->pins--;
        if (h->prev)
                h->prev->next = h->next;
        else
                t->handles = h->next;
        if (h->next)
                h->next->prev = h->prev;
        sfs_node_maybe_free(t, n);
        pthread_mutex_unlock(&t->lock);
        free(h);
}
