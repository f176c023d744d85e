/* SPDX-License-Identifier: MIT */
/* The daemon's decisions, driven without a mount: publish protocol, refusals and errnos,
 * limits and policy. The integration tests repeat the important ones through a real mount. */
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

#include "digest.h"
#include "tree.h"

static const struct sfs_caller alice = { .uid = 1000, .gid = 1000, .pid = 11 };
static const struct sfs_caller bob = { .uid = 1001, .gid = 1001, .pid = 12 };
static const struct sfs_caller root = { .uid = 0, .gid = 0, .pid = 1 };

static struct sfs_tree_config base_config(void)
{
        return (struct sfs_tree_config){
                .max_snapshot_size = 4096,
                .max_bytes = 16384,
                .max_snapshots = 8,
                .max_staging = 3,
                .readers = { .any = true },
                .publishers = { .any = true },
                .cache_timeout = 60,
        };
}

static struct sfs_tree *new_tree(const struct sfs_tree_config *cfg)
{
        struct sfs_tree *t = NULL;
        assert_int_equal(sfs_tree_new(cfg, &t), 0);
        return t;
}

static struct sfs_node *staging_dir(struct sfs_tree *t, const struct sfs_caller *c)
{
        struct sfs_entry e;
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), ".staging", &e), 0);
        return e.node;
}

static void hex_of(const void *buf, size_t len, char hex[SNAP_DIGEST_HEX_LEN + 1])
{
        struct snap_digest d;
        assert_int_equal(snap_sha256(buf, len, &d), 0);
        snap_digest_to_hex(&d, hex);
}

/* Creates .staging/name with content and closes it; returns the node. */
static struct sfs_node *stage(struct sfs_tree *t, const struct sfs_caller *c, const char *name,
                              const void *buf, size_t len)
{
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_entry e;

        assert_int_equal(sfs_tree_create(t, c, staging_dir(t, c), name, O_WRONLY | O_CREAT | O_EXCL,
                                         &e, &h, &oi),
                         0);
        assert_true(oi.direct_io);
        if (len)
                assert_int_equal(sfs_tree_write(t, c, h, buf, len, 0), 0);
        sfs_tree_release(t, h);
        return e.node;
}

static int sfs_tree_truncate_for_test(struct sfs_tree *t, const struct sfs_caller *c,
                                      struct sfs_node *n, off_t size)
{
        struct stat attr = { .st_size = size }, st;
        double timeout;
        return sfs_tree_setattr(t, c, n, &attr, SFS_SET_SIZE, &st, &timeout);
}

static int publish(struct sfs_tree *t, const struct sfs_caller *c, const char *name,
                   const void *buf, size_t len, struct sfs_node **out)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *published = NULL;
        int r;

        stage(t, c, name, buf, len);
        hex_of(buf, len, hex);
        r = sfs_tree_rename(t, c, staging_dir(t, c), name, sfs_tree_root(t), hex, 0, &published);
        if (out)
                *out = published;
        return r;
}

struct readback {
        char buf[8192];
        size_t len;
};

static int collect(void *ctx, const void *data, size_t len)
{
        struct readback *rb = ctx;
        memcpy(rb->buf, data, len);
        rb->len = len;
        return 0;
}

static void assert_reads(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                         const char *want)
{
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct readback rb = { .len = 0 };

        assert_int_equal(sfs_tree_open(t, c, n, O_RDONLY, &h, &oi), 0);
        assert_true(oi.keep_cache);
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, strlen(want));
        assert_memory_equal(rb.buf, want, rb.len);
        sfs_tree_release(t, h);
}

static struct sfs_node *lookup_digest(struct sfs_tree *t, const struct sfs_caller *c,
                                      const char *content, int want)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_entry e = { 0 };
        hex_of(content, strlen(content), hex);
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), hex, &e), want);
        return want == 0 ? e.node : NULL;
}

static void test_publish_makes_a_mode_0000_snapshot_named_by_its_digest(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        const char *content = "{\"mcpServers\": {}}";
        struct sfs_node *n, *found;
        struct stat st;
        double timeout;

        (void)state;
        assert_int_equal(publish(t, &alice, "cfg", content, strlen(content), &n), 0);
        assert_int_equal(sfs_node_kind(n), SFS_KIND_SNAPSHOT);
        found = lookup_digest(t, &bob, content, 0);
        assert_ptr_equal(found, n); /* the kernel's node became the snapshot */
        assert_int_equal(sfs_tree_getattr(t, &bob, n, &st, &timeout), 0);
        assert_int_equal(st.st_mode, S_IFREG | 0000);
        assert_int_equal(st.st_nlink, 1);
        assert_int_equal(st.st_size, strlen(content));
        assert_int_equal(st.st_uid, alice.uid);
        assert_reads(t, &bob, n, content);
        sfs_tree_free(t);
}

