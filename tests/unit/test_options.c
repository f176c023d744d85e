/* SPDX-License-Identifier: MIT */
/* fs/options.c: the daemon's configuration and the limits derived from other limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "fs/options.h"

static void test_derived_limits_are_a_quarter_of_the_totals(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 256 << 10,
                .max_bytes = 64 << 20,
                .max_snapshots = 4096,
        };

        (void)state;
        sfs_tree_config_derive(&cfg);
        assert_int_equal(cfg.max_staging_bytes, 16 << 20);
        assert_int_equal(cfg.max_uid_bytes, 16 << 20);
        assert_int_equal(cfg.max_uid_snapshots, 1024);
}

static void test_derived_byte_limits_hold_at_least_one_largest_snapshot(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 1 << 20,
                .max_bytes = 2 << 20,
                .max_snapshots = 3,
        };

        (void)state;
        sfs_tree_config_derive(&cfg);
        assert_int_equal(cfg.max_staging_bytes, 1 << 20);
        assert_int_equal(cfg.max_uid_bytes, 1 << 20);
        /* A quarter of 3 is 0: every uid may still hold one. */
        assert_int_equal(cfg.max_uid_snapshots, 1);
}

static void test_limits_given_are_never_derived(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 256 << 10,
                .max_bytes = 64 << 20,
                .max_snapshots = 4096,
                .max_staging_bytes = 4096,
                .max_uid_snapshots = 7,
                .max_uid_bytes = 8192,
        };

        (void)state;
        sfs_tree_config_derive(&cfg);
        assert_int_equal(cfg.max_staging_bytes, 4096);
        assert_int_equal(cfg.max_uid_snapshots, 7);
        assert_int_equal(cfg.max_uid_bytes, 8192);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_derived_limits_are_a_quarter_of_the_totals),
                cmocka_unit_test(test_derived_byte_limits_hold_at_least_one_largest_snapshot),
                cmocka_unit_test(test_limits_given_are_never_derived),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
