/* SPDX-License-Identifier: MIT */
/* A scope's tree and its grants (scope.h). Every change is first planned (struct plan, under
 * the tree's lock): what it adds, moves and removes, or why it is refused. The same plan
 * serves the scope's file (written with the change in it) and the change itself, so what is
 * persisted is exactly what is then done. */
#include "fs/tree/scope.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/binding.h"
#include "snapshot/name.h"
#include "fs/base/inostate.h"
#include "fs/tree/tree-internal.h"
#include "common/util.h"

/* What a change does to the table. */
struct plan {
        struct sfs_grant *target;       /* the grant of op's digest, if there is one */
        bool add_target;                /* a new grant of op's digest */
        bool target_plain, target_published; /* the target's flags afterwards */
        bool remove_target;             /* the target leaves the view */
        struct sfs_grant_entry *entry;  /* the entry op names, if it exists */
        bool add_entry, remove_entry;
        struct sfs_grant *old;          /* a moved or removed entry's former target */
        bool remove_old;                /* ... which leaves the view with it */
        bool remove_entries;            /* every entry naming the target goes (revoke) */
        bool noop;                      /* nothing changes */
};

void sfs_scope_default_limits(struct sfs_tree *main, struct sfs_scope_limits *out)
{
        struct sfs_tree_config cfg;

        sfs_tree_get_config(main, &cfg);
        *out = (struct sfs_scope_limits){
                .max_snapshots = cfg.max_uid_snapshots,
                .max_bytes = cfg.max_uid_bytes,
                .max_staging = cfg.max_staging,
                .max_staging_bytes = cfg.max_staging_bytes,
        };
}

int sfs_tree_new_scope(struct sfs_tree *main, const struct sfs_scope_spec *spec,
                       struct sfs_tree **out)
{
        struct sfs_tree *t;
        int r;

        if (!spec->name || !snap_name_valid(spec->name) || !spec->limits.max_snapshots ||
            !spec->limits.max_bytes || !spec->limits.max_staging ||
            !spec->limits.max_staging_bytes || spec->limits.max_staging > UINT32_MAX ||
            spec->limits.min_bytes > spec->limits.max_bytes)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->scope = calloc(1, sizeof(*t->scope));
        if (!t->scope) {
                free(t);
                return -ENOMEM;
        }
        snprintf(t->scope->name, sizeof(t->scope->name), "%s", spec->name);
        t->scope->users = spec->users;
        t->scope->limits = spec->limits;
        t->scope->publish = spec->publish;
        t->scope->save = spec->save;
        t->scope->save_ctx = spec->save_ctx;
        sfs_grants_init(&t->scope->grants, SFS_FIRST_INO);
        t->scope->max_grants = SFS_SCOPE_GRANTS_MAX;
        t->scope->next_ino = SFS_FIRST_INO;

        /* The daemon's configuration (audit, --store, --trust-key, the global limits, the
         * owner), with the scope's users and staging limits in place of the roles. */
        sfs_tree_get_config(main, &t->cfg);
        t->cfg.scope_users = &t->scope->users;
        t->cfg.read_only = !spec->publish;
        t->cfg.unlink_own = false;
        t->cfg.readers = (struct value_uid_list){ .any = false };
        t->cfg.publishers = (struct value_uid_list){ .any = false };
        t->cfg.dev = t->cfg.read_view_dev = 0;
        t->cfg.max_staging = (unsigned)spec->limits.max_staging;
        t->cfg.max_staging_bytes = spec->limits.max_staging_bytes;
        /* What the scope publishes goes to --runtime-store (RAM), never to --store (a disk);
         * without one it lives in memory alone. */
        t->cfg.ocistore = t->cfg.runtime;
        t->store = main->store;
        t->scope->main = main;
        t->reserve_objects = main->reserve_objects;
        t->reserve_bytes = main->reserve_bytes;
        r = snap_store_keep_new(t->store, spec->limits.min_bytes, spec->restored,
                                &t->budget.keep);
        if (r == 0 && (r = sfs_tree_init_common(t)) < 0)
                snap_store_keep_free(t->store, t->budget.keep);
        if (r < 0) {
                free(t->scope);
                free(t);
                return r;
        }
        *out = t;
        return 0;
}

