/* SPDX-License-Identifier: MIT */
/* Publishing: rename .staging/NAME to the digest, after checking the bytes hash to it; the
 * staging node becomes the snapshot and the store takes over its bytes (written to --store
 * first, when there is one). One way for the main mount, a scope's view and `put --scope`:
 * a plan (who publishes into which tree, its checks and limits, its room), a write (the store
 * on disk first, then the one put) and a commit (held or granted, the node becomes the
 * snapshot, audited), differing only by what the plan says. Also the snapshots --store
 * serves again at start. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/store/ocistore.h"
#include "fs/base/inostate.h"
#include "fs/tree/tree-internal.h"
#include "snapshot/trust.h"
#include "common/util.h"

static int publish_refused(struct sfs_tree *t, const struct sfs_caller *c, const char *name,
                           const char *target, int err, const char *reason)
{
        /* The same content already published: the caller gets EEXIST and binds to it, an
         * idempotent publish that is no refusal (alerting on publish-refused must not fire). */
        const bool exists = err == EEXIST;

        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = exists ? "publish-exists" : "publish-refused",
                                             .op = "rename",
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = exists ? target : NULL,
                                             .name = name,
                                             .target = exists ? NULL : target,
                                             .err = exists ? 0 : err,
                                             .reason = exists ? NULL : reason,
                                             .scope = t->scope ? t->scope->name : NULL,
                                     });
        return -err;
}

/* --trust-key: only content a signed manifest names is published (snapshot/trust.h). Asked
 * of content already published too, so a daemon restarted on --store learns again from an
 * import that publishes the same envelope and manifest; such content is not refused (the
 * EEXIST below answers it). Bytes still: stg->lock held and the publishing flag set. */
static int trust_admits(struct sfs_tree *t, struct sfs_staging *stg, const struct snap_digest *d,
                        const char **reason)
{
        struct snap_object *existing;
        int r;

        r = snap_trust_admit(t->cfg.trust, d, stg->buf ? (const void *)stg->buf : "", stg->len,
                             reason);
        /* Not in a view: there, content another scope published must be refused as if it
         * were not there (an admission would tell the scope that it is). */
        if (r < 0 && !t->scope && (existing = snap_store_lookup(t->store, d))) {
                snap_store_release(t->store, existing);
                r = 0;
        }
        return r;
}

/* Checks everything that can be checked before hashing and marks the staging file as being
 * published (no writes, truncation or unlink meanwhile). t->lock held. */
static int publish_begin(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                         const char *name, struct sfs_node *newparent, const char *newname,
                         unsigned flags, struct snap_digest *target, struct sfs_node **src)
{
        assert(mutex_held(&t->lock));
        struct sfs_uidstage *st;
        struct sfs_node *n;
        int r = 0;

        if (node_kind(parent) == SFS_KIND_ROOT)
                /* A snapshot, or .staging itself: names in the root never move. */
                return sfs_may_see(&t->cfg, c) ? -EPERM : -EACCES;
        if (node_kind(parent) != SFS_KIND_STAGING_DIR)
                return -ENOTDIR;
        if (!sfs_may_publish(&t->cfg, c))
                return -EACCES;
        st = sfs_stage_find(t, c->uid, false);
        n = st ? sfs_stage_lookup(st, name) : NULL;
        if (!n)
                return -ENOENT;
        /* RENAME_EXCHANGE would put a snapshot back into staging; only NOREPLACE is
         * meaningful, and publishing never replaces anything anyway. */
        if (flags & ~(unsigned)RENAME_NOREPLACE)
                return -EINVAL;
        if (node_kind(newparent) != SFS_KIND_ROOT ||
            snap_digest_from_hex(newname, strlen(newname), target) < 0)
                return -EINVAL;
        pthread_mutex_lock(&n->stg->lock);
        /* Bytes still arriving could change after the hash: publish only what is closed. */
        if (n->stg->writers || n->stg->publishing)
                r = -EBUSY;
        else
                n->stg->publishing = true;
        pthread_mutex_unlock(&n->stg->lock);
        if (r == 0) {
                n->pins++;
                *src = n;
        }
        return r;
}

