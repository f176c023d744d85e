/* SPDX-License-Identifier: MIT */
/* mc_mountinfo_collect_stream() on mountinfo text: the records a query asks for, unescaped,
 * found by ids whatever the line order; a line that does not parse refuses the whole table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lines_become_records_with_unescaped_paths),
                cmocka_unit_test(test_a_line_that_does_not_parse_refuses_the_table),
                cmocka_unit_test(test_no_stream_is_einval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