void sfs_scope_get_room(struct sfs_tree *main, struct sfs_scope_room *out)
{
        struct snap_store_stats st;
        uint64_t held, keep;

        snap_store_get_stats(main->store, &st);
        held = st.bytes + st.reserved;
        keep = main->reserve_bytes + st.kept;
        *out = (struct sfs_scope_room){
                .max_bytes = main->cfg.max_bytes,
                .reserve_bytes = main->reserve_bytes,
                .minimums = st.minimums,
                .free = main->cfg.max_bytes > held + keep ? main->cfg.max_bytes - held - keep : 0,
        };
}

void sfs_scope_set_max_grants(struct sfs_tree *t, size_t max)
{
        tree_lock(t);
        t->scope->max_grants = max < SFS_SCOPE_GRANTS_MAX ? max : SFS_SCOPE_GRANTS_MAX;
        tree_unlock(t);
}

void sfs_scope_disarm(struct sfs_tree *t)
{
        tree_lock(t);
        t->cfg.read_only = true;
        /* Its minimum is kept for nobody now: what its view still holds open counts as used. */
        snap_store_keep_end(t->store, t->budget.keep);
        t->scope->save = NULL;
        t->scope->save_ctx = NULL;
        tree_unlock(t);
}

uint64_t sfs_scope_alloc_ino(struct sfs_tree *t)
{
        uint64_t ino;

        tree_lock(t);
        ino = sfs_tree_alloc_ino(t);
        tree_unlock(t);
        return ino;
}

/* ---- planning ---- */

/* An entry name (snapshot/name.h): not a digest in any case (the view's digests and entries
 * share one directory, and a digest name always means the digest: "ABC..." moved to other
 * content was served under a name a case-folding reader takes for the digest), not an option
 * ("-rf"). */
static bool entry_name_valid(const char *name)
{
        return snap_entry_name_valid(name);
}

/* Whether d names a published snapshot (a lookup of the store). t->lock held. */
static bool published(struct sfs_tree *t, const struct snap_digest *d)
{
        struct snap_object *obj = snap_store_lookup(t->store, d);

        snap_store_release(t->store, obj);
        return obj != NULL;
}

static size_t n_grants(const struct sfs_tree *t)
{
        return t->scope->grants.n_digests + t->scope->grants.n_entries;
}

/* Whether gr leaves the view with its one entry: nothing else grants it. */
static bool only_named_once(const struct sfs_grant *gr)
{
        return !gr->plain && !gr->published && gr->entries == 1;
}

/* Whether gr is a grant of its own (by digest, or published here), besides its entries. */
static bool granted_by_digest(const struct sfs_grant *gr)
{
        return gr->plain || gr->published;
}

