/* SPDX-License-Identifier: MIT */
/* fs/tree/scope.c and the scope branches of the tree: a scope's view lists and opens exactly its
 * grants, entries alias and move, revokes and collection, publishing inside a scope and its
 * limits, and what the main mount shows of what only scopes reference. */
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


#include "tests/unit/treefix.h"
#include "fs/tree/scope.h"

/* carol uses the scopes; dave shares nobody's. */
static const struct sfs_caller carol = { .uid = 2000, .gid = 2000, .pid = 21 };
static const struct sfs_caller dave = { .uid = 2001, .gid = 2001, .pid = 22 };

struct fx {
        struct sfs_tree *main;
        struct sfs_tree *a, *b; /* two scopes of the same user */
};

static struct sfs_tree *scope_of(struct sfs_tree *main, const char *name, bool publish)
{
        struct sfs_scope_spec spec = { .name = name, .publish = publish };
        struct sfs_tree *t = NULL;

        spec.users.uids.n = 1;
        spec.users.uids.uids[0] = carol.uid;
        sfs_scope_default_limits(main, &spec.limits);
        assert_int_equal(sfs_tree_new_scope(main, &spec, &t), 0);
        return t;
}

static int setup(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct fx *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->main = new_tree(&cfg);
        f->a = scope_of(f->main, "sandbox-a", true);
        f->b = scope_of(f->main, "sandbox-b", true);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        /* Scope trees go first: they borrow the main tree's store. */
        sfs_tree_free(f->a);
        sfs_tree_free(f->b);
        sfs_tree_free(f->main);
        free(f);
        return 0;
}

static struct snap_digest digest(const char *text)
{
        struct snap_digest d;
        assert_int_equal(snap_sha256(text, strlen(text), &d), 0);
        return d;
}

/* Grants text's snapshot to t (under entry when not NULL); returns the effects' names. */
static int grant(struct sfs_tree *t, const char *text, const char *entry, size_t *n_names,
                 size_t *n_gone)
{
        struct sfs_scope_op op = { .kind = SFS_SCOPE_GRANT, .has_digest = true,
                                   .digest = digest(text), .entry = entry };
        struct sfs_scope_effects fx = { 0 };
        int r = sfs_scope_apply(t, &op, NULL, &fx);

        if (n_names)
                *n_names = fx.n_names;
        if (n_gone)
                *n_gone = fx.n_gone;
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        return r;
}

static int revoke(struct sfs_tree *t, const char *text, const char *entry, size_t *n_gone)
{
        struct sfs_scope_op op = { .kind = SFS_SCOPE_REVOKE, .has_digest = text != NULL,
                                   .entry = entry };
        struct sfs_scope_effects fx = { 0 };
        int r;

        if (text)
                op.digest = digest(text);
        r = sfs_scope_apply(t, &op, NULL, &fx);
        if (n_gone)
                *n_gone = fx.n_gone;
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        return r;
}

static struct sfs_node *lookup_name(struct sfs_tree *t, const struct sfs_caller *c,
                                    const char *name, int want)
{
        struct sfs_entry e = { 0 };
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), name, &e), want);
        return want == 0 ? e.node : NULL;
}

struct listing {
        size_t n;
        char names[8][SNAP_NAME_MAX + 1];
        uint64_t inos[8];
};

static int add_name(void *ctx, const char *name, uint64_t ino, mode_t mode, off_t next)
{
        struct listing *l = ctx;
        (void)mode, (void)next;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
                return 0;
        assert_true(l->n < 8);
        snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
        l->inos[l->n++] = ino;
        return 0;
}

static struct listing list_root(struct sfs_tree *t, const struct sfs_caller *c)
{
        struct listing l = { 0 };
        struct sfs_dir *d;

        assert_int_equal(sfs_tree_opendir(t, c, sfs_tree_root(t), &d), 0);
        assert_int_equal(sfs_tree_readdir(t, d, 0, add_name, &l), 0);
        sfs_tree_releasedir(t, d);
        return l;
}

static bool listed(const struct listing *l, const char *name)
{
        for (size_t i = 0; i < l->n; i++)
                if (!strcmp(l->names[i], name))
                        return true;
        return false;
}

static void test_a_view_lists_and_opens_exactly_its_grants(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1], hb[SNAP_DIGEST_HEX_LEN + 1];
        struct listing l;
        struct sfs_node *n;

        assert_int_equal(publish(f->main, &root, "a", "for a", 5, NULL), 0);
        assert_int_equal(publish(f->main, &root, "b", "for b", 5, NULL), 0);
        assert_int_equal(grant(f->a, "for a", NULL, NULL, NULL), 0);
        hex_of("for a", 5, ha);
        hex_of("for b", 5, hb);
        /* Granted: found, read, listed. Published but granted elsewhere or nowhere: absent. */
        n = lookup_name(f->a, &carol, ha, 0);
        assert_reads(f->a, &carol, n, "for a");
        lookup_name(f->a, &carol, hb, -ENOENT);
        lookup_name(f->b, &carol, ha, -ENOENT);
        l = list_root(f->a, &carol);
        assert_true(listed(&l, ha));
        assert_false(listed(&l, hb));
        assert_true(listed(&l, ".staging"));
        assert_false(listed(&l, ".control"));
        l = list_root(f->b, &carol);
        assert_int_equal(l.n, 1); /* .staging alone */
}

