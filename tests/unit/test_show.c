/* SPDX-License-Identifier: MIT */
/* cli/show.c and the key messages of cli/clientopts.c: how the snapfs command shows a
 * snapshot (the one snapshot object, the columns of snapfs ls) and a key it refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cli/clientopts.h"
#include "cli/show.h"

static void test_sizes_below_a_kibibyte_are_bytes_and_above_never_look_smaller(void **state)
{
        static const struct {
                uint64_t size;
                const char *text;
        } cases[] = {
                { 0, "0" },
                { 1023, "1023" },
                { 1024, "1.0K" },
                { 1025, "1.1K" },           /* rounded up, never down */
                { 1536, "1.5K" },
                { 10 * 1024 - 1, "10K" },   /* 9.99K rounds up to ten units: no decimal */
                { 262144, "256K" },
                { 262145, "257K" },         /* over a 256K limit never shows as 256K */
                { 300000, "293K" },
                { 64ULL << 20, "64M" },
                { 1ULL << 30, "1.0G" },
                { 3ULL << 40, "3072G" },    /* G is the largest unit, as in the size grammar */
        };
        char buf[16];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_string_equal(cli_human_size(cases[i].size, buf, sizeof(buf)),
                                    cases[i].text);
}

static void test_an_age_is_in_its_largest_whole_unit_and_a_future_time_is_a_dash(void **state)
{
        static const struct {
                int64_t ago;
                const char *text;
        } cases[] = {
                { 0, "0s" },        { 59, "59s" },           { 60, "1m" },
                { 3599, "59m" },    { 3600, "1h" },          { 86399, "23h" },
                { 86400, "1d" },    { 14 * 86400 - 1, "13d" }, { 14 * 86400, "2w" },
                { -1, "-" },
        };
        const time_t now = 1800000000;
        char buf[16];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_string_equal(cli_age((int64_t)now - cases[i].ago, now, buf, sizeof(buf)),
                                    cases[i].text);
}

static void test_a_publish_time_is_rfc3339_utc_to_the_second(void **state)
{
        char buf[32];

        (void)state;
        assert_string_equal(cli_iso_time(0, buf, sizeof(buf)), "1970-01-01T00:00:00Z");
        assert_string_equal(cli_iso_time(1796130771, buf, sizeof(buf)), "2026-12-01T13:12:51Z");
}

static void test_kinds_have_their_names_and_an_unknown_kind_none(void **state)
{
        (void)state;
        assert_string_equal(cli_kind_name(SNAPFS_KIND_CONTENT), "content");
        assert_string_equal(cli_kind_name(SNAPFS_KIND_SIGNATURE), "signature");
        assert_string_equal(cli_kind_name(SNAPFS_KIND_MANIFEST), "manifest");
        assert_null(cli_kind_name(SNAPFS_KIND_UNKNOWN));
        assert_null(cli_kind_name(3));
}

/* The keys of o, in order, joined by commas. */
static void keys(json_object *o, char *buf, size_t n)
{
        size_t used = 0;

        buf[0] = '\0';
        json_object_object_foreach(o, k, v) {
                (void)v;
                used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", k);
                assert_true(used < n);
        }
}

static struct snapfs_snapshot sample(void)
{
        struct snapfs_snapshot s = {
                .binding = { .size = 3, .dev = makedev(0, 52), .ino = 7 },
                .published_sec = 1796130771,
                .publisher = 1000,
                .kind = SNAPFS_KIND_CONTENT,
        };

        for (size_t i = 0; i < SNAPFS_DIGEST_LEN; i++)
                s.binding.sha256[i] = (uint8_t)i;
        snprintf(s.name, sizeof(s.name), "mcp.json");
        return s;
}

