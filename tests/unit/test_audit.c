/* SPDX-License-Identifier: MIT */
/* The audit log: which files it accepts, the bounded queue, coalesced floods, valid UTF-8,
 * every expiry written, and a sink that blocks never blocking the caller. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fs/base/audit-internal.h"
#include "fs/tree/tree.h"
#include "tests/unit/testutil.h"

static struct tu_dir dir;
static char logpath[PATH_MAX];

static int setup(void **state)
{
        (void)state;
        if (tu_dir_make(&dir) < 0)
                return -1;
        snprintf(logpath, sizeof(logpath), "%s/audit.log", dir.path);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        tu_dir_remove(&dir);
        return 0;
}

static uint64_t frozen_ms = 1000;
static uint64_t frozen_clock(void)
{
        return frozen_ms;
}

/* The log's lines, parsed; every one must be a JSON object (strict UTF-8 checked too). */
static size_t read_events(const char *path, json_object **ev, size_t max)
{
        FILE *f = fopen(path, "r");
        char *line = NULL;
        size_t cap = 0, n = 0;
        ssize_t len;

        assert_non_null(f);
        while ((len = getline(&line, &cap, f)) > 0) {
                json_tokener *tok = json_tokener_new();
                json_object *o;

                assert_int_equal(line[len - 1], '\n');
                json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
                o = json_tokener_parse_ex(tok, line, (int)len - 1);
                assert_non_null(o);
                assert_int_equal(json_tokener_get_error(tok), json_tokener_success);
                json_tokener_free(tok);
                assert_true(n < max);
                ev[n++] = o;
        }
        free(line);
        fclose(f);
        return n;
}

static void put_events(json_object **ev, size_t n)
{
        for (size_t i = 0; i < n; i++)
                json_object_put(ev[i]);
}

static const char *str_of(json_object *o, const char *key)
{
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int64_t int_of(json_object *o, const char *key)
{
        json_object *v;
        assert_true(json_object_object_get_ex(o, key, &v));
        return json_object_get_int64(v);
}

static struct sfs_audit *open_frozen(size_t queue_max, unsigned burst)
{
        struct sfs_audit *a = NULL;
        struct sfs_audit_limits lim = {
                .queue_max = queue_max,
                .burst = burst,
                .per_sec = 0,
                .interval_ms = 1000,
                .now_ms = frozen_clock,
        };
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        sfs_audit_set_limits(a, &lim);
        return a;
}

static void refuse(struct sfs_audit *a, uid_t uid, const char *op, int err)
{
        sfs_audit_emit(a, &(struct sfs_audit_event){
                                  .event = "refused", .op = op, .uid = uid, .pid = 1,
                                  .name = "x", .err = err });
}

/* ---- which files ---- */

static void test_regular_file_of_this_uid_is_accepted_and_written(void **state)
{
        struct sfs_audit *a = NULL;
        json_object *ev[4];
        struct stat st;
        (void)state;

        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "publish", .op = "rename",
                                                     .uid = 7, .digest = "ab" });
        sfs_audit_close(a);
        assert_int_equal(stat(logpath, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(read_events(logpath, ev, 4), 1);
        assert_string_equal(str_of(ev[0], "event"), "publish");
        assert_int_equal(int_of(ev[0], "uid"), 7);
        put_events(ev, 1);
}

static void test_fifo_is_refused_with_or_without_a_reader(void **state)
{
        struct sfs_audit *a = NULL;
        int rd;
        (void)state;

        assert_int_equal(mkfifo(logpath, 0600), 0);
        /* Nobody reads: the open itself must not wait for a reader. */
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), -EINVAL);
        /* Somebody reads now, but may stop at any time: still refused. */
        rd = open(logpath, O_RDONLY | O_NONBLOCK);
        assert_true(rd >= 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), -EINVAL);
        close(rd);
        assert_null(a);
        unlink(logpath);
        /* The same path as a regular file is accepted. */
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        sfs_audit_close(a);
}