static void test_a_non_user_gets_eacces_a_user_and_root_get_through(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1], buf[128];
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct statvfs sv;
        struct stat st;
        struct sfs_dir *d;
        double timeout;
        struct sfs_node *n;
        size_t len;

        assert_int_equal(publish(f->main, &root, "a", "for a", 5, NULL), 0);
        assert_int_equal(grant(f->a, "for a", NULL, NULL, NULL), 0);
        hex_of("for a", 5, ha);
        n = lookup_name(f->a, &carol, ha, 0);
        lookup_name(f->a, &dave, ha, -EACCES);
        assert_int_equal(sfs_tree_getattr(f->a, &dave, n, &st, &timeout), -EACCES);
        assert_int_equal(sfs_tree_open(f->a, &dave, n, O_RDONLY, &h, &oi), -EACCES);
        assert_int_equal(sfs_tree_opendir(f->a, &dave, sfs_tree_root(f->a), &d), -EACCES);
        assert_int_equal(sfs_tree_getxattr(f->a, &dave, n, SFS_XATTR_SHA256, buf, sizeof(buf),
                                           &len),
                         -EACCES);
        assert_int_equal(sfs_tree_statfs(f->a, &dave, &sv), -EACCES);
        /* Beside them: the user, and root, which is always one. */
        assert_int_equal(sfs_tree_getattr(f->a, &carol, n, &st, &timeout), 0);
        assert_int_equal(sfs_tree_statfs(f->a, &carol, &sv), 0);
        assert_reads(f->a, &root, n, "for a");
}

static void test_a_group_names_users_by_the_callers_gid(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_spec spec = { .name = "by-group", .users = { .has_gid = true, .gid = 77 } };
        const struct sfs_caller member = { .uid = 3000, .gid = 77 }, other = { .uid = 3000, .gid = 78 };
        struct sfs_tree *t = NULL;
        struct statvfs sv;

        sfs_scope_default_limits(f->main, &spec.limits);
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), 0);
        assert_int_equal(sfs_tree_statfs(t, &member, &sv), 0);
        assert_int_equal(sfs_tree_statfs(t, &other, &sv), -EACCES);
        sfs_tree_free(t);
}

static void test_an_entry_is_an_alias_with_its_digests_node(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *by_entry, *by_digest;
        struct listing l;
        struct stat st;
        double timeout;

        assert_int_equal(publish(f->main, &root, "a", "config one", 10, NULL), 0);
        assert_int_equal(grant(f->a, "config one", "mcp.json", NULL, NULL), 0);
        hex_of("config one", 10, ha);
        by_entry = lookup_name(f->a, &carol, "mcp.json", 0);
        by_digest = lookup_name(f->a, &carol, ha, 0);
        assert_ptr_equal(by_entry, by_digest);
        assert_int_equal(sfs_tree_getattr(f->a, &carol, by_entry, &st, &timeout), 0);
        assert_int_equal(st.st_mode, S_IFREG); /* a regular file, mode 0000, not a link */
        l = list_root(f->a, &carol);
        assert_true(listed(&l, "mcp.json"));
        assert_true(listed(&l, ha));
        assert_int_equal(l.inos[l.n - 1], l.inos[l.n - 2]);
        /* An entry named like a digest, or not a name at all, is refused. */
        assert_int_equal(grant(f->a, "config one", ha, NULL, NULL), -EINVAL);
        assert_int_equal(grant(f->a, "config one", "../x", NULL, NULL), -EINVAL);
        /* Only what is published can be granted. */
        assert_int_equal(grant(f->a, "never published", NULL, NULL, NULL), -ENOENT);
}

