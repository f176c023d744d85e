/* SPDX-License-Identifier: MIT */
/* Scopes from the client's side without a daemon: the scope-create request a spec becomes,
 * the daemon's scope and grant objects read back (and every malformed one refused), and the
 * arguments each call refuses before any mount work. Real mounts are in
 * tests/integration/test_scope_client.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "client/client-internal.h"

#define T(f) cmocka_unit_test(f)

#define HEX "84b9e5b4126e0e1136bc9e3f11e837ec593fc29b8e4934b424f6da483c8187e4"

static const char good_scope[] =
        "{\"name\": \"sandbox-a\", \"view\": \"/run/snapfs-a\", \"dev\": \"0:57\", "
        "\"uids\": [1000, 1001], \"gid\": 100, \"publish\": true, \"until_pid\": 4242, "
        "\"limits\": {\"max_snapshots\": 16, \"max_bytes\": 1048576, \"max_staging\": null}, "
        "\"usage\": {\"snapshots\": 2, \"bytes\": 30, \"staging\": 1, \"staging_bytes\": 5}, "
        "\"grants\": 3}";

static int scope_of(const char *text, struct snapfs_scope *s)
{
        json_object *o = json_tokener_parse(text);
        int r;

        assert_non_null(o);
        r = sfc_scope_from_json(o, s);
        json_object_put(o);
        return r;
}

static int grant_of(const char *text, struct snapfs_grant *g)
{
        json_object *o = json_tokener_parse(text);
        int r;

        assert_non_null(o);
        r = sfc_grant_from_json(o, g);
        json_object_put(o);
        return r;
}

static void test_a_scope_reads_back_every_field(void **state)
{
        struct snapfs_scope s;
        (void)state;
        assert_int_equal(scope_of(good_scope, &s), 0);
        assert_string_equal(s.name, "sandbox-a");
        assert_string_equal(s.view, "/run/snapfs-a");
        assert_int_equal(major(s.dev), 0);
        assert_int_equal(minor(s.dev), 57);
        assert_int_equal(s.n_uids, 2);
        assert_int_equal(s.uids[0], 1000);
        assert_int_equal(s.uids[1], 1001);
        assert_int_equal(s.flags, SNAPFS_SCOPE_GID | SNAPFS_SCOPE_PUBLISH | SNAPFS_SCOPE_UNTIL_PID);
        assert_int_equal(s.gid, 100);
        assert_int_equal(s.until_pid, 4242);
        assert_int_equal(s.limits.max_snapshots, 16);
        assert_int_equal(s.limits.max_bytes, 1048576);
        assert_int_equal(s.limits.max_staging, 0);
        assert_int_equal(s.limits.max_staging_bytes, 0);
        assert_int_equal(s.usage.snapshots, 2);
        assert_int_equal(s.usage.bytes, 30);
        assert_int_equal(s.usage.staging, 1);
        assert_int_equal(s.usage.staging_bytes, 5);
        assert_int_equal(s.n_grants, 3);
        snapfs_scope_free(&s);
        assert_null(s.view);
        snapfs_scope_free(NULL);
}

static void test_a_scope_with_only_its_name_view_and_dev_reads_with_defaults(void **state)
{
        struct snapfs_scope s;
        (void)state;
        assert_int_equal(scope_of("{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", "
                                  "\"gid\": null, \"until_pid\": null, \"uids\": []}", &s), 0);
        assert_int_equal(s.flags, 0);
        assert_int_equal(s.n_uids, 0);
        assert_null(s.uids);
        assert_int_equal(s.n_grants, 0);
        snapfs_scope_free(&s);
}

static void test_a_malformed_scope_is_eproto(void **state)
{
        static const char *const bad[] = {
                "[]",
                "{\"view\": \"/v\", \"dev\": \"0:1\"}",
                "{\"name\": \".hidden\", \"view\": \"/v\", \"dev\": \"0:1\"}",
                "{\"name\": \"a/b\", \"view\": \"/v\", \"dev\": \"0:1\"}",
                "{\"name\": \"b\", \"view\": \"v\", \"dev\": \"0:1\"}",
                "{\"name\": \"b\", \"dev\": \"0:1\"}",
                "{\"name\": \"b\", \"view\": \"/v\"}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1x\"}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"01\"}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \":1\"}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"uids\": [-1]}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"uids\": [4294967295]}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"uids\": [\"0\"]}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"uids\": 0}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"gid\": -1}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"publish\": 1}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"until_pid\": 1e3}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"limits\": []}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", "
                "\"limits\": {\"max_bytes\": -5}}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", "
                "\"usage\": {\"bytes\": \"5\"}}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"grants\": true}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"usage\": []}",
                /* Past what the field holds: a gid is below 2^32 - 1, a pid below 2^31. */
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"gid\": 4294967295}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", "
                "\"gid\": 18446744073709551615}",
                "{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", \"until_pid\": 2147483648}",
                "{\"name\": \"b\", \"view\": \"/v\\u0000x\", \"dev\": \"0:1\"}",
        };
        struct snapfs_scope s;
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(scope_of(bad[i], &s), -EPROTO);
                assert_null(s.view); /* nothing left to free */
                assert_null(s.uids);
        }
        assert_int_equal(sfc_scope_from_json(NULL, &s), -EPROTO);
}

