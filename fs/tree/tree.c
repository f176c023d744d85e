/* SPDX-License-Identifier: MIT */
/* Nodes and handles: the tree's lifetime, lookups, attributes, visibility, the per-uid
 * staging lists, and the audit line of a refusal. The operations on files, renames, listings
 * and xattrs are built on these in file.c, publish.c, listing.c and xattr.c. */
#include "fs/tree/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snapshot/binding.h"
#include "fs/base/inostate.h"
#include "fs/tree/tree-internal.h"
#include "common/array.h"
#include "common/util.h"

#define DIR_ATTR_TIMEOUT 1.0

/* The locks this thread holds, by level (fs/base/lockorder.h). */
__thread unsigned sfs_locks_held;

/* ---- refusals ---- */

int sfs_refused(struct sfs_tree *t, const struct sfs_caller *c, const char *event,
                const char *op, const char *name, const char *target, int err)
{
        const char *digest = NULL;
        /* A well-formed digest goes in the digest field so audits can be joined on it. */
        if (name && snap_is_digest_name(name)) {
                digest = name;
                name = NULL;
        }
        sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                             .event = event,
                                             .op = op,
                                             .uid = c->uid,
                                             .pid = c->pid,
                                             .digest = digest,
                                             .name = name,
                                             .target = target,
                                             .err = err,
                                             .scope = t->scope ? t->scope->name : NULL,
                                     });
        return -err;
}

int sfs_tree_refuse(struct sfs_tree *t, const struct sfs_caller *c, const char *op,
                    const char *name, int err)
{
        return sfs_refused(t, c, "refused", op, name, NULL, err);
}

/* ---- lifecycle ---- */

/* Every inode number goes into the state a successor reads, before anyone is told it. */
static const uint8_t *(*content_adopt)(const struct snap_object *o);
static void (*content_freed)(const struct snap_object *o);

static void ino_noted(void *ctx, const struct snap_digest *d, uint64_t ino)
{
        sfs_inostate_note(ctx, d ? d->bytes : NULL, ino, 0);
}

int sfs_tree_new(const struct sfs_tree_config *cfg, struct sfs_tree **out)
{
        struct sfs_tree *t;
        int r;

        if (!cfg->max_snapshot_size || !cfg->max_bytes || !cfg->max_snapshots ||
            !cfg->max_staging)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->cfg = *cfg;
        sfs_tree_config_derive(&t->cfg);
        /* The owner keeps a sixteenth that nobody else may use, so it can always publish. */
        t->reserve_objects = cfg->max_snapshots / 16;
        t->reserve_bytes = cfg->max_bytes / 16;
        r = snap_store_new(&(struct snap_store_config){
                                   .max_object_size = cfg->max_snapshot_size,
                                   .max_bytes = cfg->max_bytes,
                                   .max_objects = cfg->max_snapshots,
                                   .first_ino = SFS_FIRST_INO,
                                   .max_uid_objects = t->cfg.max_uid_snapshots,
                                   .max_uid_bytes = t->cfg.max_uid_bytes,
                                   .privileged_uid = (uint32_t)cfg->owner_uid,
                                   .reserve_objects = t->reserve_objects,
                                   .reserve_bytes = t->reserve_bytes,
                                   .ino_noted = ino_noted,
                                   .ino_ctx = cfg->inostate,
                                   .adopt = content_adopt,
                                   .freed = content_freed,
                           },
                           &t->store);
        if (r < 0) {
                free(t);
                return r;
        }
        /* Never a number a predecessor handed out: the kernel may still hold it. */
        snap_store_skip_inos(t->store, sfs_inostate_next(cfg->inostate));
        r = sfs_tree_init_common(t);
        if (r < 0) {
                snap_store_free(t->store);
                free(t);
                return r;
        }
        /* The main mount's control channel: owner and root (docs/design.md). */
        t->control.kind = SFS_KIND_CONTROL;
        t->control.ino = t->control.id.id = SFS_CONTROL_INO;
        sfs_idmap_add(&t->ids_nodes, &t->control.id);
        *out = t;
        return 0;
}

void sfs_ctl_free(struct sfs_ctl *ctl)
{
        if (!ctl)
                return;
        free(ctl->reply);
        free(ctl);
}

