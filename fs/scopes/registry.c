/* SPDX-License-Identifier: MIT */
/* The scope registry (registry.h): scopes by name, their lifecycle, their files in --store,
 * and their ties to a process's life. */
#include "fs/scopes/registry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/base/audit.h"
#include "fs/base/lockorder.h"
#include "fs/base/log.h"
#include "fs/store/ocistore.h"
#include "fs/config/options.h"
#include "fs/scopes/pidwatch.h"
#include "fs/scopes/scopefile.h"
#include "fs/scopes/viewpath.h"
#include "snapshot/store.h"
#include "common/array.h"
#include "common/util.h"

struct scope {
        uint64_t id;                 /* never reused: what the until-pid watcher reports */
        /* What its file keeps (the name, the view, the users, the limits, the until-pid);
         * file.grants unused: they are the tree's. */
        struct sfs_scopefile file;
        bool allow_other;
        struct sfs_tree *tree;
        struct sfs_view *view_h;     /* NULL: not mounted (it could not be at a start) */
        uint64_t dev;
        struct sfs_registry *reg;
        /* Grants (and their entries) of the scope's file whose snapshot was not stored at the
         * start: kept as written, in the file at every rewrite, until those bytes are
         * published again (dangling_published). */
        struct sfs_scope_grants dangling;
};

struct sfs_registry {
        pthread_mutex_t lock;
        struct sfs_registry_config cfg;
        struct scope **v;            /* by name */
        size_t n, cap;
        uint64_t next_id;
        struct sfs_pidwatch *pw;
        char boot_id[40];
        /* The daemon's own paths, resolved (own_path): what no view covers. */
        char *own[4];
};

static const char *const own_what[4] = { "the main mount", "the read view", "--store",
                                         "--runtime-store" };

/* A scope that is not there, and what to do (docs/design.md, "Every refusal says what to
 * do"): its name twice. */
#define NO_SCOPE "no scope named %s: snapfs scope ls lists the scopes; snapfs scope create %s " \
                 "--view PATH makes it"

/* -err, m (NULL: none) saying why. */
#define msg(m, err, ...) sfs_say((m) ? (m)->text : NULL, sizeof((m)->text), (err), __VA_ARGS__)

/* ---- the table ---- */

static int name_cmp(const void *key, const void *element)
{
        const struct scope *const *s = element;

        return strcmp(key, (*s)->file.name);
}

static size_t lower(const struct sfs_registry *r, const char *name)
{
        return lower_bound(name, r->v, r->n, sizeof(*r->v), name_cmp);
}

static struct scope *find(const struct sfs_registry *r, const char *name)
{
        size_t i = lower(r, name);

        return i < r->n && strcmp(r->v[i]->file.name, name) == 0 ? r->v[i] : NULL;
}

static struct scope *find_id(const struct sfs_registry *r, uint64_t id)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->v[i]->id == id)
                        return r->v[i];
        return NULL;
}

static struct scope *find_view(const struct sfs_registry *r, const char *view)
{
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->v[i]->file.view, view) == 0)
                        return r->v[i];
        return NULL;
}

static unsigned max_scopes(const struct sfs_registry *r)
{
        return r->cfg.max_scopes && r->cfg.max_scopes < SFS_MAX_SCOPES_LIMIT
                       ? r->cfg.max_scopes
                       : SFS_MAX_SCOPES_LIMIT;
}

static int room(struct sfs_registry *r)
{
        return ARRAY_GROW(r->v, r->cap, r->n + 1, 16);
}

static void insert(struct sfs_registry *r, struct scope *s)
{
        size_t i = lower(r, s->file.name);

        memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(r->v[0]));
        r->v[i] = s;
        r->n++;
}

static void take_out(struct sfs_registry *r, struct scope *s)
{
        size_t i = lower(r, s->file.name);

        if (i < r->n && r->v[i] == s) {
                memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(r->v[0]));
                r->n--;
        }
}

static void scope_free(struct scope *s)
{
        if (!s)
                return;
        sfs_tree_free(s->tree);
        sfs_scope_grants_free(&s->dangling);
        free(s->file.view);
        free(s);
}

/* ---- audit ---- */

static void audit(struct sfs_registry *r, const struct sfs_caller *c, const char *event,
                  const char *op, const char *scope, const struct snap_digest *d,
                  const char *entry, const char *view, int err, const char *reason)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        if (d)
                snap_digest_to_hex(d, hex);
        sfs_audit_emit(r->cfg.audit, &(struct sfs_audit_event){
                                             .event = event,
                                             .op = op,
                                             .uid = c ? c->uid : r->cfg.uid,
                                             .pid = c ? c->pid : getpid(),
                                             .digest = d ? hex : NULL,
                                             .scope = scope,
                                             .entry = entry,
                                             .view = view,
                                             .err = err,
                                             .reason = reason,
                                     });
}

void sfs_registry_audit_refused(struct sfs_registry *r, const struct sfs_caller *c,
                                const char *op, const char *scope, int err)
{
        audit(r, c, "refused", op, scope, NULL, NULL, NULL, err, NULL);
}

/* ---- a scope as the control channel reports it ---- */

void sfs_scope_info_clear(struct sfs_scope_info *s)
{
        if (!s)
                return;
        free(s->view);
        *s = (struct sfs_scope_info){ 0 };
}

void sfs_scope_infos_free(struct sfs_scope_info *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                sfs_scope_info_clear(&v[i]);
        free(v);
}

/* s as the control channel reports it (docs/design.md, "The control channel"): 0 or
 * -ENOMEM. Registry lock held. */
static int scope_info(struct scope *s, struct sfs_registry *r, struct sfs_scope_info *out)
{
        *out = (struct sfs_scope_info){
                .mounted = s->view_h && r->cfg.views->alive(r->cfg.views->ctx, s->view_h),
                .dev = s->dev,
                .users = s->file.users,
                .publish = s->file.publish,
                .until_pid = s->file.until_pid,
                .limits = s->file.limits,
        };
        snprintf(out->name, sizeof(out->name), "%s", s->file.name);
        sfs_scope_get_usage(s->tree, &out->usage);
        out->view = strdup(s->file.view);
        return out->view ? 0 : -ENOMEM;
}

/* ---- the scope's file in --store ---- */

