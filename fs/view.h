/* SPDX-License-Identifier: MIT */
/* The read view: a second, read-only mount of the same snapshots, served by the same daemon,
 * where opening a snapshot costs no round trip to the daemon. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "ops.h"

struct sfs_view {
        struct sfs_ops_ctx ctx;
        struct fuse_session *se;
        char *path;
        uint64_t dev;
        pthread_t thread;
        bool running;
};

/* Mounts the view at cfg->read_view (ro, nosuid, nodev, noexec, fuse.snapfs) over tree and
 * checks it: 0, or an SFS_EXIT_* code after printing why (nothing left mounted). */
int sfs_view_mount(struct sfs_view *v, const struct sfs_daemon_config *cfg,
                   struct sfs_tree *tree);
/* Serves it from a thread of its own (start after daemonizing): 0, or a negative errno. */
int sfs_view_start(struct sfs_view *v, const struct sfs_daemon_config *cfg);
/* Stops serving, unmounts and frees; safe on a view never mounted or never started. */
void sfs_view_stop(struct sfs_view *v);
