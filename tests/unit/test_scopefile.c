/* SPDX-License-Identifier: MIT */
/* fs/scopes/scopefile.c: a scope's file to text and back. Files as the daemon wrote them read
 * back and are written again byte for byte; each field out of its range is refused with
 * -EINVAL and its name, beside the same file with that field right, which reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/scopes/scopefile.h"
#include "fs/store/ocistore.h"
#include "snapshot/digest.h"
#include "common/util.h"

#define HEX_A "548603aa84503cabf235c445431f993bc6fd19889df188c9de0f1a463b2b4359"
#define HEX_B "9d0172a3fe6819a970a58d2e3beec252b80df203cfef6fa198888d9d277f1997"
#define NOT_A_NAME "is not a name (1-64 of [A-Za-z0-9._-], not starting with '.')"
#define LIMITS                                                                                     \
        "\"limits\":{\"max_snapshots\":2,\"max_bytes\":4096,\"max_staging\":3,"                    \
        "\"max_staging_bytes\":4096}"

/* Written by the daemon before this file existed (registry.c's own encoder), before scopes
 * had minimums: a scope with users, a group, a grant and an entry... */
static const char written_sandbox[] =
        "{\"version\":1,\"name\":\"sandbox\",\"view\":\"/tmp/snapfs-unit-WIWKZA/sandbox\","
        "\"view_made\":true,\"uids\":[1000,1001],\"gid\":77,\"publish\":true," LIMITS ","
        "\"next_ino\":6,\"grants\":[{\"sha256\":\"" HEX_A "\",\"ino\":4,\"plain\":true,"
        "\"published\":false,\"uid\":0,\"created_sec\":1796184471,\"created_nsec\":157590384},"
        "{\"sha256\":\"" HEX_B "\",\"ino\":5,\"plain\":false,\"published\":false,\"uid\":0,"
        "\"created_sec\":1796184471,\"created_nsec\":157610544}],\"entries\":[{\"name\":\"cfg\","
        "\"sha256\":\"" HEX_B "\"}]}";
/* ...one tied to a process, with nothing granted... */
static const char written_tied[] =
        "{\"until\":{\"pid\":1,\"start\":26,\"boot_id\":\"688245ec-0001-4cfa-ab8e-7186d80d2ed8\"},"
        "\"version\":1,\"name\":\"tied\",\"view\":\"/tmp/snapfs-unit-7pR9YR/tied\","
        "\"view_made\":true,\"uids\":[],\"gid\":null,\"publish\":false," LIMITS ","
        "\"next_ino\":4,\"grants\":[],\"entries\":[]}";
/* ...and one with a snapshot its view published (its staging name kept): the fields in the
 * order that encoder wrote them. */
static const char written_published[] =
        "{\"until\":{\"pid\":7,\"start\":5,\"boot_id\":\"b\"},\"version\":1,\"name\":\"sandbox\","
        "\"view\":\"/srv/views/sandbox\",\"view_made\":false,\"uids\":[1000],\"gid\":null,"
        "\"publish\":true," LIMITS ",\"next_ino\":7,\"grants\":[{\"sha256\":\"" HEX_A "\","
        "\"ino\":4,\"plain\":true,\"published\":false,\"uid\":0,\"created_sec\":1,"
        "\"created_nsec\":2},{\"sha256\":\"" HEX_B "\",\"ino\":6,\"plain\":false,"
        "\"published\":true,\"uid\":1000,\"name\":\"mine\",\"created_sec\":3,"
        "\"created_nsec\":999999999}],\"entries\":[{\"name\":\"cfg\",\"sha256\":\"" HEX_B "\"}]}";

static int decode(const char *name, const char *text, struct sfs_scopefile *f, char *why, size_t n)
{
        return sfs_scopefile_decode(name, text, strlen(text), f, why, n);
}

