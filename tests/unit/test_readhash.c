/* SPDX-License-Identifier: MIT */
/* snapshot/readhash.c: hashing a descriptor, with a reader thread for large content. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/readhash.h"
#include "tests/unit/testutil.h"

typedef int (*hash_fn)(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got);
static const hash_fn paths[] = { snap_hash_fd_serial, snap_hash_fd_parallel, snap_hash_fd };

/* A file of len bytes of a pattern no chunk size divides evenly. */
static int make_file(struct tu_dir *d, size_t len, uint8_t **out)
{
        uint8_t *buf = malloc(len ? len : 1);
        int fd;

        assert_non_null(buf);
        for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)(i * 131 + (i >> 13));
        fd = tu_create(d, "f", buf, len);
        assert_true(fd >= 0);
        *out = buf;
        return fd;
}

static void assert_same_digest(hash_fn fn, int fd, const uint8_t *buf, size_t len,
                               uint64_t size)
{
        struct snap_hasher *h;
        struct snap_digest want, got_d;
        uint64_t got = 0;

        assert_int_equal(snap_hasher_new(&h), 0);
        assert_int_equal(fn(fd, size, h, &got), 0);
        assert_int_equal(snap_hasher_final(h, &got_d), 0);
        assert_int_equal(snap_sha256(buf, size < len ? size : len, &want), 0);
        assert_memory_equal(want.bytes, got_d.bytes, SNAP_DIGEST_LEN);
        /* At most one byte past size is read: that is how growth is seen. */
        assert_int_equal(got, len > size ? size + 1 : len);
        snap_hasher_free(h);
}

static void test_every_path_hashes_exactly_the_content_at_awkward_sizes(void **state)
{
        static const size_t sizes[] = { 0, 1, 65535, 65536, 65537, 262143, 262145,
                                        (4u << 20) + 3, (9u << 20) + 1 };
        (void)state;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                struct tu_dir d;
                uint8_t *buf;
                int fd;

                assert_int_equal(tu_dir_make(&d), 0);
                fd = make_file(&d, sizes[i], &buf);
                for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++)
                        assert_same_digest(paths[p], fd, buf, sizes[i], sizes[i]);
                close(fd);
                free(buf);
                tu_dir_remove(&d);
        }
}

static void test_growth_is_counted_but_never_hashed(void **state)
{
        struct tu_dir d;
        uint8_t *buf;
        int fd;
        (void)state;

        /* fstat said 5 MiB, the file holds 6: one byte past 5 MiB is read, none hashed. */
        assert_int_equal(tu_dir_make(&d), 0);
        fd = make_file(&d, 6u << 20, &buf);
        for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++)
                assert_same_digest(paths[p], fd, buf, 6u << 20, 5u << 20);
        close(fd);
        free(buf);
        tu_dir_remove(&d);
}

static void test_a_file_shorter_than_said_stops_at_its_end(void **state)
{
        struct tu_dir d;
        struct snap_hasher *h;
        uint8_t *buf;
        uint64_t got;
        int fd;
        (void)state;

        assert_int_equal(tu_dir_make(&d), 0);
        fd = make_file(&d, 5u << 20, &buf);
        for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
                assert_int_equal(snap_hasher_new(&h), 0);
                got = 0;
                assert_int_equal(paths[p](fd, 8u << 20, h, &got), 0);
                assert_int_equal(got, 5u << 20);
                snap_hasher_free(h);
        }
        close(fd);
        free(buf);
        tu_dir_remove(&d);
}

static void test_a_read_error_is_returned_from_every_path(void **state)
{
        struct snap_hasher *h;
        uint64_t got = 7;
        int fds[2];
        (void)state;

        /* pread on a pipe fails with ESPIPE, in whichever thread reads. */
        assert_int_equal(pipe(fds), 0);
        for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
                assert_int_equal(snap_hasher_new(&h), 0);
                assert_int_equal(paths[p](fds[0], 8u << 20, h, &got), -ESPIPE);
                assert_int_equal(got, 7);
                snap_hasher_free(h);
        }
        close(fds[0]);
        close(fds[1]);
}

static void test_the_copy_holds_the_hashed_bytes_and_nothing_past_its_length(void **state)
{
        /* Below and above the reader-thread threshold, and a copy longer than the content. */
        static const size_t sizes[] = { 0, 5, 70000, (4u << 20), (5u << 20) + 7 };
        (void)state;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t want = sizes[i] < (4u << 20) ? sizes[i] + 16 : (4u << 20);
                uint8_t *copy = malloc(want + 1);
                struct snap_digest d, direct;
                struct snap_hasher *h;
                struct tu_dir d0;
                uint64_t got = 0;
                uint8_t *buf;
                int fd;

                assert_non_null(copy);
                memset(copy, 0xa5, want + 1);
                assert_int_equal(tu_dir_make(&d0), 0);
                fd = make_file(&d0, sizes[i], &buf);
                assert_int_equal(snap_hasher_new(&h), 0);
                assert_int_equal(snap_hash_fd_copy(fd, sizes[i], h, &got, copy, want), 0);
                assert_int_equal(snap_hasher_final(h, &d), 0);
                assert_int_equal(snap_sha256(buf, sizes[i], &direct), 0);
                assert_memory_equal(d.bytes, direct.bytes, SNAP_DIGEST_LEN);
                if (sizes[i])
                        assert_memory_equal(copy, buf, sizes[i] < want ? sizes[i] : want);
                /* Nothing written past the content, nor past the copy's length. */
                for (size_t k = sizes[i] < want ? sizes[i] : want; k <= want; k++)
                        assert_int_equal(copy[k], 0xa5);
                snap_hasher_free(h);
                close(fd);
                free(buf);
                free(copy);
                tu_dir_remove(&d0);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_path_hashes_exactly_the_content_at_awkward_sizes),
                cmocka_unit_test(test_growth_is_counted_but_never_hashed),
                cmocka_unit_test(test_a_file_shorter_than_said_stops_at_its_end),
                cmocka_unit_test(test_a_read_error_is_returned_from_every_path),
                cmocka_unit_test(test_the_copy_holds_the_hashed_bytes_and_nothing_past_its_length),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
