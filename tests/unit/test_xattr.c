/* SPDX-License-Identifier: MIT */
/* fs/xattr.c: the snapshot's digest and binding xattrs, and the root's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define _XOPEN_SOURCE_EXTENDED 1
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/ocistore.h"
#include "tests/unit/testutil.h"
#include "tests/unit/treefix.h"

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

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int keep_nothing(void *ctx, const struct snap_digest *d, void *data, size_t len,
                        const struct sfs_ocistore_meta *meta)
{
        (void)ctx, (void)d, (void)data, (void)len, (void)meta;
        return -EEXIST;
}

static void ignore_corrupt(void *ctx, const char *hex, int err)
{
        (void)ctx, (void)hex, (void)err;
}

static void ignore_warn(void *ctx, const char *hex, const char *what, int err)
{
        (void)ctx, (void)hex, (void)what, (void)err;
}

static void test_store_check_re_hashes_for_the_owner_and_root_alone(void **state)
{
        struct sfs_ocistore_hooks hooks = { keep_nothing, ignore_corrupt, ignore_warn, NULL };
        struct sfs_tree_config cfg = base_config();
        struct sfs_ocistore *os = NULL;
        struct tu_dir dir;
        struct sfs_tree *t;
        char store[300], blob[400], buf[SFS_USAGE_MAX + 1], want[200];
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        size_t len = 0;
        int fd;

        (void)state;
        assert_int_equal(tu_dir_make(&dir), 0);
        snprintf(store, sizeof(store), "%s/store", dir.path);
        assert_int_equal(sfs_ocistore_open(store, 0, &os, NULL), 0);
        assert_int_equal(sfs_ocistore_load(os, 1 << 20, &hooks), 0);
        cfg.ocistore = os;
        cfg.owner_uid = 4000;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "on disk", 7, NULL), 0);
        /* Another uid may not make the daemon read the whole store. */
        assert_int_equal(sfs_tree_getxattr(t, &alice, sfs_tree_root(t), SFS_XATTR_STORE_CHECK,
                                           buf, sizeof(buf), &len),
                         -EACCES);
        assert_int_equal(sfs_tree_getxattr(t, &root, sfs_tree_root(t), SFS_XATTR_STORE_CHECK,
                                           buf, sizeof(buf), &len),
                         0);
        assert_int_equal(len, strlen("blobs=3 intact=3 corrupt=0 missing=0 set-aside=0\n"));
        assert_memory_equal(buf, "blobs=3 intact=3 corrupt=0 missing=0 set-aside=0\n", len);
        /* Changed on disk while the daemon runs: named now, not at the next start. */
        hex_of("on disk", 7, hex);
        snprintf(blob, sizeof(blob), "%s/blobs/sha256/%s", store, hex);
        fd = open(blob, O_WRONLY);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, "0", 1, 0), 1);
        close(fd);
        assert_int_equal(sfs_tree_getxattr(t, &root, sfs_tree_root(t), SFS_XATTR_STORE_CHECK,
                                           buf, sizeof(buf), &len),
                         0);
        snprintf(want, sizeof(want), "blobs=3 intact=2 corrupt=1 missing=0 set-aside=0\n"
                                     "corrupt %s\n", hex);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(buf, want, len);
        sfs_tree_free(t);
        sfs_ocistore_close(os);
        assert_int_equal(nftw(dir.path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_root_xattrs_that_do_not_apply_are_enodata_and_usage_is_there),
                cmocka_unit_test(test_binding_xattr_names_the_snapshot),
                cmocka_unit_test(test_store_check_re_hashes_for_the_owner_and_root_alone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