static void test_rename_with_wrong_digest_publishes_nothing(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char other[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *published = NULL;
        struct sfs_entry e;

        (void)state;
        stage(t, &alice, "cfg", "real bytes", 10);
        hex_of("other bytes", 11, other);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), other, 0, &published),
                         -EBADMSG);
        assert_int_equal(sfs_tree_lookup(t, &alice, sfs_tree_root(t), other, &e), -ENOENT);
        lookup_digest(t, &alice, "real bytes", -ENOENT);
        /* The staging file is still there for its owner, and publishes under its digest. */
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "cfg", &e), 0);
        hex_of("real bytes", 10, other);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), other, 0, &published),
                         0);
        lookup_digest(t, &alice, "real bytes", 0);
        sfs_tree_free(t);
}

static void test_rename_to_a_target_that_is_not_a_digest_in_the_root_is_invalid(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char hex[SNAP_DIGEST_HEX_LEN + 1], upper[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *p = NULL;

        (void)state;
        stage(t, &alice, "cfg", "abc", 3);
        hex_of("abc", 3, hex);
        memcpy(upper, hex, sizeof(upper));
        for (char *s = upper; *s; s++)
                if (*s >= 'a' && *s <= 'f')
                        *s = (char)(*s - 32);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), "config.json", 0, &p),
                         -EINVAL);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), upper, 0, &p),
                         -EINVAL);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         staging_dir(t, &alice), hex, 0, &p),
                         -EINVAL);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), hex, 0, &p),
                         0);
        sfs_tree_free(t);
}

/* fcntl(F_SETFL) adds O_APPEND or O_DIRECT without asking the daemon; the WRITE request then
 * carries them, and gets what the create would have. */
static void test_a_write_carrying_append_or_direct_is_einval_and_plain_writes_work(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);

        (void)state;
        assert_int_equal(sfs_tree_write_flags(t, &alice, O_WRONLY | O_APPEND), -EINVAL);
        assert_int_equal(sfs_tree_write_flags(t, &alice, O_WRONLY | O_DIRECT), -EINVAL);
        assert_int_equal(sfs_tree_write_flags(t, &alice, O_WRONLY), 0);
        assert_int_equal(sfs_tree_write_flags(t, &alice, O_WRONLY | O_CLOEXEC), 0);
        sfs_tree_free(t);
}

static void test_rename_while_open_for_writing_is_busy(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *p = NULL;
        struct sfs_entry e;

        (void)state;
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "cfg", O_WRONLY, &e,
                                         &h, &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "abc", 3, 0), 0);
        hex_of("abc", 3, hex);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), hex, 0, &p),
                         -EBUSY);
        sfs_tree_release(t, h);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), hex, 0, &p),
                         0);
        sfs_tree_free(t);
}

static void test_close_then_rename_publishes_before_the_late_release(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_open_info oi;
        struct sfs_handle *h, *dup_writer;
        struct sfs_node *p = NULL;
        struct sfs_entry e;

        (void)state;
        /* close() sends FLUSH at once; RELEASE comes later, asynchronously. */
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "cfg", O_WRONLY, &e,
                                         &h, &oi),
                         0);
        assert_true(oi.flush);
        assert_int_equal(sfs_tree_write(t, &alice, h, "abc", 3, 0), 0);
        hex_of("abc", 3, hex);
        sfs_tree_flush(t, h);
        /* A second descriptor of the same open file writes again: a writer once more. */
        dup_writer = h;
        assert_int_equal(sfs_tree_write(t, &alice, dup_writer, "d", 1, 3), 0);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), hex, 0, &p),
                         -EBUSY);
        assert_int_equal(sfs_tree_truncate_for_test(t, &alice, e.node, 3), 0);
        sfs_tree_flush(t, dup_writer);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "cfg",
                                         sfs_tree_root(t), hex, 0, &p),
                         0);
        /* The late RELEASE of the handle is harmless, and it cannot write any more. */
        assert_int_equal(sfs_tree_write(t, &alice, h, "x", 1, 0), -EBADF);
        sfs_tree_release(t, h);
        assert_reads(t, &bob, p, "abc");
        sfs_tree_free(t);
}

