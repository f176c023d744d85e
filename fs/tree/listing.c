/* SPDX-License-Identifier: MIT */
/* Directory listings (the root streamed from the store), statfs and the tree's counters. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/tree/tree-internal.h"
#include "common/util.h"

#include "snapshot/digest.h"

/* ---- directories ---- */

/* Offsets of the root's entries: "." 0, ".." 1, .staging 2, .control 3, then a snapshot's
 * offset is its inode number (at least SFS_FIRST_INO; in a scope's view, its listing key):
 * each entry's next offset is one more, so a READDIR resumes after the last entry the kernel
 * took, whatever was published or removed in between. */
#define ROOT_CONTROL_OFF SFS_CONTROL_INO
#define ROOT_FIRST_SNAPSHOT_OFF SFS_FIRST_INO
#define LIST_BATCH 64

int sfs_tree_opendir(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct sfs_dir **out)
{
        struct sfs_uidstage *st = NULL;
        struct snap_store_stats stats;
        struct sfs_dir *d = NULL;
        size_t cap = 0;
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        if (r < 0)
                goto out;
        if (node_kind(n) != SFS_KIND_ROOT && node_kind(n) != SFS_KIND_STAGING_DIR) {
                r = -ENOTDIR;
                goto out;
        }
        if (node_kind(n) == SFS_KIND_STAGING_DIR) {
                st = sfs_stage_find(t, c->uid, false);
                for (struct sfs_node *s = st ? st->head : NULL; s; s = s->next_staged)
                        cap++;
        }
        d = calloc(1, sizeof(*d) + cap * sizeof(d->e[0]));
        if (!d) {
                r = -ENOMEM;
                goto out;
        }
        d->ino = n->ino;
        if (node_kind(n) == SFS_KIND_ROOT) {
                d->root = true;
                d->staging_entry = !t->cfg.read_only && !c->read_view;
                /* The control channel is listed for those who may use it alone. */
                d->control_entry = !t->scope && !t->cfg.read_only && sfs_may_control(&t->cfg, c);
                if (t->scope) {
                        d->max_seq = t->scope->grants.next_key - 1;
                } else {
                        snap_store_get_stats(t->store, &stats);
                        d->max_seq = stats.seq;
                }
        } else {
                for (struct sfs_node *s = st ? st->head : NULL; s; s = s->next_staged) {
                        struct sfs_dirent *e = &d->e[d->n++];
                        e->ino = s->ino;
                        e->mode = S_IFREG;
                        snprintf(e->name, sizeof(e->name), "%s", s->stg->name);
                }
        }
        d->id.id = sfs_next_handle_id(t);
        pthread_mutex_lock(&t->ids_lock);
        sfs_idmap_add(&t->ids_dirs, &d->id);
        pthread_mutex_unlock(&t->ids_lock);
        LIST_ADD(t->dirs, d);
        *out = d;
out:
        tree_unlock(t);
        if (r == -EACCES)
                sfs_tree_refuse(t, c, "opendir", NULL, EACCES);
        return r;
}

struct batch {
        uint64_t max_seq;
        size_t n;
        struct sfs_dirent e[LIST_BATCH];
};

static int batch_add(const struct snap_object *o, void *ctx)
{
        struct batch *b = ctx;
        struct sfs_dirent *e;

        if (o->seq > b->max_seq)
                return 0; /* published after opendir */
        e = &b->e[b->n++];
        e->ino = o->ino;
        e->mode = S_IFREG;
        snap_digest_to_hex(&o->digest, e->name);
        return b->n == LIST_BATCH;
}

/* A scope's root from key off on: its digests and entries in key order, copied a batch at a
 * time under the tree's lock and filled without it (fill may look names up). An entry shows
 * its digest's inode number: one node, two names. */
