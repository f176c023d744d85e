/* SPDX-License-Identifier: MIT */
/* fs/config/options.c: the daemon's table of options, one option set from text, the rules between
 * options at start and the limits derived from other limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "client/snapfs.h"
#include "fs/config/options.h"

static char why[640];

static const struct sfs_option *opt(const char *name)
{
        const struct sfs_option *o = sfs_option_find(name, false);
        assert_non_null(o);
        return o;
}

/* Sets name to value on cfg: what sfs_option_set returns. */
static int set(struct sfs_daemon_config *cfg, const char *name, const char *value)
{
        return sfs_option_set(cfg, opt(name), value, why, sizeof(why));
}

static void test_every_row_of_the_table_is_in_place_and_whole(void **state)
{
        (void)state;
        for (size_t i = 0; i < SFS_OPT_COUNT; i++) {
                const struct sfs_option *o = &sfs_options[i];
                assert_int_equal(o->id, i);
                assert_non_null(o->name);
                assert_non_null(o->help);
                assert_true((o->metavar == NULL) == (o->arg == SFS_ARG_FLAG));
                for (size_t k = 0; k < i; k++)
                        assert_string_not_equal(sfs_options[k].name, o->name);
                if (o->arg == SFS_ARG_VALUE && o->type != VALUE_UID_LIST && o->has_def &&
                    !o->def_text) {
                        assert_true(o->min <= o->def && o->def <= o->max);
                }
        }
}

static void test_an_option_is_found_by_its_exact_name_or_its_o_spelling(void **state)
{
        (void)state;
        assert_ptr_equal(sfs_option_find("max-bytes", false), &sfs_options[SFS_OPT_MAX_BYTES]);
        assert_null(sfs_option_find("max_bytes", false));
        assert_ptr_equal(sfs_option_find("max_bytes", true), &sfs_options[SFS_OPT_MAX_BYTES]);
        assert_ptr_equal(sfs_option_find("max-bytes", true), &sfs_options[SFS_OPT_MAX_BYTES]);
        /* Never a prefix, never another case. */
        assert_null(sfs_option_find("max-byte", true));
        assert_null(sfs_option_find("fore", true));
        assert_null(sfs_option_find("Max-Bytes", true));
        assert_null(sfs_option_find(NULL, true));
}

static void test_the_defaults_of_a_new_config_are_the_table_s(void **state)
{
        struct sfs_daemon_config cfg;
        char text[160];

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_true(cfg.tree.max_snapshot_size == sfs_options[SFS_OPT_MAX_SNAPSHOT_SIZE].def);
        assert_true(cfg.tree.max_bytes == 64ULL << 20);
        assert_true(cfg.tree.max_snapshots == 4096);
        assert_int_equal(cfg.tree.max_staging, 16);
        assert_true(cfg.tree.staging_ttl_ms == 600000);
        /* No uid set: the owner and root read (roles.c), not every uid. */
        assert_false(cfg.tree.readers.any);
        assert_int_equal(cfg.tree.readers.n, 0);
        assert_false(cfg.tree.publishers.any);
        assert_int_equal(cfg.tree.publishers.n, 0);
        assert_true(cfg.given == 0);
        assert_string_equal(sfs_option_default_text(opt("max-snapshot-size"), text,
                                                    sizeof(text)), "256K");
        assert_string_equal(sfs_option_default_text(opt("staging-ttl"), text, sizeof(text)),
                            "10m");
        assert_string_equal(sfs_option_default_text(opt("store"), text, sizeof(text)), "");
}

static void test_the_largest_snapshot_a_daemon_serves_is_what_clients_accept_by_default(
        void **state)
{
        (void)state;
        assert_true(SFS_MAX_SNAPSHOT_SIZE_LIMIT == SNAPFS_DEFAULT_MAX_SIZE);
        assert_true(sfs_options[SFS_OPT_MAX_SNAPSHOT_SIZE].max == SNAPFS_DEFAULT_MAX_SIZE);
}

