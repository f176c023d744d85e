/* SPDX-License-Identifier: MIT */
/* In-memory content-addressed store: objects named by their SHA-256, stored once, refcounted,
 * each with an inode number that is handed out monotonically and never reused, and held by
 * the uids that published it (its holders, each charged for it against its own limits).
 *
 * An indexed object stays published while something references it: a hold (a uid that
 * published it) or a grant (a scope it is granted to, docs/design.md "Scopes"). Whether it
 * still is, once some references go, is decided in one place: snap_store_kept_without.
 *
 * Thread-safe: every function may be called from any thread. An object's fields are immutable
 * once it is returned. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "snapshot/digest.h"

struct snap_store;

struct snap_object;

struct snap_store_config {
        uint64_t max_object_size; /* one object larger than this: -EFBIG */
        uint64_t max_bytes;       /* objects + reservations past this: -ENOSPC */
        uint64_t max_objects;     /* live objects past this: -ENOSPC */
        uint64_t first_ino;       /* first inode number handed out (0 means 1) */
        /* Per-uid limits on objects a uid published, counted until their last reference
         * goes (a detached object still open counts): past them, -EDQUOT. 0: no limit. The
         * privileged uid has none, and only it may use the last reserve_objects objects and
         * reserve_bytes bytes of the global limits (reservations included). */
        uint64_t max_uid_objects;
        uint64_t max_uid_bytes;
        uint32_t privileged_uid;
        uint64_t reserve_objects;
        uint64_t reserve_bytes;
        /* Told every inode number as it is handed out, before the caller can name it to
         * anyone: digest the object's, or NULL for a number of snap_store_alloc_ino(). Called
         * under the store's lock; it must not call back. NULL: nobody is told. */
        void (*ino_noted)(void *ctx, const struct snap_digest *digest, uint64_t ino);
        void *ino_ctx;
        /* Offered each new object's content (not empty) before anyone can see the object,
         * outside the store's lock: a copy to keep instead (a read-only mapping of a sealed
         * memory file, say), or NULL to keep the store's own. An adopted copy is the hook's:
         * freed is told when the object goes (or when a put that made it stores nothing),
         * and the store frees none of it. NULL: nothing is offered. Set freed with it. */
        const uint8_t *(*adopt)(const struct snap_object *o);
        /* Told of an object whose last reference went, just before its content is freed
         * (outside the store's lock; it must not touch the store). NULL: nobody is told. */
        void (*freed)(const struct snap_object *o);
};

/* A snapshot has at most this many holders besides the privileged uid: what one manifest
 * annotation of the store lists (ocistore.c), and a bound on the work a hold costs. */
#define SNAP_HOLDERS_MAX 64

struct snap_object {
        struct snap_digest digest;
        uint64_t ino;
        uint64_t size;
        const uint8_t *data;      /* size bytes; never NULL, even when size is 0 */
        uint32_t publisher_uid;   /* the first holder (the file's owner), kept when it drops its
                                     hold; for an object first published in a scope, the mount
                                     owner until a main-mount publish adopts it */
        char *name;               /* the staging NAME it was first published under on the main
                                     mount, or NULL (a scope's names are the scope's own) */
        struct timespec created;  /* CLOCK_REALTIME of its first publish */
        uint64_t seq;             /* order of indexing: an object stored later has a larger one */
        /* Everything else about an object (its place in the index, its references, holders and
         * grants) is the store's own: snapshot/store.c keeps it beside these fields, and no
         * caller can reach it but through the functions below. */
};

/* Room for a new object taken before the object exists (snap_store_claim): the limits are
 * decided, and charged, before anything else is done about it. */
struct snap_claim {
        uint32_t uid;
        uint64_t len;
        uint64_t reserved; /* bytes of a reservation the claim took over */
        bool held;
        bool unheld;       /* for an object no uid will hold (snap_store_claim_unheld) */
};

