/* SPDX-License-Identifier: MIT */
/* Staging files: per-uid entries in .staging/, their content and quotas, and expiry. The
 * bytes are hashed as they arrive, so publishing (publish.c) normally needs no second pass
 * over them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tree-internal.h"
#include "util.h"

uint64_t sfs_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool sfs_staging_name_valid(const char *name)
{
        size_t n = 0;

        /* No leading dot: ".", ".." and hidden names are never staging entries. */
        if (!name || name[0] == '.')
                return false;
        for (; name[n]; n++) {
                char ch = name[n];
                if (n == SFS_STAGING_NAME_MAX)
                        return false;
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
                        return false;
        }
        return n > 0;
}

/* ---- per-uid staging lists (t->lock held) ---- */

struct sfs_uidstage *sfs_stage_find(struct sfs_tree *t, uid_t uid, bool create)
{
        struct sfs_uidstage *st;

        for (size_t i = 0; i < t->nstages; i++)
                if (t->stages[i]->uid == uid)
                        return t->stages[i];
        if (!create)
                return NULL;
        if (t->nstages == t->capstages) {
                size_t ncap = t->capstages ? t->capstages * 2 : 8;
                struct sfs_uidstage **n = realloc(t->stages, ncap * sizeof(*n));
                if (!n)
                        return NULL;
                t->stages = n;
                t->capstages = ncap;
        }
        st = calloc(1, sizeof(*st));
        if (!st)
                return NULL;
        st->uid = uid;
        t->stages[t->nstages++] = st;
        return st;
}

struct sfs_node *sfs_stage_lookup(struct sfs_uidstage *st, const char *name)
{
        for (struct sfs_node *n = st->head; n; n = n->stg->next_staged)
                if (strcmp(n->stg->name, name) == 0)
                        return n;
        return NULL;
}

void sfs_stage_remove(struct sfs_tree *t, struct sfs_node *n)
{
        struct sfs_uidstage *st = sfs_stage_find(t, n->stg->owner, false);
        struct sfs_node **pp;

        if (!st || !n->linked)
                return;
        for (pp = &st->head; *pp; pp = &(*pp)->stg->next_staged) {
                if (*pp == n) {
                        *pp = n->stg->next_staged;
                        break;
                }
        }
        n->stg->next_staged = NULL;
        n->linked = false;
        st->count--;
        t->staging_files--;
}

/* ---- staging content ---- */