/* text with its first from replaced by to (from must be there). */
static char *replaced(const char *text, const char *from, const char *to)
{
        const char *at = strstr(text, from);
        char *out = NULL;

        if (!at)
                fail_msg("\"%s\" is not in the file", from);
        assert_true(asprintf(&out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from)) > 0);
        return out;
}

/* A file read back and written again: the same text, with a minimum of 0 when it had none
 * (want: text with its limits so). */
static void written_again(const char *name, const char *text, const char *want)
{
        struct sfs_scopefile f;
        char why[200], *again = NULL;
        size_t len = 0;

        assert_int_equal(decode(name, text, &f, why, sizeof(why)), 0);
        assert_string_equal(why, "");
        assert_int_equal(sfs_scopefile_encode(&f, &again, &len), 0);
        assert_string_equal(again, want);
        assert_int_equal(len, strlen(want));
        free(again);
        sfs_scopefile_free(&f);
}

static void test_files_written_before_read_back_and_are_written_the_same(void **state)
{
        static const char *const files[][2] = { { "sandbox", written_sandbox },
                                                { "tied", written_tied },
                                                { "sandbox", written_published } };
        (void)state;
        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                /* As the daemon writes them since scopes have minimums: byte for byte. */
                _cleanup_free_ char *now = replaced(files[i][1], "\"max_staging_bytes\":4096}",
                                                    "\"max_staging_bytes\":4096,"
                                                    "\"min_bytes\":1024}");
                _cleanup_free_ char *none = replaced(files[i][1], "\"max_staging_bytes\":4096}",
                                                     "\"max_staging_bytes\":4096,"
                                                     "\"min_bytes\":0}");

                written_again(files[i][0], now, now);
                /* Before: the same, with no minimum. */
                written_again(files[i][0], files[i][1], none);
        }
}

static void test_every_field_comes_back_as_written(void **state)
{
        struct sfs_scopefile f;
        struct snap_digest b;

        (void)state;
        assert_int_equal(decode("sandbox", written_published, &f, NULL, 0), 0);
        assert_string_equal(f.name, "sandbox");
        assert_string_equal(f.view, "/srv/views/sandbox");
        assert_false(f.view_made);
        assert_true(f.publish);
        assert_int_equal(f.users.uids.n, 1);
        assert_int_equal(f.users.uids.uids[0], 1000);
        assert_false(f.users.has_gid);
        assert_int_equal(f.limits.max_snapshots, 2);
        assert_int_equal(f.limits.max_bytes, 4096);
        assert_int_equal(f.limits.max_staging, 3);
        assert_int_equal(f.limits.max_staging_bytes, 4096);
        assert_int_equal(f.until_pid, 7);
        assert_int_equal(f.until_start, 5);
        assert_string_equal(f.boot_id, "b");
        assert_int_equal(f.grants.next_ino, 7);
        assert_int_equal(f.grants.n_grants, 2);
        assert_int_equal(f.grants.n_entries, 1);
        assert_int_equal(snap_digest_from_hex(HEX_B, strlen(HEX_B), &b), 0);
        assert_true(snap_digest_equal(&f.grants.grants[1].digest, &b));
        assert_int_equal(f.grants.grants[1].ino, 6);
        assert_false(f.grants.grants[1].plain);
        assert_true(f.grants.grants[1].published);
        assert_int_equal(f.grants.grants[1].uid, 1000);
        assert_string_equal(f.grants.grants[1].name, "mine");
        assert_int_equal(f.grants.grants[1].created.tv_sec, 3);
        assert_int_equal(f.grants.grants[1].created.tv_nsec, 999999999);
        assert_string_equal(f.grants.entries[0].name, "cfg");
        assert_true(snap_digest_equal(&f.grants.entries[0].digest, &b));
        sfs_scopefile_free(&f);
        /* The group, when there is one. */
        assert_int_equal(decode("sandbox", written_sandbox, &f, NULL, 0), 0);
        assert_true(f.users.has_gid);
        assert_int_equal(f.users.gid, 77);
        assert_int_equal(f.until_pid, 0);
        sfs_scopefile_free(&f);
}

