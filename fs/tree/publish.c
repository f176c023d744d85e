/* SPDX-License-Identifier: MIT */
/* Publishing: rename .staging/NAME to the digest, after checking the bytes hash to it; the
 * staging node becomes the snapshot and the store takes over its bytes (written to --store
 * first, when there is one). Also the snapshots --store serves again at start. */
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

/* Turns the staging node into the snapshot: the kernel moves the source dentry onto the
 * target name, so the node it already knows must now be the snapshot. t->lock and stg->lock
 * held; obj carries one reference, which the node keeps. */
static void become_snapshot(struct sfs_tree *t, struct sfs_node *n, struct snap_object *obj)
{
        sfs_stage_remove(t, n, false); /* it counts as a snapshot now */
        snap_store_ref(t->store, obj); /* its publication's reference */
        n->obj = obj;
        __atomic_store_n(&n->kind, SFS_KIND_SNAPSHOT, __ATOMIC_RELEASE);
}

/* Decide before writing (docs/design.md): everything that can refuse a publish with --store
 * is decided here, before the store is written. Content published already: may the caller
 * hold it too (0, 1 when it holds it already, -EDQUOT); *existing keeps a reference. New
 * content: may the caller publish it, its room claimed now so no later publish or staging
 * write can take it (0, -EDQUOT, -ENOSPC). t->lock held; stg's bytes are still. */
static int decide(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_staging *stg,
                  const struct snap_digest *d, struct snap_object **existing,
                  struct snap_claim *claim)
{
        assert(mutex_held(&t->lock));
        int r;

        *existing = snap_store_lookup(t->store, d);
        if (*existing)
                return snap_store_hold_check(t->store, *existing, (uint32_t)c->uid);
        pthread_mutex_lock(&stg->lock);
        sfs_staging_fit_locked(stg);
        r = snap_store_claim(t->store, (uint32_t)c->uid, stg->len, stg->len, claim);
        pthread_mutex_unlock(&stg->lock);
        return r;
}

/* --store: the staged bytes of a new snapshot, durably, before the rename is answered. The
 * store's lock is held; no other. */
static int persist_new(struct sfs_ocistore *os, struct sfs_staging *stg,
                       const struct snap_digest *d, uint32_t uid, const struct timespec *now)
{
        struct sfs_ocistore_meta meta = { .holders = &uid, .n_holders = 1, .created = *now };
        int r;

        /* The publishing flag keeps the bytes still; the lock orders us after any writer. */
        pthread_mutex_lock(&stg->lock);
        meta.title = sfs_staging_name_kept(stg->name) ? stg->name : NULL;
        r = sfs_ocistore_add(os, d, stg->buf ? (const void *)stg->buf : "", stg->len, &meta);
        pthread_mutex_unlock(&stg->lock);
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

/* Already published: the caller binds to it and holds it too (decided before with --store,
 * whose record of the hold hold_stored says; here without): -EEXIST, or why not. Content only
 * scopes held is named by this, its first main-mount publisher: never by the tenant that
 * published it in its view (the attack: "totally-legit", publisher 4701, as the operator saw
 * it). t->lock and stg->lock held. */
static int hold_existing(struct sfs_tree *t, const struct sfs_caller *c,
                         struct sfs_staging *stg, struct snap_object *existing, bool hold_stored)
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

/* The audit line of a publish: the staging name renamed to its digest, with the scope of the
 * view it went through (none on the main mount). */
static void audit_publish(const struct sfs_tree *t, const struct sfs_caller *c,
                          const char *newname, const char *name, uint64_t size)
{
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = "publish",
                                             .op = "rename",
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = newname,
                                             .name = name,
                                             .size = size,
                                             .scope = t->scope ? t->scope->name : NULL,
                                     });
}

/* --store: the bytes a scope's view publishes, durably, before anything is answered;
 * untitled (the name is the scope's own, kept in its file). The store's lock is held. */
