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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/base/audit.h"
#include "fs/base/lockorder.h"
#include "fs/store/ocistore.h"
#include "fs/config/options.h"
#include "fs/scopes/pidwatch.h"
#include "fs/scopes/viewpath.h"
#include "snapshot/store.h"
#include "common/array.h"
#include "common/json.h"
#include "common/util.h"

#define SCOPE_FILE_VERSION 1

struct scope {
        uint64_t id;                 /* never reused: what the until-pid watcher reports */
        char name[SNAP_NAME_MAX + 1];
        char *view;
        bool view_made;              /* the daemon created the view's directory */
        struct sfs_scope_users users;
        bool publish;
        struct sfs_scope_limits limits;
        pid_t until_pid;             /* 0: none */
        uint64_t until_start;
        char boot_id[40];
        bool allow_other;
        struct sfs_tree *tree;
        struct sfs_view *view_h;     /* NULL: not mounted (it could not be at a start) */
        uint64_t dev;
        struct sfs_registry *reg;
        /* Grants (and their entries) of the scope's file whose snapshot was not stored at the
         * start: kept as written, in the file at every rewrite, until those bytes are
         * published again (dangling_published). NULL: none. */
        json_object *dangling_grants, *dangling_entries;
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

__attribute__((format(printf, 3, 4)))
static int msg(struct sfs_msg *m, int err, const char *fmt, ...)
{
        va_list ap;

        if (m) {
                va_start(ap, fmt);
                vsnprintf(m->text, sizeof(m->text), fmt, ap);
                va_end(ap);
        }
        return -err;
}

/* ---- the table ---- */

static int name_cmp(const void *key, const void *element)
{
        const struct scope *const *s = element;

        return strcmp(key, (*s)->name);
}

static size_t lower(const struct sfs_registry *r, const char *name)
{
        return lower_bound(name, r->v, r->n, sizeof(*r->v), name_cmp);
}

static struct scope *find(const struct sfs_registry *r, const char *name)
{
        size_t i = lower(r, name);

        return i < r->n && strcmp(r->v[i]->name, name) == 0 ? r->v[i] : NULL;
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
                if (strcmp(r->v[i]->view, view) == 0)
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
        size_t i = lower(r, s->name);

        memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(r->v[0]));
        r->v[i] = s;
        r->n++;
}

