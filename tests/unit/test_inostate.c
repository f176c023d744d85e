/* SPDX-License-Identifier: MIT */
/* fs/base/inostate.c: the backing ids (FUSE passthrough) a connection registered, kept for a
 * successor beside the inode numbers, without changing them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fs/base/inostate.h"

static const uint8_t A[32] = { 0xaa }, B[32] = { 0xbb };

/* st's memory file, handed to a successor: its state as the successor reads it. */
static struct sfs_inostate *successor(struct sfs_inostate *st)
{
        struct sfs_inostate *next;
        int fd = dup(sfs_inostate_fd(st));

        assert_true(fd >= 0);
        assert_int_equal(sfs_inostate_open(fd, &next), 0);
        return next;
}

static void test_a_successor_finds_the_backing_id_of_each_digest_on_its_connection(void **s)
{
        struct sfs_inostate *st, *next;

        (void)s;
        assert_int_equal(sfs_inostate_open(-1, &st), 0);
        sfs_inostate_note(st, A, 100, 0);
        sfs_inostate_note_backing(st, A, 1, 7, false);
        sfs_inostate_note_backing(st, A, 2, 3, false);
        next = successor(st);
        assert_int_equal(sfs_inostate_backing(next, A, 1), 7);
        assert_int_equal(sfs_inostate_backing(next, A, 2), 3);
        /* Beside them: another connection, another digest, the process that noted them. */
        assert_int_equal(sfs_inostate_backing(next, A, 3), 0);
        assert_int_equal(sfs_inostate_backing(next, B, 1), 0);
        assert_int_equal(sfs_inostate_backing(st, A, 1), 0);
        /* The numbers are what they were: a backing id is no inode number. */
        assert_int_equal(sfs_inostate_ino(next, A, 0), 100);
        assert_int_equal(sfs_inostate_next(next), 101);
        sfs_inostate_free(next);
        sfs_inostate_free(st);
}

static void test_a_closed_backing_id_is_never_named_again_and_the_last_one_wins(void **s)
{
        struct sfs_inostate *st, *next;

        (void)s;
        assert_int_equal(sfs_inostate_open(-1, &st), 0);
        sfs_inostate_note_backing(st, A, 1, 7, false);
        sfs_inostate_note_backing(st, A, 1, 7, true);
        sfs_inostate_note_backing(st, B, 1, 8, false);
        sfs_inostate_note_backing(st, B, 1, 8, true);
        sfs_inostate_note_backing(st, B, 1, 9, false);
        next = successor(st);
        assert_int_equal(sfs_inostate_backing(next, A, 1), 0);
        assert_int_equal(sfs_inostate_backing(next, B, 1), 9);
        sfs_inostate_free(next);
        sfs_inostate_free(st);
}

static void test_backing_ids_above_every_inode_number_do_not_make_the_state_invalid(void **s)
{
        struct sfs_inostate *st, *next;

        (void)s;
        assert_int_equal(sfs_inostate_open(-1, &st), 0);
        sfs_inostate_note(st, A, 2, 0);
        sfs_inostate_note_backing(st, A, 1, 4000000000u, false);
        next = successor(st);
        assert_int_equal(sfs_inostate_backing(next, A, 1), 4000000000u);
        assert_int_equal(sfs_inostate_next(next), 3);
        sfs_inostate_free(next);
        sfs_inostate_free(st);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_successor_finds_the_backing_id_of_each_digest_on_its_connection),
                cmocka_unit_test(test_a_closed_backing_id_is_never_named_again_and_the_last_one_wins),
                cmocka_unit_test(test_backing_ids_above_every_inode_number_do_not_make_the_state_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