static int scope_persist_new(struct sfs_ocistore *os, struct sfs_staging *stg,
                             const struct snap_digest *d, const struct timespec *now)
{
        struct sfs_ocistore_meta meta = { .unheld = true, .created = *now };
        int r;

        pthread_mutex_lock(&stg->lock);
        r = sfs_ocistore_add(os, d, stg->buf ? (const void *)stg->buf : "", stg->len, &meta);
        pthread_mutex_unlock(&stg->lock);
        return r;
}

/* The object a scope's publish grants, with a reference for the grant in *obj: *existing
 * (looked up before; its reference becomes the grant's, and *existing is NULL after), or
 * the staged bytes put in the store as new content, held by no uid, charged through claim.
 * 0, or -errno (nothing taken). t->lock and stg->lock held. */
static int scope_take_object(struct sfs_tree *t, struct sfs_staging *stg,
                             const struct snap_digest *d, const struct timespec *now,
                             struct snap_claim *claim, struct snap_object **existing,
                             struct snap_object **obj)
{
        int r;

        if (*existing) {
                /* The lookup's reference becomes the grant's. Detached meanwhile (no
                 * --store, whose lock keeps the index still): published below as new. */
                r = snap_store_grant(t->store, *existing);
                if (r == 0)
                        *obj = *existing;
                else
                        snap_store_release(t->store, *existing);
                *existing = NULL;
                if (r == 0)
                        return 0;
        }
        r = snap_store_put(t->store,
                           &(struct snap_put){
                                   .data = stg->buf ? (const void *)stg->buf : "",
                                   .len = stg->len,
                                   .owned = stg->buf,
                                   .digest = d,
                                   /* The store's own number: the node's is the view's
                                    * (sfs_tree_alloc_ino). */
                                   .reserved = stg->len,
                                   /* Named in the scope's grant alone. */
                                   .publisher_uid = (uint32_t)t->cfg.owner_uid,
                                   .name = NULL,
                                   .created = now,
                                   .unheld = true,
                                   .grants = 1,
                                   .claim = claim,
                           },
                           obj);
        if (r == 0) {
                /* The new object's reference is its publication's; the grant and the node
                 * take one each. */
                snap_store_ref(t->store, *obj);
                sfs_staging_handed_over_locked(stg);
        } else if (r == 1) {
                /* Published meanwhile (no --store): its reference is the grant's. It is
                 * indexed (the put found it under the store's lock), so the grant can only
                 * fail if it goes again at once: then this publish loses the race and says
                 * so. */
                r = snap_store_grant(t->store, *obj) == 0 ? 0 : -EAGAIN;
                if (r < 0) {
                        snap_store_release(t->store, *obj);
                        *obj = NULL;
                }
        }
        return r;
}

/* Decide before writing: a scope deleted meanwhile, granted here already (EEXIST), no room
 * for one more grant (ENOSPC), the scope's limits (EDQUOT), a read-only tree (EACCES). r is
 * the hash's verdict, returned first. The staged length in *len, the scope's save hook in
 * *save and *save_ctx. Takes t->lock. */
static int scope_decide(struct sfs_tree *t, struct sfs_staging *stg,
                        const struct sfs_scope_op *op, int r, uint64_t *len,
                        int (**save)(void *ctx, const struct sfs_scope_op *op), void **save_ctx)
{
        tree_lock(t);
        *save = t->scope->save;
        *save_ctx = t->scope->save_ctx;
        pthread_mutex_lock(&stg->lock);
        sfs_staging_fit_locked(stg);
        *len = stg->len;
        pthread_mutex_unlock(&stg->lock);
        if (r == 0 && t->cfg.read_only)
                r = -EACCES;
        if (r == 0)
                r = sfs_scope_check_locked(t, op);
        if (r == 0)
                r = scope_quota(t, *len);
        tree_unlock(t);
        return r;
}

/* A refused publish undone outside the tree's lock: the lookup's reference (NULL: none), the
 * room claimed, the bytes --store took (stored: not published after all), the store's lock. */