static bool has_grant(const struct sfs_scope_grants *g, const struct snap_digest *d)
{
        for (size_t i = 0; i < g->n_grants; i++)
                if (snap_digest_equal(&g->grants[i].digest, d))
                        return true;
        return false;
}

static bool has_entry(const struct sfs_scope_grants *g, const char *name)
{
        for (size_t i = 0; i < g->n_entries; i++)
                if (strcmp(g->entries[i].name, name) == 0)
                        return true;
        return false;
}

/* The scope's dangling grants and entries added to g, as they were written, unless the scope
 * has one of the same digest or name again (the file must restore). 0 or -ENOMEM. */
static int add_dangling(const struct scope *s, struct sfs_scope_grants *g)
{
        const struct sfs_scope_grants *d = &s->dangling;
        struct sfs_grant_record *gv;
        struct sfs_entry_record *ev;

        if (!d->n_grants && !d->n_entries)
                return 0;
        gv = reallocarray(g->grants, g->n_grants + d->n_grants, sizeof(*gv));
        if (gv)
                g->grants = gv;
        ev = gv ? reallocarray(g->entries, g->n_entries + d->n_entries, sizeof(*ev)) : NULL;
        if (!ev)
                return -ENOMEM;
        g->entries = ev;
        for (size_t i = 0; i < d->n_grants; i++)
                if (!has_grant(g, &d->grants[i].digest))
                        g->grants[g->n_grants++] = d->grants[i];
        for (size_t i = 0; i < d->n_entries; i++)
                if (!has_entry(g, d->entries[i].name))
                        g->entries[g->n_entries++] = d->entries[i];
        return 0;
}

/* The scope's file with op applied (NULL: as it is): its text. */
static int file_text(struct scope *s, const struct sfs_scope_op *op, char **text, size_t *len)
{
        struct sfs_scopefile f = s->file; /* the grants: the tree's, and the dangling */
        int r = sfs_scope_get_grants(s->tree, op, &f.grants);

        if (r == 0)
                r = add_dangling(s, &f.grants);
        if (r == 0)
                r = sfs_scopefile_encode(&f, text, len);
        sfs_scope_grants_free(&f.grants);
        return r;
}

/* The scope's file with op applied, written durably. --store's lock held. */
static int write_file(struct scope *s, const struct sfs_scope_op *op)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        if (!s->reg->cfg.scope_store)
                return 0;
        r = file_text(s, op, &text, &len);
        if (r == 0)
                r = sfs_ocistore_put_scope(s->reg->cfg.scope_store, s->file.name, text, len);
        return r;
}

/* The tree's persistence hook: a publish or unlink in the scope's view, --store's lock held. */
static int save_hook(void *ctx, const struct sfs_scope_op *op)
{
        return write_file(ctx, op);
}

/* The store a change may write: the scopes' (whose lock is --store's too when both exist), or
 * --store alone. NULL: nothing is persisted. */
static struct sfs_ocistore *files(const struct sfs_registry *r)
{
        return r->cfg.scope_store ? r->cfg.scope_store : r->cfg.store;
}

static void store_lock(struct sfs_registry *r)
{
        if (files(r))
                sfs_ocistore_lock(files(r));
}

static void store_unlock(struct sfs_registry *r)
{
        if (files(r))
                sfs_ocistore_unlock(files(r));
}

/* What a change left to finish with no tree lock: the snapshots it was the last reference of
 * leave --store (under its lock, held), then their references go. */
static void collect_gone(struct sfs_registry *r, struct scope *s, struct sfs_scope_effects *fx)
{
        for (size_t i = 0; i < fx->n_gone; i++)
                if (files(r))
                        sfs_ocistore_remove(files(r), &fx->gone[i]->digest);
        sfs_scope_effects_release(s->tree, fx);
}

/* The kernel's cached entries of the names a change touched: sent holding no tree or store
 * lock (a view's request may be waiting for its tree in the kernel's directory lock). */
static void invalidate(struct sfs_registry *r, struct scope *s, const struct sfs_scope_effects *fx)
{
        assert(sfs_no_tree_lock_held() && "an invalidation under a tree or store lock");
        for (size_t i = 0; s->view_h && i < fx->n_names; i++)
                r->cfg.views->invalidate(r->cfg.views->ctx, s->view_h, fx->names[i]);
        for (size_t i = 0; s->view_h && i < fx->n_inos; i++)
                r->cfg.views->invalidate_inode(r->cfg.views->ctx, s->view_h, fx->inos[i]);
        /* Then the waiters of a moved entry: woken now, they find its new snapshot by name,
         * never the old one the kernel still had cached (docs/design.md, "Waiting for an
         * entry to move"). */
        if (fx->watches)
                sfs_tree_announce_moves(s->tree);
}

/* ---- lifecycle ---- */

static void pid_exited(void *ctx, uint64_t id);
static void dangling_published(void *ctx, const struct snap_digest *d);

/* path as a view path is written: absolute, its parent directory resolved (a link in it
 * followed, as the kernel did when it mounted there) and the last component kept as given
 * (the path itself may be a mount of this daemon, not to be looked into from here). A path
 * whose parent cannot be resolved is kept as given. malloc'd, or NULL. */