int sfs_tree_init_common(struct sfs_tree *t)
{
        /* Staged bytes counted against the tree's own limits (a scope's, in a scope's; its
         * minimum's keep, budget.keep, is the scope's to set). */
        t->budget.store = t->store;
        t->budget.max_size = t->cfg.max_snapshot_size;
        t->budget.max_uid_bytes = t->cfg.max_staging_bytes;
        if (sfs_idmap_init(&t->ids_nodes) < 0 || sfs_idmap_init(&t->ids_handles) < 0 ||
            sfs_idmap_init(&t->ids_dirs) < 0) {
                sfs_idmap_free(&t->ids_nodes);
                sfs_idmap_free(&t->ids_handles);
                sfs_idmap_free(&t->ids_dirs);
                return -ENOMEM;
        }
        pthread_mutex_init(&t->lock, NULL);
        pthread_mutex_init(&t->ids_lock, NULL);
        /* Each generation of the daemon hands out handle ids of its own: one a predecessor
         * gave the kernel can never name another file here (wrong bytes to its reader). */
        t->fh_base = ((uint64_t)sfs_inostate_generation(t->cfg.inostate) << 40) + 1;
        t->next_fh = t->fh_base;
        t->next_watch_ino = SFS_WATCH_FIRST_INO;
        t->root.kind = SFS_KIND_ROOT;
        t->root.ino = t->root.id.id = SFS_ROOT_INO;
        t->staging.kind = SFS_KIND_STAGING_DIR;
        t->staging.ino = t->staging.id.id = SFS_STAGING_INO;
        sfs_idmap_add(&t->ids_nodes, &t->root.id);
        sfs_idmap_add(&t->ids_nodes, &t->staging.id);
        clock_gettime(CLOCK_REALTIME, &t->dir_mtime);
        return 0;
}

void sfs_tree_set_scope_grant(struct sfs_tree *t,
                              int (*grant)(void *ctx, const struct sfs_caller *c,
                                           const char *scope, const struct snap_digest *d,
                                           const char *entry),
                              void *ctx)
{
        tree_lock(t);
        t->grant_hook = (struct sfs_grant_hook){ .grant = grant, .ctx = ctx };
        tree_unlock(t);
}

void sfs_tree_set_control(struct sfs_tree *t,
                          int (*exec)(void *ctx, const struct sfs_caller *c, const char *req,
                                      size_t len, char **reply, size_t *reply_len),
                          void *ctx)
{
        tree_lock(t);
        t->control_hook = (struct sfs_control_hook){ .exec = exec, .ctx = ctx };
        tree_unlock(t);
}

void sfs_tree_set_published(struct sfs_tree *t,
                            void (*fn)(void *ctx, const struct snap_digest *d), void *ctx)
{
        tree_lock(t);
        t->published_hook = (struct sfs_published_hook){ .fn = fn, .ctx = ctx };
        tree_unlock(t);
}

static void node_free(struct sfs_tree *t, struct sfs_node *n)
{
        if (n->kind == SFS_KIND_SNAPSHOT)
                snap_store_release(t->store, n->obj);
        else if (n->watch)
                sfs_watches_remove(&t->watches, n->watch);
        else if (n->stg)
                sfs_staging_free(n->stg);
        pthread_mutex_lock(&t->ids_lock);
        sfs_idmap_del(&t->ids_nodes, &n->id);
        pthread_mutex_unlock(&t->ids_lock);
        LIST_DEL(t->nodes, n);
        t->nnodes--;
        free(n);
}