static void take_out(struct sfs_registry *r, struct scope *s)
{
        size_t i = lower(r, s->name);

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
        json_object_put(s->dangling_grants);
        json_object_put(s->dangling_entries);
        free(s->view);
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

/* ---- a scope's JSON ---- */

static int add(json_object *o, const char *key, json_object *v)
{
        if (!v)
                return -ENOMEM;
        json_object_object_add(o, key, v);
        return 0;
}

/* JSON null is json-c's NULL: v, or null when !present (v then NULL too). */
static int add_opt(json_object *o, const char *key, bool present, json_object *v)
{
        if (!present) {
                json_object_object_add(o, key, NULL);
                return 0;
        }
        return add(o, key, v);
}

static json_object *limits_json(const struct sfs_scope_limits *l)
{
        json_object *o = json_object_new_object();

        if (!o || add(o, "max_snapshots", json_object_new_uint64(l->max_snapshots)) < 0 ||
            add(o, "max_bytes", json_object_new_uint64(l->max_bytes)) < 0 ||
            add(o, "max_staging", json_object_new_uint64(l->max_staging)) < 0 ||
            add(o, "max_staging_bytes", json_object_new_uint64(l->max_staging_bytes)) < 0 ||
            add(o, "min_bytes", json_object_new_uint64(l->min_bytes)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *uids_json(const struct value_uid_list *u)
{
        json_object *a = json_object_new_array();

        for (unsigned i = 0; a && i < u->n; i++)
                if (json_object_array_add(a, json_object_new_int64(u->uids[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

/* The scope as the control channel reports it (docs/design.md, "The control channel"). */
static json_object *scope_json(struct scope *s, struct sfs_registry *r)
{
        struct sfs_scope_usage u;
        json_object *o = json_object_new_object(), *usage = json_object_new_object();
        bool mounted = s->view_h && r->cfg.views->alive(r->cfg.views->ctx, s->view_h);
        char dev[32];

        sfs_scope_get_usage(s->tree, &u);
        snprintf(dev, sizeof(dev), "%u:%u", major(s->dev), minor(s->dev));
        if (!o || !usage || add(o, "name", json_object_new_string(s->name)) < 0 ||
            add(o, "view", json_object_new_string(s->view)) < 0 ||
            add_opt(o, "dev", mounted, mounted ? json_object_new_string(dev) : NULL) < 0 ||
            add(o, "uids", uids_json(&s->users.uids)) < 0 ||
            add_opt(o, "gid", s->users.has_gid,
                    s->users.has_gid ? json_object_new_int64(s->users.gid) : NULL) < 0 ||
            add(o, "publish", json_object_new_boolean(s->publish)) < 0 ||
            add_opt(o, "until_pid", s->until_pid != 0,
                    s->until_pid ? json_object_new_int64(s->until_pid) : NULL) < 0 ||
            add(o, "limits", limits_json(&s->limits)) < 0 ||
            add(usage, "snapshots", json_object_new_uint64(u.snapshots)) < 0 ||
            add(usage, "bytes", json_object_new_uint64(u.bytes)) < 0 ||
            add(usage, "staging", json_object_new_uint64(u.staging)) < 0 ||
            add(usage, "staging_bytes", json_object_new_uint64(u.staging_bytes)) < 0) {
                json_object_put(o);
                json_object_put(usage);
                return NULL;
        }
        json_object_object_add(o, "usage", usage);
        if (add(o, "grants", json_object_new_uint64(u.grants)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *grant_json(const struct sfs_grant_info *g)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        json_object *o = json_object_new_object();

        snap_digest_to_hex(&g->digest, hex);
        if (!o || add(o, "sha256", json_object_new_string(hex)) < 0 ||
            add(o, "size", json_object_new_uint64(g->size)) < 0 ||
            add(o, "ino", json_object_new_uint64(g->ino)) < 0 ||
            add_opt(o, "entry", g->entry[0] != 0,
                    g->entry[0] ? json_object_new_string(g->entry) : NULL) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* ---- the scope's file in --store ---- */

/* The scope's file with op applied (NULL: as it is). */
/* ---- grants whose bytes were missing at the start ---- */

static const char *json_str(json_object *o, const char *key)
{
        json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

/* Whether list (JSON objects) has one whose key is value. */
static bool listed(json_object *list, const char *key, const char *value)
{
        size_t n = json_object_array_length(list);

        for (size_t i = 0; value && i < n; i++) {
                const char *v = json_str(json_object_array_get_idx(list, i), key);
                if (v && strcmp(v, value) == 0)
                        return true;
        }
        return false;
}

/* The scope's dangling grants and entries added to the file's lists, as they were written,
 * unless the scope has one of the same digest or name again (the file must restore). */
static int dangling_json(struct scope *s, json_object *grants, json_object *entries)
{
        json_object *lists[2][2] = { { s->dangling_grants, grants },
                                     { s->dangling_entries, entries } };
        static const char *const keys[2] = { "sha256", "name" };

        for (size_t k = 0; k < 2; k++) {
                size_t n = lists[k][0] ? json_object_array_length(lists[k][0]) : 0;
                for (size_t i = 0; i < n; i++) {
                        json_object *o = json_object_array_get_idx(lists[k][0], i);
                        if (listed(lists[k][1], keys[k], json_str(o, keys[k])))
                                continue;
                        if (json_object_array_add(lists[k][1], json_object_get(o)) < 0) {
                                json_object_put(o);
                                return -ENOMEM;
                        }
                }
        }
        return 0;
}

static int file_json(struct scope *s, const struct sfs_scope_op *op, char **text, size_t *len)
{
        json_object *doc = json_object_new_object(), *grants = NULL, *entries = NULL, *until;
        uint64_t next_ino = 0;
        const char *t;
        int r = doc ? 0 : -ENOMEM;

        if (r == 0)
                r = sfs_scope_grants_json(s->tree, op, &grants, &entries, &next_ino);
        if (r == 0)
                r = dangling_json(s, grants, entries);
        if (r == 0 && s->until_pid) {
                until = json_object_new_object();
                r = until ? 0 : -ENOMEM;
                if (r == 0 && (add(until, "pid", json_object_new_int64(s->until_pid)) < 0 ||
                               add(until, "start", json_object_new_uint64(s->until_start)) < 0 ||
                               add(until, "boot_id", json_object_new_string(s->boot_id)) < 0))
                        r = -ENOMEM;
                if (r == 0)
                        json_object_object_add(doc, "until", until);
                else
                        json_object_put(until);
        }
        if (r == 0 && (add(doc, "version", json_object_new_int(SCOPE_FILE_VERSION)) < 0 ||
                       add(doc, "name", json_object_new_string(s->name)) < 0 ||
                       add(doc, "view", json_object_new_string(s->view)) < 0 ||
                       add(doc, "view_made", json_object_new_boolean(s->view_made)) < 0 ||
                       add(doc, "uids", uids_json(&s->users.uids)) < 0 ||
                       add_opt(doc, "gid", s->users.has_gid,
                               s->users.has_gid ? json_object_new_int64(s->users.gid) : NULL) < 0 ||
                       add(doc, "publish", json_object_new_boolean(s->publish)) < 0 ||
                       add(doc, "limits", limits_json(&s->limits)) < 0 ||
                       add(doc, "next_ino", json_object_new_uint64(next_ino)) < 0))
                r = -ENOMEM;
        if (r == 0) {
                json_object_object_add(doc, "grants", grants);
                json_object_object_add(doc, "entries", entries);
                grants = entries = NULL;
                t = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
                *text = t ? strdup(t) : NULL;
                *len = t ? strlen(t) : 0;
                r = *text ? 0 : -ENOMEM;
        }
        json_object_put(grants);
        json_object_put(entries);
        json_object_put(doc);
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
        r = file_json(s, op, &text, &len);
        if (r == 0)
                r = sfs_ocistore_put_scope(s->reg->cfg.scope_store, s->name, text, len);
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
        char *view = s->view;
        int rr;

        take_out(r, s);
        sfs_pidwatch_remove(r->pw, s->id);
        store_lock(r);
        /* Nothing its view does is persisted from here on, and it publishes no more. */
        sfs_scope_disarm(s->tree);
        /* First the file: a scope answered as removed never comes back at a start. */
        if (r->cfg.scope_store) {
                rr = sfs_ocistore_drop_scope(r->cfg.scope_store, s->name);
                (void)rr; /* -ENOENT: never written (a failed start) */
        }
        rr = sfs_scope_revoke_all(s->tree, &fx);
        (void)rr;
        collect_gone(r, s, &fx);
        store_unlock(r);
        invalidate(r, s, &fx);
        sfs_scope_effects_free(&fx);
        audit(r, c, "scope-remove", "scope-remove", s->name, NULL, NULL, view, 0, reason);
        if (s->view_h) {
                /* The view's session keeps serving what is open; the backend frees the tree
                 * once the kernel ends it. */
                r->cfg.views->detach(r->cfg.views->ctx, s->view_h, s->tree);
                s->tree = NULL;
        }
        if (s->view_made)
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
                if (r->v[i] != s && inside(r->v[i]->view, s->view))
                        return msg(m, EBUSY, "%s would cover the view of scope %s (%s): choose "
                                   "a path beside it, not above it", s->view, r->v[i]->name,
                                   r->v[i]->view);
        for (size_t i = 0; i < ARRAY_SIZE(r->own); i++) {
                if (!r->own[i])
                        continue;
                if (inside(r->own[i], s->view) || strcmp(r->own[i], s->view) == 0)
                        return msg(m, EBUSY, "%s would cover %s (%s): choose a path beside "
                                   "it, not above it", s->view, own_what[i], r->own[i]);
                if (i >= 2 && inside(s->view, r->own[i]))
                        return msg(m, EBUSY, "%s lies inside %s (%s): choose a path "
                                   "outside it", s->view, own_what[i], r->own[i]);
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
                .scope = s->name,
                .path = s->view,
                .allow_other = s->allow_other,
                .ro = !s->publish,
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
        if (r->cfg.views->handed_over && r->cfg.views->handed_over(r->cfg.views->ctx, s->view))
                goto mount; /* taken over: the first daemon prepared and checked it */
        rr = sfs_view_path_prepare(s->view, r->cfg.uid, devs, n, made, &why);
        if (rr == -ENOTCONN && clear_stale) {
                /* A killed daemon's view: cleared as --replace-stale clears the main mount. */
                rr = r->cfg.views->clear_stale(r->cfg.views->ctx, s->view);
                if (rr == 0)
                        rr = sfs_view_path_prepare(s->view, r->cfg.uid, devs, n, made, &why);
                else
                        snprintf(why.message, sizeof(why.message),
                                 "%s: a dead mount is there and could not be cleared", s->view);
        }
        if (rr < 0)
                return msg(m, rr == -ENOTCONN ? EBUSY : -rr, "%s", why.message);
mount:
        rr = r->cfg.views->mount(r->cfg.views->ctx, &req, s->tree, &s->view_h, &s->dev, m->text,
                                 sizeof(m->text));
        if (rr < 0) {
                if (*made)
                        sfs_view_path_remove(s->view);
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
                .name = s->name,
                .users = s->users,
                .publish = s->publish,
                .limits = s->limits,
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

        if (rr != -ENOSPC || !s->limits.min_bytes) {
                msg(m, -rr, "the scope's limits: %s", strerror(-rr));
                return;
        }
        sfs_scope_get_room(r->cfg.main, &room);
        msg(m, ENOSPC, "limits.min_bytes %" PRIu64 " cannot be guaranteed: of this daemon's "
            "--max-bytes (%" PRIu64 "), %" PRIu64 " are the owner's reserve and %" PRIu64
            " other scopes' minimums, and %" PRIu64 " are free for a scope now: ask for less, "
            "or free room first", s->limits.min_bytes, room.max_bytes, room.reserve_bytes,
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
        s->view_made = made;
        if (rr < 0 && r->cfg.scope_store) {
                store_lock(r);
                sfs_ocistore_drop_scope(r->cfg.scope_store, s->name);
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
                        const struct sfs_scope_request *req, json_object **out,
                        struct sfs_msg *m)
{
        struct scope *s;
        int pidfd = -1, rr;

        if ((rr = create_request_valid(r, c, req, m)) < 0)
                return rr;
        s = calloc(1, sizeof(*s));
        if (!s || !(s->view = strdup(req->view))) {
                free(s);
                return msg(m, ENOMEM, "out of memory");
        }
        snprintf(s->name, sizeof(s->name), "%s", req->name);
        s->reg = r;
        s->users = (struct sfs_scope_users){ .uids = req->uids, .has_gid = req->has_gid,
                                             .gid = req->gid };
        s->publish = req->publish;
        if ((rr = scope_limits(r, &req->limits, &s->limits, m)) < 0) {
                audit(r, c, "refused", "scope-create", req->name, NULL, NULL, req->view, -rr, NULL);
                scope_free(s);
                return rr;
        }
        s->allow_other = needs_allow_other(&s->users, r->cfg.uid);

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (find(r, s->name))
                rr = msg(m, EEXIST, "a scope named %s exists: choose another name, or delete "
                         "it first (snapfs scope rm %s)", s->name, s->name);
        else if (find_view(r, s->view))
                rr = msg(m, EEXIST, "%s is the view of scope %s: give another view, or delete "
                         "that scope first (snapfs scope rm %s)", s->view,
                         find_view(r, s->view)->name, find_view(r, s->view)->name);
        else if ((rr = scope_room(r, m)) == 0 && (rr = room(r)) < 0)
                msg(m, ENOMEM, "out of memory");
        if (rr == 0 && (rr = new_tree(r, s, false)) < 0)
                new_tree_refused(r, s, rr, m);
        if (rr == 0 && req->until_pid) {
                const char *why = NULL;
                rr = sfs_pid_tie(req->until_pid, &pidfd, &s->until_start, &why);
                if (rr < 0)
                        msg(m, -rr, "until_pid %d: %s", (int)req->until_pid,
                            rr == -ESRCH ? why : strerror(-rr));
                s->until_pid = req->until_pid;
                snprintf(s->boot_id, sizeof(s->boot_id), "%s", r->boot_id);
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
                audit(r, c, "scope-create", "scope-create", s->name, NULL, NULL, s->view, 0, NULL);
                *out = scope_json(s, r);
                sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
                return *out ? 0 : msg(m, ENOMEM, "out of memory");
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

int sfs_registry_list(struct sfs_registry *r, json_object **out)
{
        json_object *a = json_object_new_array();
        int rr = a ? 0 : -ENOMEM;

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        for (size_t i = 0; rr == 0 && i < r->n; i++) {
                json_object *o = scope_json(r->v[i], r);
                if (!o || json_object_array_add(a, o) < 0) {
                        json_object_put(o);
                        rr = -ENOMEM;
                }
        }
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (rr < 0) {
                json_object_put(a);
                return rr;
        }
        *out = a;
        return 0;
}

static int add_grant(const struct sfs_grant_info *g, void *ctx)
{
        json_object *o = grant_json(g);

        if (!o || json_object_array_add(ctx, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        return 0;
}

int sfs_registry_show(struct sfs_registry *r, const char *name, json_object **scope,
                      json_object **grants, struct sfs_msg *m)
{
        json_object *a = json_object_new_array(), *o = NULL;
        struct scope *s;
        int rr = a ? 0 : -ENOMEM;

        sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
        s = name ? find(r, name) : NULL;
        if (!s)
                rr = msg(m, ENOENT, NO_SCOPE, name ? name : "", name ? name : "");
        if (rr == 0)
                rr = sfs_scope_foreach_grant(s->tree, add_grant, a);
        if (rr == 0 && !(o = scope_json(s, r)))
                rr = -ENOMEM;
        sfs_unlock_order(&r->lock, SFS_LOCK_REGISTRY);
        if (rr < 0) {
                json_object_put(a);
                json_object_put(o);
                return rr;
        }
        *scope = o;
        *grants = a;
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
        audit(r, c, rr == 0 ? what : "refused", what, s->name,
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
                       const struct snap_digest *d, const char *entry, json_object **grant,
                       struct sfs_msg *m)
{
        const struct sfs_scope_op op = { .kind = SFS_SCOPE_GRANT, .has_digest = true,
                                         .digest = *d, .entry = entry };
        struct sfs_grant_info info;
        int rr = change(r, c, scope, &op, &info, m);

        if (rr < 0)
                return rr;
        *grant = grant_json(&info);
        return *grant ? 0 : msg(m, ENOMEM, "out of memory");
}

int sfs_registry_grant_hook(void *ctx, const struct sfs_caller *c, const char *scope,
                            const struct snap_digest *d, const char *entry)
{
        struct sfs_msg m;
        json_object *g = NULL;
        int rr = sfs_registry_grant(ctx, c, scope, d, entry, &g, &m);

        json_object_put(g);
        return rr;
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

/* The dangling grants of s for hex taken out of it: into ops (entries, then NULL for a grant
 * by digest alone, at most max - 1 of them, each a strdup'd entry or NULL), their count. */
static size_t dangling_take(struct scope *s, const char *hex, char **ops, size_t max)
{
        size_t n = 0, i;

        for (i = s->dangling_entries ? json_object_array_length(s->dangling_entries) : 0;
             i-- > 0;) {
                json_object *e = json_object_array_get_idx(s->dangling_entries, i);
                const char *eh = json_str(e, "sha256"), *name = json_str(e, "name");
                if (!eh || strcmp(eh, hex) != 0 || !name || n + 1 >= max)
                        continue;
                if (!(ops[n] = strdup(name)))
                        break;
                n++;
                json_object_array_del_idx(s->dangling_entries, i, 1);
        }
        for (i = s->dangling_grants ? json_object_array_length(s->dangling_grants) : 0;
             i-- > 0;) {
                json_object *g = json_object_array_get_idx(s->dangling_grants, i);
                const char *gh = json_str(g, "sha256");
                if (!gh || strcmp(gh, hex) != 0)
                        continue;
                if (n == 0) /* a grant by digest alone: granted again as one */
                        ops[n++] = NULL;
                json_object_array_del_idx(s->dangling_grants, i, 1);
        }
        return n;
}

/* The main mount published d: every scope's grant of d that was dangling since the start
 * (its bytes were missing) is granted again, its entries too, as the daemon's own request. */
static void dangling_published(void *ctx, const struct snap_digest *d)
{
        struct sfs_registry *r = ctx;
        const struct sfs_caller c = { .uid = r->cfg.uid, .gid = r->cfg.gid, .pid = getpid() };
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        snap_digest_to_hex(d, hex);
        for (;;) {
                char name[SNAP_NAME_MAX + 1] = "", *ops[65]; /* a round: the rest next */
                size_t n = 0;

                /* The store's lock too: a publish in a view writes the scope's file (and
                 * reads its dangling lists) holding that one alone. */
                sfs_lock_order(&r->lock, SFS_LOCK_REGISTRY);
                store_lock(r);
                for (size_t i = 0; i < r->n && n == 0; i++) {
                        n = dangling_take(r->v[i], hex, ops, ARRAY_SIZE(ops));
                        if (n)
                                snprintf(name, sizeof(name), "%s", r->v[i]->name);
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

static json_object *field(json_object *o, const char *key, json_type type)
{
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static bool uint_field(json_object *o, const char *key, uint64_t max, uint64_t *out)
{
        json_object *v = field(o, key, json_type_int);
        int64_t x;

        if (!v)
                return false;
        x = json_object_get_int64(v);
        if (x < 0 || (uint64_t)x > max)
                return false;
        *out = (uint64_t)x;
        return true;
}

/* A scope's file back into s (its tree made, not its view): 0, or -EINVAL. */
static int parse_file(struct sfs_registry *r, struct scope *s, json_object *doc)
{
        json_object *uids = field(doc, "uids", json_type_array), *until, *v;
        json_object *lim = field(doc, "limits", json_type_object);
        const char *view;
        uint64_t x;

        /* The limits first: a scope without them is refused by its tree as well
         * (sfs_tree_new_scope), so each check after them refuses on its own account. */
        if (!json_object_is_type(doc, json_type_object) || !lim ||
            !uint_field(lim, "max_snapshots", UINT64_MAX >> 1, &s->limits.max_snapshots) ||
            !uint_field(lim, "max_bytes", UINT64_MAX >> 1, &s->limits.max_bytes) ||
            !uint_field(lim, "max_staging", UINT32_MAX, &s->limits.max_staging) ||
            !uint_field(lim, "max_staging_bytes", UINT64_MAX >> 1, &s->limits.max_staging_bytes) ||
            /* A file written before scopes had minimums has none: 0. */
            (json_object_object_get_ex(lim, "min_bytes", NULL) &&
             !uint_field(lim, "min_bytes", UINT64_MAX >> 1, &s->limits.min_bytes)))
                return -EINVAL;
        if (!uint_field(doc, "version", 1, &x) || !(v = field(doc, "name", json_type_string)) ||
            strcmp(json_object_get_string(v), s->name) != 0 ||
            !(v = field(doc, "view", json_type_string)) || !uids ||
            json_object_array_length(uids) > VALUE_UID_LIST_MAX)
                return -EINVAL;
        view = json_object_get_string(v);
        if (!sfs_view_path_canonical(view) || !(s->view = strdup(view)))
                return -EINVAL;
        s->view_made = (v = field(doc, "view_made", json_type_boolean)) && json_object_get_boolean(v);
        s->publish = (v = field(doc, "publish", json_type_boolean)) && json_object_get_boolean(v);
        for (size_t i = 0; i < json_object_array_length(uids); i++) {
                json_object *u = json_object_array_get_idx(uids, i);
                int64_t uid = json_object_is_type(u, json_type_int) ? json_object_get_int64(u) : -1;
                if (uid < 0 || uid >= UINT32_MAX)
                        return -EINVAL;
                s->users.uids.uids[s->users.uids.n++] = (uid_t)uid;
        }
        if (uint_field(doc, "gid", UINT32_MAX - 1, &x)) {
                s->users.has_gid = true;
                s->users.gid = (gid_t)x;
        }
        if ((until = field(doc, "until", json_type_object))) {
                const char *boot;
                if (!uint_field(until, "pid", INT32_MAX, &x) ||
                    !uint_field(until, "start", UINT64_MAX >> 1, &s->until_start) ||
                    !(v = field(until, "boot_id", json_type_string)))
                        return -EINVAL;
                s->until_pid = (pid_t)x;
                boot = json_object_get_string(v);
                snprintf(s->boot_id, sizeof(s->boot_id), "%s", boot);
        }
        s->allow_other = needs_allow_other(&s->users, r->cfg.uid);
        return 0;
}

/* The grants of a scope's file whose snapshot is not stored (its blob lost, or set aside at
 * this start), and the entries naming them, kept in s as written: never dropped for good
 * because bytes went missing (docs/design.md, "The store"). 0 or -ENOMEM. */
static int dangling_collect(struct sfs_registry *r, struct scope *s, json_object *grants,
                            json_object *entries)
{
        struct snap_store *store = sfs_tree_store(r->cfg.main);
        size_t n = json_object_array_length(grants), ne = json_object_array_length(entries);

        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_array_get_idx(grants, i);
                const char *hex = json_str(g, "sha256");
                struct snap_digest d;
                struct snap_object *o;

                if (!hex || snap_digest_from_hex(hex, strlen(hex), &d) < 0)
                        continue; /* the tree's restore refuses the file */
                if ((o = snap_store_lookup(store, &d))) {
                        snap_store_release(store, o);
                        continue;
                }
                if ((!s->dangling_grants && !(s->dangling_grants = json_object_new_array())) ||
                    (!s->dangling_entries && !(s->dangling_entries = json_object_new_array())) ||
                    json_object_array_add(s->dangling_grants, json_object_get(g)) < 0)
                        return -ENOMEM;
                for (size_t j = 0; j < ne; j++) {
                        json_object *e = json_object_array_get_idx(entries, j);
                        const char *eh = json_str(e, "sha256");
                        if (eh && strcmp(eh, hex) == 0 &&
                            json_object_array_add(s->dangling_entries, json_object_get(e)) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* The grants and entries of a scope's file back into its tree, each under the inode number
 * its view had it under: 0, or -EINVAL for a file without them. */
static int restore_grants(struct scope *s, json_object *doc, struct restoring *rs,
                          struct sfs_scope_effects *fx)
{
        json_object *grants = field(doc, "grants", json_type_array);
        json_object *entries = field(doc, "entries", json_type_array);
        uint64_t next_ino;
        int rr;

        if (!grants || !entries)
                return -EINVAL;
        rr = dangling_collect(s->reg, s, grants, entries);
        if (rr < 0)
                return rr;
        /* The view's counter as it was: a file of before has none (0). */
        if (!uint_field(doc, "next_ino", INT64_MAX, &next_ino))
                next_ino = 0;
        return sfs_scope_restore(s->tree, grants, entries, next_ino, warn_grant, rs, fx);
}

static int restore_one(void *ctx, const char *name, const char *text, size_t len, int err)
{
        struct restoring *rs = ctx;
        struct sfs_registry *r = rs->r;
        struct sfs_scope_effects fx = { 0 };
        json_object *doc = NULL;
        struct sfs_msg m = { .text = "" };
        struct scope *s;
        int pidfd = -1, rr;
        bool made = false;

        if (err) {
                warn(rs, "scope %s: its file cannot be read (%s); left as it is, and nothing "
                     "is collected at this start", name, strerror(-err));
                rs->unreadable = true;
                return 0;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        snprintf(s->name, sizeof(s->name), "%s", name);
        s->reg = r;
        /* The daemon's one strict parser: a file with a key twice is two files to two
         * readers (common/json.h). */
        rr = json_parse_strict(text, len, SFS_OCISTORE_SCOPE_MAX, &doc);
        if (rr == 0)
                rr = parse_file(r, s, doc);
        if (rr == 0 && (find(r, s->name) || find_view(r, s->view)))
                rr = -EINVAL;
        if (rr == 0)
                rr = room(r);
        if (rr == 0)
                rr = new_tree(r, s, true);
        if (rr < 0) {
                warn(rs, "scope %s: its file does not parse (%s); left as it is, and nothing is "
                     "collected at this start", name, strerror(-rr));
                rs->unreadable = true;
                json_object_put(doc);
                scope_free(s);
                return 0;
        }
        rr = restore_grants(s, doc, rs, &fx);
        json_object_put(doc);
        collect_gone(r, s, &fx);
        sfs_scope_effects_free(&fx);
        if (rr < 0) {
                warn(rs, "scope %s: its grants do not parse (%s); left as it is, and nothing is "
                     "collected at this start", name, strerror(-rr));
                rs->unreadable = true;
                scope_free(s);
                return 0;
        }
        s->id = r->next_id++;
        insert(r, s);
        /* Tied to a process: re-tied to it if it still runs (same boot, same start), else
         * the scope goes, as it would have when that process ended. */
        if (s->until_pid) {
                bool same = r->boot_id[0] && strcmp(s->boot_id, r->boot_id) == 0 &&
                            sfs_pid_same(s->until_pid, s->until_start);
                uint64_t start = 0;
                if (same && sfs_pid_tie(s->until_pid, &pidfd, &start, NULL) == 0 &&
                    start == s->until_start && sfs_pidwatch_add(r->pw, pidfd, s->id) == 0) {
                        pidfd = -1;
                } else {
                        safe_close(pidfd);
                        warn(rs, "scope %s: its until-pid %d is gone; the scope is removed", name,
                             (int)s->until_pid);
                        remove_scope(r, s, NULL, "until-pid exited");
                        return 0;
                }
        }
        rr = mount_view(r, s, true, &made, &m);
        if (rr < 0) {
                /* Kept with its grants, unserved: the operator removes it or fixes the path
                 * and restarts. */
                warn(rs, "scope %s: its view is not mounted: %s", name, m.text);
                return 0;
        }
        if (made && !s->view_made) {
                s->view_made = true;
                store_lock(r);
                write_file(s, NULL);
                store_unlock(r);
        }
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
