/* SPDX-License-Identifier: MIT */
/* fs/tree/staging.c: staged bytes alone, without a tree: the running hash, the gap filled with
 * zeros, and the three limits (one file, the owner's bytes, the tree's bytes), each refusal
 * leaving the bytes as they were and the budget given back in full. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/tree/staging.h"

/* The calls whose contract is "stg->lock held", made as the tree makes them: under the lock
 * (fs/tree/staging.c asserts it). */
static int write_at(struct sfs_staging *stg, const void *buf, size_t size, uint64_t off)
{
        int r;

        pthread_mutex_lock(&stg->lock);
        r = sfs_staging_write_locked(stg, buf, size, off);
        pthread_mutex_unlock(&stg->lock);
        return r;
}

static int resize_to(struct sfs_staging *stg, uint64_t len)
{
        int r;

        pthread_mutex_lock(&stg->lock);
        r = sfs_staging_resize_locked(stg, len);
        pthread_mutex_unlock(&stg->lock);
        return r;
}

static int digest_of(struct sfs_staging *stg, struct snap_digest *out)
{
        int r;

        pthread_mutex_lock(&stg->lock);
        r = sfs_staging_digest(stg, out);
        pthread_mutex_unlock(&stg->lock);
        return r;
}

struct fixture {
        struct snap_store *store;
        struct sfs_staging_budget budget;
        uint64_t alice_bytes, bob_bytes;
};

/* 64 bytes a file, 24 bytes a uid, 40 bytes in all. */
static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(snap_store_new(&(struct snap_store_config){ .max_object_size = 64,
                                                                     .max_bytes = 40,
                                                                     .max_objects = 8 },
                                        &f->store),
                         0);
        f->budget = (struct sfs_staging_budget){ .store = f->store, .max_size = 64,
                                                 .max_uid_bytes = 24 };
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        snap_store_free(f->store);
        free(f);
        return 0;
}

static struct sfs_staging *new_staging(struct fixture *f, uint64_t *uid_bytes)
{
        struct sfs_staging *stg = NULL;
        assert_int_equal(sfs_staging_new("cfg", 1000, 1000, &f->budget, uid_bytes, &stg), 0);
        return stg;
}

static uint64_t reserved(struct fixture *f)
{
        struct snap_store_stats s;
        snap_store_get_stats(f->store, &s);
        return s.reserved;
}

static void assert_digest_of(struct sfs_staging *stg, const void *want, size_t len)
{
        struct snap_digest got, expect;
        assert_int_equal(digest_of(stg, &got), 0);
        assert_int_equal(snap_sha256(want, len, &expect), 0);
        assert_true(snap_digest_equal(&got, &expect));
}

static void test_bytes_in_order_keep_the_running_hash(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *stg = new_staging(f, &f->alice_bytes);

        assert_int_equal(write_at(stg, "hello ", 6, 0), 0);
        assert_int_equal(write_at(stg, "world", 5, 6), 0);
        assert_int_equal(stg->hashed, 11);
        assert_digest_of(stg, "hello world", 11);
        sfs_staging_free(stg);
}

static void test_bytes_out_of_order_hash_from_the_buffer_to_the_same_digest(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *stg = new_staging(f, &f->alice_bytes);

        assert_int_equal(write_at(stg, "world", 5, 6), 0);
        assert_int_equal(write_at(stg, "hello ", 6, 0), 0);
        assert_int_equal(stg->hashed, SFS_HASH_BROKEN);
        assert_digest_of(stg, "hello world", 11);
        sfs_staging_free(stg);
}

static void test_a_gap_reads_as_zeros_and_the_hash_follows(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *stg = new_staging(f, &f->alice_bytes);
        const char want[6] = { 'a', 0, 0, 0, 'b', 'c' };

        assert_int_equal(write_at(stg, "a", 1, 0), 0);
        assert_int_equal(write_at(stg, "bc", 2, 4), 0);
        assert_int_equal(stg->len, 6);
        assert_memory_equal(stg->buf, want, 6);
        assert_int_equal(stg->hashed, 6);
        assert_digest_of(stg, want, 6);
        sfs_staging_free(stg);
}