static void test_moving_an_entry_swaps_it_and_the_old_digest_leaves_the_view(void **state)
{
        struct fx *f = *state;
        char h1[SNAP_DIGEST_HEX_LEN + 1], h2[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *old, *moved;
        size_t names, gone;

        assert_int_equal(publish(f->main, &root, "v1", "token v1", 8, NULL), 0);
        assert_int_equal(publish(f->main, &root, "v2", "token v2", 8, NULL), 0);
        hex_of("token v1", 8, h1);
        hex_of("token v2", 8, h2);
        assert_int_equal(grant(f->a, "token v1", "token", NULL, NULL), 0);
        old = lookup_name(f->a, &carol, "token", 0);
        assert_int_equal(grant(f->a, "token v2", "token", &names, &gone), 0);
        /* The entry and the digest that left are stale in the kernel; nothing collected:
         * the main mount holds both. */
        assert_int_equal(names, 2);
        assert_int_equal(gone, 0);
        moved = lookup_name(f->a, &carol, "token", 0);
        assert_ptr_not_equal(moved, old);
        assert_reads(f->a, &carol, moved, "token v2");
        lookup_name(f->a, &carol, h1, -ENOENT);
        lookup_name(f->a, &carol, h2, 0);
        /* A digest granted by itself stays when an entry moves off it. */
        assert_int_equal(grant(f->a, "token v1", NULL, NULL, NULL), 0);
        assert_int_equal(grant(f->a, "token v1", "token", NULL, NULL), 0);
        assert_int_equal(grant(f->a, "token v2", "token", NULL, NULL), 0);
        lookup_name(f->a, &carol, h1, 0);
}

static void test_a_revoked_grant_is_enoent_for_new_lookups_and_an_open_handle_reads_on(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1];
        struct readback rb = { .len = 0 };
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_node *n;
        struct stat st;
        double timeout;

        assert_int_equal(publish(f->main, &root, "a", "secret", 6, NULL), 0);
        assert_int_equal(grant(f->a, "secret", NULL, NULL, NULL), 0);
        assert_int_equal(grant(f->a, "secret", "s", NULL, NULL), 0);
        hex_of("secret", 6, ha);
        n = lookup_name(f->a, &carol, ha, 0);
        assert_int_equal(sfs_tree_open(f->a, &carol, n, O_RDONLY, &h, &oi), 0);
        /* By digest: every grant of it, its entries with it. */
        assert_int_equal(revoke(f->a, "secret", NULL, NULL), 0);
        lookup_name(f->a, &carol, ha, -ENOENT);
        lookup_name(f->a, &carol, "s", -ENOENT);
        assert_int_equal(revoke(f->a, "secret", NULL, NULL), -ENOENT);
        assert_int_equal(sfs_tree_read(f->a, h, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, 6);
        assert_memory_equal(rb.buf, "secret", 6);
        assert_int_equal(sfs_tree_getattr(f->a, &carol, n, &st, &timeout), 0);
        assert_int_equal(st.st_nlink, 0);
        sfs_tree_release(f->a, h);
        /* Still published on the main mount, which holds it. */
        lookup_digest(f->main, &bob, "secret", 0);
}

static void test_revoking_an_entry_keeps_a_digest_granted_by_itself(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1];

        assert_int_equal(publish(f->main, &root, "a", "both ways", 9, NULL), 0);
        hex_of("both ways", 9, ha);
        assert_int_equal(grant(f->a, "both ways", "name", NULL, NULL), 0);
        assert_int_equal(revoke(f->a, NULL, "name", NULL), 0);
        lookup_name(f->a, &carol, ha, -ENOENT);
        assert_int_equal(grant(f->a, "both ways", NULL, NULL, NULL), 0);
        assert_int_equal(grant(f->a, "both ways", "name", NULL, NULL), 0);
        assert_int_equal(revoke(f->a, NULL, "name", NULL), 0);
        lookup_name(f->a, &carol, "name", -ENOENT);
        lookup_name(f->a, &carol, ha, 0);
        assert_int_equal(revoke(f->a, NULL, "name", NULL), -ENOENT);
}

static void test_published_in_a_scope_it_is_that_scopes_and_the_owners_alone(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1];
        struct listing l;
        struct sfs_node *n;

        assert_int_equal(publish(f->a, &carol, "cfg", "published in a", 14, &n), 0);
        hex_of("published in a", 14, ha);
        assert_ptr_equal(lookup_name(f->a, &carol, ha, 0), n);
        assert_reads(f->a, &carol, n, "published in a");
        /* Not in the other scope of the same user, not for another uid on the main mount,
         * not in its listing; the mount owner (root) finds it by digest. */
        lookup_name(f->b, &carol, ha, -ENOENT);
        lookup_digest(f->main, &bob, "published in a", -ENOENT);
        l = list_root(f->main, &root);
        assert_false(listed(&l, ha));
        lookup_digest(f->main, &root, "published in a", 0);
}

static void test_publishing_what_another_scope_has_answers_as_for_new_content(void **state)
{
        struct fx *f = *state;
        char ha[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *in_a, *in_b;
        struct stat st;
        double timeout;
        char name[80];
        size_t len;

        assert_int_equal(publish(f->a, &carol, "first", "same bytes", 10, &in_a), 0);
        /* B cannot tell A had it: published (0), its own inode number, name and owner. */
        assert_int_equal(publish(f->b, &carol, "second", "same bytes", 10, &in_b), 0);
        assert_int_equal(sfs_node_ino(in_b), SFS_FIRST_INO); /* its first, as if A had none */
        assert_int_equal(sfs_tree_getxattr(f->b, &carol, in_b, SFS_XATTR_NAME, name,
                                           sizeof(name), &len),
                         0);
        assert_memory_equal(name, "second", 6);
        assert_int_equal(sfs_tree_getattr(f->b, &carol, in_b, &st, &timeout), 0);
        assert_int_equal(st.st_ino, sfs_node_ino(in_b));
        /* Again in the same scope: already published there. */
        assert_int_equal(publish(f->b, &carol, "third", "same bytes", 10, NULL), -EEXIST);
        hex_of("same bytes", 10, ha);
        lookup_name(f->b, &carol, ha, 0);
}

static void test_a_scopes_limits_give_edquot_and_taking_one_back_makes_room(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_spec spec = { .name = "small", .publish = true };
        struct sfs_scope_usage u;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_tree *t = NULL;

        spec.users.uids.n = 1;
        spec.users.uids.uids[0] = carol.uid;
        sfs_scope_default_limits(f->main, &spec.limits);
        spec.limits.max_snapshots = 2;
        spec.limits.max_bytes = 100;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), 0);
        assert_int_equal(publish(t, &carol, "one", "one", 3, NULL), 0);
        assert_int_equal(publish(t, &carol, "two", "two", 3, NULL), 0);
        assert_int_equal(publish(t, &carol, "three", "three", 5, NULL), -EDQUOT);
        sfs_scope_get_usage(t, &u);
        assert_int_equal(u.snapshots, 2);
        assert_int_equal(u.bytes, 6);
        /* Its own publish taken back: room for the next. */
        hex_of("one", 3, hex);
        assert_int_equal(sfs_tree_unlink(t, &carol, sfs_tree_root(t), hex), 0);
        hex_of("three", 5, hex);
        assert_int_equal(sfs_tree_rename(t, &carol, staging_dir(t, &carol), "three",
                                         sfs_tree_root(t), hex, 0, &(struct sfs_node *){ NULL }),
                         0);
        sfs_tree_free(t);
}

