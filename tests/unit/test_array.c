/* SPDX-License-Identifier: MIT */
/* common/array.h and common/hex.h: growing by doubling, the lower bound, hex. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/array.h"
#include "common/hex.h"

static void test_an_array_grows_by_doubling_from_its_first_capacity(void **state)
{
        int *v = NULL;
        size_t cap = 0;

        (void)state;
        assert_int_equal(ARRAY_GROW(v, cap, 1, 8), 0);
        assert_non_null(v);
        assert_int_equal(cap, 8);
        /* Room already there: nothing moves. */
        int *before = v;
        assert_int_equal(ARRAY_GROW(v, cap, 8, 8), 0);
        assert_ptr_equal(v, before);
        assert_int_equal(cap, 8);
        v[7] = 7;
        assert_int_equal(ARRAY_GROW(v, cap, 9, 8), 0);
        assert_int_equal(cap, 16);
        assert_int_equal(v[7], 7);
        assert_int_equal(ARRAY_GROW(v, cap, 100, 8), 0);
        assert_int_equal(cap, 128);
        free(v);
}

static void test_a_size_past_the_address_space_is_enomem_and_leaves_the_array(void **state)
{
        char *v = NULL;
        size_t cap = 0;

        (void)state;
        assert_int_equal(ARRAY_GROW(v, cap, 4, 4), 0);
        v[3] = 'x';
        assert_int_equal(ARRAY_GROW(v, cap, SIZE_MAX, 4), -ENOMEM);
        assert_int_equal(cap, 4);
        assert_int_equal(v[3], 'x');
        /* The same array still grows within reason. */
        assert_int_equal(ARRAY_GROW(v, cap, 5, 4), 0);
        assert_int_equal(cap, 8);
        free(v);
}

static int int_cmp(const void *key, const void *element)
{
        int k = *(const int *)key, e = *(const int *)element;

        return (k > e) - (k < e);
}

/* The lower bound goes in front of the key's equals, the upper bound past them. */
static void test_lower_bound_goes_before_equals_and_upper_bound_past_them(void **state)
{
        const int v[] = { 1, 3, 3, 5, 9 };
        const int keys[] = { 0, 1, 2, 3, 4, 5, 9, 10 };
        const size_t lower[] = { 0, 0, 1, 1, 3, 3, 4, 5 };
        const size_t upper[] = { 0, 1, 1, 3, 3, 4, 5, 5 };

        (void)state;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                assert_int_equal(lower_bound(&keys[i], v, 5, sizeof(int), int_cmp), lower[i]);
                assert_int_equal(upper_bound(&keys[i], v, 5, sizeof(int), int_cmp), upper[i]);
        }
        assert_int_equal(lower_bound(&keys[0], v, 0, sizeof(int), int_cmp), 0);
        assert_int_equal(upper_bound(&keys[0], v, 0, sizeof(int), int_cmp), 0);
}

static void test_hex_is_lowercase_two_digits_a_byte_and_terminated(void **state)
{
        const unsigned char b[] = { 0x00, 0x0f, 0xa5, 0xff };
        char out[2 * sizeof(b) + 1];

        (void)state;
        memset(out, 'z', sizeof(out));
        assert_ptr_equal(hex_encode(b, sizeof(b), out), out);
        assert_string_equal(out, "000fa5ff");
        assert_string_equal(hex_encode(b, 0, out), "");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_an_array_grows_by_doubling_from_its_first_capacity),
                cmocka_unit_test(test_a_size_past_the_address_space_is_enomem_and_leaves_the_array),
                cmocka_unit_test(test_lower_bound_goes_before_equals_and_upper_bound_past_them),
                cmocka_unit_test(test_hex_is_lowercase_two_digits_a_byte_and_terminated),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
