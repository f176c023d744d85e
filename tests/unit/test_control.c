/* SPDX-License-Identifier: MIT */
/* The control channel without a daemon: replies judged (ok, a refusal by errno name, anything
 * else -EPROTO), and the request's way through a .control file below a pinned root, here a
 * plain directory whose regular .control echoes the request back as the reply. Real mounts
 * are in tests/integration/test_scope_client.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "mountcheck/identity.h"
#include "tests/unit/testutil.h"

#define T(f) cmocka_unit_test(f)

static int parse(const char *text, struct snapfs_report *why, json_object **out)
{
        sfc_report_reset(why);
        return sfc_control_parse_reply(text, strlen(text), out, why);
}

static void test_errno_names_map_to_their_numbers(void **state)
{
        (void)state;
        assert_int_equal(sfc_errno_from_name("ENOENT"), ENOENT);
        assert_int_equal(sfc_errno_from_name("EDQUOT"), EDQUOT);
        assert_int_equal(sfc_errno_from_name("EEXIST"), EEXIST);
        assert_int_equal(sfc_errno_from_name("EOPNOTSUPP"), EOPNOTSUPP);
        assert_int_equal(sfc_errno_from_name("enoent"), 0);
        assert_int_equal(sfc_errno_from_name("ENOSUCHERRNO"), 0);
        assert_int_equal(sfc_errno_from_name("E"), 0);
        assert_int_equal(sfc_errno_from_name(""), 0);
        assert_int_equal(sfc_errno_from_name(NULL), 0);
}

static void test_an_ok_reply_is_handed_back_whole(void **state)
{
        struct snapfs_report why;
        json_object *o, *v;
        (void)state;
        assert_int_equal(parse("{\"ok\": true, \"error\": null, \"message\": null, "
                               "\"scopes\": []}\n", &why, &o), 0);
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "scopes", &v));
        assert_int_equal(why.n_reasons, 0);
        json_object_put(o);
}

static void test_a_refusal_is_its_errno_with_the_daemons_message(void **state)
{
        struct snapfs_report why;
        json_object *o;
        (void)state;
        assert_int_equal(parse("{\"ok\": false, \"error\": \"ENOENT\", "
                               "\"message\": \"no scope named b\"}", &why, &o), -ENOENT);
        assert_int_equal(why.error, -ENOENT);
        assert_int_equal(why.n_reasons, 1);
        assert_string_equal(why.reasons[0].code, "refused");
        assert_string_equal(why.reasons[0].message, "no scope named b");
        assert_non_null(o); /* the refusal's fields too */
        json_object_put(o);
        /* Without a message, the errno's name is the reason. */
        assert_int_equal(parse("{\"ok\": false, \"error\": \"EDQUOT\", \"message\": null}", &why,
                               &o), -EDQUOT);
        assert_string_equal(why.reasons[0].message, "EDQUOT");
        json_object_put(o);
}

static void test_a_daemons_message_never_forges_a_second_reason(void **state)
{
        struct snapfs_report why;
        json_object *o;
        (void)state;
        assert_int_equal(parse("{\"ok\": false, \"error\": \"EINVAL\", "
                               "\"message\": \"bad\\nrefused: forged\"}", &why, &o), -EINVAL);
        assert_int_equal(why.n_reasons, 1);
        assert_null(strchr(why.reasons[0].message, '\n'));
        json_object_put(o);
}

static void test_a_refusal_without_a_known_errno_is_eproto(void **state)
{
        static const char *const bad[] = {
                "{\"ok\": false, \"error\": \"ENOSUCH\", \"message\": \"x\"}",
                "{\"ok\": false, \"error\": null, \"message\": \"x\"}",
                "{\"ok\": false, \"error\": 2, \"message\": \"x\"}",
                "{\"ok\": false}",
        };
        struct snapfs_report why;
        json_object *o = (json_object *)1;
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(parse(bad[i], &why, &o), -EPROTO);
                assert_null(o);
                assert_string_equal(why.reasons[0].code, "reply");
        }
}