static int readdir_scope(struct sfs_tree *t, struct sfs_dir *d, off_t off,
                         int (*fill)(void *ctx, const char *name, uint64_t ino, mode_t mode,
                                     off_t next_off),
                         void *ctx)
{
        struct {
                size_t n;
                uint64_t key[LIST_BATCH];
                struct sfs_dirent e[LIST_BATCH];
        } *b = malloc(sizeof(*b));
        uint64_t from = (uint64_t)off > ROOT_FIRST_SNAPSHOT_OFF ? (uint64_t)off
                                                                : ROOT_FIRST_SNAPSHOT_OFF;

        if (!b)
                return -ENOMEM;
        for (;;) {
                const struct sfs_grants *g;
                size_t i;

                b->n = 0;
                tree_lock(t);
                g = &t->scope->grants;
                for (i = sfs_grants_listed_from(g, from); i < g->n_listed && b->n < LIST_BATCH;
                     i++) {
                        const struct sfs_listed *l = &g->listed[i];
                        struct sfs_dirent *e = &b->e[b->n];
                        if (l->key > d->max_seq)
                                break; /* granted after opendir */
                        if (l->entry) {
                                snprintf(e->name, sizeof(e->name), "%s", l->entry->name);
                                e->ino = l->entry->target->ino;
                        } else {
                                snap_digest_to_hex(&l->grant->digest, e->name);
                                e->ino = l->grant->ino;
                        }
                        e->mode = S_IFREG;
                        b->key[b->n++] = l->key;
                }
                tree_unlock(t);
                for (i = 0; i < b->n; i++)
                        if (fill(ctx, b->e[i].name, b->e[i].ino, b->e[i].mode,
                                 (off_t)(b->key[i] + 1))) {
                                free(b);
                                return 0;
                        }
                if (b->n < LIST_BATCH)
                        break;
                from = b->key[b->n - 1] + 1;
        }
        free(b);
        return 0;
}

int sfs_tree_readdir(struct sfs_tree *t, struct sfs_dir *d, off_t off,
                     int (*fill)(void *ctx, const char *name, uint64_t ino, mode_t mode,
                                 off_t next_off),
                     void *ctx)
{
        struct batch *b;
        uint64_t from;

        if (!d)
                return -EBADF;
        if (off < 0)
                return -EINVAL;
        if (!d->root) {
                /* ".", "..", then the caller's staging files as taken at opendir. */
                for (size_t i = (size_t)off; i < d->n + 2; i++) {
                        const char *name = i == 0 ? "." : i == 1 ? ".." : d->e[i - 2].name;
                        uint64_t ino = i == 0 ? d->ino : i == 1 ? SFS_ROOT_INO : d->e[i - 2].ino;
                        mode_t mode = i < 2 ? S_IFDIR : d->e[i - 2].mode;
                        if (fill(ctx, name, ino, mode, (off_t)(i + 1)))
                                return 0;
                }
                return 0;
        }
        if (off < 1 && fill(ctx, ".", d->ino, S_IFDIR, 1))
                return 0;
        if (off < 2 && fill(ctx, "..", SFS_ROOT_INO, S_IFDIR, 2))
                return 0;
        if (off < ROOT_CONTROL_OFF && d->staging_entry &&
            fill(ctx, SFS_STAGING_NAME, SFS_STAGING_INO, S_IFDIR, ROOT_CONTROL_OFF))
                return 0;
        if (off < ROOT_FIRST_SNAPSHOT_OFF && d->control_entry &&
            fill(ctx, SFS_CONTROL_NAME, SFS_CONTROL_INO, S_IFREG, ROOT_FIRST_SNAPSHOT_OFF))
                return 0;
        if (t->scope)
                return readdir_scope(t, d, off, fill, ctx);
        b = malloc(sizeof(*b));
        if (!b)
                return -ENOMEM;
        from = (uint64_t)off > ROOT_FIRST_SNAPSHOT_OFF ? (uint64_t)off : ROOT_FIRST_SNAPSHOT_OFF;
        for (;;) {
                b->n = 0;
                b->max_seq = d->max_seq;
                /* Copied under the store's lock, filled without it: fill may look names up. */
                /* The main mount lists what some uid holds: a snapshot only granted to
                 * scopes is theirs (docs/design.md, "Scopes"). */
                snap_store_foreach_from(t->store, from, SNAP_FOREACH_HELD, batch_add, b);
                for (size_t i = 0; i < b->n; i++)
                        if (fill(ctx, b->e[i].name, b->e[i].ino, b->e[i].mode,
                                 (off_t)(b->e[i].ino + 1))) {
                                free(b);
                                return 0;
                        }
                if (b->n < LIST_BATCH)
                        break;
                from = b->e[b->n - 1].ino + 1;
        }
        free(b);
        return 0;
}