static char *own_path(const char *path)
{
        _cleanup_free_ char *copy = path ? strdup(path) : NULL, *parent = NULL;
        char *slash, *out = NULL;
        size_t n;

        if (!copy || copy[0] != '/')
                return NULL;
        for (n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
                copy[n - 1] = '\0';
        slash = strrchr(copy, '/');
        *slash = '\0';
        parent = realpath(slash == copy ? "/" : copy, NULL);
        if (!parent)
                return strdup(path);
        if (asprintf(&out, "%s/%s", strcmp(parent, "/") ? parent : "", slash + 1) < 0)
                return NULL;
        return out;
}

int sfs_registry_new(const struct sfs_registry_config *cfg, struct sfs_registry **out)
{
        struct sfs_registry *r = calloc(1, sizeof(*r));
        const char *own[4] = { cfg->mountpoint, cfg->read_view, cfg->store_dir,
                               cfg->runtime_dir };

        if (!r)
                return -ENOMEM;
        r->cfg = *cfg;
        for (size_t i = 0; i < ARRAY_SIZE(own); i++)
                if (own[i] && !(r->own[i] = own_path(own[i]))) {
                        while (i--)
                                free(r->own[i]);
                        free(r);
                        return -ENOMEM;
                }
        r->next_id = 1;
        if (sfs_pidwatch_new(pid_exited, r, &r->pw) < 0) {
                free(r);
                return -ENOMEM;
        }
        pthread_mutex_init(&r->lock, NULL);
        if (sfs_boot_id(r->boot_id) < 0)
                r->boot_id[0] = '\0'; /* no boot id: no until-pid survives a restart */
        if (r->cfg.main)
                sfs_tree_set_published(r->cfg.main, dangling_published, r);
        *out = r;
        return 0;
}

/* Takes a scope out of the registry and everything it references: its file, its grants (what
 * nothing else references goes, from --store too), its view (detached lazily), its
 * directory. Registry lock held. */
static void remove_scope(struct sfs_registry *r, struct scope *s, const struct sfs_caller *c,
                         const char *reason)
{
        struct sfs_scope_effects fx = { 0 };
        char *view = s->file.view;
        int rr;

        take_out(r, s);
        sfs_pidwatch_remove(r->pw, s->id);
        store_lock(r);
        /* Nothing its view does is persisted from here on, and it publishes no more. */
        sfs_scope_disarm(s->tree);
        /* First the file: a scope answered as removed never comes back at a start. */
        if (r->cfg.scope_store) {
                rr = sfs_ocistore_drop_scope(r->cfg.scope_store, s->file.name);
                (void)rr; /* -ENOENT: never written (a failed start) */
        }
        rr = sfs_scope_revoke_all(s->tree, &fx);
        (void)rr;
        collect_gone(r, s, &fx);
        store_unlock(r);
        invalidate(r, s, &fx);
        sfs_scope_effects_free(&fx);
        audit(r, c, "scope-remove", "scope-remove", s->file.name, NULL, NULL, view, 0, reason);
        if (s->view_h) {
                /* The view's session keeps serving what is open; the backend frees the tree
                 * once the kernel ends it. */
                r->cfg.views->detach(r->cfg.views->ctx, s->view_h, s->tree);
                s->tree = NULL;
        }
        if (s->file.view_made)
                sfs_view_path_remove(view);
        scope_free(s);
}

static void pid_exited(void *ctx, uint64_t id)
{
        struct sfs_registry *r = ctx;
        struct scope *s;

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        s = find_id(r, id);
        if (s)
                remove_scope(r, s, NULL, "until-pid exited");
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
}

int sfs_registry_start(struct sfs_registry *r)
{
        return sfs_pidwatch_start(r->pw);
}

void sfs_registry_free(struct sfs_registry *r)
{
        if (!r)
                return;
        if (r->cfg.main)
                sfs_tree_set_published(r->cfg.main, NULL, NULL);
        /* The watcher first: it removes scopes, and must not while they are shut down. */
        sfs_pidwatch_free(r->pw);
        for (size_t i = 0; i < r->n; i++) {
                struct scope *s = r->v[i];
                if (s->view_h)
                        r->cfg.views->shutdown(r->cfg.views->ctx, s->view_h);
                scope_free(s);
        }
        free(r->v);
        for (size_t i = 0; i < ARRAY_SIZE(r->own); i++)
                free(r->own[i]);
        pthread_mutex_destroy(&r->lock);
        free(r);
}

/* Whether path lies strictly inside dir. */
static bool inside(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* Whether view would cover what the daemon serves or stores: a view mounted over an ancestor
 * of another view, of the main mount or of the read view hides them from every tenant (each
 * finding "ancestor-overmounted") and takes the control channel with the main mount; one
 * over --store (or in it) hides the store's files from the daemon that writes them. The
 * descendants of a mount are refused by device (sfs_view_path_prepare). -EBUSY naming it.
 * Registry lock held. */
static int covers(struct sfs_registry *r, const struct scope *s, struct sfs_msg *m)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->v[i] != s && inside(r->v[i]->file.view, s->file.view))
                        return msg(m, EBUSY, "%s would cover the view of scope %s (%s): choose "
                                   "a path beside it, not above it", s->file.view,
                                   r->v[i]->file.name, r->v[i]->file.view);
        for (size_t i = 0; i < ARRAY_SIZE(r->own); i++) {
                if (!r->own[i])
                        continue;
                if (inside(r->own[i], s->file.view) || strcmp(r->own[i], s->file.view) == 0)
                        return msg(m, EBUSY, "%s would cover %s (%s): choose a path beside "
                                   "it, not above it", s->file.view, own_what[i], r->own[i]);
                if (i >= 2 && inside(s->file.view, r->own[i]))
                        return msg(m, EBUSY, "%s lies inside %s (%s): choose a path "
                                   "outside it", s->file.view, own_what[i], r->own[i]);
        }
        return 0;
}

/* The devices of the daemon's own mounts, for the view path check: the main mount, the read
 * view, every view. malloc'd into *out. Registry lock held. */
static size_t own_devs(struct sfs_registry *r, uint64_t **out)
{
        uint64_t *v = calloc(r->n + 2, sizeof(*v));
        size_t n = 0;
        struct sfs_tree_config cfg;

        *out = v;
        if (!v)
                return 0;
        sfs_tree_get_config(r->cfg.main, &cfg);
        v[n++] = cfg.dev;
        v[n++] = cfg.read_view_dev;
        for (size_t i = 0; i < r->n; i++)
                v[n++] = r->v[i]->dev;
        return n;
}

/* Whether allow_other is needed: a user the kernel would not let in otherwise. */
static bool needs_allow_other(const struct sfs_scope_users *u, uid_t daemon_uid)
{
        if (u->has_gid)
                return true;
        for (unsigned i = 0; i < u->uids.n; i++)
                if (u->uids.uids[i] != daemon_uid)
                        return true;
        return false;
}

/* Prepares s's view path and mounts its view. msg says why not. Registry lock held. */
static int mount_view(struct sfs_registry *r, struct scope *s, bool clear_stale, bool *made,
                      struct sfs_msg *m)
{
        const struct sfs_view_request req = {
                .scope = s->file.name,
                .path = s->file.view,
                .allow_other = s->allow_other,
                .ro = !s->file.publish,
                /* Every view answers OPEN: a scope's content lives while a descriptor is
                 * open on it and goes with its grant otherwise, so the daemon must count
                 * the descriptors (an open it never saw would read a collected node). */
                .no_open = false,
        };
        struct sfs_view_path_why why = { .message = "" };
        _cleanup_free_ uint64_t *devs = NULL;
        size_t n = own_devs(r, &devs);
        int rr;