/* Who publishes, into which tree: what differs between the three ways a staging file becomes
 * a snapshot, all of it data the steps below read. */
enum publish_to {
        PUBLISH_MAIN,      /* the main mount: the caller holds it */
        PUBLISH_VIEW,      /* a scope's view: granted to that scope, held by no uid */
        PUBLISH_FOR_SCOPE, /* `put --scope` on the main mount: the registry grants it */
};

/* One publish, through its three steps: the plan (publish_plan: who, where, the checks and
 * limits, the room, decided before anything is written), the write (publish_persist: --store
 * first; publish_write: the store's copy, put once) and the commit (publish_commit: held or
 * granted, the node becomes the snapshot, audited). */
struct publish {
        struct sfs_tree *t;
        const struct sfs_caller *c;
        struct sfs_node *n; /* the staging node, pinned by publish_begin */
        struct sfs_staging *stg;
        const char *name, *newname;
        struct snap_digest d; /* the staged bytes' own */
        struct timespec now;
        const char *reason; /* why --trust-key refused, or the store is full */
        /* The plan. */
        enum publish_to to;
        /* The store written before the tree changes (--store on the main mount, the runtime
         * store for a scope's content, or none), its lock held from the plan to the commit
         * (put --scope: to the registry's grant, which takes it). */
        struct sfs_ocistore *os;
        uint64_t len;
        const char *title;      /* the staging name kept with new content, or NULL */
        const char *scope;      /* audited: the scope it goes to (NULL on the main mount) */
        struct sfs_scope_op op; /* PUBLISH_VIEW: the grant, saved in the scope's file first */
        int (*save)(void *ctx, const struct sfs_scope_op *op);
        void *save_ctx;
        struct sfs_grant_hook grant; /* PUBLISH_FOR_SCOPE: the registry's */
        char for_scope[SFS_STAGING_NAME_MAX + 1], for_entry[SFS_STAGING_NAME_MAX + 1];
        /* What it did, undone by publish_refuse. */
        struct snap_object *existing; /* published already: a reference */
        struct snap_object *obj;      /* what it publishes: a reference of ours */
        struct snap_claim claim;
        struct sfs_scope_effects fx;
        bool fresh;       /* obj is new content, put by this publish */
        bool stored;      /* the new bytes are in os */
        bool hold_stored; /* the caller's hold on existing is in os */
        bool store_full;
};

/* The scope's own limits for one more snapshot of len bytes published in it: -EDQUOT past
 * them. t->lock held. */
static int scope_quota(struct sfs_tree *t, uint64_t len)
{
        const struct sfs_scope_limits *l = &t->scope->limits;

        if (t->scope->used_snapshots >= l->max_snapshots)
                return -EDQUOT;
        if (t->scope->used_bytes > l->max_bytes || len > l->max_bytes - t->scope->used_bytes)
                return -EDQUOT;
        return 0;
}

/* The checks and limits of the plan's publisher, before anything is written: in a view, a
 * read-only tree (EACCES), the scope deleted meanwhile, granted there already (EEXIST), no
 * room for one more grant (ENOSPC), the scope's limits (EDQUOT); for put --scope, the control
 * role (EACCES) and a registry to grant it (ENOENT). The main mount's roles were checked by
 * publish_begin, its per-uid limits go with its room (publish_decide). t->lock held. */
static int publish_checks(struct publish *p)
{
        struct sfs_tree *t = p->t;
        int r;

        switch (p->to) {
        case PUBLISH_VIEW:
                if (t->cfg.read_only)
                        return -EACCES;
                r = sfs_scope_check_locked(t, &p->op);
                return r < 0 ? r : scope_quota(t, p->len);
        case PUBLISH_FOR_SCOPE:
                if (!sfs_may_control(&t->cfg, p->c))
                        return -EACCES;
                if (!p->grant.grant)
                        return -ENOENT;
                break;
        case PUBLISH_MAIN:
                break;
        }
        return 0;
}

