/* SPDX-License-Identifier: MIT */
/* Operations on files, snapshots and staging files alike: open, create, read, write,
 * truncate, flush, release, unlink, and the expiry of staging files left behind. Each decides
 * who may (roles.h), on which node (tree.c), and hands staged bytes to staging.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/base/metrics.h"
#include "fs/store/ocistore.h"
#include "fs/tree/tree-internal.h"
#include "common/util.h"

/* ---- open, create ---- */

int sfs_tree_open(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n, int flags,
                  struct sfs_handle **h, struct sfs_open_info *oi)
{
        bool write = (flags & O_ACCMODE) != O_RDONLY;
        struct sfs_staging *stg;
        int r = 0;

        tree_lock(t);
        switch (node_kind(n)) {
        case SFS_KIND_CONTROL:
                r = sfs_control_open(t, c, n, h, oi);
                break;
        case SFS_KIND_WATCH:
                /* Read like the entry it watches: by the readers the view admits. */
                if (!sfs_may_read(&t->cfg, c))
                        r = -EACCES;
                else if (write || (flags & (O_TRUNC | O_APPEND)))
                        r = -EROFS;
                else if (!(*h = sfs_handle_new(t, n, false)))
                        r = -ENOMEM;
                if (r == 0)
                        oi->direct_io = true; /* nothing to cache */
                break;
        case SFS_KIND_SNAPSHOT:
                /* In a view, a node whose grant went since the kernel looked it up still
                 * opens for a user (its lookup came first: a rotation never fails a reader);
                 * new lookups find nothing. */
                if (!sfs_may_read(&t->cfg, c))
                        r = -EACCES;
                else if (!n->obj)
                        /* Its grant went and its content with it: ESTALE makes the kernel
                         * look the name up again (what it names now, or ENOENT). */
                        r = -ESTALE;
                else if (!sfs_main_may_see_snapshot(t, c, n->obj))
                        r = -ENOENT;
                else if (write || (flags & (O_TRUNC | O_APPEND)))
                        r = -EROFS;
                if (r < 0)
                        break;
                *h = sfs_handle_new(t, n, false);
                if (!*h) {
                        r = -ENOMEM;
                        break;
                }
                /* Immutable content: the page cache never goes stale. But a scope's content
                 * on the main mount (only grants keep it: the owner verifying a put --scope)
                 * bypasses it: nothing of a scope's secret stays cached for the main mount's
                 * inode once its grants go, where no invalidation reaches it. */
                oi->direct_io = !t->scope && !snap_store_held(t->store, n->obj);
                oi->keep_cache = !oi->direct_io;
                break;
        case SFS_KIND_STAGING_FILE:
                if (!n->linked || n->stg->owner != c->uid) {
                        r = -ENOENT;
                        break;
                }
                if (!sfs_may_publish(&t->cfg, c)) {
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
                        sfs_staging_touch_locked(stg);
                        if (write) {
                                (*h)->writing = true;
                                stg->writers++;
                        }
                        if (write && (flags & O_TRUNC))
                                sfs_staging_resize_locked(stg, 0);
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
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "open", label, -r);
        }
        tree_unlock(t);
        return r;
}

int sfs_tree_create(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, int flags, struct sfs_entry *e, struct sfs_handle **h,
                    struct sfs_open_info *oi)
{
        struct sfs_uidstage *st;
        struct sfs_staging *stg = NULL;
        struct sfs_node *n = NULL;
        int r = 0;

        tree_lock(t);
        if (node_kind(parent) == SFS_KIND_ROOT) {
                r = sfs_may_see(&t->cfg, c) ? -EPERM : -EACCES;
        } else if (node_kind(parent) != SFS_KIND_STAGING_DIR) {
                r = -ENOTDIR;
        } else if (!sfs_may_publish(&t->cfg, c)) {
                r = -EACCES;
        } else if (!sfs_staging_name_valid(name) || (flags & (O_APPEND | O_DIRECT))) {
                /* O_APPEND and O_DIRECT: staging writes are already direct, and an append
                 * position computed from a cached size is not one to trust. */
                r = -EINVAL;
        } else if (!(st = sfs_stage_find(t, c->uid, true))) {
                r = -ENOMEM;
        } else if (sfs_stage_lookup(st, name)) {
                r = -EEXIST;
        } else if ((t->scope ? t->staging_files : st->count) >= t->cfg.max_staging) {
                /* In a view the scope's staging files count, whoever made them. */
                r = -EDQUOT;
        }
        if (r < 0)
                goto refused;