        if (!devs)
                return msg(m, ENOMEM, "out of memory");
        if ((rr = covers(r, s, m)) < 0)
                return rr;
        if (r->cfg.views->handed_over && r->cfg.views->handed_over(r->cfg.views->ctx, s->file.view))
                goto mount; /* taken over: the first daemon prepared and checked it */
        rr = sfs_view_path_prepare(s->file.view, r->cfg.uid, devs, n, made, &why);
        if (rr == -ENOTCONN && clear_stale) {
                /* A killed daemon's view: cleared as --replace-stale clears the main mount. */
                rr = r->cfg.views->clear_stale(r->cfg.views->ctx, s->file.view);
                if (rr == 0)
                        rr = sfs_view_path_prepare(s->file.view, r->cfg.uid, devs, n, made, &why);
                else
                        snprintf(why.message, sizeof(why.message),
                                 "%s: a dead mount is there and could not be cleared",
                                 s->file.view);
        }
        if (rr < 0)
                return msg(m, rr == -ENOTCONN ? EBUSY : -rr, "%s", why.message);
mount:
        rr = r->cfg.views->mount(r->cfg.views->ctx, &req, s->tree, &s->view_h, &s->dev, m->text,
                                 sizeof(m->text));
        if (rr < 0) {
                if (*made)
                        sfs_view_path_remove(s->file.view);
                *made = false;
                return rr;
        }
        sfs_tree_set_dev(s->tree, s->dev, false);
        return 0;
}

/* Room for one more scope: -ENOSPC past --max-scopes, counting the views of removed scopes
 * still held open. Each is a FUSE session the daemon keeps (one of the keys libfuse needs
 * per session: SFS_MAX_SCOPES_LIMIT): uncounted, a tenant that keeps a descriptor open on
 * its view across create and remove made every later create fail (EIO) for every tenant.
 * The refusal names the views still held. Registry lock held. */
static int scope_room(struct sfs_registry *r, struct sfs_msg *m)
{
        const struct sfs_view_ops *ops = r->cfg.views;
        unsigned held = ops->lingering ? ops->lingering(ops->ctx, NULL, 0) : 0;
        char list[160] = "";

        if (r->n + held < max_scopes(r))
                return 0;
        if (!held)
                return msg(m, ENOSPC, "this daemon serves at most %u scopes (--max-scopes): "
                           "delete one first (snapfs scope rm NAME)", max_scopes(r));
        ops->lingering(ops->ctx, list, sizeof(list));
        return msg(m, ENOSPC, "at most %u scopes (--max-scopes), counting %u removed scopes' "
                   "views still held open: %s; close what holds them, or delete a scope",
                   max_scopes(r), held, list);
}

/* A new scope's tree (restored: from its file, at a start). */
static int new_tree(struct sfs_registry *r, struct scope *s, bool restored)
{
        const struct sfs_scope_spec spec = {
                .name = s->file.name,
                .users = s->file.users,
                .publish = s->file.publish,
                .limits = s->file.limits,
                .restored = restored,
                .save = r->cfg.scope_store ? save_hook : NULL,
                .save_ctx = s,
        };
        return sfs_tree_new_scope(r->cfg.main, &spec, &s->tree);
}

/* Why a new scope's tree was refused, into m: a minimum the daemon cannot guarantee names
 * the numbers it was measured against. */
static void new_tree_refused(struct sfs_registry *r, const struct scope *s, int rr,
                             struct sfs_msg *m)
{
        struct sfs_scope_room room;

        if (rr != -ENOSPC || !s->file.limits.min_bytes) {
                msg(m, -rr, "the scope's limits: %s", strerror(-rr));
                return;
        }
        sfs_scope_get_room(r->cfg.main, &room);
        msg(m, ENOSPC, "limits.min_bytes %" PRIu64 " cannot be guaranteed: of this daemon's "
            "--max-bytes (%" PRIu64 "), %" PRIu64 " are the owner's reserve and %" PRIu64
            " other scopes' minimums, and %" PRIu64 " are free for a scope now: ask for less, "
            "or free room first", s->file.limits.min_bytes, room.max_bytes, room.reserve_bytes,
            room.minimums, room.free);
}

/* A scope's limits, those asked or the defaults, into *l, each at most the daemon's own: a
 * scope that may hold more than the daemon does is a promise the daemon cannot keep, and its
 * usage would be read against a number that means nothing. -EINVAL naming the limit. */
static int scope_limits(struct sfs_registry *r, const struct sfs_scope_limits *asked,
                        struct sfs_scope_limits *l, struct sfs_msg *m)
{
        struct sfs_scope_limits defaults;
        struct sfs_tree_config cfg;

        /* Unset: what one uid may hold on the main mount. */
        sfs_scope_default_limits(r->cfg.main, &defaults);
        *l = *asked;
        if (!l->max_snapshots)
                l->max_snapshots = defaults.max_snapshots;
        if (!l->max_bytes)
                l->max_bytes = defaults.max_bytes;
        if (!l->max_staging)
                l->max_staging = defaults.max_staging;
        if (!l->max_staging_bytes)
                l->max_staging_bytes = defaults.max_staging_bytes;
        sfs_tree_get_config(r->cfg.main, &cfg);
        const struct {
                const char *name, *option;
                uint64_t value, max;
        } v[] = {
                { "max_snapshots", "--max-snapshots", l->max_snapshots, cfg.max_snapshots },
                { "max_bytes", "--max-bytes", l->max_bytes, cfg.max_bytes },
                { "max_staging", "--max-staging", l->max_staging, cfg.max_staging },
                { "max_staging_bytes", "--max-bytes", l->max_staging_bytes, cfg.max_bytes },
        };