/* Past a scope's bytes, its count of snapshots still under its own: EDQUOT; what fits to the
 * byte still publishes beside it. */
static void test_a_scopes_byte_limit_gives_edquot_with_room_for_more_snapshots(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_spec spec = { .name = "narrow", .publish = true };
        struct sfs_scope_usage u;
        struct sfs_tree *t = NULL;

        spec.users.uids.n = 1;
        spec.users.uids.uids[0] = carol.uid;
        sfs_scope_default_limits(f->main, &spec.limits);
        spec.limits.max_snapshots = 8;
        spec.limits.max_bytes = 8;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), 0);
        assert_int_equal(publish(t, &carol, "one", "one", 3, NULL), 0);
        assert_int_equal(publish(t, &carol, "four", "four", 4, NULL), 0);
        assert_int_equal(publish(t, &carol, "xy", "xy", 2, NULL), -EDQUOT);
        /* The refused file given up (a staged byte counts too), one byte still fits. */
        assert_int_equal(sfs_tree_unlink(t, &carol, staging_dir(t, &carol), "xy"), 0);
        assert_int_equal(publish(t, &carol, "x", "x", 1, NULL), 0);
        sfs_scope_get_usage(t, &u);
        assert_int_equal(u.snapshots, 3);
        assert_int_equal(u.bytes, 8);
        sfs_tree_free(t);
}

/* A scope deleted while a file of its view's .staging/ is still being written: that file's
 * publish is EACCES and leaves nothing; before, the same view published. */
static void test_a_deleted_scopes_view_publishes_no_more(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_spec spec = { .name = "going", .publish = true };
        struct sfs_scope_usage u;
        struct sfs_node *dir;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_tree *t = NULL;

        spec.users.uids.n = 1;
        spec.users.uids.uids[0] = carol.uid;
        sfs_scope_default_limits(f->main, &spec.limits);
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), 0);
        assert_int_equal(publish(t, &carol, "before", "before", 6, NULL), 0);
        stage(t, &carol, "late", "late", 4);
        dir = staging_dir(t, &carol); /* the kernel's node for it, looked up before */
        sfs_scope_disarm(t);
        hex_of("late", 4, hex);
        assert_int_equal(sfs_tree_rename(t, &carol, dir, "late",
                                         sfs_tree_root(t), hex, 0, &(struct sfs_node *){ NULL }),
                         -EACCES);
        sfs_scope_get_usage(t, &u);
        assert_int_equal(u.snapshots, 1);
        assert_int_equal(u.bytes, 6);
        sfs_tree_free(t);
}

static void test_a_view_unlinks_only_what_it_published_itself(void **state)
{
        struct fx *f = *state;
        char granted[SNAP_DIGEST_HEX_LEN + 1], own[SNAP_DIGEST_HEX_LEN + 1];

        assert_int_equal(publish(f->main, &root, "g", "granted", 7, NULL), 0);
        assert_int_equal(grant(f->a, "granted", NULL, NULL, NULL), 0);
        assert_int_equal(grant(f->a, "granted", "cfg", NULL, NULL), 0);
        assert_int_equal(publish(f->a, &carol, "own", "its own", 7, NULL), 0);
        hex_of("granted", 7, granted);
        hex_of("its own", 7, own);
        assert_int_equal(sfs_tree_unlink(f->a, &carol, sfs_tree_root(f->a), granted), -EPERM);
        assert_int_equal(sfs_tree_unlink(f->a, &carol, sfs_tree_root(f->a), "cfg"), -EPERM);
        assert_int_equal(sfs_tree_unlink(f->a, &dave, sfs_tree_root(f->a), own), -EACCES);
        lookup_name(f->a, &carol, granted, 0);
        assert_int_equal(sfs_tree_unlink(f->a, &carol, sfs_tree_root(f->a), own), 0);
        lookup_name(f->a, &carol, own, -ENOENT);
        /* Nothing else referenced it: collected. */
        lookup_digest(f->main, &root, "its own", -ENOENT);
}

static void test_the_last_grant_of_an_unheld_snapshot_collects_it(void **state)
{
        struct fx *f = *state;
        size_t gone = 9;

        assert_int_equal(publish(f->a, &carol, "p", "scoped only", 11, NULL), 0);
        assert_int_equal(grant(f->b, "scoped only", "x", NULL, NULL), 0);
        /* Granted to b as well: a's revoke leaves it. */
        assert_int_equal(revoke(f->a, "scoped only", NULL, &gone), 0);
        assert_int_equal(gone, 0);
        lookup_digest(f->main, &root, "scoped only", 0);
        assert_int_equal(revoke(f->b, NULL, "x", &gone), 0);
        assert_int_equal(gone, 1);
        lookup_digest(f->main, &root, "scoped only", -ENOENT);
}

