/* SPDX-License-Identifier: MIT */
/* fs/tree/xattr.c: the snapshot's digest and binding xattrs, and the root's. */
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

#include <openssl/evp.h>

#include "fs/store/ocistore.h"
#include "snapshot/oci.h"
#include "snapshot/trust.h"
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
        assert_int_equal(len, sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING "\0" SFS_XATTR_KIND
                                     "\0" SFS_XATTR_NAME));
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

/* The kind a snapshot's bytes make it, as the one classifier decides (snapshot/kind.h). */
static void assert_kind(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                        const char *want)
{
        char buf[32];
        size_t len = 0;

        assert_int_equal(sfs_tree_getxattr(t, c, n, SFS_XATTR_KIND, NULL, 0, &len), 0);
        assert_int_equal(len, strlen(want));
        assert_int_equal(sfs_tree_getxattr(t, c, n, SFS_XATTR_KIND, buf, sizeof(buf), &len), 0);
        assert_memory_equal(buf, want, len);
}

static void test_kind_xattr_says_content_manifest_or_signature_from_the_bytes(void **state)
{
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        struct snap_oci_desc layer = { .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                       .size = 3 };
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct sfs_node *n;
        struct snap_digest md;
        EVP_PKEY *key = NULL;
        char *json, *env;
        size_t len, elen;

        (void)state;
        cfg.readers = (struct value_uid_list){ .any = false, .n = 0 }; /* bob may see, not read */
        t = new_tree(&cfg);
        snap_oci_desc_empty_config(&m.config);
        assert_int_equal(snap_sha256("abc", 3, &layer.digest), 0);
        m.n_layers = 1;
        m.layers = &layer;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_int_equal(publish(t, &root, "manifest.json", json, len, &n), 0);
        assert_kind(t, &root, n, "manifest");
        /* Not refused to a uid that may not read the content: import's names say as much. */
        assert_kind(t, &bob, n, "manifest");
        assert_int_equal(snap_oci_key_generate(&key), 0);
        assert_int_equal(snap_sha256(json, len, &md), 0);
        assert_int_equal(snap_oci_sign(key, &md, len, &env, &elen), 0);
        assert_int_equal(publish(t, &root, "signature.json", env, elen, &n), 0);
        assert_kind(t, &root, n, "signature");
        /* The same manifest text with a byte changed is no manifest: content. */
        json[len - 1] = ' ';
        assert_int_equal(publish(t, &root, "near.json", json, len, &n), 0);
        assert_kind(t, &root, n, "content");
        assert_int_equal(publish(t, &root, "cfg", "{}", 2, &n), 0);
        assert_kind(t, &root, n, "content");
        free(env);
        free(json);
        EVP_PKEY_free(key);
        sfs_tree_free(t);
}