        for (size_t i = 0; i < ARRAY_SIZE(v); i++)
                if (v[i].value > v[i].max)
                        return msg(m, EINVAL, "limits.%s %" PRIu64 " is above this daemon's %s "
                                   "(%" PRIu64 "): ask for at most that", v[i].name, v[i].value,
                                   v[i].option, v[i].max);
        /* A minimum past the scope's own limit would keep room nobody may use. */
        if (l->min_bytes > l->max_bytes)
                return msg(m, EINVAL, "limits.min_bytes %" PRIu64 " is above the scope's "
                           "max_bytes (%" PRIu64 "): ask for at most that", l->min_bytes,
                           l->max_bytes);
        return 0;
}

/* The caller's pid as the kernel stamped the request, in the daemon's pid namespace: the
 * client's getpid() must be it (or the thread group of that thread), else the client lives in
 * another pid namespace and any pid it names would be read in the wrong one. */
static bool same_pid_namespace(const struct sfs_caller *c, pid_t client_pid)
{
        pid_t tgid;

        if (client_pid <= 0)
                return false;
        if (c->pid == client_pid)
                return true;
        tgid = sfs_tgid_of(c->pid);
        return tgid > 0 && tgid == client_pid;
}

/* A create's request as the registry takes it: 0, or -EINVAL with m saying why (a name or
 * view out of the grammar, scopes asked of a daemon whose only store is a disk, an until_pid
 * of another pid namespace). */
static int create_request_valid(struct sfs_registry *r, const struct sfs_caller *c,
                                const struct sfs_scope_request *req, struct sfs_msg *m)
{
        if (!req->name || !snap_name_valid(req->name))
                return msg(m, EINVAL, "a scope name is 1-64 of [A-Za-z0-9._-], not starting "
                           "with '.'");
        if (!req->view || !sfs_view_path_canonical(req->view))
                return msg(m, EINVAL, "view: an absolute, canonical path in UTF-8 (no \"//\", "
                           "\".\" or \"..\" component, no trailing \"/\")");
        if (r->cfg.store && !r->cfg.scope_store)
                /* Its grants' content would have to survive a restart in --store, a disk. */
                return msg(m, EINVAL, "this daemon keeps --store on a disk, where a scope's "
                           "content must never go: start it with --runtime-store DIR (a "
                           "directory on a RAM filesystem, tmpfs) to have scopes");
        if (req->until_pid && !same_pid_namespace(c, req->client_pid))
                return msg(m, EINVAL, "client_pid is not the caller's pid as the daemon sees it: "
                           "the client is in another pid namespace, where until_pid would name "
                           "another process");
        return 0;
}

/* A new scope's file written, then its view mounted: 0, or -errno with m saying why, its
 * file gone again when the mount failed. The registry's lock held. */
static int persist_and_mount(struct sfs_registry *r, struct scope *s, struct sfs_msg *m)
{
        bool made = false;
        int rr;

        /* The file first: a scope whose create was answered comes back at a start (a crash
         * after it mounts it again; one before it knows nothing). */
        store_lock(r);
        rr = write_file(s, NULL);
        store_unlock(r);
        if (rr < 0)
                return msg(m, -rr, "--store: %s", strerror(-rr));
        rr = mount_view(r, s, false, &made, m);
        s->file.view_made = made;
        if (rr < 0 && r->cfg.scope_store) {
                store_lock(r);
                sfs_ocistore_drop_scope(r->cfg.scope_store, s->file.name);
                store_unlock(r);
        } else if (rr == 0 && made && r->cfg.scope_store) {
                /* Recorded, so a delete after a restart removes what it made. */
                store_lock(r);
                write_file(s, NULL);
                store_unlock(r);
        }
        return rr;
}

int sfs_registry_create(struct sfs_registry *r, const struct sfs_caller *c,
                        const struct sfs_scope_request *req, struct sfs_scope_info *out,
                        struct sfs_msg *m)
{
        struct scope *s;
        int pidfd = -1, rr;

        if ((rr = create_request_valid(r, c, req, m)) < 0)
                return rr;
        s = calloc(1, sizeof(*s));
        if (!s || !(s->file.view = strdup(req->view))) {
                free(s);
                return msg(m, ENOMEM, "out of memory");
        }
        snprintf(s->file.name, sizeof(s->file.name), "%s", req->name);
        s->reg = r;
        s->file.users = (struct sfs_scope_users){ .uids = req->uids, .has_gid = req->has_gid,
                                             .gid = req->gid };
        s->file.publish = req->publish;
        if ((rr = scope_limits(r, &req->limits, &s->file.limits, m)) < 0) {
                audit(r, c, "refused", "scope-create", req->name, NULL, NULL, req->view, -rr, NULL);
                scope_free(s);
                return rr;
        }
        s->allow_other = needs_allow_other(&s->file.users, r->cfg.uid);

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (find(r, s->file.name))
                rr = msg(m, EEXIST, "a scope named %s exists: choose another name, or delete "
                         "it first (snapfs scope rm %s)", s->file.name, s->file.name);
        else if (find_view(r, s->file.view))
                rr = msg(m, EEXIST, "%s is the view of scope %s: give another view, or delete "
                         "that scope first (snapfs scope rm %s)", s->file.view,
                         find_view(r, s->file.view)->file.name,
                         find_view(r, s->file.view)->file.name);
        else if ((rr = scope_room(r, m)) == 0 && (rr = room(r)) < 0)
                msg(m, ENOMEM, "out of memory");
        if (rr == 0 && (rr = new_tree(r, s, false)) < 0)
                new_tree_refused(r, s, rr, m);
        if (rr == 0 && req->until_pid) {
                const char *why = NULL;
                rr = sfs_pid_tie(req->until_pid, &pidfd, &s->file.until_start, &why);
                if (rr < 0)
                        msg(m, -rr, "until_pid %d: %s", (int)req->until_pid,
                            rr == -ESRCH ? why : strerror(-rr));
                s->file.until_pid = req->until_pid;
                snprintf(s->file.boot_id, sizeof(s->file.boot_id), "%s", r->boot_id);
        }
        if (rr == 0)
                rr = persist_and_mount(r, s, m);
        if (rr == 0) {
                s->id = r->next_id++;
                insert(r, s);
                if (pidfd >= 0) {
                        rr = sfs_pidwatch_add(r->pw, pidfd, s->id);
                        pidfd = -1;
                        if (rr < 0) {
                                /* Not tied after all: no scope that outlives what it promised
                                 * to die with. */
                                remove_scope(r, s, c, "until-pid could not be watched");
                                sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
                                audit(r, c, "refused", "scope-create", req->name, NULL, NULL,
                                      req->view, -rr, NULL);
                                return msg(m, -rr, "cannot watch until_pid: %s", strerror(-rr));
                        }
                }
                audit(r, c, "scope-create", "scope-create", s->file.name, NULL, NULL, s->file.view,
                      0, NULL);
                rr = scope_info(s, r, out);
                sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
                return rr < 0 ? msg(m, ENOMEM, "out of memory") : 0;
        }
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        safe_close(pidfd);
        audit(r, c, "refused", "scope-create", req->name, NULL, NULL, req->view, -rr, NULL);
        scope_free(s);
        return rr;
}