/* Charges delta bytes to the owner: -EDQUOT past max_staging_bytes. */
static int stage_charge(struct sfs_tree *t, struct sfs_staging *stg, uint64_t delta)
{
        uint64_t cur = __atomic_load_n(&stg->stage->bytes, __ATOMIC_RELAXED);

        do {
                if (cur + delta > t->cfg.max_staging_bytes || cur + delta < cur)
                        return -EDQUOT;
        } while (!__atomic_compare_exchange_n(&stg->stage->bytes, &cur, cur + delta, true,
                                              __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        return 0;
}

void sfs_stage_uncharge(struct sfs_staging *stg, uint64_t delta)
{
        __atomic_sub_fetch(&stg->stage->bytes, delta, __ATOMIC_RELAXED);
}

void sfs_staging_drop_content(struct sfs_tree *t, struct sfs_staging *stg)
{
        pthread_mutex_lock(&stg->lock);
        snap_store_unreserve(t->store, stg->len);
        sfs_stage_uncharge(stg, stg->len);
        free(stg->buf);
        stg->buf = NULL;
        stg->len = stg->cap = 0;
        stg->hashed = SFS_HASH_BROKEN;
        stg->digest_valid = false;
        pthread_mutex_unlock(&stg->lock);
}

void sfs_staging_free(struct sfs_tree *t, struct sfs_staging *stg)
{
        if (!stg)
                return;
        snap_store_unreserve(t->store, stg->len);
        sfs_stage_uncharge(stg, stg->len);
        free(stg->buf);
        snap_hasher_free(stg->hasher);
        pthread_mutex_destroy(&stg->lock);
        free(stg);
}

void sfs_staging_fill_attr(struct sfs_staging *stg, struct stat *st)
{
        /* 0200: the owner writes it; nobody reads it back through mode bits. */
        st->st_mode = S_IFREG | 0200;
        st->st_nlink = 1;
        st->st_uid = stg->owner;
        st->st_gid = stg->group;
        st->st_size = (off_t)stg->len;
        st->st_blocks = (blkcnt_t)((stg->len + 511) / 512);
        st->st_atim = st->st_mtim = st->st_ctim = stg->mtime;
}

static const uint8_t zeros[64 * 1024];

static int hash_zeros(struct snap_hasher *h, uint64_t n)
{
        while (n) {
                size_t k = n > sizeof(zeros) ? sizeof(zeros) : (size_t)n;
                int r = snap_hasher_update(h, zeros, k);
                if (r < 0)
                        return r;
                n -= k;
        }
        return 0;
}

/* Keeps the running hash when bytes arrive in order (the publish protocol's normal case);
 * any other change breaks it and the digest is computed from the buffer when needed. */
static void hash_write(struct sfs_staging *stg, size_t old_len, uint64_t off, const void *data,
                       size_t size)
{
        int r = 0;

        stg->digest_valid = false;
        /* SFS_HASH_BROKEN never equals a length, so a broken hash stays broken. */
        if (stg->hashed != old_len || off < old_len) {
                stg->hashed = SFS_HASH_BROKEN;
                return;
        }
        if (off > old_len)
                r = hash_zeros(stg->hasher, off - old_len);
        if (r == 0)
                r = snap_hasher_update(stg->hasher, data, size);
        stg->hashed = r == 0 ? off + size : SFS_HASH_BROKEN;
}

/* Makes room for len bytes (zero-filled past the old end) and reserves them against the
 * byte limit. stg->lock held. */
static int staging_grow(struct sfs_tree *t, struct sfs_staging *stg, uint64_t len)
{
        int r;

        if (len > t->cfg.max_snapshot_size)
                return -EFBIG;
        if (len <= stg->len)
                return 0;
        r = stage_charge(t, stg, len - stg->len);
        if (r < 0)
                return r;
        r = snap_store_reserve(t->store, len - stg->len);
        if (r < 0) {
                sfs_stage_uncharge(stg, len - stg->len);
                return r;
        }
        if (len > stg->cap) {
                /* Doubling keeps a stream of small writes linear; the cap is the limit. */
                uint64_t ncap = stg->cap ? stg->cap : 4096;
                uint8_t *nb;
                while (ncap < len)
                        ncap *= 2;
                if (ncap > t->cfg.max_snapshot_size)
                        ncap = t->cfg.max_snapshot_size;
                nb = realloc(stg->buf, (size_t)ncap);
                if (!nb) {
                        snap_store_unreserve(t->store, len - stg->len);
                        sfs_stage_uncharge(stg, len - stg->len);
                        return -ENOMEM;
                }
                stg->buf = nb;
                stg->cap = (size_t)ncap;
        }
        memset(stg->buf + stg->len, 0, (size_t)len - stg->len);
        stg->len = (size_t)len;
        return 0;
}

void sfs_staging_truncate_locked(struct sfs_tree *t, struct sfs_staging *stg, size_t len)
{
        if (len >= stg->len)
                return;
        snap_store_unreserve(t->store, stg->len - len);
        sfs_stage_uncharge(stg, stg->len - len);
        stg->len = len;
        stg->digest_valid = false;
        if (len == 0 && snap_hasher_reset(stg->hasher) == 0)
                stg->hashed = 0;
        else
                stg->hashed = SFS_HASH_BROKEN;
}

int sfs_staging_digest(struct sfs_staging *stg, struct snap_digest *out)
{
        int r;

        if (!stg->digest_valid) {
                if (stg->hashed == stg->len)
                        r = snap_hasher_final(stg->hasher, &stg->digest);
                else
                        r = snap_sha256(stg->buf ? (const void *)stg->buf : "", stg->len,
                                        &stg->digest);
                /* The hasher is spent either way; later writes rehash from the buffer. */
                stg->hashed = SFS_HASH_BROKEN;
                if (r < 0)
                        return r;
                stg->digest_valid = true;
        }
        *out = stg->digest;
        return 0;
}

/* ---- create, open, write, truncate ---- */

int sfs_tree_create(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, int flags, struct sfs_entry *e, struct sfs_handle **h,
                    struct sfs_open_info *oi)
{
        struct sfs_uidstage *st;
        struct sfs_staging *stg = NULL;
        struct sfs_node *n = NULL;
        int r = 0;

        pthread_mutex_lock(&t->lock);
        if (node_kind(parent) == SFS_KIND_ROOT) {
                r = sfs_may_see(t, c) ? -EPERM : -EACCES;
        } else if (node_kind(parent) != SFS_KIND_STAGING_DIR) {
                r = -ENOTDIR;
        } else if (!sfs_may_publish(t, c)) {
                r = -EACCES;
        } else if (!sfs_staging_name_valid(name) || (flags & (O_APPEND | O_DIRECT))) {
                /* O_APPEND and O_DIRECT: staging writes are already direct, and an append
                 * position computed from a cached size is not one to trust. */
                r = -EINVAL;
        } else if (!(st = sfs_stage_find(t, c->uid, true))) {
                r = -ENOMEM;
        } else if (sfs_stage_lookup(st, name)) {
                r = -EEXIST;
        } else if (st->count >= t->cfg.max_staging) {
                r = -EDQUOT;
        }
        if (r < 0)
                goto refused;

        stg = calloc(1, sizeof(*stg));
        if (!stg || snap_hasher_new(&stg->hasher) < 0) {
                free(stg);
                r = -ENOMEM;
                goto refused;
        }
        pthread_mutex_init(&stg->lock, NULL);
        snprintf(stg->name, sizeof(stg->name), "%s", name);
        stg->owner = c->uid;
        stg->group = c->gid;
        stg->stage = st;
        clock_gettime(CLOCK_REALTIME, &stg->mtime);
        stg->last_active_ms = sfs_now_ms();
        n = sfs_node_new(t, SFS_KIND_STAGING_FILE, snap_store_alloc_ino(t->store));
        if (!n) {
                sfs_staging_free(t, stg);
                r = -ENOMEM;
                goto refused;
        }
        n->stg = stg;
        n->linked = true;
        stg->next_staged = st->head;
        st->head = n;
        st->count++;
        t->staging_files++;

        *h = sfs_handle_new(t, n, (flags & O_ACCMODE) != O_RDONLY);
        if (!*h) {
                sfs_stage_remove(t, n);
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
        pthread_mutex_unlock(&t->lock);
        return 0;

refused:
        pthread_mutex_unlock(&t->lock);
        if (r == -ENOTDIR || r == -ENOMEM)
                return r;
        return sfs_tree_refuse(t, c, "create", name, -r);
}

int sfs_tree_write(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_handle *h,
                   const void *buf, size_t size, off_t off)
{
        struct sfs_node *n = h->node;
        struct sfs_staging *stg;
        uint64_t end;
        size_t old_len;
        int r;

        if (!h->write)
                return -EBADF;
        if (off < 0)
                return -EINVAL;
        pthread_mutex_lock(&t->lock);
        if (node_kind(n) != SFS_KIND_STAGING_FILE) {
                pthread_mutex_unlock(&t->lock);
                return -EBADF;
        }
        stg = n->stg;
        pthread_mutex_lock(&stg->lock);
        pthread_mutex_unlock(&t->lock);

        /* A handle flushed by close() of one dup can still write through another: never
         * while a rename is hashing, or the published bytes would not be the hashed ones. */
        if (stg->publishing) {
                r = -EBUSY;
                goto out;
        }
        if (__builtin_add_overflow((uint64_t)off, size, &end)) {
                r = -EFBIG;
                goto out;
        }
        if (!h->writing) {
                h->writing = true;
                stg->writers++;
        }
        old_len = stg->len;
        r = staging_grow(t, stg, end);
        if (r < 0)
                goto out;
        memcpy(stg->buf + off, buf, size);
        hash_write(stg, old_len, (uint64_t)off, buf, size);
        clock_gettime(CLOCK_REALTIME, &stg->mtime);
        stg->last_active_ms = sfs_now_ms();
out:
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

        pthread_mutex_lock(&t->lock);
        if (node_kind(n) != SFS_KIND_STAGING_FILE) {
                /* Snapshots and directories never change: truncate, chmod, chown and
                 * utimens all get EROFS, for every uid including root. */
                bool visible = node_kind(n) == SFS_KIND_STAGING_DIR ? sfs_may_publish(t, c)
                                                                    : sfs_may_see(t, c);
                char buf[SNAP_DIGEST_HEX_LEN + 1];
                const char *label = sfs_node_label(n, buf);
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "setattr", label, visible ? EROFS : EACCES);
        }
        if (!n->linked || n->stg->owner != c->uid) {
                pthread_mutex_unlock(&t->lock);
                return -ENOENT;
        }
        if (to_set & (SFS_SET_MODE | SFS_SET_UID | SFS_SET_GID)) {
                /* A staging file stays 0200 and its owner's: nothing to hand to others. */
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "setattr", n->stg->name, EPERM);
        }
        stg = n->stg;
        pthread_mutex_lock(&stg->lock);
        if ((to_set & SFS_SET_SIZE) && stg->publishing) {
                r = -EBUSY;
        } else if (to_set & SFS_SET_SIZE) {
                if (attr->st_size < 0) {
                        r = -EINVAL;
                } else if ((uint64_t)attr->st_size < stg->len) {
                        sfs_staging_truncate_locked(t, stg, (size_t)attr->st_size);
                } else if ((uint64_t)attr->st_size > stg->len) {
                        size_t old_len = stg->len;
                        r = staging_grow(t, stg, (uint64_t)attr->st_size);
                        if (r == 0 && stg->hashed == old_len) {
                                if (hash_zeros(stg->hasher, stg->len - old_len) == 0)
                                        stg->hashed = stg->len;
                                else
                                        stg->hashed = SFS_HASH_BROKEN;
                        } else if (r == 0) {
                                stg->hashed = SFS_HASH_BROKEN;
                        }
                        stg->digest_valid = false;
                }
                if (r == 0) {
                        clock_gettime(CLOCK_REALTIME, &stg->mtime);
                        stg->last_active_ms = sfs_now_ms();
                }
        }
        /* Times are accepted and ignored: tools such as cp -p set them. */
        if (r == 0)
                sfs_staging_fill_attr(stg, st);
        pthread_mutex_unlock(&stg->lock);
        pthread_mutex_unlock(&t->lock);
        *timeout = 0;
        if (r == -EFBIG || r == -ENOSPC || r == -EBUSY || r == -EDQUOT)
                return sfs_tree_refuse(t, c, "truncate", NULL, -r);
        return r;
}

int sfs_staging_unlink(struct sfs_tree *t, const struct sfs_caller *c, const char *name)
{
        struct sfs_uidstage *st;
        struct sfs_node *n;
        int r = 0;

        pthread_mutex_lock(&t->lock);
        if (!sfs_may_publish(t, c)) {
                pthread_mutex_unlock(&t->lock);
                return sfs_tree_refuse(t, c, "unlink", name, EACCES);
        }
        st = sfs_stage_find(t, c->uid, false);
        n = st ? sfs_stage_lookup(st, name) : NULL;
        if (!n) {
                pthread_mutex_unlock(&t->lock);
                return -ENOENT;
        }
        pthread_mutex_lock(&n->stg->lock);
        if (n->stg->publishing)
                r = -EBUSY;
        pthread_mutex_unlock(&n->stg->lock);
        if (r == 0) {
                sfs_stage_remove(t, n);
                sfs_node_maybe_free(t, n);
        }
        pthread_mutex_unlock(&t->lock);
        if (r < 0)
                return sfs_tree_refuse(t, c, "unlink", name, -r);
        return 0;
}

/* ---- expiry ---- */

unsigned sfs_tree_expire_staging(struct sfs_tree *t, uint64_t now_ms)
{
        unsigned removed = 0;

        if (!t->cfg.staging_ttl_ms)
                return 0;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->nstages; i++) {
                struct sfs_node *n = t->stages[i]->head, *next;
                for (; n; n = next) {
                        struct sfs_staging *stg = n->stg;
                        bool idle;

                        next = stg->next_staged;
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
                        sfs_stage_remove(t, n);
                        sfs_node_maybe_free(t, n);
                        removed++;
                }
        }
        pthread_mutex_unlock(&t->lock);
        return removed;
}
