/* SPDX-License-Identifier: MIT */
/* The in-memory store: one hash table of indexed objects keyed by digest, one list of detached
 * objects still referenced, one mutex over both and over the counters.
 *
 * Content is hashed and copied outside the lock; the lock is held only to look up, check the
 * limits and link or unlink an object, so a 1 GiB put does not stall every reader. */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

#define BUCKETS_START_BITS 4

struct snap_store {
        pthread_mutex_t lock;
        struct snap_store_config cfg;
        struct snap_object **buckets; /* 1 << bits chains of indexed objects */
        unsigned bits;
        uint64_t hash_key;            /* secret, odd */
        struct snap_object *detached; /* detached objects not yet released */
        uint64_t bytes, reserved, objects, indexed, next_ino;
};

/* Singly linked chains with a back pointer to whatever points at the object (the kernel's
 * hlist), so that an object leaves a chain or the detached list in O(1). */
static void link_object(struct snap_object **head, struct snap_object *o)
{
        o->next_hash = *head;
        if (*head)
                (*head)->pprev_hash = &o->next_hash;
        *head = o;
        o->pprev_hash = head;
}

static void unlink_object(struct snap_object *o)
{
        *o->pprev_hash = o->next_hash;
        if (o->next_hash)
                o->next_hash->pprev_hash = o->pprev_hash;
        o->next_hash = NULL;
        o->pprev_hash = NULL;
}

/* Digests are chosen by whoever publishes: grinding contents whose digests share their low
 * bits costs one try per bucket, and would turn every lookup into a walk of one long chain
 * under the lock. Multiply-shift with a secret odd multiplier (Dietzfelbinger et al.) puts any
 * two different digest words in one bucket with chance at most 2 / buckets, whoever chose
 * them. */
static size_t bucket_of(const struct snap_store *s, const struct snap_digest *d)
{
        uint64_t x;

        memcpy(&x, d->bytes, sizeof(x));
        return (size_t)((x * s->hash_key) >> (64 - s->bits));
}

static uint64_t secret_key(const struct snap_store *s)
{
        uint64_t k = 0;

        /* GRND_NONBLOCK: never stall a daemon started before the pool is ready. The fallback
         * key is weaker but only costs speed under attack, never correctness. */
        if (getrandom(&k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                k = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)s;
                /* splitmix64 finaliser: spread those few varying bits over the whole word. */
                k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
                k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
                k ^= k >> 31;
        }
        return k | 1;
}

static struct snap_object *find(struct snap_store *s, const struct snap_digest *d)
{
        for (struct snap_object *o = s->buckets[bucket_of(s, d)]; o; o = o->next_hash)
                if (snap_digest_equal(&o->digest, d))
                        return o;
        return NULL;
}

/* Doubles the table once it holds as many objects as buckets. Failing to grow only makes
 * chains longer, so an allocation failure here is not an error. */
static void maybe_grow(struct snap_store *s)
{
        size_t n = (size_t)1 << s->bits;
        struct snap_object **nb;

        if (s->indexed <= n || s->bits >= 8 * sizeof(size_t) - 2)
                return;
        nb = calloc(2 * n, sizeof(*nb));
        if (!nb)
                return;
        s->bits++;
        for (size_t i = 0; i < n; i++) {
                struct snap_object *o = s->buckets[i];
                while (o) {
                        struct snap_object *next = o->next_hash;
                        link_object(&nb[bucket_of(s, &o->digest)], o);
                        o = next;
                }
        }
        free(s->buckets);
        s->buckets = nb;
}

int snap_store_new(const struct snap_store_config *cfg, struct snap_store **out)
{
        _cleanup_free_ struct snap_store *s = NULL;

        if (!cfg || !out || !cfg->max_object_size || !cfg->max_bytes || !cfg->max_objects)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->bits = BUCKETS_START_BITS;
        s->buckets = calloc((size_t)1 << s->bits, sizeof(*s->buckets));
        if (!s->buckets)
                return -ENOMEM;
        if (pthread_mutex_init(&s->lock, NULL) != 0) {
                free(s->buckets);
                return -ENOMEM;
        }
        s->cfg = *cfg;
        s->next_ino = cfg->first_ino ? cfg->first_ino : 1;
        s->hash_key = secret_key(s);
        *out = TAKE_PTR(s);
        return 0;
}