int sfs_registry_remove(struct sfs_registry *r, const struct sfs_caller *c, const char *name,
                        struct sfs_msg *m)
{
        struct scope *s;

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        s = name ? find(r, name) : NULL;
        if (s)
                remove_scope(r, s, c, NULL);
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (!s) {
                audit(r, c, "refused", "scope-remove", name, NULL, NULL, NULL, ENOENT, NULL);
                return msg(m, ENOENT, NO_SCOPE, name ? name : "", name ? name : "");
        }
        return 0;
}

int sfs_registry_list(struct sfs_registry *r, struct sfs_scope_info **out, size_t *n)
{
        struct sfs_scope_info *v;
        size_t count;
        int rr = 0;

        *out = NULL;
        *n = 0;
        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        count = r->n;
        v = calloc(count ? count : 1, sizeof(*v));
        if (!v)
                rr = -ENOMEM;
        for (size_t i = 0; rr == 0 && i < count; i++)
                rr = scope_info(r->v[i], r, &v[i]);
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (rr < 0) {
                sfs_scope_infos_free(v, count);
                return rr;
        }
        *out = v;
        *n = count;
        return 0;
}

/* The grants a show lists. */
struct grant_list {
        struct sfs_grant_info *v;
        size_t n, cap;
};

static int add_grant(const struct sfs_grant_info *g, void *ctx)
{
        struct grant_list *l = ctx;

        if (ARRAY_GROW(l->v, l->cap, l->n + 1, 16) < 0)
                return -ENOMEM;
        l->v[l->n++] = *g;
        return 0;
}

int sfs_registry_show(struct sfs_registry *r, const char *name, struct sfs_scope_info *scope,
                      struct sfs_grant_info **grants, size_t *n_grants, struct sfs_msg *m)
{
        struct grant_list l = { 0 };
        struct scope *s;
        int rr = 0;

        *scope = (struct sfs_scope_info){ 0 };
        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        s = name ? find(r, name) : NULL;
        if (!s)
                rr = msg(m, ENOENT, NO_SCOPE, name ? name : "", name ? name : "");
        if (rr == 0)
                rr = sfs_scope_foreach_grant(s->tree, add_grant, &l);
        if (rr == 0)
                rr = scope_info(s, r, scope);
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (rr < 0) {
                free(l.v);
                sfs_scope_info_clear(scope);
                return rr;
        }
        *grants = l.v;
        *n_grants = l.n;
        return 0;
}

/* A grant or revoke: persisted with the change, then made, then finished. */
static int change(struct sfs_registry *r, const struct sfs_caller *c, const char *name,
                  const struct sfs_scope_op *op, struct sfs_grant_info *info, struct sfs_msg *m)
{
        const char *what = op->kind == SFS_SCOPE_GRANT ? "grant" : "revoke";
        struct sfs_scope_effects fx = { 0 };
        struct sfs_scope_op o = *op;
        struct scope *s;
        int rr;

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        s = name ? find(r, name) : NULL;
        if (!s) {
                sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
                audit(r, c, "refused", what, name, op->has_digest ? &op->digest : NULL, op->entry,
                      NULL, ENOENT, NULL);
                return msg(m, ENOENT, NO_SCOPE, name ? name : "", name ? name : "");
        }
        store_lock(r);
        /* A new grant's number in the view, taken first: the file records the very number
         * the view then shows it under, whatever its staging files take meanwhile. */
        if (o.kind == SFS_SCOPE_GRANT)
                o.ino = sfs_scope_alloc_ino(s->tree);
        /* On disk first: a revoke answered never comes back, a grant answered survives. */
        rr = write_file(s, &o);
        if (rr == 0)
                rr = sfs_scope_apply(s->tree, &o, info, &fx);
        collect_gone(r, s, &fx);
        store_unlock(r);
        invalidate(r, s, &fx);
        sfs_scope_effects_free(&fx);
        audit(r, c, rr == 0 ? what : "refused", what, s->file.name,
              op->has_digest ? &op->digest : NULL, op->entry, NULL, rr < 0 ? -rr : 0, NULL);
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        switch (rr) {
        case 0:
                return 0;
        case -ENOENT:
                return op->kind == SFS_SCOPE_GRANT
                               ? msg(m, ENOENT, "no such snapshot published on the main mount: "
                                     "publish it first (snapfs put); snapfs ls lists what is")
                               : msg(m, ENOENT, "no such grant in scope %s: snapfs scope ls %s "
                                     "lists its grants", name, name);
        case -EINVAL:
                return msg(m, EINVAL, "entry: 1-64 of [A-Za-z0-9._-], not starting with '.', "
                           "not 64 hex characters");
        case -ENOSPC:
                return msg(m, ENOSPC, "a scope holds at most %d grants: revoke one first "
                           "(snapfs revoke)", SFS_SCOPE_GRANTS_MAX);
        default:
                return msg(m, -rr, "%s", strerror(-rr));
        }
}

int sfs_registry_grant(struct sfs_registry *r, const struct sfs_caller *c, const char *scope,
                       const struct snap_digest *d, const char *entry,
                       struct sfs_grant_info *grant, struct sfs_msg *m)
{
        const struct sfs_scope_op op = { .kind = SFS_SCOPE_GRANT, .has_digest = true,
                                         .digest = *d, .entry = entry };

        return change(r, c, scope, &op, grant, m);
}