/* Decide before writing (docs/design.md): r (the verdict so far) and the checks, then the
 * content there already (p->existing, a reference) and the room new content takes, claimed now
 * so no later publish or staging write can take it. On the main mount the caller holds what is
 * there (0, 1 when it holds it already, -EDQUOT) or claims room for its own (-EDQUOT,
 * -ENOSPC); without --store the put decides (publish_write). A view claims room even for
 * content there already: its room is decided as if it were new, so nothing tells one scope
 * what another holds. put --scope grants what is there; new content is copied, so it claims
 * room for a second copy (the staging file keeps its reservation until it is freed).
 * t->lock held. */
static int publish_decide(struct publish *p, int r)
{
        struct sfs_tree *t = p->t;

        assert(mutex_held(&t->lock));
        if (r == 0)
                r = publish_checks(p);
        if (r < 0 || (p->to == PUBLISH_MAIN && !p->os))
                return r;
        p->existing = snap_store_lookup(t->store, &p->d);
        if (p->existing && p->to == PUBLISH_MAIN)
                return snap_store_hold_check(t->store, p->existing, (uint32_t)p->c->uid);
        if (p->existing && p->to == PUBLISH_FOR_SCOPE)
                return 0;
        if (p->to == PUBLISH_MAIN)
                return snap_store_claim(t->store, (uint32_t)p->c->uid, p->len, p->len, &p->claim);
        if (p->to == PUBLISH_VIEW) /* the scope's own minimum is not kept from it */
                return snap_store_claim_kept(t->store, t->budget.keep, p->len, p->len, &p->claim);
        return snap_store_claim_unheld(t->store, p->len, 0, &p->claim);
}

/* The plan: who publishes into which tree (a view's, the main mount's, or through it for a
 * scope: for_scope), with its store's lock taken (outermost: publishes and unlinks of a store
 * reach the disk in the order the tree sees them, and what is decided here still holds when
 * it is done), then decided (publish_decide). r is the hash's verdict. */
static int publish_plan(struct publish *p, int r, bool for_scope)
{
        struct sfs_tree *t = p->t;
        struct sfs_staging *stg = p->stg;

        p->to = t->scope ? PUBLISH_VIEW : for_scope ? PUBLISH_FOR_SCOPE : PUBLISH_MAIN;
        /* --runtime-store (RAM), never --store: a scope's content never reaches a disk (a
         * view's tree has the runtime store as its own). */
        p->os = p->to == PUBLISH_FOR_SCOPE ? t->cfg.runtime : t->cfg.ocistore;
        if (p->os)
                sfs_ocistore_lock(p->os);
        tree_lock(t);
        pthread_mutex_lock(&stg->lock);
        sfs_staging_fit_locked(stg);
        p->len = stg->len;
        /* A view's publish names it in that scope alone (its file), never for the operator. */
        if (p->to != PUBLISH_VIEW && sfs_staging_name_kept(stg->name))
                p->title = stg->name;
        memcpy(p->for_scope, stg->for_scope, sizeof(p->for_scope));
        memcpy(p->for_entry, stg->for_entry, sizeof(p->for_entry));
        pthread_mutex_unlock(&stg->lock);
        p->grant = t->grant_hook;
        if (p->to == PUBLISH_VIEW) {
                p->save = t->scope->save;
                p->save_ctx = t->scope->save_ctx;
                p->op = (struct sfs_scope_op){ .kind = SFS_SCOPE_PUBLISH,
                                               .has_digest = true,
                                               .digest = p->d,
                                               .uid = (uint32_t)p->c->uid,
                                               .name = stg->name,
                                               .created = p->now,
                                               .ino = p->n->ino };
        }
        p->scope = p->to == PUBLISH_FOR_SCOPE ? p->for_scope : t->scope ? t->scope->name : NULL;
        r = publish_decide(p, r);
        tree_unlock(t);
        return r;
}

/* --store: obj's holders as they are, with uid added when add (its hold is recorded before
 * it is answered, so a restart keeps it), or without it when not (a hold taken back). The
 * store's lock is held; no other. */
