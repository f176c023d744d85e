/* SPDX-License-Identifier: MIT */
/* Whether a path the daemon trusts (--config, --store, --audit-log, --pid-file, --trust-key, a
 * view's parent) can be changed by someone else, judged along the whole path as sshd's
 * StrictModes does (docs/design.md, "Paths the daemon trusts"). */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

/* The path's last component may be missing (a file the daemon creates: the pid file, the
 * audit log); its directory is judged as if it were there, owned by the daemon's uid. */
#define SFS_TRUSTPATH_MAY_BE_ABSENT 0x1u

/* What is wrong, said so an operator can fix it: the directory or component, and why. */
struct sfs_trustpath_why {
        char message[PATH_MAX + 256];
};

/* Whether dir (its path dir_path, its stat dir_st) lets another uid replace its entry
 * child_st: 0 when it does not (owned by root or trusted, and not writable by group or
 * others, or sticky with the entry owned by root or trusted), else -EPERM with why (may be
 * NULL) naming dir_path and what is wrong with it. */
int sfs_trustpath_dir(const char *dir_path, const struct stat *dir_st,
                      const struct stat *child_st, uid_t trusted, struct sfs_trustpath_why *why);

/* Judges the absolute path from "/" down, one component at a time (openat2 with
 * RESOLVE_NO_SYMLINKS, each descriptor checked with fstat): every directory on the way must
 * pass sfs_trustpath_dir for the next component. 0, or -ELOOP (a component is a symbolic
 * link), -EPERM (a directory another uid can change), -ENOTDIR (a component on the way is not
 * a directory), -EINVAL (not absolute, or a ".." component), -ENOENT (a component is
 * missing, unless flags allow the last one to be; the directory it would be made in is judged
 * first), or the errno of openat2; why (may be NULL) names the component
 * and what is wrong with it. Once the path passes, only root or trusted can change what it
 * reaches, so opening it by name afterwards opens what was judged. */
int sfs_trustpath_judge(const char *path, uid_t trusted, unsigned flags,
                        struct sfs_trustpath_why *why);

/* Whether sfs is a kernel interface (/proc, /sys, cgroup, debugfs...) whose files are
 * settings, not files: writing into one does something (cgroup.procs moves the daemon). */
bool sfs_trustpath_kernel_fs(const struct statfs *sfs);