        r = sfs_staging_new(name, c->uid, c->gid, &t->budget,
                            t->scope ? &t->scope->staging_bytes : &st->bytes, &stg);
        if (r < 0)
                goto refused;
        n = sfs_node_new(t, SFS_KIND_STAGING_FILE, sfs_tree_alloc_ino(t));
        if (!n) {
                sfs_staging_free(stg);
                r = -ENOMEM;
                goto refused;
        }
        n->stg = stg;
        sfs_stage_add(t, st, n);

        *h = sfs_handle_new(t, n, (flags & O_ACCMODE) != O_RDONLY);
        if (!*h) {
                sfs_stage_remove(t, n, false);
                sfs_node_maybe_free(t, n);
                r = -ENOMEM;
                goto refused;
        }
        if ((*h)->write) {
                (*h)->writing = true;
                stg->writers++;
        }
        n->nlookup++;
        e->node = n;
        sfs_fill_attr(t, n, &e->st);
        e->entry_timeout = e->attr_timeout = 0;
        oi->direct_io = true;
        oi->keep_cache = false;
        oi->flush = (*h)->write;
        tree_unlock(t);
        return 0;

refused:
        tree_unlock(t);
        if (r == -ENOTDIR || r == -ENOMEM)
                return r;
        return sfs_tree_refuse(t, c, "create", name, -r);
}

/* ---- read ---- */

/* Reads obj, on which the caller took a reference for this read (released here). */
static int read_snapshot(struct sfs_tree *t, struct snap_object *obj, size_t size, off_t off,
                         int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        int r;

        if ((uint64_t)off >= obj->size) {
                snap_store_release(t->store, obj);
                return reply(ctx, "", 0);
        }
        if (size > obj->size - (uint64_t)off)
                size = (size_t)(obj->size - (uint64_t)off);
        r = reply(ctx, obj->data + off, size);
        snap_store_release(t->store, obj);
        if (r >= 0)
                sfs_metrics_bytes_read(size);
        return r;
}

int sfs_tree_read(struct sfs_tree *t, struct sfs_handle *h, size_t size, off_t off,
                  int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        struct sfs_node *n;
        struct sfs_staging *stg;
        int r;

        if (!h)
                return -EBADF;
        n = h->node;
        if (off < 0)
                return -EINVAL;
        if (node_kind(n) == SFS_KIND_CONTROL)
                return sfs_control_read(t, h, size, off, reply, ctx);
        if (node_kind(n) == SFS_KIND_WATCH)
                return reply(ctx, "", 0);
        /* Snapshot content never changes and the handle keeps it alive. */
        if (node_kind(n) != SFS_KIND_SNAPSHOT) {
                tree_lock(t);
                if (node_kind(n) != SFS_KIND_SNAPSHOT) {
                        stg = n->stg;
                        pthread_mutex_lock(&stg->lock);
                        tree_unlock(t);
                        r = sfs_staging_read_locked(stg, size, (uint64_t)off, reply, ctx);
                        pthread_mutex_unlock(&stg->lock);
                        return r;
                }
                tree_unlock(t);
        }
        /* The reply completes the kernel's READ inside writev(), and with it the kernel may
         * send the RELEASE that unpins this node (and drops a revoked node's content), which
         * another thread can process while this one is still returning from writev(). Hold
         * the content for the whole reply rather than rely on that ordering; until the reply
         * the open handle keeps it. */
        snap_store_ref(t->store, n->obj);
        return read_snapshot(t, n->obj, size, off, reply, ctx);
}

int sfs_tree_read_node(struct sfs_tree *t, struct sfs_node *n, size_t size, off_t off,
                       int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        struct snap_object *obj;

        if (off < 0)
                return -EINVAL;
        if (node_kind(n) == SFS_KIND_WATCH)
                return reply(ctx, "", 0);
        if (node_kind(n) != SFS_KIND_SNAPSHOT)
                return -EBADF;
        /* No handle keeps the content (the kernel opened without asking): it may have been
         * collected. */
        tree_lock(t);
        obj = n->obj;
        if (obj)
                snap_store_ref(t->store, obj);
        tree_unlock(t);
        if (!obj)
                return -ESTALE;
        return read_snapshot(t, obj, size, off, reply, ctx);
}

