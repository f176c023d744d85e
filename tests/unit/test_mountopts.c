/* SPDX-License-Identifier: MIT */
/* cli/mountopts.c: mount(8)'s -o options turned into snapfs mount options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mountopts.h"
#include "fs/config/options.h"

/* Expands argv (NULL-terminated) and compares with want (NULL-terminated). */
static void expect(char **argv, const char *const *want)
{
        char **out = NULL;
        int argc = 0, n = 0;

        while (argv[argc])
                argc++;
        assert_int_equal(cli_mountopts_expand(argc, argv, &n, &out, NULL), 0);
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
        char *argv[] = { "mount", "-o", "ro,exec,noexec,nodev,nosuid,strictatime,defaults,"
                         "_netdev,x-systemd.requires=a.service,comment=x", "/m", NULL };
        const char *want[] = { "mount", "--read-only", "/m", NULL };
        (void)state;
        expect(argv, want);
}

static void test_generic_flags_that_tighten_the_mount_are_kept(void **state)
{
        char *argv[] = { "mount", "-o", "nosymfollow,noatime,nosuid", "/m", NULL };
        const char *want[] = { "mount", "--nosymfollow", "--noatime", "/m", NULL };
        (void)state;
        expect(argv, want);
}

static void test_a_uid_list_keeps_its_commas(void **state)
{
        char *argv[] = { "mount", "-o", "publishers=0,1000,1001,allow_other", "/m", NULL };
        const char *want[] = { "mount", "--publishers=0,1000,1001", "--allow-other", "/m",
                               NULL };
        (void)state;
        expect(argv, want);
}

/* Expands argv and expects the refusal why, naming word. */
static void expect_refused(char **argv, enum cli_mountopts_refusal why, const char *word)
{
        struct cli_mountopts_error err = { 0 };
        char **out = NULL;
        int argc = 0, n = 0;

        while (argv[argc])
                argc++;
        assert_int_equal(cli_mountopts_expand(argc, argv, &n, &out, &err), -EINVAL);
        assert_null(out);
        assert_int_equal(err.why, why);
        assert_string_equal(err.word, word);
}

static void test_help_debug_and_foreground_cannot_run_under_mount_and_are_refused(void **state)
{
        char *help[] = { "mount", "-o", "allow_other,help", "/m", NULL };
        char *debug[] = { "mount", "-o", "debug", "/m", NULL };
        char *fg[] = { "mount", "-oforeground", "/m", NULL };
        char *fg_value[] = { "mount", "-o", "foreground=1", "/m", NULL };
        char *direct[] = { "mount", "--foreground", "--debug", "/m", NULL };
        const char *want[] = { "mount", "--foreground", "--debug", "/m", NULL };
        (void)state;

        expect_refused(help, CLI_MOUNTOPTS_NOT_UNDER_MOUNT, "help");
        expect_refused(debug, CLI_MOUNTOPTS_NOT_UNDER_MOUNT, "debug");
        expect_refused(fg, CLI_MOUNTOPTS_NOT_UNDER_MOUNT, "foreground");
        expect_refused(fg_value, CLI_MOUNTOPTS_NOT_UNDER_MOUNT, "foreground=1");
        /* The allowance: given directly, not through -o, they are options like any other. */
        expect(direct, want);
}

static void test_a_name_must_be_an_option_exactly_never_a_prefix(void **state)
{
        char *prefix[] = { "mount", "-o", "fore", "/m", NULL };
        char *he[] = { "mount", "-o", "max_byte=1M", "/m", NULL };
        char *digits[] = { "mount", "-o", "publishers=0,allow_other,2", "/m", NULL };
        char *exact[] = { "mount", "-o", "max_bytes=1M", "/m", NULL };
        const char *want[] = { "mount", "--max-bytes=1M", "/m", NULL };
        (void)state;

        expect_refused(prefix, CLI_MOUNTOPTS_UNKNOWN, "fore");
        expect_refused(he, CLI_MOUNTOPTS_UNKNOWN, "max_byte=1M");
        expect_refused(digits, CLI_MOUNTOPTS_UNKNOWN, "2");
        expect(exact, want);
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
                assert_int_equal(cli_mountopts_expand(argc, cases[i], &n, &out, NULL),
                                 -EINVAL);
                assert_null(out);
        }
}

/* The -o grammar is the daemon's table: every option it lets through -o is an -o word, with
 * '_' or '-', and the others are refused as the ones mount(8) cannot run. */
static void test_every_option_of_the_table_is_an_o_word_but_the_command_line_ones(void **state)
{
        (void)state;
        for (size_t i = 0; i < SFS_OPT_COUNT; i++) {
                const struct sfs_option *o = &sfs_options[i];
                char word[96], under[96], *argv[] = { "mount", "-o", word, "/m", NULL };
                char want_arg[100];
                const char *want[] = { "mount", want_arg, "/m", NULL };
                const char *value = o->arg == SFS_ARG_FLAG ? NULL : "1";

                snprintf(word, sizeof(word), "%s%s%s", o->name, value ? "=" : "", value ?: "");
                snprintf(want_arg, sizeof(want_arg), "--%s", word);
                if (o->flags & SFS_OPTF_COMMAND_LINE_ONLY) {
                        expect_refused(argv, CLI_MOUNTOPTS_NOT_UNDER_MOUNT, word);
                        continue;
                }
                expect(argv, want);
                snprintf(under, sizeof(under), "%s", word);
                for (char *c = under; *c && *c != '='; c++)
                        if (*c == '-')
                                *c = '_';
                argv[2] = under;
                expect(argv, want);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mount_fuse3_words_become_long_options),
                cmocka_unit_test(test_both_spellings_and_attached_o),
                cmocka_unit_test(test_ro_means_read_only_and_generic_flags_are_dropped),
                cmocka_unit_test(test_generic_flags_that_tighten_the_mount_are_kept),
                cmocka_unit_test(test_a_uid_list_keeps_its_commas),
                cmocka_unit_test(test_help_debug_and_foreground_cannot_run_under_mount_and_are_refused),
                cmocka_unit_test(test_a_name_must_be_an_option_exactly_never_a_prefix),
                cmocka_unit_test(test_an_option_value_or_operand_is_never_read_as_o),
                cmocka_unit_test(test_empty_words_are_refused),
                cmocka_unit_test(test_every_option_of_the_table_is_an_o_word_but_the_command_line_ones),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