static void test_identical_content_again_is_eexist_and_keeps_the_first_inode(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *first, *second = NULL;
        struct sfs_entry e;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "same", 4, &first), 0);
        assert_int_equal(publish(t, &bob, "b", "same", 4, &second), -EEXIST);
        assert_null(second);
        assert_ptr_equal(lookup_digest(t, &bob, "same", 0), first);
        /* Nothing changed; the staging file stays for its owner to unlink. */
        assert_int_equal(sfs_tree_lookup(t, &bob, staging_dir(t, &bob), "b", &e), 0);
        assert_int_equal(sfs_tree_unlink(t, &bob, staging_dir(t, &bob), "b"), 0);
        sfs_tree_free(t);
}

static void test_write_open_of_a_snapshot_is_erofs_and_reading_still_works(void **state)
{
        static const int bad[] = { O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_RDONLY | O_APPEND };
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *n;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "immutable", 9, &n), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(sfs_tree_open(t, &alice, n, bad[i], &h, &oi), -EROFS);
                assert_int_equal(sfs_tree_open(t, &root, n, bad[i], &h, &oi), -EROFS);
                assert_reads(t, &alice, n, "immutable");
        }
        sfs_tree_free(t);
}

static void test_setattr_and_xattr_changes_on_a_snapshot_are_erofs_for_everyone(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        static const int sets[] = { SFS_SET_SIZE, SFS_SET_MODE, SFS_SET_UID | SFS_SET_GID,
                                    SFS_SET_ATIME | SFS_SET_MTIME };
        struct stat attr = { .st_mode = 0600 }, st;
        struct sfs_node *n;
        double timeout;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "fixed", 5, &n), 0);
        for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
                assert_int_equal(sfs_tree_setattr(t, &root, n, &attr, sets[i], &st, &timeout),
                                 -EROFS);
                assert_int_equal(sfs_tree_setattr(t, &alice, n, &attr, sets[i], &st, &timeout),
                                 -EROFS);
        }
        assert_int_equal(sfs_tree_setxattr(t, &root, n, "setxattr", "user.x"), -EROFS);
        assert_int_equal(sfs_tree_setxattr(t, &alice, n, "removexattr", SFS_XATTR_SHA256),
                         -EROFS);
        assert_int_equal(sfs_tree_getattr(t, &alice, n, &st, &timeout), 0);
        assert_int_equal(st.st_mode, S_IFREG | 0000);
        assert_int_equal(st.st_size, 5);
        assert_reads(t, &alice, n, "fixed");
        sfs_tree_free(t);
}

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

static void test_unlink_is_for_the_owner_and_root_and_with_unlink_own_its_publisher(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        (void)state;
        /* Alice runs the daemon; bob publishes (the runtime publishing under the sandbox's
         * uid): by default bob cannot pull his snapshot, nor alice's, out from under her. */
        cfg.owner_uid = alice.uid;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &bob, "a", "bob's", 5, NULL), 0);
        assert_int_equal(publish(t, &alice, "b", "alice's", 7, NULL), 0);
        hex_of("bob's", 5, hex);
        assert_int_equal(sfs_tree_unlink(t, &bob, sfs_tree_root(t), hex), -EPERM);
        lookup_digest(t, &bob, "bob's", 0);
        assert_int_equal(sfs_tree_unlink(t, &alice, sfs_tree_root(t), hex), 0);
        lookup_digest(t, &bob, "bob's", -ENOENT);
        hex_of("alice's", 7, hex);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), hex), 0);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), ".staging"), -EPERM);
        sfs_tree_free(t);

        /* With unlink_own a publisher removes its own, still not another's. */
        cfg.unlink_own = true;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &bob, "a", "bob's", 5, NULL), 0);
        assert_int_equal(publish(t, &alice, "b", "alice's", 7, NULL), 0);
        hex_of("alice's", 7, hex);
        assert_int_equal(sfs_tree_unlink(t, &bob, sfs_tree_root(t), hex), -EPERM);
        lookup_digest(t, &bob, "alice's", 0);
        hex_of("bob's", 5, hex);
        assert_int_equal(sfs_tree_unlink(t, &bob, sfs_tree_root(t), hex), 0);
        lookup_digest(t, &bob, "bob's", -ENOENT);
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
        cfg.publishers = (struct sfs_uidset){ .any = false }; /* no --publishers */
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