int sfs_tree_get_content(struct sfs_tree *t, struct sfs_node *n, struct snap_object **ref,
                         const void **data, uint64_t *size)
{
        int r = 0;

        tree_lock(t);
        if (node_kind(n) != SFS_KIND_SNAPSHOT) {
                r = -EINVAL;
        } else if (n->pins) {
                r = -EBUSY;
        } else if (!n->obj) {
                r = -ESTALE;
        } else {
                snap_store_ref(t->store, n->obj);
                *ref = n->obj;
                *data = n->obj->data;
                *size = n->obj->size;
        }
        tree_unlock(t);
        return r;
}

void sfs_tree_put_content(struct sfs_tree *t, struct snap_object *ref)
{
        snap_store_release(t->store, ref);
}

/* ---- write, truncate ---- */

int sfs_tree_write_flags(struct sfs_tree *t, const struct sfs_caller *c, int flags)
{
        /* An append position is computed by the kernel from a cached size, not one to trust;
         * the same rule as at create (docs/design.md, "Every errno of the mount"). */
        if (flags & (O_APPEND | O_DIRECT))
                return sfs_tree_refuse(t, c, "write", NULL, EINVAL);
        return 0;
}

int sfs_tree_write(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_handle *h,
                   const void *buf, size_t size, off_t off)
{
        struct sfs_node *n;
        struct sfs_staging *stg;
        uint64_t end;
        int r;

        /* No handle: a write the kernel sends without an open we answered (root remounted
         * the read view rw and wrote through a shared mapping). It once dereferenced NULL
         * and took both mounts down. */
        if (!h || !h->write)
                return -EBADF;
        n = h->node;
        if (off < 0)
                return -EINVAL;
        if (node_kind(n) == SFS_KIND_CONTROL)
                return sfs_control_write(t, c, h, buf, size, off);
        tree_lock(t);
        if (node_kind(n) != SFS_KIND_STAGING_FILE) {
                tree_unlock(t);
                return -EBADF;
        }
        stg = n->stg;
        pthread_mutex_lock(&stg->lock);
        tree_unlock(t);

        /* A handle flushed by close() of one dup can still write through another: never
         * while a rename is hashing, or the published bytes would not be the hashed ones. */
        if (stg->publishing) {
                r = -EBUSY;
        } else if (__builtin_add_overflow((uint64_t)off, size, &end)) {
                r = -EFBIG;
        } else {
                if (!h->writing) {
                        h->writing = true;
                        stg->writers++;
                }
                r = sfs_staging_write_locked(stg, buf, size, (uint64_t)off);
        }
        if (r < 0)
                sfs_staging_note_refusal_locked(stg, r);
        pthread_mutex_unlock(&stg->lock);
        if (r == -EFBIG || r == -ENOSPC || r == -EBUSY || r == -EDQUOT)
                return sfs_tree_refuse(t, c, "write", NULL, -r);
        return r;
}

int sfs_tree_setattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     const struct stat *attr, int to_set, struct stat *st, double *timeout)
{
        struct sfs_staging *stg;
        int r = 0;

        tree_lock(t);
        if (node_kind(n) != SFS_KIND_STAGING_FILE) {
                /* Snapshots and directories never change: truncate, chmod, chown and
                 * utimens all get EROFS, for every uid including root. */
                bool visible = node_kind(n) == SFS_KIND_STAGING_DIR
                                       ? sfs_may_publish(&t->cfg, c)
                                       : sfs_may_see(&t->cfg, c);
                char buf[SNAP_DIGEST_HEX_LEN + 1];
                const char *label = sfs_node_label(n, buf);
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "setattr", label, visible ? EROFS : EACCES);
        }
        if (!n->linked || n->stg->owner != c->uid) {
                tree_unlock(t);
                return -ENOENT;
        }
        if (to_set & (SFS_SET_MODE | SFS_SET_UID | SFS_SET_GID)) {
                /* A staging file stays 0200 and its owner's: nothing to hand to others. */
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "setattr", n->stg->name, EPERM);
        }
        stg = n->stg;
        pthread_mutex_lock(&stg->lock);
        if ((to_set & SFS_SET_SIZE) && stg->publishing)
                r = -EBUSY;
        else if ((to_set & SFS_SET_SIZE) && attr->st_size < 0)
                r = -EINVAL;
        else if (to_set & SFS_SET_SIZE)
                r = sfs_staging_resize_locked(stg, (uint64_t)attr->st_size);
        /* Times are accepted and ignored: tools such as cp -p set them. */
        if (r == 0)
                sfs_staging_fill_attr(stg, st);
        else
                sfs_staging_note_refusal_locked(stg, r);
        pthread_mutex_unlock(&stg->lock);
        tree_unlock(t);
        *timeout = 0;
        if (r == -EFBIG || r == -ENOSPC || r == -EBUSY || r == -EDQUOT)
                return sfs_tree_refuse(t, c, "truncate", NULL, -r);
        return r;
}