void sfs_tree_free(struct sfs_tree *t)
{
        if (!t)
                return;
        while (t->handles) {
                struct sfs_handle *h = t->handles;
                LIST_DEL(t->handles, h);
                sfs_ctl_free(h->ctl);
                free(h);
        }
        while (t->dirs) {
                struct sfs_dir *d = t->dirs;
                LIST_DEL(t->dirs, d);
                free(d);
        }
        while (t->nodes)
                node_free(t, t->nodes);
        for (size_t i = 0; i < t->nstages; i++)
                free(t->stages[i]);
        free(t->stages);
        free(t->view_path);
        if (t->scope)
                sfs_scope_state_free(t);
        else
                snap_store_free(t->store);
        sfs_idmap_free(&t->ids_nodes);
        sfs_idmap_free(&t->ids_handles);
        sfs_idmap_free(&t->ids_dirs);
        pthread_mutex_destroy(&t->ids_lock);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

int sfs_tree_set_view_path(struct sfs_tree *t, const char *path)
{
        char *copy = strdup(path);

        if (!copy)
                return -ENOMEM;
        tree_lock(t);
        free(t->view_path);
        t->view_path = copy;
        tree_unlock(t);
        return 0;
}

void sfs_tree_get_config(struct sfs_tree *t, struct sfs_tree_config *out)
{
        tree_lock(t);
        *out = t->cfg;
        tree_unlock(t);
}

struct snap_store *sfs_tree_store(struct sfs_tree *t)
{
        return t->store;
}

void sfs_tree_set_dev(struct sfs_tree *t, uint64_t dev, bool view)
{
        tree_lock(t);
        if (view)
                t->cfg.read_view_dev = dev;
        else
                t->cfg.dev = dev;
        tree_unlock(t);
}

struct sfs_node *sfs_tree_root(struct sfs_tree *t)
{
        return &t->root;
}

enum sfs_kind sfs_node_kind(const struct sfs_node *n)
{
        return node_kind(n);
}

uint64_t sfs_node_ino(const struct sfs_node *n)
{
        return n->ino;
}

/* The node of a snapshot the kernel learnt from a predecessor (docs/design.md, "Taking
 * over"): made again from what the number names, if that content is still served under it
 * here (on the main mount the object the kept number's digest names, in a scope view the
 * grant that carries the number). Visibility is judged by each
 * request, as for any node. It counts one lookup: the kernel holds at least one, and its
 * FORGET (the whole count) frees it. NULL when the number names nothing served. */
static struct sfs_node *adopt_node(struct sfs_tree *t, uint64_t ino)
{
        struct snap_digest d;
        struct snap_object *obj = NULL;
        struct sfs_node *n = NULL;
        struct sfs_grant *g = NULL;

        if (ino < SFS_FIRST_INO)
                return NULL;
        tree_lock(t);
        if (t->scope) {
                /* A view numbers its own inodes, kept with its grants in --store. */
                struct sfs_grants *gs = &t->scope->grants;
                for (size_t i = 0; i < gs->n_digests && !g; i++)
                        if (gs->digests[i]->ino == ino)
                                g = gs->digests[i];
                if (g) {
                        obj = g->obj;
                        snap_store_ref(t->store, obj);
                }
        } else if (sfs_inostate_digest(t->cfg.inostate, ino, 0, d.bytes) == 0) {
                obj = snap_store_lookup(t->store, &d);
                if (obj && obj->ino != ino) {
                        /* Republished since: another object, another number. */
                        snap_store_release(t->store, obj);
                        obj = NULL;
                }
        }
        if (obj)
                n = sfs_snapshot_node(t, obj, ino);
        if (n && g)
                sfs_scope_node_refresh(n, g);
        if (n && !n->nlookup)
                n->nlookup = 1;
        tree_unlock(t);
        return n;
}

struct sfs_node *sfs_node_find(struct sfs_tree *t, uint64_t ino)
{
        struct sfs_idlink *l;

        pthread_mutex_lock(&t->ids_lock);
        l = sfs_idmap_find(&t->ids_nodes, ino);
        pthread_mutex_unlock(&t->ids_lock);
        return l ? container_of(l, struct sfs_node, id) : NULL;
}

struct sfs_node *sfs_tree_node(struct sfs_tree *t, uint64_t ino)
{
        struct sfs_node *n = sfs_node_find(t, ino);

        /* Only a successor was ever named numbers it did not hand out itself. */
        if (!n && t->fh_base > 1)
                n = adopt_node(t, ino);
        return n;
}

bool sfs_tree_id_foreign(struct sfs_tree *t, uint64_t id)
{
        return id && id < t->fh_base;
}

struct sfs_handle *sfs_tree_handle(struct sfs_tree *t, uint64_t id)
{
        struct sfs_idlink *l;

        if (!id)
                return NULL;
        pthread_mutex_lock(&t->ids_lock);
        l = sfs_idmap_find(&t->ids_handles, id);
        pthread_mutex_unlock(&t->ids_lock);
        return l ? container_of(l, struct sfs_handle, id) : NULL;
}

struct sfs_dir *sfs_tree_dir(struct sfs_tree *t, uint64_t id)
{
        struct sfs_idlink *l;

        if (!id)
                return NULL;
        pthread_mutex_lock(&t->ids_lock);
        l = sfs_idmap_find(&t->ids_dirs, id);
        pthread_mutex_unlock(&t->ids_lock);
        return l ? container_of(l, struct sfs_dir, id) : NULL;
}

size_t sfs_tree_open_handles(struct sfs_tree *t)
{
        size_t n;

        pthread_mutex_lock(&t->ids_lock);
        n = t->ids_handles.n + t->ids_dirs.n;
        pthread_mutex_unlock(&t->ids_lock);
        return n;
}

uint64_t sfs_handle_id(const struct sfs_handle *h)
{
        return h->id.id;
}

const struct snap_object *sfs_handle_snapshot(const struct sfs_handle *h)
{
        /* A snapshot node stays one: its kind and content never change. */
        return node_kind(h->node) == SFS_KIND_SNAPSHOT ? h->node->obj : NULL;
}

void sfs_tree_set_content_hooks(const uint8_t *(*adopt)(const struct snap_object *o),
                                void (*freed)(const struct snap_object *o))
{
        content_adopt = adopt;
        content_freed = freed;
}

uint64_t sfs_dir_id(const struct sfs_dir *d)
{
        return d->id.id;
}

/* A handle id never handed out before in this tree. t->lock held. */
uint64_t sfs_next_handle_id(struct sfs_tree *t)
{
        return t->next_fh++;
}

uint32_t sfs_tree_ino_space(const struct sfs_tree *t)
{
        uint32_t h = 2166136261u;

        if (!t->scope)
                return 0;
        for (const char *p = t->scope->name; *p; p++)
                h = (h ^ (uint8_t)*p) * 16777619u;
        return h ? h : 1;
}

uint64_t sfs_tree_alloc_ino(struct sfs_tree *t)
{
        uint64_t ino;

        assert(mutex_held(&t->lock));
        /* A view counts alone: the store's counter moves with every publish of every scope
         * and of the operator, which a sandbox could read off its own new files. */
        if (!t->scope)
                return snap_store_alloc_ino(t->store);
        ino = t->scope->next_ino++;
        /* A staging file's number is in no scope file: kept for a successor before anyone
         * is told it, so it is never handed out again while the kernel may hold it. */
        sfs_inostate_note(t->cfg.inostate, NULL, ino, sfs_tree_ino_space(t));
        return ino;
}

struct sfs_node *sfs_node_new(struct sfs_tree *t, enum sfs_kind kind, uint64_t ino)
{
        assert(mutex_held(&t->lock));
        struct sfs_node *n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;
        n->kind = kind;
        n->ino = n->id.id = ino;
        pthread_mutex_lock(&t->ids_lock);
        sfs_idmap_add(&t->ids_nodes, &n->id);
        pthread_mutex_unlock(&t->ids_lock);
        LIST_ADD(t->nodes, n);
        t->nnodes++;
        return n;
}

/* A node lives while the kernel references it, a handle is open on it, or (staging) it is
 * still listed. Called with t->lock held. */
void sfs_node_maybe_free(struct sfs_tree *t, struct sfs_node *n)
{
        assert(mutex_held(&t->lock));
        if (n == &t->root || n == &t->staging || n == &t->control)
                return;
        if (n->kind == SFS_KIND_STAGING_FILE && n->linked)
                return;
        if (n->pins == 0 && n->stg)
                /* Unlinked and closed: nobody can reach these bytes again, so give their
                 * quota back now rather than when the kernel gets round to forgetting. */
                sfs_staging_drop_content(n->stg);
        if (n->nlookup || n->pins)
                return;
        node_free(t, n);
}

struct sfs_handle *sfs_handle_new(struct sfs_tree *t, struct sfs_node *n, bool write)
{
        assert(mutex_held(&t->lock));
        struct sfs_handle *h = calloc(1, sizeof(*h));
        if (!h)
                return NULL;
        h->node = n;
        h->write = write;
        h->id.id = sfs_next_handle_id(t);
        n->pins++;
        pthread_mutex_lock(&t->ids_lock);
        sfs_idmap_add(&t->ids_handles, &h->id);
        pthread_mutex_unlock(&t->ids_lock);
        LIST_ADD(t->handles, h);
        return h;
}

/* A snapshot's bytes live while the daemon serves them (a handle), never because the kernel
 * still caches a node: the kernel sends FORGET when it likes (or, for an inode a sandbox keeps
 * in its dentry cache, never), and until then a revoked secret stayed in the daemon's memory
 * and charged against --max-bytes (the attack: rotation 17 of a 250 KB entry under
 * --max-bytes 4M refused "the mount is full" until drop_caches). A node without content
 * answers ESTALE to an open, and the kernel looks the name up again: a reader racing a
 * rotation gets what the name names now. */
void sfs_node_drop_content(struct sfs_tree *t, struct sfs_node *n)
{
        assert(mutex_held(&t->lock));
        if (node_kind(n) != SFS_KIND_SNAPSHOT || !n->obj || n->pins || !n->revoked)
                return;
        snap_store_release(t->store, n->obj);
        n->obj = NULL;
}

void sfs_tree_drop_collected(struct sfs_tree *t, struct snap_object *obj)
{
        struct sfs_node *n;

        tree_lock(t);
        n = sfs_node_find(t, obj->ino);
        if (n && node_kind(n) == SFS_KIND_SNAPSHOT && n->obj == obj) {
                n->revoked = true;
                sfs_node_drop_content(t, n);
        }
        tree_unlock(t);
}

static void stage_release_held(struct sfs_tree *t, struct sfs_node *n);

void sfs_handle_del(struct sfs_tree *t, struct sfs_handle *h)
{
        assert(mutex_held(&t->lock));
        struct sfs_node *n = h->node;

        assert(n->pins > 0); /* each handle pins its node once */
        n->pins--;
        if (n->pins == 0 && n->held_in_usage && t->scope) {
                /* The last descriptor of a snapshot its scope unpublished or revoked while
                 * open: its place in the scope's usage goes now (drop_grant kept it). */
                sfs_scope_count(t, false, n->obj->size);
                n->held_in_usage = false;
        }
        pthread_mutex_lock(&t->ids_lock);
        sfs_idmap_del(&t->ids_handles, &h->id);
        pthread_mutex_unlock(&t->ids_lock);
        LIST_DEL(t->handles, h);
        stage_release_held(t, n);
        sfs_node_drop_content(t, n);
        sfs_node_maybe_free(t, n);
}

void sfs_touch_root(struct sfs_tree *t)
{
        assert(mutex_held(&t->lock));
        clock_gettime(CLOCK_REALTIME, &t->dir_mtime);
}

const char *sfs_node_label(struct sfs_node *n, char *buf)
{
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                if (!n->obj)
                        return NULL;
                snap_digest_to_hex(&n->obj->digest, buf);
                return buf;
        case SFS_KIND_STAGING_FILE:
                snprintf(buf, SNAP_DIGEST_HEX_LEN + 1, "%s", n->stg->name);
                return buf;
        case SFS_KIND_STAGING_DIR:
                return SFS_STAGING_NAME;
        case SFS_KIND_CONTROL:
                return SFS_CONTROL_NAME;
        default:
                return NULL;
        }
}