static void test_symlink_and_directory_are_refused(void **state)
{
        struct sfs_audit *a = NULL;
        char target[PATH_MAX];
        (void)state;

        snprintf(target, sizeof(target), "%s/target", dir.path);
        close(open(target, O_WRONLY | O_CREAT, 0600));
        assert_int_equal(symlink(target, logpath), 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), -ELOOP);
        unlink(logpath);
        assert_int_equal(mkdir(logpath, 0700), 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), -EINVAL);
        rmdir(logpath);
        /* The link's target itself is a fine log. */
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, target, &a), 0);
        sfs_audit_close(a);
        unlink(target);
}

static void test_file_writable_by_group_or_others_is_refused(void **state)
{
        struct sfs_audit *a = NULL;
        int fd;
        (void)state;

        fd = open(logpath, O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fchmod(fd, 0620), 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), -EPERM);
        assert_int_equal(fchmod(fd, 0602), 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), -EPERM);
        assert_int_equal(fchmod(fd, 0644), 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        sfs_audit_close(a);
        close(fd);
}

static void test_a_missing_directory_of_the_log_is_made_0750(void **state)
{
        struct sfs_audit *a = NULL;
        char sub[PATH_MAX], log[PATH_MAX];
        json_object *ev[4];
        struct stat st;
        mode_t old = umask(022);
        (void)state;

        tu_path(&dir, "logs", sub);
        tu_path(&dir, "logs/audit.log", log);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, log, &a), 0);
        umask(old);
        sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "unlink", .uid = 3 });
        sfs_audit_close(a);
        assert_int_equal(lstat(sub, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0750);
        assert_int_equal(st.st_uid, geteuid());
        assert_int_equal(read_events(log, ev, 4), 1);
        assert_int_equal(int_of(ev[0], "uid"), 3);
        put_events(ev, 1);
        unlink(log);
        rmdir(sub);
}

static void test_a_log_whose_directory_has_no_parent_is_enoent_and_makes_nothing(void **state)
{
        struct sfs_audit *a = NULL;
        char top[PATH_MAX], sub[PATH_MAX], log[PATH_MAX];
        (void)state;

        /* One level only, as --store: a mistyped path does not grow a tree. */
        tu_path(&dir, "no-such-dir", top);
        tu_path(&dir, "no-such-dir/logs", sub);
        tu_path(&dir, "no-such-dir/logs/audit.log", log);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, log, &a), -ENOENT);
        assert_null(a);
        assert_int_equal(access(top, F_OK), -1);
        assert_int_equal(errno, ENOENT);
        /* Its parent there, the same path is accepted. */
        assert_int_equal(mkdir(top, 0700), 0);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, log, &a), 0);
        sfs_audit_close(a);
        unlink(log);
        rmdir(sub);
        rmdir(top);
}

/* ---- coalescing ---- */

static void test_one_uid_past_its_burst_is_coalesced_another_uid_is_not(void **state)
{
        struct sfs_audit *a = open_frozen(64, 4);
        json_object *ev[16], *arr;
        size_t n, individual_1000 = 0, individual_1001 = 0;
        (void)state;

        for (int i = 0; i < 10; i++)
                refuse(a, 1000, "mkdir", EPERM);
        refuse(a, 1000, "open", EROFS);
        refuse(a, 1001, "mkdir", EPERM);
        refuse(a, 1001, "mkdir", EPERM);
        sfs_audit_close(a);

        n = read_events(logpath, ev, 16);
        /* 4 of uid 1000 one by one, uid 1001's two, one coalesced event. */
        assert_int_equal(n, 7);
        for (size_t i = 0; i < n - 1; i++) {
                assert_string_equal(str_of(ev[i], "event"), "refused");
                individual_1000 += int_of(ev[i], "uid") == 1000;
                individual_1001 += int_of(ev[i], "uid") == 1001;
        }
        assert_int_equal(individual_1000, 4);
        assert_int_equal(individual_1001, 2);
        assert_string_equal(str_of(ev[n - 1], "event"), "refused-coalesced");
        assert_non_null(str_of(ev[n - 1], "from"));
        assert_non_null(str_of(ev[n - 1], "to"));
        assert_true(json_object_object_get_ex(ev[n - 1], "refusals", &arr));
        assert_int_equal(json_object_array_length(arr), 2);
        {
                json_object *c0 = json_object_array_get_idx(arr, 0);
                json_object *c1 = json_object_array_get_idx(arr, 1);
                assert_int_equal(int_of(c0, "uid"), 1000);
                assert_string_equal(str_of(c0, "op"), "mkdir");
                assert_int_equal(int_of(c0, "errno"), EPERM);
                assert_string_equal(str_of(c0, "error"), "EPERM");
                assert_int_equal(int_of(c0, "count"), 6);
                assert_string_equal(str_of(c1, "op"), "open");
                assert_int_equal(int_of(c1, "errno"), EROFS);
                assert_int_equal(int_of(c1, "count"), 1);
        }
        assert_int_equal(int_of(ev[n - 1], "dropped"), 0);
        put_events(ev, n);
}

