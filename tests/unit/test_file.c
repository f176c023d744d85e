/* SPDX-License-Identifier: MIT */
/* fs/tree/file.c: opening, reading, writing, truncating, unlinking and expiring files, and the
 * refusals of each beside what still works. */
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
        assert_int_equal(sfs_tree_setxattr(t, &root, n, "setxattr", "user.x", "v", 1), -EROFS);
        assert_int_equal(sfs_tree_setxattr(t, &alice, n, "removexattr", SFS_XATTR_SHA256, NULL, 0),
                         -EROFS);
        assert_int_equal(sfs_tree_getattr(t, &alice, n, &st, &timeout), 0);
        assert_int_equal(st.st_mode, S_IFREG | 0000);
        assert_int_equal(st.st_size, 5);
        assert_reads(t, &alice, n, "fixed");
        sfs_tree_free(t);
}

static void test_unlink_is_for_the_owner_and_root_and_with_unlink_own_its_holder(void **state)
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

        /* With unlink_own a holder removes what only it holds, still not another's. */
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

static void usage_of(struct sfs_tree *t, uid_t uid, char *line, size_t size)
{
        char buf[SFS_USAGE_MAX + 1], want[32];
        size_t len = 0;
        char *at;

        assert_int_equal(sfs_tree_getxattr(t, &root, sfs_tree_root(t), SFS_XATTR_USAGE, buf,
                                           sizeof(buf) - 1, &len),
                         0);
        buf[len] = '\0';
        snprintf(want, sizeof(want), "uid=%u ", (unsigned)uid);
        at = strstr(buf, want);
        snprintf(line, size, "%.*s", at ? (int)strcspn(at, "\n") : 0, at ? at : "");
}

static void test_with_unlink_own_a_holder_drops_its_hold_and_the_last_one_removes_it(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        char hex[SNAP_DIGEST_HEX_LEN + 1], line[160];
        struct sfs_node *n;

        (void)state;
        /* The attack: bob (a sandbox) pre-publishes the runtime's predictable config, the
         * runtime (alice) publishes the same bytes ("already published"), bob removes it. */
        cfg.owner_uid = 4000;
        cfg.unlink_own = true;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &bob, "a", "predictable", 11, NULL), 0);
        assert_int_equal(publish(t, &alice, "b", "predictable", 11, NULL), -EEXIST);
        hex_of("predictable", 11, hex);
        assert_int_equal(sfs_tree_unlink(t, &bob, sfs_tree_root(t), hex), 0);
        /* Only bob's hold went: alice still reads what she published. */
        n = lookup_digest(t, &alice, "predictable", 0);
        assert_reads(t, &alice, n, "predictable");
        usage_of(t, bob.uid, line, sizeof(line));
        assert_string_equal(line, "");
        usage_of(t, alice.uid, line, sizeof(line));
        assert_string_equal(line, "uid=1000 snapshots=1 bytes=11 staging=1 staging-bytes=11");
        /* bob holds nothing on it now: EPERM, as for any uid holding nothing. */
        assert_int_equal(sfs_tree_unlink(t, &bob, sfs_tree_root(t), hex), -EPERM);
        lookup_digest(t, &alice, "predictable", 0);
        /* The last hold goes: the snapshot with it. */
        assert_int_equal(sfs_tree_unlink(t, &alice, sfs_tree_root(t), hex), 0);
        lookup_digest(t, &alice, "predictable", -ENOENT);
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

static void test_staging_files_unlinked_while_open_still_count_until_closed(void **state)
{
        struct sfs_tree_config cfg = base_config(); /* 3 staging files a uid */
        struct sfs_open_info oi;
        struct sfs_handle *h[4];
        struct tree_stats st;
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
        get_stats(t, &st);
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

static void test_idle_closed_staging_files_expire_and_open_ones_stay(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct tree_stats st;
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
        get_stats(t, &st);
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

/* ---- guards of open and read ---- */

static void test_a_write_open_while_a_rename_hashes_is_ebusy_and_a_read_open_works(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_tree *t;
        struct sfs_node *n;

        (void)state;
        t = new_tree(&cfg);
        n = stage(t, &alice, "cfg", "bytes", 5);
        hold_publishing(n, true);
        /* Bytes written now would not be the bytes hashed. */
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY, &h, &oi), -EBUSY);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDWR, &h, &oi), -EBUSY);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDONLY | O_TRUNC, &h, &oi), -EBUSY);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDONLY, &h, &oi), 0);
        sfs_tree_release(t, h);
        hold_publishing(n, false);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY, &h, &oi), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_opening_a_directory_is_eisdir_and_a_snapshot_opens(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_open_info oi;
        struct sfs_handle *h = NULL;
        struct sfs_tree *t;
        struct sfs_node *n;

        (void)state;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "file", 4, &n), 0);
        assert_int_equal(sfs_tree_open(t, &alice, sfs_tree_root(t), O_RDONLY, &h, &oi),
                         -EISDIR);
        assert_int_equal(sfs_tree_open(t, &alice, staging_dir(t, &alice), O_RDONLY, &h, &oi),
                         -EISDIR);
        assert_null(h);
        assert_reads(t, &bob, n, "file");
        sfs_tree_free(t);
}