static void test_a_reply_that_is_not_one_json_object_is_eproto(void **state)
{
        static const char *const bad[] = {
                "", "not json", "[]", "\"ok\"", "{\"ok\": true} {\"ok\": true}",
                "{\"ok\": true} x", "{\"ok\": \"true\"}", "{\"error\": null}", "{\"ok\": 1}",
                "{\"ok\": true",
        };
        struct snapfs_report why;
        json_object *o;
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(parse(bad[i], &why, &o), -EPROTO);
                assert_null(o);
                assert_int_equal(why.error, -EPROTO);
                assert_string_equal(why.reasons[0].code, "reply");
        }
        /* A NUL inside the reply is not JSON text either. */
        assert_int_equal(sfc_control_parse_reply("{\"ok\": true}\0x", 14, &o, &why), -EPROTO);
        assert_null(o);
        /* The same object alone, with the newline a writer ends it with, is a reply. */
        assert_int_equal(parse("{\"ok\": true}\n", &why, &o), 0);
        json_object_put(o);
}

/* A plain directory standing in for the judged root of a main mount. */
struct fake_root {
        struct tu_dir d;
        struct sfc_mnt m;
};

static void fake_root(struct fake_root *f)
{
        f->m = (struct sfc_mnt)SFC_MNT_INIT;
        assert_int_equal(tu_dir_make(&f->d), 0);
        f->m.fd = open(f->d.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->m.fd >= 0);
        assert_int_equal(mc_fd_mount_id(f->m.fd, &f->m.mount_id, &f->m.unique), 0);
}

static void fake_root_done(struct fake_root *f)
{
        sfc_mnt_close(&f->m);
        tu_dir_remove(&f->d);
}

static int send_text(struct fake_root *f, const char *req, char **reply,
                     struct snapfs_report *why)
{
        size_t len;

        sfc_report_reset(why);
        return sfc_mnt_control_text(&f->m, req, strlen(req), reply, &len, why);
}

static void test_the_request_goes_to_control_below_the_root_and_the_reply_is_read_from_0(
        void **state)
{
        static const char req[] = "{\"ok\": true, \"op\": \"scope-list\"}";
        struct snapfs_report why;
        struct fake_root f;
        json_object *o, *op, *request;
        char *reply, p[PATH_MAX];
        int fd;
        (void)state;
        fake_root(&f);
        fd = tu_create(&f.d, ".control", "", 0);
        assert_true(fd >= 0);
        close(fd);
        /* A regular file keeps what was written: the "reply" is the request itself. */
        assert_int_equal(send_text(&f, req, &reply, &why), 0);
        assert_string_equal(reply, req);
        free(reply);
        /* The same through the JSON layer (a shorter, plain serialization: start empty). */
        assert_int_equal(unlink(tu_path(&f.d, ".control", p)), 0);
        fd = tu_create(&f.d, ".control", "", 0);
        assert_true(fd >= 0);
        close(fd);
        request = json_tokener_parse(req);
        assert_int_equal(sfc_mnt_control(&f.m, request, &o, &why), 0);
        json_object_put(request);
        assert_true(json_object_object_get_ex(o, "op", &op));
        assert_string_equal(json_object_get_string(op), "scope-list");
        json_object_put(o);
        fake_root_done(&f);
}

static void test_no_control_file_is_eopnotsupp(void **state)
{
        struct snapfs_report why;
        struct fake_root f;
        char *reply = (char *)1;
        (void)state;
        fake_root(&f);
        assert_int_equal(send_text(&f, "{}", &reply, &why), -EOPNOTSUPP);
        assert_null(reply);
        assert_string_equal(why.reasons[0].code, "control");
        fake_root_done(&f);
}

static void test_a_control_symlink_is_refused_never_followed(void **state)
{
        struct snapfs_report why;
        struct fake_root f;
        char p[PATH_MAX], *reply;
        int fd;
        (void)state;
        fake_root(&f);
        fd = tu_create(&f.d, "target", "", 0);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(symlink("target", tu_path(&f.d, ".control", p)), 0);
        assert_int_equal(send_text(&f, "{\"ok\": true}", &reply, &why), -ELOOP);
        assert_string_equal(why.reasons[0].code, "control");
        /* Nothing reached the file the symlink names. */
        struct stat st;
        assert_int_equal(stat(tu_path(&f.d, "target", p), &st), 0);
        assert_int_equal(st.st_size, 0);
        fake_root_done(&f);
}