static void test_a_flood_of_idempotent_publishes_is_coalesced_too(void **state)
{
        struct sfs_audit *a = open_frozen(64, 4);
        json_object *ev[16], *arr, *c;
        size_t n;
        (void)state;

        for (int i = 0; i < 10; i++)
                sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "publish-exists",
                                                             .op = "rename", .uid = 7 });
        /* A real publish is never counted away. */
        sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "publish", .op = "rename",
                                                     .uid = 7 });
        sfs_audit_close(a);
        n = read_events(logpath, ev, 16);
        assert_int_equal(n, 4 + 1 + 1);
        assert_string_equal(str_of(ev[4], "event"), "publish");
        assert_string_equal(str_of(ev[5], "event"), "refused-coalesced");
        assert_true(json_object_object_get_ex(ev[5], "refusals", &arr));
        assert_int_equal(json_object_array_length(arr), 1);
        c = json_object_array_get_idx(arr, 0);
        assert_string_equal(str_of(c, "event"), "publish-exists");
        assert_int_equal(int_of(c, "errno"), 0);
        assert_null(str_of(c, "error"));
        assert_int_equal(int_of(c, "count"), 6);
        put_events(ev, n);
}

static void test_half_full_queue_coalesces_refusals_and_full_queue_counts_drops(void **state)
{
        struct sfs_audit *a = open_frozen(8, 1000);
        json_object *ev[16], *arr;
        size_t n;
        (void)state;

        /* Different uids, each within its budget: the queue's half is what stops them. */
        for (uid_t u = 0; u < 6; u++)
                refuse(a, 2000 + u, "mkdir", ENAMETOOLONG);
        /* Other events still have the other half, then are counted. */
        for (int i = 0; i < 6; i++)
                sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "unlink", .uid = 5 });
        sfs_audit_close(a);

        n = read_events(logpath, ev, 16);
        assert_int_equal(n, 4 + 4 + 1);
        for (size_t i = 0; i < 4; i++)
                assert_string_equal(str_of(ev[i], "event"), "refused");
        for (size_t i = 4; i < 8; i++)
                assert_string_equal(str_of(ev[i], "event"), "unlink");
        assert_string_equal(str_of(ev[8], "event"), "refused-coalesced");
        assert_true(json_object_object_get_ex(ev[8], "refusals", &arr));
        assert_int_equal(json_object_array_length(arr), 2);
        assert_int_equal(int_of(ev[8], "dropped"), 2);
        put_events(ev, n);
}

static void test_budget_comes_back_with_time(void **state)
{
        struct sfs_audit *a = NULL;
        struct sfs_audit_limits lim = { .queue_max = 64, .burst = 2, .per_sec = 1,
                                        .interval_ms = 1000, .now_ms = frozen_clock };
        json_object *ev[16];
        size_t n, refused = 0;
        (void)state;

        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        sfs_audit_set_limits(a, &lim);
        frozen_ms = 1000;
        for (int i = 0; i < 3; i++)
                refuse(a, 1000, "mkdir", EPERM); /* 2 written, 1 counted */
        frozen_ms = 3000;                        /* two tokens back */
        for (int i = 0; i < 3; i++)
                refuse(a, 1000, "mkdir", EPERM); /* 2 written, 1 counted */
        sfs_audit_close(a);
        n = read_events(logpath, ev, 16);
        for (size_t i = 0; i < n; i++)
                refused += strcmp(str_of(ev[i], "event"), "refused") == 0;
        assert_int_equal(refused, 4);
        assert_string_equal(str_of(ev[n - 1], "event"), "refused-coalesced");
        put_events(ev, n);
        frozen_ms = 1000;
}