int sfs_registry_grant_hook(void *ctx, const struct sfs_caller *c, const char *scope,
                            const struct snap_digest *d, const char *entry)
{
        struct sfs_grant_info g;
        struct sfs_msg m;

        return sfs_registry_grant(ctx, c, scope, d, entry, &g, &m);
}

int sfs_registry_revoke(struct sfs_registry *r, const struct sfs_caller *c, const char *scope,
                        const struct snap_digest *d, const char *entry, struct sfs_msg *m)
{
        struct sfs_scope_op op = { .kind = SFS_SCOPE_REVOKE, .entry = entry };

        if (d) {
                op.has_digest = true;
                op.digest = *d;
        }
        return change(r, c, scope, &op, NULL, m);
}

/* The dangling grants of s for d taken out of it: into ops (entries, then NULL for a grant
 * by digest alone, at most max - 1 of them, each a strdup'd entry or NULL), their count. */
static size_t dangling_take(struct scope *s, const struct snap_digest *d, char **ops,
                            size_t max)
{
        struct sfs_scope_grants *g = &s->dangling;
        size_t n = 0, i;

        for (i = g->n_entries; i-- > 0;) {
                if (!snap_digest_equal(&g->entries[i].digest, d) || n + 1 >= max)
                        continue;
                if (!(ops[n] = strdup(g->entries[i].name)))
                        break;
                n++;
                memmove(&g->entries[i], &g->entries[i + 1],
                        (--g->n_entries - i) * sizeof(g->entries[0]));
        }
        for (i = g->n_grants; i-- > 0;) {
                if (!snap_digest_equal(&g->grants[i].digest, d))
                        continue;
                if (n == 0) /* a grant by digest alone: granted again as one */
                        ops[n++] = NULL;
                memmove(&g->grants[i], &g->grants[i + 1],
                        (--g->n_grants - i) * sizeof(g->grants[0]));
        }
        return n;
}

/* The main mount published d: every scope's grant of d that was dangling since the start
 * (its bytes were missing) is granted again, its entries too, as the daemon's own request. */
static void dangling_published(void *ctx, const struct snap_digest *d)
{
        struct sfs_registry *r = ctx;
        const struct sfs_caller c = { .uid = r->cfg.uid, .gid = r->cfg.gid, .pid = getpid() };

        for (;;) {
                char name[SNAP_NAME_MAX + 1] = "", *ops[65]; /* a round: the rest next */
                size_t n = 0;

                /* The store's lock too: a publish in a view writes the scope's file (and
                 * reads its dangling lists) holding that one alone. */
                sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
                store_lock(r);
                for (size_t i = 0; i < r->n && n == 0; i++) {
                        n = dangling_take(r->v[i], d, ops, ARRAY_SIZE(ops));
                        if (n)
                                snprintf(name, sizeof(name), "%s", r->v[i]->file.name);
                }
                store_unlock(r);
                sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
                if (n == 0)
                        return;
                for (size_t k = 0; k < n; k++) {
                        const struct sfs_scope_op op = { .kind = SFS_SCOPE_GRANT,
                                                         .has_digest = true, .digest = *d,
                                                         .entry = ops[k] };
                        struct sfs_grant_info info;
                        struct sfs_msg m = { .text = "" };

                        change(r, &c, name, &op, &info, &m);
                        free(ops[k]);
                }
        }
}

void sfs_registry_expire_staging(struct sfs_registry *r, uint64_t now_ms)
{
        if (!r)
                return;
        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        for (size_t i = 0; i < r->n; i++)
                sfs_tree_expire_staging(r->v[i]->tree, now_ms);
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
}

/* ---- a start ---- */

struct restoring {
        struct sfs_registry *r;
        void (*warn)(void *ctx, const char *msg);
        void *ctx;
        bool unreadable; /* a scope file did not come back: nothing is collected */
};