/* The plan of op: 0, or why it is refused. t->lock held. */
static int plan_op(struct sfs_tree *t, const struct sfs_scope_op *op, struct plan *p)
{
        struct sfs_grants *g = &t->scope->grants;
        size_t added = 0;

        *p = (struct plan){ 0 };
        if (op->entry && !entry_name_valid(op->entry))
                return -EINVAL;
        if (op->entry)
                p->entry = sfs_grants_entry(g, op->entry);
        if (op->has_digest) {
                p->target = sfs_grants_find(g, &op->digest);
                if (p->target) {
                        p->target_plain = p->target->plain;
                        p->target_published = p->target->published;
                }
        }
        switch (op->kind) {
        case SFS_SCOPE_GRANT:
                if (!op->has_digest)
                        return -EINVAL;
                if (!p->target && !published(t, &op->digest))
                        return -ENOENT;
                p->add_target = !p->target;
                added += p->add_target;
                if (!op->entry) {
                        p->noop = p->target && p->target->plain;
                        p->target_plain = true;
                        break;
                }
                if (!p->entry) {
                        p->add_entry = true;
                        added++;
                } else if (p->entry->target != p->target) {
                        /* A move: the old digest leaves the view when nothing else names it. */
                        p->old = p->entry->target;
                        p->remove_old = only_named_once(p->old);
                } else {
                        p->noop = true;
                }
                break;
        case SFS_SCOPE_REVOKE:
                if (op->entry) {
                        if (!p->entry)
                                return -ENOENT;
                        p->remove_entry = true;
                        p->old = p->entry->target;
                        p->remove_old = only_named_once(p->old);
                        break;
                }
                if (!op->has_digest || !p->target)
                        return -ENOENT;
                p->remove_target = p->remove_entries = true;
                break;
        case SFS_SCOPE_PUBLISH:
                if (!op->has_digest || p->target)
                        return -EEXIST;
                p->add_target = true;
                p->target_published = true;
                added++;
                break;
        case SFS_SCOPE_UNPUBLISH:
                if (!op->has_digest || !p->target)
                        return -ENOENT;
                if (!p->target->published)
                        return -EPERM;
                p->target_published = false;
                p->remove_target = !p->target->plain && p->target->entries == 0;
                break;
        }
        if (added && n_grants(t) + added > t->scope->max_grants)
                return -ENOSPC;
        return 0;
}

/* ---- the scope's file ---- */

void sfs_scope_grants_free(struct sfs_scope_grants *g)
{
        free(g->grants);
        free(g->entries);
        *g = (struct sfs_scope_grants){ 0 };
}

/* One grant's record, its flags as given; its staging name kept when published. */
static void grant_record(struct sfs_grant_record *rec, const struct snap_digest *d, uint64_t ino,
                         bool plain, bool pub, uint32_t uid, const char *name,
                         const struct timespec *created)
{
        *rec = (struct sfs_grant_record){ .digest = *d, .ino = ino, .plain = plain,
                                          .published = pub, .uid = uid, .created = *created };
        if (pub && name)
                snprintf(rec->name, sizeof(rec->name), "%s", name);
}

static void entry_record(struct sfs_scope_grants *out, const char *name,
                         const struct snap_digest *d)
{
        struct sfs_entry_record *rec = &out->entries[out->n_entries++];

        snprintf(rec->name, sizeof(rec->name), "%s", name);
        rec->digest = *d;
}

/* The grant that op adds, as plan p has it: the number apply gives it (op's, or the next of
 * the view's), its publisher and time. */
static void added_grant(struct sfs_tree *t, const struct sfs_scope_op *op, const struct plan *p,
                        struct sfs_grant_record *rec)
{
        bool pub = op->kind == SFS_SCOPE_PUBLISH;
        struct timespec now;

        clock_gettime(CLOCK_REALTIME, &now);
        grant_record(rec, &op->digest, op->ino ? op->ino : t->scope->next_ino, p->target_plain,
                     pub, pub ? op->uid : (uint32_t)t->cfg.owner_uid, op->name,
                     pub ? &op->created : &now);
}

/* The records of the table with plan p of op applied, in listing order (a new name last),
 * into out (room for every one). */
static void build_records(struct sfs_tree *t, const struct sfs_scope_op *op, const struct plan *p,
                          struct sfs_scope_grants *out)
{
        const struct sfs_grants *g = &t->scope->grants;

        for (size_t i = 0; i < g->n_listed; i++) {
                const struct sfs_listed *l = &g->listed[i];
                if (l->grant) {
                        const struct sfs_grant *gr = l->grant;
                        bool plain = gr->plain, pub = gr->published;
                        if ((gr == p->target && p->remove_target) ||
                            (gr == p->old && p->remove_old))
                                continue;
                        if (gr == p->target && op) {
                                plain = p->target_plain;
                                pub = p->target_published;
                        }
                        grant_record(&out->grants[out->n_grants++], &gr->digest, gr->ino, plain,
                                     pub, gr->uid, gr->name, &gr->created);
                } else {
                        const struct sfs_grant_entry *e = l->entry;
                        const struct snap_digest *d = &e->target->digest;
                        if ((e == p->entry && p->remove_entry) ||
                            (p->remove_entries && e->target == p->target))
                                continue;
                        if (e == p->entry && op->kind == SFS_SCOPE_GRANT)
                                d = &op->digest; /* moved */
                        entry_record(out, e->name, d);
                }
        }
        if (p->add_target)
                added_grant(t, op, p, &out->grants[out->n_grants++]);
        if (p->add_entry)
                entry_record(out, op->entry, &op->digest);
}