static void test_refusal_xattr_names_the_limit_for_the_owner_and_no_other_uid(void **state)
{
        static char big[4097];
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_entry e;
        char buf[128];
        size_t len = 0;

        (void)state;
        /* Allowed: a staging file no request was refused on has no refusal. */
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "big",
                                         O_WRONLY | O_CREAT | O_EXCL, &e, &h, &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "x", 1, 0), 0);
        assert_int_equal(sfs_tree_getxattr(t, &alice, e.node, SFS_XATTR_REFUSAL, buf,
                                           sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_listxattr(t, &alice, e.node, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, sizeof(SFS_XATTR_SHA256));
        /* Refused past the snapshot size limit: the daemon says which limit, and its option. */
        assert_int_equal(sfs_tree_write(t, &alice, h, big, sizeof(big), 0), -EFBIG);
        assert_int_equal(sfs_tree_getxattr(t, &alice, e.node, SFS_XATTR_REFUSAL, buf,
                                           sizeof(buf), &len),
                         0);
        assert_int_equal(len, strlen("too-big max-snapshot-size=4096"));
        assert_memory_equal(buf, "too-big max-snapshot-size=4096", len);
        assert_int_equal(sfs_tree_listxattr(t, &alice, e.node, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_REFUSAL));
        /* Another uid cannot even see the file, let alone why it was refused. */
        assert_int_equal(sfs_tree_getxattr(t, &bob, e.node, SFS_XATTR_REFUSAL, buf,
                                           sizeof(buf), &len),
                         -ENOENT);
        /* A truncation past the limit is recorded the same way. */
        assert_int_equal(truncate_to(t, &alice, e.node, 8192), -EFBIG);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_trust_key_refusal_reason_is_kept_on_the_staging_file(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct snap_trust *trust = NULL;
        struct sfs_node *staged, *published = NULL;
        struct sfs_tree *t;
        EVP_PKEY *key = NULL;
        char hex[SNAP_DIGEST_HEX_LEN + 1], buf[128];
        size_t len = 0;

        (void)state;
        assert_int_equal(snap_trust_new(&trust), 0);
        assert_int_equal(snap_oci_key_generate(&key), 0);
        assert_int_equal(snap_trust_add_key(trust, key), 0);
        cfg.trust = trust;
        t = new_tree(&cfg);
        staged = stage(t, &alice, "cfg", "unsigned", 8);
        hex_of("unsigned", 8, hex);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), hex, 0, &published),
                         -EPERM);
        assert_int_equal(sfs_tree_getxattr(t, &alice, staged, SFS_XATTR_REFUSAL, buf,
                                           sizeof(buf), &len),
                         0);
        assert_int_equal(len, strlen(SNAP_TRUST_NOT_ADMITTED));
        assert_memory_equal(buf, SNAP_TRUST_NOT_ADMITTED, len);
        /* A rename refused for a reason the errno says (the wrong digest) adds none. */
        staged = stage(t, &alice, "other", "other", 5);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "other",
                                         sfs_tree_root(t), hex, 0, &published),
                         -EBADMSG);
        assert_int_equal(sfs_tree_getxattr(t, &alice, staged, SFS_XATTR_REFUSAL, buf,
                                           sizeof(buf), &len),
                         -ENODATA);
        sfs_tree_free(t);
        snap_trust_free(trust);
        EVP_PKEY_free(key);
}

static void test_a_scratch_staging_name_is_not_kept_as_the_snapshot_name(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n;
        char buf[128];
        size_t len = 0;

        (void)state;
        assert_int_equal(publish(t, &alice, "_lib-1-0-00ff", "anonymous", 9, &n), 0);
        assert_int_equal(sfs_tree_getxattr(t, &alice, n, SFS_XATTR_NAME, buf, sizeof(buf), &len),
                         -ENODATA);
        /* Its twin staged under a name keeps it. */
        assert_int_equal(publish(t, &alice, "lib-1-0-00ff", "named", 5, &n), 0);
        assert_int_equal(sfs_tree_getxattr(t, &alice, n, SFS_XATTR_NAME, buf, sizeof(buf), &len),
                         0);
        assert_int_equal(len, strlen("lib-1-0-00ff"));
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

static void test_store_check_re_hashes_and_repairs_for_the_owner_and_root_alone(void **state)
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
        /* The daemon holds its right bytes: rewritten from them, and said so. */
        snprintf(want, sizeof(want), "blobs=3 intact=3 corrupt=0 missing=0 set-aside=0\n"
                                     "repaired %s\n", hex);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(buf, want, len);
        fd = open(blob, O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, want, 7, 0), 7);
        close(fd);
        assert_memory_equal(want, "on disk", 7);
        /* Gone from disk: written again. */
        assert_int_equal(unlink(blob), 0);
        assert_int_equal(sfs_tree_getxattr(t, &root, sfs_tree_root(t), SFS_XATTR_STORE_CHECK,
                                           buf, sizeof(buf), &len),
                         0);
        snprintf(want, sizeof(want), "blobs=3 intact=3 corrupt=0 missing=0 set-aside=0\n"
                                     "repaired %s\n", hex);
        assert_memory_equal(buf, want, len);
        assert_int_equal(access(blob, F_OK), 0);
        sfs_tree_free(t);
        sfs_ocistore_close(os);
        assert_int_equal(nftw(dir.path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_root_xattrs_that_do_not_apply_are_enodata_and_usage_is_there),
                cmocka_unit_test(test_binding_xattr_names_the_snapshot),
                cmocka_unit_test(test_store_check_re_hashes_and_repairs_for_the_owner_and_root_alone),
                cmocka_unit_test(test_kind_xattr_says_content_manifest_or_signature_from_the_bytes),
                cmocka_unit_test(test_refusal_xattr_names_the_limit_for_the_owner_and_no_other_uid),
                cmocka_unit_test(test_trust_key_refusal_reason_is_kept_on_the_staging_file),
                cmocka_unit_test(test_a_scratch_staging_name_is_not_kept_as_the_snapshot_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