bool snap_name_valid(const char *name)
{
        size_t n = 0;

        if (!name || name[0] == '.')
                return false;
        for (; name[n]; n++) {
                char ch = name[n];
                if (n == SNAP_NAME_MAX)
                        return false;
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
                        return false;
        }
        return n > 0;
}

static void free_object(struct snap_object *o)
{
        free((void *)o->data);
        free(o->name);
        free(o);
}

void snap_store_free(struct snap_store *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < (size_t)1 << s->bits; i++)
                while (s->buckets[i]) {
                        struct snap_object *o = s->buckets[i];
                        unlink_object(o);
                        free_object(o);
                }
        while (s->detached) {
                struct snap_object *o = s->detached;
                unlink_object(o);
                free_object(o);
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

uint64_t snap_store_alloc_ino(struct snap_store *s)
{
        uint64_t ino;

        pthread_mutex_lock(&s->lock);
        ino = s->next_ino++;
        pthread_mutex_unlock(&s->lock);
        return ino;
}

/* Invariant kept by every caller of this check: bytes + reserved <= max_bytes. */
static int check_space(const struct snap_store *s, uint64_t len, uint64_t take_reserved)
{
        uint64_t used = s->bytes + s->reserved - take_reserved;

        if (s->objects >= s->cfg.max_objects)
                return -ENOSPC;
        if (len > s->cfg.max_bytes - used)
                return -ENOSPC;
        return 0;
}

int snap_store_reserve(struct snap_store *s, uint64_t bytes)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (bytes > s->cfg.max_bytes - s->bytes - s->reserved)
                r = -ENOSPC;
        else
                s->reserved += bytes;
        pthread_mutex_unlock(&s->lock);
        return r;
}

void snap_store_unreserve(struct snap_store *s, uint64_t bytes)
{
        pthread_mutex_lock(&s->lock);
        /* Clamped: returning more than is reserved must not wrap the counter and with it the
         * byte limit. */
        s->reserved -= bytes < s->reserved ? bytes : s->reserved;
        pthread_mutex_unlock(&s->lock);
}

/* The indexed object for d with a reference taken, or NULL. Lock held. */
static struct snap_object *take_existing(struct snap_store *s, const struct snap_digest *d)
{
        struct snap_object *o = find(s, d);

        if (o)
                o->refs++;
        return o;
}

static uint64_t reservation_taken(const struct snap_store *s, const struct snap_put *p)
{
        return p->reserved < s->reserved ? p->reserved : s->reserved;
}