int sfs_scope_get_grants(struct sfs_tree *t, const struct sfs_scope_op *op,
                         struct sfs_scope_grants *out)
{
        struct plan p = { 0 };
        int r = 0;

        *out = (struct sfs_scope_grants){ 0 };
        tree_lock(t);
        if (op)
                r = plan_op(t, op, &p);
        /* Room for the table and what op adds: one grant, one entry. */
        if (r == 0 &&
            (!(out->grants = calloc(t->scope->grants.n_digests + 1, sizeof(*out->grants))) ||
             !(out->entries = calloc(t->scope->grants.n_entries + 1, sizeof(*out->entries)))))
                r = -ENOMEM;
        if (r == 0)
                build_records(t, op, &p, out);
        /* Past every number given so far, the one a grant without its own takes included. */
        out->next_ino = t->scope->next_ino + (op && p.add_target && !op->ino);
        tree_unlock(t);
        if (r < 0)
                sfs_scope_grants_free(out);
        return r;
}

/* ---- changes ---- */

void sfs_scope_effects_free(struct sfs_scope_effects *fx)
{
        free(fx->names);
        free(fx->gone);
        free(fx->inos);
        *fx = (struct sfs_scope_effects){ 0 };
}

void sfs_scope_effects_release(struct sfs_tree *t, struct sfs_scope_effects *fx)
{
        /* The main tree's lock is taken below: no tree's may be held (--store's may). */
        assert(!(sfs_locks_held & (1u << SFS_LOCK_TREE)));
        for (size_t i = 0; i < fx->n_gone; i++) {
                /* The owner may have looked the digest up on the main mount: that node's
                 * reference must not keep collected content alive either. */
                if (t->scope && t->scope->main)
                        sfs_tree_drop_collected(t->scope->main, fx->gone[i]);
                snap_store_release(t->store, fx->gone[i]);
        }
        fx->n_gone = 0;
}

/* gr is no longer published in the scope (unlinked, revoked): out of the scope's usage, or,
 * open in the view, kept in it until its last descriptor goes (sfs_handle_del): its memory
 * stays that long. The attack: publish, keep a descriptor, unlink, again: the scope showed
 * 0 used while it held most of the daemon, and another scope got ENOSPC. t->lock held. */
static void uncount(struct sfs_tree *t, struct sfs_grant *gr)
{
        struct sfs_node *n = sfs_node_find(t, gr->ino);

        if (n && node_kind(n) == SFS_KIND_SNAPSHOT && n->obj == gr->obj && n->pins &&
            !n->held_in_usage) {
                n->held_in_usage = true;
                return;
        }
        sfs_scope_count(t, false, gr->obj->size);
}

/* Takes gr out of the view: its name goes stale, its node is revoked (descriptors open on it
 * keep reading), its store grant goes, and with it the snapshot when that was its last
 * reference (collected by the caller from fx). Room for fx's arrays was made. */