struct snap_put {
        const void *data;                 /* len bytes of content */
        size_t len;
        void *owned;                      /* if set (== data, from malloc): the store takes this
                                             buffer when it stores a new object */
        const struct snap_digest *digest; /* digest of data if the caller already has it (it is
                                             trusted), else NULL and the store computes it */
        uint64_t ino;                     /* inode number from snap_store_alloc_ino(), or 0 */
        uint64_t reserved;                /* bytes of an earlier snap_store_reserve() that the
                                             new object takes over */
        uint32_t publisher_uid;
        const char *name;                 /* kept (copied) by a new object only: the first
                                             publisher of some content names it */
        /* Served again after a restart: who holds it (n_holders distinct uids, at most
         * SNAP_HOLDERS_MAX besides the privileged uid; NULL: publisher_uid alone) and when it
         * was first published (NULL: now). */
        const uint32_t *holders;
        size_t n_holders;
        const struct timespec *created;
        bool unlimited;                   /* per-uid limits not checked: holds admitted before
                                             a restart stay, whatever the limits are now */
        struct snap_claim *claim;         /* room claimed already (snap_store_claim) for
                                             publisher_uid and len: the limits are not checked
                                             again, and a new object takes the claim over */
        /* A new object nobody holds: published in a scope (grants 1, a claim from
         * snap_store_claim_unheld), or served again from --store with grants still to come
         * (grants 0: snap_store_collect takes it when none comes). holders must be NULL. */
        bool unheld;
        uint32_t grants;
};

struct snap_store_stats {
        uint64_t bytes;    /* content bytes of live objects */
        uint64_t reserved; /* bytes reserved and not yet taken over */
        uint64_t objects;  /* live objects (indexed or detached but still referenced) */
        uint64_t indexed;  /* objects a digest lookup finds */
        uint64_t next_ino;
        uint64_t seq;      /* objects indexed so far: the seq of the latest */
        uint64_t minimums; /* claimants' guaranteed minimums (snap_store_keep_new), summed */
        uint64_t kept;     /* the part of them not used yet: kept from everybody else */
};

/* 0 and a new empty store, or -EINVAL (a zero limit) / -ENOMEM. */
int snap_store_new(const struct snap_store_config *cfg, struct snap_store **out);
/* Frees the store and every object still in it, referenced or not. */
void snap_store_free(struct snap_store *s);

/* Next inode number: strictly greater than every number handed out before. */
uint64_t snap_store_alloc_ino(struct snap_store *s);
/* No number below next is handed out from here on (a successor's start, after a
 * predecessor handed those out). */
void snap_store_skip_inos(struct snap_store *s, uint64_t next);

/* Reserve bytes against max_bytes (for content still being written): 0, or -ENOSPC. */
int snap_store_reserve(struct snap_store *s, uint64_t bytes);
/* The same for uid: past max_bytes less reserve_bytes unless uid is the privileged one. */
int snap_store_reserve_as(struct snap_store *s, uint32_t uid, uint64_t bytes);
void snap_store_unreserve(struct snap_store *s, uint64_t bytes);

/* A claimant's guaranteed minimum (a scope's min_bytes): the part of it the claimant does not
 * use yet is kept from every other claimant but the privileged uid, as reserve_bytes is kept
 * for the privileged uid; the claimant itself may use it. What counts as its use is what it
 * says: the bytes it reserves through snap_store_reserve_kept, and what it adds or takes away
 * with snap_store_keep_use. */
struct snap_keep;
/* 0 and *out (NULL for a min_bytes of 0: nothing kept), or -ENOSPC: the minimums and
 * reserve_bytes together would pass max_bytes, or min_bytes is more than is free now for a
 * claimant that is not privileged (unless restored: a minimum kept before a restart is
 * kept again as it was), or -ENOMEM. */
int snap_store_keep_new(struct snap_store *s, uint64_t min_bytes, bool restored,
                        struct snap_keep **out);
/* Nothing kept for k from now on (its scope deleted while what it holds lingers): k stays
 * valid, its use still counted, until snap_store_keep_free. NULL is fine. */
void snap_store_keep_end(struct snap_store *s, struct snap_keep *k);
/* Nothing kept for k any more; frees it. NULL is fine. */
void snap_store_keep_free(struct snap_store *s, struct snap_keep *k);
/* k's use grew (add) or shrank by bytes. NULL k: nothing. */
void snap_store_keep_use(struct snap_store *s, struct snap_keep *k, bool add, uint64_t bytes);
/* What is kept from own (NULL: a claimant with no minimum) for other claimants' minimums. */
uint64_t snap_store_kept_from(struct snap_store *s, const struct snap_keep *own);
/* snap_store_reserve_as for the claimant k (NULL: none), the bytes counted in its use: past
 * the room less what is kept for other minimums, -ENOSPC. */