static int persist_holders(struct sfs_tree *t, struct sfs_ocistore *os, struct snap_object *obj,
                           uint32_t uid, bool add, const char *title)
{
        uint32_t holders[SNAP_HOLDERS_MAX + 2];
        size_t n = snap_store_get_holders(t->store, obj, holders, SNAP_HOLDERS_MAX + 1);

        /* At most SNAP_HOLDERS_MAX + 1 (snap_store_hold_check keeps it so); more would be
         * refused by the store (EINVAL), never written past the array. */
        if (n > SNAP_HOLDERS_MAX + 1)
                n = SNAP_HOLDERS_MAX + 2;
        else if (add)
                holders[n++] = uid;
        return sfs_ocistore_set_holders_title(os, &obj->digest, holders, n, title);
}

/* --store: the title a hold on existing writes with it: the staging name when existing is
 * held by no uid and untitled (content only scopes held, which this publish names), else
 * NULL. The store's lock is held: no other publish runs. */
static const char *adopted_title(struct sfs_tree *t, struct snap_object *existing,
                                 struct sfs_staging *stg)
{
        if (snap_store_held(t->store, existing) || existing->name ||
            !sfs_staging_name_kept(stg->name))
                return NULL;
        return stg->name;
}

/* The staged bytes of new content in p->os, durably, before anything is answered: held by the
 * caller on the main mount, by no uid for a scope. The store's lock is held; no other. */
static int persist_new(struct publish *p)
{
        const uint32_t uid = (uint32_t)p->c->uid;
        const bool held = p->to == PUBLISH_MAIN;
        struct sfs_ocistore_meta meta = { .holders = held ? &uid : NULL,
                                          .n_holders = held ? 1 : 0,
                                          .unheld = !held,
                                          .title = p->title,
                                          .created = p->now };
        struct sfs_staging *stg = p->stg;
        int r;

        /* The publishing flag keeps the bytes still; the lock orders us after any writer. */
        pthread_mutex_lock(&stg->lock);
        r = sfs_ocistore_add(p->os, &p->d, stg->buf ? (const void *)stg->buf : "", stg->len, &meta);
        pthread_mutex_unlock(&stg->lock);
        return r;
}

/* Persist before the change: when r (the verdict so far) is 0, what was decided is written to
 * the plan's store before the tree changes (the main mount's hold on what is there, or the new
 * bytes), and a view's grant to its scope's file. Only what was admitted is written: a refused
 * publish leaves the disk as it was (the attack: a uid past its limit made every refused
 * publish write and fsync its blob, the manifest and index.json, then remove them). 0 or
 * -errno. The store's lock is held; no other. */
static int publish_persist(struct publish *p, int r)
{
        bool wrote = false;

        if (r == 0 && p->os && p->existing && p->to == PUBLISH_MAIN) {
                r = persist_holders(p->t, p->os, p->existing, (uint32_t)p->c->uid, true,
                                    adopted_title(p->t, p->existing, p->stg));
                p->hold_stored = r == 0;
                wrote = true;
        } else if (r == 0 && p->os && !p->existing) {
                r = persist_new(p);
                p->stored = r == 0;
                wrote = true;
        }
        /* The disk is full, not a limit: said so, as ENOSPC from the store — only when this
         * publish's own write failed (the store's flag tells of its last write, which may be an
         * earlier publish's: a limit or a trust refusal since is said as itself). The runtime
         * store of put --scope answers with its own errno. */
        if (r < 0 && p->os && wrote && p->to != PUBLISH_FOR_SCOPE && sfs_ocistore_full(p->os)) {
                r = -ENOSPC;
                p->reason = SFS_REFUSAL_STORE_FULL;
                p->store_full = true;
        }
        /* The scope's file says it is granted before it is. */
        if (r == 0 && p->to == PUBLISH_VIEW && p->save)
                r = p->save(p->save_ctx, &p->op);
        return r == 1 ? 0 : r; /* 1: holds it already, nothing to write */
}

/* p->existing, found by the plan or by the put (raced), taken as the publisher's kind takes
 * it: the main mount holds it in the commit; a view's grant takes the reference (detached
 * meanwhile, which only a store without --store's lock allows: published as new, unless the
 * put itself found it, under the store's lock, and it went again at once: this publish lost
 * the race, EAGAIN); put --scope grants it through the registry. 0 or -EAGAIN. */