static void test_a_value_outside_its_grammar_or_range_is_refused_with_the_common_message(
        void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(set(&cfg, "max-bytes", "12Q"), -EINVAL);
        assert_string_equal(why, "invalid size '12Q': expected digits with an optional K, M "
                                 "or G suffix (binary units: 4096, 256K, 64M, 1G)");
        assert_int_equal(set(&cfg, "max-snapshot-size", "2G"), -ERANGE);
        assert_string_equal(why, "invalid size '2G': out of range (1 to 1G)");
        assert_int_equal(set(&cfg, "max-snapshots", "0"), -ERANGE);
        assert_int_equal(set(&cfg, "readers", "007"), -EINVAL);
        assert_true(!cfg.tree.readers.any && cfg.tree.readers.n == 0 &&
                    cfg.tree.max_bytes == 64ULL << 20 && cfg.given == 0);
        /* The allowance: the same options with values that hold. */
        assert_int_equal(set(&cfg, "max-bytes", "1G"), 0);
        assert_int_equal(set(&cfg, "max-snapshot-size", "1G"), 0);
        assert_int_equal(set(&cfg, "readers", "7,0"), 0);
        assert_true(cfg.tree.max_bytes == 1ULL << 30 && !cfg.tree.readers.any &&
                    cfg.tree.readers.n == 2);
        assert_true(cfg.given == ((1ULL << SFS_OPT_MAX_BYTES) |
                                  (1ULL << SFS_OPT_MAX_SNAPSHOT_SIZE) |
                                  (1ULL << SFS_OPT_READERS)));
}

static void test_a_flag_is_set_bare_or_by_yes_and_cleared_by_no(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(set(&cfg, "allow-other", NULL), 0);
        assert_true(cfg.allow_other);
        assert_int_equal(set(&cfg, "allow-other", "no"), 0);
        assert_false(cfg.allow_other);
        assert_int_equal(set(&cfg, "read-only", "yes"), 0);
        assert_true(cfg.tree.read_only);
        assert_int_equal(set(&cfg, "read-only", "true"), -EINVAL);
        assert_string_equal(why, "invalid flag 'true': expected yes or no");
        assert_true(cfg.tree.read_only);
}

static void test_trust_keys_add_up_to_their_bound(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        for (int i = 0; i < SFS_TRUST_KEYS_MAX; i++)
                assert_int_equal(set(&cfg, "trust-key", "k.pub"), 0);
        assert_int_equal(cfg.n_trust_keys, SFS_TRUST_KEYS_MAX);
        assert_int_equal(set(&cfg, "trust-key", "k.pub"), -E2BIG);
        assert_int_equal(cfg.n_trust_keys, SFS_TRUST_KEYS_MAX);
        assert_int_equal(set(&cfg, "store", ""), -EINVAL);
        assert_null(cfg.store);
}

static void test_a_snapshot_limit_above_the_byte_limit_is_refused_naming_both(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(set(&cfg, "max-bytes", "100K"), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "--max-snapshot-size (256K by default) is larger than "
                                 "--max-bytes 100K: they cannot both hold");
        assert_int_equal(set(&cfg, "max-snapshot-size", "1M"), 0);
        assert_int_equal(set(&cfg, "max-bytes", "1K"), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "--max-snapshot-size 1M is larger than --max-bytes 1K: "
                                 "they cannot both hold");
        /* The allowance: the other way round. */
        assert_int_equal(set(&cfg, "max-bytes", "1M"), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), 0);
}

static void test_a_read_view_needs_every_uid_to_be_a_reader(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(set(&cfg, "read-view", "/run/v"), 0);
        /* The default readers are the owner and root: the view is an explicit choice. */
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), -EINVAL);
        assert_non_null(strstr(why, "--readers any"));
        assert_int_equal(set(&cfg, "readers", "0"), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), -EINVAL);
        assert_non_null(strstr(why, "--read-view"));
        assert_non_null(strstr(why, "--readers"));
        assert_int_equal(set(&cfg, "readers", "any"), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), 0);
}

