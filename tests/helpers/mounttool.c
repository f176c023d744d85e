/* SPDX-License-Identifier: MIT */
/* mounttool: the mount stacks plain mount(8) cannot make, for the mount-check tests.
 *
 *   mounttool early-on-top PATH UPPER LOWER
 *       create UPPER detached with fsmount() first, then mount LOWER at PATH with mount(2),
 *       then move UPPER on top: the top mount has the older id and mountinfo lists it first.
 *   mounttool beneath PATH OPTS
 *       slide a new tmpfs under the mount on top of PATH (MOVE_MOUNT_BENEATH, Linux 6.5+).
 *   mounttool idmap SRC DST
 *       attach at DST an idmapped clone of the mount at SRC (uids/gids shifted by 100000).
 *   mounttool propagation PATH private|shared|slave|unbindable
 *       mount_setattr() the propagation of the mount at PATH.
 *
 * OPTS: a comma-separated tmpfs option list; ro, nosuid, nodev, noexec and noatime are
 * per-mount flags, anything else (size=1m, mode=1777) goes to the filesystem. Exit 0 or 1
 * with a message naming the step that failed. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mount.h>

#include "common/util.h"

#ifndef MOVE_MOUNT_BENEATH
#define MOVE_MOUNT_BENEATH 0x00000200
#endif

static int fail(const char *step)
{
        fprintf(stderr, "mounttool: %s: %s\n", step, strerror(errno));
        return 1;
}

static const struct {
        const char *name;
        unsigned attr;
        unsigned long ms;
} flag_opts[] = {
        { "ro", MOUNT_ATTR_RDONLY, MS_RDONLY },
        { "nosuid", MOUNT_ATTR_NOSUID, MS_NOSUID },
        { "nodev", MOUNT_ATTR_NODEV, MS_NODEV },
        { "noexec", MOUNT_ATTR_NOEXEC, MS_NOEXEC },
        { "noatime", MOUNT_ATTR_NOATIME, MS_NOATIME },
};

/* Splits OPTS into per-mount flags (both spellings) and the filesystem's own options. */
static int split_opts(const char *opts, unsigned *attr, unsigned long *ms, char *data, size_t n)
{
        _cleanup_free_ char *copy = strdup(opts);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        *attr = 0;
        *ms = 0;
        data[0] = '\0';
        for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                bool flag = false;
                for (size_t i = 0; i < ARRAY_SIZE(flag_opts); i++)
                        if (strcmp(o, flag_opts[i].name) == 0) {
                                *attr |= flag_opts[i].attr;
                                *ms |= flag_opts[i].ms;
                                flag = true;
                        }
                if (flag)
                        continue;
                if (strlen(data) + strlen(o) + 2 > n)
                        return -E2BIG;
                if (data[0])
                        strcat(data, ",");
                strcat(data, o);
        }
        return 0;
}

/* A detached tmpfs mount made with the new mount API; its mount id is allocated now. */
static int fsmount_tmpfs(const char *opts)
{
        _cleanup_close_ int fs = -1;
        char data[512];
        unsigned long ms;
        unsigned attr;
        char *save = NULL;
        int mfd;

        if (split_opts(opts, &attr, &ms, data, sizeof(data)) < 0) {
                errno = EINVAL;
                return -1;
        }
        fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0)
                return -1;
        for (char *o = strtok_r(data, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(o, '=');
                long r;
                if (eq) {
                        *eq = '\0';
                        r = syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, o, eq + 1, 0);
                } else
                        r = syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, o, NULL, 0);
                if (r < 0)
                        return -1;
        }
        if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return -1;
        mfd = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attr);
        return mfd;
}

static int move_to(int mfd, const char *path, unsigned flags)
{
        return (int)syscall(SYS_move_mount, mfd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH | flags);
}