static void test_a_grant_keeps_what_the_owner_unlinked_on_the_main_mount(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct listing l;

        assert_int_equal(publish(f->main, &alice, "c", "runtime config", 14, NULL), 0);
        assert_int_equal(grant(f->a, "runtime config", "cfg", NULL, NULL), 0);
        hex_of("runtime config", 14, hex);
        /* The owner drops every hold: gone from the main listing and for other uids there,
         * still the scope's, and still the owner's by digest. */
        assert_int_equal(sfs_tree_unlink(f->main, &root, sfs_tree_root(f->main), hex), 0);
        lookup_digest(f->main, &alice, "runtime config", -ENOENT);
        l = list_root(f->main, &root);
        assert_false(listed(&l, hex));
        assert_reads(f->a, &carol, lookup_name(f->a, &carol, "cfg", 0), "runtime config");
        lookup_digest(f->main, &root, "runtime config", 0);
}

static void test_a_views_metadata_is_its_own_scopes(void **state)
{
        struct fx *f = *state;
        struct sfs_node *in_main, *in_a;
        char hex[SNAP_DIGEST_HEX_LEN + 1], buf[160];
        struct stat st;
        double timeout;
        size_t len;

        assert_int_equal(publish(f->main, &alice, "alices-name", "shared", 6, &in_main), 0);
        assert_int_equal(grant(f->a, "shared", NULL, NULL, NULL), 0);
        hex_of("shared", 6, hex);
        in_a = lookup_name(f->a, &carol, hex, 0);
        /* Not alice's name, nor alice as its owner, in the view. */
        assert_int_equal(sfs_tree_getxattr(f->a, &carol, in_a, SFS_XATTR_NAME, buf, sizeof(buf),
                                           &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_getattr(f->a, &carol, in_a, &st, &timeout), 0);
        assert_int_equal(st.st_uid, 0);
        /* The binding names the view's inode number. */
        assert_int_equal(sfs_tree_getxattr(f->a, &carol, in_a, SFS_XATTR_BINDING, buf,
                                           sizeof(buf), &len),
                         0);
        buf[len] = '\0';
        snprintf(hex, sizeof(hex), "ino=%llu", (unsigned long long)sfs_node_ino(in_a));
        assert_non_null(strstr(buf, hex));
        /* Beside it, the main mount shows its first publisher's. */
        assert_int_equal(sfs_tree_getxattr(f->main, &root, in_main, SFS_XATTR_NAME, buf,
                                           sizeof(buf), &len),
                         0);
        assert_memory_equal(buf, "alices-name", 11);
}

static void test_a_views_root_answers_for_its_scope_alone(void **state)
{
        struct fx *f = *state;
        char buf[512];
        struct statvfs sv;
        size_t len;

        assert_int_equal(publish(f->main, &root, "big", "main mount content", 18, NULL), 0);
        assert_int_equal(publish(f->a, &carol, "x", "abc", 3, NULL), 0);
        assert_int_equal(sfs_tree_getxattr(f->a, &carol, sfs_tree_root(f->a), SFS_XATTR_SCOPE,
                                           buf, sizeof(buf), &len),
                         0);
        assert_memory_equal(buf, "sandbox-a", 9);
        assert_int_equal(sfs_tree_getxattr(f->a, &carol, sfs_tree_root(f->a), SFS_XATTR_USAGE,
                                           buf, sizeof(buf), &len),
                         0);
        buf[len] = '\0';
        assert_non_null(strstr(buf, "scope=sandbox-a snapshots=1 bytes=3 "));
        assert_int_equal(sfs_tree_getxattr(f->a, &carol, sfs_tree_root(f->a),
                                           SFS_XATTR_READ_VIEW, buf, sizeof(buf), &len),
                         -ENODATA);
        assert_int_equal(sfs_tree_statfs(f->a, &carol, &sv), 0);
        assert_int_equal(sv.f_files - sv.f_ffree, 1);
        /* The other scope's numbers are its own. */
        assert_int_equal(sfs_tree_statfs(f->b, &carol, &sv), 0);
        assert_int_equal(sv.f_files, sv.f_ffree);
}

static void test_grants_come_back_from_their_records(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_grants g;
        struct sfs_scope_effects fx = { 0 };
        struct sfs_tree *again;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_scope_usage u;

        assert_int_equal(publish(f->main, &root, "a", "granted", 7, NULL), 0);
        assert_int_equal(grant(f->a, "granted", "cfg", NULL, NULL), 0);
        assert_int_equal(publish(f->a, &carol, "mine", "its own", 7, NULL), 0);
        uint64_t ino_cfg, ino_own;

        ino_cfg = sfs_node_ino(lookup_name(f->a, &carol, "cfg", 0));
        hex_of("its own", 7, hex);
        ino_own = sfs_node_ino(lookup_name(f->a, &carol, hex, 0));
        assert_int_equal(sfs_scope_get_grants(f->a, NULL, &g), 0);
        assert_true(g.next_ino > ino_cfg && g.next_ino > ino_own);
        again = scope_of(f->main, "again", true);
        assert_int_equal(sfs_scope_restore(again, &g, NULL, NULL, &fx), 0);
        /* Each under the number the view had it under. */
        assert_int_equal(sfs_node_ino(lookup_name(again, &carol, "cfg", 0)), ino_cfg);
        assert_int_equal(sfs_node_ino(lookup_name(again, &carol, hex, 0)), ino_own);
        assert_int_equal(fx.n_gone, 0);
        lookup_name(again, &carol, "cfg", 0);
        hex_of("its own", 7, hex);
        lookup_name(again, &carol, hex, 0);
        hex_of("granted", 7, hex);
        lookup_name(again, &carol, hex, 0);
        sfs_scope_get_usage(again, &u);
        assert_int_equal(u.snapshots, 1);
        assert_int_equal(u.grants, 2);
        sfs_scope_grants_free(&g);
        sfs_scope_effects_free(&fx);
        sfs_tree_free(again);
}

/* A sandbox must not count, by its own inode numbers, what another scope or the operator
 * publishes and grants: a view numbers its own, in its own order, never reused. */
static void test_a_view_numbers_its_inodes_alone(void **state)
{
        struct fx *f = *state;
        uint64_t first, second;
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        assert_int_equal(publish(f->main, &root, "a", "one", 3, NULL), 0);
        assert_int_equal(grant(f->b, "one", NULL, NULL, NULL), 0);
        hex_of("one", 3, hex);
        first = sfs_node_ino(lookup_name(f->b, &carol, hex, 0));
        assert_int_equal(first, SFS_FIRST_INO);
        /* A's and the operator's activity in between... */
        for (int i = 0; i < 2; i++) {
                char text[8], own[8], name[8];
                snprintf(text, sizeof(text), "x%d", i);
                snprintf(own, sizeof(own), "y%d", i);
                snprintf(name, sizeof(name), "n%d", i);
                assert_int_equal(publish(f->main, &root, name, text, 2, NULL), 0);
                assert_int_equal(grant(f->a, text, NULL, NULL, NULL), 0);
                assert_int_equal(publish(f->a, &carol, name, own, 2, NULL), 0);
        }
        /* ...moves neither B's first number nor its next. */
        assert_int_equal(sfs_node_ino(lookup_name(f->b, &carol, hex, 0)), first);
        assert_int_equal(publish(f->main, &root, "b", "two", 3, NULL), 0);
        assert_int_equal(grant(f->b, "two", NULL, NULL, NULL), 0);
        hex_of("two", 3, hex);
        second = sfs_node_ino(lookup_name(f->b, &carol, hex, 0));
        assert_int_equal(second, first + 1);
        /* The main mount's numbers are the store's: they moved. */
        assert_true(sfs_node_ino(lookup_name(f->main, &root, hex, 0)) > second);
}

static void test_a_full_scope_refuses_one_more_grant_or_publish_with_enospc(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        (void)state;
        assert_int_equal(publish(f->main, &root, "held", "held bytes", 10, NULL), 0);
        assert_int_equal(publish(f->b, &carol, "in-b", "b's bytes", 9, NULL), 0);
        sfs_scope_set_max_grants(f->a, 1);
        assert_int_equal(publish(f->a, &carol, "first", "a's bytes", 9, NULL), 0);
        /* Full: new content, content another scope has, and a grant are all refused. */
        assert_int_equal(publish(f->a, &carol, "new", "new bytes", 9, NULL), -ENOSPC);
        assert_int_equal(publish(f->a, &carol, "same", "b's bytes", 9, NULL), -ENOSPC);
        assert_int_equal(grant(f->a, "held bytes", NULL, NULL, NULL), -ENOSPC);
        hex_of("b's bytes", 9, hex);
        lookup_name(f->a, &carol, hex, -ENOENT);
        /* B's copy is untouched by A's refusal. */
        lookup_name(f->b, &carol, hex, 0);
        /* One taken back: room for one again, and content B has is granted to A as well. */
        hex_of("a's bytes", 9, hex);
        assert_int_equal(sfs_tree_unlink(f->a, &carol, sfs_tree_root(f->a), hex), 0);
        hex_of("b's bytes", 9, hex);
        assert_int_equal(sfs_tree_rename(f->a, &carol, staging_dir(f->a, &carol), "same",
                                         sfs_tree_root(f->a), hex, 0,
                                         &(struct sfs_node *){ NULL }),
                         0);
        lookup_name(f->a, &carol, hex, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* sfs_scope_apply of kind on text's digest (none: NULL) under entry (none: NULL). */
static int apply(struct sfs_tree *t, enum sfs_scope_op_kind kind, const char *text,
                 const char *entry)
{
        struct sfs_scope_op op = { .kind = kind, .has_digest = text != NULL, .entry = entry };
        struct sfs_scope_effects fx = { 0 };
        int r;

        if (text)
                op.digest = digest(text);
        r = sfs_scope_apply(t, &op, NULL, &fx);
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        return r;
}

/* A grant names a digest the main mount serves, under an entry of the grammar; beside each
 * refusal, the same grant made right. */
static void test_a_grant_of_no_digest_or_a_bad_entry_is_einval_of_nothing_stored_enoent(
        void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        assert_int_equal(publish(f->main, &root, "a", "stored", 6, NULL), 0);
        hex_of("stored", 6, hex);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, NULL, "cfg"), -EINVAL);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "stored", "-cfg"), -EINVAL);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "stored", hex), -EINVAL);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "never published", "cfg"), -ENOENT);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "never published", NULL), -ENOENT);
        lookup_name(f->a, &carol, "cfg", -ENOENT);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "stored", "cfg"), 0);
        lookup_name(f->a, &carol, "cfg", 0);
        /* Publishing is the view's own (publish.c), never a change asked of the registry. */
        assert_int_equal(apply(f->a, SFS_SCOPE_PUBLISH, "stored", NULL), -EINVAL);
}