/* ---- UTF-8 ---- */

static void test_invalid_utf8_becomes_replacement_characters_with_raw_hex(void **state)
{
        struct sfs_audit *a = NULL;
        json_object *ev[4];
        (void)state;

        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        /* A lone 0xff, a valid "é", a Latin-1 "é" (0xe9 alone), an overlong "/" (c0 af), a
         * UTF-16 surrogate (ed a0 80), a control character. */
        sfs_audit_emit(a, &(struct sfs_audit_event){
                                  .event = "refused", .op = "mkdir", .uid = 1, .err = EPERM,
                                  .name = "a\xff\xc3\xa9\xe9\xc0\xaf\xed\xa0\x80\n" });
        sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "refused", .op = "mkdir",
                                                     .uid = 1, .err = EPERM,
                                                     .name = "caf\xc3\xa9 \xf0\x9f\x93\xa6" });
        sfs_audit_close(a);
        assert_int_equal(read_events(logpath, ev, 4), 2);
        assert_string_equal(str_of(ev[0], "name"),
                            "a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n");
        assert_string_equal(str_of(ev[0], "name_hex"), "61ffc3a9e9c0afeda0800a");
        /* Valid UTF-8 is written as it is, with no hex beside it. */
        assert_string_equal(str_of(ev[1], "name"), "caf\xc3\xa9 \xf0\x9f\x93\xa6");
        assert_null(str_of(ev[1], "name_hex"));
        put_events(ev, 2);
}

/* ---- the writer thread ---- */

static void wait_for_lines(const char *path, size_t want)
{
        json_object *ev[64];
        for (int i = 0; i < 20000; i++) {
                struct stat st;
                if (stat(path, &st) == 0) {
                        size_t n = read_events(path, ev, 64);
                        put_events(ev, n);
                        if (n >= want)
                                return;
                }
                usleep(1000);
        }
        fail_msg("%s never had %zu lines", path, want);
}

static void test_reopen_after_rotation_writes_to_the_new_file(void **state)
{
        struct sfs_audit *a = NULL;
        char rotated[PATH_MAX + 8];
        json_object *ev[4];
        (void)state;

        snprintf(rotated, sizeof(rotated), "%s.1", logpath);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        assert_int_equal(sfs_audit_start(a), 0);
        sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "unlink", .uid = 1 });
        wait_for_lines(logpath, 1);
        assert_int_equal(rename(logpath, rotated), 0);
        sfs_audit_request_reopen(a);
        /* The reopen creates the file again: only then is the next line for it. */
        {
                struct stat st;
                int i;
                for (i = 0; i < 20000 && stat(logpath, &st) < 0; i++)
                        usleep(1000);
                assert_int_equal(stat(logpath, &st), 0);
        }
        sfs_audit_emit(a, &(struct sfs_audit_event){ .event = "unlink", .uid = 2 });
        wait_for_lines(logpath, 1);
        sfs_audit_close(a);
        assert_int_equal(read_events(rotated, ev, 4), 1);
        assert_int_equal(int_of(ev[0], "uid"), 1);
        put_events(ev, 1);
        assert_int_equal(read_events(logpath, ev, 4), 1);
        assert_int_equal(int_of(ev[0], "uid"), 2);
        put_events(ev, 1);
        unlink(rotated);
}

static void *drain_pipe(void *arg)
{
        int fd = *(int *)arg;
        char buf[65536];
        size_t *total = malloc(sizeof(*total));
        ssize_t n;

        *total = 0;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                *total += (size_t)n;
        return total;
}