int snap_store_put(struct snap_store *s, const struct snap_put *p, struct snap_object **out)
{
        _cleanup_free_ struct snap_object *o = NULL;
        _cleanup_free_ uint8_t *copy = NULL;
        _cleanup_free_ char *name = NULL;
        struct snap_object *found;
        struct snap_digest d;
        int r = 0;

        if (!s || !p || !out || (p->len && !p->data) || (p->owned && p->owned != p->data))
                return -EINVAL;
        if (p->len > s->cfg.max_object_size)
                return -EFBIG;
        if (p->digest)
                d = *p->digest;
        else {
                r = snap_sha256(p->data, p->len, &d);
                if (r < 0)
                        return r;
        }

        /* First look, before copying anything: the common case of content published again
         * costs one lookup, and a store that is full refuses without a useless copy. */
        pthread_mutex_lock(&s->lock);
        found = take_existing(s, &d);
        if (!found)
                r = check_space(s, p->len, reservation_taken(s, p));
        pthread_mutex_unlock(&s->lock);
        if (found) {
                *out = found;
                return 1;
        }
        if (r < 0)
                return r;

        o = calloc(1, sizeof(*o));
        if (!o || (p->name && !(name = strdup(p->name))))
                return -ENOMEM;
        if (!p->owned) {
                copy = malloc(p->len ? p->len : 1); /* data is never NULL, even when empty */
                if (!copy)
                        return -ENOMEM;
                if (p->len)
                        memcpy(copy, p->data, p->len);
        }
        /* Every field is set before the object is linked: a lookup in another thread may
         * return it the moment the lock is dropped. */
        o->data = p->owned ? p->owned : copy;
        o->digest = d;
        o->size = p->len;
        o->publisher_uid = p->publisher_uid;
        o->name = name;
        clock_gettime(CLOCK_REALTIME, &o->created);
        o->refs = 1;
        o->indexed = true;

        /* Second look: another thread may have stored the same content, or used up the space,
         * while this one copied. */
        pthread_mutex_lock(&s->lock);
        found = take_existing(s, &d);
        if (!found)
                r = check_space(s, p->len, reservation_taken(s, p));
        if (!found && r == 0) {
                uint64_t take = reservation_taken(s, p);

                if (p->ino) {
                        o->ino = p->ino;
                        /* Keep "never reused" even for a number that did not come from
                         * snap_store_alloc_ino(). */
                        if (p->ino >= s->next_ino)
                                s->next_ino = p->ino + 1;
                } else
                        o->ino = s->next_ino++;
                s->reserved -= take;
                s->bytes += p->len;
                s->objects++;
                s->indexed++;
                link_object(&s->buckets[bucket_of(s, &d)], o);
                maybe_grow(s);
        }
        pthread_mutex_unlock(&s->lock);
        if (found) {
                *out = found;
                return 1; /* o and copy are freed; p->owned stays the caller's */
        }
        if (r < 0)
                return r;

        copy = NULL; /* it is o->data now: the object's */
        name = NULL;
        *out = TAKE_PTR(o);
        return 0;
}

int snap_store_put_bytes(struct snap_store *s, const void *data, size_t len,
                         struct snap_object **out)
{
        const struct snap_put p = { .data = data, .len = len };
        return snap_store_put(s, &p, out);
}

struct snap_object *snap_store_lookup(struct snap_store *s, const struct snap_digest *d)
{
        struct snap_object *o;

        pthread_mutex_lock(&s->lock);
        o = take_existing(s, d);
        pthread_mutex_unlock(&s->lock);
        return o;
}

void snap_store_ref(struct snap_store *s, struct snap_object *o)
{
        pthread_mutex_lock(&s->lock);
        o->refs++;
        pthread_mutex_unlock(&s->lock);
}

void snap_store_release(struct snap_store *s, struct snap_object *o)
{
        bool last = false;

        if (!o)
                return;
        pthread_mutex_lock(&s->lock);
        /* refs == 0 here would be a caller's double release: leave the object alone rather
         * than free it twice. */
        if (o->refs > 0 && --o->refs == 0) {
                unlink_object(o);
                if (o->indexed)
                        s->indexed--;
                s->bytes -= o->size;
                s->objects--;
                last = true;
        }
        pthread_mutex_unlock(&s->lock);
        if (last)
                free_object(o);
}

int snap_store_detach(struct snap_store *s, struct snap_object *o)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (!o->indexed)
                r = -ENOENT;
        else {
                unlink_object(o);
                o->indexed = false;
                s->indexed--;
                link_object(&s->detached, o);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int snap_store_foreach(struct snap_store *s, int (*fn)(const struct snap_object *o, void *ctx),
                       void *ctx)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; r == 0 && i < (size_t)1 << s->bits; i++)
                for (struct snap_object *o = s->buckets[i]; r == 0 && o; o = o->next_hash)
                        r = fn(o, ctx);
        pthread_mutex_unlock(&s->lock);
        return r;
}

void snap_store_get_stats(struct snap_store *s, struct snap_store_stats *st)
{
        pthread_mutex_lock(&s->lock);
        st->bytes = s->bytes;
        st->reserved = s->reserved;
        st->objects = s->objects;
        st->indexed = s->indexed;
        st->next_ino = s->next_ino;
        pthread_mutex_unlock(&s->lock);
}
