/* SPDX-License-Identifier: MIT */
/* fs/tree/publish.c: the rename that publishes, and every way it refuses. */
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
        assert_int_equal(truncate_to(t, &alice, e.node, 3), 0);
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
        assert_int_equal(sfs_tree_restore(t, &d, data, 8, "../not a name", NULL, 0, false, NULL), 0);
        n = lookup_digest(t, &bob, "restored", 0);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_NAME, buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_listxattr(t, &bob, n, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING "\0" SFS_XATTR_KIND));
        /* Its twin with a valid title keeps it. */
        data = strdup("named");
        assert_non_null(data);
        assert_int_equal(snap_sha256(data, 5, &d), 0);
        assert_int_equal(sfs_tree_restore(t, &d, data, 5, "cfg.json", NULL, 0, false, NULL), 0);
        n = lookup_digest(t, &bob, "named", 0);
        assert_int_equal(sfs_tree_getxattr(t, &bob, n, SFS_XATTR_NAME, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, 8);
        assert_memory_equal(buf, "cfg.json", 8);
        sfs_tree_free(t);
}

static void test_publishing_what_another_uid_published_makes_the_caller_a_charged_holder(
        void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_node *first = NULL, *n;
        struct sfs_tree *t;
        struct statvfs sv;

        (void)state;
        cfg.max_snapshots = 16;  /* 4 each for alice and bob */
        cfg.max_uid_snapshots = 2;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &alice, "a", "shared", 6, &first), 0);
        assert_int_equal(sfs_tree_statfs(t, &bob, &sv), 0);
        assert_int_equal(sv.f_ffree, 2);
        /* Already published: EEXIST, bob now holds it too and is charged for it... */
        assert_int_equal(publish(t, &bob, "b", "shared", 6, NULL), -EEXIST);
        assert_int_equal(sfs_tree_statfs(t, &bob, &sv), 0);
        assert_int_equal(sv.f_ffree, 1);
        /* ...once: holding it again changes nothing. */
        assert_int_equal(sfs_tree_unlink(t, &bob, staging_dir(t, &bob), "b"), 0);
        assert_int_equal(publish(t, &bob, "b", "shared", 6, NULL), -EEXIST);
        assert_int_equal(sfs_tree_statfs(t, &bob, &sv), 0);
        assert_int_equal(sv.f_ffree, 1);
        /* The snapshot is the first one, untouched. */
        n = lookup_digest(t, &bob, "shared", 0);
        assert_ptr_equal(n, first);
        sfs_tree_free(t);
}

static void test_a_hold_past_the_callers_limit_is_edquot_beside_its_own_again_eexist(
        void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;

        (void)state;
        cfg.max_snapshots = 16;
        cfg.max_uid_snapshots = 2;
        t = new_tree(&cfg);
        assert_int_equal(publish(t, &bob, "b", "bob's", 5, NULL), 0);
        assert_int_equal(publish(t, &alice, "a", "one", 3, NULL), 0);
        assert_int_equal(publish(t, &alice, "a2", "two", 3, NULL), 0);
        /* At her limit, alice may not take a hold on bob's either. */
        assert_int_equal(publish(t, &alice, "a3", "bob's", 5, NULL), -EDQUOT);
        /* What she holds already is still "already published". */
        assert_int_equal(publish(t, &alice, "a4", "one", 3, NULL), -EEXIST);
        sfs_tree_free(t);
}

static void test_statfs_is_eacces_outside_the_policies_and_answers_a_reader(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct statvfs sv;

        (void)state;
        assert_int_equal(value_parse_uid_list("1000", &cfg.readers), 0);
        assert_int_equal(value_parse_uid_list("0", &cfg.publishers), 0);
        t = new_tree(&cfg);
        assert_int_equal(sfs_tree_statfs(t, &bob, &sv), -EACCES);
        assert_int_equal(sfs_tree_statfs(t, &alice, &sv), 0);
        assert_int_equal(sv.f_files, cfg.max_snapshots);
        sfs_tree_free(t);
}

/* The registry's grant as a publish for a scope meets it: what it was asked, and its answer. */
struct grant_seen {
        int answer;
        int calls;
        char scope[SFS_STAGING_NAME_MAX + 1], entry[SFS_STAGING_NAME_MAX + 1];
        struct snap_digest d;
};

static int grant_seen(void *ctx, const struct sfs_caller *c, const char *scope,
                      const struct snap_digest *d, const char *entry)
{
        struct grant_seen *g = ctx;

        (void)c;
        g->calls++;
        snprintf(g->scope, sizeof(g->scope), "%s", scope);
        snprintf(g->entry, sizeof(g->entry), "%s", entry ? entry : "");
        g->d = *d;
        return g->answer;
}

/* Stages content as root, the mount owner, for "SCOPE" or "SCOPE/ENTRY" (put --scope), and
 * renames it to its digest: what the rename returned. */
static int publish_for(struct sfs_tree *t, const char *name, const char *content,
                       const char *target, struct sfs_node **out)
{
        struct sfs_node *n = stage(t, &root, name, content, strlen(content));
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        assert_int_equal(sfs_tree_setxattr(t, &root, n, "setxattr", SFS_XATTR_FOR_SCOPE, target,
                                           strlen(target)),
                         0);
        hex_of(content, strlen(content), hex);
        *out = NULL;
        return sfs_tree_rename(t, &root, staging_dir(t, &root), name, sfs_tree_root(t), hex, 0,
                               out);
}

