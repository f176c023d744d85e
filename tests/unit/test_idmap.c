/* SPDX-License-Identifier: MIT */
/* fs/base/idmap.c: ids handed to the kernel, found again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "fs/base/idmap.h"

static void test_an_id_is_found_until_it_is_removed(void **state)
{
        struct sfs_idmap m;
        struct sfs_idlink a = { .id = 1 }, b = { .id = 4 };

        (void)state;
        assert_int_equal(sfs_idmap_init(&m), 0);
        sfs_idmap_add(&m, &a);
        sfs_idmap_add(&m, &b);
        assert_ptr_equal(sfs_idmap_find(&m, 1), &a);
        assert_ptr_equal(sfs_idmap_find(&m, 4), &b);
        /* An id never added is not there. */
        assert_null(sfs_idmap_find(&m, 2));
        sfs_idmap_del(&m, &a);
        assert_null(sfs_idmap_find(&m, 1));
        assert_ptr_equal(sfs_idmap_find(&m, 4), &b);
        /* Removing what is not linked changes nothing. */
        sfs_idmap_del(&m, &a);
        assert_int_equal(m.n, 1);
        sfs_idmap_free(&m);
}

static void test_many_ids_grow_the_table_and_stay_found(void **state)
{
        enum { N = 20000 };
        struct sfs_idlink *v = calloc(N, sizeof(*v));
        struct sfs_idmap m;

        (void)state;
        assert_non_null(v);
        assert_int_equal(sfs_idmap_init(&m), 0);
        for (size_t i = 0; i < N; i++) {
                /* Inode numbers far apart and close together, as a long-lived daemon has. */
                v[i].id = i % 2 ? (uint64_t)i << 32 : i + 3;
                sfs_idmap_add(&m, &v[i]);
        }
        assert_true(m.bits > 6);
        for (size_t i = 0; i < N; i++)
                assert_ptr_equal(sfs_idmap_find(&m, v[i].id), &v[i]);
        for (size_t i = 0; i < N; i += 2)
                sfs_idmap_del(&m, &v[i]);
        for (size_t i = 0; i < N; i++)
                assert_ptr_equal(sfs_idmap_find(&m, v[i].id), i % 2 ? &v[i] : NULL);
        sfs_idmap_free(&m);
        free(v);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_an_id_is_found_until_it_is_removed),
                cmocka_unit_test(test_many_ids_grow_the_table_and_stay_found),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