__attribute__((format(printf, 2, 3)))
static void warn(struct restoring *rs, const char *fmt, ...)
{
        char text[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (rs->warn)
                rs->warn(rs->ctx, text);
}

static void warn_grant(void *ctx, const char *what, const char *why)
{
        struct restoring *rs = ctx;
        warn(rs, "scope file: %s: %s", what, why);
}

/* A scope's file that does not come back: said, left as it is, and nothing is collected at
 * this start (the scope that did not come back may still need it). */
static int left_as_it_is(struct restoring *rs, const char *name, const char *what,
                         const char *why)
{
        warn(rs, "scope %s: %s (%s); left as it is, and nothing is collected at this start", name,
             what, why);
        rs->unreadable = true;
        return 0;
}

/* A scope of its decoded file f (its view taken from f, its grants left there), with its
 * tree made, not its view: 0 and *out, or -EINVAL (another scope has its view), -ENOMEM, the
 * tree's refusal. */
static int scope_of_file(struct sfs_registry *r, struct sfs_scopefile *f, struct scope **out)
{
        struct scope *s = calloc(1, sizeof(*s));
        int rr;

        if (!s)
                return -ENOMEM;
        s->reg = r;
        s->file = *f;
        s->file.grants = (struct sfs_scope_grants){ 0 }; /* the tree's, once restored */
        f->view = NULL;                                   /* s's now */
        s->allow_other = needs_allow_other(&s->file.users, r->cfg.uid);
        rr = find(r, s->file.name) || find_view(r, s->file.view) ? -EINVAL : room(r);
        if (rr == 0)
                rr = new_tree(r, s, true);
        if (rr < 0) {
                scope_free(s);
                return rr;
        }
        *out = s;
        return 0;
}

/* The grants of a scope's file whose snapshot is not stored (its blob lost, or set aside at
 * this start), and the entries naming them, kept in s as written: never dropped for good
 * because bytes went missing (docs/design.md, "The store"). 0 or -ENOMEM. */
static int dangling_collect(struct sfs_registry *r, struct scope *s,
                            const struct sfs_scope_grants *g)
{
        struct snap_store *store = sfs_tree_store(r->cfg.main);
        struct sfs_scope_grants *d = &s->dangling;

        for (size_t i = 0; i < g->n_grants; i++) {
                struct snap_object *o = snap_store_lookup(store, &g->grants[i].digest);

                if (o) {
                        snap_store_release(store, o);
                        continue;
                }
                if (!d->grants && !(d->grants = calloc(g->n_grants, sizeof(*d->grants))))
                        return -ENOMEM;
                if (!d->entries && !(d->entries = calloc(g->n_entries + 1, sizeof(*d->entries))))
                        return -ENOMEM;
                d->grants[d->n_grants++] = g->grants[i];
                for (size_t j = 0; j < g->n_entries; j++)
                        if (snap_digest_equal(&g->entries[j].digest, &g->grants[i].digest))
                                d->entries[d->n_entries++] = g->entries[j];
        }
        return 0;
}

/* The grants and entries of a scope's file back into its tree, each under the inode number
 * its view had it under; what nothing references any more collected. 0, or the tree's
 * refusal (-EINVAL: grants this daemon did not write). */
static int restore_grants(struct scope *s, const struct sfs_scope_grants *g,
                          struct restoring *rs)
{
        struct sfs_scope_effects fx = { 0 };
        int rr = dangling_collect(s->reg, s, g);

        if (rr == 0)
                rr = sfs_scope_restore(s->tree, g, warn_grant, rs, &fx);
        collect_gone(s->reg, s, &fx);
        sfs_scope_effects_free(&fx);
        return rr;
}

/* A scope tied to a process, tied to it again if it still runs (same boot, same start):
 * whether it is. */
static bool retie(struct sfs_registry *r, struct scope *s)
{
        bool same = r->boot_id[0] && strcmp(s->file.boot_id, r->boot_id) == 0 &&
                    sfs_pid_same(s->file.until_pid, s->file.until_start);
        uint64_t start = 0;
        int pidfd = -1;

        if (same && sfs_pid_tie(s->file.until_pid, &pidfd, &start, NULL) == 0 &&
            start == s->file.until_start && sfs_pidwatch_add(r->pw, pidfd, s->id) == 0)
                return true;
        safe_close(pidfd);
        return false;
}

/* A scope back: its view mounted again. One that cannot be is kept with its grants,
 * unserved: the operator removes it or fixes the path and restarts. */
static void remount(struct restoring *rs, struct scope *s)
{
        struct sfs_msg m = { .text = "" };
        bool made = false;

        if (mount_view(rs->r, s, true, &made, &m) < 0) {
                warn(rs, "scope %s: its view is not mounted: %s", s->file.name, m.text);
                return;
        }
        if (made && !s->file.view_made) {
                s->file.view_made = true;
                store_lock(rs->r);
                write_file(s, NULL);
                store_unlock(rs->r);
        }
}

static int restore_one(void *ctx, const char *name, const char *text, size_t len, int err)
{
        struct restoring *rs = ctx;
        struct sfs_registry *r = rs->r;
        struct sfs_scopefile f;
        struct scope *s = NULL;
        char why[200];
        int rr;

        if (err)
                return left_as_it_is(rs, name, "its file cannot be read", strerror(-err));
        rr = sfs_scopefile_decode(name, text, len, &f, why, sizeof(why));
        if (rr < 0)
                return rr == -ENOMEM ? rr : left_as_it_is(rs, name, "its file does not parse", why);
        rr = scope_of_file(r, &f, &s);
        if (rr < 0) {
                sfs_scopefile_free(&f);
                return left_as_it_is(rs, name, "its file does not parse", strerror(-rr));
        }
        rr = restore_grants(s, &f.grants, rs);
        sfs_scopefile_free(&f);
        if (rr < 0) {
                scope_free(s);
                return left_as_it_is(rs, name, "its grants do not parse", strerror(-rr));
        }
        s->id = r->next_id++;
        insert(r, s);
        /* Tied to a process that is gone: the scope goes, as it would have when that process
         * ended. */
        if (s->file.until_pid && !retie(r, s)) {
                warn(rs, "scope %s: its until-pid %d is gone; the scope is removed", name,
                     (int)s->file.until_pid);
                remove_scope(r, s, NULL, "until-pid exited");
                return 0;
        }
        remount(rs, s);
        return 0;
}

static int collect_unreferenced(const struct snap_object *o, void *ctx)
{
        struct snap_digest **v = ctx;
        size_t n = (size_t)(uintptr_t)v[0];
        struct snap_digest *nv = realloc(v[1], (n + 1) * sizeof(*nv));

        if (!nv)
                return -ENOMEM;
        nv[n] = o->digest;
        v[1] = nv;
        v[0] = (struct snap_digest *)(uintptr_t)(n + 1);
        return 0;
}

int sfs_registry_restore(struct sfs_registry *r, void (*warn_fn)(void *ctx, const char *msg),
                         void *ctx)
{
        struct restoring rs = { .r = r, .warn = warn_fn, .ctx = ctx };
        struct snap_digest *v[2] = { NULL, NULL };
        struct snap_store *store;
        int rr = 0;

        if (!files(r))
                return 0;
        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        /* The scopes live in --runtime-store. A --store alone keeps none (a scope's content
         * never goes to a disk): what an older daemon kept there is not served again, and
         * its content, granted to nothing now, is collected below. */
        if (r->cfg.scope_store)
                rr = sfs_ocistore_load_scopes(r->cfg.scope_store, restore_one, &rs);
        if (rr < 0 || rs.unreadable) {
                sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
                return rr;
        }
        /* What came back neither held nor granted: a scope deleted, a publish in a scope
         * whose file was never written (never answered), grants revoked. */
        store = sfs_tree_store(r->cfg.main);
        rr = snap_store_foreach_from(store, 0, SNAP_FOREACH_UNREFERENCED, collect_unreferenced, v);
        for (size_t i = 0; rr == 0 && i < (size_t)(uintptr_t)v[0]; i++) {
                struct snap_object *o = snap_store_lookup(store, &v[1][i]);
                if (!o)
                        continue;
                store_lock(r);
                if (snap_store_kept_without(store, o, &(struct snap_drop){ 0 }) == false &&
                    snap_store_collect(store, o) == 1) {
                        sfs_ocistore_remove(files(r), &v[1][i]);
                        snap_store_release(store, o); /* its publication's */
                }
                store_unlock(r);
                snap_store_release(store, o);
        }
        free(v[1]);
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        return rr;
}

struct sfs_tree *sfs_registry_main(struct sfs_registry *r)
{
        return r->cfg.main;
}

struct sfs_ocistore *sfs_registry_store(struct sfs_registry *r)
{
        return r->cfg.store;
}
