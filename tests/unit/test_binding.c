/* SPDX-License-Identifier: MIT */
/* snapshot/binding.c: the binding's one-line text form and its strict parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "snapshot/binding.h"
#include "common/util.h"

#define HEX "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define GOOD "sha256=" HEX " size=3 dev=0:52 ino=7"

static struct snap_binding make(uint64_t size, unsigned maj, unsigned min, uint64_t ino)
{
        struct snap_binding b = { .size = size, .dev = makedev(maj, min), .ino = ino };
        for (int i = 0; i < SNAP_DIGEST_LEN; i++)
                b.sha256.bytes[i] = (uint8_t)(i * 29 + size);
        return b;
}

static void assert_round_trip(const struct snap_binding *b)
{
        char text[SNAP_BINDING_TEXT_MAX];
        struct snap_binding back;

        assert_int_equal(snap_binding_format(b, text, sizeof(text)), 0);
        assert_int_equal(snap_binding_parse(text, strlen(text), &back), 0);
        assert_true(snap_binding_equal(b, &back));
        assert_int_equal(major(back.dev), major(b->dev));
        assert_int_equal(minor(back.dev), minor(b->dev));
}

static void test_format_gives_the_documented_text(void **state)
{
        (void)state;
        struct snap_binding b;
        char text[SNAP_BINDING_TEXT_MAX];

        assert_int_equal(snap_digest_from_hex(HEX, 64, &b.sha256), 0);
        b.size = 3;
        b.dev = makedev(0, 52);
        b.ino = 7;
        assert_int_equal(snap_binding_format(&b, text, sizeof(text)), 0);
        assert_string_equal(text, GOOD);
}

static void test_round_trip_of_ordinary_values(void **state)
{
        (void)state;
        struct snap_binding a = make(3, 0, 52, 7), b = make(262144, 8, 1, 1000001);
        assert_round_trip(&a);
        assert_round_trip(&b);
}

static void test_round_trip_of_zero_everywhere(void **state)
{
        (void)state;
        struct snap_binding b = make(0, 0, 0, 0);
        assert_round_trip(&b);
}

static void test_round_trip_of_largest_values(void **state)
{
        (void)state;
        struct snap_binding b = make(UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX);
        char text[SNAP_BINDING_TEXT_MAX];

        assert_round_trip(&b);
        /* The longest text form fits SNAP_BINDING_TEXT_MAX. */
        assert_int_equal(snap_binding_format(&b, text, sizeof(text)), 0);
        assert_true(strlen(text) < SNAP_BINDING_TEXT_MAX);
        assert_non_null(strstr(text, " dev=4294967295:4294967295 "));
}

static void test_round_trip_of_large_major_and_minor(void **state)
{
        (void)state;
        /* Majors above 12 bits and minors above 20 bits use the high halves of dev_t. */
        struct snap_binding a = make(1, 4096, 1048576, 2), b = make(1, 0x80000000u, 0xfffff, 3);
        assert_round_trip(&a);
        assert_round_trip(&b);
}

static void test_every_dev_value_round_trips(void **state)
{
        (void)state;
        const uint64_t devs[] = { 0, 1, UINT64_MAX, 0x8000000000000000ull, 0x0123456789abcdefull };
        for (size_t i = 0; i < ARRAY_SIZE(devs); i++) {
                struct snap_binding b = make(5, 0, 0, 9);
                b.dev = devs[i];
                assert_round_trip(&b);
        }
}

static void test_format_into_short_buffer_is_refused_with_enobufs(void **state)
{
        (void)state;
        struct snap_binding b = make(3, 0, 52, 7);
        char text[SNAP_BINDING_TEXT_MAX];
        size_t need;

        assert_int_equal(snap_binding_format(&b, text, sizeof(text)), 0);
        need = strlen(text) + 1;
        assert_int_equal(snap_binding_format(&b, text, need), 0);
        assert_int_equal(snap_binding_format(&b, text, need - 1), -ENOBUFS);
}

static void test_format_into_short_buffer_leaves_no_text_that_parses(void **state)
{
        (void)state;
        struct snap_binding b = make(3, 0, 52, 123), parsed;
        char text[SNAP_BINDING_TEXT_MAX];
        size_t need;

        assert_int_equal(snap_binding_format(&b, text, sizeof(text)), 0);
        need = strlen(text) + 1;
        /* One byte short would have cut "ino=123" to "ino=12": a different, valid binding. */
        assert_int_equal(snap_binding_format(&b, text, need - 1), -ENOBUFS);
        assert_string_equal(text, "");
        assert_int_equal(snap_binding_parse(text, strlen(text), &parsed), -EINVAL);
}

