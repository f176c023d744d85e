/* SPDX-License-Identifier: MIT */
/* fs/base/trustpath.c: a path the daemon trusts, judged from "/" down. */
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
#include <sys/statfs.h>
#include <unistd.h>

#include "fs/base/trustpath.h"
#include "tests/unit/testutil.h"

struct fx {
        struct tu_dir dir;
        char p[PATH_MAX];
        struct sfs_trustpath_why why;
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        char p[PATH_MAX];

        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        assert_int_equal(mkdir(tu_path(&f->dir, "etc", p), 0755), 0);
        assert_int_equal(chmod(p, 0755), 0);
        close(tu_create(&f->dir, "etc/snapfs.conf", "", 0));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];

        unlink(tu_path(&f->dir, "etc/snapfs.conf", p));
        unlink(tu_path(&f->dir, "link", p));
        rmdir(tu_path(&f->dir, "etc", p));
        tu_dir_remove(&f->dir);
        free(f);
        return 0;
}

static int judge(struct fx *f, const char *name, unsigned flags)
{
        f->why.message[0] = '\0';
        return sfs_trustpath_judge(tu_path(&f->dir, name, f->p), getuid(), flags, &f->why);
}

static void test_a_file_in_a_directory_others_may_write_is_eperm_naming_it(void **state)
{
        struct fx *f = *state;
        char etc[PATH_MAX], want[PATH_MAX + 64];

        /* Beside it: the same file in a 0755 directory. */
        assert_int_equal(judge(f, "etc/snapfs.conf", 0), 0);
        assert_int_equal(chmod(tu_path(&f->dir, "etc", etc), 0777), 0);
        assert_int_equal(judge(f, "etc/snapfs.conf", 0), -EPERM);
        snprintf(want, sizeof(want), "%s is writable by group or others (mode 0777)", etc);
        assert_non_null(strstr(f->why.message, want));
        /* Group write is as bad. */
        assert_int_equal(chmod(etc, 0775), 0);
        assert_int_equal(judge(f, "etc/snapfs.conf", 0), -EPERM);
        assert_int_equal(chmod(etc, 0755), 0);
}

static void test_a_symlinked_directory_on_the_way_is_eloop_naming_it(void **state)
{
        struct fx *f = *state;
        char link[PATH_MAX], want[PATH_MAX + 64];

        /* The attack: etc/ swapped for a link to a directory holding another snapfs.conf. */
        assert_int_equal(symlink("etc", tu_path(&f->dir, "link", link)), 0);
        assert_int_equal(judge(f, "link/snapfs.conf", 0), -ELOOP);
        snprintf(want, sizeof(want), "%s is a symbolic link", link);
        assert_non_null(strstr(f->why.message, want));
        /* The link as the last component too. */
        assert_int_equal(judge(f, "link", SFS_TRUSTPATH_MAY_BE_ABSENT), -ELOOP);
        assert_int_equal(judge(f, "etc/snapfs.conf", 0), 0);
}

static void test_a_missing_file_passes_only_when_it_may_be_absent(void **state)
{
        struct fx *f = *state;

        assert_int_equal(judge(f, "etc/snapfs.pid", SFS_TRUSTPATH_MAY_BE_ABSENT), 0);
        assert_int_equal(judge(f, "etc/snapfs.pid", 0), -ENOENT);
        assert_int_equal(judge(f, "none/snapfs.pid", SFS_TRUSTPATH_MAY_BE_ABSENT), -ENOENT);
        /* Where it would be made is judged all the same. */
        assert_int_equal(chmod(tu_path(&f->dir, "etc", f->p), 0777), 0);
        assert_int_equal(judge(f, "etc/snapfs.pid", SFS_TRUSTPATH_MAY_BE_ABSENT), -EPERM);
        assert_int_equal(chmod(tu_path(&f->dir, "etc", f->p), 0755), 0);
}

