/* SPDX-License-Identifier: MIT */
/* common/utf8.h: text that is not UTF-8 made valid for JSON, its raw bytes kept in hex. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

static void test_utf8_text_is_left_alone(void **state)
{
        char *fixed = NULL, *hex = NULL;
        (void)state;

        assert_int_equal(utf8_fix("caf\xc3\xa9 \xf0\x9f\x93\x81 /tmp", &fixed, &hex), 0);
        assert_null(fixed);
        assert_null(hex);
        assert_int_equal(utf8_fix("", &fixed, &hex), 0);
}

static void test_each_invalid_byte_becomes_u_fffd_and_every_byte_is_in_hex(void **state)
{
        char *fixed = NULL, *hex = NULL;
        (void)state;

        assert_int_equal(utf8_fix("/tmp/\xff\xfe", &fixed, &hex), 1);
        assert_string_equal(fixed, "/tmp/\xef\xbf\xbd\xef\xbf\xbd");
        assert_string_equal(hex, "2f746d702ffffe");
        free(fixed);
        free(hex);
}

static void test_overlong_forms_surrogates_and_cut_sequences_are_invalid(void **state)
{
        /* "/" spelled in two bytes, U+D800, and a three-byte sequence cut by the end. */
        static const char *const bad[] = { "\xc0\xaf", "\xed\xa0\x80", "a\xe2\x82" };
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *fixed = NULL, *hex = NULL;
                assert_int_equal(utf8_fix(bad[i], &fixed, &hex), 1);
                assert_null(strchr(fixed, '\x80'));
                assert_non_null(strstr(fixed, "\xef\xbf\xbd"));
                assert_int_equal(strlen(hex), 2 * strlen(bad[i]));
                free(fixed);
                free(hex);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_utf8_text_is_left_alone),
                cmocka_unit_test(test_each_invalid_byte_becomes_u_fffd_and_every_byte_is_in_hex),
                cmocka_unit_test(test_overlong_forms_surrogates_and_cut_sequences_are_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