static void test_good_string_is_accepted(void **state)
{
        (void)state;
        struct snap_binding b;
        assert_int_equal(snap_binding_parse(GOOD, strlen(GOOD), &b), 0);
        assert_int_equal(b.size, 3);
        assert_int_equal(major(b.dev), 0);
        assert_int_equal(minor(b.dev), 52);
        assert_int_equal(b.ino, 7);
}

static void test_exact_bounds_are_accepted(void **state)
{
        (void)state;
        const char *s = "sha256=" HEX " size=18446744073709551615 dev=4294967295:4294967295"
                        " ino=18446744073709551615";
        struct snap_binding b;
        assert_int_equal(snap_binding_parse(s, strlen(s), &b), 0);
        assert_true(b.size == UINT64_MAX && b.ino == UINT64_MAX);
        assert_int_equal(major(b.dev), UINT32_MAX);
        assert_int_equal(minor(b.dev), UINT32_MAX);
}

struct bad {
        const char *why;
        const char *s;
        size_t len; /* 0: strlen(s) */
};

static const struct bad malformed[] = {
        { "empty string", "", 0 },
        { "trailing newline", GOOD "\n", 0 },
        { "trailing space", GOOD " ", 0 },
        { "trailing field", GOOD " uid=0", 0 },
        { "trailing NUL counted in len", GOOD "\0", sizeof(GOOD) },
        { "leading space", " " GOOD, 0 },
        { "leading newline", "\n" GOOD, 0 },
        { "embedded NUL in the hex", "sha256=ba7816bf8f01cfea414140de5dae2223\0"
          "00361a396177a9cb410ff61f20015ad size=3 dev=0:52 ino=7", sizeof(GOOD) - 1 },
        { "embedded NUL after size", "sha256=" HEX " size=3\0dev=0:52 ino=7", sizeof(GOOD) - 1 },
        { "uppercase hex",
          "sha256=BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
          " size=3 dev=0:52 ino=7", 0 },
        { "one uppercase hex digit",
          "sha256=bA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
          " size=3 dev=0:52 ino=7", 0 },
        { "63 hex characters",
          "sha256=a7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
          " size=3 dev=0:52 ino=7", 0 },
        { "65 hex characters", "sha256=0" HEX " size=3 dev=0:52 ino=7", 0 },
        { "0x prefix on hex", "sha256=0x" HEX " size=3 dev=0:52 ino=7", 0 },
        { "size overflow by one", "sha256=" HEX " size=18446744073709551616 dev=0:52 ino=7", 0 },
        { "ino overflow by one", "sha256=" HEX " size=3 dev=0:52 ino=18446744073709551616", 0 },
        { "major overflow by one", "sha256=" HEX " size=3 dev=4294967296:52 ino=7", 0 },
        { "minor overflow by one", "sha256=" HEX " size=3 dev=0:4294967296 ino=7", 0 },
        { "size far overflow", "sha256=" HEX " size=99999999999999999999999 dev=0:52 ino=7", 0 },
        { "plus sign", "sha256=" HEX " size=+3 dev=0:52 ino=7", 0 },
        { "minus sign", "sha256=" HEX " size=3 dev=0:52 ino=-7", 0 },
        { "minus zero", "sha256=" HEX " size=-0 dev=0:52 ino=7", 0 },
        { "leading zero in size", "sha256=" HEX " size=03 dev=0:52 ino=7", 0 },
        { "double zero", "sha256=" HEX " size=00 dev=0:52 ino=7", 0 },
        { "leading zero in minor", "sha256=" HEX " size=3 dev=0:052 ino=7", 0 },
        { "leading zero in major", "sha256=" HEX " size=3 dev=00:52 ino=7", 0 },
        { "empty size", "sha256=" HEX " size= dev=0:52 ino=7", 0 },
        { "hex size", "sha256=" HEX " size=0x3 dev=0:52 ino=7", 0 },
        { "missing sha256", "size=3 dev=0:52 ino=7", 0 },
        { "missing size", "sha256=" HEX " dev=0:52 ino=7", 0 },
        { "missing dev", "sha256=" HEX " size=3 ino=7", 0 },
        { "missing ino", "sha256=" HEX " size=3 dev=0:52", 0 },
        { "repeated size", "sha256=" HEX " size=3 size=3 dev=0:52 ino=7", 0 },
        { "repeated ino", GOOD " ino=7", 0 },
        { "reordered fields", "sha256=" HEX " dev=0:52 size=3 ino=7", 0 },
        { "ino first", "ino=7 sha256=" HEX " size=3 dev=0:52", 0 },
        { "unknown field", "sha256=" HEX " size=3 dev=0:52 ino=7 mode=0", 0 },
        { "unknown field in the middle", "sha256=" HEX " size=3 uid=0 dev=0:52 ino=7", 0 },
        { "misspelled key", "sha265=" HEX " size=3 dev=0:52 ino=7", 0 },
        { "uppercase key", "SHA256=" HEX " size=3 dev=0:52 ino=7", 0 },
        { "double space", "sha256=" HEX "  size=3 dev=0:52 ino=7", 0 },
        { "tab separator", "sha256=" HEX "\tsize=3 dev=0:52 ino=7", 0 },
        { "space around =", "sha256=" HEX " size = 3 dev=0:52 ino=7", 0 },
        { "dev without colon", "sha256=" HEX " size=3 dev=52 ino=7", 0 },
        { "dev with two colons", "sha256=" HEX " size=3 dev=0:52:1 ino=7", 0 },
        { "dev with empty minor", "sha256=" HEX " size=3 dev=0: ino=7", 0 },
        { "dev with empty major", "sha256=" HEX " size=3 dev=:52 ino=7", 0 },
        { "dev as comma pair", "sha256=" HEX " size=3 dev=0,52 ino=7", 0 },
        { "key without value", "sha256=" HEX " size=3 dev=0:52 ino", 0 },
        { "decimal point", "sha256=" HEX " size=3.0 dev=0:52 ino=7", 0 },
        { "crlf", GOOD "\r\n", 0 },
};

