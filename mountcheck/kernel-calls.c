/* SPDX-License-Identifier: MIT */
/* The running kernel behind mountcheck's table of kernel calls (kernel-calls.h): thin
 * wrappers, through syscall() where glibc 2.36 has no wrapper. */
#include <fcntl.h>
#include <libmount.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "mountcheck/kernel-calls.h"
#include "common/util.h"

static long linux_openat2(int dirfd, const char *path, struct mc_kopen_how *how, size_t size)
{
        return syscall(__NR_openat2, dirfd, path, how, size);
}

static long linux_statmount(const struct mc_kmnt_id_req *req, struct mc_kstatmount *buf,
                            size_t size, unsigned int flags)
{
        return syscall(MC_NR_STATMOUNT, req, buf, size, flags);
}

static long linux_listmount(const struct mc_kmnt_id_req *req, uint64_t *ids, size_t n,
                            unsigned int flags)
{
        return syscall(MC_NR_LISTMOUNT, req, ids, n, flags);
}

static int linux_parse_mountinfo(struct libmnt_table *tb)
{
        return mnt_table_parse_file(tb, "/proc/self/mountinfo");
}

static int linux_user_namespace(void)
{
        _cleanup_close_ int pidfd = -1;

        pidfd = (int)syscall(__NR_pidfd_open, getpid(), 0);
        if (pidfd < 0)
                return -1;
        return ioctl(pidfd, MC_PIDFD_GET_USER_NAMESPACE, 0);
}

static long linux_dir_getxattr(int dirfd, const char *name, void *value, size_t size)
{
        _cleanup_close_ int fd = -1;

        /* "." of a directory descriptor: no lookup, no symlink to follow; O_NONBLOCK so
         * nothing but a directory is ever waited on. */
        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -1;
        return fgetxattr(fd, name, value, size);
}

const struct mc_kernel mc_kernel_linux = {
        .openat2 = linux_openat2,
        .statx = statx,
        .statmount = linux_statmount,
        .listmount = linux_listmount,
        .parse_mountinfo = linux_parse_mountinfo,
        .user_namespace = linux_user_namespace,
        .dir_getxattr = linux_dir_getxattr,
};

static const struct mc_kernel *current = &mc_kernel_linux;

const struct mc_kernel *mc_kernel(void)
{
        return current;
}

const struct mc_kernel *mc_kernel_swap(const struct mc_kernel *k)
{
        const struct mc_kernel *old = current;

        current = k ? k : &mc_kernel_linux;
        return old;
}
