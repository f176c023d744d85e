/* SPDX-License-Identifier: MIT */
/* A path the daemon trusts, judged from "/" down. The attack it stops: a uid that may write a
 * directory on the path (or owns one) swaps a component for a symbolic link, or the file for
 * one of its own, and the daemon reads its options, keys or snapshots from there, or writes
 * its audit log or pid where that uid chose. Checking the file alone misses it: a root 0644
 * config in a 0777 directory is replaced by whoever writes that directory. */
#include "fs/base/trustpath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"
#include "fs/base/log.h"

static bool trusted_uid(uid_t uid, uid_t trusted)
{
        return uid == 0 || uid == trusted;
}

int sfs_trustpath_dir(const char *dir_path, const struct stat *dir_st,
                      const struct stat *child_st, uid_t trusted, struct sfs_trustpath_why *why)
{
        if (!trusted_uid(dir_st->st_uid, trusted))
                return SAY(why, EPERM, "%s is owned by uid %u, neither root nor uid %u: that uid "
                           "could replace what the daemon reads there; make it root's (chown "
                           "root %s)", dir_path, (unsigned)dir_st->st_uid, (unsigned)trusted,
                           dir_path);
        if (!(dir_st->st_mode & (S_IWGRP | S_IWOTH)))
                return 0;
        /* A sticky directory (/tmp) lets only an entry's owner move or remove it. */
        if (!(dir_st->st_mode & S_ISVTX))
                return SAY(why, EPERM, "%s is writable by group or others (mode %04o): they "
                           "could replace what the daemon reads there; make it not writable by "
                           "them (chmod go-w %s)", dir_path,
                           (unsigned)(dir_st->st_mode & 07777), dir_path);
        if (!trusted_uid(child_st->st_uid, trusted))
                return SAY(why, EPERM, "%s is writable by others (mode %04o) and what the path "
                           "reaches there is owned by uid %u, neither root nor uid %u: a sticky "
                           "directory protects only an entry of root or the daemon's uid; move "
                           "it to a directory of its own", dir_path,
                           (unsigned)(dir_st->st_mode & 07777), (unsigned)child_st->st_uid,
                           (unsigned)trusted);
        return 0;
}

/* The next component of *p (advanced past it), NUL-terminated in place; "" skipped, NULL at
 * the end. */
static char *next_component(char **p)
{
        char *c;

        while (**p == '/')
                (*p)++;
        if (!**p)
                return NULL;
        c = *p;
        while (**p && **p != '/')
                (*p)++;
        if (**p)
                *(*p)++ = '\0';
        while (**p == '/')
                (*p)++;
        return c;
}

/* One component below dirfd as a descriptor, no symbolic link followed (not even as the
 * last component: O_PATH without O_NOFOLLOW makes RESOLVE_NO_SYMLINKS refuse it). Where a
 * seccomp filter hides openat2 (systemd-nspawn's answers ENOSYS), the same for one component:
 * O_PATH|O_NOFOLLOW opens a link itself, and fstat on that descriptor refuses it. */
static int open_component(int dirfd, const char *name)
{
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
        struct stat st;
        int r;

        if (fd >= 0)
                return (int)fd;
        if (errno != ENOSYS && errno != EPERM)
                return negative_errno();
        fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = fstat((int)fd, &st) < 0 ? negative_errno() : S_ISLNK(st.st_mode) ? -ELOOP : 0;
        if (r < 0) {
                safe_close((int)fd);
                return r;
        }
        return (int)fd;
}

/* done (the path walked so far, "/" at first) followed by comp: it always fits, since the
 * whole path is shorter than size. */
static void append(char *done, size_t size, const char *comp)
{
        size_t len = strlen(done), n = strlen(comp);

        if (len + 1 + n + 1 > size)
                return;
        if (len > 1)
                done[len++] = '/';
        memcpy(done + len, comp, n + 1);
}

int sfs_trustpath_judge(const char *path, uid_t trusted, unsigned flags,
                        struct sfs_trustpath_why *why)
{
        char buf[PATH_MAX], done[PATH_MAX] = "/", *p = buf, *comp;
        _cleanup_close_ int dirfd = -1;
        struct stat dir_st, st;
        int r;

        if (!path || path[0] != '/' || strlen(path) >= sizeof(buf))
                return SAY(why, EINVAL, "%s: not an absolute path", path ? path : "");
        snprintf(buf, sizeof(buf), "%s", path);
        dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0 || fstat(dirfd, &dir_st) < 0)
                return SAY(why, errno, "/: %s", strerror(errno));
        comp = next_component(&p);
        while (comp) {
                char *next = next_component(&p);
                size_t len = strlen(done);
                int fd;

                if (strcmp(comp, ".") == 0) {
                        comp = next;
                        continue;
                }
                if (strcmp(comp, "..") == 0)
                        return SAY(why, EINVAL, "%s: a \"..\" component; give the path "
                                   "without it", path);
                append(done, sizeof(done), comp);
                fd = open_component(dirfd, comp);
                if (fd == -ENOENT) {
                        /* What is missing is made by the daemon, its uid's: the directory
                         * it would be made in is judged all the same. */
                        st = (struct stat){ .st_uid = trusted };
                        done[len] = '\0';
                        r = sfs_trustpath_dir(done, &dir_st, &st, trusted, why);
                        if (r < 0 || (!next && (flags & SFS_TRUSTPATH_MAY_BE_ABSENT)))
                                return r;
                        return SAY(why, ENOENT, "%s%s%s: %s", done, len > 1 ? "/" : "", comp,
                                   strerror(ENOENT));
                }
                if (fd == -ELOOP)
                        return SAY(why, ELOOP, "%s is a symbolic link: the daemon follows no "
                                   "link on a path it trusts; give the path it points to",
                                   done);
                if (fd < 0)
                        return SAY(why, -fd, "%s: %s", done, strerror(-fd));
                if (fstat(fd, &st) < 0) {
                        r = negative_errno();
                        safe_close(fd);
                        return SAY(why, -r, "%s: %s", done, strerror(-r));
                }
                done[len] = '\0';
                r = sfs_trustpath_dir(done, &dir_st, &st, trusted, why);
                append(done, sizeof(done), comp);
                if (r == 0 && next && !S_ISDIR(st.st_mode))
                        r = SAY(why, ENOTDIR, "%s is not a directory", done);
                safe_close(dirfd);
                dirfd = fd;
                dir_st = st;
                if (r < 0)
                        return r;
                comp = next;
        }
        return 0;
}

bool sfs_trustpath_kernel_fs(const struct statfs *sfs)
{
        static const unsigned long types[] = {
                PROC_SUPER_MAGIC, SYSFS_MAGIC,    CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
                DEBUGFS_MAGIC,    TRACEFS_MAGIC,  SECURITYFS_MAGIC,   BPF_FS_MAGIC,
                EFIVARFS_MAGIC,   PSTOREFS_MAGIC,
        };

        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                if ((unsigned long)sfs->f_type == types[i])
                        return true;
        return false;
}
