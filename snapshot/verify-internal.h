/* SPDX-License-Identifier: MIT */
/* Parts of verify.c that the unit tests reach directly. Not for other components. */
#pragma once

#include <sys/stat.h>

#include "snapshot/verify.h"

/* Name of the first field that differs between two fstat results of one descriptor ("dev",
 * "ino", "mode", "nlink", "uid", "gid", "size", "mtime", "ctime"), or NULL when none does. */
const char *snap_stat_changed(const struct stat *before, const struct stat *after);

/* snap_verify_fd, calling before_read(fd, ctx) (if set) once the first fstat checks have passed
 * and before the first pread: the window in which a file changed during verification changes.
 * Lets a test change the file at exactly that point instead of racing a thread against it. */
int snap_verify_fd_hooked(int fd, const struct snap_binding *b, uint64_t limit,
                          struct snap_hasher *hasher, struct snap_verify_result *res,
                          void (*before_read)(int fd, void *ctx), void *ctx);