/* A revoke names what the scope has: an entry it lists, a digest granted to it. */
static void test_revoking_what_the_scope_does_not_have_is_enoent(void **state)
{
        struct fx *f = *state;

        assert_int_equal(publish(f->main, &root, "a", "granted", 7, NULL), 0);
        assert_int_equal(publish(f->main, &root, "b", "only b", 6, NULL), 0);
        assert_int_equal(grant(f->a, "granted", "cfg", NULL, NULL), 0);
        assert_int_equal(grant(f->b, "only b", NULL, NULL, NULL), 0);
        assert_int_equal(revoke(f->a, NULL, "other", NULL), -ENOENT);
        assert_int_equal(revoke(f->a, "only b", NULL, NULL), -ENOENT);
        assert_int_equal(revoke(f->a, NULL, NULL, NULL), -ENOENT);
        lookup_name(f->a, &carol, "cfg", 0);
        assert_int_equal(revoke(f->a, NULL, "cfg", NULL), 0);
        lookup_name(f->a, &carol, "cfg", -ENOENT);
        assert_int_equal(revoke(f->b, "only b", NULL, NULL), 0);
}

/* What a view published may be taken back as such; a grant the operator made may not, and
 * what the scope does not have is ENOENT. */
static void test_unpublishing_a_plain_grant_is_eperm_and_what_is_not_there_enoent(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        assert_int_equal(publish(f->main, &root, "a", "granted", 7, NULL), 0);
        assert_int_equal(grant(f->a, "granted", NULL, NULL, NULL), 0);
        assert_int_equal(publish(f->a, &carol, "mine", "its own", 7, NULL), 0);
        assert_int_equal(apply(f->a, SFS_SCOPE_UNPUBLISH, "granted", NULL), -EPERM);
        assert_int_equal(apply(f->a, SFS_SCOPE_UNPUBLISH, "never published", NULL), -ENOENT);
        assert_int_equal(apply(f->a, SFS_SCOPE_UNPUBLISH, NULL, NULL), -ENOENT);
        hex_of("granted", 7, hex);
        lookup_name(f->a, &carol, hex, 0);
        hex_of("its own", 7, hex);
        lookup_name(f->a, &carol, hex, 0);
        assert_int_equal(apply(f->a, SFS_SCOPE_UNPUBLISH, "its own", NULL), 0);
        lookup_name(f->a, &carol, hex, -ENOENT);
}