static void drop_grant(struct sfs_tree *t, struct sfs_grant *gr, struct sfs_scope_effects *fx)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *n;

        sfs_grants_remove(&t->scope->grants, gr);
        snap_digest_to_hex(&gr->digest, hex);
        snprintf(fx->names[fx->n_names++], SNAP_NAME_MAX + 1, "%s", hex);
        n = sfs_node_find(t, gr->ino);
        if (n && node_kind(n) == SFS_KIND_SNAPSHOT) {
                n->revoked = true;
                /* Nothing open on it: its bytes go now, not when the kernel forgets it. */
                sfs_node_drop_content(t, n);
                fx->inos[fx->n_inos++] = gr->ino;
        }
        if (gr->published)
                uncount(t, gr);
        if (snap_store_ungrant(t->store, gr->obj) == 1) {
                /* Detached: its publication's reference goes now, as every other detach
                 * releases it; the grant's own is handed to the caller, who collects the
                 * snapshot from --store and releases that one. Kept, the publication's
                 * reference made every snapshot a scope unpublished or revoked last stay
                 * counted in the store for good: a scope could fill the daemon's global
                 * limits (ENOSPC for everyone) without ever passing its own. */
                snap_store_release(t->store, gr->obj);
                fx->gone[fx->n_gone++] = gr->obj;
        } else {
                snap_store_release(t->store, gr->obj);
        }
        free(gr->name);
        free(gr);
}

static void drop_entry(struct sfs_tree *t, struct sfs_grant_entry *e,
                       struct sfs_scope_effects *fx)
{
        sfs_grants_remove_entry(&t->scope->grants, e);
        fx->watches |= sfs_watches_moved(&t->watches, e->name, true);
        snprintf(fx->names[fx->n_names++], SNAP_NAME_MAX + 1, "%s", e->name);
        free(e);
}

static void fill_info(const struct sfs_grant *gr, const char *entry, struct sfs_grant_info *info)
{
        if (!info)
                return;
        *info = (struct sfs_grant_info){
                .digest = gr->digest,
                .size = gr->obj->size,
                .ino = gr->ino,
                .published = gr->published,
        };
        snprintf(info->entry, sizeof(info->entry), "%s", entry ? entry : "");
}

/* Room in fx for every name and object a change may report: the target, the old target and
 * every entry. */
static int make_room(struct sfs_tree *t, struct sfs_scope_effects *fx, size_t extra)
{
        size_t n = t->scope->grants.n_entries + 2 + extra;
        char(*names)[SNAP_NAME_MAX + 1];
        struct snap_object **gone;
        uint64_t *inos;

        names = realloc(fx->names, (fx->n_names + n) * sizeof(*names));
        if (!names)
                return -ENOMEM;
        fx->names = names;
        gone = realloc(fx->gone, (fx->n_gone + n) * sizeof(*gone));
        if (!gone)
                return -ENOMEM;
        fx->gone = gone;
        inos = realloc(fx->inos, (fx->n_inos + n) * sizeof(*inos));
        if (!inos)
                return -ENOMEM;
        fx->inos = inos;
        return 0;
}

int sfs_scope_check_locked(struct sfs_tree *t, const struct sfs_scope_op *op)
{
        struct plan p;
        int r = plan_op(t, op, &p);

        /* The table's room for what apply adds, taken now. */
        if (r == 0)
                r = sfs_grants_reserve(&t->scope->grants, 1, 1);
        return r;
}

/* op's plan (p) and what applying it needs, taken before anything changes: room in the
 * tables, the new grant (*gr, with its snapshot's reference and store grant in *obj when op
 * grants) and the new entry (*e), each NULL when the plan adds none. 0, or why op cannot
 * apply, nothing taken. t->lock held. */
static int prepare_op(struct sfs_tree *t, const struct sfs_scope_op *op, struct plan *p,
                      struct sfs_scope_effects *fx, struct snap_object **obj,
                      struct sfs_grant **gr, struct sfs_grant_entry **e)
{
        int r;

