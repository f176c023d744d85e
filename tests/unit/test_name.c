/* SPDX-License-Identifier: MIT */
/* snapshot/name.c: the staging NAME grammar, each accepted form beside the near miss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "snapshot/name.h"

static void test_a_name_is_1_to_64_of_letters_digits_dot_underscore_dash(void **state)
{
        char longest[SNAP_NAME_MAX + 1], too_long[SNAP_NAME_MAX + 2];

        (void)state;
        memset(longest, 'a', SNAP_NAME_MAX);
        longest[SNAP_NAME_MAX] = '\0';
        memset(too_long, 'a', SNAP_NAME_MAX + 1);
        too_long[SNAP_NAME_MAX + 1] = '\0';
        assert_true(snap_name_valid("cfg-1.json_v2"));
        assert_true(snap_name_valid("a"));
        assert_true(snap_name_valid(longest));
        assert_false(snap_name_valid(too_long));
        assert_false(snap_name_valid(""));
        assert_false(snap_name_valid(NULL));
}

static void test_a_name_never_starts_with_a_dot_nor_holds_a_slash_space_or_byte_past_ascii(
        void **state)
{
        (void)state;
        assert_true(snap_name_valid("a.b"));
        assert_false(snap_name_valid(".hidden"));
        assert_false(snap_name_valid("."));
        assert_false(snap_name_valid(".."));
        assert_false(snap_name_valid("a/b"));
        assert_false(snap_name_valid("a b"));
        assert_false(snap_name_valid("caf\xc3\xa9"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_name_is_1_to_64_of_letters_digits_dot_underscore_dash),
                cmocka_unit_test(test_a_name_never_starts_with_a_dot_nor_holds_a_slash_space_or_byte_past_ascii),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
