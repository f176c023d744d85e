/* SPDX-License-Identifier: MIT */
/* common/strtable.h: an enum's names, both ways, and what is no name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/strtable.h"

enum colour { RED, GREEN, UNNAMED, BLUE };

static const char *const colours[] = {
        [RED] = "red",
        [GREEN] = "green",
        [BLUE] = "blue",
};

static void test_a_value_has_its_name_and_the_name_its_value(void **state)
{
        (void)state;
        assert_string_equal(STRTABLE_NAME(colours, RED), "red");
        assert_string_equal(STRTABLE_NAME(colours, BLUE), "blue");
        assert_int_equal(STRTABLE_INDEX(colours, "red"), RED);
        assert_int_equal(STRTABLE_INDEX(colours, "blue"), BLUE);
}

static void test_a_value_out_of_the_table_or_unnamed_has_no_name(void **state)
{
        (void)state;
        assert_null(STRTABLE_NAME(colours, UNNAMED));
        assert_null(STRTABLE_NAME(colours, -1));
        assert_null(STRTABLE_NAME(colours, 4));
}

static void test_a_name_not_spelled_exactly_is_einval(void **state)
{
        (void)state;
        assert_int_equal(STRTABLE_INDEX(colours, "Red"), -EINVAL);
        assert_int_equal(STRTABLE_INDEX(colours, "re"), -EINVAL);
        assert_int_equal(STRTABLE_INDEX(colours, ""), -EINVAL);
        assert_int_equal(STRTABLE_INDEX(colours, NULL), -EINVAL);
        /* The table's length bounds the search: a name past n is not found. */
        assert_int_equal(strtable_index(colours, 2, "blue"), -EINVAL);
        assert_int_equal(strtable_index(colours, 2, "green"), GREEN);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_value_has_its_name_and_the_name_its_value),
                cmocka_unit_test(test_a_value_out_of_the_table_or_unnamed_has_no_name),
                cmocka_unit_test(test_a_name_not_spelled_exactly_is_einval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