/* ---- attributes ---- */

void sfs_fill_attr(struct sfs_tree *t, struct sfs_node *n, struct stat *st)
{
        assert(mutex_held(&t->lock));
        memset(st, 0, sizeof(*st));
        st->st_ino = n->ino;
        st->st_blksize = 128 * 1024;
        /* The daemon's own nodes are the owner's, as of the root's last change; a snapshot
         * and a staging file say their own below. */
        st->st_uid = t->cfg.owner_uid;
        st->st_gid = t->cfg.owner_gid;
        st->st_atim = st->st_mtim = st->st_ctim = t->dir_mtime;
        switch (node_kind(n)) {
        case SFS_KIND_CONTROL:
                /* The owner's alone; its size says nothing (every read reaches the daemon). */
                st->st_mode = S_IFREG | 0600;
                st->st_nlink = 1;
                break;
        case SFS_KIND_WATCH:
                /* Empty; polled, never read for anything. Unlinked once its entry moved. */
                st->st_mode = S_IFREG;
                st->st_nlink = sfs_watch_moved(n->watch) ? 0 : 1;
                break;
        case SFS_KIND_ROOT:
                st->st_mode = S_IFDIR | 0555;
                st->st_nlink = t->cfg.read_only ? 2 : 3;
                break;
        case SFS_KIND_STAGING_DIR:
                /* Sticky and world-writable like /tmp: every publisher writes here, and each
                 * sees only its own entries. The daemon, not these bits, enforces that. */
                st->st_mode = S_IFDIR | 01777;
                st->st_nlink = 2;
                break;
        case SFS_KIND_SNAPSHOT:
                /* Mode 0000: no path-based access right exists; the daemon mediates all. */
                st->st_mode = S_IFREG;
                if (!n->obj) {
                        /* Collected: nothing left to show but that it is gone. */
                        st->st_uid = t->scope ? n->vuid : t->cfg.owner_uid;
                        st->st_atim = st->st_mtim = st->st_ctim = n->vtime;
                        break;
                }
                st->st_size = (off_t)n->obj->size;
                st->st_blocks = (blkcnt_t)((n->obj->size + 511) / 512);
                if (t->scope) {
                        /* The scope's own record: who published it there and when, or the
                         * owner and the time of the grant; never another scope's. */
                        st->st_nlink = n->revoked ? 0 : 1;
                        st->st_uid = n->vuid;
                        st->st_atim = st->st_mtim = st->st_ctim = n->vtime;
                        break;
                }
                /* 0 once it is no longer published (removed, or its last reference gone),
                   while a descriptor or the kernel still holds it. */
                st->st_nlink = snap_store_indexed(t->store, n->obj) ? 1 : 0;
                st->st_uid = n->obj->publisher_uid;
                st->st_atim = st->st_mtim = st->st_ctim = n->obj->created;
                break;
        case SFS_KIND_STAGING_FILE:
                pthread_mutex_lock(&n->stg->lock);
                sfs_staging_fill_attr(n->stg, st);
                pthread_mutex_unlock(&n->stg->lock);
                break;
        }
}