int snap_store_reserve_kept(struct snap_store *s, uint32_t uid, struct snap_keep *k,
                            uint64_t bytes);
/* snap_store_unreserve, the bytes taken out of k's use. */
void snap_store_unreserve_kept(struct snap_store *s, struct snap_keep *k, uint64_t bytes);

/* Store content. Returns 0 for a new object (the caller holds one reference; p->owned,
 * p->reserved and p->claim are taken over), 1 when the same content is already indexed (a
 * reference to that object is taken; nothing of p is taken over), or -EFBIG (len >
 * max_object_size), -ENOSPC (bytes or object count used up), -EDQUOT (p->publisher_uid's own
 * limits), -ENOMEM, -EINVAL (data NULL with len > 0, owned set and not equal to data, a claim
 * that is not for publisher_uid and len, holders past SNAP_HOLDERS_MAX). Nothing of p is taken
 * over on an error. *out is set only on 0 and 1. */
int snap_store_put(struct snap_store *s, const struct snap_put *p, struct snap_object **out);

/* Decides now whether uid may publish a new object of len bytes, and keeps that room: 0 and
 * *claim (charged to uid as an object it holds, p->reserved bytes of a reservation taken
 * over), or -EFBIG, -ENOSPC, -EDQUOT as snap_store_put would answer, or -ENOMEM. A claim is
 * taken over by snap_store_put or given back with snap_store_unclaim. */
int snap_store_claim(struct snap_store *s, uint32_t uid, uint64_t len, uint64_t reserved,
                     struct snap_claim *claim);
/* The same for an object no uid will hold (published in a scope, whose own limits the caller
 * decided): only the global limits, the reserve kept for the privileged uid, which a scope
 * never uses, and every minimum kept (snap_store_keep_new); charged to nobody. */
int snap_store_claim_unheld(struct snap_store *s, uint64_t len, uint64_t reserved,
                            struct snap_claim *claim);
/* The same for the claimant k (a scope): k's own unused minimum is not kept from it. */
int snap_store_claim_kept(struct snap_store *s, const struct snap_keep *k, uint64_t len,
                          uint64_t reserved, struct snap_claim *claim);
/* Gives a claim back (its reservation too); nothing for a claim already taken over. */
void snap_store_unclaim(struct snap_store *s, struct snap_claim *claim);

/* Shorthand: copy len bytes of data into a new or existing object. */
int snap_store_put_bytes(struct snap_store *s, const void *data, size_t len,
                         struct snap_object **out);

/* The indexed object with this digest, with a reference taken, or NULL. O(1). */
struct snap_object *snap_store_lookup(struct snap_store *s, const struct snap_digest *d);

void snap_store_ref(struct snap_store *s, struct snap_object *o);
/* Drops a reference; the last one frees the content and lowers the counters. */
void snap_store_release(struct snap_store *s, struct snap_object *o);

/* Takes the object out of the index: lookups no longer find it and a later put of the same
 * content makes a new object with a new inode number. The content lives until the last
 * release. 0, or -ENOENT when it was not indexed. */
int snap_store_detach(struct snap_store *s, struct snap_object *o);

/* ---- references: holds and grants ----
 * An indexed object stays published while something references it: its holders, the uids
 * that published it (each charged for it, one object and its bytes, against its own limits for
 * as long as it holds it), and its grants, one for each scope it is granted to (charged to
 * nobody here: a scope counts what it published itself). The holders of an object that goes
 * (detached) stay charged until its last release, as its memory stays until then. Detaching
 * never drops a reference the caller took (snap_store_put's, a lookup's). */

#define SNAP_HOLDER_ALL UINT32_MAX /* every holder at once */

/* Whether uid may become a holder of o, deciding without changing anything: 0 it may, 1 it
 * holds o already, -EDQUOT past uid's own limits or SNAP_HOLDERS_MAX holders (the privileged
 * uid has neither), -ENOENT when o is no longer published. */
int snap_store_hold_check(struct snap_store *s, struct snap_object *o, uint32_t uid);
/* Makes uid a holder of o, charged for it: 0, 1 when it held o already (nothing changes),
 * -EDQUOT, -ENOENT as above, -ENOMEM. */
