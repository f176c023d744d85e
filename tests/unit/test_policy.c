/* SPDX-License-Identifier: MIT */
/* mountcheck/policy.c: presets and policy keys of the mount check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "mountcheck/policy.h"
#include "common/values.h"

static void test_snapfs_preset_requires_nosuid_nodev_noexec_and_root_as_owner(void **state)
{
        struct mc_policy p;
        (void)state;
        assert_int_equal(mc_policy_preset(&p, "snapfs"), 0);
        assert_string_equal(p.fstype, "fuse.snapfs");
        assert_int_equal(p.require, MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC);
        assert_int_equal(p.forbid, 0);
        assert_true(p.require_private);
        assert_true(p.check_owner);
        assert_int_equal(p.owner, 0);
        assert_false(p.insecure_own_mount);
        assert_false(p.trust_user_namespace);
        assert_false(p.check_mode);
        assert_false(p.check_size);
        assert_true(p.probe_transport);
}

static void test_own_mount_and_user_namespace_keys_opt_in_and_back_out(void **state)
{
        struct mc_policy p, before;
        (void)state;
        assert_int_equal(mc_policy_preset(&p, "snapfs"), 0);
        assert_int_equal(mc_policy_set(&p, "insecure-own-mount", "yes"), 0);
        assert_true(p.insecure_own_mount);
        assert_int_equal(mc_policy_set(&p, "insecure-own-mount", "no"), 0);
        assert_false(p.insecure_own_mount);
        assert_int_equal(mc_policy_set(&p, "user-namespace", "trust"), 0);
        assert_true(p.trust_user_namespace);
        assert_int_equal(mc_policy_set(&p, "user-namespace", "refuse"), 0);
        assert_false(p.trust_user_namespace);
        before = p;
        assert_int_equal(mc_policy_set(&p, "insecure-own-mount", "1"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "user-namespace", "yes"), -EINVAL);
        assert_memory_equal(&p, &before, sizeof(p));
}

static void test_tmpfs_preset_requires_rw_mode_1777_and_one_mib(void **state)
{
        struct mc_policy p;
        (void)state;
        assert_int_equal(mc_policy_preset(&p, "tmpfs"), 0);
        assert_string_equal(p.fstype, "tmpfs");
        assert_int_equal(p.require, MC_OPT_RW | MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC);
        assert_true(p.require_private);
        assert_false(p.check_owner);
        assert_true(p.check_mode);
        assert_int_equal(p.mode, 01777);
        assert_true(p.check_size);
        assert_int_equal(p.max_size, 1024 * 1024);
}

static void test_unknown_preset_is_einval_and_leaves_policy_untouched(void **state)
{
        struct mc_policy p, before;
        (void)state;
        assert_int_equal(mc_policy_preset(&p, "tmpfs"), 0);
        before = p;
        assert_int_equal(mc_policy_preset(&p, "ext4"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "preset", "Snapfs"), -EINVAL);
        assert_memory_equal(&p, &before, sizeof(p));
}

static void test_owner_and_max_size_take_the_value_grammars_of_every_command(void **state)
{
        struct mc_policy p;
        uint64_t lo, hi;
        int type;

        (void)state;
        assert_int_equal(mc_policy_value_of("owner", &type, &lo, &hi), 0);
        assert_int_equal(type, VALUE_UID);
        assert_true(lo == 0 && hi == VALUE_UID_MAX);
        assert_int_equal(mc_policy_value_of("max-size", &type, &lo, &hi), 0);
        assert_int_equal(type, VALUE_SIZE);
        assert_true(lo == 1 && hi == UINT64_MAX);
        assert_int_equal(mc_policy_value_of("mode", &type, &lo, &hi), -ENOENT);
        assert_int_equal(mc_policy_value_of(NULL, &type, &lo, &hi), -EINVAL);
        /* The same answers as value_parse: "007" is no uid here either, "1k" is a size. */
        mc_policy_preset(&p, "tmpfs");
        assert_int_equal(mc_policy_set(&p, "owner", "007"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "max-size", "1k"), 0);
        assert_int_equal(p.max_size, 1024);
        assert_int_equal(mc_policy_set(&p, "max-size", "17179869184G"), -ERANGE);
        assert_int_equal(p.max_size, 1024);
}

static void test_max_size_option_sets_and_disables_the_bound(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "snapfs");
        assert_int_equal(mc_policy_set(&p, "max-size", "2M"), 0);
        assert_true(p.check_size);
        assert_int_equal(p.max_size, 2 << 20);
        assert_int_equal(mc_policy_set(&p, "max-size", "2 M"), -EINVAL);
        assert_int_equal(p.max_size, 2 << 20);
        assert_int_equal(mc_policy_set(&p, "max-size", "any"), 0);
        assert_false(p.check_size);
}