/* A main-mount snapshot only scopes reference is visible to the owner and root alone: the
 * kernel must ask again for every caller. */
static bool main_unheld(struct sfs_tree *t, struct sfs_node *n)
{
        return !t->scope && node_kind(n) == SFS_KIND_SNAPSHOT && n->obj &&
               !snap_store_held(t->store, n->obj) && snap_store_indexed(t->store, n->obj);
}

static double attr_timeout(struct sfs_tree *t, struct sfs_node *n)
{
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                if (main_unheld(t, n))
                        return 0;
                return sfs_meta_timeout(&t->cfg, t->cfg.cache_timeout);
        case SFS_KIND_STAGING_FILE:
        case SFS_KIND_CONTROL:
        case SFS_KIND_WATCH:
                return 0; /* per uid, and changing */
        default:
                return sfs_meta_timeout(&t->cfg, DIR_ATTR_TIMEOUT);
        }
}

/* Visibility of a node to a caller: -EACCES outside the policy, -ENOENT for another uid's
 * staging file (it must be indistinguishable from an absent one). */
bool sfs_main_may_see_snapshot(struct sfs_tree *t, const struct sfs_caller *c,
                               struct snap_object *obj)
{
        /* Held, or no longer published at all (a descriptor or the kernel still has it:
         * what it read before stays readable). */
        if (t->scope || snap_store_held(t->store, obj) || !snap_store_indexed(t->store, obj))
                return true;
        /* Published in a scope (or kept by grants alone): the scopes' and the operator's.
         * Another uid gets ENOENT, never EACCES: no oracle for a guessed digest. */
        return !c->read_view && sfs_may_control(&t->cfg, c);
}

