/* SPDX-License-Identifier: MIT */
/* Which mount a path really reaches: open it without following any symlink, then ask the
 * descriptor (never the path again) for its mount id. No call here sends a FUSE request,
 * except mc_probe_owner(), which exists to send exactly one. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct mc_identity {
        bool has_unique;    /* STATX_MNT_ID_UNIQUE answered (Linux 6.8+) */
        uint64_t unique_id;
        bool has_old;       /* STATX_MNT_ID answered: the id /proc/self/mountinfo shows */
        uint64_t old_id;
        bool mount_root;    /* STATX_ATTR_MOUNT_ROOT */
        uint32_t mode;      /* st_mode as cached by the kernel (type and permission bits) */
        bool has_uid;       /* uid answered: the owner as cached by the kernel */
        uint32_t uid;
};

/* Opens path as an O_PATH|O_DIRECTORY|O_CLOEXEC descriptor, refusing a symlink in any
 * component (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, or mc_open_path_walk() where
 * openat2 is missing). 0 and *fd_out set, or -ELOOP (a symlink), -ENOENT, -ENOTDIR, ... */
int mc_open_path(const char *path, int *fd_out);

/* The fallback: one component at a time with O_PATH|O_NOFOLLOW, refusing a symlink or a
 * non-directory. Same contract as mc_open_path(). */
int mc_open_path_walk(const char *path, int *fd_out);

/* Mount id(s), mount-root flag and mode of fd, from statx(AT_STATX_DONT_SYNC): the VFS fills
 * them without asking the filesystem. -EOPNOTSUPP if the kernel reports no mount id or no
 * mount-root attribute (stx_mask / stx_attributes_mask checked). */
int mc_fd_identity(int fd, struct mc_identity *id);

/* The mount id of any descriptor (a snapshot opened relative to the pinned mount root, say):
 * the unique id when the kernel has one (*unique = true), else the reusable one. Same kind as
 * mc_verdict.mount_id, so a client compares the two to confirm the descriptor lies on exactly
 * the judged mount. Sends no FUSE request. 0, -EBADF, -EOPNOTSUPP. */
int mc_fd_mount_id(int fd, uint64_t *id, bool *unique);

/* Liveness probe: statx(AT_STATX_FORCE_SYNC) on fd, one FUSE GETATTR on a FUSE mount (nothing
 * on most other filesystems), and, when uid is not NULL, the owner of fd's inode as the
 * kernel shows it to this process after that fresh GETATTR. 0 when it answers, -ENOTCONN
 * when the daemon is gone, another -errno otherwise. Blocks until a FUSE daemon answers:
 * never call it on your own mount before your session loop runs. */
int mc_probe_owner(int fd, uint32_t *uid);

/* Whether this process runs in the initial user namespace: 1 yes, 0 no, or -errno when the
 * kernel cannot say (before Linux 6.11: -ENOTTY). Asked of the kernel through a pidfd of this
 * process (PIDFD_GET_USER_NAMESPACE, then fstat of that nsfs descriptor), never through a
 * path: whoever controls this process's mount namespace can mount a forged /proc. */
int mc_caller_initial_userns(void);
