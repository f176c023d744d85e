/* SPDX-License-Identifier: MIT */
/* common/values.c: the value grammars. The cases are tests/vectors/values.json, which the
 * Python client's test reads too (tests/integration/test_values.py): both sides give each
 * input the same value, or the same error with the same message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "common/values.h"

static enum value_type type_named(const char *name)
{
        for (int t = 0; t < VALUE_TYPE_COUNT; t++)
                if (strcmp(value_type_name((enum value_type)t), name) == 0)
                        return (enum value_type)t;
        fail_msg("no value type '%s'", name);
        return VALUE_TYPE_COUNT;
}

static int errno_named(const char *name)
{
        if (strcmp(name, "EINVAL") == 0)
                return -EINVAL;
        if (strcmp(name, "ERANGE") == 0)
                return -ERANGE;
        if (strcmp(name, "E2BIG") == 0)
                return -E2BIG;
        fail_msg("no errno '%s'", name);
        return 0;
}

static uint64_t field_u64(json_object *c, const char *key, uint64_t dflt)
{
        json_object *v;
        return json_object_object_get_ex(c, key, &v) ? json_object_get_uint64(v) : dflt;
}

/* The uid list a vector expects against the one parsed. */
static void assert_list(json_object *want, const struct value_uid_list *got, const char *in)
{
        if (json_object_is_type(want, json_type_string)) {
                assert_string_equal(json_object_get_string(want), "any");
                assert_true(got->any);
                return;
        }
        assert_false(got->any);
        if (got->n != json_object_array_length(want))
                fail_msg("'%s': %u uids, want %zu", in, got->n, json_object_array_length(want));
        for (unsigned i = 0; i < got->n; i++)
                assert_int_equal(got->uids[i],
                                 json_object_get_uint64(json_object_array_get_idx(want, i)));
}

static void test_every_vector_gets_its_value_or_its_error_and_message(void **state)
{
        json_object *cases = json_object_from_file(VALUES_VECTORS);
        size_t n;

        (void)state;
        assert_non_null(cases);
        n = json_object_array_length(cases);
        assert_true(n > 50);
        for (size_t i = 0; i < n; i++) {
                json_object *c = json_object_array_get_idx(cases, i), *want, *msg;
                enum value_type t = type_named(json_object_get_string(
                        json_object_object_get(c, "type")));
                const char *in = json_object_get_string(json_object_object_get(c, "input"));
                uint64_t lo = field_u64(c, "min", 0), hi = field_u64(c, "max", UINT64_MAX);
                struct value_uid_list list;
                uint64_t v = 0;
                char text[512];
                int r = t == VALUE_UID_LIST ? value_parse_uid_list(in, &list)
                                            : value_parse(t, in, lo, hi, &v);

                if (json_object_object_get_ex(c, "value", &want)) {
                        if (r != 0)
                                fail_msg("%s '%s': refused (%d)", value_type_name(t), in, r);
                        if (t == VALUE_UID_LIST)
                                assert_list(want, &list, in);
                        else
                                assert_true(v == json_object_get_uint64(want));
                        continue;
                }
                if (r != errno_named(json_object_get_string(json_object_object_get(c, "error"))))
                        fail_msg("%s '%s': got %d", value_type_name(t), in, r);
                assert_true(json_object_object_get_ex(c, "message", &msg));
                value_error(t, in, r, lo, hi, text, sizeof(text));
                assert_string_equal(text, json_object_get_string(msg));
        }
        json_object_put(cases);
}

static void test_a_formatted_value_is_the_shortest_text_and_parses_back(void **state)
{
        static const struct {
                enum value_type t;
                uint64_t v;
                const char *text;
        } cases[] = {
                { VALUE_SIZE, 0, "0" },           { VALUE_SIZE, 1000, "1000" },
                { VALUE_SIZE, 262144, "256K" },   { VALUE_SIZE, 64ULL << 20, "64M" },
                { VALUE_SIZE, 1ULL << 30, "1G" }, { VALUE_SIZE, 3ULL << 29, "1536M" },
                { VALUE_DURATION, 0, "0" },       { VALUE_DURATION, 90000, "90s" },
                { VALUE_DURATION, 600000, "10m" }, { VALUE_DURATION, 7200000, "2h" },
                { VALUE_DURATION, 86400000, "1d" }, { VALUE_DURATION, 1209600000, "2w" },
                { VALUE_DURATION, 90000000, "25h" },
                { VALUE_COUNT, 4096, "4096" },     { VALUE_UID, 1000, "1000" },
        };
        char buf[32];
        uint64_t back;

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                value_format(cases[i].t, cases[i].v, buf, sizeof(buf));
                assert_string_equal(buf, cases[i].text);
                assert_int_equal(value_parse(cases[i].t, buf, 0, UINT64_MAX, &back), 0);
                assert_true(back == cases[i].v);
        }
}

static void test_a_uid_of_a_list_is_read_from_its_bytes_only(void **state)
{
        uint32_t uid = 7;

        (void)state;
        assert_int_equal(value_parse_uid_n("1000,2000", 4, &uid), 0);
        assert_int_equal(uid, 1000);
        assert_int_equal(value_parse_uid_n("1000,2000", 5, &uid), -EINVAL);
        assert_int_equal(value_parse_uid_n("0", 0, &uid), -EINVAL);
        assert_int_equal(value_parse_uid_n(NULL, 3, &uid), -EINVAL);
        assert_int_equal(value_parse_uid_n("100", 3, NULL), -EINVAL);
        assert_int_equal(uid, 1000);
}

static void test_a_list_type_or_a_missing_argument_is_einval(void **state)
{
        struct value_uid_list list;
        uint64_t v;

        (void)state;
        assert_int_equal(value_parse(VALUE_UID_LIST, "0", 0, UINT64_MAX, &v), -EINVAL);
        assert_int_equal(value_parse(VALUE_SIZE, "1K", 0, UINT64_MAX, &v), 0);
        assert_int_equal(value_parse(VALUE_SIZE, NULL, 0, UINT64_MAX, &v), -EINVAL);
        assert_int_equal(value_parse_uid_list(NULL, &list), -EINVAL);
        assert_int_equal(value_parse_uid(NULL, &(uint32_t){ 0 }), -EINVAL);
        assert_null(value_type_name(VALUE_TYPE_COUNT));
}

static void test_a_uid_list_admits_its_uids_and_any_admits_everyone(void **state)
{
        struct value_uid_list list, any;

        (void)state;
        assert_int_equal(value_parse_uid_list("0,1000", &list), 0);
        assert_true(value_uid_list_has(&list, 1000));
        assert_true(value_uid_list_has(&list, 0));
        assert_false(value_uid_list_has(&list, 1001));
        assert_int_equal(value_parse_uid_list("any", &any), 0);
        assert_true(value_uid_list_has(&any, 0));
        assert_true(value_uid_list_has(&any, 123456));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_vector_gets_its_value_or_its_error_and_message),
                cmocka_unit_test(test_a_formatted_value_is_the_shortest_text_and_parses_back),
                cmocka_unit_test(test_a_uid_of_a_list_is_read_from_its_bytes_only),
                cmocka_unit_test(test_a_list_type_or_a_missing_argument_is_einval),
                cmocka_unit_test(test_a_uid_list_admits_its_uids_and_any_admits_everyone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
