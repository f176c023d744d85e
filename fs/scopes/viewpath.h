/* SPDX-License-Identifier: MIT */
/* Where a scope's view may be mounted (docs/design.md, "Scopes"): an absolute, canonical path
 * in the daemon's mount namespace, no symlink anywhere in it, every directory on the way
 * trusted (owned by root or the daemon's uid, and writable by nobody else unless sticky with
 * the next component theirs): a root daemon mounting where another uid can swap a component
 * would mount over whatever that uid points it at. The directory is created (0755) when absent
 * (its parent must exist). Refused too: a path that is a mount point already, or that lies on
 * one of the daemon's own mounts (the main mount, the read view, another view). */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sfs_view_path_why {
        char message[PATH_MAX + 512];
};

/* Prepares path: 0, *made when this call created the directory, *dev the device of the
 * filesystem it lies on; or -EINVAL (not absolute or canonical, a symlink, not a directory, a
 * missing parent), -EPERM (a directory on the way another uid can change, judged by
 * sfs_trustpath_dir: why names it and what is wrong with it), -EBUSY (a mount point already, or on
 * one of the devices own_devs lists), -ENOTCONN (a dead FUSE mount at it: the caller may clear
 * it and ask again), or the errno of a step; why says which, naming the component. trusted:
 * the uid besides root that may own the directories on the way (the daemon's). */
int sfs_view_path_prepare(const char *path, uid_t trusted, const uint64_t *own_devs,
                          size_t n_own, bool *made, struct sfs_view_path_why *why);
/* Removes the directory prepare made, once nothing is mounted there: 0 or -errno. */
int sfs_view_path_remove(const char *path);
/* Whether path is canonical and absolute: no "//", ".", ".." component, no trailing "/",
 * at most PATH_MAX - 1 bytes, not "/" itself, valid UTF-8. */
bool sfs_view_path_canonical(const char *path);