        *gr = NULL;
        *e = NULL;
        r = plan_op(t, op, p);
        if (r == 0)
                r = sfs_grants_reserve(&t->scope->grants, 1, 1);
        if (r == 0)
                r = make_room(t, fx, 0);
        if (r == 0 && p->add_entry && !(*e = calloc(1, sizeof(**e))))
                r = -ENOMEM;
        if (r == 0 && p->add_target && !(*gr = calloc(1, sizeof(**gr))))
                r = -ENOMEM;
        if (r == 0 && *gr && op->kind == SFS_SCOPE_PUBLISH && op->name &&
            !((*gr)->name = strdup(op->name)))
                r = -ENOMEM;
        if (r == 0 && *gr && op->kind == SFS_SCOPE_GRANT) {
                /* The grant's own reference and its store grant: a snapshot unpublished
                 * since the plan is absent. */
                *obj = snap_store_lookup(t->store, &op->digest);
                r = *obj ? snap_store_grant(t->store, *obj) : -ENOENT;
                if (r < 0)
                        snap_store_release(t->store, *obj);
        }
        if (r < 0) {
                if (*gr)
                        free((*gr)->name);
                free(*gr);
                free(*e);
        }
        return r;
}

/* The plan's target made what op says: the new grant gr inserted (of obj), or the one there
 * given its new flags. t->lock held. */
static void set_target(struct sfs_tree *t, const struct sfs_scope_op *op, struct plan *p,
                       struct sfs_grant *gr, struct snap_object *obj)
{
        if (gr) {
                gr->digest = op->digest;
                gr->obj = obj;
                gr->plain = p->target_plain;
                gr->published = op->kind == SFS_SCOPE_PUBLISH;
                if (gr->published) {
                        gr->ino = op->ino ? op->ino : t->scope->next_ino++;
                        gr->uid = op->uid;
                        gr->created = op->created;
                        sfs_scope_count(t, true, obj->size);
                } else {
                        gr->ino = op->ino ? op->ino : t->scope->next_ino++;
                        gr->uid = (uint32_t)t->cfg.owner_uid;
                        clock_gettime(CLOCK_REALTIME, &gr->created);
                }
                sfs_grants_insert(&t->scope->grants, gr);
                p->target = gr;
        } else if (p->target && !p->noop) {
                if (p->target->published && !p->target_published)
                        uncount(t, p->target);
                p->target->plain = p->target_plain;
                p->target->published = p->target_published;
                if (!p->target->published) {
                        free(p->target->name);
                        p->target->name = NULL;
                }
        }
}

int sfs_scope_apply_locked(struct sfs_tree *t, const struct sfs_scope_op *op,
                           struct snap_object *obj, struct sfs_grant_info *info,
                           struct sfs_scope_effects *fx)
{
        struct sfs_grants *g = &t->scope->grants;
        struct sfs_grant *gr;
        struct sfs_grant_entry *e;
        struct plan p;
        int r;

        r = prepare_op(t, op, &p, fx, &obj, &gr, &e);
        if (r < 0)
                return r;
        set_target(t, op, &p, gr, obj);
        if (e) {
                snprintf(e->name, sizeof(e->name), "%s", op->entry);
                e->target = p.target;
                sfs_grants_insert_entry(g, e);
        } else if (p.entry && op->kind == SFS_SCOPE_GRANT && p.old) {
                /* The rotation: one assignment under the tree's lock, so a lookup finds the
                 * old digest or the new one, never neither. */
                sfs_grants_retarget(g, p.entry, p.target);
                fx->watches |= sfs_watches_moved(&t->watches, p.entry->name, false);
                snprintf(fx->names[fx->n_names++], SNAP_NAME_MAX + 1, "%s", p.entry->name);
        }
        if (p.remove_entry)
                drop_entry(t, p.entry, fx);
        if (p.remove_entries)
                for (size_t i = g->n_entries; i-- > 0;)
                        if (g->entries[i]->target == p.target)
                                drop_entry(t, g->entries[i], fx);
        if (p.remove_old)
                drop_grant(t, p.old, fx);
        if (p.remove_target) {
                fill_info(p.target, NULL, info);
                drop_grant(t, p.target, fx);
                p.target = NULL;
        } else if (p.target) {
                fill_info(p.target, op->entry, info);
        }
        return 0;
}

int sfs_scope_apply(struct sfs_tree *t, const struct sfs_scope_op *op, struct sfs_grant_info *info,
                    struct sfs_scope_effects *fx)
{
        int r;