static void test_unlinked_snapshot_stays_readable_and_republish_gets_a_new_inode(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *n, *again;
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct readback rb = { .len = 0 };
        struct stat st;
        double timeout;
        uint64_t old_ino;

        (void)state;
        cfg.unlink_own = true; /* alice removes her own */
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "held open", 9, &n), 0);
        old_ino = sfs_node_ino(n);
        assert_int_equal(sfs_tree_open(t, &bob, n, O_RDONLY, &h, &oi), 0);
        hex_of("held open", 9, hex);
        assert_int_equal(sfs_tree_unlink(t, &alice, sfs_tree_root(t), hex), 0);
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, 9);
        assert_memory_equal(rb.buf, "held open", 9);
        assert_int_equal(sfs_tree_getattr(t, &bob, n, &st, &timeout), 0);
        assert_int_equal(st.st_nlink, 0);
        lookup_digest(t, &bob, "held open", -ENOENT);

        assert_int_equal(publish(t, &alice, "b", "held open", 9, &again), 0);
        assert_ptr_not_equal(again, n);
        assert_true(sfs_node_ino(again) > old_ino);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_limits_give_efbig_enospc_and_edquot_while_others_still_work(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        static char big[8192];
        struct sfs_open_info oi;
        struct sfs_handle *h, *hs[4];
        struct sfs_entry e;

        (void)state;
        cfg.max_bytes = 12288;
        cfg.max_staging_bytes = 12288; /* this test is about the global limit */
        t = new_tree(&cfg);
        memset(big, 'x', sizeof(big));
        /* EFBIG: one snapshot larger than max_snapshot_size (4096), even by sparse pwrite. */
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "big", O_WRONLY, &e,
                                         &h, &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &alice, h, big, 4096, 0), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h, big, 1, 4096), -EFBIG);
        assert_int_equal(sfs_tree_write(t, &alice, h, big, 1, (off_t)1 << 40), -EFBIG);
        sfs_tree_release(t, h);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "big"), 0);

        /* EDQUOT: a fourth staging file for one uid; another uid still publishes. */
        for (int i = 0; i < 3; i++) {
                char name[8];
                snprintf(name, sizeof(name), "f%d", i);
                assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), name,
                                                 O_WRONLY, &e, &hs[i], &oi),
                                 0);
        }
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "f3", O_WRONLY, &e,
                                         &hs[3], &oi),
                         -EDQUOT);
        assert_int_equal(publish(t, &bob, "ok", "bob still publishes", 19, NULL), 0);

        /* ENOSPC: 2 x 4096 staged plus bob's 19 bytes leave less than 4096 of 12288. */
        assert_int_equal(sfs_tree_write(t, &alice, hs[0], big, 4096, 0), 0);
        assert_int_equal(sfs_tree_write(t, &alice, hs[1], big, 4096, 0), 0);
        assert_int_equal(sfs_tree_write(t, &alice, hs[2], big, 4096, 0), -ENOSPC);
        /* Everyone else keeps working: a small publish fits, a reader reads. */
        assert_int_equal(publish(t, &bob, "ok2", "small", 5, NULL), 0);
        assert_reads(t, &alice, lookup_digest(t, &alice, "bob still publishes", 0),
                     "bob still publishes");
        for (int i = 0; i < 3; i++)
                sfs_tree_release(t, hs[i]);
        sfs_tree_free(t);
}

static void test_one_uid_cannot_stage_past_its_byte_quota_while_others_can(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        static char big[4096];
        struct sfs_open_info oi;
        struct sfs_handle *h[3], *hb;
        struct sfs_entry e;

        (void)state;
        cfg.max_staging_bytes = 6000;
        t = new_tree(&cfg);
        for (int i = 0; i < 2; i++) {
                char name[4] = { 'g', (char)('0' + i), 0 };
                assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), name,
                                                 O_WRONLY, &e, &h[i], &oi),
                                 0);
        }
        assert_int_equal(sfs_tree_write(t, &alice, h[0], big, 4096, 0), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h[1], big, 4096, 0), -EDQUOT);
        assert_int_equal(sfs_tree_write(t, &alice, h[1], big, 1904, 0), 0);
        /* Bob has his own quota. */
        assert_int_equal(sfs_tree_create(t, &bob, staging_dir(t, &bob), "b", O_WRONLY, &e, &hb,
                                         &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &bob, hb, big, 4096, 0), 0);
        sfs_tree_release(t, hb);
        /* Publishing moves bytes out of staging: the quota comes back. */
        sfs_tree_flush(t, h[0]);
        {
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                struct sfs_node *p = NULL;
                hex_of(big, 4096, hex);
                assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "g0",
                                                 sfs_tree_root(t), hex, 0, &p),
                                 0);
        }
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "g2", O_WRONLY, &e,
                                         &h[2], &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &alice, h[2], big, 4096, 0), 0);
        for (int i = 0; i < 3; i++)
                sfs_tree_release(t, h[i]);
        sfs_tree_free(t);
}

