/* SPDX-License-Identifier: MIT */
/* fs/options.c: the parsers of the daemon's option values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "fs/options.h"

static void test_sizes_accept_binary_suffixes(void **state)
{
        uint64_t v;
        (void)state;
        assert_int_equal(sfs_parse_size("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(sfs_parse_size("4096", &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(sfs_parse_size("256K", &v), 0);
        assert_int_equal(v, 256 * 1024);
        assert_int_equal(sfs_parse_size("64m", &v), 0);
        assert_int_equal(v, 64ULL << 20);
        assert_int_equal(sfs_parse_size("1G", &v), 0);
        assert_int_equal(v, 1ULL << 30);
        assert_int_equal(sfs_parse_size("18446744073709551615", &v), 0);
        assert_int_equal(v, UINT64_MAX);
}

static void test_sizes_refuse_everything_else(void **state)
{
        static const char *bad[] = { "", "-1", "+1", " 1", "1 ", "1KB", "1KiB", "1T", "K",
                                     "0x10", "1.5M", "1,000", "1K1" };
        uint64_t v = 7;
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfs_parse_size(bad[i], &v), -EINVAL);
        assert_int_equal(sfs_parse_size("18446744073709551616", &v), -ERANGE);
        assert_int_equal(sfs_parse_size("17179869184G", &v), -ERANGE);
        assert_int_equal(sfs_parse_size(NULL, &v), -EINVAL);
        assert_int_equal(v, 7); /* untouched on refusal */
}

static void test_counts_are_bounded_and_positive(void **state)
{
        uint64_t v;
        (void)state;
        assert_int_equal(sfs_parse_count("16", 100, &v), 0);
        assert_int_equal(v, 16);
        assert_int_equal(sfs_parse_count("100", 100, &v), 0);
        assert_int_equal(sfs_parse_count("101", 100, &v), -ERANGE);
        assert_int_equal(sfs_parse_count("0", 100, &v), -ERANGE);
        assert_int_equal(sfs_parse_count("1K", 10000, &v), -EINVAL);
        assert_int_equal(sfs_parse_count("-3", 100, &v), -EINVAL);
}

static void test_durations_take_s_m_h(void **state)
{
        uint64_t v;
        (void)state;
        assert_int_equal(sfs_parse_duration("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(sfs_parse_duration("90", &v), 0);
        assert_int_equal(v, 90000);
        assert_int_equal(sfs_parse_duration("90s", &v), 0);
        assert_int_equal(v, 90000);
        assert_int_equal(sfs_parse_duration("15m", &v), 0);
        assert_int_equal(v, 15 * 60000);
        assert_int_equal(sfs_parse_duration("2h", &v), 0);
        assert_int_equal(v, 2 * 3600000);
        assert_int_equal(sfs_parse_duration("1d", &v), -EINVAL);
        assert_int_equal(sfs_parse_duration("1ms", &v), -EINVAL);
        assert_int_equal(sfs_parse_duration("", &v), -EINVAL);
        assert_int_equal(sfs_parse_duration("99999999999999999h", &v), -ERANGE);
}

static void test_uid_lists_are_strict(void **state)
{
        struct sfs_uidset set;
        static const char *bad[] = { "", ",", "1,", ",1", "1,,2", "a", "1 2", "-1", "0x1" };
        (void)state;
        assert_int_equal(sfs_parse_uidset("0,1000,65534", &set), 0);
        assert_false(set.any);
        assert_int_equal(set.n, 3);
        assert_true(sfs_uidset_contains(&set, 1000));
        assert_false(sfs_uidset_contains(&set, 1001));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfs_parse_uidset(bad[i], &set), -EINVAL);
        /* (uid_t)-1 is the kernel's "no uid": never a member. */
        assert_int_equal(sfs_parse_uidset("4294967295", &set), -ERANGE);
        assert_int_equal(sfs_parse_uidset("4294967294", &set), 0);
}

static void test_uid_lists_have_a_bound(void **state)
{
        char buf[SFS_UIDSET_MAX * 4 + 8];
        struct sfs_uidset set;
        size_t n = 0;
        (void)state;
        for (int i = 0; i <= SFS_UIDSET_MAX; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, i ? ",%d" : "%d", i);
        assert_int_equal(sfs_parse_uidset(buf, &set), -E2BIG);
        buf[n - 3] = '\0'; /* drop the last ",64": exactly the maximum */
        assert_int_equal(sfs_parse_uidset(buf, &set), 0);
        assert_int_equal(set.n, SFS_UIDSET_MAX);
}

static void test_an_any_set_admits_everyone(void **state)
{
        struct sfs_uidset any = { .any = true };
        (void)state;
        assert_true(sfs_uidset_contains(&any, 0));
        assert_true(sfs_uidset_contains(&any, 123456));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sizes_accept_binary_suffixes),
                cmocka_unit_test(test_sizes_refuse_everything_else),
                cmocka_unit_test(test_counts_are_bounded_and_positive),
                cmocka_unit_test(test_durations_take_s_m_h),
                cmocka_unit_test(test_uid_lists_are_strict),
                cmocka_unit_test(test_uid_lists_have_a_bound),
                cmocka_unit_test(test_an_any_set_admits_everyone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
