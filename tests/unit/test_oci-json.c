/* SPDX-License-Identifier: MIT */
/* Tests for snapshot/oci-json.c: the strict JSON reader and the descriptor parser and builder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "snapshot/oci-json.h"
#include "snapshot/oci.h"

#define D64 "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define DESC_HEAD "{\"mediaType\":\"a/b\","
#define DESC_TAIL "\"size\":2}"
#define DIGEST "\"digest\":\"sha256:" D64 "\","

/* oci_json_parse on text: its result (1 for a success without an object), the object put. */
static int parse(const char *text, size_t len)
{
        json_object *o = NULL;
        int r = oci_json_parse(text, len, &o);

        if (o)
                json_object_put(o);
        return r == 0 && !o ? 1 : r;
}

/* Parses text as a JSON object and the object as a descriptor: the descriptor's result. */
static int desc_text(const char *text)
{
        struct snap_oci_desc d;
        json_object *o = NULL;
        int r;

        assert_int_equal(oci_json_parse(text, strlen(text), &o), 0);
        r = oci_json_desc_parse(o, &d);
        json_object_put(o);
        if (r == 0) {
                assert_string_equal(d.media_type, "a/b");
                snap_oci_desc_clear(&d);
        }
        return r;
}

static void test_a_null_buffer_is_einval_and_an_object_parses(void **state)
{
        (void)state;
        assert_int_equal(parse(NULL, 2), -EINVAL);
        assert_int_equal(parse("{}", 2), 0);
}

static void test_zero_bytes_are_einval_and_an_object_parses(void **state)
{
        (void)state;
        assert_int_equal(parse("{}", 0), -EINVAL);
        assert_int_equal(parse("{}", 2), 0);
}

static void test_text_that_is_not_json_is_einval_and_json_parses(void **state)
{
        (void)state;
        assert_int_equal(parse("{\"a\":", 5), -EINVAL);
        assert_int_equal(parse("{a:1}", 5), -EINVAL); /* a bare word: not strict JSON */
        assert_int_equal(parse("{\"a\":1}", 7), 0);
}

static void test_a_key_given_twice_anywhere_is_einval_and_each_once_parses(void **state)
{
        static const char *const twice[] = {
                "{\"op\":\"a\",\"op\":\"b\"}",
                "{\"op\":\"a\",\"\\u006fp\":\"b\"}",       /* an escape spells the same key */
                "{\"x\":{\"k\":1,\"k\":1}}",                    /* nested */
                "{\"x\":[1,{},[{\"k\":1,\"k\":2}]]}",          /* in an array */
                "{\"a\":{\"b\":{}},\"c\":{\"d\":1,\"d\":2}}", /* after intact objects */
                "{\"k\":{\"z\":1},\"k\":{\"z\":1}}",            /* the same value twice */
        };
        static const char *const once[] = {
                "{\"op\":\"a\",\"Op\":\"b\"}",               /* keys differ by case */
                "{\"x\":{\"k\":1},\"y\":{\"k\":1}}",          /* the same key in two objects */
                "{\"x\":[{\"k\":1},{\"k\":2}],\"s\":\"{:,}\"}", /* brackets inside a string */
        };

        (void)state;
        for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++)
                assert_int_equal(parse(twice[i], strlen(twice[i])), -EINVAL);
        for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
                assert_int_equal(parse(once[i], strlen(once[i])), 0);
}

static void test_what_strict_mode_lets_through_is_einval_and_rfc8259_parses(void **state)
{
        static const char *bad[] = {
                "{'a':1}",           /* single quotes */
                "{\"a\":'x'}",
                "{\"a\":NaN}",       /* bare words */
                "{\"a\":Infinity}",
                "{\"a\":-Infinity}",
                "{\"a\":True}",
                "{\"a\":\"x\ty\"}",  /* a raw control byte inside a string */
                "{\"a\":\"x\ny\"}",
        };
        static const char good[] =
                "{\"n\":1e5,\"m\":-2.5E-3,\"t\":true,\"f\":false,\"z\":null,"
                "\"s\":\"it's \\\"quoted\\\" \\\\ \\t and \\u00e9\",\"NaN\":[]}";
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse(bad[i], strlen(bad[i])), -EINVAL);
        assert_int_equal(parse(good, strlen(good)), 0);
}

static void test_bytes_after_the_object_even_behind_a_nul_are_einval_and_whitespace_is_not(void **state)
{
        (void)state;
        /* json-c refuses most trailing bytes itself but stops at a NUL: what follows it is
         * ours to refuse. */
        assert_int_equal(parse("{} x", 4), -EINVAL);
        assert_int_equal(parse("{}\0{\"a\":1}", 10), -EINVAL);
        assert_int_equal(parse("{} \0", 4), -EINVAL);
        assert_int_equal(parse("{} \r\n\t", 6), 0);
}