int sfs_check_visible(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n)
{
        assert(mutex_held(&t->lock));
        switch (node_kind(n)) {
        case SFS_KIND_CONTROL:
                /* Looked up by anyone who may see the root; opened by the owner alone. */
                return sfs_may_see(&t->cfg, c) || sfs_may_control(&t->cfg, c) ? 0 : -EACCES;
        case SFS_KIND_SNAPSHOT:
                if (!sfs_may_see(&t->cfg, c))
                        return -EACCES;
                /* Collected (sfs_node_drop_content): the kernel looks the name up again. */
                if (!n->obj)
                        return -ESTALE;
                return sfs_main_may_see_snapshot(t, c, n->obj) ? 0 : -ENOENT;
        case SFS_KIND_STAGING_FILE:
                if (!n->linked || n->stg->owner != c->uid)
                        return -ENOENT;
                return sfs_may_publish(&t->cfg, c) ? 0 : -EACCES;
        case SFS_KIND_STAGING_DIR:
                return sfs_may_publish(&t->cfg, c) ? 0 : -EACCES;
        default:
                return sfs_may_see(&t->cfg, c) ? 0 : -EACCES;
        }
}

bool sfs_tree_may_check_store(struct sfs_tree *t, const struct sfs_caller *c)
{
        return sfs_may_check_store(&t->cfg, c);
}

int sfs_tree_getattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct stat *st, double *timeout)
{
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        if (r == 0) {
                sfs_fill_attr(t, n, st);
                *timeout = attr_timeout(t, n);
        }
        tree_unlock(t);
        return r;
}

/* ---- a scope's grants, as a lookup and the tree's end need them (scope.c changes them) ---- */

void sfs_scope_state_free(struct sfs_tree *t)
{
        struct sfs_grants *g = &t->scope->grants;

        for (size_t i = 0; i < g->n_digests; i++) {
                struct snap_object *obj = g->digests[i]->obj;
                if (snap_store_ungrant(t->store, obj) == 1)
                        snap_store_release(t->store, obj); /* its publication's */
                snap_store_release(t->store, obj);
        }
        sfs_grants_free(g);
        snap_store_keep_free(t->store, t->budget.keep);
        t->budget.keep = NULL;
        free(t->scope);
        t->scope = NULL;
}

struct sfs_grant *sfs_scope_grant_of(struct sfs_tree *t, const struct snap_digest *d)
{
        return sfs_grants_find(&t->scope->grants, d);
}

struct sfs_grant *sfs_scope_resolve(struct sfs_tree *t, const char *name)
{
        struct sfs_grant_entry *e;
        struct snap_digest d;

        if (snap_digest_from_hex(name, strlen(name), &d) == 0)
                return sfs_grants_find(&t->scope->grants, &d);
        e = sfs_grants_entry(&t->scope->grants, name);
        return e ? e->target : NULL;
}

void sfs_scope_node_refresh(struct sfs_node *n, const struct sfs_grant *g)
{
        n->vuid = g->uid;
        n->vtime = g->created;
        n->revoked = false;
}

/* ---- lookup ---- */

/* The node of a published object under inode number ino (obj->ino on the main mount),
 * creating it on first lookup. Takes over the reference the caller holds on obj. t->lock
 * held. */
struct sfs_node *sfs_snapshot_node(struct sfs_tree *t, struct snap_object *obj, uint64_t ino)
{
        struct sfs_node *n;

        pthread_mutex_lock(&t->ids_lock);
        n = container_of_or_null(sfs_idmap_find(&t->ids_nodes, ino), struct sfs_node, id);
        pthread_mutex_unlock(&t->ids_lock);
        /* An inode number is one object's for the daemon's life: a node found under it is
         * that object's snapshot node. */
        if (n && node_kind(n) == SFS_KIND_SNAPSHOT && n->obj == obj) {
                snap_store_release(t->store, obj);
                return n;
        }
        if (n && node_kind(n) == SFS_KIND_SNAPSHOT && !n->obj) {
                /* Its content was dropped with its grant, and granted again since (the same
                 * object: the inode number is its): the node serves it again. */
                n->obj = obj;
                return n;
        }
        if (n) {
                snap_store_release(t->store, obj);
                return NULL;
        }
        n = sfs_node_new(t, SFS_KIND_SNAPSHOT, ino);
        if (!n) {
                snap_store_release(t->store, obj);
                return NULL;
        }
        n->obj = obj;
        return n;
}

