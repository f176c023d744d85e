/* SPDX-License-Identifier: MIT */
/* The operations table a session is given: fs/fuse/ops.c's, each request timed into fs/base/metrics.h
 * (docs/design.md, "Health and metrics"). */
#pragma once

#include "fs/fuse/ops.h"

/* *out = sfs_ops, each operation it answers timed; what it leaves out stays out (the kernel
 * gets ENOSYS for it, as without timing). libfuse copies the table into its session. Routes
 * libfuse's own messages into fs/base/log.h, before the session that table makes. */
void sfs_timed_ops(struct fuse_lowlevel_ops *out);