/* ---- flush, release ---- */

/* The handle no longer counts as a writer of its staging file (until it writes again), and
 * the owner used the file just now. t->lock held. */
static void done_writing(struct sfs_handle *h)
{
        struct sfs_node *n = h->node;

        if (node_kind(n) != SFS_KIND_STAGING_FILE)
                return;
        pthread_mutex_lock(&n->stg->lock);
        if (h->writing) {
                h->writing = false;
                n->stg->writers--;
        }
        sfs_staging_touch_locked(n->stg);
        pthread_mutex_unlock(&n->stg->lock);
}

void sfs_tree_flush(struct sfs_tree *t, struct sfs_handle *h)
{
        if (!h)
                return;
        tree_lock(t);
        done_writing(h);
        tree_unlock(t);
}

void sfs_tree_release(struct sfs_tree *t, struct sfs_handle *h)
{
        if (!h)
                return;
        tree_lock(t);
        done_writing(h);
        if (node_kind(h->node) == SFS_KIND_WATCH)
                sfs_watch_drop_handle(h->node->watch, sfs_handle_id(h));
        sfs_handle_del(t, h);
        tree_unlock(t);
        sfs_ctl_free(h->ctl);
        free(h);
}

/* ---- poll ---- */

int sfs_tree_poll(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                  uint64_t fh, void *ph, const void *owner, const struct sfs_poll_ops *ops,
                  unsigned *revents)
{
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        if (r == 0 && node_kind(n) == SFS_KIND_WATCH) {
                *revents = sfs_watch_poll(n->watch, fh, ph, owner, ops);
                ph = NULL;
        } else {
                /* A file is always ready, as the kernel says of one whose server does not
                 * implement poll. */
                *revents = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
        }
        tree_unlock(t);
        if (ph)
                ops->drop(ph);
        return r;
}

void sfs_tree_poll_forget(struct sfs_tree *t, const void *owner)
{
        tree_lock(t);
        sfs_watches_forget_owner(&t->watches, owner);
        tree_unlock(t);
}

void sfs_tree_announce_moves(struct sfs_tree *t)
{
        tree_lock(t);
        sfs_watches_announce(&t->watches);
        tree_unlock(t);
}

/* ---- unlink, expiry ---- */

static int unlink_staging(struct sfs_tree *t, const struct sfs_caller *c, const char *name)
{
        struct sfs_uidstage *st;
        struct sfs_node *n;
        int r = 0;

        tree_lock(t);
        if (!sfs_may_publish(&t->cfg, c)) {
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "unlink", name, EACCES);
        }
        st = sfs_stage_find(t, c->uid, false);
        n = st ? sfs_stage_lookup(st, name) : NULL;
        if (!n) {
                tree_unlock(t);
                return -ENOENT;
        }
        pthread_mutex_lock(&n->stg->lock);
        if (n->stg->publishing)
                r = -EBUSY;
        pthread_mutex_unlock(&n->stg->lock);
        if (r == 0) {
                sfs_stage_remove(t, n, true);
                sfs_node_maybe_free(t, n);
        }
        tree_unlock(t);
        if (r < 0)
                return sfs_tree_refuse(t, c, "unlink", name, -r);
        return 0;
}

