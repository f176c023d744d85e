/* SPDX-License-Identifier: MIT */
/* snapshot/digest.c: SHA-256 of a buffer and the digest's hex form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/digest.h"

static void assert_hex(const struct snap_digest *d, const char *want)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        snap_digest_to_hex(d, hex);
        assert_string_equal(hex, want);
}

static void test_sha256_of_empty_string(void **state)
{
        (void)state;
        struct snap_digest d;
        assert_int_equal(snap_sha256("", 0, &d), 0);
        assert_hex(&d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_sha256_of_abc(void **state)
{
        (void)state;
        struct snap_digest d;
        assert_int_equal(snap_sha256("abc", 3, &d), 0);
        assert_hex(&d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_sha256_of_one_mib_of_zeros(void **state)
{
        (void)state;
        size_t n = 1 << 20;
        uint8_t *buf = calloc(1, n);
        struct snap_digest d;
        assert_non_null(buf);
        assert_int_equal(snap_sha256(buf, n, &d), 0);
        assert_hex(&d, "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58");
        free(buf);
}

static void test_streaming_in_odd_chunks_equals_one_shot(void **state)
{
        (void)state;
        size_t n = 300000;
        uint8_t *buf = malloc(n);
        struct snap_digest one, streamed, again;
        struct snap_hasher *h;

        assert_non_null(buf);
        for (size_t i = 0; i < n; i++)
                buf[i] = (uint8_t)(i * 7 + (i >> 9));
        assert_int_equal(snap_sha256(buf, n, &one), 0);
        assert_int_equal(snap_hasher_new(&h), 0);
        for (size_t off = 0, step = 1; off < n; off += step, step = step * 3 + 1) {
                size_t len = off + step > n ? n - off : step;
                assert_int_equal(snap_hasher_update(h, buf + off, len), 0);
        }
        assert_int_equal(snap_hasher_final(h, &streamed), 0);
        assert_memory_equal(one.bytes, streamed.bytes, SNAP_DIGEST_LEN);

        /* A reset hasher starts over: reuse gives the same digest again. */
        assert_int_equal(snap_hasher_reset(h), 0);
        assert_int_equal(snap_hasher_update(h, buf, n), 0);
        assert_int_equal(snap_hasher_final(h, &again), 0);
        assert_memory_equal(one.bytes, again.bytes, SNAP_DIGEST_LEN);
        snap_hasher_free(h);
        free(buf);
}

static void test_hex_round_trip(void **state)
{
        (void)state;
        struct snap_digest d, back;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        for (int i = 0; i < SNAP_DIGEST_LEN; i++)
                d.bytes[i] = (uint8_t)(i * 37 + 5);
        snap_digest_to_hex(&d, hex);
        assert_int_equal(strlen(hex), SNAP_DIGEST_HEX_LEN);
        assert_int_equal(snap_digest_from_hex(hex, strlen(hex), &back), 0);
        assert_memory_equal(d.bytes, back.bytes, SNAP_DIGEST_LEN);
        assert_true(snap_is_digest_name(hex));
}

static void test_hex_decode_refuses_everything_but_64_lowercase_hex(void **state)
{
        (void)state;
        const char *good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        struct snap_digest d;
        char buf[80];

        assert_int_equal(snap_digest_from_hex(good, 64, &d), 0);
        assert_int_equal(snap_digest_from_hex(good, 63, &d), -EINVAL);
        assert_int_equal(snap_digest_from_hex(good, 0, &d), -EINVAL);
        assert_int_equal(snap_digest_from_hex(NULL, 64, &d), -EINVAL);

        snprintf(buf, sizeof(buf), "%s0", good);
        assert_int_equal(snap_digest_from_hex(buf, 65, &d), -EINVAL);
        assert_false(snap_is_digest_name(buf));

        const char bad_chars[] = { 'A', 'F', 'g', ' ', '\0', '\n', '-', '+', 'x', (char)0xe9 };
        for (size_t i = 0; i < sizeof(bad_chars); i++) {
                for (size_t pos = 0; pos < 64; pos += 21) {
                        memcpy(buf, good, 65);
                        buf[pos] = bad_chars[i];
                        assert_int_equal(snap_digest_from_hex(buf, 64, &d), -EINVAL);
                }
        }
        /* Names that differ from a digest only in case are not that digest. */
        memcpy(buf, good, 65);
        for (size_t i = 0; i < 64; i++)
                if (buf[i] >= 'a')
                        buf[i] = (char)(buf[i] - 32);
        assert_false(snap_is_digest_name(buf));
        assert_true(snap_is_digest_name(good));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sha256_of_empty_string),
                cmocka_unit_test(test_sha256_of_abc),
                cmocka_unit_test(test_sha256_of_one_mib_of_zeros),
                cmocka_unit_test(test_streaming_in_odd_chunks_equals_one_shot),
                cmocka_unit_test(test_hex_round_trip),
                cmocka_unit_test(test_hex_decode_refuses_everything_but_64_lowercase_hex),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