static void test_a_scope_whose_view_is_not_mounted_reads_as_unmounted(void **state)
{
        struct snapfs_scope s;
        (void)state;
        assert_int_equal(scope_of("{\"name\": \"b\", \"view\": \"/v\", \"dev\": null}", &s), 0);
        assert_int_equal(s.flags, SNAPFS_SCOPE_UNMOUNTED);
        assert_int_equal(s.dev, 0);
        snapfs_scope_free(&s);
        assert_int_equal(scope_of("{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:9\"}", &s), 0);
        assert_int_equal(s.flags, 0);
        snapfs_scope_free(&s);
}

static void test_a_limit_past_int64_reads_whole(void **state)
{
        struct snapfs_scope s;
        (void)state;
        /* The largest a field holds reads whole. */
        assert_int_equal(scope_of("{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", "
                                  "\"gid\": 4294967294, \"until_pid\": 2147483647}", &s), 0);
        assert_true(s.gid == 4294967294u && s.until_pid == INT32_MAX);
        snapfs_scope_free(&s);
        assert_int_equal(scope_of("{\"name\": \"b\", \"view\": \"/v\", \"dev\": \"0:1\", "
                                  "\"limits\": {\"max_bytes\": 18446744073709551615}}", &s), 0);
        assert_true(s.limits.max_bytes == UINT64_MAX);
        snapfs_scope_free(&s);
}

static void test_a_grant_reads_back_with_or_without_its_entry(void **state)
{
        struct snapfs_grant g;
        (void)state;
        assert_int_equal(grant_of("{\"sha256\": \"" HEX "\", \"size\": 176, \"ino\": 3, "
                                  "\"entry\": \"mcp\"}", &g), 0);
        assert_int_equal(g.sha256[0], 0x84);
        assert_int_equal(g.sha256[31], 0xe4);
        assert_int_equal(g.size, 176);
        assert_int_equal(g.ino, 3);
        assert_string_equal(g.entry, "mcp");
        assert_int_equal(grant_of("{\"sha256\": \"" HEX "\", \"size\": 0, \"ino\": 9, "
                                  "\"entry\": null}", &g), 0);
        assert_string_equal(g.entry, "");
}