static void test_one_atime_mode_and_the_flags_become_mount_attributes(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(set(&cfg, "noatime", NULL), 0);
        assert_int_equal(set(&cfg, "relatime", NULL), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "--noatime and --relatime cannot both hold");
        assert_int_equal(set(&cfg, "relatime", "no"), 0);
        assert_int_equal(set(&cfg, "nosymfollow", NULL), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), 0);
        assert_true(cfg.mount_attr_set == (MOUNT_ATTR_NOATIME | MOUNT_ATTR_NOSYMFOLLOW));
        assert_true(cfg.mount_attr_clr == MOUNT_ATTR__ATIME);
}

static void test_finishing_derives_foreground_from_debug_and_the_per_uid_limits(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(set(&cfg, "debug", NULL), 0);
        assert_int_equal(sfs_daemon_config_finish(&cfg, why, sizeof(why)), 0);
        assert_true(cfg.foreground);
        assert_true(cfg.tree.max_uid_snapshots == 1024);
        assert_true(cfg.tree.max_staging_bytes == 16 << 20);
}

static void test_derived_limits_are_a_quarter_of_the_totals(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 256 << 10,
                .max_bytes = 64 << 20,
                .max_snapshots = 4096,
        };

        (void)state;
        sfs_tree_config_derive(&cfg);
        assert_int_equal(cfg.max_staging_bytes, 16 << 20);
        assert_int_equal(cfg.max_uid_bytes, 16 << 20);
        assert_int_equal(cfg.max_uid_snapshots, 1024);
}

static void test_derived_byte_limits_hold_at_least_one_largest_snapshot(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 1 << 20,
                .max_bytes = 2 << 20,
                .max_snapshots = 3,
        };

        (void)state;
        sfs_tree_config_derive(&cfg);
        assert_int_equal(cfg.max_staging_bytes, 1 << 20);
        assert_int_equal(cfg.max_uid_bytes, 1 << 20);
        /* A quarter of 3 is 0: every uid may still hold one. */
        assert_int_equal(cfg.max_uid_snapshots, 1);
}

static void test_limits_given_are_never_derived(void **state)
{
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 256 << 10,
                .max_bytes = 64 << 20,
                .max_snapshots = 4096,
                .max_staging_bytes = 4096,
                .max_uid_snapshots = 7,
                .max_uid_bytes = 8192,
        };

        (void)state;
        sfs_tree_config_derive(&cfg);
        assert_int_equal(cfg.max_staging_bytes, 4096);
        assert_int_equal(cfg.max_uid_snapshots, 7);
        assert_int_equal(cfg.max_uid_bytes, 8192);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_row_of_the_table_is_in_place_and_whole),
                cmocka_unit_test(test_an_option_is_found_by_its_exact_name_or_its_o_spelling),
                cmocka_unit_test(test_the_defaults_of_a_new_config_are_the_table_s),
                cmocka_unit_test(test_the_largest_snapshot_a_daemon_serves_is_what_clients_accept_by_default),
                cmocka_unit_test(test_a_value_outside_its_grammar_or_range_is_refused_with_the_common_message),
                cmocka_unit_test(test_a_flag_is_set_bare_or_by_yes_and_cleared_by_no),
                cmocka_unit_test(test_trust_keys_add_up_to_their_bound),
                cmocka_unit_test(test_a_snapshot_limit_above_the_byte_limit_is_refused_naming_both),
                cmocka_unit_test(test_a_read_view_needs_every_uid_to_be_a_reader),
                cmocka_unit_test(test_one_atime_mode_and_the_flags_become_mount_attributes),
                cmocka_unit_test(test_finishing_derives_foreground_from_debug_and_the_per_uid_limits),
                cmocka_unit_test(test_derived_limits_are_a_quarter_of_the_totals),
                cmocka_unit_test(test_derived_byte_limits_hold_at_least_one_largest_snapshot),
                cmocka_unit_test(test_limits_given_are_never_derived),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
