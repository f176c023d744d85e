/* SPDX-License-Identifier: MIT */
/* Directory listings (taken whole at opendir), statfs and the tree's counters. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tree-internal.h"
#include "util.h"

#include "digest.h"

/* ---- directories ---- */

struct collect {
        struct sfs_dir *d;
        size_t cap;
};

static int dir_add(struct collect *cl, const char *name, uint64_t ino, mode_t mode)
{
        struct sfs_dirent *e;

        if (cl->d->n == cl->cap) {
                size_t ncap = cl->cap * 2;
                struct sfs_dir *nd = realloc(cl->d, sizeof(*nd) + ncap * sizeof(nd->e[0]));
                if (!nd)
                        return -ENOMEM;
                cl->d = nd;
                cl->cap = ncap;
        }
        e = &cl->d->e[cl->d->n++];
        e->ino = ino;
        e->mode = mode;
        snprintf(e->name, sizeof(e->name), "%s", name);
        return 0;
}

static int collect_object(const struct snap_object *o, void *ctx)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        snap_digest_to_hex(&o->digest, hex);
        return dir_add(ctx, hex, o->ino, S_IFREG);
}

int sfs_tree_opendir(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct sfs_dir **out)
{
        struct collect cl = { .cap = 16 };
        struct snap_store_stats stats;
        int r;

        pthread_mutex_lock(&t->lock);
        r = sfs_check_visible(t, c, n);
        if (r < 0)
                goto out;
        if (node_kind(n) != SFS_KIND_ROOT && node_kind(n) != SFS_KIND_STAGING_DIR) {
                r = -ENOTDIR;
                goto out;
        }
        if (node_kind(n) == SFS_KIND_ROOT) {
                snap_store_get_stats(t->store, &stats);
                cl.cap += stats.indexed;
        }
        cl.d = malloc(sizeof(*cl.d) + cl.cap * sizeof(cl.d->e[0]));
        if (!cl.d) {
                r = -ENOMEM;
                goto out;
        }
        cl.d->n = 0;
        r = dir_add(&cl, ".", n->ino, S_IFDIR);
        if (r == 0)
                r = dir_add(&cl, "..", SFS_ROOT_INO, S_IFDIR);
        if (r == 0 && node_kind(n) == SFS_KIND_ROOT) {
                if (!t->cfg.read_only && !c->read_view)
                        r = dir_add(&cl, SFS_STAGING_NAME, SFS_STAGING_INO, S_IFDIR);
                if (r == 0)
                        r = snap_store_foreach(t->store, collect_object, &cl);
        } else if (r == 0) {
                struct sfs_uidstage *st = sfs_stage_find(t, c->uid, false);
                for (struct sfs_node *s = st ? st->head : NULL; s && r == 0;
                     s = s->next_staged)
                        r = dir_add(&cl, s->stg->name, s->ino, S_IFREG);
        }
        if (r < 0) {
                free(cl.d);
                goto out;
        }
        LIST_ADD(t->dirs, cl.d);
        *out = cl.d;
out:
        pthread_mutex_unlock(&t->lock);
        if (r == -EACCES)
                sfs_tree_refuse(t, c, "opendir", NULL, EACCES);
        return r;
}

int sfs_tree_readdir(struct sfs_tree *t, struct sfs_dir *d, off_t off,
                     int (*fill)(void *ctx, const char *name, uint64_t ino, mode_t mode,
                                 off_t next_off),
                     void *ctx)
{
        (void)t;
        /* The listing is private to this handle: no lock needed. */
        for (size_t i = off < 0 ? 0 : (size_t)off; i < d->n; i++)
                if (fill(ctx, d->e[i].name, d->e[i].ino, d->e[i].mode, (off_t)(i + 1)))
                        break;
        return 0;
}

void sfs_tree_releasedir(struct sfs_tree *t, struct sfs_dir *d)
{
        pthread_mutex_lock(&t->lock);
        LIST_DEL(t->dirs, d);
        pthread_mutex_unlock(&t->lock);
        free(d);
}

/* ---- statfs and stats ---- */

void sfs_tree_statfs(struct sfs_tree *t, struct statvfs *sv)
{
        struct snap_store_stats s;
        const unsigned long bsize = 4096;
        uint64_t used;

        snap_store_get_stats(t->store, &s);
        used = s.bytes + s.reserved;
        memset(sv, 0, sizeof(*sv));
        sv->f_bsize = bsize;
        sv->f_frsize = bsize;
        sv->f_blocks = t->cfg.max_bytes / bsize;
        sv->f_bfree = used >= t->cfg.max_bytes ? 0 : (t->cfg.max_bytes - used) / bsize;
        sv->f_bavail = sv->f_bfree;
        sv->f_files = t->cfg.max_snapshots;
        sv->f_ffree = s.objects >= t->cfg.max_snapshots ? 0 : t->cfg.max_snapshots - s.objects;
        sv->f_favail = sv->f_ffree;
        sv->f_namemax = SNAP_DIGEST_HEX_LEN;
}

void sfs_tree_get_stats(struct sfs_tree *t, struct sfs_tree_stats *st)
{
        struct snap_store_stats s;

        pthread_mutex_lock(&t->lock);
        snap_store_get_stats(t->store, &s);
        st->snapshots = s.indexed;
        st->bytes = s.bytes;
        st->reserved = s.reserved;
        st->staging_files = t->staging_files;
        st->nodes = t->nnodes;
        pthread_mutex_unlock(&t->lock);
}
