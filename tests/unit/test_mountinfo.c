/* SPDX-License-Identifier: MIT */
/* mc_mountinfo_collect_stream() on mountinfo text: the records a query asks for, unescaped,
 * found by ids whatever the line order; a line that does not parse refuses the whole table.
 * The backend itself (mc_backend_mountinfo) reads the same text through a table of kernel
 * calls (kernel-calls.h) that stands in for /proc/self/mountinfo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <libmount.h>
#include <stdio.h>
#include <string.h>

#include "mountcheck/backend.h"
#include "mountcheck/kernel-calls.h"

#define ROOT "1 0 0:1 / / rw,relatime - ext4 /dev/root rw\n"
#define RUN "20 1 0:22 / /run rw,nosuid,nodev - tmpfs tmpfs rw,size=1024k,mode=755\n"
/* Listed before the mount it sits on: line order is not stack order. */
#define ON_TOP "31 30 0:47 / /run/a\\040b rw - tmpfs tmpfs rw\n"
#define SNAP "30 20 0:45 / /run/a\\040b rw,nosuid,nodev,noexec shared:7 - fuse.snapfs snapfs rw,user_id=0,group_id=0\n"

static int collect(const char *text, struct mc_mount_set *set)
{
        struct mc_query q = {
                .path = "/run/a b",
                .want = MC_WANT_TARGET | MC_WANT_PARENT | MC_WANT_CHILDREN,
                .has_target = true,
                .target_id = 30,
        };
        FILE *f = fmemopen((void *)text, strlen(text), "r");
        int r;

        assert_non_null(f);
        r = mc_mountinfo_collect_stream(&q, f, set);
        fclose(f);
        return r;
}

static void test_lines_become_records_with_unescaped_paths(void **state)
{
        struct mc_mount_set set = { 0 };
        const struct mc_mount *m;

        (void)state;
        assert_int_equal(collect(ROOT RUN ON_TOP SNAP, &set), 0);
        assert_int_equal(set.n, 3); /* target, parent, child; not the root */
        m = mc_mount_set_find(&set, 30);
        assert_non_null(m);
        assert_string_equal(m->mount_point, "/run/a b");
        assert_string_equal(m->fstype, "fuse.snapfs");
        assert_int_equal(m->parent_id, 20);
        assert_int_equal(m->options, MC_OPT_RW | MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC);
        assert_int_equal(m->propagation, MC_PROP_SHARED);
        assert_true(m->has_user_id);
        assert_int_equal(m->user_id, 0);
        assert_non_null(mc_mount_set_find(&set, 20));
        assert_non_null(mc_mount_set_find(&set, 31));
        assert_null(mc_mount_set_find(&set, 1));
        mc_mount_set_free(&set);
}

static void test_a_line_that_does_not_parse_refuses_the_table(void **state)
{
        struct mc_mount_set set = { 0 };

        (void)state;
        /* A skipped line could be the mount on top of ours. */
        assert_int_equal(collect(ROOT RUN "31 30 not a mountinfo line\n" SNAP, &set), -EBADMSG);
        mc_mount_set_free(&set);
}

static void test_no_stream_is_einval(void **state)
{
        struct mc_mount_set set = { 0 };
        struct mc_query q = { .path = "/", .want = MC_WANT_AT_PATH };

        (void)state;
        assert_int_equal(mc_mountinfo_collect_stream(&q, NULL, &set), -EINVAL);
        assert_int_equal(set.n, 0);
}

static void test_a_line_that_does_not_parse_refuses_the_table_even_far_from_the_path(void **state)
{
        struct mc_mount_set set = { 0 };

        (void)state;
        /* Nothing in it names our mount, its parent or its path: still, what it was is
         * unknown, so nothing in the table can be trusted to be complete. */
        assert_int_equal(collect(ROOT "garbage\n" RUN ON_TOP SNAP, &set), -EBADMSG);
        mc_mount_set_free(&set);
        assert_int_equal(collect(ROOT RUN ON_TOP SNAP, &set), 0);
        assert_int_equal(set.n, 3);
        mc_mount_set_free(&set);
}

static void test_a_negative_parent_id_refuses_the_table(void **state)
{
        struct mc_mount_set set = { 0 };

        (void)state;
        /* libmount reads ids with strtol, so "-1" parses; no mount has that parent. */
        assert_int_equal(collect(ROOT RUN "30 -1 0:45 / /run/a\\040b rw - fuse.snapfs snapfs rw\n",
                                 &set), -EBADMSG);
        mc_mount_set_free(&set);
        /* A line with a negative id is nobody's record: skipped, like an unrelated line. */
        assert_int_equal(collect(ROOT RUN "-31 30 0:47 / /run/a\\040b rw - tmpfs tmpfs rw\n" SNAP,
                                 &set), 0);
        assert_int_equal(set.n, 2);
        assert_non_null(mc_mount_set_find(&set, 30));
        assert_non_null(mc_mount_set_find(&set, 20));
        mc_mount_set_free(&set);
}

