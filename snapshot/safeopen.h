/* SPDX-License-Identifier: MIT */
/* Open and read untrusted paths without being tricked into following a symlink, blocking on a
 * FIFO, reading a device or reading without bound. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Opens path (relative to dirfd, or AT_FDCWD) with O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC (and
 * O_NOCTTY) and checks the descriptor with fstat. Returns the descriptor (>= 0) and fills *st
 * (may be NULL), or: -ELOOP for a symlink as last component, -EISDIR for a directory, -EINVAL
 * for a FIFO, device or other non-regular file (a socket fails to open with -ENXIO), -EFBIG
 * when st_size exceeds limit, or the errno of open. Nothing is ever read from a refused
 * descriptor. */
int snap_open_untrusted(int dirfd, const char *path, uint64_t limit, struct stat *st);

/* Reads fd from offset 0 with pread, at most limit + 1 bytes: 0 and a malloc'd buffer in *buf
 * (caller frees; never NULL, even for 0 bytes) with its length in *len, or -EFBIG when more than
 * limit bytes are there, -ENOMEM, or the errno of pread. */
int snap_read_bounded(int fd, uint64_t limit, void **buf, size_t *len);

/* snap_open_untrusted + snap_read_bounded: the whole content of a regular file at path. */
int snap_read_untrusted(int dirfd, const char *path, uint64_t limit, void **buf, size_t *len);
