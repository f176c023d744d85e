/* SPDX-License-Identifier: MIT */
/* A view's path, walked one component at a time from "/" with O_PATH|O_NOFOLLOW descriptors:
 * each component is judged on what it is (never followed through a link), and each directory
 * on the way on who could change it. */
#include "fs/scopes/viewpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/utf8.h"
#include "common/util.h"
#include "fs/base/log.h"
#include "fs/base/trustpath.h"

bool sfs_view_path_canonical(const char *path)
{
        size_t len = path ? strlen(path) : 0;

        if (len < 2 || len >= PATH_MAX || path[0] != '/' || path[len - 1] == '/')
                return false;
        /* A path that is not UTF-8 would reach every status and scope-list reply raw, and a
         * strict reader of those replies (the Python client) would fail on all of them for
         * as long as the scope lives. */
        if (!utf8_valid(path))
                return false;
        for (const char *p = path; *p; p++) {
                if (*p != '/')
                        continue;
                /* p is a separator: what follows must be a real name. */
                if (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                    (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0')))
                        return false;
        }
        return true;
}


static bool own_dev(dev_t dev, const uint64_t *own_devs, size_t n_own)
{
        for (size_t i = 0; i < n_own; i++)
                if (own_devs[i] && own_devs[i] == (uint64_t)dev)
                        return true;
        return false;
}

/* The directory holding comp (a component of buf, a copy of path cut by strtok_r). */
static const char *dir_path(const char *path, const char *buf, const char *comp, char *out,
                            size_t size)
{
        size_t len = (size_t)(comp - buf) - 1;

        snprintf(out, size, "%.*s", (int)(len ? len : 1), path);
        return out;
}

/* comp in dirfd into *st, without following it: the view's own directory (last) made when
 * missing (*made), never a parent. 0, or -ENOTCONN (a dead FUSE mount at the view), -EINVAL
 * (a parent missing), -errno, said in why. */
static int stat_component(int dirfd, const char *comp, bool last, const char *path,
                          struct stat *st, bool *made, struct sfs_view_path_why *why)
{
        if (fstatat(dirfd, comp, st, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;
        if (errno == ENOENT && last) {
                /* Only the view's own directory is made, never its parents. */
                if (mkdirat(dirfd, comp, 0755) < 0)
                        return SAY(why, errno, "%s: cannot create the view's directory: %s",
                                   path, strerror(errno));
                *made = true;
                return fstatat(dirfd, comp, st, AT_SYMLINK_NOFOLLOW) < 0 ? negative_errno() : 0;
        }
        if (errno == ENOTCONN && last)
                return SAY(why, ENOTCONN, "%s: a dead FUSE mount is there", path);
        if (errno == ENOENT)
                return SAY(why, EINVAL, "%s: %s does not exist (a view's parent directory must)",
                           path, comp);
        return SAY(why, errno, "%s: %s: %s", path, comp, strerror(errno));
}

/* The view's own directory, as dirfd reaches it: no mount point already, not on one of the
 * daemon's own mounts (-EBUSY). 0 or -errno, said in why. */
static int check_view_dir(int dirfd, const char *path, const uint64_t *own_devs, size_t n_own,
                          struct sfs_view_path_why *why)
{
        struct statx stx;

        if (statx(dirfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
                return negative_errno();
        if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
            (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return SAY(why, EBUSY, "%s: already a mount point", path);
        if (own_dev(makedev(stx.stx_dev_major, stx.stx_dev_minor), own_devs, n_own))
                return SAY(why, EBUSY, "%s: on one of this daemon's own mounts", path);
        return 0;
}

int sfs_view_path_prepare(const char *path, uid_t trusted, const uint64_t *own_devs,
                          size_t n_own, bool *made, struct sfs_view_path_why *why)
{
        char buf[PATH_MAX], parent[PATH_MAX], *comp, *save = NULL;
        struct sfs_trustpath_why tw;
        _cleanup_close_ int dirfd = -1;
        struct stat dir_st, st;
        int r;

        *made = false;
        if (!sfs_view_path_canonical(path))
                return SAY(why, EINVAL, "%s: not an absolute, canonical path", path ? path : "");
        snprintf(buf, sizeof(buf), "%s", path);
        dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0 || fstat(dirfd, &dir_st) < 0)
                return SAY(why, errno, "/: %s", strerror(errno));
        for (comp = strtok_r(buf + 1, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
                bool last = save == NULL || *save == '\0';
                int fd;

                /* Inside one of the daemon's own mounts: never made, never mounted on (a
                 * lookup there is a request to this very daemon). */
                if (own_dev(dir_st.st_dev, own_devs, n_own)) {
                        r = SAY(why, EBUSY, "%s: on one of this daemon's own mounts", path);
                        goto fail;
                }
                r = stat_component(dirfd, comp, last, path, &st, made, why);
                if (r < 0)
                        goto fail;
                if (S_ISLNK(st.st_mode)) {
                        r = SAY(why, EINVAL, "%s: %s is a symbolic link", path, comp);
                        goto fail;
                }
                if (!S_ISDIR(st.st_mode)) {
                        r = SAY(why, EINVAL, "%s: %s is not a directory", path, comp);
                        goto fail;
                }
                /* The attack: a uid that can rename a component swaps in a link between this
                 * check and the mount, and the daemon mounts over what it points at. The
                 * directory holding comp is judged as every path the daemon trusts is. */
                if (sfs_trustpath_dir(dir_path(path, buf, comp, parent, sizeof(parent)),
                                      &dir_st, &st, trusted, &tw) < 0) {
                        r = SAY(why, EPERM, "%s: refused: %s", path, tw.message);
                        goto fail;
                }
                fd = openat(dirfd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        r = SAY(why, errno, "%s: %s: %s", path, comp, strerror(errno));
                        goto fail;
                }
                safe_close(dirfd);
                dirfd = fd;
                if (fstat(dirfd, &dir_st) < 0 || dir_st.st_ino != st.st_ino ||
                    dir_st.st_dev != st.st_dev) {
                        r = SAY(why, EINVAL, "%s: %s changed while it was checked", path, comp);
                        goto fail;
                }
        }
        r = check_view_dir(dirfd, path, own_devs, n_own, why);
        if (r == 0)
                return 0;
fail:
        if (*made) {
                rmdir(path);
                *made = false;
        }
        return r;
}

int sfs_view_path_remove(const char *path)
{
        return rmdir(path) < 0 ? negative_errno() : 0;
}
