/* SPDX-License-Identifier: MIT */
/* The mount a path reaches, asked of a pinned descriptor: the path opened without following
 * a symlink, the descriptor's identity and mount id, the owner and liveness probes, and
 * whether the caller runs in the initial user namespace. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "mountcheck/identity.h"
#include "mountcheck/kernel-calls.h"
#include "common/util.h"

int mc_open_path_walk(const char *path, int *fd_out)
{
        _cleanup_close_ int dir = -1;
        _cleanup_free_ char *copy = NULL;
        char *p, *save = NULL;

        if (!path || !fd_out)
                return -EINVAL;
        if (*path == '\0')
                return -ENOENT;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        dir = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return negative_errno();

        for (p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
                const int flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC;
                _cleanup_close_ int fd = -1;
                struct statx stx;

                /* O_PATH|O_NOFOLLOW opens a symlink itself instead of following it: look at
                 * what we got before going one step further. */
                fd = openat(dir, p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                if (mc_kernel()->statx(fd, "", flags, STATX_TYPE, &stx) < 0)
                        return negative_errno();
                if (!(stx.stx_mask & STATX_TYPE))
                        return -EOPNOTSUPP;
                if (S_ISLNK(stx.stx_mode))
                        return -ELOOP;
                if (!S_ISDIR(stx.stx_mode))
                        return -ENOTDIR;
                safe_close(dir);
                dir = TAKE_FD(fd);
        }
        *fd_out = TAKE_FD(dir);
        return 0;
}

int mc_open_path(const char *path, int *fd_out)
{
        /* No O_NOFOLLOW: with O_PATH it would hand back a trailing symlink itself instead of
         * letting RESOLVE_NO_SYMLINKS refuse it (and O_DIRECTORY would then say ENOTDIR). */
        struct mc_kopen_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = MC_RESOLVE_NO_SYMLINKS | MC_RESOLVE_NO_MAGICLINKS,
        };
        long fd;

        if (!path || !fd_out)
                return -EINVAL;
        for (int tries = 0; tries < 8; tries++) {
                fd = mc_kernel()->openat2(AT_FDCWD, path, &how, sizeof(how));
                if (fd >= 0) {
                        *fd_out = (int)fd;
                        return 0;
                }
                if (errno == ENOSYS)
                        return mc_open_path_walk(path, fd_out);
                if (errno != EAGAIN) /* EAGAIN: a concurrent rename or mount; resolve again */
                        return negative_errno();
        }
        return -EAGAIN;
}

int mc_fd_identity(int fd, struct mc_identity *id)
{
        /* AT_STATX_DONT_SYNC: on FUSE, a statx that wants fresh attributes is a GETATTR round
         * trip, and a daemon checking its own mount before its loop runs would never answer
         * it. Mount id and the mount-root attribute come from the VFS, not the filesystem. */
        const int flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC;
        const unsigned int want = STATX_TYPE | STATX_MODE | STATX_UID | MC_STATX_MNT_ID_UNIQUE;
        struct statx stx;
        struct mc_identity out = { 0 };

        if (fd < 0 || !id)
                return -EINVAL;
        memset(&stx, 0, sizeof(stx));
        if (mc_kernel()->statx(fd, "", flags, want, &stx) < 0)
                return negative_errno();
        /* An attribute the kernel does not know is silently absent: check both masks. */
        if (!(stx.stx_attributes_mask & MC_STATX_ATTR_MOUNT_ROOT) ||
            (stx.stx_mask & (STATX_TYPE | STATX_MODE)) != (STATX_TYPE | STATX_MODE))
                return -EOPNOTSUPP;
        out.mount_root = stx.stx_attributes & MC_STATX_ATTR_MOUNT_ROOT;
        out.mode = stx.stx_mode;
        out.has_uid = stx.stx_mask & STATX_UID;
        out.uid = stx.stx_uid;
        if (stx.stx_mask & MC_STATX_MNT_ID_UNIQUE) {
                out.has_unique = true;
                out.unique_id = stx.stx_mnt_id;
        }

        /* The reusable id is what /proc/self/mountinfo lists; the kernel answers one kind per
         * call. */
        memset(&stx, 0, sizeof(stx));
        if (mc_kernel()->statx(fd, "", flags, MC_STATX_MNT_ID, &stx) < 0)
                return negative_errno();
        if (stx.stx_mask & MC_STATX_MNT_ID) {
                out.has_old = true;
                out.old_id = stx.stx_mnt_id;
        }
        if (!out.has_unique && !out.has_old)
                return -EOPNOTSUPP;
        *id = out;
        return 0;
}

int mc_fd_mount_id(int fd, uint64_t *id, bool *unique)
{
        const int flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC;
        struct statx stx;

        if (fd < 0 || !id)
                return fd < 0 ? -EBADF : -EINVAL;
        memset(&stx, 0, sizeof(stx));
        if (mc_kernel()->statx(fd, "", flags, MC_STATX_MNT_ID_UNIQUE, &stx) < 0)
                return negative_errno();
        if (stx.stx_mask & MC_STATX_MNT_ID_UNIQUE) {
                *id = stx.stx_mnt_id;
                if (unique)
                        *unique = true;
                return 0;
        }
        memset(&stx, 0, sizeof(stx));
        if (mc_kernel()->statx(fd, "", flags, MC_STATX_MNT_ID, &stx) < 0)
                return negative_errno();
        if (!(stx.stx_mask & MC_STATX_MNT_ID))
                return -EOPNOTSUPP;
        *id = stx.stx_mnt_id;
        if (unique)
                *unique = false;
        return 0;
}

int mc_probe_owner(int fd, uint32_t *uid)
{
        struct statx stx;

        if (fd < 0)
                return -EBADF;
        if (mc_kernel()->statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC,
                               STATX_BASIC_STATS, &stx) < 0)
                return negative_errno();
        if (uid) {
                if (!(stx.stx_mask & STATX_UID))
                        return -EOPNOTSUPP;
                *uid = stx.stx_uid;
        }
        return 0;
}

int mc_caller_initial_userns(void)
{
        _cleanup_close_ int nsfd = -1;
        struct statfs sfs;
        struct stat st;

        nsfd = mc_kernel()->user_namespace();
        if (nsfd < 0)
                return negative_errno();
        if (fstatfs(nsfd, &sfs) < 0 || fstat(nsfd, &st) < 0)
                return negative_errno();
        if (sfs.f_type != MC_NSFS_MAGIC)
                return -EIO;
        return st.st_ino == MC_PROC_USER_INIT_INO;
}