/* The watch of entry as it is now (watch.h): the one not yet moved, or a new node bound to
 * what entry names. Only what a lookup of the entry itself would find: a watch is no
 * oracle, and a digest (which never moves) has none. */
static int lookup_watch(struct sfs_tree *t, const char *entry, struct sfs_node **out)
{
        struct sfs_grant_entry *e;
        struct sfs_watch *w;
        struct sfs_node *n;

        if (!snap_name_valid(entry) || snap_is_digest_name(entry))
                return -ENOENT;
        e = sfs_grants_entry(&t->scope->grants, entry);
        if (!e)
                return -ENOENT;
        w = sfs_watches_find(&t->watches, entry);
        if (w) {
                *out = sfs_watch_node(w);
                return 0;
        }
        n = sfs_node_new(t, SFS_KIND_WATCH, t->next_watch_ino);
        if (!n)
                return -ENOMEM;
        n->watch = sfs_watches_add(&t->watches, entry, &e->target->digest, n);
        if (!n->watch) {
                sfs_node_maybe_free(t, n);
                return -ENOMEM;
        }
        t->next_watch_ino++;
        *out = n;
        return 0;
}

/* A name in a scope's root: .staging when it publishes, a granted digest, an entry. */
static int lookup_scope_root(struct sfs_tree *t, const struct sfs_caller *c, const char *name,
                             struct sfs_node **out)
{
        struct sfs_grant *g;

        if (!sfs_may_see(&t->cfg, c))
                return -EACCES;
        if (!t->cfg.read_only && strcmp(name, SFS_STAGING_NAME) == 0) {
                *out = &t->staging;
                return 0;
        }
        if (strncmp(name, SFS_WATCH_PREFIX, strlen(SFS_WATCH_PREFIX)) == 0)
                return lookup_watch(t, name + strlen(SFS_WATCH_PREFIX), out);
        /* Anything not granted here is absent, whatever the store holds: no oracle. */
        g = sfs_scope_resolve(t, name);
        if (!g)
                return -ENOENT;
        snap_store_ref(t->store, g->obj);
        *out = sfs_snapshot_node(t, g->obj, g->ino);
        if (!*out)
                return -ENOMEM;
        sfs_scope_node_refresh(*out, g);
        return 0;
}

static int lookup_locked(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                         const char *name, struct sfs_node **out)
{
        assert(mutex_held(&t->lock));
        struct snap_digest d;
        struct snap_object *obj;

        switch (node_kind(parent)) {
        case SFS_KIND_ROOT:
                if (t->scope)
                        return lookup_scope_root(t, c, name, out);
                /* Not on a read-only mount, where nothing can write a request. */
                if (strcmp(name, SFS_CONTROL_NAME) == 0 && !c->read_view && !t->cfg.read_only &&
                    (sfs_may_see(&t->cfg, c) || sfs_may_control(&t->cfg, c))) {
                        *out = &t->control;
                        return 0;
                }
                if (!sfs_may_see(&t->cfg, c))
                        return -EACCES;
                if (!t->cfg.read_only && !c->read_view && strcmp(name, SFS_STAGING_NAME) == 0) {
                        *out = &t->staging;
                        return 0;
                }
                if (snap_digest_from_hex(name, strlen(name), &d) < 0)
                        return -ENOENT;
                obj = snap_store_lookup(t->store, &d);
                if (!obj)
                        return -ENOENT;
                if (!sfs_main_may_see_snapshot(t, c, obj)) {
                        snap_store_release(t->store, obj);
                        return -ENOENT;
                }
                *out = sfs_snapshot_node(t, obj, obj->ino);
                return *out ? 0 : -ENOMEM;
        case SFS_KIND_STAGING_DIR: {
                struct sfs_uidstage *st;
                if (!sfs_may_publish(&t->cfg, c))
                        return -EACCES;
                st = sfs_stage_find(t, c->uid, false);
                *out = st ? sfs_stage_lookup(st, name) : NULL;
                return *out ? 0 : -ENOENT;
        }
        default:
                return -ENOTDIR;
        }
}

