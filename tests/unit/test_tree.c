/* SPDX-License-Identifier: MIT */
/* fs/tree/tree.c: lookups, attributes and visibility: who sees what, and the refusals of link,
 * symlink, mknod, mkdir and rmdir. */
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

static void test_link_symlink_mknod_mkdir_rmdir_are_eperm(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        static const char *ops[] = { "link", "symlink", "mknod", "mkdir", "rmdir" };
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_entry e;

        (void)state;
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
                assert_int_equal(sfs_tree_refuse(t, &root, ops[i], "x", EPERM), -EPERM);
        /* Creating outside .staging/ is refused; inside it works. */
        assert_int_equal(sfs_tree_create(t, &alice, sfs_tree_root(t), "x", O_WRONLY, &e, &h, &oi),
                         -EPERM);
        assert_int_equal(
                sfs_tree_create(t, &alice, staging_dir(t, &alice), "x", O_WRONLY, &e, &h, &oi), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_another_uids_staging_file_is_invisible(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *n;
        struct sfs_entry e;
        struct stat st;
        double timeout;
        char buf[80];
        size_t len;

        (void)state;
        n = stage(t, &alice, "secret", "token", 5);
        assert_int_equal(sfs_tree_lookup(t, &bob, staging_dir(t, &bob), "secret", &e), -ENOENT);
        assert_int_equal(sfs_tree_getattr(t, &bob, n, &st, &timeout), -ENOENT);
        assert_int_equal(sfs_tree_open(t, &bob, n, O_RDONLY, &h, &oi), -ENOENT);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_SHA256, buf, sizeof(buf), &len),
                         -ENOENT);
        assert_int_equal(sfs_tree_unlink(t, &bob, staging_dir(t, &bob), "secret"), -ENOENT);
        /* Bob's own file of the same name is his, and Alice's is untouched. */
        stage(t, &bob, "secret", "other", 5);
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "secret", &e), 0);
        assert_ptr_equal(e.node, n);
        assert_int_equal(sfs_tree_getattr(t, &alice, n, &st, &timeout), 0);
        assert_int_equal(st.st_mode, S_IFREG | 0200);
        assert_int_equal(st.st_size, 5);
        sfs_tree_free(t);
}

static void test_default_publishers_are_the_owner_and_root(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *n;
        struct sfs_entry e;

        (void)state;
        cfg.owner_uid = alice.uid;
        cfg.publishers = (struct value_uid_list){ .any = false }; /* no --publishers */
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "owner's", 7, &n), 0);
        assert_int_equal(publish(t, &root, "b", "root's", 6, NULL), 0);
        /* Bob still reads what was published. */
        assert_reads(t, &bob, n, "owner's");
        assert_int_equal(sfs_tree_create(t, &bob, staging_dir(t, &alice), "r", O_WRONLY, &e, &h,
                                         &oi),
                         -EACCES);
        sfs_tree_free(t);
}

static void test_reader_and_publisher_policies_refuse_with_eacces(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *n;
        struct sfs_entry e;

        (void)state;
        cfg.publishers = (struct value_uid_list){ .n = 1, .uids = { 1000 } };
        cfg.readers = (struct value_uid_list){ .n = 2, .uids = { 1000, 0 } };
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "policy", 6, &n), 0);
        assert_int_equal(sfs_tree_lookup(t, &bob, sfs_tree_root(t), ".staging", &e), -EACCES);
        assert_int_equal(sfs_tree_open(t, &bob, n, O_RDONLY, &h, &oi), -EACCES);
        assert_int_equal(sfs_tree_lookup(t, &bob, sfs_tree_root(t), "x", &e), -EACCES);
        assert_reads(t, &alice, n, "policy");
        assert_reads(t, &root, n, "policy");
        assert_int_equal(sfs_tree_create(t, &root, staging_dir(t, &alice), "r", O_WRONLY, &e, &h,
                                         &oi),
                         -EACCES);
        sfs_tree_free(t);
}

static int count_entry(void *ctx, const char *name, uint64_t ino, mode_t mode, off_t next)
{
        (void)ino, (void)mode, (void)next;
        if (strcmp(name, ".staging") == 0)
                ++*(int *)ctx;
        return 0;
}

static void test_the_read_view_hides_staging_and_binds_with_its_own_dev(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_caller viewer = { .uid = 1001, .gid = 1001, .pid = 13, .read_view = true };
        struct readback rb = { .len = 0 };
        struct sfs_tree *t;
        struct sfs_node *n, *staged;
        struct sfs_entry e;
        struct sfs_dir *d;
        char buf[256];
        size_t len = 0;
        int seen = 0;

        (void)state;
        t = new_tree(&cfg);
        sfs_tree_set_dev(t, makedev(0, 50), false);
        sfs_tree_set_dev(t, makedev(0, 51), true);
        assert_int_equal(publish(t, &alice, "a", "view me", 7, &n), 0);
        staged = stage(t, &alice, "b", "staged", 6);
        assert_int_equal(sfs_tree_lookup(t, &viewer, sfs_tree_root(t), ".staging", &e), -ENOENT);
        assert_int_equal(sfs_tree_opendir(t, &viewer, sfs_tree_root(t), &d), 0);
        sfs_tree_readdir(t, d, 0, count_entry, &seen);
        sfs_tree_releasedir(t, d);
        assert_int_equal(seen, 0);
        assert_int_equal(sfs_tree_getxattr(t, &viewer, n, SFS_XATTR_BINDING, buf, sizeof(buf),
                                           &len),
                         0);
        assert_non_null(memmem(buf, len, " dev=0:51 ", 10));
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_BINDING, buf, sizeof(buf), &len),
                         0);
        assert_non_null(memmem(buf, len, " dev=0:50 ", 10));
        /* Reads without a handle: snapshots only. */
        assert_int_equal(sfs_tree_read_node(t, n, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, 7);
        assert_memory_equal(rb.buf, "view me", 7);
        assert_int_equal(sfs_tree_read_node(t, staged, sizeof(rb.buf), 0, collect, &rb), -EBADF);
        /* The main mount still lists .staging. */
        seen = 0;
        assert_int_equal(sfs_tree_opendir(t, &bob, sfs_tree_root(t), &d), 0);
        sfs_tree_readdir(t, d, 0, count_entry, &seen);
        sfs_tree_releasedir(t, d);
        assert_int_equal(seen, 1);
        sfs_tree_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_link_symlink_mknod_mkdir_rmdir_are_eperm),
                cmocka_unit_test(test_another_uids_staging_file_is_invisible),
                cmocka_unit_test(test_default_publishers_are_the_owner_and_root),
                cmocka_unit_test(test_reader_and_publisher_policies_refuse_with_eacces),
                cmocka_unit_test(test_the_read_view_hides_staging_and_binds_with_its_own_dev),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