static void test_json_other_than_an_object_is_einval_and_an_object_parses(void **state)
{
        (void)state;
        assert_int_equal(parse("[]", 2), -EINVAL);
        assert_int_equal(parse("\"a/b\"", 5), -EINVAL);
        assert_int_equal(parse("{}", 2), 0);
}

static void test_an_optional_string_not_a_plain_string_is_einval_and_one_is_copied(void **state)
{
        static const char text[] = "{\"num\":1,\"nul\":\"a\\u0000b\",\"long\":\"abcd\",\"s\":\"abc\"}";
        json_object *o = NULL;
        char *s = NULL;

        (void)state;
        assert_int_equal(oci_json_parse(text, strlen(text), &o), 0);
        assert_int_equal(oci_json_opt_string(o, "num", 3, &s), -EINVAL);
        assert_null(s);
        assert_int_equal(oci_json_opt_string(o, "nul", 3, &s), -EINVAL);
        assert_int_equal(oci_json_opt_string(o, "long", 3, &s), -EINVAL);
        assert_int_equal(oci_json_opt_string(o, "absent", 3, &s), 0);
        assert_null(s);
        assert_int_equal(oci_json_opt_string(o, "s", 3, &s), 0);
        assert_string_equal(s, "abc");
        free(s);
        json_object_put(o);
}

static void test_a_descriptor_without_a_string_digest_is_einval_and_one_with_it_parses(void **state)
{
        (void)state;
        assert_int_equal(desc_text(DESC_HEAD DESC_TAIL), -EINVAL);
        assert_int_equal(desc_text(DESC_HEAD "\"digest\":1," DESC_TAIL), -EINVAL);
        assert_int_equal(desc_text(DESC_HEAD DIGEST DESC_TAIL), 0);
}

static void test_a_descriptor_out_of_bounds_is_not_built_and_one_within_is(void **state)
{
        static char long_title[SNAP_OCI_ANNOTATION_MAX + 2];
        struct snap_oci_desc d;
        json_object *o = NULL;

        (void)state;
        memset(long_title, 't', SNAP_OCI_ANNOTATION_MAX + 1);
        snap_oci_desc_empty_config(&d);
        d.media_type = NULL;
        assert_int_equal(oci_json_desc_new(&d, &o), -EINVAL);
        d.media_type = (char *)"no-slash";
        assert_int_equal(oci_json_desc_new(&d, &o), -EINVAL);
        d.media_type = (char *)"a/b";
        d.artifact_type = (char *)"no-slash";
        assert_int_equal(oci_json_desc_new(&d, &o), -EINVAL);
        d.artifact_type = NULL;
        d.title = long_title;
        assert_int_equal(oci_json_desc_new(&d, &o), -EINVAL);
        d.title = NULL;
        d.ref_name = long_title;
        assert_int_equal(oci_json_desc_new(&d, &o), -EINVAL);
        d.ref_name = NULL;
        d.size = SNAP_OCI_BLOB_MAX + 1;
        assert_int_equal(oci_json_desc_new(&d, &o), -EINVAL);
        assert_null(o);
        d.size = SNAP_OCI_BLOB_MAX;
        long_title[SNAP_OCI_ANNOTATION_MAX] = '\0';
        d.title = long_title;
        assert_int_equal(oci_json_desc_new(&d, &o), 0);
        assert_non_null(o);
        json_object_put(o);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_null_buffer_is_einval_and_an_object_parses),
                cmocka_unit_test(test_zero_bytes_are_einval_and_an_object_parses),
                cmocka_unit_test(test_text_that_is_not_json_is_einval_and_json_parses),
                cmocka_unit_test(test_what_strict_mode_lets_through_is_einval_and_rfc8259_parses),
                cmocka_unit_test(test_a_key_given_twice_anywhere_is_einval_and_each_once_parses),
                cmocka_unit_test(test_bytes_after_the_object_even_behind_a_nul_are_einval_and_whitespace_is_not),
                cmocka_unit_test(test_json_other_than_an_object_is_einval_and_an_object_parses),
                cmocka_unit_test(test_an_optional_string_not_a_plain_string_is_einval_and_one_is_copied),
                cmocka_unit_test(test_a_descriptor_without_a_string_digest_is_einval_and_one_with_it_parses),
                cmocka_unit_test(test_a_descriptor_out_of_bounds_is_not_built_and_one_within_is),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