static void test_a_malformed_grant_is_eproto(void **state)
{
        static const char *const bad[] = {
                "{\"size\": 1, \"ino\": 3}",
                "{\"sha256\": \"84B9E5B4126E0E1136BC9E3F11E837EC593FC29B8E4934B424F6DA483C8187E4\", "
                "\"size\": 1, \"ino\": 3}",
                "{\"sha256\": \"" HEX "0\", \"size\": 1, \"ino\": 3}",
                "{\"sha256\": \"" HEX "\", \"ino\": 3}",
                "{\"sha256\": \"" HEX "\", \"size\": 1}",
                "{\"sha256\": \"" HEX "\", \"size\": -1, \"ino\": 3}",
                "{\"sha256\": \"" HEX "\", \"size\": 1, \"ino\": 3, \"entry\": \"../x\"}",
                "{\"sha256\": \"" HEX "\", \"size\": 1, \"ino\": 3, \"entry\": 5}",
                "[]",
        };
        struct snapfs_grant g;
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(grant_of(bad[i], &g), -EPROTO);
}

static const char *request_text(const struct snapfs_scope_spec *spec, json_object **o)
{
        struct snapfs_report why;

        sfc_report_reset(&why);
        assert_int_equal(sfc_scope_create_request(spec, 77, o, &why), 0);
        return json_object_to_json_string_ext(*o, JSON_C_TO_STRING_PLAIN);
}

static void test_a_create_request_carries_what_the_spec_sets_and_nothing_else(void **state)
{
        static const uint32_t uids[] = { 1000, 0 };
        struct snapfs_scope_spec spec = { .name = "sandbox-a", .view = "/run/snapfs-a" };
        json_object *o;
        (void)state;
        assert_string_equal(request_text(&spec, &o),
                            "{\"op\":\"scope-create\",\"name\":\"sandbox-a\","
                            "\"view\":\"\\/run\\/snapfs-a\",\"publish\":false,\"limits\":{}}");
        json_object_put(o);
        spec.uids = uids;
        spec.n_uids = 2;
        spec.flags = SNAPFS_SCOPE_GID | SNAPFS_SCOPE_PUBLISH | SNAPFS_SCOPE_UNTIL_PID;
        spec.gid = 100;
        spec.until_pid = 4242;
        spec.limits.max_snapshots = 16;
        spec.limits.max_staging_bytes = 4096;
        spec.min_bytes = 2048;
        assert_string_equal(request_text(&spec, &o),
                            "{\"op\":\"scope-create\",\"name\":\"sandbox-a\","
                            "\"view\":\"\\/run\\/snapfs-a\",\"publish\":true,"
                            "\"uids\":[1000,0],\"gid\":100,\"until_pid\":4242,\"client_pid\":77,"
                            "\"limits\":{\"max_snapshots\":16,\"max_staging_bytes\":4096,"
                            "\"min_bytes\":2048}}");
        json_object_put(o);
}

static void test_a_spec_that_is_not_one_is_einval(void **state)
{
        static const uint32_t nobody[] = { UINT32_MAX };
        struct snapfs_scope_spec bad[] = {
                { .name = NULL, .view = "/v" },
                { .name = "", .view = "/v" },
                { .name = ".a", .view = "/v" },
                { .name = "a b", .view = "/v" },
                { .name = "a", .view = NULL },
                { .name = "a", .view = "relative/view" },
                { .name = "a", .view = "/v", .n_uids = 1 },
                { .name = "a", .view = "/v", .uids = nobody, .n_uids = 1 },
                { .name = "a", .view = "/v", .flags = SNAPFS_SCOPE_GID, .gid = UINT32_MAX },
                { .name = "a", .view = "/v", .flags = SNAPFS_SCOPE_UNTIL_PID, .until_pid = 0 },
                { .name = "a", .view = "/v", .flags = 1u << 7 },
                /* A field of a later release set (SNAPFS_RESERVED). */
                { .name = "a", .view = "/v", .reserved = { 0, 0, 1 } },
        };
        char long_name[SNAPFS_NAME_MAX + 2];
        struct snapfs_report why;
        json_object *o;
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                sfc_report_reset(&why);
                assert_int_equal(sfc_scope_create_request(&bad[i], 1, &o, &why), -EINVAL);
                assert_null(o);
                assert_string_equal(why.reasons[0].code, "invalid-argument");
        }
        assert_int_equal(sfc_scope_create_request(NULL, 1, &o, &why), -EINVAL);
        /* The longest name is one; one more character is not. */
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        bad[0] = (struct snapfs_scope_spec){ .name = long_name, .view = "/v" };
        assert_int_equal(sfc_scope_create_request(&bad[0], 1, &o, &why), -EINVAL);
        long_name[SNAPFS_NAME_MAX] = '\0';
        assert_int_equal(sfc_scope_create_request(&bad[0], 1, &o, &why), 0);
        json_object_put(o);
}