        if (!t->scope || op->kind == SFS_SCOPE_PUBLISH)
                return -EINVAL;
        tree_lock(t);
        r = sfs_scope_apply_locked(t, op, NULL, info, fx);
        if (r == 0)
                sfs_touch_root(t);
        tree_unlock(t);
        return r;
}

int sfs_scope_revoke_all(struct sfs_tree *t, struct sfs_scope_effects *fx)
{
        struct sfs_grants *g;
        int r;

        tree_lock(t);
        g = &t->scope->grants;
        r = make_room(t, fx, g->n_digests);
        if (r == 0) {
                while (g->n_entries)
                        drop_entry(t, g->entries[g->n_entries - 1], fx);
                while (g->n_digests)
                        drop_grant(t, g->digests[g->n_digests - 1], fx);
                sfs_touch_root(t);
        }
        tree_unlock(t);
        return r;
}

int sfs_scope_foreach_grant(struct sfs_tree *t,
                            int (*fn)(const struct sfs_grant_info *g, void *ctx), void *ctx)
{
        const struct sfs_grants *g;
        int r = 0;

        tree_lock(t);
        g = &t->scope->grants;
        for (size_t i = 0; r == 0 && i < g->n_listed; i++) {
                const struct sfs_listed *l = &g->listed[i];
                struct sfs_grant_info info;
                if (l->grant && !granted_by_digest(l->grant))
                        continue; /* only named by entries: they are its grants */
                fill_info(l->grant ? l->grant : l->entry->target, l->entry ? l->entry->name : NULL,
                          &info);
                r = fn(&info, ctx);
        }
        tree_unlock(t);
        return r;
}

void sfs_scope_get_usage(struct sfs_tree *t, struct sfs_scope_usage *u)
{
        tree_lock(t);
        *u = (struct sfs_scope_usage){
                .snapshots = t->scope->used_snapshots,
                .bytes = t->scope->used_bytes,
                .staging = t->staging_files,
                .staging_bytes = __atomic_load_n(&t->scope->staging_bytes, __ATOMIC_RELAXED),
                .grants = n_grants(t),
        };
        for (size_t i = 0; i < t->scope->grants.n_digests; i++)
                if (!granted_by_digest(t->scope->grants.digests[i]))
                        u->grants--; /* counted through its entries */
        tree_unlock(t);
}

/* ---- restoring a scope's file ---- */

/* One grant's record back in the table: 0, 1 when it is left out (warned), or an errno
 * (-EINVAL: its digest is there already). */
static int restore_grant(struct sfs_tree *t, const struct sfs_grant_record *rec,
                         void (*warn)(void *ctx, const char *what, const char *why), void *ctx)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_grant *gr;
        struct snap_object *obj;

        if (sfs_grants_find(&t->scope->grants, &rec->digest))
                return -EINVAL;
        obj = snap_store_lookup(t->store, &rec->digest);
        if (!obj) {
                snap_digest_to_hex(&rec->digest, hex);
                if (warn)
                        warn(ctx, hex, "granted, but its snapshot is no longer stored; left out");
                return 1;
        }
        gr = calloc(1, sizeof(*gr));
        if (!gr || (rec->published && rec->name[0] && !(gr->name = strdup(rec->name))) ||
            sfs_grants_reserve(&t->scope->grants, 1, 0) < 0 ||
            snap_store_grant(t->store, obj) < 0) {
                if (gr)
                        free(gr->name);
                free(gr);
                snap_store_release(t->store, obj);
                return -ENOMEM;
        }
        gr->digest = rec->digest;
        gr->obj = obj;
        gr->ino = rec->ino;
        gr->plain = rec->plain;
        gr->published = rec->published;
        gr->uid = rec->uid;
        gr->created = rec->created;
        if (gr->published) {
                sfs_scope_count(t, true, obj->size);
        }
        sfs_grants_insert(&t->scope->grants, gr);
        return 0;
}

