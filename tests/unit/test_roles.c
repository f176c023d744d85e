/* SPDX-License-Identifier: MIT */
/* fs/config/roles.c: who may see, read, publish and remove, each refusal beside its allowance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs/config/roles.h"

static const struct sfs_caller owner = { .uid = 500 }, rooted = { .uid = 0 },
                               alice = { .uid = 1000 }, bob = { .uid = 1001 };

static struct sfs_tree_config config(void)
{
        return (struct sfs_tree_config){
                .readers = { .any = true },
                .owner_uid = 500,
        };
}

static void test_without_publishers_only_the_owner_and_root_publish(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        assert_true(sfs_may_publish(&cfg, &owner));
        assert_true(sfs_may_publish(&cfg, &rooted));
        assert_false(sfs_may_publish(&cfg, &alice));
        /* alice still reads and sees what is published. */
        assert_true(sfs_may_read(&cfg, &alice));
        assert_true(sfs_may_see(&cfg, &alice));
}

static void test_a_publisher_set_admits_exactly_its_uids(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        assert_int_equal(value_parse_uid_list("1000", &cfg.publishers), 0);
        assert_true(sfs_may_publish(&cfg, &alice));
        assert_false(sfs_may_publish(&cfg, &bob));
}

static void test_a_read_only_tree_and_the_read_view_never_publish(void **state)
{
        struct sfs_tree_config cfg = config();
        struct sfs_caller viewer = owner;

        (void)state;
        viewer.read_view = true;
        assert_false(sfs_may_publish(&cfg, &viewer));
        assert_true(sfs_may_publish(&cfg, &owner));
        cfg.read_only = true;
        assert_false(sfs_may_publish(&cfg, &owner));
        assert_true(sfs_may_read(&cfg, &owner));
}

static void test_without_readers_only_the_owner_and_root_read_or_see(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        cfg.readers = (struct value_uid_list){ .any = false };
        assert_true(sfs_may_read(&cfg, &owner));
        assert_true(sfs_may_read(&cfg, &rooted));
        assert_false(sfs_may_read(&cfg, &alice));
        assert_false(sfs_may_see(&cfg, &alice));
        /* --readers any, or naming alice, lets her read the same mount. */
        assert_int_equal(value_parse_uid_list("any", &cfg.readers), 0);
        assert_true(sfs_may_read(&cfg, &alice));
        assert_int_equal(value_parse_uid_list("1000", &cfg.readers), 0);
        assert_true(sfs_may_read(&cfg, &alice));
        assert_false(sfs_may_read(&cfg, &bob));
}

static void test_readers_see_publishers_see_others_see_nothing(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        assert_int_equal(value_parse_uid_list("1000", &cfg.readers), 0);
        assert_true(sfs_may_read(&cfg, &alice));
        assert_false(sfs_may_read(&cfg, &bob));
        assert_false(sfs_may_see(&cfg, &bob));
        /* The owner and root read whatever the list names: the mount is theirs. */
        assert_true(sfs_may_see(&cfg, &owner));
        assert_true(sfs_may_read(&cfg, &owner));
        assert_true(sfs_may_read(&cfg, &rooted));
}

static void test_removing_is_for_the_owner_and_root_and_with_unlink_own_a_hold_is_dropped(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        assert_true(sfs_may_remove(&cfg, &owner));
        assert_true(sfs_may_remove(&cfg, &rooted));
        assert_false(sfs_may_remove(&cfg, &alice));
        assert_false(sfs_may_unhold(&cfg, &alice));
        cfg.unlink_own = true;
        /* A publisher drops its own hold; removing outright stays the owner's and root's. */
        assert_true(sfs_may_unhold(&cfg, &alice));
        assert_false(sfs_may_remove(&cfg, &alice));
}

static void test_only_the_owner_and_root_may_have_the_store_re_hashed(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        assert_true(sfs_may_check_store(&cfg, &owner));
        assert_true(sfs_may_check_store(&cfg, &rooted));
        assert_false(sfs_may_check_store(&cfg, &alice));
}

static void test_metadata_is_cached_only_when_every_uid_may_see_it(void **state)
{
        struct sfs_tree_config cfg = config();

        (void)state;
        assert_true(sfs_meta_timeout(&cfg, 60) == 60);
        assert_int_equal(value_parse_uid_list("1000", &cfg.readers), 0);
        assert_true(sfs_meta_timeout(&cfg, 60) == 0);
        /* Without allow_other only the owner reaches the mount: nothing cached answers
         * anyone else. */
        cfg.single_uid = true;
        assert_true(sfs_meta_timeout(&cfg, 60) == 60);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_without_publishers_only_the_owner_and_root_publish),
                cmocka_unit_test(test_a_publisher_set_admits_exactly_its_uids),
                cmocka_unit_test(test_a_read_only_tree_and_the_read_view_never_publish),
                cmocka_unit_test(test_without_readers_only_the_owner_and_root_read_or_see),
                cmocka_unit_test(test_readers_see_publishers_see_others_see_nothing),
                cmocka_unit_test(
                        test_removing_is_for_the_owner_and_root_and_with_unlink_own_a_hold_is_dropped),
                cmocka_unit_test(test_only_the_owner_and_root_may_have_the_store_re_hashed),
                cmocka_unit_test(test_metadata_is_cached_only_when_every_uid_may_see_it),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