/* What a file may leave out (null, or never written by an older daemon): no until-pid, no
 * group, no view numbers (given at the restore), the flags false. */
static void test_the_fields_a_file_may_leave_out_read_as_none(void **state)
{
        static const char *const out[][2] = {
                { "{\"until\":{\"pid\":7,\"start\":5,\"boot_id\":\"b\"},", "{" },
                { "\"view_made\":false,", "" },
                { "\"publish\":true,", "" },
                { "\"next_ino\":7,", "" },
                { "\"ino\":6,", "" },
                { "\"plain\":false,", "" },
                { "\"published\":true,", "" },
                { "\"name\":\"mine\",", "" },
                { "{\"until\":{\"pid\":7,\"start\":5,\"boot_id\":\"b\"},", "{\"until\":null," },
        };
        (void)state;
        for (size_t i = 0; i < ARRAY_SIZE(out); i++) {
                _cleanup_free_ char *text = replaced(written_published, out[i][0], out[i][1]);
                struct sfs_scopefile f;
                char why[200];

                assert_int_equal(decode("sandbox", text, &f, why, sizeof(why)), 0);
                assert_int_equal(f.until_pid, i == 0 || i == 8 ? 0 : 7);
                assert_int_equal(f.grants.next_ino, i == 3 ? 0 : 7);
                assert_int_equal(f.grants.grants[1].ino, i == 4 ? 0 : 6);
                assert_int_equal(f.publish, i != 2);
                assert_int_equal(f.grants.grants[1].published, i != 6);
                assert_string_equal(f.grants.grants[1].name, i == 7 ? "" : "mine");
                sfs_scopefile_free(&f);
        }
}

/* Each field out of its range: -EINVAL and why, naming it. The same file with the field
 * right reads (test_files_written_before_read_back_and_are_written_the_same). */