static void test_a_table_that_is_not_mountinfo_is_refused(void **state)
{
        static const char fstab[] = "tmpfs /run/a\\040b tmpfs rw 0 0\n";
        struct mc_mount_set set = { 0 };
        struct mc_query q = { .path = "/run/a b", .want = MC_WANT_AT_PATH };
        FILE *f = fmemopen((void *)fstab, strlen(fstab), "r");

        (void)state;
        assert_non_null(f);
        /* libmount takes the format from the first line: this one reads as fstab, whose
         * records have no root (and no ids) to judge. */
        assert_int_equal(mc_mountinfo_collect_stream(&q, f, &set), -EBADMSG);
        assert_int_equal(set.n, 0);
        fclose(f);
        f = fmemopen((void *)SNAP, strlen(SNAP), "r");
        assert_non_null(f);
        assert_int_equal(mc_mountinfo_collect_stream(&q, f, &set), 0);
        assert_int_equal(set.n, 1);
        fclose(f);
        mc_mount_set_free(&set);
}

static void test_a_query_without_its_target_or_set_is_einval(void **state)
{
        struct mc_mount_set set = { 0 };
        struct mc_query q = { .path = "/", .want = MC_WANT_TARGET };
        FILE *f = fmemopen((void *)ROOT, strlen(ROOT), "r");

        (void)state;
        assert_non_null(f);
        /* Target, parent and children are relative to a target the query must name. */
        assert_int_equal(mc_mountinfo_collect_stream(&q, f, &set), -EINVAL);
        assert_int_equal(mc_mountinfo_collect_stream(NULL, f, &set), -EINVAL);
        q.want = MC_WANT_AT_PATH;
        assert_int_equal(mc_mountinfo_collect_stream(&q, f, NULL), -EINVAL);
        assert_int_equal(set.n, 0);
        assert_int_equal(mc_mountinfo_collect_stream(&q, f, &set), 0);
        assert_int_equal(set.n, 1);
        fclose(f);
        mc_mount_set_free(&set);
}

/* The mount table the backend reads, in place of /proc/self/mountinfo. */
static const char *table_text;
static int table_errno;

static int fake_parse_mountinfo(struct libmnt_table *tb)
{
        FILE *f;
        int r;

        if (table_errno)
                return -table_errno;
        f = fmemopen((void *)table_text, strlen(table_text), "r");
        if (!f)
                return -errno;
        r = mnt_table_parse_stream(tb, f, "/proc/self/mountinfo");
        fclose(f);
        return r;
}

static void test_the_backend_reads_the_kernels_table_and_passes_its_errors_on(void **state)
{
        static struct mc_kernel k;
        struct mc_mount_set set = { 0 };
        struct mc_query q = {
                .path = "/run/a b",
                .want = MC_WANT_TARGET | MC_WANT_PARENT | MC_WANT_CHILDREN,
                .has_target = true,
                .target_id = 30,
        };

        (void)state;
        k = mc_kernel_linux;
        k.parse_mountinfo = fake_parse_mountinfo;
        mc_kernel_swap(&k);
        table_text = ROOT RUN ON_TOP SNAP;
        table_errno = 0;
        assert_int_equal(mc_backend_mountinfo.collect(&q, &set), 0);
        assert_int_equal(set.n, 3);
        mc_mount_set_free(&set);
        table_text = ROOT "31 30 not a mountinfo line\n" SNAP;
        assert_int_equal(mc_backend_mountinfo.collect(&q, &set), -EBADMSG);
        mc_mount_set_free(&set);
        table_errno = EACCES;
        assert_int_equal(mc_backend_mountinfo.collect(&q, &set), -EACCES);
        assert_int_equal(set.n, 0);
}

static int real_kernel(void **state)
{
        (void)state;
        mc_kernel_swap(NULL);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lines_become_records_with_unescaped_paths),
                cmocka_unit_test(test_a_line_that_does_not_parse_refuses_the_table),
                cmocka_unit_test(test_no_stream_is_einval),
                cmocka_unit_test(test_a_line_that_does_not_parse_refuses_the_table_even_far_from_the_path),
                cmocka_unit_test(test_a_negative_parent_id_refuses_the_table),
                cmocka_unit_test(test_a_table_that_is_not_mountinfo_is_refused),
                cmocka_unit_test(test_a_query_without_its_target_or_set_is_einval),
                cmocka_unit_test_teardown(test_the_backend_reads_the_kernels_table_and_passes_its_errors_on,
                                          real_kernel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