/* The holders of obj once uid's hold is dropped, for the store. */
static size_t holders_without(struct sfs_tree *t, struct snap_object *obj, uint32_t uid,
                              uint32_t *out)
{
        uint32_t all[SNAP_HOLDERS_MAX + 1];
        size_t n = snap_store_get_holders(t->store, obj, all, ARRAY_SIZE(all)), kept = 0;

        /* Every hold: none left (grants to scopes keep it). */
        if (uid == SNAP_HOLDER_ALL)
                return 0;
        for (size_t i = 0; i < n && i < ARRAY_SIZE(all); i++)
                if (all[i] != uid)
                        out[kept++] = all[i];
        return kept;
}

/* unlink of a snapshot. The mount owner and root remove it: every hold goes. With
 * --unlink-own a holder drops its own hold alone: the snapshot stays while anything else
 * references it (another holder: the attack was a sandbox pre-publishing the runtime's
 * predictable config and removing it after the runtime published the same bytes), and goes
 * with the last. Whether anything still references it is the store's one decision
 * (snap_store_kept_without). */
static int unlink_snapshot(struct sfs_tree *t, const struct sfs_caller *c, const char *name)
{
        struct snap_digest d;
        struct snap_object *obj;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        uint32_t drop;
        uint64_t size;
        bool kept;
        int r;

        tree_lock(t);
        if (!sfs_may_see(&t->cfg, c)) {
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "unlink", name, EACCES);
        }
        if (strcmp(name, SFS_STAGING_NAME) == 0 || strcmp(name, SFS_CONTROL_NAME) == 0) {
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "unlink", name, EPERM);
        }
        if (snap_digest_from_hex(name, strlen(name), &d) < 0 ||
            !(obj = snap_store_lookup(t->store, &d))) {
                tree_unlock(t);
                return -ENOENT;
        }
        if (!sfs_main_may_see_snapshot(t, c, obj)) {
                snap_store_release(t->store, obj);
                tree_unlock(t);
                return -ENOENT;
        }
        if (sfs_may_remove(&t->cfg, c))
                drop = SNAP_HOLDER_ALL;
        else if (sfs_may_unhold(&t->cfg, c) && snap_store_holds(t->store, obj, (uint32_t)c->uid))
                drop = (uint32_t)c->uid;
        else {
                /* Not the owner, or a uid that holds nothing on it. */
                snap_store_release(t->store, obj);
                tree_unlock(t);
                return sfs_tree_refuse(t, c, "unlink", name, EPERM);
        }
        kept = snap_store_kept_without(t->store, obj,
                                       &(struct snap_drop){ .hold = true, .uid = drop });
        if (t->cfg.ocistore) {
                /* On the disk first: a snapshot answered as removed never comes back after a
                 * restart, nor does a hold answered as dropped. Under t->lock: unlinks are
                 * rare, and the tree must not change between the checks above and the
                 * change below. Removal needs no room on the store's filesystem; rewriting
                 * the holders of a snapshot that stays does. */
                if (kept) {
                        uint32_t holders[SNAP_HOLDERS_MAX + 1];
                        size_t n = holders_without(t, obj, drop, holders);
                        r = sfs_ocistore_set_holders(t->cfg.ocistore, &d, holders, n);
                } else {
                        r = sfs_ocistore_remove(t->cfg.ocistore, &d);
                }
                if (r < 0 && r != -ENOENT) {
                        snap_store_release(t->store, obj);
                        tree_unlock(t);
                        return sfs_tree_refuse(t, c, "unlink", name, -r);
                }
        }
        size = obj->size;
        r = snap_store_unhold(t->store, obj, drop);
        if (r == 1) {
                snap_store_release(t->store, obj); /* its publication's reference */
                sfs_touch_root(t);
        }
        snap_store_release(t->store, obj); /* ours from the lookup */
        tree_unlock(t);

        snap_digest_to_hex(&d, hex);
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             /* Only a hold went: the snapshot stays. Every
                                              * hold: gone from the main mount (grants to
                                              * scopes may keep it in their views). */
                                             .event = r == 1 || drop == SNAP_HOLDER_ALL
                                                              ? "unlink"
                                                              : "unlink-hold",
                                             .op = "unlink",
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = hex,
                                             .size = size,
                                     });
        return 0;
}

/* unlink in a scope's view: its publishers take back a snapshot the scope published itself
 * (making room under its limits); what the operator granted, and every entry, is changed
 * through the control channel alone (EPERM). The snapshot goes with its last reference, from
 * --store too. The store's lock is held when there is one. */
