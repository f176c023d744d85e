/* SPDX-License-Identifier: MIT */
/* Kernel interfaces newer than the build machine's headers: statmount()/listmount() (Linux 6.8+),
 * STATX_MNT_ID_UNIQUE and openat2() through syscall(), since glibc 2.36 has no wrappers.
 * Our own names (mc_k*, MC_K_*) so a newer <linux/mount.h> can never clash with them; the
 * layouts and values are the kernel's ABI and must not change. Internal to mountcheck/. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#define MC_NR_STATMOUNT 457
#define MC_NR_LISTMOUNT 458

/* pidfd_open() and the pidfs ioctl that returns a process's user namespace (Linux 6.11+);
 * the initial user namespace's nsfs inode number (PROC_USER_INIT_INO, fixed since 3.8). */
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#define MC_PIDFD_GET_USER_NAMESPACE 0xFF09U /* _IO(0xFF, 9) */
#define MC_PROC_USER_INIT_INO 0xEFFFFFFDU
#define MC_NSFS_MAGIC 0x6e736673

/* statx() */
#define MC_STATX_MNT_ID 0x00001000U
#define MC_STATX_MNT_ID_UNIQUE 0x00004000U
#define MC_STATX_ATTR_MOUNT_ROOT 0x00002000ULL

/* openat2() */
struct mc_kopen_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};
#define MC_RESOLVE_NO_MAGICLINKS 0x02
#define MC_RESOLVE_NO_SYMLINKS 0x04

/* statmount(2) request mask bits. */
#define MC_STATMOUNT_SB_BASIC 0x00000001U
#define MC_STATMOUNT_MNT_BASIC 0x00000002U
#define MC_STATMOUNT_PROPAGATE_FROM 0x00000004U
#define MC_STATMOUNT_MNT_ROOT 0x00000008U
#define MC_STATMOUNT_MNT_POINT 0x00000010U
#define MC_STATMOUNT_FS_TYPE 0x00000020U
#define MC_STATMOUNT_MNT_NS_ID 0x00000040U
#define MC_STATMOUNT_MNT_OPTS 0x00000080U
#define MC_STATMOUNT_FS_SUBTYPE 0x00000100U
#define MC_STATMOUNT_SB_SOURCE 0x00000200U
#define MC_STATMOUNT_OPT_ARRAY 0x00000400U
#define MC_STATMOUNT_OPT_SEC_ARRAY 0x00000800U
#define MC_STATMOUNT_SUPPORTED_MASK 0x00001000U

/* The statmount(2) result: fixed part, then the strings its [str] fields point into. */
struct mc_kstatmount {
        uint32_t size;
        uint32_t mnt_opts;      /* [str] */
        uint64_t mask;
        uint32_t sb_dev_major;
        uint32_t sb_dev_minor;
        uint64_t sb_magic;
        uint32_t sb_flags;
        uint32_t fs_type;       /* [str] */
        uint64_t mnt_id;
        uint64_t mnt_parent_id;
        uint32_t mnt_id_old;
        uint32_t mnt_parent_id_old;
        uint64_t mnt_attr;
        uint64_t mnt_propagation;
        uint64_t mnt_peer_group;
        uint64_t mnt_master;
        uint64_t propagate_from;
        uint32_t mnt_root;      /* [str] */
        uint32_t mnt_point;     /* [str] */
        uint64_t mnt_ns_id;
        uint32_t fs_subtype;    /* [str] */
        uint32_t sb_source;     /* [str] */
        uint32_t opt_num;
        uint32_t opt_array;     /* [str] opt_num NUL-terminated strings */
        uint32_t opt_sec_num;
        uint32_t opt_sec_array; /* [str] */
        uint64_t supported_mask;
        uint32_t mnt_uidmap_num;
        uint32_t mnt_uidmap;
        uint32_t mnt_gidmap_num;
        uint32_t mnt_gidmap;
        uint64_t spare2[43];
        char str[];
};
_Static_assert(offsetof(struct mc_kstatmount, mnt_ns_id) == 0x70, "statmount ABI");
_Static_assert(offsetof(struct mc_kstatmount, supported_mask) == 0x90, "statmount ABI");
_Static_assert(sizeof(struct mc_kstatmount) == 0x200, "statmount ABI");

struct mc_kmnt_id_req {
        uint32_t size;
        uint32_t spare;
        uint64_t mnt_id;
        uint64_t param;
};
#define MC_MNT_ID_REQ_SIZE_VER0 24
#define MC_LSMT_ROOT 0xffffffffffffffffULL

/* Per-mount attributes (mnt_attr), as mount_setattr() names them. */
#define MC_MOUNT_ATTR_RDONLY 0x00000001ULL
#define MC_MOUNT_ATTR_NOSUID 0x00000002ULL
#define MC_MOUNT_ATTR_NODEV 0x00000004ULL
#define MC_MOUNT_ATTR_NOEXEC 0x00000008ULL
#define MC_MOUNT_ATTR__ATIME 0x00000070ULL
#define MC_MOUNT_ATTR_RELATIME 0x00000000ULL
#define MC_MOUNT_ATTR_NOATIME 0x00000010ULL
#define MC_MOUNT_ATTR_STRICTATIME 0x00000020ULL
#define MC_MOUNT_ATTR_NODIRATIME 0x00000080ULL
#define MC_MOUNT_ATTR_IDMAP 0x00100000ULL
#define MC_MOUNT_ATTR_NOSYMFOLLOW 0x00200000ULL

/* Superblock flag and propagation bits (the MS_* values). */
#define MC_SB_RDONLY 0x1U
#define MC_MS_UNBINDABLE (1ULL << 17)
#define MC_MS_PRIVATE (1ULL << 18)
#define MC_MS_SLAVE (1ULL << 19)
#define MC_MS_SHARED (1ULL << 20)