static void test_a_control_fifo_or_directory_is_refused_without_blocking(void **state)
{
        struct snapfs_report why;
        struct fake_root f;
        char p[PATH_MAX], *reply;
        (void)state;
        fake_root(&f);
        assert_int_equal(mkfifo(tu_path(&f.d, ".control", p), 0600), 0);
        assert_int_equal(send_text(&f, "{\"ok\": true}", &reply, &why), -EPROTO);
        assert_string_equal(why.reasons[0].code, "control");
        assert_int_equal(unlink(p), 0);
        assert_int_equal(mkdir(p, 0700), 0);
        assert_int_equal(send_text(&f, "{\"ok\": true}", &reply, &why), -EISDIR);
        assert_string_equal(why.reasons[0].code, "control");
        assert_int_equal(rmdir(p), 0);
        fake_root_done(&f);
}

static void test_a_request_past_64k_or_empty_is_refused_before_the_open(void **state)
{
        struct snapfs_report why;
        struct fake_root f;
        char *big, *reply;
        size_t len;
        (void)state;
        fake_root(&f); /* no .control: reaching the open would be EOPNOTSUPP */
        big = malloc(SFC_CONTROL_REQUEST_MAX + 2);
        assert_non_null(big);
        memset(big, ' ', SFC_CONTROL_REQUEST_MAX + 1);
        big[SFC_CONTROL_REQUEST_MAX + 1] = '\0';
        assert_int_equal(send_text(&f, big, &reply, &why), -E2BIG);
        big[SFC_CONTROL_REQUEST_MAX] = '\0'; /* exactly the limit goes out */
        assert_int_equal(send_text(&f, big, &reply, &why), -EOPNOTSUPP);
        free(big);
        sfc_report_reset(&why);
        assert_int_equal(sfc_mnt_control_text(&f.m, "", 0, &reply, &len, &why), -EINVAL);
        fake_root_done(&f);
}

static void test_a_reply_past_the_bound_is_eproto_not_an_allocation_without_end(void **state)
{
        struct snapfs_report why;
        struct fake_root f;
        char *reply = NULL;
        int fd;
        (void)state;
        fake_root(&f);
        fd = tu_create(&f.d, ".control", "", 0);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, SFC_CONTROL_REPLY_MAX + 1), 0);
        assert_int_equal(send_text(&f, "{\"ok\": true}", &reply, &why), -EPROTO);
        assert_null(reply);
        assert_string_equal(why.reasons[0].code, "reply");
        /* At the bound exactly, the reply is read (and is then not JSON: a NUL inside). */
        assert_int_equal(ftruncate(fd, SFC_CONTROL_REPLY_MAX), 0);
        assert_int_equal(send_text(&f, "{\"ok\": true}", &reply, &why), 0);
        free(reply);
        close(fd);
        fake_root_done(&f);
}

static void test_control_refuses_bad_arguments_before_any_mount_work(void **state)
{
        struct snapfs_report why;
        char *reply = (char *)1;
        (void)state;
        assert_int_equal(snapfs_control("/nonexistent", NULL, NULL, &reply, &why), -EINVAL);
        assert_null(reply);
        assert_string_equal(why.reasons[0].code, "invalid-argument");
        assert_int_equal(snapfs_control("/nonexistent", "{}", NULL, NULL, &why), -EINVAL);
        /* A mount that is not snapfs: the check refuses before .control is looked at. */
        assert_int_equal(snapfs_control("/", "{}", NULL, &reply, &why), -EMEDIUMTYPE);
        assert_null(reply);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_errno_names_map_to_their_numbers),
                T(test_an_ok_reply_is_handed_back_whole),
                T(test_a_refusal_is_its_errno_with_the_daemons_message),
                T(test_a_daemons_message_never_forges_a_second_reason),
                T(test_a_refusal_without_a_known_errno_is_eproto),
                T(test_a_reply_that_is_not_one_json_object_is_eproto),
                T(test_the_request_goes_to_control_below_the_root_and_the_reply_is_read_from_0),
                T(test_no_control_file_is_eopnotsupp),
                T(test_a_control_symlink_is_refused_never_followed),
                T(test_a_control_fifo_or_directory_is_refused_without_blocking),
                T(test_a_request_past_64k_or_empty_is_refused_before_the_open),
                T(test_a_reply_past_the_bound_is_eproto_not_an_allocation_without_end),
                T(test_control_refuses_bad_arguments_before_any_mount_work),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
