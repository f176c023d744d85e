/* SPDX-License-Identifier: MIT */
/* Staging content: a growing buffer, its running hash, and the bytes it holds charged to the
 * tree's budget and to its owner. The bytes are hashed as they arrive, so publishing normally
 * needs no second pass over them. */
#include "fs/tree/staging.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

uint64_t sfs_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool sfs_staging_name_valid(const char *name)
{
        /* The snapshot keeps its staging NAME: one rule for both. */
        return snap_name_valid(name);
}

bool sfs_staging_name_kept(const char *name)
{
        return sfs_staging_name_valid(name) && name[0] != '_';
}

int sfs_staging_new(const char *name, uid_t owner, gid_t group,
                    const struct sfs_staging_budget *budget, uint64_t *uid_bytes,
                    struct sfs_staging **out)
{
        struct sfs_staging *stg = calloc(1, sizeof(*stg));

        if (!stg || snap_hasher_new(&stg->hasher) < 0) {
                free(stg);
                return -ENOMEM;
        }
        pthread_mutex_init(&stg->lock, NULL);
        snprintf(stg->name, sizeof(stg->name), "%s", name);
        stg->owner = owner;
        stg->group = group;
        stg->budget = budget;
        stg->uid_bytes = uid_bytes;
        clock_gettime(CLOCK_REALTIME, &stg->mtime);
        stg->last_active_ms = sfs_now_ms();
        *out = stg;
        return 0;
}

/* ---- quota ---- */

