/* SPDX-License-Identifier: MIT */
/* fs/scopes/viewpath.c: where a scope's view may be mounted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/scopes/viewpath.h"
#include "tests/unit/testutil.h"

static void test_only_absolute_canonical_paths_are_views(void **state)
{
        static const char *bad[] = { "", "/", "relative", "./x", "/a//b", "/a/./b", "/a/../b",
                                     "/a/b/", "/a/..", "/a/." };
        char long_path[PATH_MAX + 8];

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_false(sfs_view_path_canonical(bad[i]));
        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = '\0';
        assert_false(sfs_view_path_canonical(long_path));
        assert_false(sfs_view_path_canonical(NULL));
        /* Beside them: names with dots that are names. */
        assert_true(sfs_view_path_canonical("/run/snapfs/views/a..b"));
        assert_true(sfs_view_path_canonical("/a/.hidden/b"));
}

/* A path out of the grammar: EINVAL naming it, before anything is looked at or made. */
static void test_preparing_a_path_that_is_not_canonical_is_einval_naming_it(void **state)
{
        static const char *bad[] = { "relative", "/a//b", "/a/../b", "/a/" };
        struct sfs_view_path_why why;
        char want[PATH_MAX + 64];
        bool made = true;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why.message[0] = '\0';
                assert_int_equal(sfs_view_path_prepare(bad[i], getuid(), NULL, 0, &made, &why),
                                 -EINVAL);
                assert_false(made);
                snprintf(want, sizeof(want), "%s: not an absolute, canonical path", bad[i]);
                assert_string_equal(why.message, want);
        }
        assert_int_equal(sfs_view_path_prepare(NULL, getuid(), NULL, 0, &made, &why), -EINVAL);
        assert_string_equal(why.message, ": not an absolute, canonical path");
}

struct fx {
        struct tu_dir dir;
        char p[PATH_MAX];
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;
        tu_dir_remove(&f->dir);
        free(f);
        return 0;
}

static int prepare(struct fx *f, const char *name, bool *made, const uint64_t *devs, size_t n)
{
        struct sfs_view_path_why why;
        tu_path(&f->dir, name, f->p);
        return sfs_view_path_prepare(f->p, getuid(), devs, n, made, &why);
}

