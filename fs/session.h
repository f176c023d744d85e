/* SPDX-License-Identifier: MIT */
/* One FUSE session of the daemon, the publishing mount's or the read view's: creating it,
 * checking the mount it made, answering INIT, and the multi-threaded serve loop. daemon.c and
 * view.c both build on these; neither calls into the other's session. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ops.h"

#define LOG(...) fprintf(stderr, "snapfs mount: " __VA_ARGS__)

/* How a session is mounted. */
struct sfs_session_config {
        bool allow_other;
        bool ro;     /* a read-only tree, or the read view */
        bool debug;  /* libfuse's -d, and say why the readahead could not be raised */
};

/* A FUSE session for ctx: nosuid,nodev,noexec, type fuse.snapfs, ro when asked. NULL when
 * libfuse refuses it. */
struct fuse_session *sfs_session_new(const struct sfs_session_config *cfg,
                                     struct sfs_ops_ctx *ctx);
/* mountcheck (preset snapfs, no FUSE round trip; ro required when ro) on the new mount at
 * path: 0 and *dev (its superblock's device); 1 when it is not compliant, after printing
 * every finding; or a negative errno, after saying why. */
int sfs_session_check(const char *path, bool ro, uint64_t *dev);
/* Answers INIT before any worker runs, then raises the readahead of the mount dev (root
 * only). 0, also when a signal ended the session first; or a negative errno, said. */
int sfs_session_init(struct fuse_session *se, const struct sfs_ops_ctx *ctx, uint64_t dev,
                     bool debug);
/* Serves with up to max_threads workers (0: libfuse's default), each with its own /dev/fuse
 * descriptor, until the session exits. 0 when it ended cleanly (a signal included), or a
 * negative errno. */
int sfs_session_loop(struct fuse_session *se, unsigned max_threads);