/* Charges delta bytes to the owner: -EDQUOT past max_uid_bytes. */
static int uid_charge(struct sfs_staging *stg, uint64_t delta)
{
        uint64_t cur = __atomic_load_n(stg->uid_bytes, __ATOMIC_RELAXED);

        do {
                if (cur + delta > stg->budget->max_uid_bytes || cur + delta < cur)
                        return -EDQUOT;
        } while (!__atomic_compare_exchange_n(stg->uid_bytes, &cur, cur + delta, true,
                                              __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        return 0;
}

static void uid_uncharge(struct sfs_staging *stg, uint64_t delta)
{
        __atomic_sub_fetch(stg->uid_bytes, delta, __ATOMIC_RELAXED);
}

/* Gives n staged bytes back to the tree and to the owner. */
static void give_back(struct sfs_staging *stg, uint64_t n)
{
        snap_store_unreserve_kept(stg->budget->store, stg->budget->keep, n);
        uid_uncharge(stg, n);
}

void sfs_staging_drop_content(struct sfs_staging *stg)
{
        pthread_mutex_lock(&stg->lock);
        give_back(stg, stg->len);
        free_zeroed(stg->buf, stg->cap);
        stg->buf = NULL;
        stg->len = stg->cap = 0;
        stg->hashed = SFS_HASH_BROKEN;
        stg->digest_valid = false;
        pthread_mutex_unlock(&stg->lock);
}

void sfs_staging_free(struct sfs_staging *stg)
{
        if (!stg)
                return;
        give_back(stg, stg->len);
        free_zeroed(stg->buf, stg->cap);
        snap_hasher_free(stg->hasher);
        pthread_mutex_destroy(&stg->lock);
        free(stg);
}

void sfs_staging_handed_over_locked(struct sfs_staging *stg)
{
        assert(mutex_held(&stg->lock));
        uid_uncharge(stg, stg->len);
        /* Staged no more: what the scope now holds is counted by its grant. */
        snap_store_keep_use(stg->budget->store, stg->budget->keep, false, stg->len);
        stg->buf = NULL;
        stg->len = stg->cap = 0;
}

/* ---- content ---- */

void sfs_staging_fill_attr(const struct sfs_staging *stg, struct stat *st)
{
        assert(mutex_held(&stg->lock));
        /* 0200: the owner writes it; nobody reads it back through mode bits. */
        st->st_mode = S_IFREG | 0200;
        st->st_nlink = 1;
        st->st_uid = stg->owner;
        st->st_gid = stg->group;
        st->st_size = (off_t)stg->len;
        st->st_blocks = (blkcnt_t)((stg->len + 511) / 512);
        st->st_atim = st->st_mtim = st->st_ctim = stg->mtime;
}

void sfs_staging_touch_locked(struct sfs_staging *stg)
{
        assert(mutex_held(&stg->lock));
        stg->last_active_ms = sfs_now_ms();
}

static void changed(struct sfs_staging *stg)
{
        clock_gettime(CLOCK_REALTIME, &stg->mtime);
        stg->last_active_ms = sfs_now_ms();
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
 * byte limits. */
static int grow(struct sfs_staging *stg, uint64_t len)
{
        const struct sfs_staging_budget *b = stg->budget;
        int r;

        if (len > b->max_size)
                return -EFBIG;
        if (len <= stg->len)
                return 0;
        r = uid_charge(stg, len - stg->len);
        if (r < 0)
                return r;
        r = snap_store_reserve_kept(b->store, (uint32_t)stg->owner, b->keep, len - stg->len);
        if (r < 0) {
                uid_uncharge(stg, len - stg->len);
                return r;
        }
        if (len > stg->cap) {
                /* Doubling keeps a stream of small writes linear; the cap is the limit. */
                uint64_t ncap = stg->cap ? stg->cap : 4096;
                uint8_t *nb;
                while (ncap < len)
                        ncap *= 2;
                if (ncap > b->max_size)
                        ncap = b->max_size;
                /* Zeroing: a staging file's bytes may be a scope's secret. */
                nb = realloc_zeroed(stg->buf, stg->len, stg->cap, (size_t)ncap);
                if (!nb) {
                        give_back(stg, len - stg->len);
                        return -ENOMEM;
                }
                stg->buf = nb;
                stg->cap = (size_t)ncap;
        }
        memset(stg->buf + stg->len, 0, (size_t)len - stg->len);
        stg->len = (size_t)len;
        return 0;
}

static void truncate_to(struct sfs_staging *stg, size_t len)
{
        if (len >= stg->len)
                return;
        give_back(stg, stg->len - len);
        stg->len = len;
        stg->digest_valid = false;
        if (len == 0 && snap_hasher_reset(stg->hasher) == 0)
                stg->hashed = 0;
        else
                stg->hashed = SFS_HASH_BROKEN;
}

int sfs_staging_write_locked(struct sfs_staging *stg, const void *buf, size_t size,
                             uint64_t off)
{
        assert(mutex_held(&stg->lock));
        size_t old_len = stg->len;
        uint64_t end;
        int r;

        if (__builtin_add_overflow(off, size, &end))
                return -EFBIG;
        r = grow(stg, end);
        if (r < 0)
                return r;
        memcpy(stg->buf + off, buf, size);
        hash_write(stg, old_len, off, buf, size);
        changed(stg);
        return 0;
}

int sfs_staging_resize_locked(struct sfs_staging *stg, uint64_t len)
{
        assert(mutex_held(&stg->lock));
        int r = 0;

        if (len < stg->len) {
                truncate_to(stg, (size_t)len);
        } else if (len > stg->len) {
                size_t old_len = stg->len;
                r = grow(stg, len);
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
        if (r == 0)
                changed(stg);
        return r;
}

int sfs_staging_read_locked(const struct sfs_staging *stg, size_t size, uint64_t off,
                            int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        assert(mutex_held(&stg->lock));
        if (off >= stg->len)
                return reply(ctx, "", 0);
        return reply(ctx, stg->buf + off,
                     size < stg->len - (size_t)off ? size : stg->len - (size_t)off);
}

int sfs_staging_digest(struct sfs_staging *stg, struct snap_digest *out)
{
        assert(mutex_held(&stg->lock));
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

void sfs_staging_fit_locked(struct sfs_staging *stg)
{
        assert(mutex_held(&stg->lock));
        uint8_t *buf = stg->buf;

        if (buf && stg->len == 0) {
                free_zeroed(buf, stg->cap);
                buf = NULL;
        } else if (buf && stg->len < stg->cap) {
                uint8_t *shrunk = realloc_zeroed(buf, stg->len, stg->cap, stg->len);
                if (shrunk)
                        buf = shrunk;
        }
        stg->buf = buf;
        stg->cap = stg->len;
}

void sfs_staging_note_refusal_locked(struct sfs_staging *stg, int err)
{
        uint64_t kept;

        /* The client of the file's owner reads this after its request failed (the file is
         * invisible to every other uid), so it can say which limit refused it and the option
         * that changes it: the errno alone does not. */
        if (err == -EFBIG)
                snprintf(stg->refusal, sizeof(stg->refusal), "too-big max-snapshot-size=%llu",
                         (unsigned long long)stg->budget->max_size);
        else if (err == -EDQUOT)
                snprintf(stg->refusal, sizeof(stg->refusal),
                         "staging-bytes max-staging-bytes=%llu",
                         (unsigned long long)stg->budget->max_uid_bytes);
        else if (err == -ENOSPC && (kept = snap_store_kept_from(stg->budget->store,
                                                                stg->budget->keep)) > 0)
                /* Not full: the rest is kept for other scopes' minimums. */
                snprintf(stg->refusal, sizeof(stg->refusal), "reserved kept=%llu",
                         (unsigned long long)kept);
        else if (err == -ENOSPC)
                snprintf(stg->refusal, sizeof(stg->refusal), "full");
}

void sfs_staging_set_refusal_locked(struct sfs_staging *stg, const char *reason)
{
        snprintf(stg->refusal, sizeof(stg->refusal), "%s", reason);
}
