/* SPDX-License-Identifier: MIT */
/* snapshot/name.c: the staging NAME grammar, each accepted form beside the near miss; the
 * entry name grammar on tests/vectors/names.json, the cases the clients' tests run too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The entry as bytes: "entry" (UTF-8 text) or "entry_hex" (bytes that are no text). */
static char *vector_entry(json_object *c, size_t *len)
{
        json_object *v;
        char *out;

        if (json_object_object_get_ex(c, "entry", &v)) {
                *len = (size_t)json_object_get_string_len(v);
                out = malloc(*len + 1);
                assert_non_null(out);
                memcpy(out, json_object_get_string(v), *len + 1);
                return out;
        }
        assert_true(json_object_object_get_ex(c, "entry_hex", &v));
        *len = strlen(json_object_get_string(v)) / 2;
        out = calloc(1, *len + 1);
        assert_non_null(out);
        for (size_t i = 0; i < *len; i++) {
                unsigned byte;
                assert_int_equal(sscanf(json_object_get_string(v) + 2 * i, "%2x", &byte), 1);
                out[i] = (char)byte;
        }
        return out;
}

static void test_entry_names_are_judged_as_every_vector_says(void **state)
{
        json_object *cases = json_object_from_file(NAMES_VECTORS), *c, *valid;
        size_t refused = 0, accepted = 0;

        (void)state;
        assert_non_null(cases);
        for (size_t i = 0; i < json_object_array_length(cases); i++) {
                size_t len;
                char *entry;

                c = json_object_array_get_idx(cases, i);
                assert_true(json_object_object_get_ex(c, "valid", &valid));
                entry = vector_entry(c, &len);
                if (strlen(entry) != len) {
                        /* A NUL inside: no C string can carry it; the clients that can
                         * must refuse it. */
                        assert_false(json_object_get_boolean(valid));
                } else if (json_object_get_boolean(valid)) {
                        assert_true(snap_entry_name_valid(entry));
                        accepted++;
                } else {
                        if (snap_entry_name_valid(entry))
                                fail_msg("entry name accepted: \"%s\"", entry);
                        refused++;
                }
                free(entry);
        }
        assert_true(accepted >= 5 && refused >= 10);
        assert_false(snap_entry_name_valid(NULL));
        json_object_put(cases);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_name_is_1_to_64_of_letters_digits_dot_underscore_dash),
                cmocka_unit_test(test_a_name_never_starts_with_a_dot_nor_holds_a_slash_space_or_byte_past_ascii),
                cmocka_unit_test(test_entry_names_are_judged_as_every_vector_says),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