static int unpublish(struct sfs_tree *t, const struct sfs_caller *c, const char *name)
{
        struct sfs_scope_op op = { .kind = SFS_SCOPE_UNPUBLISH, .has_digest = true };
        struct sfs_scope_effects fx = { 0 };
        int (*save)(void *ctx, const struct sfs_scope_op *op);
        void *save_ctx;
        struct sfs_grant *g;
        uint64_t size = 0;
        int r = 0;

        tree_lock(t);
        save = t->scope->save;
        save_ctx = t->scope->save_ctx;
        if (!sfs_may_see(&t->cfg, c))
                r = -EACCES;
        else if (strcmp(name, SFS_STAGING_NAME) == 0)
                r = -EPERM;
        else if (!(g = sfs_scope_resolve(t, name)))
                r = -ENOENT;
        else if (!snap_is_digest_name(name) || !g->published || !sfs_may_unpublish(&t->cfg, c))
                r = -EPERM;
        else
                op.digest = g->digest;
        tree_unlock(t);
        if (r == -ENOENT)
                return r;
        if (r < 0)
                return sfs_tree_refuse(t, c, "unlink", name, -r);
        /* Persisted before it is done: an unlink answered never comes back. */
        if (save && (r = save(save_ctx, &op)) < 0)
                return r == -ENOENT ? r : sfs_tree_refuse(t, c, "unlink", name, -r);
        tree_lock(t);
        g = sfs_scope_grant_of(t, &op.digest);
        size = g ? g->obj->size : 0;
        r = sfs_scope_apply_locked(t, &op, NULL, NULL, &fx);
        if (r == 0)
                sfs_touch_root(t);
        tree_unlock(t);
        for (size_t i = 0; i < fx.n_gone; i++) {
                if (t->cfg.ocistore)
                        sfs_ocistore_remove(t->cfg.ocistore, &fx.gone[i]->digest);
        }
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        if (r < 0)
                return r == -ENOENT ? r : sfs_tree_refuse(t, c, "unlink", name, -r);
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = "unlink",
                                             .op = "unlink",
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = name,
                                             .size = size,
                                             .scope = t->scope->name,
                                     });
        return 0;
}

int sfs_tree_unlink(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name)
{
        int r;

        switch (node_kind(parent)) {
        case SFS_KIND_ROOT:
                break;
        case SFS_KIND_STAGING_DIR:
                return unlink_staging(t, c, name);
        default:
                return -ENOTDIR;
        }

        if (t->cfg.ocistore) {
                /* The store's lock is the outermost: taken first, held to the end. */
                sfs_ocistore_lock(t->cfg.ocistore);
                r = t->scope ? unpublish(t, c, name) : unlink_snapshot(t, c, name);
                sfs_ocistore_unlock(t->cfg.ocistore);
                return r;
        }
        return t->scope ? unpublish(t, c, name) : unlink_snapshot(t, c, name);
}

unsigned sfs_tree_expire_staging(struct sfs_tree *t, uint64_t now_ms)
{
        unsigned removed = 0;

        if (!t->cfg.staging_ttl_ms)
                return 0;
        tree_lock(t);
        for (size_t i = 0; i < t->nstages; i++) {
                struct sfs_node *n = t->stages[i]->head, *next;
                for (; n; n = next) {
                        struct sfs_staging *stg = n->stg;
                        bool idle;

                        next = n->next_staged;
                        pthread_mutex_lock(&stg->lock);
                        /* A client that died mid-publish leaves a closed staging file
                         * behind: it must not hold the owner's quota and the byte budget
                         * forever. Anything still open, or being published, is in use. */
                        idle = n->pins == 0 && !stg->publishing &&
                               now_ms >= stg->last_active_ms &&
                               now_ms - stg->last_active_ms >= t->cfg.staging_ttl_ms;
                        pthread_mutex_unlock(&stg->lock);
                        if (!idle)
                                continue;
                        /* Every expiry is its own line: the emit only queues it, so doing
                         * it under the lock costs no wait on the log. */
                        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                                             .event = "staging-expired",
                                                             .uid = stg->owner,
                                                             .name = stg->name,
                                                     });
                        sfs_stage_remove(t, n, false);
                        sfs_node_maybe_free(t, n);
                        removed++;
                }
        }
        tree_unlock(t);
        return removed;
}
