/* SPDX-License-Identifier: MIT */
/* The in-memory store: one hash table of indexed objects keyed by digest, one list of detached
 * objects still referenced, one mutex over both and over the counters. What callers see of an
 * object (struct snap_object) is the first member of the store's own struct object; its
 * references, holders, grants and links stay here.
 *
 * Content is hashed and copied outside the lock; the lock is held only to look up, check the
 * limits and link or unlink an object, so a 1 GiB put does not stall every reader. */
#include "snapshot/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/array.h"
#include "common/util.h"

#define BUCKETS_START_BITS 4

struct object {
        struct snap_object pub;   /* what callers see; first, so &o->pub converts back */
        struct object *next_hash;
        struct object **pprev_hash; /* the pointer that points here: O(1) unlinking */
        uint32_t *holders;        /* n_holders uids, in the order they took their holds */
        uint32_t n_holders, cap_holders;
        uint32_t holder_inline;   /* holders' storage while there is one */
        uint32_t grants;          /* scopes it is granted to */
        uint32_t refs;
        bool indexed;
        bool adopted;             /* pub.data is cfg.adopt's copy, not the store's to free */
};

static struct object *obj_of(struct snap_object *o)
{
        return (struct object *)(void *)o; /* pub is the first member */
}

/* One claimant's guaranteed minimum: in the store's list, changed under its lock. */
struct snap_keep {
        uint64_t min_bytes;
        uint64_t used;          /* what the claimant counts as its use */
        struct snap_keep *next;
};

struct snap_store {
        pthread_mutex_t lock;
        struct snap_store_config cfg;
        struct object **buckets;      /* 1 << bits chains of indexed objects */
        unsigned bits;
        uint64_t hash_key;            /* secret, odd */
        struct object *detached;      /* detached objects not yet released */
        uint64_t bytes, reserved, objects, indexed, next_ino, seq;
        /* Claimants' guaranteed minimums (snap_store_keep_new): their sum, and the part of
         * each not used yet, summed, which is kept from everybody else. */
        struct snap_keep *keeps;
        uint64_t minimums, kept;
        /* Indexed objects by increasing inode number, for listings that resume by number.
         * Insertion is by binary search and memmove: a few µs for thousands of objects,
         * against the hashing and copying every publish already costs. */
        struct object **by_ino;
        size_t n_by_ino, cap_by_ino;
        /* What each uid's objects hold; few uids, so a plain array. */
        struct snap_store_usage *usage;
        size_t n_usage, cap_usage;
};

/* ---- the inode-ordered index ---- */

static int ino_cmp(const void *key, const void *element)
{
        uint64_t k = *(const uint64_t *)key, at = (*(struct object *const *)element)->pub.ino;

        return (k > at) - (k < at);
}

/* Index of the first object whose inode number is at least ino. Lock held. */
static size_t by_ino_lower(const struct snap_store *s, uint64_t ino)
{
        return lower_bound(&ino, s->by_ino, s->n_by_ino, sizeof(*s->by_ino), ino_cmp);
}

/* Room for one more entry in both arrays, so linking a new object cannot fail half way.
 * Lock held. */
static int make_room(struct snap_store *s)
{
        if (ARRAY_GROW(s->by_ino, s->cap_by_ino, s->n_by_ino + 1, 64) < 0 ||
            ARRAY_GROW(s->usage, s->cap_usage, s->n_usage + 1, 8) < 0)
                return -ENOMEM;
        return 0;
}

static void by_ino_insert(struct snap_store *s, struct object *o)
{
        size_t i = by_ino_lower(s, o->pub.ino);

        memmove(&s->by_ino[i + 1], &s->by_ino[i], (s->n_by_ino - i) * sizeof(s->by_ino[0]));
        s->by_ino[i] = o;
        s->n_by_ino++;
}

static void by_ino_remove(struct snap_store *s, struct object *o)
{
        size_t i = by_ino_lower(s, o->pub.ino);

        if (i == s->n_by_ino || s->by_ino[i] != o)
                return;
        memmove(&s->by_ino[i], &s->by_ino[i + 1], (s->n_by_ino - i - 1) * sizeof(s->by_ino[0]));
        s->n_by_ino--;
}

/* ---- per-uid usage ---- */

static struct snap_store_usage *usage_of(struct snap_store *s, uint32_t uid)
{
        for (size_t i = 0; i < s->n_usage; i++)
                if (s->usage[i].uid == uid)
                        return &s->usage[i];
        return NULL;
}

/* make_room() ran first: adding an entry cannot fail. */
static void charge(struct snap_store *s, uint32_t uid, uint64_t bytes)
{
        struct snap_store_usage *u = usage_of(s, uid);

        if (!u) {
                u = &s->usage[s->n_usage++];
                *u = (struct snap_store_usage){ .uid = uid };
        }
        u->objects++;
        u->bytes += bytes;
}