static void test_each_malformed_string_is_refused_with_einval(void **state)
{
        (void)state;
        struct snap_binding good, b;

        assert_true(ARRAY_SIZE(malformed) >= 30);
        /* The allowance beside the refusals: the well-formed string parses. */
        assert_int_equal(snap_binding_parse(GOOD, strlen(GOOD), &good), 0);

        for (size_t i = 0; i < ARRAY_SIZE(malformed); i++) {
                const struct bad *m = &malformed[i];
                size_t len = m->len ? m->len : strlen(m->s);
                int r;

                b = good;
                r = snap_binding_parse(m->s, len, &b);
                if (r != -EINVAL)
                        fail_msg("\"%s\" gave %d, want -EINVAL", m->why, r);
                /* A refusal leaves *out as it was. */
                assert_true(snap_binding_equal(&b, &good));
        }
}

static void test_good_string_with_length_one_short_is_refused(void **state)
{
        (void)state;
        struct snap_binding b;
        assert_int_equal(snap_binding_parse(GOOD, strlen(GOOD), &b), 0);
        /* "ino=" with its digit cut off. */
        assert_int_equal(snap_binding_parse(GOOD, strlen(GOOD) - 1, &b), -EINVAL);
}

static void test_null_string_is_refused(void **state)
{
        (void)state;
        struct snap_binding b;
        assert_int_equal(snap_binding_parse(NULL, 10, &b), -EINVAL);
        assert_int_equal(snap_binding_parse(GOOD, strlen(GOOD), &b), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_gives_the_documented_text),
                cmocka_unit_test(test_round_trip_of_ordinary_values),
                cmocka_unit_test(test_round_trip_of_zero_everywhere),
                cmocka_unit_test(test_round_trip_of_largest_values),
                cmocka_unit_test(test_round_trip_of_large_major_and_minor),
                cmocka_unit_test(test_every_dev_value_round_trips),
                cmocka_unit_test(test_format_into_short_buffer_is_refused_with_enobufs),
                cmocka_unit_test(test_format_into_short_buffer_leaves_no_text_that_parses),
                cmocka_unit_test(test_good_string_is_accepted),
                cmocka_unit_test(test_exact_bounds_are_accepted),
                cmocka_unit_test(test_each_malformed_string_is_refused_with_einval),
                cmocka_unit_test(test_good_string_with_length_one_short_is_refused),
                cmocka_unit_test(test_null_string_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
