/* SPDX-License-Identifier: MIT */
/* mountcheck/verdict.c: the stable names of finding codes and backends, parsing a backend
 * name back, one-line escaping, and a verdict that fills up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "mountcheck/verdict.h"

static void test_every_code_has_a_distinct_name_and_none_past_the_end(void **state)
{
        (void)state;
        for (unsigned c = 0; c < MC_CODE_COUNT; c++) {
                const char *name = mc_code_name((enum mc_code)c);
                assert_non_null(name);
                for (unsigned d = 0; d < c; d++)
                        assert_string_not_equal(name, mc_code_name((enum mc_code)d));
        }
        /* Scripts match on these: the names the docs list, exactly. */
        assert_string_equal(mc_code_name(MC_STACKED), "stacked");
        assert_string_equal(mc_code_name(MC_USER_NAMESPACE), "user-namespace");
        assert_string_equal(mc_code_name(MC_SCOPE_WRITABLE), "scope-writable");
        assert_null(mc_code_name(MC_CODE_COUNT));
}

static void test_backend_names_parse_back_and_nothing_else_does(void **state)
{
        static const char *const bad[] = { "", "Auto", "statmount ", "libmount", "mount" };
        enum mc_backend b;
        (void)state;
        for (unsigned i = MC_BACKEND_AUTO; i <= MC_BACKEND_MOUNTINFO; i++) {
                const char *name = mc_backend_name((enum mc_backend)i);
                assert_non_null(name);
                assert_int_equal(mc_backend_from_name(name, &b), 0);
                assert_int_equal(b, i);
        }
        assert_null(mc_backend_name((enum mc_backend)(MC_BACKEND_MOUNTINFO + 1)));
        b = MC_BACKEND_STATMOUNT;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(mc_backend_from_name(bad[i], &b), -EINVAL);
        assert_int_equal(mc_backend_from_name(NULL, &b), -EINVAL);
        assert_int_equal(mc_backend_from_name("auto", NULL), -EINVAL);
        assert_int_equal(b, MC_BACKEND_STATMOUNT);
}

static void test_escape_keeps_one_line_and_never_splits_an_escape(void **state)
{
        char out[16];
        (void)state;
        assert_string_equal(mc_escape("/a\nb\\c", out, sizeof(out)), "/a\\012b\\134c");
        /* No room for all of "\012": stop before it rather than cut it. */
        assert_string_equal(mc_escape("abcdefghijklm\n", out, sizeof(out)), "abcdefghijklm");
        assert_string_equal(mc_escape(NULL, out, sizeof(out)), "");
        out[0] = 'x';
        assert_ptr_equal(mc_escape("a", out, 0), out);
        assert_int_equal(out[0], 'x');
}

static void test_a_full_verdict_counts_what_it_cannot_store(void **state)
{
        struct mc_verdict v;
        (void)state;
        mc_verdict_init(&v);
        assert_false(v.compliant);
        v.compliant = true;
        for (int i = 0; i < MC_FINDINGS_MAX + 3; i++)
                mc_verdict_add(&v, MC_SUBMOUNT, "submount %d\nforged: line", i);
        assert_false(v.compliant);
        assert_int_equal(v.n_findings, MC_FINDINGS_MAX);
        assert_int_equal(v.n_dropped, 3);
        assert_true(mc_verdict_has(&v, MC_SUBMOUNT));
        assert_false(mc_verdict_has(&v, MC_STACKED));
        assert_null(strchr(v.findings[0].message, '\n'));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_code_has_a_distinct_name_and_none_past_the_end),
                cmocka_unit_test(test_backend_names_parse_back_and_nothing_else_does),
                cmocka_unit_test(test_escape_keeps_one_line_and_never_splits_an_escape),
                cmocka_unit_test(test_a_full_verdict_counts_what_it_cannot_store),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