int sfs_tree_lookup(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, struct sfs_entry *e)
{
        struct sfs_node *n = NULL;
        int r;

        tree_lock(t);
        r = lookup_locked(t, c, parent, name, &n);
        if (r == 0) {
                n->nlookup++;
                e->node = n;
                sfs_fill_attr(t, n, &e->st);
                e->attr_timeout = attr_timeout(t, n);
                /* Staging entries differ per uid: never let the kernel answer from its
                 * dcache, nor for the control channel or a snapshot only the owner may see
                 * there. Snapshots never change while they exist, and every removal goes
                 * through this mount (or, in a view, is invalidated by the daemon), so their
                 * entries can be cached long. */
                e->entry_timeout = node_kind(n) == SFS_KIND_STAGING_FILE ||
                                                   node_kind(n) == SFS_KIND_CONTROL ||
                                                   node_kind(n) == SFS_KIND_WATCH ||
                                                   main_unheld(t, n)
                                           ? 0
                                           : sfs_meta_timeout(&t->cfg, t->cfg.cache_timeout);
        }
        tree_unlock(t);
        if (r == -EACCES)
                sfs_tree_refuse(t, c, "lookup", name, EACCES);
        return r;
}

void sfs_tree_forget(struct sfs_tree *t, struct sfs_node *n, uint64_t nlookup)
{
        tree_lock(t);
        n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
        sfs_node_maybe_free(t, n);
        tree_unlock(t);
}

/* ---- access, setattr on things that never change ---- */

int sfs_tree_access(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                    int mask)
{
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        if (r == 0) {
                switch (node_kind(n)) {
                case SFS_KIND_SNAPSHOT:
                        if (mask & W_OK)
                                r = -EROFS;
                        else if (mask & X_OK)
                                r = -EACCES;
                        else if ((mask & R_OK) && !sfs_may_read(&t->cfg, c))
                                r = -EACCES;
                        break;
                case SFS_KIND_ROOT:
                        if (mask & W_OK)
                                r = -EROFS;
                        break;
                case SFS_KIND_STAGING_DIR:
                        break; /* visible means may publish */
                case SFS_KIND_STAGING_FILE:
                        if (mask & X_OK)
                                r = -EACCES;
                        break;
                case SFS_KIND_WATCH:
                        if (mask & W_OK)
                                r = -EROFS;
                        else if ((mask & X_OK) || ((mask & R_OK) && !sfs_may_read(&t->cfg, c)))
                                r = -EACCES;
                        break;
                case SFS_KIND_CONTROL:
                        if ((mask & X_OK) || ((mask & (R_OK | W_OK)) && !sfs_may_control(&t->cfg, c)))
                                r = -EACCES;
                        break;
                }
        }
        tree_unlock(t);
        return r;
}

/* ---- per-uid staging lists ---- */

struct sfs_uidstage *sfs_stage_find(struct sfs_tree *t, uid_t uid, bool create)
{
        assert(mutex_held(&t->lock));
        struct sfs_uidstage *st;

        for (size_t i = 0; i < t->nstages; i++)
                if (t->stages[i]->uid == uid)
                        return t->stages[i];
        if (!create)
                return NULL;
        if (ARRAY_GROW(t->stages, t->capstages, t->nstages + 1, 8) < 0)
                return NULL;
        st = calloc(1, sizeof(*st));
        if (!st)
                return NULL;
        st->uid = uid;
        t->stages[t->nstages++] = st;
        return st;
}

struct sfs_node *sfs_stage_lookup(struct sfs_uidstage *st, const char *name)
{
        for (struct sfs_node *n = st->head; n; n = n->next_staged)
                if (strcmp(n->stg->name, name) == 0)
                        return n;
        return NULL;
}

void sfs_stage_add(struct sfs_tree *t, struct sfs_uidstage *st, struct sfs_node *n)
{
        assert(mutex_held(&t->lock));
        n->linked = true;
        n->next_staged = st->head;
        st->head = n;
        st->count++;
        t->staging_files++;
}

void sfs_stage_remove(struct sfs_tree *t, struct sfs_node *n, bool hold)
{
        assert(mutex_held(&t->lock));
        struct sfs_uidstage *st = sfs_stage_find(t, n->stg->owner, false);
        struct sfs_node **pp;

        if (!st || !n->linked)
                return;
        for (pp = &st->head; *pp; pp = &(*pp)->next_staged) {
                if (*pp == n) {
                        *pp = n->next_staged;
                        break;
                }
        }
        n->next_staged = NULL;
        n->linked = false;
        /* The attack: create, unlink while holding open, repeat; with the count dropped at
         * unlink, --max-staging 16 allowed 19,000 live staging files. */
        if (hold && n->pins) {
                n->held_by = st;
                return;
        }
        st->count--;
        t->staging_files--;
}

/* The last handle of a staging file unlinked while open: its count goes back now. */
static void stage_release_held(struct sfs_tree *t, struct sfs_node *n)
{
        if (n->pins || !n->held_by)
                return;
        n->held_by->count--;
        t->staging_files--;
        n->held_by = NULL;
}