static int take_existing(struct publish *p, bool raced)
{
        struct sfs_tree *t = p->t;

        if (p->to == PUBLISH_MAIN)
                return 0;
        if (p->to == PUBLISH_VIEW && snap_store_grant(t->store, p->existing) < 0) {
                snap_store_release(t->store, p->existing);
                p->existing = NULL;
                return raced ? -EAGAIN : 0;
        }
        p->obj = TAKE_PTR(p->existing);
        return 0;
}

/* The staged bytes put in the store as new content, the one put of a publish: p->obj with a
 * reference of ours besides its publication's (p->fresh), or, published meanwhile (without
 * --store), what is there in p->existing. The buffer is handed over, as the reservation, but
 * for put --scope, which copies it: a refused grant leaves the staging file as it was. The
 * staging's lock held (and t->lock, unless put --scope). 0 or -errno. */
static int publish_put(struct publish *p)
{
        struct sfs_tree *t = p->t;
        struct sfs_staging *stg = p->stg;
        const bool hand_over = p->to != PUBLISH_FOR_SCOPE;
        int r;

        r = snap_store_put(t->store,
                           &(struct snap_put){
                                   .data = stg->buf ? (const void *)stg->buf : "",
                                   .len = stg->len,
                                   .owned = hand_over ? stg->buf : NULL,
                                   .digest = &p->d,
                                   /* A view's node has the view's number
                                    * (sfs_tree_alloc_ino); the store its own. */
                                   .ino = p->to == PUBLISH_MAIN ? p->n->ino : 0,
                                   .reserved = hand_over ? stg->len : 0,
                                   /* Named in the scope's grant alone. */
                                   .publisher_uid = p->to == PUBLISH_VIEW
                                                            ? (uint32_t)t->cfg.owner_uid
                                                            : (uint32_t)p->c->uid,
                                   .name = p->title,
                                   .created = &p->now,
                                   .unheld = p->to != PUBLISH_MAIN,
                                   .grants = p->to == PUBLISH_VIEW ? 1 : 0,
                                   .claim = p->claim.held ? &p->claim : NULL,
                           },
                           &p->obj);
        p->fresh = r == 0;
        if (r == 0)
                snap_store_ref(t->store, p->obj);
        if (r == 0 && hand_over)
                sfs_staging_handed_over_locked(stg);
        if (r == 1) {
                p->existing = TAKE_PTR(p->obj);
                r = take_existing(p, true);
        }
        return r;
}

/* The write: p->obj, the object this publish commits, taken from what is there or put from
 * the staged bytes. Returns with the staging's lock held and, unless put --scope (whose grant
 * comes after, outside every lock), t->lock too, its pin given back: the node becomes the
 * snapshot in the same hold. r is the verdict so far. */
static int publish_write(struct publish *p, int r)
{
        struct sfs_tree *t = p->t;

        if (p->to != PUBLISH_FOR_SCOPE) {
                tree_lock(t);
                p->n->pins--;
        }
        /* Granted here meanwhile through the control channel (EEXIST), or no room for one
         * more grant: refused before the store takes the bytes. */
        if (r == 0 && p->to == PUBLISH_VIEW)
                r = sfs_scope_check_locked(t, &p->op);
        pthread_mutex_lock(&p->stg->lock);
        /* Without --store nothing was written before: what is there is looked up now. */
        if (r == 0 && p->to == PUBLISH_MAIN && !p->os)
                p->existing = snap_store_lookup(t->store, &p->d);
        if (r == 0 && p->existing)
                r = take_existing(p, false);
        if (r == 0 && !p->existing && !p->obj)
                r = publish_put(p);
        return r;
}

/* A refused publish undone outside the tree's lock: the lookup's reference (NULL: none), the
 * room claimed, the bytes --store took (stored: not published after all), the store's lock. */
static void publish_undo(struct sfs_tree *t, const struct snap_digest *d,
                         struct snap_object *existing, struct snap_claim *claim, bool stored)
{
        struct sfs_ocistore *os = t->cfg.ocistore;