static void test_one_file_past_the_snapshot_size_is_efbig_and_keeps_its_bytes(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *stg = new_staging(f, &f->alice_bytes);
        char big[65] = { 0 };

        assert_int_equal(write_at(stg, "kept", 4, 0), 0);
        assert_int_equal(write_at(stg, big, sizeof(big), 0), -EFBIG);
        assert_int_equal(write_at(stg, "x", 1, UINT64_MAX), -EFBIG);
        assert_int_equal(stg->len, 4);
        assert_memory_equal(stg->buf, "kept", 4);
        assert_int_equal(f->alice_bytes, 4);
        sfs_staging_free(stg);
}

static void test_an_owner_past_its_bytes_is_edquot_while_another_owner_writes(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *one = new_staging(f, &f->alice_bytes);
        struct sfs_staging *two = new_staging(f, &f->alice_bytes);
        struct sfs_staging *other = new_staging(f, &f->bob_bytes);
        char buf[16] = { 0 };

        assert_int_equal(write_at(one, buf, 16, 0), 0);
        /* Both of alice's files draw on one count: 16 + 9 > 24. */
        assert_int_equal(write_at(two, buf, 9, 0), -EDQUOT);
        assert_int_equal(two->len, 0);
        assert_int_equal(write_at(two, buf, 8, 0), 0);
        assert_int_equal(f->alice_bytes, 24);
        assert_int_equal(write_at(other, buf, 8, 0), 0);
        sfs_staging_free(one);
        sfs_staging_free(two);
        sfs_staging_free(other);
        assert_int_equal(f->alice_bytes, 0);
        assert_int_equal(f->bob_bytes, 0);
}

static void test_the_trees_byte_limit_is_enospc_and_gives_the_owner_quota_back(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *a = new_staging(f, &f->alice_bytes);
        struct sfs_staging *b = new_staging(f, &f->bob_bytes);
        char buf[24] = { 0 };

        assert_int_equal(write_at(a, buf, 24, 0), 0);
        /* 24 + 20 > 40 in all, though bob is within his own 24. */
        assert_int_equal(write_at(b, buf, 20, 0), -ENOSPC);
        assert_int_equal(f->bob_bytes, 0);
        assert_int_equal(write_at(b, buf, 16, 0), 0);
        assert_int_equal(reserved(f), 40);
        sfs_staging_free(a);
        sfs_staging_free(b);
}

static void test_truncating_and_dropping_give_every_byte_back(void **state)
{
        struct fixture *f = *state;
        struct sfs_staging *stg = new_staging(f, &f->alice_bytes);
        char buf[20] = { 0 };

        assert_int_equal(write_at(stg, buf, 20, 0), 0);
        assert_int_equal(resize_to(stg, 5), 0);
        assert_int_equal(f->alice_bytes, 5);
        assert_int_equal(reserved(f), 5);
        assert_int_equal(resize_to(stg, 0), 0);
        /* Emptied, the running hash starts again. */
        assert_int_equal(stg->hashed, 0);
        assert_int_equal(resize_to(stg, 10), 0);
        assert_digest_of(stg, buf, 10);
        sfs_staging_drop_content(stg);
        assert_int_equal(f->alice_bytes, 0);
        assert_int_equal(reserved(f), 0);
        sfs_staging_free(stg);
}

static void test_names_are_1_to_64_safe_characters_not_starting_with_a_dot(void **state)
{
        char longest[65], too_long[66];

        (void)state;
        memset(longest, 'a', 64);
        longest[64] = '\0';
        memset(too_long, 'a', 65);
        too_long[65] = '\0';
        assert_true(sfs_staging_name_valid("cfg-1.json_v2"));
        assert_true(sfs_staging_name_valid(longest));
        assert_false(sfs_staging_name_valid(too_long));
        assert_false(sfs_staging_name_valid(""));
        assert_false(sfs_staging_name_valid(".hidden"));
        assert_false(sfs_staging_name_valid("a/b"));
        assert_false(sfs_staging_name_valid(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_bytes_in_order_keep_the_running_hash, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(
                        test_bytes_out_of_order_hash_from_the_buffer_to_the_same_digest, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(test_a_gap_reads_as_zeros_and_the_hash_follows,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_one_file_past_the_snapshot_size_is_efbig_and_keeps_its_bytes, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_an_owner_past_its_bytes_is_edquot_while_another_owner_writes, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_the_trees_byte_limit_is_enospc_and_gives_the_owner_quota_back, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_truncating_and_dropping_give_every_byte_back, setup, teardown),
                cmocka_unit_test(test_names_are_1_to_64_safe_characters_not_starting_with_a_dot),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
