/* SPDX-License-Identifier: MIT */
/* The read view: a second, read-only mount of the same snapshots, served by the same daemon
 * from a thread of its own, where opening a snapshot costs no round trip to the daemon. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fs/fuse/ops.h"
#include "fs/fuse/session.h"

struct sfs_view {
        struct sfs_ops_ctx ctx;
        struct fuse_session *se;
        char *path;
        uint64_t dev;
        bool debug;
        struct sfs_serving serving;
};

/* Mounts the view at path (ro, nosuid, nodev, noexec, fuse.snapfs) over tree and checks it:
 * 0; 1 when the mount is not compliant; or a negative errno. Says why on standard error and
 * leaves nothing mounted when it fails. */
int sfs_view_mount(struct sfs_view *v, const char *path, const struct sfs_session_config *sc,
                   struct sfs_tree *tree);
/* Serves it with up to max_threads workers (0: libfuse's default) from a thread of its own;
 * start it after daemonizing. 0 (also when no view was mounted), or a negative errno. */
int sfs_view_start(struct sfs_view *v, unsigned max_threads);
/* Stops serving, unmounts and frees; safe on a view never mounted or never started. */
void sfs_view_stop(struct sfs_view *v);
/* The same, unmounting only when unmount (false: a handover, the mount stays for a
 * successor). */
void sfs_view_end(struct sfs_view *v, bool unmount);