void sfs_tree_releasedir(struct sfs_tree *t, struct sfs_dir *d)
{
        if (!d)
                return;
        tree_lock(t);
        pthread_mutex_lock(&t->ids_lock);
        sfs_idmap_del(&t->ids_dirs, &d->id);
        pthread_mutex_unlock(&t->ids_lock);
        LIST_DEL(t->dirs, d);
        tree_unlock(t);
        free(d);
}

/* ---- statfs and stats ---- */

static uint64_t sub0(uint64_t a, uint64_t b)
{
        return a > b ? a - b : 0;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

/* A view answers for its scope alone: its limits and what it uses of them, never how full
 * the daemon's store is (that moves with what other scopes publish). */
static int statfs_scope(struct sfs_tree *t, struct statvfs *sv)
{
        const struct sfs_scope_limits *l = &t->scope->limits;
        const unsigned long bsize = 4096;
        struct sfs_scope_usage u;

        sfs_scope_get_usage(t, &u);
        memset(sv, 0, sizeof(*sv));
        sv->f_bsize = bsize;
        sv->f_frsize = bsize;
        sv->f_blocks = l->max_bytes / bsize;
        sv->f_bfree = sv->f_bavail = sub0(l->max_bytes, u.bytes + u.staging_bytes) / bsize;
        sv->f_files = l->max_snapshots;
        sv->f_ffree = sv->f_favail = sub0(l->max_snapshots, u.snapshots);
        sv->f_namemax = SNAP_DIGEST_HEX_LEN;
        return 0;
}

int sfs_tree_statfs(struct sfs_tree *t, const struct sfs_caller *c, struct statvfs *sv)
{
        struct snap_store_stats s;
        struct snap_store_usage u;
        const unsigned long bsize = 4096;
        uint64_t free_bytes, free_files, avail_bytes, avail_files;
        int r;

        /* Like every other request: a uid outside the policies learns nothing, not even how
         * full the mount is (which moves with what others publish). */
        tree_lock(t);
        r = sfs_check_visible(t, c, &t->root);
        tree_unlock(t);
        if (r < 0)
                return sfs_tree_refuse(t, c, "statfs", NULL, -r);
        if (t->scope)
                return statfs_scope(t, sv);
        snap_store_get_stats(t->store, &s);
        free_bytes = sub0(t->cfg.max_bytes, s.bytes + s.reserved);
        free_files = sub0(t->cfg.max_snapshots, s.objects);
        avail_bytes = free_bytes;
        avail_files = free_files;
        /* df as the caller sees it: what it may still publish, not what the mount has. */
        if (c->uid != t->cfg.owner_uid) {
                snap_store_get_usage(t->store, (uint32_t)c->uid, &u);
                /* Less the owner's reserve and what is kept for scopes' minimums. */
                avail_bytes = min64(sub0(free_bytes, t->reserve_bytes + s.kept),
                                    sub0(t->cfg.max_uid_bytes, u.bytes));
                avail_files = min64(sub0(free_files, t->reserve_objects),
                                    sub0(t->cfg.max_uid_snapshots, u.objects));
        }
        memset(sv, 0, sizeof(*sv));
        sv->f_bsize = bsize;
        sv->f_frsize = bsize;
        sv->f_blocks = t->cfg.max_bytes / bsize;
        sv->f_bfree = free_bytes / bsize;
        sv->f_bavail = avail_bytes / bsize;
        sv->f_files = t->cfg.max_snapshots;
        /* Linux's statfs has no f_favail (statvfs copies f_ffree into it): the caller's own
         * count goes in both, or nobody would ever see it. */
        sv->f_ffree = avail_files;
        sv->f_favail = avail_files;
        sv->f_namemax = SNAP_DIGEST_HEX_LEN;
        return 0;
}


void sfs_tree_get_stats(struct sfs_tree *t, struct sfs_tree_stats *st)
{
        struct snap_store_stats s;

        tree_lock(t);
        snap_store_get_stats(t->store, &s);
        st->snapshots = s.indexed;
        st->bytes = s.bytes;
        st->reserved = s.reserved;
        st->staging_files = t->staging_files;
        tree_unlock(t);
}