/* A reply callback that must not be called. */
static int must_not_reply(void *ctx, const void *data, size_t len)
{
        (void)data, (void)len;
        ++*(int *)ctx;
        return 0;
}

static void test_a_read_at_a_negative_offset_is_einval_and_at_zero_reads(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct readback rb = { .len = 0 };
        struct sfs_open_info oi;
        struct sfs_handle *h, *sh;
        struct sfs_tree *t;
        struct sfs_node *n, *staged;
        int replies = 0;

        (void)state;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "snapshot", 8, &n), 0);
        staged = stage(t, &alice, "b", "staged", 6);
        assert_int_equal(sfs_tree_open(t, &bob, n, O_RDONLY, &h, &oi), 0);
        assert_int_equal(sfs_tree_open(t, &alice, staged, O_RDONLY, &sh, &oi), 0);
        assert_int_equal(sfs_tree_read(t, h, 8, -1, must_not_reply, &replies), -EINVAL);
        assert_int_equal(sfs_tree_read(t, sh, 6, -1, must_not_reply, &replies), -EINVAL);
        assert_int_equal(replies, 0);
        assert_int_equal(sfs_tree_read(t, h, 8, 0, collect, &rb), 0);
        assert_int_equal(rb.len, 8);
        assert_memory_equal(rb.buf, "snapshot", 8);
        assert_int_equal(sfs_tree_read(t, sh, 6, 0, collect, &rb), 0);
        assert_memory_equal(rb.buf, "staged", 6);
        sfs_tree_release(t, h);
        sfs_tree_release(t, sh);
        sfs_tree_free(t);
}

static void test_a_read_without_a_handle_at_a_negative_offset_is_einval(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct readback rb = { .len = 0 };
        struct sfs_tree *t;
        struct sfs_node *n, *staged;
        int replies = 0;

        (void)state;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "viewed", 6, &n), 0);
        staged = stage(t, &alice, "b", "staged", 6);
        /* The read view's reads carry no handle: the node alone. */
        assert_int_equal(sfs_tree_read_node(t, n, 6, -1, must_not_reply, &replies), -EINVAL);
        assert_int_equal(sfs_tree_read_node(t, staged, 6, 0, must_not_reply, &replies),
                         -EBADF);
        assert_int_equal(replies, 0);
        assert_int_equal(sfs_tree_read_node(t, n, 6, 0, collect, &rb), 0);
        assert_int_equal(rb.len, 6);
        assert_memory_equal(rb.buf, "viewed", 6);
        sfs_tree_free(t);
}

/* ---- guards of staging files: each refusal beside what still works ---- */