static void test_a_publish_for_a_scope_is_granted_to_it_and_held_by_no_uid(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct grant_seen g = { .answer = 0 };
        struct snap_digest d;
        struct sfs_node *n;
        struct tree_stats st;

        (void)state;
        sfs_tree_set_scope_grant(t, grant_seen, &g);
        assert_int_equal(publish_for(t, "tok", "token", "sandbox/config", &n), 0);
        assert_non_null(n);
        assert_int_equal(sfs_node_kind(n), SFS_KIND_SNAPSHOT);
        assert_int_equal(g.calls, 1);
        assert_string_equal(g.scope, "sandbox");
        assert_string_equal(g.entry, "config");
        assert_int_equal(snap_sha256("token", 5, &d), 0);
        assert_true(snap_digest_equal(&g.d, &d));
        get_stats(t, &st);
        assert_int_equal(st.staging_files, 0);
        /* The owner finds it by its digest; a publisher, who holds nothing of it, does not. */
        lookup_digest(t, &root, "token", 0);
        lookup_digest(t, &alice, "token", -ENOENT);
        /* The same bytes again, for a scope: granted too, and already published (EEXIST). */
        assert_int_equal(publish_for(t, "tok2", "token", "other", &n), -EEXIST);
        assert_int_equal(g.calls, 2);
        assert_string_equal(g.scope, "other");
        assert_string_equal(g.entry, "");
        sfs_tree_free(t);
}

static void
test_a_publish_for_a_scope_without_a_registry_or_refused_keeps_its_staging_file(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t = new_tree(&cfg);
        struct grant_seen g = { .answer = -ENOENT };
        char hex[SNAP_DIGEST_HEX_LEN + 1], why[64];
        struct sfs_node *n;
        struct sfs_entry e;
        struct tree_stats st;
        size_t len;

        (void)state;
        /* No registry: nothing can grant it. */
        assert_int_equal(publish_for(t, "tok", "token", "sandbox", &n), -ENOENT);
        assert_null(n);
        lookup_digest(t, &root, "token", -ENOENT);
        /* The registry knows no such scope: nothing stays published, the file says why. */
        sfs_tree_set_scope_grant(t, grant_seen, &g);
        assert_int_equal(publish_for(t, "tok2", "token", "gone", &n), -ENOENT);
        assert_int_equal(g.calls, 1);
        lookup_digest(t, &root, "token", -ENOENT);
        get_stats(t, &st);
        assert_int_equal(st.snapshots, 0);
        assert_int_equal(st.staging_files, 2);
        assert_int_equal(sfs_tree_lookup(t, &root, staging_dir(t, &root), "tok2", &e), 0);
        assert_int_equal(sfs_tree_getxattr(t, &root, e.node, SFS_XATTR_REFUSAL, why, sizeof(why),
                                           &len),
                         0);
        assert_true(len >= 13);
        assert_memory_equal(why, "no-such-scope", 13);
        /* Granted, the same staging file publishes: the owner finds it by its digest. */
        g.answer = 0;
        hex_of("token", 5, hex);
        assert_int_equal(sfs_tree_rename(t, &root, staging_dir(t, &root), "tok2", sfs_tree_root(t),
                                         hex, 0, &n),
                         0);
        assert_int_equal(sfs_node_kind(n), SFS_KIND_SNAPSHOT);
        lookup_digest(t, &root, "token", 0);
        sfs_tree_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_publish_makes_a_mode_0000_snapshot_named_by_its_digest),
                cmocka_unit_test(test_rename_with_wrong_digest_publishes_nothing),
                cmocka_unit_test(test_rename_to_a_target_that_is_not_a_digest_in_the_root_is_invalid),
                cmocka_unit_test(test_rename_while_open_for_writing_is_busy),
                cmocka_unit_test(test_close_then_rename_publishes_before_the_late_release),
                cmocka_unit_test(test_identical_content_again_is_eexist_and_keeps_the_first_inode),
                cmocka_unit_test(test_snapshot_count_limit_gives_enospc),
                cmocka_unit_test(test_uid_past_its_snapshot_limits_gets_edquot_while_others_publish),
                cmocka_unit_test(test_uid_past_its_byte_limit_gets_edquot_while_another_publishes),
                cmocka_unit_test(test_out_of_order_writes_publish_under_the_right_digest),
                cmocka_unit_test(test_restored_snapshot_without_a_name_has_no_name_xattr),
                cmocka_unit_test(
                        test_publishing_what_another_uid_published_makes_the_caller_a_charged_holder),
                cmocka_unit_test(
                        test_a_hold_past_the_callers_limit_is_edquot_beside_its_own_again_eexist),
                cmocka_unit_test(test_statfs_is_eacces_outside_the_policies_and_answers_a_reader),
                cmocka_unit_test(test_a_publish_for_a_scope_is_granted_to_it_and_held_by_no_uid),
                cmocka_unit_test(
                        test_a_publish_for_a_scope_without_a_registry_or_refused_keeps_its_staging_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