static void test_snapshot_count_limit_gives_enospc(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char content[16];

        (void)state;
        cfg.max_snapshots = 2;
        cfg.max_uid_snapshots = 8; /* this test is about the global limit */
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "one", 3, NULL), 0);
        assert_int_equal(publish(t, &alice, "b", "two", 3, NULL), 0);
        snprintf(content, sizeof(content), "three");
        assert_int_equal(publish(t, &alice, "c", content, 5, NULL), -ENOSPC);
        lookup_digest(t, &alice, "three", -ENOENT);
        lookup_digest(t, &alice, "one", 0);
        sfs_tree_free(t);
}

static void test_uid_past_its_snapshot_limits_gets_edquot_while_others_publish(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_node *n = NULL;
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct statvfs sv;
        struct sfs_tree *t;
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        (void)state;
        cfg.max_snapshots = 32; /* alice: 8 by default, the owner (root) keeps 2 */
        cfg.max_bytes = 1 << 20;
        t = new_tree(&cfg);
        for (int i = 0; i < 8; i++) {
                char content[16];
                snprintf(content, sizeof(content), "alice %d", i);
                assert_int_equal(publish(t, &alice, "a", content, strlen(content),
                                         i == 0 ? &n : NULL),
                                 0);
        }
        sfs_tree_statfs(t, &alice, &sv);
        assert_int_equal(sv.f_favail, 0);
        assert_int_equal(sv.f_ffree, 0);
        assert_int_equal(sv.f_bfree, ((1 << 20) - 8 * 7) / 4096);
        assert_int_equal(publish(t, &alice, "a", "one more", 8, NULL), -EDQUOT);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "a"), 0);
        /* Bob and the owner are not held by alice's count. */
        sfs_tree_statfs(t, &bob, &sv);
        assert_int_equal(sv.f_favail, 8);
        assert_int_equal(publish(t, &bob, "b", "one more", 8, NULL), 0);
        sfs_tree_statfs(t, &root, &sv);
        assert_int_equal(sv.f_favail, 32 - 9);

        /* Unlinked (by root: alice may not remove her own) while open: still alice's until
         * the descriptor goes. */
        hex_of("alice 0", 7, hex);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDONLY, &h, &oi), 0);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), hex), 0);
        assert_int_equal(publish(t, &alice, "a", "one more time", 13, NULL), -EDQUOT);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "a"), 0);
        sfs_tree_release(t, h);
        sfs_tree_forget(t, n, 1);
        sfs_tree_statfs(t, &alice, &sv);
        assert_int_equal(sv.f_favail, 1);
        assert_int_equal(publish(t, &alice, "a", "one more time", 13, NULL), 0);
        sfs_tree_free(t);
}

static void test_uid_past_its_byte_limit_gets_edquot_while_another_publishes(
        void **state)
{
        struct sfs_tree_config cfg = base_config();
        static char big[4096];
        struct sfs_tree *t;

        (void)state;
        cfg.max_bytes = 16 * 4096;  /* alice and bob: 4 x 4096 each; the owner keeps 4096 */
        cfg.max_snapshots = 64;
        cfg.max_staging_bytes = 16 * 4096;
        t = new_tree(&cfg);
        for (int i = 0; i < 4; i++) {
                memset(big, 'a' + i, sizeof(big));
                assert_int_equal(publish(t, &alice, "a", big, sizeof(big), NULL), 0);
        }
        memset(big, 'z', sizeof(big));
        assert_int_equal(publish(t, &alice, "a", big, sizeof(big), NULL), -EDQUOT);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "a"), 0);
        assert_int_equal(publish(t, &bob, "b", big, sizeof(big), NULL), 0);
        sfs_tree_free(t);
}