static void test_a_field_out_of_its_range_is_einval_naming_it(void **state)
{
        static const char *const bad[][3] = {
                { "\"version\":1", "\"version\":2", "\"version\" is out of range" },
                { "\"version\":1", "\"version\":0", "\"version\" is out of range" },
                { "\"version\":1", "\"version\":\"1\"", "\"version\" is not an integer" },
                { "\"version\":1,", "", "\"version\" is missing" },
                { "\"name\":\"sandbox\"", "\"name\":\"other\"", "\"name\" is not the file's" },
                { "\"name\":\"sandbox\"", "\"name\":\".sandbox\"",
                  "\"name\" is not a name (1-64 of [A-Za-z0-9._-], not starting with '.')" },
                { "\"name\":\"sandbox\",", "", "\"name\" is missing" },
                { "\"view\":\"/srv", "\"view\":\"srv",
                  "\"view\" is not an absolute, canonical path" },
                { "\"view\":\"/srv", "\"view\":\"/srv/../srv",
                  "\"view\" is not an absolute, canonical path" },
                { "\"view\":\"/srv", "\"view\":7,\"x\":\"/srv", "\"view\" is not a string" },
                { "\"view\":\"/srv", "\"view\":\"/s\\u0000rv", "\"view\" holds a NUL byte" },
                { "\"view\":\"", "\"viev\":\"", "\"view\" is missing" },
                { "\"view_made\":false", "\"view_made\":0", "\"view_made\" is not a boolean" },
                { "\"publish\":true", "\"publish\":\"yes\"", "\"publish\" is not a boolean" },
                { "\"uids\":[1000]", "\"uids\":1000", "\"uids\" is not a list" },
                { "\"uids\":[1000]", "\"uidz\":[1000]", "\"uids\" is missing" },
                { "\"uids\":[1000]", "\"uids\":[1000,-1]", "uids[1]: not a uid" },
                { "\"uids\":[1000]", "\"uids\":[4294967295]", "uids[0]: not a uid" },
                { "\"uids\":[1000]", "\"uids\":[\"1000\"]", "uids[0]: not a uid" },
                { "\"gid\":null", "\"gid\":4294967295", "\"gid\" is out of range" },
                { "\"gid\":null", "\"gid\":-1", "\"gid\" is out of range" },
                { "\"gid\":null", "\"gid\":\"77\"", "\"gid\" is not an integer" },
                { "\"limits\":{", "\"limits\":[{", "not one JSON object" },
                { "\"limits\"", "\"limitz\"", "\"limits\" is missing" },
                { LIMITS, "\"limits\":[]", "\"limits\" is not an object" },
                { "\"max_snapshots\":2", "\"max_snapshots\":0",
                  "\"max_snapshots\" is out of range" },
                { "\"max_snapshots\":2,", "", "\"max_snapshots\" is missing" },
                { "\"max_bytes\":4096", "\"max_bytes\":-1", "\"max_bytes\" is out of range" },
                { "\"max_bytes\":4096", "\"max_bytes\":9223372036854775808",
                  "\"max_bytes\" is out of range" },
                { "\"max_staging\":3", "\"max_staging\":4294967296",
                  "\"max_staging\" is out of range" },
                { "\"max_staging_bytes\":4096", "\"max_staging_bytes\":true",
                  "\"max_staging_bytes\" is not an integer" },
                { "\"max_staging_bytes\":4096", "\"max_staging_bytes\":4096,\"min_bytes\":-1",
                  "\"min_bytes\" is out of range" },
                { "\"max_staging_bytes\":4096",
                  "\"max_staging_bytes\":4096,\"min_bytes\":9223372036854775808",
                  "\"min_bytes\" is out of range" },
                { "\"max_staging_bytes\":4096", "\"max_staging_bytes\":4096,\"min_bytes\":0", "" },
                { "\"next_ino\":7", "\"next_ino\":-7", "\"next_ino\" is out of range" },
                { "\"next_ino\":7", "\"next_ino\":9223372036854775808",
                  "\"next_ino\" is out of range" },
                { "{\"until\":{", "{\"until\":[{", "not one JSON object" },
                { "{\"until\":{\"pid\":7,\"start\":5,\"boot_id\":\"b\"}", "{\"until\":7",
                  "\"until\" is not an object" },
                { "\"pid\":7", "\"pid\":0", "\"pid\" is out of range" },
                { "\"pid\":7", "\"pid\":2147483648", "\"pid\" is out of range" },
                { "\"pid\":7,", "", "\"pid\" is missing" },
                { "\"start\":5", "\"start\":-5", "\"start\" is out of range" },
                { "\"start\":5,", "", "\"start\" is missing" },
                { "\"boot_id\":\"b\"", "\"boot_id\":3", "\"boot_id\" is not a string" },
                { "\"boot_id\":\"b\"",
                  "\"boot_id\":\"688245ec-0001-4cfa-ab8e-7186d80d2ed8-and-more\"",
                  "\"boot_id\" is too long" },
                { ",\"start\":5,\"boot_id\":\"b\"", ",\"start\":5", "\"boot_id\" is missing" },
                { "\"grants\":[", "\"grants\":{\"x\":[", "not one JSON object" },
                { "\"grants\":[", "\"grantz\":[", "\"grants\" is missing" },
                { "\"entries\":[", "\"entriez\":[", "\"entries\" is missing" },
                { "\"entries\":[{\"name\":\"cfg\",\"sha256\":\"" HEX_B "\"}]", "\"entries\":{}",
                  "\"entries\" is not a list" },
                { "\"grants\":[{", "\"grants\":[[],{", "grants[0]: not an object" },
                { "\"sha256\":\"" HEX_A, "\"sha256\":\"abc",
                  "grants[0]: \"sha256\" is not a digest" },
                { "{\"sha256\":\"" HEX_A "\",", "{", "grants[0]: \"sha256\" is missing" },
                { "\"ino\":4", "\"ino\":\"4\"", "grants[0]: \"ino\" is not an integer" },
                { "\"ino\":6", "\"ino\":0", "grants[1]: \"ino\" is out of range" },
                { "\"uid\":1000", "\"uid\":4294967295", "grants[1]: \"uid\" is out of range" },
                { "\"uid\":0", "\"uid\":-1", "grants[0]: \"uid\" is out of range" },
                { "\"uid\":0,", "", "grants[0]: \"uid\" is missing" },
                { "\"created_sec\":1", "\"created_sec\":-1",
                  "grants[0]: \"created_sec\" is out of range" },
                { "\"created_sec\":1,", "", "grants[0]: \"created_sec\" is missing" },
                { "\"created_nsec\":2", "\"created_nsec\":1000000000",
                  "grants[0]: \"created_nsec\" is out of range" },
                { ",\"created_nsec\":2", "", "grants[0]: \"created_nsec\" is missing" },
                { "\"plain\":true", "\"plain\":1", "grants[0]: \"plain\" is not a boolean" },
                { "\"published\":true", "\"published\":null,\"x\":1", "" },
                { "\"published\":true", "\"published\":\"true\"",
                  "grants[1]: \"published\" is not a boolean" },
                { "\"name\":\"mine\"", "\"name\":\"../mine\"", "grants[1]: \"name\" " NOT_A_NAME },
                { "{\"name\":\"cfg\",", "{", "entries[0]: \"name\" is missing" },
                { "{\"name\":\"cfg\",", "{\"name\":\"c/fg\",", "entries[0]: \"name\" " NOT_A_NAME },
                { "\"name\":\"cfg\",\"sha256\":\"" HEX_B,
                  "\"name\":\"cfg\",\"sha256\":\"" HEX_A "0",
                  "entries[0]: \"sha256\" is not a digest" },
                { ",\"sha256\":\"" HEX_B "\"}]}", "}]}", "entries[0]: \"sha256\" is missing" },
                { "\"entries\":[{", "\"entries\":[7,{", "entries[0]: not an object" },
        };
        (void)state;
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                _cleanup_free_ char *text = replaced(written_published, bad[i][0], bad[i][1]);
                struct sfs_scopefile f;
                char why[200];
                int r = decode("sandbox", text, &f, why, sizeof(why));

                if (!bad[i][2][0]) { /* an allowance among them: null is absent */
                        assert_int_equal(r, 0);
                        sfs_scopefile_free(&f);
                        continue;
                }
                if (r != -EINVAL || strcmp(why, bad[i][2]) != 0)
                        fail_msg("%s -> %s: %d \"%s\", not -EINVAL \"%s\"", bad[i][0], bad[i][1], r,
                                 why, bad[i][2]);
                assert_null(f.view);
                assert_null(f.grants.grants);
        }
}