/* ---- the scope file's grants and entries, restored ---- */

/* sfs_scope_restore of n grants (the digests of texts, at inos) and m entries (names, naming
 * the digest of texts[entry_of[i]]) into a scope of its own: its result. Each field's own
 * range is fs/scopes/scopefile.c's (test_scopefile.c); what is left is the table's. */
static int restore_records(struct sfs_tree *main, const char *const *texts,
                           const uint64_t *inos, size_t n, const char *const *names,
                           const size_t *entry_of, size_t m)
{
        struct sfs_grant_record grants[4] = { 0 };
        struct sfs_entry_record entries[4] = { 0 };
        struct sfs_scope_grants g = { .grants = grants, .n_grants = n, .entries = entries,
                                      .n_entries = m };
        struct sfs_scope_effects fx = { 0 };
        struct sfs_tree *t = scope_of(main, "restored", true);
        int r;

        for (size_t i = 0; i < n; i++) {
                grants[i].digest = digest(texts[i]);
                grants[i].ino = inos[i];
                grants[i].plain = true;
        }
        for (size_t i = 0; i < m; i++) {
                snprintf(entries[i].name, sizeof(entries[i].name), "%s", names[i]);
                entries[i].digest = digest(texts[entry_of[i]]);
        }
        r = sfs_scope_restore(t, &g, NULL, NULL, &fx);
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        sfs_tree_free(t);
        return r;
}

/* Grants this daemon did not write are refused whole: a digest twice, two grants under one
 * number; the same grants under two numbers come back. */
static void test_a_digest_twice_or_two_grants_under_one_number_is_einval(void **state)
{
        static const char *const same[] = { "granted", "granted" };
        static const char *const two[] = { "granted", "another" };
        struct fx *f = *state;

        assert_int_equal(publish(f->main, &root, "a", "granted", 7, NULL), 0);
        assert_int_equal(publish(f->main, &root, "b", "another", 7, NULL), 0);
        assert_int_equal(restore_records(f->main, same, (uint64_t[]){ 5, 6 }, 2, NULL, NULL, 0),
                         -EINVAL);
        assert_int_equal(restore_records(f->main, two, (uint64_t[]){ 5, 5 }, 2, NULL, NULL, 0),
                         -EINVAL);
        assert_int_equal(restore_records(f->main, two, (uint64_t[]){ 5, 6 }, 2, NULL, NULL, 0),
                         0);
        /* A file of before views numbered their own: numbers given. */
        assert_int_equal(restore_records(f->main, two, (uint64_t[]){ 0, 0 }, 2, NULL, NULL, 0),
                         0);
}

/* More grants and entries than a scope holds are refused before any is restored; as many as
 * it holds are taken (the digests are not stored: each is left out). */