static void test_staging_files_unlinked_while_open_still_count_until_closed(void **state)
{
        struct sfs_tree_config cfg = base_config(); /* 3 staging files a uid */
        struct sfs_open_info oi;
        struct sfs_handle *h[4];
        struct sfs_tree_stats st;
        struct sfs_entry e;
        struct sfs_tree *t;

        (void)state;
        t = new_tree(&cfg);
        for (int i = 0; i < 3; i++) {
                char name[8];
                snprintf(name, sizeof(name), "s%d", i);
                assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), name,
                                                 O_WRONLY, &e, &h[i], &oi),
                                 0);
                assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), name), 0);
        }
        /* The attack: unlinked, but held open, they still count. */
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "s3", O_WRONLY, &e,
                                         &h[3], &oi),
                         -EDQUOT);
        sfs_tree_get_stats(t, &st);
        assert_int_equal(st.staging_files, 3);
        /* Bob is not affected; alice gets one back once one descriptor is closed. */
        assert_int_equal(sfs_tree_create(t, &bob, staging_dir(t, &bob), "s3", O_WRONLY, &e,
                                         &h[3], &oi),
                         0);
        sfs_tree_release(t, h[3]);
        assert_int_equal(sfs_tree_unlink(t, &bob, staging_dir(t, &bob), "s3"), 0);
        sfs_tree_release(t, h[0]);
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "s3", O_WRONLY, &e,
                                         &h[3], &oi),
                         0);
        for (int i = 1; i < 4; i++)
                sfs_tree_release(t, h[i]);
        sfs_tree_free(t);
}

static void test_out_of_order_writes_publish_under_the_right_digest(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char hex[SNAP_DIGEST_HEX_LEN + 1], xattr[80];
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *p = NULL;
        struct sfs_entry e;
        size_t len = 0;

        (void)state;
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "x", O_WRONLY, &e,
                                         &h, &oi),
                         0);
        /* Tail first, then a sparse gap, then the head: the running hash cannot follow. */
        assert_int_equal(sfs_tree_write(t, &alice, h, "world", 5, 6), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "hello ", 6, 0), 0);
        assert_int_equal(sfs_tree_getxattr(t, &alice, e.node, SFS_XATTR_SHA256, xattr,
                                           sizeof(xattr), &len),
                         -EBUSY);
        sfs_tree_release(t, h);
        hex_of("hello world", 11, hex);
        assert_int_equal(sfs_tree_getxattr(t, &alice, e.node, SFS_XATTR_SHA256, xattr,
                                           sizeof(xattr), &len),
                         0);
        assert_int_equal(len, 64);
        assert_memory_equal(xattr, hex, 64);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "x", sfs_tree_root(t),
                                         hex, 0, &p),
                         0);
        assert_reads(t, &alice, p, "hello world");
        sfs_tree_free(t);
}

static void test_sparse_append_keeps_the_running_hash_right(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char want[20] = "ab", hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *p = NULL;
        struct sfs_entry e;

        (void)state;
        memset(want + 2, 0, 10);
        memcpy(want + 12, "cd", 2);
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "x", O_WRONLY, &e,
                                         &h, &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "ab", 2, 0), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "cd", 2, 12), 0);
        sfs_tree_release(t, h);
        hex_of(want, 14, hex);
        assert_int_equal(sfs_tree_rename(t, &alice, staging_dir(t, &alice), "x", sfs_tree_root(t),
                                         hex, 0, &p),
                         0);
        sfs_tree_free(t);
}

static void test_staging_names_are_checked(void **state)
{
        static const char *bad[] = { ".hidden", "", "a/b", "tab\there", "new\nline",
                                     "sp ace", ("0123456789012345678901234567890123456789"
                                                "01234567890123456789012345") };
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_entry e;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), bad[i],
                                                 O_WRONLY, &e, &h, &oi),
                                 -EINVAL);
        /* 64 characters of the allowed set are fine. */
        assert_int_equal(
                sfs_tree_create(t, &alice, staging_dir(t, &alice),
                                "A-b_c.0123456789012345678901234567890123456789012345678901234567",
                                O_WRONLY, &e, &h, &oi),
                0);
        sfs_tree_release(t, h);
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
        cfg.publishers = (struct sfs_uidset){ .n = 1, .uids = { 1000 } };
        cfg.readers = (struct sfs_uidset){ .n = 2, .uids = { 1000, 0 } };
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