static void test_require_replaces_the_preset_list(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "tmpfs");
        assert_int_equal(mc_policy_set(&p, "require", "nosuid,nodev"), 0);
        assert_int_equal(p.require, MC_OPT_NOSUID | MC_OPT_NODEV);
        assert_int_equal(mc_policy_set(&p, "require", ""), 0);
        assert_int_equal(p.require, 0);
}

static void test_unknown_or_empty_option_item_is_einval_and_policy_unchanged(void **state)
{
        static const char *const bad[] = { "nosuid,bogus", "nosuid,", ",nosuid", "nosuid,,nodev",
                                           "NOSUID", "relatime", "nosuid nodev", "suid" };
        struct mc_policy p, before;
        (void)state;
        mc_policy_preset(&p, "tmpfs");
        before = p;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(mc_policy_set(&p, "require", bad[i]), -EINVAL);
                assert_int_equal(mc_policy_set(&p, "forbid", bad[i]), -EINVAL);
        }
        assert_memory_equal(&p, &before, sizeof(p));
}

static void test_requiring_and_forbidding_one_option_is_einval(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "tmpfs");
        assert_int_equal(mc_policy_set(&p, "forbid", "noexec"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "forbid", "nosymfollow,noatime"), 0);
        assert_int_equal(p.forbid, MC_OPT_NOSYMFOLLOW | MC_OPT_NOATIME);
        assert_int_equal(mc_policy_set(&p, "require", "noatime"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "require", "ro,rw"), -EINVAL);
}

static void test_forbidding_both_ro_and_rw_is_einval(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "snapfs");
        /* Every mount is one of the two: this policy would refuse them all. */
        assert_int_equal(mc_policy_set(&p, "forbid", "ro,rw"), -EINVAL);
        assert_int_equal(p.forbid, 0);
        assert_int_equal(mc_policy_set(&p, "forbid", "rw"), 0);
        assert_int_equal(p.forbid, MC_OPT_RW);
}

static void test_max_size_zero_is_out_of_range(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "tmpfs");
        /* tmpfs size=0 is unlimited: no mount could ever meet a bound of 0 bytes. */
        assert_int_equal(mc_policy_set(&p, "max-size", "0"), -ERANGE);
        assert_int_equal(mc_policy_set(&p, "max-size", "0K"), -ERANGE);
        assert_int_equal(p.max_size, 1 << 20);
        assert_int_equal(mc_policy_set(&p, "max-size", "1"), 0);
        assert_int_equal(p.max_size, 1);
}

static void test_ro_replaces_the_rw_requirement(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "tmpfs");
        assert_int_equal(mc_policy_set(&p, "forbid", "ro"), 0);
        assert_int_equal(mc_policy_set(&p, "ro", NULL), 0);
        assert_true(p.require & MC_OPT_RO);
        assert_false(p.require & MC_OPT_RW);
        assert_false(p.forbid & MC_OPT_RO);
        assert_true(p.require & MC_OPT_NOEXEC);
}

static void test_mode_is_octal_up_to_07777(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "snapfs");
        assert_int_equal(mc_policy_set(&p, "mode", "1777"), 0);
        assert_true(p.check_mode);
        assert_int_equal(p.mode, 01777);
        assert_int_equal(mc_policy_set(&p, "mode", "0755"), 0);
        assert_int_equal(p.mode, 0755);
        assert_int_equal(mc_policy_set(&p, "mode", "0"), 0);
        assert_int_equal(p.mode, 0);
        assert_int_equal(mc_policy_set(&p, "mode", "8"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "mode", "17777"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "mode", ""), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "mode", "-1"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "mode", "0x1ff"), -EINVAL);
        assert_int_equal(p.mode, 0);
        assert_int_equal(mc_policy_set(&p, "mode", "any"), 0);
        assert_false(p.check_mode);
}

static void test_owner_is_a_uid_other_than_minus_one(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "snapfs");
        assert_int_equal(mc_policy_set(&p, "owner", "1000"), 0);
        assert_int_equal(p.owner, 1000);
        assert_int_equal(mc_policy_set(&p, "owner", "4294967294"), 0);
        assert_int_equal(p.owner, 4294967294U);
        assert_int_equal(mc_policy_set(&p, "owner", "4294967295"), -ERANGE);
        assert_int_equal(mc_policy_set(&p, "owner", "007"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "owner", "-1"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "owner", "root"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "owner", ""), -EINVAL);
        assert_int_equal(p.owner, 4294967294U);
        assert_int_equal(mc_policy_set(&p, "owner", "any"), 0);
        assert_false(p.check_owner);
}