static void test_a_sink_that_blocks_never_blocks_the_caller(void **state)
{
        struct sfs_audit *a = NULL;
        struct sfs_audit_limits lim = { .queue_max = 16, .burst = 1000, .per_sec = 0,
                                        .interval_ms = 1000 };
        int p[2], saved;
        pthread_t reader;
        size_t *total;
        (void)state;

        /* The standard-error sink on a pipe nobody reads yet: the writer fills it, then
         * blocks in write(); the caller's 100,000 events must all return. */
        assert_int_equal(pipe(p), 0);
        saved = dup(STDERR_FILENO);
        assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
        close(p[1]);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_STDERR, NULL, &a), 0);
        sfs_audit_set_limits(a, &lim);
        assert_int_equal(sfs_audit_start(a), 0);
        for (int i = 0; i < 100000; i++)
                sfs_audit_emit(a, &(struct sfs_audit_event){
                                          .event = "unlink", .uid = 1, .name = "pad-pad-pad" });
        for (int i = 0; i < 100000; i++)
                refuse(a, 1000, "mkdir", EPERM);
        /* Now drain, so the writer can finish and close can join it. */
        assert_int_equal(pthread_create(&reader, NULL, drain_pipe, &p[0]), 0);
        sfs_audit_close(a);
        dup2(saved, STDERR_FILENO);
        close(saved);
        pthread_join(reader, (void **)&total);
        close(p[0]);
        /* Bounded: far less than 200,000 lines reached the sink. */
        assert_true(*total > 0);
        assert_true(*total < 1 << 20); /* 200,000 lines would be ~20 MB */
        free(total);
}

/* ---- expiry ---- */

static void test_every_expired_staging_file_is_its_own_line(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 4096,
                .max_bytes = 1 << 20,
                .max_snapshots = 8,
                .max_staging = 64,
                .readers = { .any = true },
                .publishers = { .any = true },
                .staging_ttl_ms = 1,
        };
        const struct sfs_caller alice = { .uid = 1000, .gid = 1000, .pid = 11 };
        struct sfs_tree *t = NULL;
        struct sfs_entry st;
        json_object *ev[64];
        size_t n;
        (void)state;

        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &cfg.audit), 0);
        assert_int_equal(sfs_tree_new(&cfg, &t), 0);
        assert_int_equal(sfs_tree_lookup(t, &alice, sfs_tree_root(t), ".staging", &st), 0);
        for (int i = 0; i < 48; i++) {
                struct sfs_handle *h;
                struct sfs_open_info oi;
                struct sfs_entry e;
                char name[16];
                snprintf(name, sizeof(name), "f%02d", i);
                assert_int_equal(sfs_tree_create(t, &alice, st.node, name,
                                                 O_WRONLY | O_CREAT | O_EXCL, &e, &h, &oi),
                                 0);
                sfs_tree_flush(t, h);
                sfs_tree_release(t, h);
        }
        assert_int_equal(sfs_tree_expire_staging(t, sfs_now_ms() + 1000), 48);
        sfs_tree_free(t);
        sfs_audit_close(cfg.audit);
        n = read_events(logpath, ev, 64);
        assert_int_equal(n, 48);
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(str_of(ev[i], "event"), "staging-expired");
                assert_int_equal(int_of(ev[i], "uid"), 1000);
        }
        put_events(ev, n);
}

static void test_a_file_sink_without_a_path_is_einval(void **state)
{
        struct sfs_audit *a = NULL;
        (void)state;

        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, NULL, &a), -EINVAL);
        assert_null(a);
        assert_int_equal(sfs_audit_open(SFS_AUDIT_FILE, logpath, &a), 0);
        sfs_audit_close(a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
                T(test_a_file_sink_without_a_path_is_einval),
                T(test_regular_file_of_this_uid_is_accepted_and_written),
                T(test_fifo_is_refused_with_or_without_a_reader),
                T(test_symlink_and_directory_are_refused),
                T(test_file_writable_by_group_or_others_is_refused),
                T(test_a_missing_directory_of_the_log_is_made_0750),
                T(test_a_log_whose_directory_has_no_parent_is_enoent_and_makes_nothing),
                T(test_one_uid_past_its_burst_is_coalesced_another_uid_is_not),
                T(test_a_flood_of_idempotent_publishes_is_coalesced_too),
                T(test_half_full_queue_coalesces_refusals_and_full_queue_counts_drops),
                T(test_budget_comes_back_with_time),
                T(test_invalid_utf8_becomes_replacement_characters_with_raw_hex),
                T(test_reopen_after_rotation_writes_to_the_new_file),
                T(test_a_sink_that_blocks_never_blocks_the_caller),
                T(test_every_expired_staging_file_is_its_own_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
