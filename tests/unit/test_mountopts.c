/* SPDX-License-Identifier: MIT */
/* cli/mountopts.c: mount(8)'s -o options turned into snapfs mount options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "mountopts.h"

static const struct option longopts[] = {
        { "max-bytes", required_argument, NULL, 1 },
        { "audit-log", required_argument, NULL, 2 },
        { "publishers", required_argument, NULL, 3 },
        { "allow-other", no_argument, NULL, 4 },
        { NULL, 0, NULL, 0 },
};

/* Expands argv (NULL-terminated) and compares with want (NULL-terminated). */
static void expect(char **argv, const char *const *want)
{
        char **out = NULL;
        int argc = 0, n = 0;

        while (argv[argc])
                argc++;
        assert_int_equal(cli_mountopts_expand(argc, argv, longopts, &n, &out), 0);
        for (int i = 0; want[i]; i++) {
                assert_true(i < n);
                assert_string_equal(out[i], want[i]);
        }
        for (int i = 0; want[i]; i++)
                n--;
        assert_int_equal(n, 0);
        cli_mountopts_free(out);
}

static void test_mount_fuse3_words_become_long_options(void **state)
{
        char *argv[] = { "mount", "-o", "rw,allow_other,max_bytes=64M,dev,suid", "/mnt", NULL };
        const char *want[] = { "mount", "--allow-other", "--max-bytes=64M", "/mnt", NULL };
        (void)state;
        expect(argv, want);
}

static void test_both_spellings_and_attached_o(void **state)
{
        char *argv[] = { "mount", "-omax-bytes=1M", "-o", "audit_log=/var/log/a", "/m", NULL };
        const char *want[] = { "mount", "--max-bytes=1M", "--audit-log=/var/log/a", "/m", NULL };
        (void)state;
        expect(argv, want);
}

static void test_ro_means_read_only_and_generic_flags_are_dropped(void **state)
{
        char *argv[] = { "mount", "-o", "ro,exec,noexec,nodev,nosuid,noatime,defaults,_netdev,"
                         "x-systemd.requires=a.service,comment=x", "/m", NULL };
        const char *want[] = { "mount", "--read-only", "/m", NULL };
        (void)state;
        expect(argv, want);
}

static void test_a_uid_list_keeps_its_commas(void **state)
{
        char *argv[] = { "mount", "-o", "publishers=0,1000,1001,allow_other,2", "/m", NULL };
        const char *want[] = { "mount", "--publishers=0,1000,1001", "--allow-other", "--2",
                               "/m", NULL };
        (void)state;
        expect(argv, want);
}

static void test_an_option_value_or_operand_is_never_read_as_o(void **state)
{
        char *argv[] = { "mount", "--audit-log", "-o", "-f", "/m", "-o", "x", NULL };
        const char *want[] = { "mount", "--audit-log", "-o", "-f", "/m", "-o", "x", NULL };
        (void)state;
        expect(argv, want);
}

static void test_empty_words_are_refused(void **state)
{
        static char *cases[][4] = {
                { "mount", "-o", "", NULL },
                { "mount", "-o", "a,,b", NULL },
                { "mount", "-o", "a,", NULL },
                { "mount", "-o", "=1", NULL },
                { "mount", "-o", NULL, NULL },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char **out = NULL;
                int argc = 0, n = 0;
                while (cases[i][argc])
                        argc++;
                assert_int_equal(cli_mountopts_expand(argc, cases[i], longopts, &n, &out),
                                 -EINVAL);
                assert_null(out);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mount_fuse3_words_become_long_options),
                cmocka_unit_test(test_both_spellings_and_attached_o),
                cmocka_unit_test(test_ro_means_read_only_and_generic_flags_are_dropped),
                cmocka_unit_test(test_a_uid_list_keeps_its_commas),
                cmocka_unit_test(test_an_option_value_or_operand_is_never_read_as_o),
                cmocka_unit_test(test_empty_words_are_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