static int cmd_early_on_top(const char *path, const char *upper, const char *lower)
{
        _cleanup_close_ int up = -1;
        char data[512];
        unsigned long ms;
        unsigned attr;

        up = fsmount_tmpfs(upper);
        if (up < 0)
                return fail("fsmount upper");
        if (split_opts(lower, &attr, &ms, data, sizeof(data)) < 0) {
                errno = EINVAL;
                return fail("lower options");
        }
        if (mount("tmpfs", path, "tmpfs", ms, data) < 0)
                return fail("mount lower");
        if (move_to(up, path, 0) < 0)
                return fail("move_mount upper on top");
        return 0;
}

static int cmd_beneath(const char *path, const char *opts)
{
        _cleanup_close_ int m = fsmount_tmpfs(opts);

        if (m < 0)
                return fail("fsmount");
        if (move_to(m, path, MOVE_MOUNT_BENEATH) < 0)
                return fail("move_mount beneath");
        return 0;
}

/* A user namespace fd mapping 0..65535 to 100000..165535: a stopped child unshares it, we
 * write its maps, keep a reference to the namespace and let the child go. */
static int userns_fd(void)
{
        char p[64];
        int fd = -1, status;
        pid_t pid = fork();

        if (pid < 0)
                return -1;
        if (pid == 0) {
                if (unshare(CLONE_NEWUSER) < 0)
                        _exit(1);
                raise(SIGSTOP);
                _exit(0);
        }
        if (waitpid(pid, &status, WUNTRACED) < 0 || !WIFSTOPPED(status))
                goto out;
        static const char *const files[] = { "uid_map", "setgroups", "gid_map" };
        static const char *const texts[] = { "0 100000 65536\n", "deny\n", "0 100000 65536\n" };
        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                _cleanup_close_ int f = -1;
                snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, files[i]);
                f = open(p, O_WRONLY | O_CLOEXEC);
                if (f < 0 || write(f, texts[i], strlen(texts[i])) < 0)
                        goto out;
        }
        snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)pid);
        fd = open(p, O_RDONLY | O_CLOEXEC);
out:
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return fd;
}

static int cmd_idmap(const char *src, const char *dst)
{
        _cleanup_close_ int ns = -1, m = -1;
        struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP };

        ns = userns_fd();
        if (ns < 0)
                return fail("user namespace");
        m = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (m < 0)
                return fail("open_tree");
        a.userns_fd = (unsigned)ns;
        if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
                return fail("mount_setattr idmap");
        if (move_to(m, dst, 0) < 0)
                return fail("move_mount");
        return 0;
}

static int cmd_propagation(const char *path, const char *how)
{
        struct mount_attr a = { 0 };

        if (strcmp(how, "private") == 0)
                a.propagation = MS_PRIVATE;
        else if (strcmp(how, "shared") == 0)
                a.propagation = MS_SHARED;
        else if (strcmp(how, "slave") == 0)
                a.propagation = MS_SLAVE;
        else if (strcmp(how, "unbindable") == 0)
                a.propagation = MS_UNBINDABLE;
        else {
                fprintf(stderr, "mounttool: unknown propagation '%s'\n", how);
                return 1;
        }
        if (syscall(SYS_mount_setattr, AT_FDCWD, path, 0, &a, sizeof(a)) < 0)
                return fail("mount_setattr propagation");
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 5 && strcmp(argv[1], "early-on-top") == 0)
                return cmd_early_on_top(argv[2], argv[3], argv[4]);
        if (argc == 4 && strcmp(argv[1], "beneath") == 0)
                return cmd_beneath(argv[2], argv[3]);
        if (argc == 4 && strcmp(argv[1], "idmap") == 0)
                return cmd_idmap(argv[2], argv[3]);
        if (argc == 4 && strcmp(argv[1], "propagation") == 0)
                return cmd_propagation(argv[2], argv[3]);
        fprintf(stderr,
                "usage: mounttool early-on-top PATH UPPER LOWER\n"
                "       mounttool beneath PATH OPTS\n"
                "       mounttool idmap SRC DST\n"
                "       mounttool propagation PATH private|shared|slave|unbindable\n");
        return 2;
}