        snap_store_release(t->store, existing);
        snap_store_unclaim(t->store, claim);
        if (stored)
                sfs_ocistore_remove(os, d);
        if (os)
                sfs_ocistore_unlock(os);
}

/* Already published: the caller binds to it and holds it too (decided before with --store,
 * whose record of the hold hold_stored says; here without): -EEXIST, or why not. Content only
 * scopes held is named by this, its first main-mount publisher: never by the tenant that
 * published it in its view (the attack: "totally-legit", publisher 4701, as the operator saw
 * it). t->lock and stg->lock held. */
static int hold_existing(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_staging *stg,
                         struct snap_object *existing, bool hold_stored)
{
        int r = snap_store_hold(t->store, existing, (uint32_t)c->uid);

        if (r >= 0 && snap_store_adopt(t->store, existing, (uint32_t)c->uid,
                                       sfs_staging_name_kept(stg->name) ? stg->name : NULL) < 0)
                r = -ENOMEM;
        if (r >= 0)
                return -EEXIST;
        if (hold_stored)
                /* Not held after all: the store says what the tree holds. */
                persist_holders(t, t->cfg.ocistore, existing, 0, false, NULL);
        return r;
}

/* The grant of obj (its reference the grant's) applied to the scope: 0, or -ENOMEM for
 * the effects, the grant and reference given back and *obj NULL. t->lock held. */
static int scope_grant_object(struct sfs_tree *t, const struct sfs_scope_op *op,
                              struct snap_object **obj, struct sfs_scope_effects *fx)
{
        int r = sfs_scope_apply_locked(t, op, *obj, NULL, fx);

        if (r < 0) {
                /* Out of memory for the effects: nothing changed but the grant. */
                if (snap_store_ungrant(t->store, *obj) == 1)
                        snap_store_release(t->store, *obj); /* its publication's */
                snap_store_release(t->store, *obj);
                *obj = NULL;
        }
        return r;
}

/* A publish for a scope put its new object in the store (held by no uid, no grant yet) and
 * the grant was refused: nothing else references it, so it goes again, from --store too.
 * No lock held. */
static void unpublish_fresh(struct sfs_tree *t, struct snap_object *obj, bool stored)
{
        struct sfs_ocistore *os = t->cfg.runtime;

        if (os)
                sfs_ocistore_lock(os);
        if (snap_store_collect(t->store, obj) == 1) {
                if (stored)
                        sfs_ocistore_remove(os, &obj->digest);
                snap_store_release(t->store, obj); /* its publication's */
        }
        if (os)
                sfs_ocistore_unlock(os);
}

/* put --scope's grant, by the registry (which takes the runtime store's lock and the scope's):
 * the staging's and the store's locks let go first, the bytes written for a put that failed
 * taken back. New content whose grant is refused goes again; content published already,
 * granted now, is EEXIST (the caller binds to it and removes its file, as for any publish of
 * published content). Returns with t->lock and the staging's lock held, the pin given back. */
static int grant_for_scope(struct publish *p, int r)
{
        struct sfs_tree *t = p->t;
        struct sfs_staging *stg = p->stg;

        pthread_mutex_unlock(&stg->lock);
        if (r < 0 && p->stored)
                sfs_ocistore_remove(p->os, &p->d);
        if (p->os)
                sfs_ocistore_unlock(TAKE_PTR(p->os));
        snap_store_unclaim(t->store, &p->claim);
        if (r == 0)
                r = p->grant.grant(p->grant.ctx, p->c, p->for_scope, &p->d,
                                   p->for_entry[0] ? p->for_entry : NULL);
        if (r < 0 && p->fresh)
                unpublish_fresh(t, p->obj, p->stored);
        p->stored = false;
        if (r == 0 && !p->fresh)
                r = -EEXIST;
        tree_lock(t);
        p->n->pins--;
        pthread_mutex_lock(&stg->lock);
        if (r == -ENOENT && !p->reason)
                sfs_staging_set_refusal_locked(stg, "no-such-scope");
        return r;
}

/* A refused publish: the staging file is the caller's again, with the reason only the daemon
 * knows; what the plan and the write took is given back (publish_undo). Called with t->lock
 * and the staging's lock held, returns with both released. -errno of r. */