static void publish_undo(struct sfs_tree *t, const struct snap_digest *d,
                               struct snap_object *existing, struct snap_claim *claim,
                               bool stored)
{
        struct sfs_ocistore *os = t->cfg.ocistore;

        snap_store_release(t->store, existing);
        snap_store_unclaim(t->store, claim);
        if (stored)
                sfs_ocistore_remove(os, d);
        if (os)
                sfs_ocistore_unlock(os);
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

/* The node the kernel has for the name is the snapshot obj now (a reference of its own),
 * under its inode number; its staging goes. Called with t->lock and the staging's lock
 * held, returns with both released. */
static void scope_node_becomes_snapshot(struct sfs_tree *t, struct sfs_node *n,
                                        struct snap_object *obj, const struct snap_digest *d)
{
        struct sfs_staging *stg = n->stg;

        snap_store_ref(t->store, obj);
        sfs_stage_remove(t, n, false);
        n->obj = obj;
        sfs_scope_node_refresh(n, sfs_scope_grant_of(t, d));
        __atomic_store_n(&n->kind, SFS_KIND_SNAPSHOT, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&stg->lock);
        n->stg = NULL;
        sfs_staging_free(stg);
        sfs_touch_root(t);
        tree_unlock(t);
}

/* Publishing in a scope's view (docs/design.md, "Scopes"): what is published there is
 * granted to that scope alone, held by no uid, counted against the scope's limits. Every
 * answer is the one the scope would get if nothing else existed: content already granted
 * here is EEXIST; content another scope (or the main mount) has is published here like new
 * content (0), its room decided as if it were new, so nothing tells one scope what another
 * holds. The staging node becomes the snapshot under its own inode number, the one the kernel
 * already has for the name. r is the hash's verdict; the rest as sfs_tree_rename. */
static int scope_publish(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                         const char *name, const char *newname, int r,
                         const struct snap_digest *d, const struct timespec *now,
                         const char *reason, struct sfs_node **published)
{
        struct sfs_ocistore *os = t->cfg.ocistore;
        struct sfs_staging *stg = n->stg;
        struct snap_object *obj = NULL, *existing = NULL;
        struct snap_claim claim = { 0 };
        struct sfs_scope_effects fx = { 0 };
        struct sfs_scope_op op = {
                .kind = SFS_SCOPE_PUBLISH,
                .has_digest = true,
                .digest = *d,
                .uid = (uint32_t)c->uid,
                .name = stg->name,
                .created = *now,
                .ino = n->ino,
        };
        int (*save)(void *ctx, const struct sfs_scope_op *op);
        void *save_ctx;
        bool stored = false, store_full = false;
        uint64_t len;

        if (os)
                sfs_ocistore_lock(os);
        r = scope_decide(t, stg, &op, r, &len, &save, &save_ctx);
        if (r == 0)
                r = snap_store_claim_kept(t->store, t->budget.keep, len, len, &claim);
        if (r == 0)
                existing = snap_store_lookup(t->store, d);
        if (r == 0 && !existing && os) {
                r = scope_persist_new(os, stg, d, now);
                stored = r == 0;
                /* The disk is full, not the scope's limit: said so, as ENOSPC. */
                if (r < 0 && sfs_ocistore_full(os)) {
                        r = -ENOSPC;
                        reason = SFS_REFUSAL_STORE_FULL;
                        store_full = true;
                }
        }
        /* The scope's file says it is granted before it is. */
        if (r == 0 && save)
                r = save(save_ctx, &op);

        tree_lock(t);
        n->pins--;
        /* Granted here meanwhile through the control channel (EEXIST), or no room for one
         * more grant: refused before the store takes the bytes. */
        if (r == 0)
                r = sfs_scope_check_locked(t, &op);
        pthread_mutex_lock(&stg->lock);
        if (r == 0)
                r = scope_take_object(t, stg, d, now, &claim, &existing, &obj);
        if (r == 0)
                r = scope_grant_object(t, &op, &obj, &fx);
        if (r < 0) {
                stg->publishing = false;
                if (store_full)
                        sfs_staging_set_refusal_locked(stg, SFS_REFUSAL_STORE_FULL);
                pthread_mutex_unlock(&stg->lock);
                tree_unlock(t);
                publish_undo(t, d, existing, &claim, stored);
                sfs_scope_effects_free(&fx);
                return publish_refused(t, c, name, newname, -r, reason);
        }
        scope_node_becomes_snapshot(t, n, obj, d);
        /* Content that was there already: its room was only asked for. */
        snap_store_unclaim(t->store, &claim);
        if (os)
                sfs_ocistore_unlock(os);
        sfs_scope_effects_free(&fx);

        audit_publish(t, c, newname, name, len);
        *published = n;
        return 0;
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

/* The object a publish for a scope grants: the one published already (*fresh false), or a
 * new one held by no uid and granted to nothing yet (*fresh, its room claimed first, its blob
 * in --store first, *stored). A reference of the caller's either way. No lock held. */
static int scope_object(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_staging *stg,
                        const struct snap_digest *d, const struct timespec *now,
                        struct snap_object **obj, bool *fresh, bool *stored)
{
        /* --runtime-store (RAM), never --store: a scope's content never reaches a disk. */
        struct sfs_ocistore *os = t->cfg.runtime;
        struct snap_claim claim = { 0 };
        int r = 0;

        if (os)
                sfs_ocistore_lock(os);
        *obj = snap_store_lookup(t->store, d);
        /* The staging file keeps its own reservation until it is freed: room for a second
         * copy is claimed (the bytes are copied, so a refused grant leaves it as it was). */
        if (!*obj)
                r = snap_store_claim_unheld(t->store, stg->len, 0, &claim);
        pthread_mutex_lock(&stg->lock);
        if (r == 0 && !*obj && os) {
                struct sfs_ocistore_meta meta = { .unheld = true, .created = *now };
                meta.title = sfs_staging_name_kept(stg->name) ? stg->name : NULL;
                r = sfs_ocistore_add(os, d, stg->buf ? (const void *)stg->buf : "", stg->len,
                                     &meta);
                *stored = r == 0;
        }
        if (r == 0 && !*obj) {
                r = snap_store_put(t->store,
                                   &(struct snap_put){
                                           .data = stg->buf ? (const void *)stg->buf : "",
                                           .len = stg->len,
                                           .digest = d,
                                           .publisher_uid = (uint32_t)c->uid,
                                           .name = sfs_staging_name_kept(stg->name)
                                                           ? stg->name
                                                           : NULL,
                                           .created = now,
                                           .unheld = true,
                                           .claim = &claim,
                                   },
                                   obj);
                /* 0: the put's reference is its publication's; the caller takes its own. 1:
                 * published meanwhile (without --store), a reference taken. */
                *fresh = r == 0;
                if (r == 0)
                        snap_store_ref(t->store, *obj);
                r = r == 1 ? 0 : r;
        }
        pthread_mutex_unlock(&stg->lock);
        if (r < 0 && *stored)
                sfs_ocistore_remove(os, d);
        if (os)
                sfs_ocistore_unlock(os);
        snap_store_unclaim(t->store, &claim);
        return r;
}

/* Publishing for a scope through the main mount (SFS_XATTR_FOR_SCOPE: `snapfs put --scope`):
 * the snapshot is the scope's alone, as what the scope publishes in its view is: held by no
 * uid (not listed on the main mount, no hold of the publisher's left behind), granted to the
 * scope (an entry moved to it), and collected with its last grant. The attack it stops: put
 * --scope took the publisher's hold, so every rotated token stayed listed, readable on the
 * main mount and kept in --store until someone removed it by hand. The rest as
 * sfs_tree_rename; r is the hash's verdict. */
static int publish_for_scope(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                             const char *name, const char *newname, int r,
                             const struct snap_digest *d, const struct timespec *now,
                             const char *reason, struct sfs_node **published)
{
        struct sfs_staging *stg = n->stg;
        struct snap_object *obj = NULL;
        struct sfs_grant_hook hook;
        char scope[SFS_STAGING_NAME_MAX + 1], entry[SFS_STAGING_NAME_MAX + 1];
        bool fresh = false, stored = false;
        uint64_t len;

        tree_lock(t);
        hook = t->grant_hook;
        pthread_mutex_lock(&stg->lock);
        sfs_staging_fit_locked(stg);
        len = stg->len;
        memcpy(scope, stg->for_scope, sizeof(scope));
        memcpy(entry, stg->for_entry, sizeof(entry));
        pthread_mutex_unlock(&stg->lock);
        tree_unlock(t);
        if (r == 0 && !sfs_may_control(&t->cfg, c))
                r = -EACCES;
        if (r == 0 && !hook.grant)
                r = -ENOENT;
        if (r == 0)
                r = scope_object(t, c, stg, d, now, &obj, &fresh, &stored);
        if (r == 0)
                r = hook.grant(hook.ctx, c, scope, d, entry[0] ? entry : NULL);
        if (r < 0 && fresh)
                unpublish_fresh(t, obj, stored);

        tree_lock(t);
        n->pins--;
        pthread_mutex_lock(&stg->lock);
        if (r < 0 || !fresh) {
                /* Refused, or content published already, granted now: the caller binds to it
                 * (EEXIST, as any publish of published content) and removes its file. */
                if (r == -ENOENT && !reason)
                        sfs_staging_set_refusal_locked(stg, "no-such-scope");
                stg->publishing = false;
                pthread_mutex_unlock(&stg->lock);
                tree_unlock(t);
                snap_store_release(t->store, obj);
                return publish_refused(t, c, name, newname, r < 0 ? -r : EEXIST, reason);
        }
        /* The node the kernel has for the name is the snapshot now, with our reference. */
        sfs_stage_remove(t, n, false);
        n->obj = obj;
        __atomic_store_n(&n->kind, SFS_KIND_SNAPSHOT, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&stg->lock);
        n->stg = NULL;
        sfs_staging_free(stg);
        /* Revoked already (a rotation raced this reply): the kernel's node keeps nothing. */
        if (!snap_store_indexed(t->store, obj)) {
                n->revoked = true;
                sfs_node_drop_content(t, n);
        }
        sfs_touch_root(t);
        tree_unlock(t);
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = "publish",
                                             .op = "rename",
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = newname,
                                             .name = name,
                                             .size = len,
                                             .scope = scope,
                                     });
        *published = n;
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

/* --store, its lock held: when r (the verdict so far) is 0, the publish decided (decide) and
 * then written, the caller's hold on *existing (*hold_stored) or the new bytes (*stored).
 * Only what was admitted is written: a refused publish leaves the disk as it was (the
 * attack: a uid past its limit made every refused publish write and fsync its blob, the
 * manifest and index.json, then remove them). 0 or -errno. */
static int decide_and_persist(struct sfs_tree *t, const struct sfs_caller *c,
                              struct sfs_staging *stg, int r, const struct snap_digest *d,
                              const struct timespec *now, struct snap_object **existing,
                              struct snap_claim *claim, bool *stored, bool *hold_stored)
{
        struct sfs_ocistore *os = t->cfg.ocistore;

        if (r == 0) {
                tree_lock(t);
                r = decide(t, c, stg, d, existing, claim);
                tree_unlock(t);
        }
        if (r == 0 && *existing) {
                r = persist_holders(t, os, *existing, (uint32_t)c->uid, true,
                                    adopted_title(t, *existing, stg));
                *hold_stored = r == 0;
        } else if (r == 0) {
                r = persist_new(os, stg, d, (uint32_t)c->uid, now);
                *stored = r == 0;
        }
        return r == 1 ? 0 : r; /* 1: holds it already, nothing to write */
}

/* n's staged bytes put in the store as a new snapshot published by c (*obj), or, published
 * meanwhile (without --store), the one there in *existing for a hold: 0 or -errno. t->lock
 * and the staging's lock held. */
static int put_staged(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const struct snap_digest *d, const struct timespec *now,
                      struct snap_claim *claim, struct snap_object **obj,
                      struct snap_object **existing)
{
        struct sfs_staging *stg = n->stg;
        int r;

        sfs_staging_fit_locked(stg);
        r = snap_store_put(t->store,
                           &(struct snap_put){
                                   .data = stg->buf ? (const void *)stg->buf : "",
                                   .len = stg->len,
                                   .owned = stg->buf,
                                   .digest = d,
                                   .ino = n->ino,
                                   .reserved = stg->len,
                                   .publisher_uid = c->uid,
                                   .name = sfs_staging_name_kept(stg->name) ? stg->name : NULL,
                                   .created = now,
                                   .claim = claim->held ? claim : NULL,
                           },
                           obj);
        if (r == 1) { /* published meanwhile (without --store): a hold on it */
                *existing = *obj;
                *obj = NULL;
                r = 0;
        }
        return r;
}

/* The store took the staged buffer and the reservation: n is the snapshot obj now, its
 * staging gone. Called with t->lock and the staging's lock held, returns with both released:
 * the published size. */
static uint64_t staging_becomes_snapshot(struct sfs_tree *t, struct sfs_node *n,
                                         struct snap_object *obj)
{
        struct sfs_staging *stg = n->stg;
        uint64_t size = stg->len;

        sfs_staging_handed_over_locked(stg);
        become_snapshot(t, n, obj);
        pthread_mutex_unlock(&stg->lock);
        n->stg = NULL;
        sfs_staging_free(stg);
        sfs_touch_root(t);
        tree_unlock(t);
        return size;
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

int sfs_tree_rename(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, struct sfs_node *newparent, const char *newname,
                    unsigned flags, struct sfs_node **published)
{
        struct snap_digest target, actual;
        struct snap_object *obj = NULL, *existing = NULL;
        struct snap_claim claim = { 0 };
        struct sfs_staging *stg;
        struct sfs_node *n = NULL;
        struct sfs_ocistore *os = t->cfg.ocistore;
        const char *reason = NULL;
        bool stored = false, hold_stored = false, store_full = false, for_scope;
        struct timespec now;
        uint64_t size;
        int r;

        tree_lock(t);
        r = publish_begin(t, c, parent, name, newparent, newname, flags, &target, &n);
        tree_unlock(t);
        if (r == -ENOENT || r == -ENOTDIR)
                return r;
        if (r == -EPERM || r == -EACCES)
                return sfs_refused(t, c, "refused", "rename", name, newname, -r);
        if (r < 0)
                return publish_refused(t, c, name, newname, -r, reason);

        stg = n->stg;
        r = verify_staged(t, stg, &target, &actual, &reason, &for_scope);
        clock_gettime(CLOCK_REALTIME, &now);
        if (t->scope)
                return scope_publish(t, c, n, name, newname, r, &actual, &now, reason, published);
        if (for_scope)
                return publish_for_scope(t, c, n, name, newname, r, &actual, &now, reason,
                                         published);
        if (os) {
                /* Held until the snapshot is in the tree: publishes and unlinks of a store
                 * reach the disk in the order the tree sees them, and what was decided below
                 * still holds when it is done. Outermost lock. */
                sfs_ocistore_lock(os);
                r = decide_and_persist(t, c, stg, r, &actual, &now, &existing, &claim, &stored,
                                       &hold_stored);
                /* The disk is full, not a limit: said so, as ENOSPC from the store. */
                if (r < 0 && sfs_ocistore_full(os)) {
                        r = -ENOSPC;
                        reason = SFS_REFUSAL_STORE_FULL;
                        store_full = true;
                }
        }

        tree_lock(t);
        n->pins--;
        pthread_mutex_lock(&stg->lock);
        if (r == 0 && !os)
                existing = snap_store_lookup(t->store, &target);
        if (r == 0 && !existing)
                r = put_staged(t, c, n, &actual, &now, &claim, &obj, &existing);
        if (r == 0 && existing)
                r = hold_existing(t, c, stg, existing, hold_stored);
        if (existing)
                snap_store_release(t->store, existing);
        if (r < 0) {
                stg->publishing = false;
                if (store_full)
                        sfs_staging_set_refusal_locked(stg, SFS_REFUSAL_STORE_FULL);
                pthread_mutex_unlock(&stg->lock);
                tree_unlock(t);
                publish_undo(t, &actual, NULL, &claim, stored);
                return publish_refused(t, c, name, newname, -r, reason);
        }
        size = staging_becomes_snapshot(t, n, obj);
        if (os)
                sfs_ocistore_unlock(os);

        audit_publish(t, c, newname, name, size);
        *published = n;
        announce_published(t, &actual);
        return 0;
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
