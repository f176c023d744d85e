/* SPDX-License-Identifier: MIT */
/* common/json.h: the strict parse at its bound, and typed fields that name what they refuse.
 * (The parser's RFC 8259 cases are test_oci-json.c's, through the OCI wrapper.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/json.h"

static json_object *parse(const char *text)
{
        json_object *o = NULL;

        assert_int_equal(json_parse_strict(text, strlen(text), 4096, &o), 0);
        return o;
}

static void test_the_bound_is_the_callers_and_a_key_twice_is_einval(void **state)
{
        const char *ok = "{\"a\":1}", *twice = "{\"a\":1,\"a\":2}";
        json_object *o = NULL;

        (void)state;
        assert_int_equal(json_parse_strict(ok, strlen(ok), strlen(ok), &o), 0);
        json_object_put(o);
        o = NULL;
        assert_int_equal(json_parse_strict(ok, strlen(ok), strlen(ok) - 1, &o), -EFBIG);
        assert_null(o);
        assert_int_equal(json_parse_strict(twice, strlen(twice), 4096, &o), -EINVAL);
        assert_null(o);
        assert_int_equal(json_parse_strict("", 0, 4096, &o), -EINVAL);
        assert_int_equal(json_parse_strict(NULL, 2, 4096, &o), -EINVAL);
}

static void test_a_string_field_is_taken_and_a_nul_inside_is_refused_by_name(void **state)
{
        _cleanup_json_ json_object *o = parse("{\"name\":\"x\",\"bad\":\"a\\u0000b\",\"n\":1}");
        const char *s = NULL;
        char why[64] = "";

        (void)state;
        assert_int_equal(json_field_str(o, "name", &s, why, sizeof(why)), 1);
        assert_string_equal(s, "x");
        assert_int_equal(json_field_str(o, "absent", &s, why, sizeof(why)), 0);
        assert_string_equal(s, "x"); /* untouched */
        assert_int_equal(json_field_str(o, "bad", &s, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"bad\" holds a NUL byte");
        assert_int_equal(json_field_str(o, "n", &s, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"n\" is not a string");
}

static void test_integers_are_range_checked_and_null_is_absent(void **state)
{
        _cleanup_json_ json_object *o =
                parse("{\"a\":5,\"neg\":-1,\"big\":18446744073709551615,\"s\":\"5\",\"z\":null}");
        uint64_t u = 0;
        int64_t i = 0;
        char why[64] = "";

        (void)state;
        assert_int_equal(json_field_int(o, "a", 0, 5, &i, why, sizeof(why)), 1);
        assert_int_equal(i, 5);
        assert_int_equal(json_field_int(o, "a", 0, 4, &i, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"a\" is out of range");
        assert_int_equal(json_field_int(o, "s", 0, 9, &i, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"s\" is not an integer");
        assert_int_equal(json_field_int(o, "z", 0, 9, &i, why, sizeof(why)), 0);
        assert_int_equal(json_field_uint(o, "big", UINT64_MAX, &u, why, sizeof(why)), 1);
        assert_true(u == UINT64_MAX);
        assert_int_equal(json_field_uint(o, "big", UINT64_MAX - 1, &u, why, sizeof(why)),
                         -EINVAL);
        assert_string_equal(why, "\"big\" is out of range");
        assert_int_equal(json_field_uint(o, "neg", UINT64_MAX, &u, NULL, 0), -EINVAL);
        assert_int_equal(json_field_uint(o, "a", 5, &u, NULL, 0), 1);
        assert_true(u == 5);
}

static void test_a_boolean_field_is_true_or_false_and_nothing_else(void **state)
{
        _cleanup_json_ json_object *o = parse("{\"t\":true,\"f\":false,\"one\":1}");
        bool b = false;
        char why[64] = "";

        (void)state;
        assert_int_equal(json_field_bool(o, "t", &b, why, sizeof(why)), 1);
        assert_true(b);
        assert_int_equal(json_field_bool(o, "f", &b, why, sizeof(why)), 1);
        assert_false(b);
        assert_int_equal(json_field_bool(o, "one", &b, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"one\" is not a boolean");
        assert_int_equal(json_field_bool(o, "absent", &b, why, sizeof(why)), 0);
}

static void test_an_object_or_list_field_is_of_its_type_and_null_is_absent(void **state)
{
        _cleanup_json_ json_object *o = parse("{\"o\":{},\"a\":[1],\"n\":null,\"s\":\"x\"}");
        json_object *v = NULL;
        char why[64] = "";

        (void)state;
        assert_int_equal(json_field_of(o, "o", json_type_object, &v, why, sizeof(why)), 1);
        assert_true(json_object_is_type(v, json_type_object));
        assert_int_equal(json_field_of(o, "a", json_type_array, &v, why, sizeof(why)), 1);
        assert_int_equal(json_object_array_length(v), 1);
        assert_int_equal(json_field_of(o, "a", json_type_object, &v, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"a\" is not an object");
        assert_int_equal(json_field_of(o, "s", json_type_array, &v, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "\"s\" is not a list");
        assert_int_equal(json_field_of(o, "n", json_type_array, &v, why, sizeof(why)), 0);
        assert_int_equal(json_field_of(o, "absent", json_type_array, &v, why, sizeof(why)), 0);
}

static void test_a_member_added_is_there_and_a_value_not_made_is_enomem(void **state)
{
        _cleanup_json_ json_object *o = json_object_new_object();

        (void)state;
        assert_non_null(o);
        assert_int_equal(json_add(o, "k", json_object_new_int(7)), 0);
        assert_int_equal(json_add_null(o, "n"), 0);
        assert_int_equal(json_add(o, "missing", NULL), -ENOMEM);
        assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                            "{\"k\":7,\"n\":null}");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_the_bound_is_the_callers_and_a_key_twice_is_einval),
                cmocka_unit_test(test_a_string_field_is_taken_and_a_nul_inside_is_refused_by_name),
                cmocka_unit_test(test_integers_are_range_checked_and_null_is_absent),
                cmocka_unit_test(test_a_boolean_field_is_true_or_false_and_nothing_else),
                cmocka_unit_test(test_an_object_or_list_field_is_of_its_type_and_null_is_absent),
                cmocka_unit_test(test_a_member_added_is_there_and_a_value_not_made_is_enomem),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
