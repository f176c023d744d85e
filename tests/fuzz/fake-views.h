/* SPDX-License-Identifier: MIT */
/* A registry's views that mount nothing, for the fuzz targets that drive the registry (the
 * control protocol, the scope files): each "mount" gets a device number of its own and
 * nothing else; removed views are freed. Included once per target. */
#ifndef SNAPFS_TESTS_FUZZ_FAKE_VIEWS_H
#define SNAPFS_TESTS_FUZZ_FAKE_VIEWS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "fs/scopes/registry.h"
#include "fs/tree/tree.h"

struct sfs_view {
        int unused;
};

static int fake_mount(void *ctx, const struct sfs_view_request *req, struct sfs_tree *tree,
                      struct sfs_view **view, uint64_t *dev, char *msg, size_t msgsize)
{
        static uint64_t next = 0x1000;

        (void)ctx, (void)req, (void)tree, (void)msg, (void)msgsize;
        *view = calloc(1, sizeof(**view));
        if (!*view)
                abort();
        *dev = next++;
        return 0;
}

static void fake_detach(void *ctx, struct sfs_view *view, struct sfs_tree *tree)
{
        (void)ctx;
        sfs_tree_free(tree);
        free(view);
}

static void fake_invalidate(void *ctx, struct sfs_view *view, const char *name)
{
        (void)ctx, (void)view, (void)name;
}

static void fake_invalidate_inode(void *ctx, struct sfs_view *view, uint64_t ino)
{
        (void)ctx, (void)view, (void)ino;
}

static bool fake_alive(void *ctx, struct sfs_view *view)
{
        (void)ctx, (void)view;
        return true;
}

static int fake_clear_stale(void *ctx, const char *path)
{
        (void)ctx, (void)path;
        return -EBUSY;
}

static void fake_shutdown(void *ctx, struct sfs_view *view)
{
        (void)ctx;
        free(view);
}

static const struct sfs_view_ops ops = {
        .mount = fake_mount,
        .detach = fake_detach,
        .invalidate = fake_invalidate,
        .invalidate_inode = fake_invalidate_inode,
        .alive = fake_alive,
        .clear_stale = fake_clear_stale,
        .shutdown = fake_shutdown,
};

#endif