static int restore_entry(struct sfs_tree *t, const struct sfs_entry_record *rec,
                         void (*warn)(void *ctx, const char *what, const char *why), void *ctx)
{
        struct sfs_grant_entry *e;
        struct sfs_grant *target;

        if (sfs_grants_entry(&t->scope->grants, rec->name))
                return -EINVAL;
        /* Written before the grammar refused it: left out, the rest of the scope back. */
        if (!entry_name_valid(rec->name)) {
                if (warn)
                        warn(ctx, rec->name, "an entry name the grammar no longer takes (a "
                             "digest's shape, or a leading '-'); left out");
                return 1;
        }
        target = sfs_grants_find(&t->scope->grants, &rec->digest);
        if (!target) {
                if (warn)
                        warn(ctx, rec->name, "an entry whose snapshot is no longer stored; left "
                             "out");
                return 1;
        }
        e = calloc(1, sizeof(*e));
        if (!e || sfs_grants_reserve(&t->scope->grants, 0, 1) < 0) {
                free(e);
                return -ENOMEM;
        }
        snprintf(e->name, sizeof(e->name), "%s", rec->name);
        e->target = target;
        sfs_grants_insert_entry(&t->scope->grants, e);
        return 0;
}

static int by_number(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* After a restore: the counter past every number recorded (and past next_ino, the file's),
 * a number for each grant a file of before had none for. Two grants under one number: the
 * file is not one this daemon wrote, -EINVAL. */
static int renumber(struct sfs_tree *t, uint64_t next_ino)
{
        struct sfs_grants *g = &t->scope->grants;
        _cleanup_free_ uint64_t *seen = calloc(g->n_digests + 1, sizeof(*seen));
        size_t n = 0;

        if (!seen)
                return -ENOMEM;
        if (next_ino > t->scope->next_ino)
                t->scope->next_ino = next_ino;
        for (size_t i = 0; i < g->n_digests; i++)
                if (g->digests[i]->ino) {
                        seen[n++] = g->digests[i]->ino;
                        if (g->digests[i]->ino >= t->scope->next_ino)
                                t->scope->next_ino = g->digests[i]->ino + 1;
                }
        qsort(seen, n, sizeof(*seen), by_number);
        for (size_t i = 1; i < n; i++)
                if (seen[i] == seen[i - 1])
                        return -EINVAL;
        for (size_t i = 0; i < g->n_listed; i++)
                if (g->listed[i].grant && !g->listed[i].grant->ino)
                        g->listed[i].grant->ino = t->scope->next_ino++;
        return 0;
}

int sfs_scope_restore(struct sfs_tree *t, const struct sfs_scope_grants *g,
                      void (*warn)(void *ctx, const char *what, const char *why), void *ctx,
                      struct sfs_scope_effects *fx)
{
        uint64_t kept;
        int r = 0;

        if (g->n_grants + g->n_entries > SFS_SCOPE_GRANTS_MAX)
                return -EINVAL;
        tree_lock(t);
        for (size_t i = 0; r >= 0 && i < g->n_grants; i++)
                r = restore_grant(t, &g->grants[i], warn, ctx);
        for (size_t i = 0; r >= 0 && i < g->n_entries; i++)
                r = restore_entry(t, &g->entries[i], warn, ctx);
        if (r >= 0)
                r = renumber(t, g->next_ino);
        /* Past what a predecessor handed out here (taken over), staging files included. */
        kept = sfs_inostate_space_next(t->cfg.inostate, sfs_tree_ino_space(t));
        if (r >= 0 && kept > t->scope->next_ino)
                t->scope->next_ino = kept;
        /* A digest only entries named, whose entries did not come back: not granted. */
        if (r >= 0)
                r = make_room(t, fx, t->scope->grants.n_digests);
        for (size_t i = t->scope->grants.n_digests; r >= 0 && i-- > 0;) {
                struct sfs_grant *gr = t->scope->grants.digests[i];
                if (!granted_by_digest(gr) && !gr->entries)
                        drop_grant(t, gr, fx);
        }
        tree_unlock(t);
        return r < 0 ? r : 0;
}