static void test_more_records_than_a_scope_holds_is_einval(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_grants g = { .n_grants = SFS_SCOPE_GRANTS_MAX / 2 + 1,
                                      .n_entries = SFS_SCOPE_GRANTS_MAX / 2 };
        struct sfs_scope_effects fx = { 0 };
        struct sfs_tree *t = scope_of(f->main, "restored", true);

        g.grants = calloc(g.n_grants, sizeof(*g.grants));
        g.entries = calloc(g.n_entries, sizeof(*g.entries));
        assert_non_null(g.grants);
        assert_non_null(g.entries);
        assert_int_equal(sfs_scope_restore(t, &g, NULL, NULL, &fx), -EINVAL);
        g.n_grants = 1;
        g.n_entries = 0;
        assert_int_equal(sfs_scope_restore(t, &g, NULL, NULL, &fx), 0);
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        sfs_scope_grants_free(&g);
        sfs_tree_free(t);
}

/* An entry name twice is refused; the same entries under two names come back. */
static void test_an_entry_name_twice_is_einval(void **state)
{
        static const char *const texts[] = { "granted" };
        struct fx *f = *state;

        assert_int_equal(publish(f->main, &root, "a", "granted", 7, NULL), 0);
        assert_int_equal(restore_records(f->main, texts, (uint64_t[]){ 5 }, 1,
                                         (const char *const[]){ "cfg", "cfg" },
                                         (size_t[]){ 0, 0 }, 2),
                         -EINVAL);
        assert_int_equal(restore_records(f->main, texts, (uint64_t[]){ 5 }, 1,
                                         (const char *const[]){ "cfg", "cfg2" },
                                         (size_t[]){ 0, 0 }, 2),
                         0);
}

/* A scope is made with a name of the grammar and every limit set; any one of them missing
 * (or a staging count past 32 bits) makes none, the same spec made right makes one. */
static void test_a_scope_without_a_valid_name_or_one_of_its_limits_is_einval(void **state)
{
        struct fx *f = *state;
        struct sfs_scope_spec good = { .name = "made" }, spec;
        struct sfs_tree *t = NULL;

        sfs_scope_default_limits(f->main, &good.limits);
        spec = good;
        spec.name = NULL;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        spec.name = "../made";
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        spec = good;
        spec.limits.max_snapshots = 0;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        spec = good;
        spec.limits.max_bytes = 0;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        spec = good;
        spec.limits.max_staging = 0;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        spec = good;
        spec.limits.max_staging = (uint64_t)UINT32_MAX + 1;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        spec = good;
        spec.limits.max_staging_bytes = 0;
        assert_int_equal(sfs_tree_new_scope(f->main, &spec, &t), -EINVAL);
        assert_null(t);
        assert_int_equal(sfs_tree_new_scope(f->main, &good, &t), 0);
        assert_non_null(t);
        sfs_tree_free(t);
}

/* A change of grants is a scope's: the main mount's tree has none to change. */
static void test_a_grant_on_the_main_tree_is_einval(void **state)
{
        struct fx *f = *state;

        assert_int_equal(publish(f->main, &root, "a", "stored", 6, NULL), 0);
        assert_int_equal(apply(f->main, SFS_SCOPE_GRANT, "stored", NULL), -EINVAL);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "stored", NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_a_view_lists_and_opens_exactly_its_grants),
                T(test_a_non_user_gets_eacces_a_user_and_root_get_through),
                T(test_a_group_names_users_by_the_callers_gid),
                T(test_an_entry_is_an_alias_with_its_digests_node),
                T(test_moving_an_entry_swaps_it_and_the_old_digest_leaves_the_view),
                T(test_a_revoked_grant_is_enoent_for_new_lookups_and_an_open_handle_reads_on),
                T(test_revoking_an_entry_keeps_a_digest_granted_by_itself),
                T(test_published_in_a_scope_it_is_that_scopes_and_the_owners_alone),
                T(test_publishing_what_another_scope_has_answers_as_for_new_content),
                T(test_a_scopes_limits_give_edquot_and_taking_one_back_makes_room),
                T(test_a_full_scope_refuses_one_more_grant_or_publish_with_enospc),
                T(test_a_scopes_byte_limit_gives_edquot_with_room_for_more_snapshots),
                T(test_a_deleted_scopes_view_publishes_no_more),
                T(test_a_view_unlinks_only_what_it_published_itself),
                T(test_the_last_grant_of_an_unheld_snapshot_collects_it),
                T(test_a_grant_keeps_what_the_owner_unlinked_on_the_main_mount),
                T(test_a_views_metadata_is_its_own_scopes),
                T(test_a_views_root_answers_for_its_scope_alone),
                T(test_a_view_numbers_its_inodes_alone),
                T(test_grants_come_back_from_their_records),
                T(test_a_grant_of_no_digest_or_a_bad_entry_is_einval_of_nothing_stored_enoent),
                T(test_revoking_what_the_scope_does_not_have_is_enoent),
                T(test_unpublishing_a_plain_grant_is_eperm_and_what_is_not_there_enoent),
                T(test_a_digest_twice_or_two_grants_under_one_number_is_einval),
                T(test_an_entry_name_twice_is_einval),
                T(test_more_records_than_a_scope_holds_is_einval),
                T(test_a_scope_without_a_valid_name_or_one_of_its_limits_is_einval),
                T(test_a_grant_on_the_main_tree_is_einval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