static void test_opening_a_staging_file_after_losing_the_publisher_role_is_eacces(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *mine = stage(t, &alice, "a", "bytes", 5);
        struct sfs_node *roots = stage(t, &root, "r", "bytes", 5);
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        revoke_publishers(t);
        assert_int_equal(sfs_tree_open(t, &alice, mine, O_RDONLY, &h, &oi), -EACCES);
        assert_int_equal(sfs_tree_open(t, &root, roots, O_RDONLY, &h, &oi), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_opening_a_staging_file_to_append_or_direct_is_einval(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n = stage(t, &alice, "a", "bytes", 5);
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY | O_APPEND, &h, &oi), -EINVAL);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY | O_DIRECT, &h, &oi), -EINVAL);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY, &h, &oi), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_create_under_a_snapshot_is_enotdir_and_under_staging_works(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_handle *h = NULL;
        struct sfs_open_info oi;
        struct sfs_entry e;
        struct sfs_node *n;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "file", 4, &n), 0);
        assert_int_equal(sfs_tree_create(t, &alice, n, "x", O_WRONLY | O_CREAT, &e, &h, &oi),
                         -ENOTDIR);
        assert_null(h);
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "x",
                                         O_WRONLY | O_CREAT, &e, &h, &oi),
                         0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_creating_a_staged_name_again_is_eexist_and_another_uid_may(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_handle *h = NULL;
        struct sfs_open_info oi;
        struct sfs_entry e;

        (void)state;
        stage(t, &alice, "same", "bytes", 5);
        assert_int_equal(sfs_tree_create(t, &alice, staging_dir(t, &alice), "same",
                                         O_WRONLY | O_CREAT | O_EXCL, &e, &h, &oi),
                         -EEXIST);
        assert_null(h);
        /* Staging names are per uid. */
        assert_int_equal(sfs_tree_create(t, &bob, staging_dir(t, &bob), "same",
                                         O_WRONLY | O_CREAT | O_EXCL, &e, &h, &oi),
                         0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_read_and_write_without_a_handle_are_ebadf(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n = stage(t, &alice, "a", "bytes", 5);
        struct sfs_open_info oi;
        struct sfs_handle *rh, *wh;
        int replies = 0;

        (void)state;
        assert_int_equal(sfs_tree_read(t, NULL, 5, 0, must_not_reply, &replies), -EBADF);
        assert_int_equal(sfs_tree_write(t, &alice, NULL, "x", 1, 0), -EBADF);
        assert_int_equal(replies, 0);
        /* A read-only handle is no handle to write through. */
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDONLY, &rh, &oi), 0);
        assert_int_equal(sfs_tree_write(t, &alice, rh, "x", 1, 0), -EBADF);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY, &wh, &oi), 0);
        assert_int_equal(sfs_tree_write(t, &alice, wh, "B", 1, 0), 0);
        sfs_tree_release(t, wh);
        sfs_tree_release(t, rh);
        assert_int_equal(truncate_to(t, &alice, n, 5), 0);
        sfs_tree_free(t);
}

static void test_a_write_at_a_negative_or_overflowing_offset_is_refused(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n = stage(t, &alice, "a", "", 0);
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY, &h, &oi), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "x", 1, -1), -EINVAL);
        /* off + size past 2^64: refused before any size is computed from it. */
        assert_int_equal(sfs_tree_write(t, &alice, h, "x", SIZE_MAX, INT64_MAX), -EFBIG);
        assert_int_equal(sfs_tree_write(t, &alice, h, "x", 1, 0), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_a_write_through_an_open_handle_while_a_rename_hashes_is_ebusy(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n = stage(t, &alice, "a", "bytes", 5);
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        /* Opened before the rename began, so the open's own EBUSY never saw it. */
        assert_int_equal(sfs_tree_open(t, &alice, n, O_WRONLY, &h, &oi), 0);
        hold_publishing(n, true);
        assert_int_equal(sfs_tree_write(t, &alice, h, "X", 1, 0), -EBUSY);
        hold_publishing(n, false);
        assert_int_equal(sfs_tree_write(t, &alice, h, "B", 1, 0), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_setattr_of_a_staging_file_guards_owner_size_and_publishing(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n = stage(t, &alice, "a", "bytes", 5);
        struct stat attr = { .st_size = 2 }, st;
        double timeout;

        (void)state;
        /* Another uid's staging file does not exist for bob. */
        assert_int_equal(sfs_tree_setattr(t, &bob, n, &attr, SFS_SET_SIZE, &st, &timeout),
                         -ENOENT);
        attr.st_size = -1;
        assert_int_equal(sfs_tree_setattr(t, &alice, n, &attr, SFS_SET_SIZE, &st, &timeout),
                         -EINVAL);
        attr.st_size = 2;
        hold_publishing(n, true);
        assert_int_equal(sfs_tree_setattr(t, &alice, n, &attr, SFS_SET_SIZE, &st, &timeout),
                         -EBUSY);
        hold_publishing(n, false);
        assert_int_equal(sfs_tree_setattr(t, &alice, n, &attr, SFS_SET_SIZE, &st, &timeout), 0);
        assert_int_equal(st.st_size, 2);
        sfs_tree_free(t);
}

static void test_unlinking_a_staging_file_while_a_rename_hashes_is_ebusy(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct sfs_node *n = stage(t, &alice, "a", "bytes", 5);
        struct sfs_entry e;

        (void)state;
        hold_publishing(n, true);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "a"), -EBUSY);
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "a", &e), 0);
        hold_publishing(n, false);
        assert_int_equal(sfs_tree_unlink(t, &alice, staging_dir(t, &alice), "a"), 0);
        assert_int_equal(sfs_tree_lookup(t, &alice, staging_dir(t, &alice), "a", &e), -ENOENT);
        sfs_tree_free(t);
}