static void test_the_snapshot_object_has_the_eight_fields_in_order(void **state)
{
        struct snapfs_snapshot s = sample();
        json_object *o = cli_snapshot_json(&s), *v;
        char k[256];

        (void)state;
        assert_non_null(o);
        keys(o, k, sizeof(k));
        assert_string_equal(k, "sha256,size,dev,ino,name,published,publisher,binding");
        assert_true(json_object_object_get_ex(o, "sha256", &v));
        assert_string_equal(json_object_get_string(v),
                            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
        assert_true(json_object_object_get_ex(o, "dev", &v));
        assert_string_equal(json_object_get_string(v), "0:52");
        assert_true(json_object_object_get_ex(o, "name", &v));
        assert_string_equal(json_object_get_string(v), "mcp.json");
        assert_true(json_object_object_get_ex(o, "published", &v));
        assert_string_equal(json_object_get_string(v), "2026-12-01T13:12:51Z");
        assert_true(json_object_object_get_ex(o, "publisher", &v));
        assert_int_equal(json_object_get_uint64(v), 1000);
        assert_true(json_object_object_get_ex(o, "binding", &v));
        assert_string_equal(json_object_get_string(v),
                            "sha256=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
                            "1e1f size=3 dev=0:52 ino=7");
        json_object_put(o);
}

static void test_what_is_unknown_is_null_never_left_out(void **state)
{
        struct snapfs_snapshot s = sample();
        json_object *o, *v;
        char k[256];

        (void)state;
        /* No name: null. */
        s.name[0] = '\0';
        o = cli_snapshot_json(&s);
        assert_true(json_object_object_get_ex(o, "name", &v));
        assert_null(v);
        json_object_put(o);
        /* Known only by its binding: the same eight keys, name, published and publisher null. */
        o = cli_binding_json(&s.binding);
        keys(o, k, sizeof(k));
        assert_string_equal(k, "sha256,size,dev,ino,name,published,publisher,binding");
        assert_true(json_object_object_get_ex(o, "published", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "publisher", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "size", &v));
        assert_int_equal(json_object_get_uint64(v), 3);
        json_object_put(o);
}

static void test_a_snapshot_of_a_view_shows_what_was_seen_and_nulls_the_rest(void **state)
{
        struct snapfs_snapshot s = sample();
        json_object *o, *v;
        char k[256];

        (void)state;
        /* Seen in the view and by the daemon: the whole object. */
        o = cli_seen_json(&s, SNAPFS_SEEN_DAEMON | SNAPFS_SEEN_VIEW);
        keys(o, k, sizeof(k));
        assert_string_equal(k, "sha256,size,dev,ino,name,published,publisher,binding");
        assert_true(json_object_object_get_ex(o, "name", &v));
        assert_string_equal(json_object_get_string(v), "mcp.json");
        json_object_put(o);
        /* The daemon not asked: its words null, the binding its record's. */
        o = cli_seen_json(&s, 0);
        keys(o, k, sizeof(k));
        assert_string_equal(k, "sha256,size,dev,ino,name,published,publisher,binding");
        assert_true(json_object_object_get_ex(o, "publisher", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "dev", &v));
        assert_string_equal(json_object_get_string(v), "0:52");
        json_object_put(o);
        /* A view not mounted (no device): no binding to show, the daemon's words kept. */
        s.binding.dev = 0;
        o = cli_seen_json(&s, SNAPFS_SEEN_DAEMON);
        keys(o, k, sizeof(k));
        assert_string_equal(k, "sha256,size,dev,ino,name,published,publisher,binding");
        assert_true(json_object_object_get_ex(o, "dev", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "binding", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "published", &v));
        assert_string_equal(json_object_get_string(v), "2026-12-01T13:12:51Z");
        json_object_put(o);
}

static void test_a_private_key_is_named_with_the_public_file_to_give_instead(void **state)
{
        char buf[512];

        (void)state;
        assert_string_equal(cli_key_error("/k/sign", -EKEYREJECTED, false, buf, sizeof(buf)),
                            "/k/sign is a private key; give its public key instead (snapfs "
                            "keygen wrote it to /k/sign.pub; `openssl pkey -in /k/sign -pubout` "
                            "prints it)");
        /* Its allowance's twin: a file that is no key says which key was expected. */
        assert_string_equal(cli_key_error("/k/x", -EINVAL, false, buf, sizeof(buf)),
                            "/k/x is not an Ed25519 public key in PEM");
        assert_string_equal(cli_key_error("/k/x", -EINVAL, true, buf, sizeof(buf)),
                            "/k/x is not an Ed25519 private key in PEM");
}

static void test_a_key_file_that_cannot_be_read_says_so_in_words(void **state)
{
        char buf[512];

        (void)state;
        assert_string_equal(cli_key_error("/k/none", -ENOENT, false, buf, sizeof(buf)),
                            "cannot read the key file /k/none: no such file");
        assert_string_equal(cli_key_error("/k/link", -ELOOP, false, buf, sizeof(buf)),
                            "cannot read the key file /k/link: it is a symbolic link");
        assert_string_equal(cli_key_error("/k/d", -EISDIR, false, buf, sizeof(buf)),
                            "cannot read the key file /k/d: Is a directory");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_snapshot_of_a_view_shows_what_was_seen_and_nulls_the_rest),
                cmocka_unit_test(test_sizes_below_a_kibibyte_are_bytes_and_above_never_look_smaller),
                cmocka_unit_test(test_an_age_is_in_its_largest_whole_unit_and_a_future_time_is_a_dash),
                cmocka_unit_test(test_a_publish_time_is_rfc3339_utc_to_the_second),
                cmocka_unit_test(test_kinds_have_their_names_and_an_unknown_kind_none),
                cmocka_unit_test(test_the_snapshot_object_has_the_eight_fields_in_order),
                cmocka_unit_test(test_what_is_unknown_is_null_never_left_out),
                cmocka_unit_test(test_a_private_key_is_named_with_the_public_file_to_give_instead),
                cmocka_unit_test(test_a_key_file_that_cannot_be_read_says_so_in_words),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