static void test_calls_refuse_bad_names_digests_and_pairs_before_any_mount_work(void **state)
{
        struct snapfs_report why;
        struct snapfs_scope s, *list;
        struct snapfs_grant g;
        size_t n;
        (void)state;
        /* The mount does not exist: only an argument refusal comes back before the check. */
        assert_int_equal(snapfs_scope_show("/nonexistent", "../a", NULL, &s, NULL, NULL, &why),
                         -EINVAL);
        assert_int_equal(snapfs_scope_remove("/nonexistent", "", NULL, &why), -EINVAL);
        assert_int_equal(snapfs_grant("/nonexistent", "a", "xyz", NULL, NULL, &g, &why), -EINVAL);
        assert_int_equal(snapfs_grant("/nonexistent", "a", NULL, "e", NULL, &g, &why), -EINVAL);
        assert_int_equal(snapfs_grant("/nonexistent", "a", HEX, ".e", NULL, &g, &why), -EINVAL);
        assert_int_equal(snapfs_grant("/nonexistent", ".a", HEX, NULL, NULL, &g, &why), -EINVAL);
        assert_int_equal(snapfs_revoke("/nonexistent", "a", NULL, NULL, NULL, &why), -EINVAL);
        assert_int_equal(snapfs_revoke("/nonexistent", "a", HEX, "e", NULL, &why), -EINVAL);
        assert_int_equal(snapfs_revoke("/nonexistent", "a", "HEX", NULL, NULL, &why), -EINVAL);
        assert_int_equal(snapfs_scope_list("/nonexistent", NULL, NULL, &n, &why), -EINVAL);
        assert_int_equal(snapfs_scope_list("/nonexistent", NULL, &list, NULL, &why), -EINVAL);
        assert_int_equal(snapfs_open_entry("/nonexistent", "../etc", NULL, NULL, &why), -EINVAL);
        assert_int_equal(snapfs_open_entry("/nonexistent", NULL, NULL, NULL, &why), -EINVAL);
        assert_int_equal(snapfs_open_entry("/nonexistent", "a/b", NULL, NULL, &why), -EINVAL);
        assert_string_equal(why.reasons[0].code, "invalid-argument");
        /* Good arguments reach the mount check, which finds no such path. */
        assert_int_equal(snapfs_grant("/nonexistent", "a", HEX, "e", NULL, &g, &why), -ENOENT);
        assert_int_equal(snapfs_open_entry("/nonexistent", "e", NULL, NULL, &why), -ENOENT);
        assert_int_equal(snapfs_scope_remove("/", "a", NULL, &why), -EMEDIUMTYPE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_a_scope_reads_back_every_field),
                T(test_a_scope_with_only_its_name_view_and_dev_reads_with_defaults),
                T(test_a_malformed_scope_is_eproto),
                T(test_a_scope_whose_view_is_not_mounted_reads_as_unmounted),
                T(test_a_limit_past_int64_reads_whole),
                T(test_a_grant_reads_back_with_or_without_its_entry),
                T(test_a_malformed_grant_is_eproto),
                T(test_a_create_request_carries_what_the_spec_sets_and_nothing_else),
                T(test_a_spec_that_is_not_one_is_einval),
                T(test_calls_refuse_bad_names_digests_and_pairs_before_any_mount_work),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