/* n copies of rec joined by ',' into a list under key, after the rest of a file. */
static char *with_lists(size_t n_grants, size_t n_entries)
{
        static const char grant[] = "{\"sha256\":\"" HEX_A "\",\"uid\":0,\"created_sec\":1,"
                                    "\"created_nsec\":2}";
        static const char entry[] = "{\"name\":\"cfg\",\"sha256\":\"" HEX_A "\"}";
        size_t size = 512 + n_grants * sizeof(grant) + n_entries * sizeof(entry);
        char *text = malloc(size), *p = text;

        assert_non_null(text);
        p += sprintf(p, "{\"version\":1,\"name\":\"s\",\"view\":\"/v\",\"uids\":[]," LIMITS
                        ",\"grants\":[");
        for (size_t i = 0; i < n_grants; i++)
                p += sprintf(p, "%s%s", i ? "," : "", grant);
        p += sprintf(p, "],\"entries\":[");
        for (size_t i = 0; i < n_entries; i++)
                p += sprintf(p, "%s%s", i ? "," : "", entry);
        sprintf(p, "]}");
        return text;
}

/* More grants and entries than a scope holds (SFS_SCOPE_GRANTS_MAX), or more users than a
 * scope names: -EINVAL; exactly as many read. */
static void test_more_grants_or_users_than_a_scope_holds_is_einval(void **state)
{
        const size_t max = SFS_SCOPE_GRANTS_MAX;
        struct {
                size_t grants, entries;
                int r;
                const char *why;
        } cases[] = {
                { max + 1, 0, -EINVAL, "\"grants\" holds more than a scope may" },
                { 0, max + 1, -EINVAL, "\"entries\" holds more than a scope may" },
                { max / 2 + 1, max / 2, -EINVAL,
                  "\"grants\" and \"entries\" hold more than a scope may" },
                { max / 2, max / 2, 0, "" },
        };
        char uids[1024] = "\"uids\":[0", why[200];
        struct sfs_scopefile f;

        (void)state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _cleanup_free_ char *text = with_lists(cases[i].grants, cases[i].entries);

                assert_int_equal(decode("s", text, &f, why, sizeof(why)), cases[i].r);
                assert_string_equal(why, cases[i].why);
                sfs_scopefile_free(&f);
        }
        for (unsigned i = 1; i < VALUE_UID_LIST_MAX; i++)
                snprintf(uids + strlen(uids), sizeof(uids) - strlen(uids), ",%u", i);
        {
                _cleanup_free_ char *text = replaced(written_published, "\"uids\":[1000", uids);

                assert_int_equal(decode("sandbox", text, &f, why, sizeof(why)), 0);
                assert_int_equal(f.users.uids.n, VALUE_UID_LIST_MAX);
                sfs_scopefile_free(&f);
        }
        strcat(uids, ",64");
        {
                _cleanup_free_ char *text = replaced(written_published, "\"uids\":[1000", uids);

                assert_int_equal(decode("sandbox", text, &f, why, sizeof(why)), -EINVAL);
                assert_string_equal(why, "\"uids\" holds more than a scope may");
        }
}

