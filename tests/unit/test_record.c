/* SPDX-License-Identifier: MIT */
/* Mount records: the superblock options that matter, read into a record strictly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mountcheck/record.h"

#define PATH "/run/snap"

static struct mc_mount mount_rec(void)
{
        return (struct mc_mount){
                .id = 10,
                .parent_id = 1,
                .mount_point = (char *)PATH,
                .root = (char *)"/",
                .fstype = (char *)"tmpfs",
                .has_size = true,
                .size = 1 << 20,
        };
}

static void test_contradictory_user_ids_leave_the_owner_unknown(void **state)
{
        struct mc_mount m = mount_rec();
        (void)state;
        mc_mount_apply_sb_option(&m, "user_id=1000");
        mc_mount_apply_sb_option(&m, "user_id=0");
        assert_false(m.has_user_id);
        mc_mount_apply_sb_option(&m, "user_id=1000");
        assert_false(m.has_user_id);

        m = mount_rec();
        mc_mount_apply_sb_option(&m, "user_id=12x");
        assert_false(m.has_user_id);
        m = mount_rec();
        mc_mount_apply_sb_option(&m, "user_id=4294967296");
        assert_false(m.has_user_id);
}

static void test_size_option_is_read_in_kibibytes(void **state)
{
        struct mc_mount m = mount_rec();
        (void)state;
        m.has_size = false;
        mc_mount_apply_sb_option(&m, "size=1024k");
        assert_true(m.has_size);
        assert_int_equal(m.size, 1 << 20);
        mc_mount_apply_sb_option(&m, "size=2048k");
        assert_false(m.has_size);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_contradictory_user_ids_leave_the_owner_unknown),
                cmocka_unit_test(test_size_option_is_read_in_kibibytes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