static void test_restored_snapshot_without_a_name_has_no_name_xattr(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct snap_digest d;
        struct sfs_node *n;
        char *data = strdup("restored"), buf[256];
        size_t len = 0;

        (void)state;
        assert_non_null(data);
        assert_int_equal(snap_sha256(data, 8, &d), 0);
        /* A title that is no staging NAME is not kept either. */
        assert_int_equal(sfs_tree_restore(t, &d, data, 8, "../not a name"), 0);
        n = lookup_digest(t, &bob, "restored", 0);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_NAME, buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_listxattr(t, &bob, n, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING));
        /* Its twin with a valid title keeps it. */
        data = strdup("named");
        assert_non_null(data);
        assert_int_equal(snap_sha256(data, 5, &d), 0);
        assert_int_equal(sfs_tree_restore(t, &d, data, 5, "cfg.json"), 0);
        n = lookup_digest(t, &bob, "named", 0);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_NAME, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, 8);
        assert_memory_equal(buf, "cfg.json", 8);
        sfs_tree_free(t);
}

static void test_counters_return_to_zero_after_everything_is_gone(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_tree_stats st;
        struct sfs_node *n, *s;

        (void)state;
        cfg.unlink_own = true; /* alice removes her own */
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "count me", 8, &n), 0);
        s = stage(t, &alice, "b", "staged", 6);
        sfs_tree_get_stats(t, &st);
        assert_int_equal(st.snapshots, 1);
        assert_int_equal(st.bytes, 8);
        assert_int_equal(st.reserved, 6);
        assert_int_equal(st.staging_files, 1);
        assert_int_equal(st.nodes, 2);
        hex_of("count me", 8, hex);
        assert_int_equal(sfs_tree_unlink(t, &alice, sfs_tree_root(t), hex), 0);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "b"), 0);
        /* Until the kernel forgets them, the nodes (and the snapshot's bytes) stay. */
        sfs_tree_get_stats(t, &st);
        assert_int_equal(st.snapshots, 0);
        assert_int_equal(st.bytes, 8);
        assert_int_equal(st.nodes, 2);
        sfs_tree_forget(t, n, 1);
        sfs_tree_forget(t, s, 1);
        sfs_tree_get_stats(t, &st);
        assert_int_equal(st.snapshots, 0);
        assert_int_equal(st.bytes, 0);
        assert_int_equal(st.reserved, 0);
        assert_int_equal(st.staging_files, 0);
        assert_int_equal(st.nodes, 0);
        sfs_tree_free(t);
}

static void test_idle_closed_staging_files_expire_and_open_ones_stay(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_tree_stats st;
        struct sfs_entry e;
        uint64_t now;

        (void)state;
        cfg.staging_ttl_ms = 1000;
        t = new_tree(&cfg);
        stage(t, &alice, "abandoned", "half a config", 13);
        assert_int_equal(sfs_tree_create(t, &bob, staging_dir(t, &bob), "writing", O_WRONLY, &e,
                                         &h, &oi),
                         0);
        assert_int_equal(sfs_tree_write(t, &bob, h, "still here", 10, 0), 0);
        now = sfs_now_ms();
        /* Not yet idle long enough: nothing goes. */
        assert_int_equal(sfs_tree_expire_staging(t, now + 500), 0);
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "abandoned", &e), 0);
        /* Past the TTL: the closed file goes, the open one stays. */
        assert_int_equal(sfs_tree_expire_staging(t, now + 5000), 1);
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "abandoned", &e),
                         -ENOENT);
        assert_int_equal(sfs_tree_lookup(t, &bob, staging_dir(t, &bob), "writing", &e), 0);
        sfs_tree_get_stats(t, &st);
        assert_int_equal(st.staging_files, 1);
        assert_int_equal(st.reserved, 10);
        sfs_tree_release(t, h);
        assert_int_equal(sfs_tree_expire_staging(t, sfs_now_ms() + 5000), 1);
        sfs_tree_free(t);
}

static void test_a_zero_ttl_never_expires_anything(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_entry e;

        (void)state;
        stage(t, &alice, "kept", "x", 1);
        assert_int_equal(sfs_tree_expire_staging(t, UINT64_MAX), 0);
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "kept", &e), 0);
        sfs_tree_free(t);
}

