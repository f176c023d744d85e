/* SPDX-License-Identifier: MIT */
/* fs/tree/listing.c: directory listings and their refusals, and the counters that statfs and the
 * usage report are built from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tests/unit/treefix.h"

static void test_counters_return_to_zero_after_everything_is_gone(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct tree_stats st;
        struct sfs_node *n, *s;

        (void)state;
        cfg.unlink_own = true; /* alice removes her own */
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "count me", 8, &n), 0);
        s = stage(t, &alice, "b", "staged", 6);
        get_stats(t, &st);
        assert_int_equal(st.snapshots, 1);
        assert_int_equal(st.bytes, 8);
        assert_int_equal(st.reserved, 6);
        assert_int_equal(st.staging_files, 1);
        assert_int_equal(st.nodes, 2);
        hex_of("count me", 8, hex);
        assert_int_equal(sfs_tree_unlink(t, &alice, sfs_tree_root(t), hex), 0);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "b"), 0);
        /* Until the kernel forgets them, the nodes (and the snapshot's bytes) stay. */
        get_stats(t, &st);
        assert_int_equal(st.snapshots, 0);
        assert_int_equal(st.bytes, 8);
        assert_int_equal(st.nodes, 2);
        sfs_tree_forget(t, n, 1);
        sfs_tree_forget(t, s, 1);
        get_stats(t, &st);
        assert_int_equal(st.snapshots, 0);
        assert_int_equal(st.bytes, 0);
        assert_int_equal(st.reserved, 0);
        assert_int_equal(st.staging_files, 0);
        assert_int_equal(st.nodes, 0);
        sfs_tree_free(t);
}

static int count_entries(void *ctx, const char *name, uint64_t ino, mode_t mode, off_t next)
{
        (void)name, (void)ino, (void)mode, (void)next;
        ++*(int *)ctx;
        return 0;
}

static void test_readdir_without_a_handle_or_at_a_negative_offset_is_refused(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_dir *d;
        int entries = 0;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "listed", 6, NULL), 0);
        assert_int_equal(sfs_tree_readdir(t, NULL, 0, count_entries, &entries), -EBADF);
        assert_int_equal(sfs_tree_opendir(t, &alice, sfs_tree_root(t), &d), 0);
        assert_int_equal(sfs_tree_readdir(t, d, -1, count_entries, &entries), -EINVAL);
        assert_int_equal(entries, 0);
        /* ".", "..", ".staging" and the snapshot. */
        assert_int_equal(sfs_tree_readdir(t, d, 0, count_entries, &entries), 0);
        assert_int_equal(entries, 4);
        sfs_tree_releasedir(t, d);
        sfs_tree_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_readdir_without_a_handle_or_at_a_negative_offset_is_refused),
                cmocka_unit_test(test_counters_return_to_zero_after_everything_is_gone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
