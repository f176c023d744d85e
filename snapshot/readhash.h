/* SPDX-License-Identifier: MIT */
/* Reading a descriptor's content into the hasher: the one way snapfs hashes a descriptor,
 * used by verify.c and by libsnapfs's audit (client/mount-audit.c). */
#pragma once

#include <stdint.h>

#include "snapshot/digest.h"

/* Content this large or larger is read by a second thread while this one hashes: on two CPUs
 * the copy out of the page cache then costs no time, and verifying runs at SHA-256's speed. */
#define SNAP_PARALLEL_HASH_MIN (4u << 20)

/* Hashes the first size bytes of fd into h, reading with pread from offset 0 and at most
 * size + 1 bytes (one more than size, so a file grown since its fstat is noticed without
 * reading the growth; bytes past size are counted, never hashed). Stops at end of file.
 * 0 and *got = bytes read, or -ENOMEM, -EIO (hasher), or the errno of pread. */
int snap_hash_fd(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got);

/* snap_hash_fd that also copies the first copy_len bytes hashed into copy (which has room for
 * them; NULL: nothing copied): the very bytes that were hashed, with no second read a server
 * could answer differently. */
int snap_hash_fd_copy(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got, void *copy,
                      size_t copy_len);

/* The same, always in the calling thread (what snap_hash_fd does below the threshold). */
int snap_hash_fd_serial(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got);
/* The same, always with a reader thread (what snap_hash_fd does above it); falls back to the
 * serial path when no thread can be started. */
int snap_hash_fd_parallel(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got);