static void test_content_of_a_snapshot_is_its_bytes_and_staging_has_none(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *staged, *published;
        struct snap_object *ref = NULL;
        const void *data = NULL;
        uint64_t size = 0;

        (void)state;
        staged = stage(t, &alice, "other", "not yet", 7);
        assert_int_equal(sfs_tree_get_content(t, staged, &ref, &data, &size), -EINVAL);
        assert_int_equal(sfs_tree_get_content(t, sfs_tree_root(t), &ref, &data, &size), -EINVAL);
        assert_int_equal(publish(t, &alice, "cfg", "config bytes", 12, &published), 0);
        assert_int_equal(sfs_tree_get_content(t, published, &ref, &data, &size), 0);
        assert_int_equal(size, 12);
        assert_memory_equal(data, "config bytes", 12);
        sfs_tree_put_content(t, ref);
        assert_reads(t, &alice, published, "config bytes");
        sfs_tree_free(t);
}

static void test_content_is_withheld_while_a_handle_is_open(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct snap_object *ref = NULL;
        struct sfs_node *published;
        struct sfs_open_info oi;
        const void *data = NULL;
        struct sfs_handle *h;
        uint64_t size = 0;

        (void)state;
        assert_int_equal(publish(t, &alice, "cfg", "config bytes", 12, &published), 0);
        assert_int_equal(sfs_tree_open(t, &bob, published, O_RDONLY, &h, &oi), 0);
        assert_int_equal(sfs_tree_get_content(t, published, &ref, &data, &size), -EBUSY);
        sfs_tree_release(t, h);
        assert_int_equal(sfs_tree_get_content(t, published, &ref, &data, &size), 0);
        assert_memory_equal(data, "config bytes", 12);
        sfs_tree_put_content(t, ref);
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
                cmocka_unit_test(test_publish_makes_a_mode_0000_snapshot_named_by_its_digest),
                cmocka_unit_test(test_rename_with_wrong_digest_publishes_nothing),
                cmocka_unit_test(test_rename_to_a_target_that_is_not_a_digest_in_the_root_is_invalid),
                cmocka_unit_test(test_a_write_carrying_append_or_direct_is_einval_and_plain_writes_work),
                cmocka_unit_test(test_rename_while_open_for_writing_is_busy),
                cmocka_unit_test(test_close_then_rename_publishes_before_the_late_release),
                cmocka_unit_test(test_identical_content_again_is_eexist_and_keeps_the_first_inode),
                cmocka_unit_test(test_write_open_of_a_snapshot_is_erofs_and_reading_still_works),
                cmocka_unit_test(test_setattr_and_xattr_changes_on_a_snapshot_are_erofs_for_everyone),
                cmocka_unit_test(test_link_symlink_mknod_mkdir_rmdir_are_eperm),
                cmocka_unit_test(test_another_uids_staging_file_is_invisible),
                cmocka_unit_test(test_unlink_is_for_the_owner_and_root_and_with_unlink_own_its_publisher),
                cmocka_unit_test(test_default_publishers_are_the_owner_and_root),
                cmocka_unit_test(test_unlinked_snapshot_stays_readable_and_republish_gets_a_new_inode),
                cmocka_unit_test(test_limits_give_efbig_enospc_and_edquot_while_others_still_work),
                cmocka_unit_test(test_one_uid_cannot_stage_past_its_byte_quota_while_others_can),
                cmocka_unit_test(test_snapshot_count_limit_gives_enospc),
                cmocka_unit_test(test_uid_past_its_snapshot_limits_gets_edquot_while_others_publish),
                cmocka_unit_test(test_uid_past_its_byte_limit_gets_edquot_while_another_publishes),
                cmocka_unit_test(test_staging_files_unlinked_while_open_still_count_until_closed),
                cmocka_unit_test(test_out_of_order_writes_publish_under_the_right_digest),
                cmocka_unit_test(test_sparse_append_keeps_the_running_hash_right),
                cmocka_unit_test(test_staging_names_are_checked),
                cmocka_unit_test(test_reader_and_publisher_policies_refuse_with_eacces),
                cmocka_unit_test(test_binding_xattr_names_the_snapshot),
                cmocka_unit_test(test_restored_snapshot_without_a_name_has_no_name_xattr),
                cmocka_unit_test(test_counters_return_to_zero_after_everything_is_gone),
                cmocka_unit_test(test_idle_closed_staging_files_expire_and_open_ones_stay),
                cmocka_unit_test(test_a_zero_ttl_never_expires_anything),
                cmocka_unit_test(test_the_read_view_hides_staging_and_binds_with_its_own_dev),
                cmocka_unit_test(test_content_of_a_snapshot_is_its_bytes_and_staging_has_none),
                cmocka_unit_test(test_content_is_withheld_while_a_handle_is_open),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