static void uncharge(struct snap_store *s, uint32_t uid, uint64_t bytes)
{
        struct snap_store_usage *u = usage_of(s, uid);

        if (!u)
                return;
        u->objects -= u->objects ? 1 : 0;
        u->bytes -= bytes < u->bytes ? bytes : u->bytes;
        if (!u->objects)
                *u = s->usage[--s->n_usage];
}

/* Singly linked chains with a back pointer to whatever points at the object (the kernel's
 * hlist), so that an object leaves a chain or the detached list in O(1). */
static void link_object(struct object **head, struct object *o)
{
        o->next_hash = *head;
        if (*head)
                (*head)->pprev_hash = &o->next_hash;
        *head = o;
        o->pprev_hash = head;
}

static void unlink_object(struct object *o)
{
        *o->pprev_hash = o->next_hash;
        if (o->next_hash)
                o->next_hash->pprev_hash = o->pprev_hash;
        o->next_hash = NULL;
        o->pprev_hash = NULL;
}

/* Takes o out of the index onto the detached list. Lock held, o indexed. */
static void detach_locked(struct snap_store *s, struct object *o)
{
        unlink_object(o);
        by_ino_remove(s, o);
        o->indexed = false;
        s->indexed--;
        link_object(&s->detached, o);
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

static struct object *find(struct snap_store *s, const struct snap_digest *d)
{
        for (struct object *o = s->buckets[bucket_of(s, d)]; o; o = o->next_hash)
                if (snap_digest_equal(&o->pub.digest, d))
                        return o;
        return NULL;
}

/* Doubles the table once it holds as many objects as buckets. Failing to grow only makes
 * chains longer, so an allocation failure here is not an error. */
static void maybe_grow(struct snap_store *s)
{
        size_t n = (size_t)1 << s->bits;
        struct object **nb;

        if (s->indexed <= n || s->bits >= 8 * sizeof(size_t) - 2)
                return;
        nb = calloc(2 * n, sizeof(*nb));
        if (!nb)
                return;
        s->bits++;
        for (size_t i = 0; i < n; i++) {
                struct object *o = s->buckets[i];
                while (o) {
                        struct object *next = o->next_hash;
                        link_object(&nb[bucket_of(s, &o->pub.digest)], o);
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

static void free_object(struct object *o)
{
        if (o->holders != &o->holder_inline)
                free(o->holders);
        /* Zeroed before it is freed: collected content (a scope's secret) must not stay
         * readable in a freed heap chunk of the daemon. An adopted copy is the hook's: its
         * memory file goes with its last descriptor and mapping (freed pages are cleared by
         * the kernel before anyone gets them again). */
        if (!o->adopted)
                free_zeroed((void *)o->pub.data, o->pub.size);
        free(o->pub.name);
        free(o);
}

void snap_store_free(struct snap_store *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < (size_t)1 << s->bits; i++)
                while (s->buckets[i]) {
                        struct object *o = s->buckets[i];
                        unlink_object(o);
                        if (s->cfg.freed)
                                s->cfg.freed(&o->pub);
                        free_object(o);
                }
        while (s->detached) {
                struct object *o = s->detached;
                unlink_object(o);
                if (s->cfg.freed)
                        s->cfg.freed(&o->pub);
                free_object(o);
        }
        free(s->buckets);
        free(s->by_ino);
        free(s->usage);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

uint64_t snap_store_alloc_ino(struct snap_store *s)
{
        uint64_t ino;

        pthread_mutex_lock(&s->lock);
        ino = s->next_ino++;
        if (s->cfg.ino_noted)
                s->cfg.ino_noted(s->cfg.ino_ctx, NULL, ino);
        pthread_mutex_unlock(&s->lock);
        return ino;
}

void snap_store_skip_inos(struct snap_store *s, uint64_t next)
{
        pthread_mutex_lock(&s->lock);
        if (next > s->next_ino)
                s->next_ino = next;
        pthread_mutex_unlock(&s->lock);
}

/* The part of k's minimum it does not use yet. */
static uint64_t unused(const struct snap_keep *k)
{
        return k && k->used < k->min_bytes ? k->min_bytes - k->used : 0;
}

/* Room left below max_bytes for a claimant: the privileged uid may use it all, anyone else
 * not the reserve, nor what is kept for the minimums of claimants other than own (a scope's
 * own unused minimum is its to use; NULL: a claimant with none). The attack: a tenant
 * publishing through its scope, within its own limit, until another scope's first publish
 * got ENOSPC. Invariant kept by every caller: bytes + reserved <= max_bytes. */
static uint64_t room_for(const struct snap_store *s, bool privileged, uint64_t take_reserved,
                         const struct snap_keep *own)
{
        uint64_t free_bytes = s->cfg.max_bytes - (s->bytes + s->reserved - take_reserved);
        uint64_t keep = privileged ? 0 : s->cfg.reserve_bytes + s->kept - unused(own);

        return free_bytes > keep ? free_bytes - keep : 0;
}

/* uid's own limits, for one more object of len bytes: -EDQUOT past them. The privileged uid
 * has none. A uid can hold more than its limits allow (holds restored after the limits were
 * lowered): the subtraction must not wrap. */
static int check_quota(const struct snap_store *s, uint64_t len, uint32_t uid)
{
        const struct snap_store_usage *u;
        uint64_t objects, bytes, max = s->cfg.max_uid_bytes;

        if (uid == s->cfg.privileged_uid)
                return 0;
        u = usage_of((struct snap_store *)s, uid);
        objects = u ? u->objects : 0;
        bytes = u ? u->bytes : 0;
        if (s->cfg.max_uid_objects && objects >= s->cfg.max_uid_objects)
                return -EDQUOT;
        if (max && (bytes > max || len > max - bytes))
                return -EDQUOT;
        return 0;
}

/* The global limits (-ENOSPC), less the reserve kept for the privileged uid unless privileged,
 * and what is kept for minimums other than own. */
static int check_global(const struct snap_store *s, uint64_t len, uint64_t take_reserved,
                        bool privileged, const struct snap_keep *own)
{
        uint64_t keep = privileged ? 0 : s->cfg.reserve_objects;

        if (s->objects + keep >= s->cfg.max_objects || s->objects >= s->cfg.max_objects)
                return -ENOSPC;
        if (len > room_for(s, privileged, take_reserved, own))
                return -ENOSPC;
        return 0;
}

/* A uid's own limits first (-EDQUOT: the answer that names what that uid can do about it),
 * unless unlimited, then the global ones (-ENOSPC), the reserve kept for the privileged uid. */
static int check_space(const struct snap_store *s, uint64_t len, uint64_t take_reserved,
                       uint32_t uid, bool unlimited)
{
        int r;

        if (!unlimited && (r = check_quota(s, len, uid)) < 0)
                return r;
        return check_global(s, len, take_reserved, uid == s->cfg.privileged_uid, NULL);
}

/* k's use grows (add) or shrinks by bytes, and what is kept for it with it. Lock held. */
static void keep_use(struct snap_store *s, struct snap_keep *k, bool add, uint64_t bytes)
{
        if (!k)
                return;
        s->kept -= unused(k);
        if (add)
                k->used += bytes;
        else
                k->used -= bytes < k->used ? bytes : k->used;
        s->kept += unused(k);
}

int snap_store_reserve_kept(struct snap_store *s, uint32_t uid, struct snap_keep *k,
                            uint64_t bytes)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (bytes > room_for(s, uid == s->cfg.privileged_uid, 0, k)) {
                r = -ENOSPC;
        } else {
                s->reserved += bytes;
                keep_use(s, k, true, bytes);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int snap_store_reserve_as(struct snap_store *s, uint32_t uid, uint64_t bytes)
{
        return snap_store_reserve_kept(s, uid, NULL, bytes);
}

int snap_store_reserve(struct snap_store *s, uint64_t bytes)
{
        return snap_store_reserve_as(s, s->cfg.privileged_uid, bytes);
}

void snap_store_unreserve_kept(struct snap_store *s, struct snap_keep *k, uint64_t bytes)
{
        pthread_mutex_lock(&s->lock);
        /* Clamped: returning more than is reserved must not wrap the counter and with it the
         * byte limit. */
        s->reserved -= bytes < s->reserved ? bytes : s->reserved;
        keep_use(s, k, false, bytes);
        pthread_mutex_unlock(&s->lock);
}

void snap_store_unreserve(struct snap_store *s, uint64_t bytes)
{
        snap_store_unreserve_kept(s, NULL, bytes);
}

int snap_store_keep_new(struct snap_store *s, uint64_t min_bytes, bool restored,
                        struct snap_keep **out)
{
        struct snap_keep *k;
        int r = 0;

        *out = NULL;
        if (!min_bytes)
                return 0;
        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->min_bytes = min_bytes;
        pthread_mutex_lock(&s->lock);
        /* A minimum restored at a start was guaranteed when it was made: kept again as it
         * was, even where what is held now leaves less free. */
        if (!restored && (s->minimums + s->cfg.reserve_bytes > s->cfg.max_bytes ||
                          min_bytes > s->cfg.max_bytes - s->minimums - s->cfg.reserve_bytes ||
                          min_bytes > room_for(s, false, 0, NULL)))
                r = -ENOSPC;
        if (r == 0) {
                k->next = s->keeps;
                s->keeps = k;
                s->minimums += min_bytes;
                s->kept += unused(k);
        }
        pthread_mutex_unlock(&s->lock);
        if (r == 0)
                *out = k;
        else
                free(k);
        return r;
}

void snap_store_keep_end(struct snap_store *s, struct snap_keep *k)
{
        if (!k)
                return;
        pthread_mutex_lock(&s->lock);
        s->kept -= unused(k);
        s->minimums -= k->min_bytes;
        k->min_bytes = 0;
        pthread_mutex_unlock(&s->lock);
}

void snap_store_keep_free(struct snap_store *s, struct snap_keep *k)
{
        if (!k)
                return;
        pthread_mutex_lock(&s->lock);
        for (struct snap_keep **pp = &s->keeps; *pp; pp = &(*pp)->next)
                if (*pp == k) {
                        *pp = k->next;
                        s->minimums -= k->min_bytes;
                        s->kept -= unused(k);
                        break;
                }
        pthread_mutex_unlock(&s->lock);
        free(k);
}

void snap_store_keep_use(struct snap_store *s, struct snap_keep *k, bool add, uint64_t bytes)
{
        if (!k)
                return;
        pthread_mutex_lock(&s->lock);
        keep_use(s, k, add, bytes);
        pthread_mutex_unlock(&s->lock);
}

uint64_t snap_store_kept_from(struct snap_store *s, const struct snap_keep *own)
{
        uint64_t kept;

        pthread_mutex_lock(&s->lock);
        kept = s->kept - unused(own);
        pthread_mutex_unlock(&s->lock);
        return kept;
}

/* The indexed object for d with a reference taken, or NULL. Lock held. */
static struct object *take_existing(struct snap_store *s, const struct snap_digest *d)
{
        struct object *o = find(s, d);

        if (o)
                o->refs++;
        return o;
}

static uint64_t reservation_taken(const struct snap_store *s, uint64_t reserved)
{
        return reserved < s->reserved ? reserved : s->reserved;
}

/* The limits a put must pass: none for a claim, which passed them when it was made; only the
 * global ones for an object nobody holds. */
static int put_space(const struct snap_store *s, const struct snap_put *p)
{
        uint64_t take = reservation_taken(s, p->reserved);

        if (p->claim)
                return 0;
        if (p->unheld)
                return check_global(s, p->len, take, false, NULL);
        return check_space(s, p->len, take, p->publisher_uid, p->unlimited);
}

/* The holders a new object starts with: p's, its publisher alone, or none (p->unheld). 0,
 * -EINVAL (too many, or a uid twice), -ENOMEM. */
static int set_holders(struct object *o, const struct snap_put *p)
{
        o->holders = &o->holder_inline;
        if (p->unheld) {
                o->n_holders = 0;
                o->cap_holders = 1;
                return 0;
        }
        if (!p->holders || p->n_holders == 0) {
                o->holders[0] = p->publisher_uid;
                o->n_holders = o->cap_holders = 1;
                return 0;
        }
        /* SNAP_HOLDERS_MAX and the privileged uid, which has no such limit. */
        if (p->n_holders > SNAP_HOLDERS_MAX + 1)
                return -EINVAL;
        for (size_t i = 0; i < p->n_holders; i++)
                for (size_t j = 0; j < i; j++)
                        if (p->holders[i] == p->holders[j])
                                return -EINVAL;
        if (p->n_holders > 1) {
                o->holders = malloc(p->n_holders * sizeof(*o->holders));
                if (!o->holders)
                        return -ENOMEM;
        }
        memcpy(o->holders, p->holders, p->n_holders * sizeof(*o->holders));
        o->n_holders = o->cap_holders = (uint32_t)p->n_holders;
        return 0;
}

static void charge_holders(struct snap_store *s, const struct object *o)
{
        for (uint32_t i = 0; i < o->n_holders; i++)
                charge(s, o->holders[i], o->pub.size);
}

static void uncharge_holders(struct snap_store *s, const struct object *o)
{
        for (uint32_t i = 0; i < o->n_holders; i++)
                uncharge(s, o->holders[i], o->pub.size);
}

/* Room in the usage table for every holder of o besides the one entry make_room keeps, so
 * charging them cannot fail half way. Lock held. */
static int make_room_for_holders(struct snap_store *s, size_t n)
{
        if (s->n_usage + n > s->cap_usage) {
                size_t cap = s->n_usage + n + 8;
                struct snap_store_usage *u = realloc(s->usage, cap * sizeof(*u));
                if (!u)
                        return -ENOMEM;
                s->usage = u;
                s->cap_usage = cap;
        }
        return 0;
}

/* A claim of len bytes, charged to uid unless unheld. */
static int claim(struct snap_store *s, uint32_t uid, bool unheld, const struct snap_keep *k,
                 uint64_t len, uint64_t reserved, struct snap_claim *c)
{
        uint64_t take;
        int r;

        *c = (struct snap_claim){ 0 };
        if (len > s->cfg.max_object_size)
                return -EFBIG;
        pthread_mutex_lock(&s->lock);
        take = reservation_taken(s, reserved);
        r = unheld ? check_global(s, len, take, false, k) : check_space(s, len, take, uid, false);
        if (r == 0)
                r = make_room(s);
        if (r == 0) {
                s->reserved -= take;
                s->bytes += len;
                s->objects++;
                if (!unheld)
                        charge(s, uid, len);
                *c = (struct snap_claim){ .uid = uid, .len = len, .reserved = take,
                                          .held = true, .unheld = unheld };
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int snap_store_claim(struct snap_store *s, uint32_t uid, uint64_t len, uint64_t reserved,
                     struct snap_claim *c)
{
        return claim(s, uid, false, NULL, len, reserved, c);
}

int snap_store_claim_unheld(struct snap_store *s, uint64_t len, uint64_t reserved,
                            struct snap_claim *c)
{
        return claim(s, 0, true, NULL, len, reserved, c);
}

int snap_store_claim_kept(struct snap_store *s, const struct snap_keep *k, uint64_t len,
                          uint64_t reserved, struct snap_claim *c)
{
        return claim(s, 0, true, k, len, reserved, c);
}

void snap_store_unclaim(struct snap_store *s, struct snap_claim *c)
{
        if (!c || !c->held)
                return;
        pthread_mutex_lock(&s->lock);
        s->bytes -= c->len;
        s->objects--;
        /* The staged bytes are still there: their reservation goes back to them. */
        s->reserved += c->reserved;
        if (!c->unheld)
                uncharge(s, c->uid, c->len);
        c->held = false;
        pthread_mutex_unlock(&s->lock);
}

/* Whether p's claim is one for p: held, for its length, and for its publisher (or for an
 * object nobody holds when p is one). */
static bool claim_fits(const struct snap_put *p)
{
        const struct snap_claim *c = p->claim;

        if (!c)
                return true;
        if (!c->held || c->len != p->len || c->unheld != p->unheld)
                return false;
        return c->unheld || c->uid == p->publisher_uid;
}

/* Offers o's content to cfg.adopt before o is linked: from then on o->pub.data may be the
 * hook's copy. */
static void adopt(struct snap_store *s, struct object *o)
{
        const uint8_t *copy;

        if (!s->cfg.adopt || !o->pub.size)
                return;
        copy = s->cfg.adopt(&o->pub);
        if (copy) {
                o->pub.data = copy;
                o->adopted = true;
        }
}

/* A put that stores nothing gives the hook's copy back: data is the store's or the caller's
 * again. */
static void unadopt(struct snap_store *s, struct object *o, const uint8_t *data)
{
        if (!o->adopted)
                return;
        if (s->cfg.freed)
                s->cfg.freed(&o->pub);
        o->pub.data = data;
        o->adopted = false;
}

/* The digest p's content is put under (given, or hashed now), once p is checked: 0, or
 * -EINVAL (a put that contradicts itself), -EFBIG (past max_object_size). */
static int put_digest(const struct snap_store *s, const struct snap_put *p, struct snap_digest *d)
{
        if (!s || !p || (p->len && !p->data) || (p->owned && p->owned != p->data) ||
            !claim_fits(p) || (p->unheld && p->holders) || (!p->unheld && p->grants))
                return -EINVAL;
        if (p->len > s->cfg.max_object_size)
                return -EFBIG;
        if (p->digest) {
                *d = *p->digest;
                return 0;
        }
        return snap_sha256(p->data, p->len, d);
}

/* o's fields from p but its data, digest and name (the caller's copies). */
static void fill_object(struct object *o, const struct snap_put *p)
{
        o->pub.size = p->len;
        o->pub.publisher_uid = p->publisher_uid;
        if (p->created)
                o->pub.created = *p->created;
        else
                clock_gettime(CLOCK_REALTIME, &o->pub.created);
        o->grants = p->grants;
        o->refs = 1;
        o->indexed = true;
}

/* The new object o of p numbered, counted, charged and linked where lookups find it. Room
 * was made. s->lock held. */
static void insert_new(struct snap_store *s, const struct snap_put *p, struct object *o)
{
        if (p->ino) {
                o->pub.ino = p->ino;
                /* Keep "never reused" even for a number that did not come from
                 * snap_store_alloc_ino(). */
                if (p->ino >= s->next_ino)
                        s->next_ino = p->ino + 1;
        } else
                o->pub.ino = s->next_ino++;
        if (s->cfg.ino_noted)
                s->cfg.ino_noted(s->cfg.ino_ctx, &o->pub.digest, o->pub.ino);
        if (p->claim) {
                /* Counted and charged to the publisher when it was claimed. */
                p->claim->held = false;
                for (uint32_t i = 0; i < o->n_holders; i++)
                        if (o->holders[i] != p->publisher_uid)
                                charge(s, o->holders[i], o->pub.size);
        } else {
                s->reserved -= reservation_taken(s, p->reserved);
                s->bytes += p->len;
                s->objects++;
                charge_holders(s, o);
        }
        s->indexed++;
        o->pub.seq = ++s->seq;
        link_object(&s->buckets[bucket_of(s, &o->pub.digest)], o);
        by_ino_insert(s, o);
        maybe_grow(s);
}

/* A put that stores nothing: o's holders freed, its adopted copy given back (o itself and
 * the store's copy go with the caller's cleanup; data is the store's or the caller's again). */
static void put_undo(struct snap_store *s, struct object *o, const uint8_t *data)
{
        if (o->holders != &o->holder_inline)
                free(o->holders);
        unadopt(s, o, data);
}

/* Once o is stored: its heap copy (copy, or the caller's p->owned) is its data, or, when the
 * hook adopted a copy of its own, zeroed as a collected object's would be and freed, so no
 * heap chunk keeps the content. NULL: what the caller's cleanup must no longer free. */
static uint8_t *keep_or_zero(const struct object *o, const struct snap_put *p, uint8_t *copy)
{
        if (o->adopted)
                free_zeroed(p->owned ? p->owned : copy, p->len);
        return NULL;
}

int snap_store_put(struct snap_store *s, const struct snap_put *p, struct snap_object **out)
{
        _cleanup_free_ struct object *o = NULL;
        _cleanup_free_ uint8_t *copy = NULL;
        _cleanup_free_ char *name = NULL;
        struct object *found;
        struct snap_digest d;
        int r = 0;

        if (!out)
                return -EINVAL;
        r = put_digest(s, p, &d);
        if (r < 0)
                return r;

        /* First look, before copying anything: the common case of content published again
         * costs one lookup, and a store that is full refuses without a useless copy. */
        pthread_mutex_lock(&s->lock);
        found = take_existing(s, &d);
        if (!found)
                r = put_space(s, p);
        pthread_mutex_unlock(&s->lock);
        if (found) {
                *out = &found->pub;
                return 1;
        }
        if (r < 0)
                return r;

        o = calloc(1, sizeof(*o));
        if (!o || (p->name && !(name = strdup(p->name))))
                return -ENOMEM;
        r = set_holders(o, p);
        if (r < 0) {
                o->holders = NULL;
                return r;
        }
        if (!p->owned) {
                copy = malloc(p->len ? p->len : 1); /* data is never NULL, even when empty */
                if (!copy)
                        return -ENOMEM;
                if (p->len)
                        memcpy(copy, p->data, p->len);
        }
        /* Every field is set before the object is linked: a lookup in another thread may
         * return it the moment the lock is dropped. */
        o->pub.data = p->owned ? p->owned : copy;
        o->pub.digest = d;
        o->pub.name = name;
        fill_object(o, p);
        adopt(s, o);

        /* Second look: another thread may have stored the same content, or used up the space,
         * while this one copied. */
        pthread_mutex_lock(&s->lock);
        found = take_existing(s, &d);
        if (!found)
                r = put_space(s, p);
        if (!found && r == 0)
                r = make_room(s);
        if (!found && r == 0)
                r = make_room_for_holders(s, o->n_holders);
        if (!found && r == 0)
                insert_new(s, p, o);
        pthread_mutex_unlock(&s->lock);
        if (found || r < 0)
                put_undo(s, o, p->owned ? p->owned : copy);
        if (found) {
                *out = &found->pub;
                return 1; /* o and copy are freed; p->owned stays the caller's */
        }
        if (r < 0)
                return r;

        copy = keep_or_zero(o, p, copy);
        name = NULL;
        *out = &TAKE_PTR(o)->pub;
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
        struct object *o;

        pthread_mutex_lock(&s->lock);
        o = take_existing(s, d);
        pthread_mutex_unlock(&s->lock);
        return o ? &o->pub : NULL;
}

void snap_store_ref(struct snap_store *s, struct snap_object *so)
{
        pthread_mutex_lock(&s->lock);
        obj_of(so)->refs++;
        pthread_mutex_unlock(&s->lock);
}

void snap_store_release(struct snap_store *s, struct snap_object *so)
{
        struct object *o;
        bool last = false;

        if (!so)
                return;
        o = obj_of(so);
        pthread_mutex_lock(&s->lock);
        /* refs == 0 here would be a caller's double release: leave the object alone rather
         * than free it twice. */
        if (o->refs > 0 && --o->refs == 0) {
                unlink_object(o);
                if (o->indexed) {
                        by_ino_remove(s, o);
                        s->indexed--;
                }
                uncharge_holders(s, o);
                s->bytes -= o->pub.size;
                s->objects--;
                last = true;
        }
        pthread_mutex_unlock(&s->lock);
        if (last) {
                if (s->cfg.freed)
                        s->cfg.freed(&o->pub);
                free_object(o);
        }
}

/* fn(s, o) under the store's lock, for an object still in the index: what fn returns, or
 * -ENOENT for an object detached already. */
static int with_indexed(struct snap_store *s, struct snap_object *so,
                        int (*fn)(struct snap_store *, struct object *))
{
        struct object *o = obj_of(so);
        int r;

        pthread_mutex_lock(&s->lock);
        r = o->indexed ? fn(s, o) : -ENOENT;
        pthread_mutex_unlock(&s->lock);
        return r;
}

static int detach_indexed(struct snap_store *s, struct object *o)
{
        detach_locked(s, o);
        return 0;
}

int snap_store_detach(struct snap_store *s, struct snap_object *so)
{
        return with_indexed(s, so, detach_indexed);
}

/* ---- references: holds and grants ---- */

static bool holds(const struct object *o, uint32_t uid)
{
        for (uint32_t i = 0; i < o->n_holders; i++)
                if (o->holders[i] == uid)
                        return true;
        return false;
}

/* The one decision of whether an object is still referenced once the references in d are
 * gone: a hold of another uid, or a grant, left. Every caller that drops a reference (an
 * unlink, a dropped hold, a revoked grant, a scope deleted, a start collecting what no
 * reference came back for) asks here. Lock held. */
static bool referenced_without(const struct object *o, const struct snap_drop *d)
{
        if (o->grants > d->grants)
                return true;
        if (!d->hold)
                return o->n_holders > 0;
        if (d->uid == SNAP_HOLDER_ALL)
                return false;
        for (uint32_t i = 0; i < o->n_holders; i++)
                if (o->holders[i] != d->uid)
                        return true;
        return false;
}

/* Lock held. */
static int hold_check_locked(const struct snap_store *s, const struct object *o, uint32_t uid)
{
        if (!o->indexed)
                return -ENOENT;
        if (holds(o, uid))
                return 1;
        if (uid == s->cfg.privileged_uid)
                return 0;
        /* Every holder but the privileged uid counts: an object it holds has room for it. */
        if (o->n_holders - (holds(o, s->cfg.privileged_uid) ? 1 : 0) >= SNAP_HOLDERS_MAX)
                return -EDQUOT;
        return check_quota(s, o->pub.size, uid);
}

int snap_store_hold_check(struct snap_store *s, struct snap_object *so, uint32_t uid)
{
        int r;

        pthread_mutex_lock(&s->lock);
        r = hold_check_locked(s, obj_of(so), uid);
        pthread_mutex_unlock(&s->lock);
        return r;
}

int snap_store_hold(struct snap_store *s, struct snap_object *so, uint32_t uid)
{
        struct object *o = obj_of(so);
        int r;

        pthread_mutex_lock(&s->lock);
        r = hold_check_locked(s, o, uid);
        if (r == 0)
                r = make_room(s);
        if (r == 0 && o->n_holders == o->cap_holders) {
                uint32_t cap = o->cap_holders * 2;
                uint32_t *v = o->holders == &o->holder_inline ? malloc(cap * sizeof(*v))
                                                               : realloc(o->holders,
                                                                         cap * sizeof(*v));
                if (!v) {
                        r = -ENOMEM;
                } else {
                        if (o->holders == &o->holder_inline)
                                v[0] = o->holder_inline;
                        o->holders = v;
                        o->cap_holders = cap;
                }
        }
        if (r == 0) {
                o->holders[o->n_holders++] = uid;
                charge(s, uid, o->pub.size);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

bool snap_store_holds(struct snap_store *s, struct snap_object *so, uint32_t uid)
{
        bool r;

        pthread_mutex_lock(&s->lock);
        r = holds(obj_of(so), uid);
        pthread_mutex_unlock(&s->lock);
        return r;
}

bool snap_store_held(struct snap_store *s, struct snap_object *so)
{
        struct object *o = obj_of(so);
        bool r;

        pthread_mutex_lock(&s->lock);
        r = o->indexed && o->n_holders > 0;
        pthread_mutex_unlock(&s->lock);
        return r;
}

int snap_store_adopt(struct snap_store *s, struct snap_object *so, uint32_t uid,
                     const char *name)
{
        struct object *o = obj_of(so);
        char *copy = name ? strdup(name) : NULL;
        int r = 0;

        if (name && !copy)
                return -ENOMEM;
        pthread_mutex_lock(&s->lock);
        if (o->indexed && o->n_holders == 1 && o->holders[0] == uid && !so->name) {
                so->publisher_uid = uid;
                so->name = copy;
                copy = NULL;
                r = 1;
        }
        pthread_mutex_unlock(&s->lock);
        free(copy);
        return r;
}

uint32_t snap_store_grants(struct snap_store *s, struct snap_object *so)
{
        struct object *o = obj_of(so);
        uint32_t n;

        pthread_mutex_lock(&s->lock);
        n = o->grants;
        pthread_mutex_unlock(&s->lock);
        return n;
}

bool snap_store_indexed(struct snap_store *s, struct snap_object *so)
{
        bool r;

        pthread_mutex_lock(&s->lock);
        r = obj_of(so)->indexed;
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* The first of the n elements (size bytes each) at src into out, room for max: n, how many
 * there are. No element yet may mean src NULL, and memcpy from NULL is undefined even for 0
 * bytes. */
static size_t copy_out(void *out, size_t max, const void *src, size_t n, size_t size)
{
        if (out && max && n)
                memcpy(out, src, (n < max ? n : max) * size);
        return n;
}

size_t snap_store_get_holders(struct snap_store *s, struct snap_object *so, uint32_t *out,
                              size_t max)
{
        struct object *o = obj_of(so);
        size_t n;

        pthread_mutex_lock(&s->lock);
        n = copy_out(out, max, o->holders, o->n_holders, sizeof(*out));
        pthread_mutex_unlock(&s->lock);
        return n;
}

bool snap_store_kept_without(struct snap_store *s, struct snap_object *so,
                             const struct snap_drop *d)
{
        struct object *o = obj_of(so);
        bool r;

        pthread_mutex_lock(&s->lock);
        r = o->indexed && referenced_without(o, d);
        pthread_mutex_unlock(&s->lock);
        return r;
}

int snap_store_unhold(struct snap_store *s, struct snap_object *so, uint32_t uid)
{
        const struct snap_drop d = { .hold = true, .uid = uid };
        struct object *o = obj_of(so);
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (!o->indexed || (uid != SNAP_HOLDER_ALL && !holds(o, uid))) {
                r = -ENOENT;
        } else if (!referenced_without(o, &d)) {
                /* The holders stay charged until the last release: memory an open
                 * descriptor keeps is still theirs. */
                detach_locked(s, o);
                r = 1;
        } else {
                uint32_t kept = 0;
                for (uint32_t i = 0; i < o->n_holders; i++) {
                        if (uid == SNAP_HOLDER_ALL || o->holders[i] == uid)
                                uncharge(s, o->holders[i], o->pub.size);
                        else
                                o->holders[kept++] = o->holders[i];
                }
                o->n_holders = kept;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

static int grant_indexed(struct snap_store *s, struct object *o)
{
        (void)s;
        if (o->grants == UINT32_MAX)
                return -EOVERFLOW;
        o->grants++;
        return 0;
}

int snap_store_grant(struct snap_store *s, struct snap_object *so)
{
        return with_indexed(s, so, grant_indexed);
}

int snap_store_ungrant(struct snap_store *s, struct snap_object *so)
{
        const struct snap_drop d = { .grants = 1 };
        struct object *o = obj_of(so);
        int r = 0;

        pthread_mutex_lock(&s->lock);
        if (!o->indexed || !o->grants) {
                r = -ENOENT;
        } else if (!referenced_without(o, &d)) {
                o->grants--;
                detach_locked(s, o);
                r = 1;
        } else {
                o->grants--;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

static int collect_indexed(struct snap_store *s, struct object *o)
{
        const struct snap_drop none = { 0 };

        if (referenced_without(o, &none))
                return 0;
        detach_locked(s, o);
        return 1;
}

int snap_store_collect(struct snap_store *s, struct snap_object *so)
{
        return with_indexed(s, so, collect_indexed);
}

int snap_store_foreach(struct snap_store *s, int (*fn)(const struct snap_object *o, void *ctx),
                       void *ctx)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; r == 0 && i < (size_t)1 << s->bits; i++)
                for (struct object *o = s->buckets[i]; r == 0 && o; o = o->next_hash)
                        r = fn(&o->pub, ctx);
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* Whether o is one of which (SNAP_FOREACH_*). Lock held. */
static bool is_one_of(const struct object *o, unsigned which)
{
        const struct snap_drop none = { 0 };

        if ((which & SNAP_FOREACH_HELD) && o->n_holders == 0)
                return false;
        if ((which & SNAP_FOREACH_UNREFERENCED) && referenced_without(o, &none))
                return false;
        return true;
}

int snap_store_foreach_from(struct snap_store *s, uint64_t from_ino, unsigned which,
                            int (*fn)(const struct snap_object *o, void *ctx), void *ctx)
{
        int r = 0;

        pthread_mutex_lock(&s->lock);
        for (size_t i = by_ino_lower(s, from_ino); r == 0 && i < s->n_by_ino; i++)
                if (is_one_of(s->by_ino[i], which))
                        r = fn(&s->by_ino[i]->pub, ctx);
        pthread_mutex_unlock(&s->lock);
        return r;
}

void snap_store_get_usage(struct snap_store *s, uint32_t uid, struct snap_store_usage *u)
{
        const struct snap_store_usage *found;

        pthread_mutex_lock(&s->lock);
        found = usage_of(s, uid);
        *u = found ? *found : (struct snap_store_usage){ .uid = uid };
        pthread_mutex_unlock(&s->lock);
}

size_t snap_store_list_usage(struct snap_store *s, struct snap_store_usage *out, size_t max)
{
        size_t n;

        pthread_mutex_lock(&s->lock);
        /* No uid has published yet: s->usage is NULL. */
        n = copy_out(out, max, s->usage, s->n_usage, sizeof(*out));
        pthread_mutex_unlock(&s->lock);
        return n;
}

void snap_store_get_stats(struct snap_store *s, struct snap_store_stats *st)
{
        pthread_mutex_lock(&s->lock);
        st->bytes = s->bytes;
        st->reserved = s->reserved;
        st->objects = s->objects;
        st->indexed = s->indexed;
        st->next_ino = s->next_ino;
        st->seq = s->seq;
        st->minimums = s->minimums;
        st->kept = s->kept;
        pthread_mutex_unlock(&s->lock);
}