static void test_dot_dot_relative_and_file_components_are_refused(void **state)
{
        struct fx *f = *state;

        assert_int_equal(judge(f, "etc/../etc/snapfs.conf", 0), -EINVAL);
        assert_int_equal(sfs_trustpath_judge("etc/snapfs.conf", getuid(), 0, NULL), -EINVAL);
        assert_int_equal(judge(f, "etc/snapfs.conf/x", SFS_TRUSTPATH_MAY_BE_ABSENT), -ENOTDIR);
        /* "." and "//" are only spelling. */
        assert_int_equal(judge(f, "./etc//snapfs.conf", 0), 0);
}

static void test_a_directory_owned_by_another_uid_is_eperm(void **state)
{
        struct stat dir = { .st_uid = 4701, .st_mode = S_IFDIR | 0755 };
        struct stat child = { .st_uid = 0, .st_mode = S_IFREG | 0644 };
        struct sfs_trustpath_why why;

        (void)state;
        assert_int_equal(sfs_trustpath_dir("/srv/x", &dir, &child, 1000, &why), -EPERM);
        assert_non_null(strstr(why.message, "/srv/x is owned by uid 4701, neither root nor "
                                            "uid 1000"));
        /* Beside it: owned by the daemon's uid, or by root. */
        dir.st_uid = 1000;
        assert_int_equal(sfs_trustpath_dir("/srv/x", &dir, &child, 1000, &why), 0);
        dir.st_uid = 0;
        assert_int_equal(sfs_trustpath_dir("/srv/x", &dir, &child, 1000, &why), 0);
}

static void test_a_sticky_directory_protects_only_an_entry_of_the_daemon_or_root(void **state)
{
        struct stat tmp = { .st_uid = 0, .st_mode = S_IFDIR | 01777 };
        struct stat child = { .st_uid = 4701, .st_mode = S_IFREG | 0644 };
        struct sfs_trustpath_why why;

        (void)state;
        assert_int_equal(sfs_trustpath_dir("/tmp", &tmp, &child, 1000, &why), -EPERM);
        assert_non_null(strstr(why.message, "owned by uid 4701"));
        child.st_uid = 1000;
        assert_int_equal(sfs_trustpath_dir("/tmp", &tmp, &child, 1000, &why), 0);
        /* Not sticky: nobody's entry is safe there. */
        tmp.st_mode = S_IFDIR | 0777;
        assert_int_equal(sfs_trustpath_dir("/tmp", &tmp, &child, 1000, &why), -EPERM);
}

static void test_proc_and_sys_are_kernel_interfaces(void **state)
{
        struct sfs_trustpath_why why;
        struct statfs sfs;
        struct fx *f = *state;

        assert_int_equal(statfs("/proc/self", &sfs), 0);
        assert_true(sfs_trustpath_kernel_fs(&sfs));
        assert_int_equal(statfs("/sys/kernel", &sfs), 0);
        assert_true(sfs_trustpath_kernel_fs(&sfs));
        assert_int_equal(statfs(f->dir.path, &sfs), 0);
        assert_false(sfs_trustpath_kernel_fs(&sfs));
        /* /proc/self is itself a link: refused before any kernel file is reached. */
        assert_int_equal(sfs_trustpath_judge("/proc/self/status", getuid(), 0, &why), -ELOOP);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(
                        test_a_file_in_a_directory_others_may_write_is_eperm_naming_it, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_symlinked_directory_on_the_way_is_eloop_naming_it, setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_missing_file_passes_only_when_it_may_be_absent, setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_dot_dot_relative_and_file_components_are_refused, setup, teardown),
                cmocka_unit_test(test_a_directory_owned_by_another_uid_is_eperm),
                cmocka_unit_test(
                        test_a_sticky_directory_protects_only_an_entry_of_the_daemon_or_root),
                cmocka_unit_test_setup_teardown(test_proc_and_sys_are_kernel_interfaces, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