static void test_fstype_rejects_what_mountinfo_cannot_report(void **state)
{
        struct mc_policy p;
        char longtype[MC_FSTYPE_MAX + 1];
        (void)state;
        mc_policy_preset(&p, "snapfs");
        assert_int_equal(mc_policy_set(&p, "fstype", "fuse.other"), 0);
        assert_string_equal(p.fstype, "fuse.other");
        assert_int_equal(mc_policy_set(&p, "fstype", "fuse snapfs"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "fstype", "tmpfs,ro"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "fstype", "tmp\nfs"), -EINVAL);
        assert_int_equal(mc_policy_set(&p, "fstype", ""), -EINVAL);
        memset(longtype, 'x', MC_FSTYPE_MAX);
        longtype[MC_FSTYPE_MAX] = '\0';
        assert_int_equal(mc_policy_set(&p, "fstype", longtype), -EINVAL);
        longtype[MC_FSTYPE_MAX - 1] = '\0';
        assert_int_equal(mc_policy_set(&p, "fstype", longtype), 0);
        assert_int_equal(mc_policy_set(&p, "fstype", "any"), 0);
        assert_string_equal(p.fstype, "");
}

static void test_probe_switch_takes_yes_or_no_only(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "snapfs");
        assert_int_equal(mc_policy_set(&p, "probe", "no"), 0);
        assert_false(p.probe_transport);
        assert_int_equal(mc_policy_set(&p, "probe", "false"), -EINVAL);
        assert_false(p.probe_transport);
        assert_int_equal(mc_policy_set(&p, "probe", "yes"), 0);
        assert_true(p.probe_transport);
}

static void test_unknown_key_is_enoent_and_missing_value_is_einval(void **state)
{
        struct mc_policy p;
        (void)state;
        mc_policy_preset(&p, "snapfs");
        assert_int_equal(mc_policy_set(&p, "max_size", "1M"), -ENOENT);
        assert_int_equal(mc_policy_set(&p, "mode", NULL), -EINVAL);
        assert_int_equal(mc_policy_set(NULL, "mode", "1777"), -EINVAL);
}

static void test_every_option_name_parses_back_to_its_bit(void **state)
{
        (void)state;
        for (uint32_t bit = 1; bit & MC_OPT_ALL; bit <<= 1) {
                uint32_t parsed = 0;
                const char *name = mc_option_name(bit);
                assert_non_null(name);
                assert_int_equal(mc_parse_options(name, &parsed), 0);
                assert_int_equal(parsed, bit);
        }
        assert_null(mc_option_name(MC_OPT_RO | MC_OPT_RW));
        assert_null(mc_option_name(0));
}

static void test_no_policy_name_or_option_list_is_einval(void **state)
{
        struct mc_policy p, before;
        uint32_t bits = 42;
        (void)state;
        assert_int_equal(mc_policy_preset(&p, "snapfs"), 0);
        before = p;
        assert_int_equal(mc_policy_preset(NULL, "snapfs"), -EINVAL);
        assert_int_equal(mc_policy_preset(&p, NULL), -EINVAL);
        assert_int_equal(mc_policy_set(&p, NULL, "any"), -EINVAL);
        assert_memory_equal(&p, &before, sizeof(p));
        assert_int_equal(mc_parse_options(NULL, &bits), -EINVAL);
        assert_int_equal(mc_parse_options("nosuid", NULL), -EINVAL);
        assert_int_equal(bits, 42);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_snapfs_preset_requires_nosuid_nodev_noexec_and_root_as_owner),
                cmocka_unit_test(test_tmpfs_preset_requires_rw_mode_1777_and_one_mib),
                cmocka_unit_test(test_unknown_preset_is_einval_and_leaves_policy_untouched),
                cmocka_unit_test(test_owner_and_max_size_take_the_value_grammars_of_every_command),
                cmocka_unit_test(test_max_size_option_sets_and_disables_the_bound),
                cmocka_unit_test(test_require_replaces_the_preset_list),
                cmocka_unit_test(test_unknown_or_empty_option_item_is_einval_and_policy_unchanged),
                cmocka_unit_test(test_requiring_and_forbidding_one_option_is_einval),
                cmocka_unit_test(test_forbidding_both_ro_and_rw_is_einval),
                cmocka_unit_test(test_max_size_zero_is_out_of_range),
                cmocka_unit_test(test_ro_replaces_the_rw_requirement),
                cmocka_unit_test(test_mode_is_octal_up_to_07777),
                cmocka_unit_test(test_owner_is_a_uid_other_than_minus_one),
                cmocka_unit_test(test_fstype_rejects_what_mountinfo_cannot_report),
                cmocka_unit_test(test_probe_switch_takes_yes_or_no_only),
                cmocka_unit_test(test_unknown_key_is_enoent_and_missing_value_is_einval),
                cmocka_unit_test(test_every_option_name_parses_back_to_its_bit),
                cmocka_unit_test(test_own_mount_and_user_namespace_keys_opt_in_and_back_out),
                cmocka_unit_test(test_no_policy_name_or_option_list_is_einval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
