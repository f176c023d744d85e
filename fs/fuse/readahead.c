/* SPDX-License-Identifier: MIT */
/* The mount's readahead, written to its backing device info in sysfs. */
#include "fs/fuse/readahead.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/util.h"

int sfs_set_read_ahead(uint64_t dev, unsigned kb)
{
        _cleanup_close_ int fd = -1;
        char path[64], value[16];
        int n;

        snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(dev),
                 minor(dev));
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        n = snprintf(value, sizeof(value), "%u\n", kb);
        if (write(fd, value, (size_t)n) != n)
                return negative_errno();
        return 0;
}
