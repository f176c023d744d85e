/* SPDX-License-Identifier: MIT */
/* What daemon.c and view.c share. Not for other components. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "ops.h"

#define LOG(...) fprintf(stderr, "snapfs mount: " __VA_ARGS__)

/* A FUSE session for ctx: nosuid,nodev,noexec, type fuse.snapfs, ro for a read view. */
struct fuse_session *sfs_new_session(const struct sfs_daemon_config *cfg,
                                     struct sfs_ops_ctx *ctx);
/* mountcheck (preset snapfs, no FUSE round trip; ro required when ro) on the new mount at
 * path, printing every finding: 0 and *dev, or an SFS_EXIT_* code. */
int sfs_self_check(const char *path, bool ro, uint64_t *dev);
/* Reads and answers INIT before any worker runs: 0, or a negative errno. */
int sfs_answer_init(struct fuse_session *se);
