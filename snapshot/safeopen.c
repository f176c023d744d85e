/* SPDX-License-Identifier: MIT */
/* Opening and reading untrusted paths: no symlink followed, no FIFO or device read, no
 * read without bound. */
#include "snapshot/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* First allocation when fstat gives no useful size hint; grows by doubling. */
#define READ_START 4096u

int snap_open_untrusted(int dirfd, const char *path, uint64_t limit, struct stat *st)
{
        _cleanup_close_ int fd = -1;
        struct stat buf;

        /* O_NOFOLLOW: a symlink swapped in for the last component fails with ELOOP instead of
         *   leading the read to a file of the attacker's choosing.
         * O_NONBLOCK: opening a FIFO for reading waits for a writer that may never come; with
         *   it the open returns at once (and fstat below refuses the FIFO).
         * O_NOCTTY: a terminal device must not become our controlling terminal.
         * O_CLOEXEC: a child started meanwhile must not inherit the descriptor.
         * A unix socket cannot be opened at all: ENXIO, passed on as is. */
        fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();

        /* Judged on the descriptor, not the path: the path may be swapped after the open, the
         * descriptor cannot. */
        if (fstat(fd, &buf) < 0)
                return negative_errno();
        if (S_ISDIR(buf.st_mode))
                return -EISDIR;
        /* A FIFO can block a reader forever, /dev/zero or /dev/urandom never end, and reading
         * some devices has side effects: only regular files are read. */
        if (!S_ISREG(buf.st_mode))
                return -EINVAL;
        if ((uint64_t)buf.st_size > limit)
                return -EFBIG;

        if (st)
                *st = buf;
        return TAKE_FD(fd);
}

int snap_read_bounded(int fd, uint64_t limit, void **buf, size_t *len)
{
        _cleanup_free_ uint8_t *data = NULL;
        struct stat st;
        size_t cap, have = 0, max;

        /* Never ask for more than limit + 1 bytes in all: one byte past the limit is enough to
         * know the content is too big, whatever st_size claimed (a file can grow after fstat,
         * and /proc files or devices report 0). */
        max = limit < SIZE_MAX - 1 ? (size_t)limit + 1 : SIZE_MAX;

        /* st_size is a hint for the first allocation only, never a bound on the read. */
        cap = READ_START;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
            (uint64_t)st.st_size < max)
                cap = (size_t)st.st_size + 1;
        if (cap > max)
                cap = max;

        data = malloc(cap);
        if (!data)
                return -ENOMEM;

        for (;;) {
                ssize_t k;

                if (have == cap) {
                        size_t ncap = cap > max / 2 ? max : cap * 2;
                        uint8_t *n;

                        if (have == max)
                                break;
                        n = realloc(data, ncap);
                        if (!n)
                                return -ENOMEM;
                        data = n;
                        cap = ncap;
                }
                k = pread(fd, data + have, cap - have, (off_t)have);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break; /* EOF */
                have += (size_t)k;
        }

        if (have > limit)
                return -EFBIG;
        *buf = TAKE_PTR(data);
        *len = have;
        return 0;
}

int snap_read_untrusted(int dirfd, const char *path, uint64_t limit, void **buf, size_t *len)
{
        _cleanup_close_ int fd = -1;

        fd = snap_open_untrusted(dirfd, path, limit, NULL);
        if (fd < 0)
                return fd;
        /* Bounded again: the file may have grown since the fstat in snap_open_untrusted. */
        return snap_read_bounded(fd, limit, buf, len);
}