int snap_store_hold(struct snap_store *s, struct snap_object *o, uint32_t uid);
/* Whether uid holds o. */
bool snap_store_holds(struct snap_store *s, struct snap_object *o, uint32_t uid);
/* Whether o is published and held by some uid (what the main mount lists). */
bool snap_store_held(struct snap_store *s, struct snap_object *o);
/* Makes uid o's publisher and name its name when uid is o's only holder and o has no name:
 * content first published in a scope (untitled, the owner's), which the main mount's first
 * publisher names once it holds it (a tenant never names what the operator sees). 1 when
 * adopted, 0 when not (nothing changes), -ENOMEM. Call it with the lock that the readers of
 * o->name and o->publisher_uid take. */
int snap_store_adopt(struct snap_store *s, struct snap_object *o, uint32_t uid,
                     const char *name);
/* How many scopes o is granted to. */
uint32_t snap_store_grants(struct snap_store *s, struct snap_object *o);
/* Whether o is still published: a digest lookup finds it. */
bool snap_store_indexed(struct snap_store *s, struct snap_object *o);
/* o's holders, in the order they took their holds, up to max into out; returns how many. */
size_t snap_store_get_holders(struct snap_store *s, struct snap_object *o, uint32_t *out,
                              size_t max);

/* References a change takes away (snap_store_kept_without). */
struct snap_drop {
        bool hold;        /* a hold goes: uid's, or every one (SNAP_HOLDER_ALL) */
        uint32_t uid;
        uint32_t grants;  /* this many grants go */
};
/* Whether o stays published once the references in d are gone: the one place that decides
 * whether an object is still referenced (a hold or a grant left). A zero d asks whether o is
 * referenced now. */
bool snap_store_kept_without(struct snap_store *s, struct snap_object *o,
                             const struct snap_drop *d);
/* Drops uid's hold on o (every hold: SNAP_HOLDER_ALL). 0 when o stays published (uid is
 * uncharged now); 1 when nothing references o any more: it is detached, as snap_store_detach
 * does; -ENOENT when uid holds nothing on o or o is no longer published. */
int snap_store_unhold(struct snap_store *s, struct snap_object *o, uint32_t uid);

/* A scope references o: 0, -ENOENT when o is no longer published, -EOVERFLOW past
 * UINT32_MAX grants. */
int snap_store_grant(struct snap_store *s, struct snap_object *o);
/* One grant of o goes: 0 when o stays published, 1 when nothing references it any more (it
 * is detached), -ENOENT when o has no grant or is no longer published. */
int snap_store_ungrant(struct snap_store *s, struct snap_object *o);
/* Detaches o when nothing references it (a snapshot served again from --store that no hold
 * and no grant came back for): 1 detached, 0 still referenced, -ENOENT no longer published. */
int snap_store_collect(struct snap_store *s, struct snap_object *o);

/* Calls fn for every indexed object, under the store's lock (fn must not call the store).
 * Stops early and returns fn's value when fn returns non-zero; else returns 0. */
int snap_store_foreach(struct snap_store *s, int (*fn)(const struct snap_object *o, void *ctx),
                       void *ctx);
/* Which objects snap_store_foreach_from visits. */
enum {
        SNAP_FOREACH_ALL = 0,
        SNAP_FOREACH_HELD = 1 << 0,         /* only those some uid holds */
        SNAP_FOREACH_UNREFERENCED = 1 << 1, /* only those neither held nor granted */
};
/* The same in increasing inode order, from the first object whose inode number is at least
 * from_ino, for the objects which says (SNAP_FOREACH_*): a listing can resume there however
 * the store changed meanwhile, never repeating an object. O(log n) to find the start. */
int snap_store_foreach_from(struct snap_store *s, uint64_t from_ino, unsigned which,
                            int (*fn)(const struct snap_object *o, void *ctx), void *ctx);

/* What uid holds: objects it holds (or held when they were detached) that are still
 * referenced, and their bytes; and room it claimed. */
struct snap_store_usage {
        uint32_t uid;
        uint64_t objects;
        uint64_t bytes;
};
void snap_store_get_usage(struct snap_store *s, uint32_t uid, struct snap_store_usage *u);
/* Every uid holding something, up to max entries into out (in no order; out may be NULL
 * when max is 0); returns how many uids hold something (may exceed max). */
size_t snap_store_list_usage(struct snap_store *s, struct snap_store_usage *out, size_t max);

void snap_store_get_stats(struct snap_store *s, struct snap_store_stats *st);
