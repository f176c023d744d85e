/* SPDX-License-Identifier: MIT */
/* common/util.h: what the assertions of "lock held" preconditions rely on; flag translation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"

static void test_a_mutex_is_held_while_locked_and_not_after(void **state)
{
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

        (void)state;
        assert_false(mutex_held(&m));
        pthread_mutex_lock(&m);
        assert_true(mutex_held(&m));
        /* Asking changed nothing: the lock is still held, and taken again once released. */
        assert_true(mutex_held(&m));
        pthread_mutex_unlock(&m);
        assert_false(mutex_held(&m));
        assert_int_equal(pthread_mutex_trylock(&m), 0);
        pthread_mutex_unlock(&m);
}

static void *hold(void *arg)
{
        pthread_mutex_t *m = arg;

        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
        return NULL;
}

static void test_a_mutex_asked_about_stays_free_for_other_threads(void **state)
{
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        pthread_t t;

        (void)state;
        assert_false(mutex_held(&m));
        assert_int_equal(pthread_create(&t, NULL, hold, &m), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_false(mutex_held(&m));
}

static const struct bit_map flags[] = {
        { 0x1, 0x100 },
        { 0x2 | 0x4, 0x200 }, /* either of two bits */
        { 0x8, 0x400 },
};

static void test_bit_map_sets_each_row_any_of_whose_bits_is_in(void **state)
{
        (void)state;
        assert_int_equal(BIT_MAP(0x1 | 0x8, flags), 0x100 | 0x400);
        assert_int_equal(BIT_MAP(0x4, flags), 0x200);
        assert_int_equal(BIT_MAP(0x2 | 0x4, flags), 0x200);
        /* A bit no row names translates to nothing. */
        assert_int_equal(BIT_MAP(0x10, flags), 0);
        assert_int_equal(BIT_MAP(0, flags), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_mutex_is_held_while_locked_and_not_after),
                cmocka_unit_test(test_a_mutex_asked_about_stays_free_for_other_threads),
                cmocka_unit_test(test_bit_map_sets_each_row_any_of_whose_bits_is_in),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