static void test_a_missing_directory_is_made_and_removed_again(void **state)
{
        struct fx *f = *state;
        struct stat st;
        bool made;

        assert_int_equal(prepare(f, "view", &made, NULL, 0), 0);
        assert_true(made);
        assert_int_equal(stat(f->p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        /* There already: prepared, not made. */
        assert_int_equal(prepare(f, "view", &made, NULL, 0), 0);
        assert_false(made);
        assert_int_equal(sfs_view_path_remove(f->p), 0);
        assert_int_equal(stat(f->p, &st), -1);
}

static void test_a_symlink_a_file_or_a_missing_parent_is_einval(void **state)
{
        struct fx *f = *state;
        char target[PATH_MAX];
        bool made;

        tu_path(&f->dir, "real", target);
        assert_int_equal(mkdir(target, 0755), 0);
        tu_path(&f->dir, "link", f->p);
        assert_int_equal(symlink(target, f->p), 0);
        assert_int_equal(prepare(f, "link", &made, NULL, 0), -EINVAL);
        assert_int_equal(prepare(f, "link/x", &made, NULL, 0), -EINVAL);
        assert_false(made);
        close(tu_create(&f->dir, "file", "x", 1));
        assert_int_equal(prepare(f, "file", &made, NULL, 0), -EINVAL);
        assert_int_equal(prepare(f, "none/x", &made, NULL, 0), -EINVAL);
        /* Beside them: the real directory, and one made in it. */
        assert_int_equal(prepare(f, "real", &made, NULL, 0), 0);
        assert_int_equal(prepare(f, "real/x", &made, NULL, 0), 0);
        assert_true(made);
        assert_int_equal(sfs_view_path_remove(f->p), 0);
}

static void test_a_directory_another_uid_can_change_is_eperm_unless_sticky(void **state)
{
        struct fx *f = *state;
        struct sfs_view_path_why why;
        char open_dir[PATH_MAX], want[PATH_MAX + 64];
        bool made;

        tu_path(&f->dir, "open", open_dir);
        assert_int_equal(mkdir(open_dir, 0777), 0);
        assert_int_equal(chmod(open_dir, 0777), 0);
        tu_path(&f->dir, "open/view", f->p);
        assert_int_equal(sfs_view_path_prepare(f->p, getuid(), NULL, 0, &made, &why), -EPERM);
        assert_false(made);
        /* The refusal names the directory and what is wrong with it. */
        snprintf(want, sizeof(want), "refused: %s is writable by group or others (mode 0777)",
                 open_dir);
        assert_non_null(strstr(why.message, want));
        /* Sticky: an entry is moved by its owner alone, and this one is ours. */
        assert_int_equal(chmod(open_dir, 01777), 0);
        assert_int_equal(prepare(f, "open/view", &made, NULL, 0), 0);
        assert_true(made);
        assert_int_equal(sfs_view_path_remove(f->p), 0);
        assert_int_equal(rmdir(open_dir), 0);
}

static void test_a_mount_point_or_a_daemons_own_mount_is_ebusy(void **state)
{
        struct fx *f = *state;
        struct sfs_view_path_why why;
        struct stat st;
        uint64_t own;
        bool made;

        (void)f;
        /* /proc is a mount point on every machine these tests run on. */
        assert_int_equal(sfs_view_path_prepare("/proc", getuid(), NULL, 0, &made, &why), -EBUSY);
        assert_non_null(strstr(why.message, "mount point"));
        /* A directory on a filesystem the daemon serves (its device listed). */
        assert_int_equal(stat(f->dir.path, &st), 0);
        own = st.st_dev;
        assert_int_equal(prepare(f, "inside", &made, &own, 1), -EBUSY);
        assert_false(made);
        assert_int_equal(prepare(f, "inside", &made, NULL, 0), 0);
        assert_int_equal(sfs_view_path_remove(f->p), 0);
}

/* What preparing a view over a dead FUSE mount gave, in a mount namespace of its own. */
struct dead_answer {
        int setup;    /* 0, or the errno that kept the dead mount from being made */
        int prepared; /* over the dead mount */
        bool made;
        char message[sizeof(((struct sfs_view_path_why *)0)->message)];
        int after;    /* once it is unmounted */
        bool made_after;
};

/* A FUSE mount whose server is gone (the /dev/fuse descriptor it was mounted with closed, as
 * a killed daemon leaves it) at path: every request there answers ENOTCONN. */
static void prepare_over_a_dead_mount(const char *path, struct dead_answer *a)
{
        struct sfs_view_path_why why = { .message = "" };
        char opts[128];
        int fd;

        if (unshare(CLONE_NEWNS) < 0 ||
            mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
                a->setup = errno;
                return;
        }
        fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                a->setup = errno;
                return;
        }
        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        if (mount("snapfs-unit", path, "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
                a->setup = errno;
                close(fd);
                return;
        }
        close(fd);
        a->prepared = sfs_view_path_prepare(path, getuid(), NULL, 0, &a->made, &why);
        snprintf(a->message, sizeof(a->message), "%s", why.message);
        umount2(path, MNT_DETACH);
        a->after = sfs_view_path_prepare(path, getuid(), NULL, 0, &a->made_after, &why);
}

/* A killed daemon's view: ENOTCONN (the registry clears it with --replace-stale), never a
 * directory made or mounted over it. */
static void test_a_dead_fuse_mount_at_the_view_is_enotconn(void **state)
{
        struct fx *f = *state;
        struct dead_answer a = { .setup = -1 };
        char want[PATH_MAX + 64];
        int fds[2], status;
        pid_t pid;

        /* Only root mounts FUSE with a descriptor of its own; elsewhere this is not checked. */
        if (geteuid() != 0)
                skip();
        tu_path(&f->dir, "view", f->p);
        assert_int_equal(mkdir(f->p, 0755), 0);
        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(fds[0]);
                memset(&a, 0, sizeof(a));
                prepare_over_a_dead_mount(f->p, &a);
                _exit(write(fds[1], &a, sizeof(a)) == (ssize_t)sizeof(a) ? 0 : 1);
        }
        close(fds[1]);
        assert_int_equal(read(fds[0], &a, sizeof(a)), (ssize_t)sizeof(a));
        close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(status, 0);
        assert_int_equal(a.setup, 0);
        assert_int_equal(a.prepared, -ENOTCONN);
        assert_false(a.made);
        snprintf(want, sizeof(want), "%s: a dead FUSE mount is there", f->p);
        assert_string_equal(a.message, want);
        /* Beside it: the same directory, the mount gone, is a view (there already). */
        assert_int_equal(a.after, 0);
        assert_false(a.made_after);
        assert_int_equal(rmdir(f->p), 0);
}

/* What preparing a view on a btrfs subvolume gave, in a mount namespace of its own. */
struct subvolume_answer {
        int setup; /* 0; ENOENT: no mkfs.btrfs here; else EIO: the subvolume was not made */
        int own;      /* its device listed as one of the daemon's own */
        char message[sizeof(((struct sfs_view_path_why *)0)->message)];
        bool made;
        int other;    /* not listed */
};

/* A btrfs subvolume (a loop-mounted image at dir/mnt, the subvolume mnt/sub) is a directory
 * on a device of its own that is no mount point: the one place where the view's own
 * directory, not any parent, is on a device the daemon lists. */
static void prepare_on_a_subvolume(const char *dir, struct subvolume_answer *a)
{
        struct sfs_view_path_why why = { .message = "" };
        char cmd[3 * PATH_MAX], mnt[PATH_MAX], sub[PATH_MAX];
        struct stat st;
        uint64_t own;

        snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
        snprintf(sub, sizeof(sub), "%s/mnt/sub", dir);
        if (system("command -v mkfs.btrfs >/dev/null 2>&1") != 0) {
                a->setup = ENOENT;
                return;
        }
        snprintf(cmd, sizeof(cmd), "truncate -s 128M %s/img && mkfs.btrfs -q %s/img "
                 ">/dev/null 2>&1 && mkdir %s", dir, dir, mnt);
        if (system(cmd) != 0 || unshare(CLONE_NEWNS) < 0 ||
            mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
                a->setup = EIO;
                return;
        }
        snprintf(cmd, sizeof(cmd), "mount -o loop %s/img %s && btrfs -q subvolume create %s "
                 ">/dev/null", dir, mnt, sub);
        if (system(cmd) != 0 || stat(sub, &st) < 0) {
                a->setup = EIO;
                return;
        }
        own = st.st_dev;
        a->own = sfs_view_path_prepare(sub, getuid(), &own, 1, &a->made, &why);
        snprintf(a->message, sizeof(a->message), "%s", why.message);
        a->other = sfs_view_path_prepare(sub, getuid(), NULL, 0, &a->made, &why);
        umount2(mnt, MNT_DETACH);
}

/* The view's own directory on one of the daemon's own devices (a subvolume of a filesystem it
 * serves, its parent on another): EBUSY, as for a directory inside one of its mounts (a
 * mount there would be over a tree whose lookups are requests to this very daemon). */
static void test_a_view_on_a_subvolume_the_daemon_serves_is_ebusy(void **state)
{
        struct fx *f = *state;
        struct subvolume_answer a = { .setup = -1 };
        char want[PATH_MAX + 64];
        int fds[2], status;
        pid_t pid;

        /* Only root mounts an image; elsewhere this is not checked. */
        if (geteuid() != 0)
                skip();
        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(fds[0]);
                memset(&a, 0, sizeof(a));
                prepare_on_a_subvolume(f->dir.path, &a);
                _exit(write(fds[1], &a, sizeof(a)) == (ssize_t)sizeof(a) ? 0 : 1);
        }
        close(fds[1]);
        assert_int_equal(read(fds[0], &a, sizeof(a)), (ssize_t)sizeof(a));
        close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(status, 0);
        tu_path(&f->dir, "img", f->p);
        unlink(f->p);
        tu_path(&f->dir, "mnt", f->p);
        rmdir(f->p);
        /* Without btrfs-progs (scripts/deps.sh --test installs them): not checked, and says so. */
        if (a.setup == ENOENT)
                skip();
        assert_int_equal(a.setup, 0);
        assert_int_equal(a.own, -EBUSY);
        snprintf(want, sizeof(want), "%s/mnt/sub: on one of this daemon's own mounts",
                 f->dir.path);
        assert_string_equal(a.message, want);
        /* Beside it: the same subvolume, its device not the daemon's, is a view. */
        assert_int_equal(a.other, 0);
        assert_false(a.made);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_only_absolute_canonical_paths_are_views),
                cmocka_unit_test(test_preparing_a_path_that_is_not_canonical_is_einval_naming_it),
                T(test_a_missing_directory_is_made_and_removed_again),
                T(test_a_symlink_a_file_or_a_missing_parent_is_einval),
                T(test_a_directory_another_uid_can_change_is_eperm_unless_sticky),
                T(test_a_mount_point_or_a_daemons_own_mount_is_ebusy),
                T(test_a_dead_fuse_mount_at_the_view_is_enotconn),
                T(test_a_view_on_a_subvolume_the_daemon_serves_is_ebusy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