static int publish_refuse(struct publish *p, int r)
{
        struct sfs_tree *t = p->t;
        struct sfs_staging *stg = p->stg;

        stg->publishing = false;
        if (p->store_full)
                sfs_staging_set_refusal_locked(stg, SFS_REFUSAL_STORE_FULL);
        pthread_mutex_unlock(&stg->lock);
        tree_unlock(t);
        publish_undo(t, &p->d, TAKE_PTR(p->existing), &p->claim, p->stored);
        snap_store_release(t->store, TAKE_PTR(p->obj));
        sfs_scope_effects_free(&p->fx);
        return publish_refused(t, p->c, p->name, p->newname, -r, p->reason);
}

/* The node the kernel has for the name (the source dentry moves onto the target name) is the
 * snapshot now, with our reference (in a view that one is the grant's: the node takes its
 * own), under its inode number; its staging goes. Called with t->lock and the staging's lock
 * held, returns with both released. */
static void publish_becomes_snapshot(struct publish *p)
{
        struct sfs_tree *t = p->t;
        struct sfs_node *n = p->n;
        struct sfs_staging *stg = p->stg;

        if (p->to == PUBLISH_VIEW)
                snap_store_ref(t->store, p->obj);
        sfs_stage_remove(t, n, false); /* it counts as a snapshot now */
        n->obj = TAKE_PTR(p->obj);
        if (p->to == PUBLISH_VIEW)
                sfs_scope_node_refresh(n, sfs_scope_grant_of(t, &p->d));
        __atomic_store_n(&n->kind, SFS_KIND_SNAPSHOT, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&stg->lock);
        n->stg = NULL;
        sfs_staging_free(stg);
        /* put --scope revoked already (a rotation raced this reply): the node keeps nothing. */
        if (p->to == PUBLISH_FOR_SCOPE && !snap_store_indexed(t->store, n->obj)) {
                n->revoked = true;
                sfs_node_drop_content(t, n);
        }
        sfs_touch_root(t);
        tree_unlock(t);
}

/* d published on the main mount: told to the tree's published hook (the registry's, which
 * grants again what scopes held of d before its bytes went missing). No lock held. */
static void announce_published(struct sfs_tree *t, const struct snap_digest *d)
{
        struct sfs_published_hook hook;

        tree_lock(t);
        hook = t->published_hook;
        tree_unlock(t);
        if (hook.fn)
                hook.fn(hook.ctx, d);
}

/* The audit line of a publish: the staging name renamed to its digest, with the scope it
 * went to (none on the main mount). */
static void audit_publish(const struct publish *p)
{
        sfs_audit_emit(p->t->cfg.audit, &(struct sfs_audit_event){
                                                .event = "publish",
                                                .op = "rename",
                                                .uid = p->c->uid,
                                                .pid = p->c->pid,
                                                .digest = p->newname,
                                                .name = p->name,
                                                .size = p->len,
                                                .scope = p->scope,
                                        });
}

/* The commit, with what the write left locked: the main mount's caller holds content
 * published already (EEXIST: it binds to it), a view grants its object to its scope (in
 * memory; its file said so already), put --scope's registry grants it; then the node becomes
 * the snapshot, audited, and a main-mount publish is announced. 0 with *published, or the
 * refusal, everything undone. r is the verdict so far. */
static int publish_commit(struct publish *p, int r, struct sfs_node **published)
{
        struct sfs_tree *t = p->t;

        if (p->to == PUBLISH_FOR_SCOPE)
                r = grant_for_scope(p, r);
        else if (r == 0 && p->to == PUBLISH_VIEW)
                r = scope_grant_object(t, &p->op, &p->obj, &p->fx);
        else if (r == 0 && p->existing)
                r = hold_existing(t, p->c, p->stg, p->existing, p->hold_stored);
        if (r < 0)
                return publish_refuse(p, r);
        publish_becomes_snapshot(p);
        /* Content that was there already (a view's): its room was only asked for. */
        snap_store_unclaim(t->store, &p->claim);
        if (p->os)
                sfs_ocistore_unlock(p->os);
        sfs_scope_effects_free(&p->fx);
        audit_publish(p);
        *published = p->n;
        if (p->to == PUBLISH_MAIN)
                announce_published(t, &p->d);
        return 0;
}