static void test_unlink_of_a_name_that_is_not_published_is_enoent(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *n;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "published", 9, &n), 0);
        hex_of("never published", 15, hex);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), hex), -ENOENT);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), "not-a-digest"), -ENOENT);
        hex_of("published", 9, hex);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), hex), 0);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), hex), -ENOENT);
        sfs_tree_free(t);
}

static void test_unlink_below_a_snapshot_is_enotdir(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *n;

        (void)state;
        assert_int_equal(publish(t, &alice, "a", "file", 4, &n), 0);
        hex_of("file", 4, hex);
        assert_int_equal(sfs_tree_unlink(t, &root, n, hex), -ENOTDIR);
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), hex), 0);
        sfs_tree_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_write_carrying_append_or_direct_is_einval_and_plain_writes_work),
                cmocka_unit_test(test_write_open_of_a_snapshot_is_erofs_and_reading_still_works),
                cmocka_unit_test(test_setattr_and_xattr_changes_on_a_snapshot_are_erofs_for_everyone),
                cmocka_unit_test(test_unlink_is_for_the_owner_and_root_and_with_unlink_own_its_holder),
                cmocka_unit_test(
                        test_with_unlink_own_a_holder_drops_its_hold_and_the_last_one_removes_it),
                cmocka_unit_test(test_unlinked_snapshot_stays_readable_and_republish_gets_a_new_inode),
                cmocka_unit_test(test_limits_give_efbig_enospc_and_edquot_while_others_still_work),
                cmocka_unit_test(test_one_uid_cannot_stage_past_its_byte_quota_while_others_can),
                cmocka_unit_test(test_staging_files_unlinked_while_open_still_count_until_closed),
                cmocka_unit_test(test_sparse_append_keeps_the_running_hash_right),
                cmocka_unit_test(test_staging_names_are_checked),
                cmocka_unit_test(test_idle_closed_staging_files_expire_and_open_ones_stay),
                cmocka_unit_test(test_a_zero_ttl_never_expires_anything),
                cmocka_unit_test(test_content_of_a_snapshot_is_its_bytes_and_staging_has_none),
                cmocka_unit_test(test_content_is_withheld_while_a_handle_is_open),
                cmocka_unit_test(
                        test_a_write_open_while_a_rename_hashes_is_ebusy_and_a_read_open_works),
                cmocka_unit_test(test_opening_a_directory_is_eisdir_and_a_snapshot_opens),
                cmocka_unit_test(test_a_read_at_a_negative_offset_is_einval_and_at_zero_reads),
                cmocka_unit_test(test_a_read_without_a_handle_at_a_negative_offset_is_einval),
                cmocka_unit_test(test_opening_a_staging_file_after_losing_the_publisher_role_is_eacces),
                cmocka_unit_test(test_opening_a_staging_file_to_append_or_direct_is_einval),
                cmocka_unit_test(test_create_under_a_snapshot_is_enotdir_and_under_staging_works),
                cmocka_unit_test(test_creating_a_staged_name_again_is_eexist_and_another_uid_may),
                cmocka_unit_test(test_read_and_write_without_a_handle_are_ebadf),
                cmocka_unit_test(test_a_write_at_a_negative_or_overflowing_offset_is_refused),
                cmocka_unit_test(test_a_write_through_an_open_handle_while_a_rename_hashes_is_ebusy),
                cmocka_unit_test(test_setattr_of_a_staging_file_guards_owner_size_and_publishing),
                cmocka_unit_test(test_unlinking_a_staging_file_while_a_rename_hashes_is_ebusy),
                cmocka_unit_test(test_unlink_of_a_name_that_is_not_published_is_enoent),
                cmocka_unit_test(test_unlink_below_a_snapshot_is_enotdir),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