/* Not JSON, a key twice (two files to two readers), past the size of a scope's file: refused
 * by the one strict parser; the same file whole, at that size, reads. */
static void test_what_the_strict_parser_refuses_is_refused(void **state)
{
        const size_t len = strlen(written_tied);
        _cleanup_free_ char *twice = replaced(written_tied, "\"version\":1,",
                                              "\"version\":1,"
                                              "\"version\":1,");
        _cleanup_free_ char *big = malloc(SFS_OCISTORE_SCOPE_MAX + 1);
        struct sfs_scopefile f;
        char why[200];

        (void)state;
        assert_int_equal(sfs_scopefile_decode("tied", written_tied, len - 1, &f, why, sizeof(why)),
                         -EINVAL);
        assert_string_equal(why, "not one JSON object");
        assert_int_equal(decode("tied", twice, &f, why, sizeof(why)), -EINVAL);
        assert_non_null(big);
        memset(big, ' ', SFS_OCISTORE_SCOPE_MAX + 1);
        memcpy(big, written_tied, len);
        assert_int_equal(sfs_scopefile_decode("tied", big, SFS_OCISTORE_SCOPE_MAX + 1, &f, why,
                                              sizeof(why)),
                         -EFBIG);
        assert_string_equal(why, "larger than a scope's file may be");
        assert_int_equal(sfs_scopefile_decode("tied", big, SFS_OCISTORE_SCOPE_MAX, &f, why,
                                              sizeof(why)),
                         0);
        sfs_scopefile_free(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_files_written_before_read_back_and_are_written_the_same),
                cmocka_unit_test(test_every_field_comes_back_as_written),
                cmocka_unit_test(test_the_fields_a_file_may_leave_out_read_as_none),
                cmocka_unit_test(test_a_field_out_of_its_range_is_einval_naming_it),
                cmocka_unit_test(test_more_grants_or_users_than_a_scope_holds_is_einval),
                cmocka_unit_test(test_what_the_strict_parser_refuses_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
