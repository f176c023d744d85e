/* SPDX-License-Identifier: MIT */
/* fs/scopes/viewpath.c: where a scope's view may be mounted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_only_absolute_canonical_paths_are_views),
                T(test_a_missing_directory_is_made_and_removed_again),
                T(test_a_symlink_a_file_or_a_missing_parent_is_einval),
                T(test_a_directory_another_uid_can_change_is_eperm_unless_sticky),
                T(test_a_mount_point_or_a_daemons_own_mount_is_ebusy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