/* The staged bytes hashed (outside the tree lock: a large staging file written out of order
 * must not stall every other request; the publishing flag keeps its bytes still) into
 * *actual: 0, -EBADMSG when they are not target, or the refusal of --trust-key, *reason
 * saying why. *for_scope: the staging file is published for a scope. */
static int verify_staged(struct sfs_tree *t, struct sfs_staging *stg,
                         const struct snap_digest *target, struct snap_digest *actual,
                         const char **reason, bool *for_scope)
{
        int r;

        pthread_mutex_lock(&stg->lock);
        r = sfs_staging_digest(stg, actual);
        if (r == 0 && !snap_digest_equal(actual, target))
                r = -EBADMSG;
        if (r == 0 && t->cfg.trust)
                r = trust_admits(t, stg, actual, reason);
        /* Only the daemon knows why a --trust-key refused: the staging file (its owner's
         * alone) keeps the reason for the client to read before it removes the file. */
        if (r < 0 && *reason)
                sfs_staging_set_refusal_locked(stg, *reason);
        *for_scope = stg->for_scope[0] != 0;
        pthread_mutex_unlock(&stg->lock);
        return r;
}

int sfs_tree_rename(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, struct sfs_node *newparent, const char *newname,
                    unsigned flags, struct sfs_node **published)
{
        struct publish p = { .t = t, .c = c, .name = name, .newname = newname };
        struct snap_digest target;
        bool for_scope;
        int r;

        tree_lock(t);
        r = publish_begin(t, c, parent, name, newparent, newname, flags, &target, &p.n);
        tree_unlock(t);
        if (r == -ENOENT || r == -ENOTDIR)
                return r;
        if (r == -EPERM || r == -EACCES)
                return sfs_refused(t, c, "refused", "rename", name, newname, -r);
        if (r < 0)
                return publish_refused(t, c, name, newname, -r, NULL);

        p.stg = p.n->stg;
        r = verify_staged(t, p.stg, &target, &p.d, &p.reason, &for_scope);
        clock_gettime(CLOCK_REALTIME, &p.now);
        r = publish_plan(&p, r, for_scope);
        r = publish_persist(&p, r);
        r = publish_write(&p, r);
        return publish_commit(&p, r, published);
}

int sfs_tree_restore(struct sfs_tree *t, const struct snap_digest *d, void *data, size_t len,
                     const char *name, const uint32_t *holders, size_t n_holders, bool unheld,
                     const struct timespec *created)
{
        const uint32_t owner = (uint32_t)t->cfg.owner_uid;
        struct snap_object *obj;
        int r;

        /* A store written before holders were kept: the mount owner holds what it served.
         * One nobody holds waits for its grants (sfs_registry_restore), or is collected. */
        if (!unheld && (!holders || !n_holders)) {
                holders = &owner;
                n_holders = 1;
        }
        tree_lock(t);
        r = snap_store_put(t->store,
                           &(struct snap_put){
                                   .data = data,
                                   .len = len,
                                   .owned = len ? data : NULL,
                                   .digest = d,
                                   /* A successor: the number the kernel knows it by. */
                                   .ino = sfs_inostate_ino(t->cfg.inostate, d->bytes, 0),
                                   .publisher_uid = unheld ? owner : holders[0],
                                   /* A title that is no staging NAME was not ours. */
                                   .name = sfs_staging_name_valid(name) ? name : NULL,
                                   .holders = unheld ? NULL : holders,
                                   .n_holders = unheld ? 0 : n_holders,
                                   .unheld = unheld,
                                   .created = created,
                                   /* Admitted before the restart: the counts come back as
                                    * they were, whatever the limits are now. */
                                   .unlimited = true,
                           },
                           &obj);
        if (r == 1)
                snap_store_release(t->store, obj);
        /* On 0 the reference the put returned is its publication's. */
        tree_unlock(t);
        if (r == 0 && !len)
                free(data);
        return r;
}
