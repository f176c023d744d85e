/* SPDX-License-Identifier: MIT */
/* The read view's mount and its serving thread; the session itself is session.c's. */
#include "fs/fuse/readview.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "fs/fuse/conn.h"
#include "fs/tree/tree.h"
#include "common/util.h"

int sfs_view_mount(struct sfs_view *v, const char *path, const struct sfs_session_config *sc,
                   struct sfs_tree *tree)
{
        int r;

        *v = (struct sfs_view){ .ctx = { .tree = tree, .read_view = true }, .debug = sc->debug };
        v->path = path_make_absolute(path);
        if (!v->path) {
                r = negative_errno();
                LOG("--read-view %s: %s\n", path, strerror(-r));
                return r;
        }
        v->se = sfs_session_new(sc, &v->ctx);
        if (!v->se) {
                LOG("cannot create the read view's FUSE session\n");
                goto fail;
        }
        v->ctx.se = v->se;
        r = sfs_session_mount(v->se, &v->ctx, v->path, sc, SFS_CONN_READ_VIEW, &v->dev);
        if (r < 0) {
                LOG("%s: mounting the read view failed\n", v->path);
                sfs_session_end(v->se, &v->ctx, false);
                v->se = NULL;
                goto fail;
        }
        if (r == 0) {
                if (geteuid() == 0 && mount(NULL, v->path, NULL, MS_PRIVATE, NULL) < 0)
                        LOG("%s: cannot make the read view private: %m\n", v->path);
                /* The view must really be read-only: that, not the daemon, is what refuses
                 * writes there, since the daemon is never asked at open. */
                r = sfs_session_check(v->path, sc, true, &v->dev);
                if (r) {
                        sfs_view_stop(v);
                        return r;
                }
                sfs_session_checked(&v->ctx, v->dev);
        }
        sfs_tree_set_dev(tree, v->dev, true);
        r = sfs_tree_set_view_path(tree, v->path);
        if (r < 0) {
                sfs_view_stop(v);
                return r;
        }
        return 0;
fail:
        free(v->path);
        v->path = NULL;
        return -EIO;
}

int sfs_view_start(struct sfs_view *v, unsigned max_threads)
{
        if (!v->se)
                return 0;
        v->serving = (struct sfs_serving){
                .se = v->se,
                .ctx = &v->ctx,
                .dev = v->dev,
                .max_threads = max_threads,
                .debug = v->debug,
                .done_fd = -1,
        };
        return sfs_serving_start(&v->serving);
}

void sfs_view_stop(struct sfs_view *v)
{
        sfs_view_end(v, true);
}

void sfs_view_end(struct sfs_view *v, bool unmount)
{
        sfs_serving_stop(&v->serving);
        sfs_session_end(v->se, &v->ctx, unmount);
        v->se = NULL;
        free(v->path);
        v->path = NULL;
}
