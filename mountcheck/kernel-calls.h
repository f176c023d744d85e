/* SPDX-License-Identifier: MIT */
/* Where mountcheck asks the kernel: every question it puts (openat2, statx, statmount,
 * listmount, reading the mount table, the caller's user namespace, a root's xattr) goes through one small
 * table of functions. mc_kernel_linux asks the running kernel; a unit test swaps in its own
 * table to answer as a kernel this machine is not: one without a statx field, a malformed
 * statmount record, a resolution that never stops asking to be retried. Internal to
 * mountcheck/ and its tests. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mountcheck/kernel.h"

struct libmnt_table;

/* Each call has the kernel's own contract: a result >= 0, or -1 with errno set. */
struct mc_kernel {
        /* openat2(2) */
        long (*openat2)(int dirfd, const char *path, struct mc_kopen_how *how, size_t size);
        /* statx(2) */
        int (*statx)(int dirfd, const char *path, int flags, unsigned int mask,
                     struct statx *stx);
        /* statmount(2): 0, or -1 (EOVERFLOW: the strings do not fit in size bytes) */
        long (*statmount)(const struct mc_kmnt_id_req *req, struct mc_kstatmount *buf,
                          size_t size, unsigned int flags);
        /* listmount(2): how many ids it wrote to ids (at most n) */
        long (*listmount)(const struct mc_kmnt_id_req *req, uint64_t *ids, size_t n,
                          unsigned int flags);
        /* Reads this process's mount table (/proc/self/mountinfo) into tb. Unlike the others
         * this is libmount's contract: 0, or a negative errno (-1 for a parse error its
         * callback did not name). */
        int (*parse_mountinfo)(struct libmnt_table *tb);
        /* A descriptor of the calling process's user namespace (pidfd_open of this process,
         * then the PIDFD_GET_USER_NAMESPACE ioctl). */
        int (*user_namespace)(void);
        /* The extended attribute name of the directory dirfd (an O_PATH descriptor, which
         * fgetxattr(2) refuses): the directory opened again read-only, then fgetxattr(2).
         * Sends FUSE requests (OPENDIR, GETXATTR) on a FUSE mount. */
        long (*dir_getxattr)(int dirfd, const char *name, void *value, size_t size);
};

/* The running kernel. */
extern const struct mc_kernel mc_kernel_linux;

/* The table every call in mountcheck/ uses: mc_kernel_linux unless a test swapped it. */
const struct mc_kernel *mc_kernel(void);

/* For tests only: makes k (NULL: mc_kernel_linux) the table every later call uses and
 * returns the one it replaces. Not thread-safe: swap before a check starts, never during. */
const struct mc_kernel *mc_kernel_swap(const struct mc_kernel *k);
