/* SPDX-License-Identifier: MIT */
/* cli/clientopts.c's option tables: the rows of --help, the list snapfs help --options
 * prints, and the getopt table cli_parse builds from the same declaration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clientopts.h"

enum { OPT_ALL = CLI_OWN_OPTION, OPT_SORT, OPT_MAX_A, OPT_MAX_B };

static const struct cli_option options[] = {
        CLI_HEADING("Options:"),
        CLI_OPTION_MOUNT("MNT", CLI_HELP_MOUNT),
        { "all", 0, CLI_ARG_NONE, NULL, NULL, "every one", OPT_ALL },
        { "sort", 0, CLI_ARG_CHOICE, "KEY", "name size", "name or size;\nthe order", OPT_SORT },
        { "max-a", 0, CLI_ARG_VALUE, "N", NULL, NULL, OPT_MAX_A },
        { "max-b", 0, CLI_ARG_VALUE, "SIZE", NULL, "both limits", OPT_MAX_B },
        CLI_HEADING("Output:"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

static char *print(void (*fn)(FILE *f, const void *arg), const void *arg)
{
        char *text = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&text, &n);

        assert_non_null(f);
        fn(f, arg);
        assert_int_equal(fclose(f), 0);
        return text;
}

static void help(FILE *f, const void *arg)
{
        cli_print_help(f, arg);
}

static void list(FILE *f, const void *arg)
{
        cli_print_option_list(f, arg);
}

static void test_help_rows_align_at_the_column_and_a_long_label_has_a_line_of_its_own(void **state)
{
        const struct cli_help h = { .head = "Usage: x\n\n", .options = options,
                                    .tail = "\nExit status: 0.\n" };
        char *text = print(help, &h);

        (void)state;
        assert_string_equal(text,
                            "Usage: x\n"
                            "\n"
                            "Options:\n"
                            "  --mount MNT   the snapfs mount (default: $SNAPFS_MOUNT, else "
                            "/run/snapfs)\n"
                            "  --all         every one\n"
                            "  --sort KEY    name or size;\n"
                            "                the order\n"
                            "  --max-a N, --max-b SIZE\n"
                            "                both limits\n"
                            "Output:\n"
                            "  -h, --help    show this help\n"
                            "\n"
                            "Exit status: 0.\n");
        free(text);
}

static void test_a_wider_column_takes_a_longer_label_on_its_line(void **state)
{
        const struct cli_help h = { .head = "", .options = options, .column = 28 };
        char *text = print(help, &h);

        (void)state;
        assert_non_null(strstr(text, "\n  --max-a N, --max-b SIZE   both limits\n"));
        assert_non_null(strstr(text, "\n  --sort KEY                name or size;\n"
                                     "                            the order\n"));
        free(text);
}

static void test_the_list_names_each_option_with_its_kind_and_words(void **state)
{
        char *text = print(list, options);

        (void)state;
        assert_string_equal(text, "--mount dir\n"
                                  "--all flag\n"
                                  "--sort choice name size\n"
                                  "--max-a value\n"
                                  "--max-b value\n"
                                  "--help flag\n");
        free(text);
}

struct taken {
        int all, sort;
        const char *key;
};

static int take(void *arg, int val, const char *value, bool json)
{
        struct taken *t = arg;

        (void)json;
        if (val == OPT_ALL)
                t->all++;
        if (val == OPT_SORT) {
                t->sort++;
                t->key = value;
        }
        return -1;
}

static int parse(struct taken *t, int argc, char **argv, struct cli_common *co)
{
        return cli_parse(&(struct cli_spec){ .cmd = "x", .max_operands = -1, .what = "FILE",
                                             .options = options,
                                             .option = take, .arg = t },
                         argc, argv, co);
}

static void test_parse_takes_the_declared_options_and_refuses_the_others(void **state)
{
        char *ok[] = { "x", "--all", "--sort", "size", "--mount", "/m", "f", NULL };
        char *json[] = { "x", "--json", NULL };
        char *owner[] = { "x", "--owner", "0", NULL };
        char *flag[] = { "x", "--all=1", NULL };
        struct cli_common co;
        struct taken t = { 0 };

        (void)state;
        assert_int_equal(parse(&t, 7, ok, &co), -1);
        assert_int_equal(t.all, 1);
        assert_int_equal(t.sort, 1);
        assert_string_equal(t.key, "size");
        assert_string_equal(co.mount_arg, "/m");
        assert_string_equal(ok[optind], "f");
        /* Common options the table does not declare are no options of this command. */
        assert_int_equal(parse(&t, 2, json, &co), 2);
        assert_false(co.json);
        assert_int_equal(parse(&t, 3, owner, &co), 2);
        /* A flag takes no value. */
        assert_int_equal(parse(&t, 2, flag, &co), 2);
        assert_int_equal(t.all, 1);
}

struct stored {
        bool all;
        const char *key;
        int calls;
};

static int count_call(void *arg, int val, const char *value, bool json)
{
        (void)val, (void)value, (void)json;
        ((struct stored *)arg)->calls++;
        return -1;
}

static const struct cli_option stored_options[] = {
        { "all", 0, CLI_ARG_NONE, NULL, NULL, "a flag", OPT_ALL, CLI_STORE(struct stored, all) },
        { "sort", 0, CLI_ARG_VALUE, "KEY", NULL, "a value", OPT_SORT,
          CLI_STORE(struct stored, key) },
        { "max-a", 0, CLI_ARG_VALUE, "N", NULL, "taken by the command", OPT_MAX_A },
        CLI_OPTION_END,
};

static void test_a_stored_option_is_kept_and_never_reaches_the_command(void **state)
{
        char *argv[] = { "x", "--sort", "name", "--all", "--sort", "size", NULL };
        char *own[] = { "x", "--max-a", "1", NULL };
        struct stored st = { 0 };
        struct cli_common co;
        const struct cli_spec spec = { .cmd = "x", .options = stored_options,
                                       .option = count_call, .arg = &st };

        (void)state;
        assert_int_equal(cli_parse(&spec, 6, argv, &co), -1);
        assert_true(st.all);
        /* The last one given wins. */
        assert_string_equal(st.key, "size");
        assert_int_equal(st.calls, 0);
        /* An option the table does not store still reaches the command. */
        assert_int_equal(cli_parse(&spec, 3, own, &co), -1);
        assert_int_equal(st.calls, 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(
                        test_help_rows_align_at_the_column_and_a_long_label_has_a_line_of_its_own),
                cmocka_unit_test(test_a_wider_column_takes_a_longer_label_on_its_line),
                cmocka_unit_test(test_the_list_names_each_option_with_its_kind_and_words),
                cmocka_unit_test(test_parse_takes_the_declared_options_and_refuses_the_others),
                cmocka_unit_test(test_a_stored_option_is_kept_and_never_reaches_the_command),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
