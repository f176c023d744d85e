/* SPDX-License-Identifier: MIT */
/* fs/xattr.c: the snapshot's digest and binding xattrs, and the root's. */
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

#include "treefix.h"

static void test_binding_xattr_names_the_snapshot(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char buf[256], want[256], hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *n;
        size_t len = 0;

        (void)state;
        cfg.dev = makedev(0, 77);
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "bound", 5, &n), 0);
        hex_of("bound", 5, hex);
        snprintf(want, sizeof(want), "sha256=%s size=5 dev=0:77 ino=%llu", hex,
                 (unsigned long long)sfs_node_ino(n));
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_BINDING, NULL, 0, &len), 0);
        assert_int_equal(len, strlen(want));
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_BINDING, buf, 10, &len),
                         -ERANGE);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_BINDING, buf, sizeof(buf), &len),
                         0);
        assert_memory_equal(buf, want, len);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, "user.other", buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_listxattr(t, &bob, n, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING "\0" SFS_XATTR_NAME));
        /* The staging NAME it was published under. */
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_NAME, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, 1);
        assert_memory_equal(buf, "a", 1);
        sfs_tree_free(t);
}

static void test_root_xattrs_that_do_not_apply_are_enodata_and_usage_is_there(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_caller viewer = alice;
        struct sfs_tree *t = new_tree(&cfg);
        char buf[512];
        size_t len = 0;

        (void)state;
        viewer.read_view = true;
        /* No read view, no --store: nothing to name. */
        assert_int_equal(sfs_tree_getxattr(t, &alice, sfs_tree_root(t), SFS_XATTR_READ_VIEW,
                                           buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_getxattr(t, &alice, sfs_tree_root(t),
                                           SFS_XATTR_STORE_CORRUPT, buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_set_view_path(t, "/run/snapfs/view"), 0);
        /* Asked through the view itself: the view does not point at itself. */
        assert_int_equal(sfs_tree_getxattr(t, &viewer, sfs_tree_root(t), SFS_XATTR_READ_VIEW,
                                           buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_getxattr(t, &alice, sfs_tree_root(t), SFS_XATTR_READ_VIEW,
                                           buf, sizeof(buf), &len),
                         0);
        assert_int_equal(len, strlen("/run/snapfs/view"));
        assert_memory_equal(buf, "/run/snapfs/view", len);
        assert_int_equal(sfs_tree_getxattr(t, &alice, sfs_tree_root(t), SFS_XATTR_USAGE, buf,
                                           sizeof(buf), &len),
                         0);
        assert_true(len > 0);
        sfs_tree_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_root_xattrs_that_do_not_apply_are_enodata_and_usage_is_there),
                cmocka_unit_test(test_binding_xattr_names_the_snapshot),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
