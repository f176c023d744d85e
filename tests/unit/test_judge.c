/* SPDX-License-Identifier: MIT */
/* mc_judge() fed hand-made records: every finding, and the compliant case beside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mountcheck/judge.h"

#define PATH "/run/snap"
#define GOOD_OPTS (MC_OPT_RW | MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC)

/* Records point at string literals: the judge never frees or writes them. */
static struct mc_mount mount_rec(uint64_t id, uint64_t parent, const char *mp)
{
        return (struct mc_mount){
                .id = id,
                .parent_id = parent,
                .mount_point = (char *)mp,
                .root = (char *)"/",
                .fstype = (char *)"tmpfs",
                .source = (char *)"tmpfs",
                .options = GOOD_OPTS,
                .has_size = true,
                .size = 1 << 20,
        };
}

static struct mc_policy tmpfs_policy(void)
{
        struct mc_policy p;
        assert_int_equal(mc_policy_preset(&p, "tmpfs"), 0);
        return p;
}

static struct mc_facts facts(const struct mc_mount *mounts, size_t n, uint64_t reached)
{
        return (struct mc_facts){
                .path = PATH,
                .mount_id = reached,
                .mount_root = true,
                .root_mode = 01777,
                .caller_initial_userns = true,
                .mounts = mounts,
                .n_mounts = n,
        };
}

static struct mc_verdict judge(const struct mc_facts *f, const struct mc_policy *p)
{
        struct mc_verdict v;
        mc_verdict_init(&v);
        mc_judge(f, p, &v);
        return v;
}

/* The codes of v, in order, as "a,b,c": one string to compare per test. */
static const char *codes(const struct mc_verdict *v)
{
        static char buf[1024];
        buf[0] = '\0';
        for (size_t i = 0; i < v->n_findings; i++) {
                if (i)
                        strcat(buf, ",");
                strcat(buf, mc_code_name(v->findings[i].code));
        }
        return buf;
}

static void test_compliant_tmpfs_has_no_finding(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH), mount_rec(1, 1, "/run") };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 2, 10);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_true(v.compliant);
        assert_int_equal(v.n_findings, 0);
        assert_int_equal(v.n_dropped, 0);
}

static void test_parent_at_the_same_path_is_stacked_in_either_listing_order(void **state)
{
        /* Upper (10) on lower (20): the upper has the older id, as a mount made early with
         * fsmount() and moved on top later. Listing order must not matter. */
        struct mc_mount a[] = { mount_rec(10, 20, PATH), mount_rec(20, 1, PATH) };
        struct mc_mount b[] = { mount_rec(20, 1, PATH), mount_rec(10, 20, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts fa = facts(a, 2, 10), fb = facts(b, 2, 10), unstacked = facts(a, 1, 10);
        struct mc_verdict va = judge(&fa, &p), vb = judge(&fb, &p), vu = judge(&unstacked, &p);
        (void)state;
        assert_string_equal(codes(&va), "stacked");
        assert_string_equal(codes(&vb), "stacked");
        assert_true(vu.compliant);
}

static void test_child_on_the_root_is_stacked_and_elsewhere_is_submount(void **state)
{
        struct mc_mount m[] = {
                mount_rec(30, 10, PATH "/sub"),
                mount_rec(40, 10, PATH),
                mount_rec(10, 1, PATH),
                mount_rec(50, 30, PATH "/sub/deeper"), /* a grandchild: 30 answers for it */
        };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 4, 10);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_string_equal(codes(&v), "submount,stacked");
        assert_non_null(strstr(v.findings[0].message, PATH "/sub"));
}

static void test_a_compliant_upper_on_a_noncompliant_lower_is_still_stacked(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 20, PATH), mount_rec(20, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 2, 10);
        struct mc_verdict v;
        (void)state;
        m[1].options = MC_OPT_RW; /* lower: no nosuid, nodev, noexec */
        m[1].fstype = (char *)"ext4";
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "stacked");
}

static void test_bind_of_a_subdirectory_is_refused(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        m[0].root = (char *)"/inner";
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "bind-of-subdirectory");
        assert_non_null(strstr(v.findings[0].message, "/inner"));
}

static void test_each_missing_option_is_named(void **state)
{
        static const struct {
                uint32_t bit;
                const char *name;
        } opts[] = { { MC_OPT_NOSUID, "nosuid" }, { MC_OPT_NODEV, "nodev" }, { MC_OPT_NOEXEC, "noexec" } };
        struct mc_policy p = tmpfs_policy();
        (void)state;
        for (size_t i = 0; i < 3; i++) {
                struct mc_mount m[] = { mount_rec(10, 1, PATH) };
                struct mc_facts f = facts(m, 1, 10);
                struct mc_verdict v;
                m[0].options &= ~opts[i].bit;
                v = judge(&f, &p);
                assert_string_equal(codes(&v), "missing-option");
                assert_non_null(strstr(v.findings[0].message, opts[i].name));
        }
}

static void test_readonly_superblock_means_rw_is_missing(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        mc_mount_apply_sb_option(&m[0], "ro");
        assert_true(m[0].options & MC_OPT_RO);
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "missing-option");
        assert_non_null(strstr(v.findings[0].message, "rw"));
        assert_int_equal(mc_policy_set(&p, "ro", NULL), 0);
        v = judge(&f, &p);
        assert_true(v.compliant);
}

static void test_forbidden_option_is_named(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        assert_int_equal(mc_policy_set(&p, "forbid", "noatime"), 0);
        v = judge(&f, &p);
        assert_true(v.compliant);
        m[0].options |= MC_OPT_NOATIME;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "forbidden-option");
        assert_non_null(strstr(v.findings[0].message, "noatime"));
}

static void test_shared_and_slave_propagation_are_refused_unbindable_is_not(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        m[0].propagation = MC_PROP_UNBINDABLE;
        v = judge(&f, &p);
        assert_true(v.compliant);
        m[0].propagation = MC_PROP_SHARED;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "propagation");
        m[0].propagation = MC_PROP_SLAVE;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "propagation");
        m[0].propagation = MC_PROP_SHARED | MC_PROP_SLAVE;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "propagation,propagation");
}

static void test_idmapped_mount_is_refused(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        m[0].idmapped = true;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "idmapped");
}

static void test_fstype_and_owner_for_a_fuse_mount(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p;
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        assert_int_equal(mc_policy_preset(&p, "snapfs"), 0);
        assert_int_equal(mc_policy_set(&p, "owner", "1000"), 0);
        m[0].fstype = (char *)"fuse.snapfs";
        mc_mount_apply_sb_option(&m[0], "user_id=1000");
        mc_mount_apply_sb_option(&m[0], "group_id=1000");
        v = judge(&f, &p);
        assert_true(v.compliant);

        m[0].fstype = (char *)"fuse.other";
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "fstype");

        m[0].fstype = (char *)"fuse.snapfs";
        m[0].user_id = 0;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner");
        m[0].has_user_id = false;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner");
}

/* A snapfs mount as a record: user_id= is who mounted it, as its superblock prints it. */
static struct mc_mount snapfs_rec(uint32_t user_id)
{
        struct mc_mount m = mount_rec(10, 1, PATH);
        char opt[32];
        m.fstype = (char *)"fuse.snapfs";
        m.has_size = false;
        snprintf(opt, sizeof(opt), "user_id=%u", user_id);
        mc_mount_apply_sb_option(&m, opt);
        return m;
}

/* Facts of a check of m by caller, whose probe showed the mount root owned by root_uid. */
static struct mc_facts probed(const struct mc_mount *m, uint32_t root_uid, uint32_t caller)
{
        struct mc_facts f = facts(m, 1, 10);
        f.has_root_uid = true;
        f.root_uid = root_uid;
        f.caller_uid = caller;
        return f;
}

static struct mc_policy snapfs_policy(void)
{
        struct mc_policy p;
        assert_int_equal(mc_policy_preset(&p, "snapfs"), 0);
        return p;
}

/* A scope view as its daemon describes it: named scope, publishing or not. */
static struct mc_facts scope_view(const struct mc_mount *m, const char *name, bool publishes)
{
        struct mc_facts f = probed(m, 0, 0);
        f.is_scope = true;
        f.scope = name;
        f.scope_publishes = publishes;
        return f;
}

static void test_a_read_only_view_of_a_scope_that_does_not_publish_is_compliant(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f;
        struct mc_verdict v;
        (void)state;
        m[0].options |= MC_OPT_RO;
        m[0].options &= ~MC_OPT_RW;
        f = scope_view(m, "sandbox-a", false);
        v = judge(&f, &p);
        assert_true(v.compliant);
        assert_true(v.is_scope);
        assert_false(v.scope_publishes);
        assert_string_equal(v.scope, "sandbox-a");
}

static void test_a_read_write_view_of_a_scope_that_does_not_publish_is_scope_writable(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = scope_view(m, "sandbox-a", false);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_string_equal(codes(&v), "scope-writable");
        assert_non_null(strstr(v.findings[0].message, "sandbox-a"));
        assert_string_equal(v.scope, "sandbox-a");
        /* The same read-write view is compliant once its scope allows publishing. */
        f = scope_view(m, "sandbox-a", true);
        v = judge(&f, &p);
        assert_true(v.compliant);
        assert_true(v.scope_publishes);
}

static void test_a_view_with_an_unreadable_name_is_judged_all_the_same(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = scope_view(m, "", false);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_string_equal(codes(&v), "scope-writable");
        assert_non_null(strstr(v.findings[0].message, "(unnamed)"));
        m[0].options = (m[0].options & ~MC_OPT_RW) | MC_OPT_RO;
        v = judge(&f, &p);
        assert_true(v.compliant);
        assert_true(v.is_scope);
}

static void test_a_scope_name_never_breaks_a_line(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = scope_view(m, "a\nscope-writable: forged", false);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_string_equal(codes(&v), "scope-writable");
        assert_null(strchr(v.scope, '\n'));
        assert_null(strchr(v.findings[0].message, '\n'));
        assert_non_null(strstr(v.scope, "\\012"));
}

static void test_a_mount_that_names_no_scope_reports_none(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = probed(m, 0, 0);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        /* The main mount: read-write, no scope, compliant. */
        assert_true(v.compliant);
        assert_false(v.is_scope);
        assert_string_equal(v.scope, "");
}

static void test_mount_of_the_callers_own_uid_is_owner_is_caller_unless_opted_in(void **state)
{
        struct mc_mount m[] = { snapfs_rec(1000) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        f.caller_uid = 1000;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner-is-caller");
        /* Naming the caller's uid as the owner does not make its own mount trustworthy. */
        assert_int_equal(mc_policy_set(&p, "owner", "1000"), 0);
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner-is-caller");
        assert_int_equal(mc_policy_set(&p, "owner", "any"), 0);
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner-is-caller");
        /* The opt-in accepts it, whatever the owner says. */
        p = snapfs_policy();
        assert_int_equal(mc_policy_set(&p, "insecure-own-mount", "yes"), 0);
        v = judge(&f, &p);
        assert_true(v.compliant);
        /* Another uid's mount still needs that uid named as the owner. */
        m[0] = snapfs_rec(1001);
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner");
}

static void test_root_mount_is_trusted_by_default_by_root_and_other_uids(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = probed(m, 0, 1000);
        struct mc_verdict v;
        (void)state;
        v = judge(&f, &p);
        assert_true(v.compliant);
        f.caller_uid = 0; /* root on a root mount: root is outside the threat model */
        v = judge(&f, &p);
        assert_true(v.compliant);
        /* A mount of another uid is refused by the default owner, root's own is not special. */
        m[0] = snapfs_rec(2000);
        f.root_uid = 2000;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "owner");
}

static void test_root_owned_by_another_uid_than_user_id_is_user_namespace(void **state)
{
        /* A server mounted in `unshare -Ur` by uid 1000: its superblock says user_id=0, but
         * the kernel maps the root's owner through that namespace and shows uid 1000. */
        struct mc_mount m[] = { snapfs_rec(0) };
        struct mc_policy p = snapfs_policy();
        struct mc_facts f = probed(m, 1000, 2000);
        struct mc_verdict v;
        (void)state;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "user-namespace");
        /* The caller of that same uid is told both: the namespace, and that it is its own. */
        f.caller_uid = 1000;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "user-namespace,owner-is-caller");
        /* The same superblock in the initial namespace shows its root owned by root. */
        f.root_uid = 0;
        v = judge(&f, &p);
        assert_true(v.compliant);
        /* Trusted explicitly: user_id= is then taken as it stands. */
        f.root_uid = 65534;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "user-namespace");
        assert_int_equal(mc_policy_set(&p, "user-namespace", "trust"), 0);
        v = judge(&f, &p);
        assert_true(v.compliant);
        /* No fresh owner (no probe): nothing to compare, no finding invented. */
        p = snapfs_policy();
        f.has_root_uid = false;
        v = judge(&f, &p);
        assert_true(v.compliant);
}

static void test_caller_in_another_user_namespace_cannot_verify_a_fuse_owner(void **state)
{
        struct mc_mount m[] = { snapfs_rec(0) }, t[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = snapfs_policy(), tp = tmpfs_policy();
        struct mc_facts f = probed(m, 0, 0), ft = facts(t, 1, 10);
        struct mc_verdict v;
        (void)state;
        f.caller_initial_userns = false;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "user-namespace");
        f.caller_initial_userns = true;
        v = judge(&f, &p);
        assert_true(v.compliant);
        /* A tmpfs has no mounting uid to doubt. */
        ft.caller_initial_userns = false;
        v = judge(&ft, &tp);
        assert_true(v.compliant);
        f.caller_initial_userns = false;
        assert_int_equal(mc_policy_set(&p, "user-namespace", "trust"), 0);
        v = judge(&f, &p);
        assert_true(v.compliant);
}

static void test_mode_and_size_bounds(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v;
        (void)state;
        f.root_mode = 0755;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "mode");
        assert_non_null(strstr(v.findings[0].message, "0755"));
        f.root_mode = 01777;

        m[0].size = 2 << 20;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "size");
        m[0].size = 0; /* tmpfs size=0: unlimited */
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "size");
        m[0].has_size = false;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "size");
        m[0].has_size = true;
        m[0].size = 1 << 20;
        v = judge(&f, &p);
        assert_true(v.compliant);
}

static void test_non_canonical_paths_are_refused_before_anything_else(void **state)
{
        static const char *const bad[] = { "", "run/snap", "./run", "/run//snap", "//run",
                                           "/run/./snap", "/run/../run/snap", "/run/snap/",
                                           "/.", "/..", "/run/.", "/run/.." };
        struct mc_mount m[] = { mount_rec(10, 20, PATH), mount_rec(20, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct mc_facts f = facts(m, 2, 10);
                struct mc_verdict v;
                f.path = bad[i];
                assert_false(mc_path_is_canonical(bad[i]));
                v = judge(&f, &p);
                assert_string_equal(codes(&v), "non-canonical-path");
        }
        assert_true(mc_path_is_canonical("/"));
        assert_true(mc_path_is_canonical("/run/snap"));
        assert_true(mc_path_is_canonical("/a b/.hidden/..dots/c."));
}

static void test_symlink_in_path_is_the_only_finding(void **state)
{
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(NULL, 0, 0);
        struct mc_verdict v;
        (void)state;
        f.open_error = -ELOOP;
        f.changed = true;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "symlink-in-path");
}

static void test_unreachable_path_with_a_recorded_mount_is_ancestor_overmounted(void **state)
{
        /* /run was mounted over: the old mount is still listed at PATH, unreachable. */
        struct mc_mount m[] = { mount_rec(10, 2, PATH), mount_rec(30, 2, "/run") };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 2, 0);
        struct mc_verdict v;
        (void)state;
        f.open_error = -ENOENT;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "ancestor-overmounted");
        f.n_mounts = 1;
        f.mounts = &m[1];
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "not-a-mount-point");
}

static void test_directory_recreated_in_the_upper_mount_is_not_a_mount_point(void **state)
{
        struct mc_mount m[] = { mount_rec(30, 2, "/run"), mount_rec(10, 2, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 2, 30);
        struct mc_verdict v;
        (void)state;
        f.mount_root = false;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "not-a-mount-point,ancestor-overmounted");
        f.n_mounts = 1; /* a plain directory, nothing recorded at the path */
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "not-a-mount-point");
        assert_non_null(strstr(v.findings[0].message, "/run"));
}

static void test_mount_root_of_another_path_is_not_a_mount_point(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, "/elsewhere") };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 10);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_string_equal(codes(&v), "not-a-mount-point");
}

static void test_vanished_mount_and_change_are_changed_during_check_once(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 99);
        struct mc_verdict v;
        (void)state;
        f.changed = true;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "changed-during-check");
        f.mount_id = 10;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "changed-during-check");
        f.changed = false;
        f.transport_dead = true;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "transport-not-connected");
}

static void test_a_reached_mount_missing_from_the_listing_is_changed_during_check(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, PATH) };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 1, 99);
        struct mc_verdict v;
        (void)state;
        /* Unmounted between the open and the listing, with the re-open at the end finding
         * nothing else: the listing alone says the mount is gone. */
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "changed-during-check");
        assert_false(v.compliant);
        f.mount_id = 10;
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "");
        assert_true(v.compliant);
}

static void test_every_failure_is_collected_not_only_the_first(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 20, PATH), mount_rec(20, 1, PATH),
                                mount_rec(30, 10, PATH "/x") };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 3, 10);
        struct mc_verdict v;
        (void)state;
        m[0].root = (char *)"/sub";
        m[0].fstype = (char *)"ramfs";
        m[0].options = MC_OPT_RO;
        m[0].propagation = MC_PROP_SHARED;
        m[0].idmapped = true;
        m[0].has_size = false;
        f.root_mode = 0700;
        f.transport_dead = true;
        f.changed = true;
        v = judge(&f, &p);
        assert_string_equal(codes(&v),
                            "bind-of-subdirectory,stacked,submount,fstype,missing-option,"
                            "missing-option,missing-option,missing-option,propagation,idmapped,"
                            "mode,size,transport-not-connected,changed-during-check");
        assert_false(v.compliant);
}

static void test_findings_beyond_the_array_are_counted_not_lost(void **state)
{
        struct mc_mount m[1 + 40];
        char paths[40][32];
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f;
        struct mc_verdict v;
        (void)state;
        m[0] = mount_rec(10, 1, PATH);
        for (int i = 0; i < 40; i++) {
                snprintf(paths[i], sizeof(paths[i]), PATH "/d%d", i);
                m[1 + i] = mount_rec(100 + (uint64_t)i, 10, paths[i]);
        }
        f = facts(m, 41, 10);
        v = judge(&f, &p);
        assert_int_equal(v.n_findings, MC_FINDINGS_MAX);
        assert_int_equal(v.n_dropped, 40 - MC_FINDINGS_MAX);
        assert_false(v.compliant);
}

static void test_control_bytes_never_reach_a_message(void **state)
{
        struct mc_mount m[] = { mount_rec(10, 1, "/a\nb"), mount_rec(20, 10, "/a\nb/x\ny") };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 2, 10);
        struct mc_verdict v;
        (void)state;
        f.path = "/a\nb";
        v = judge(&f, &p);
        assert_string_equal(codes(&v), "submount");
        assert_null(strchr(v.findings[0].message, '\n'));
        assert_non_null(strstr(v.findings[0].message, "/a\\012b/x\\012y"));
}

static void test_judge_survives_null_strings_and_self_parents(void **state)
{
        struct mc_mount m[] = { { .id = 10, .parent_id = 10 }, { .id = 10, .parent_id = 10 },
                                { .id = 11, .parent_id = 10 } };
        struct mc_policy p = tmpfs_policy();
        struct mc_facts f = facts(m, 3, 10);
        struct mc_verdict v = judge(&f, &p);
        (void)state;
        assert_false(v.compliant);
        assert_true(mc_verdict_has(&v, MC_NOT_A_MOUNT_POINT));
        f.path = NULL;
        v = judge(&f, &p);
        assert_false(v.compliant);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_compliant_tmpfs_has_no_finding),
                cmocka_unit_test(test_parent_at_the_same_path_is_stacked_in_either_listing_order),
                cmocka_unit_test(test_child_on_the_root_is_stacked_and_elsewhere_is_submount),
                cmocka_unit_test(test_a_compliant_upper_on_a_noncompliant_lower_is_still_stacked),
                cmocka_unit_test(test_bind_of_a_subdirectory_is_refused),
                cmocka_unit_test(test_each_missing_option_is_named),
                cmocka_unit_test(test_readonly_superblock_means_rw_is_missing),
                cmocka_unit_test(test_forbidden_option_is_named),
                cmocka_unit_test(test_shared_and_slave_propagation_are_refused_unbindable_is_not),
                cmocka_unit_test(test_idmapped_mount_is_refused),
                cmocka_unit_test(test_fstype_and_owner_for_a_fuse_mount),
                cmocka_unit_test(test_a_read_only_view_of_a_scope_that_does_not_publish_is_compliant),
                cmocka_unit_test(test_a_read_write_view_of_a_scope_that_does_not_publish_is_scope_writable),
                cmocka_unit_test(test_a_view_with_an_unreadable_name_is_judged_all_the_same),
                cmocka_unit_test(test_a_scope_name_never_breaks_a_line),
                cmocka_unit_test(test_a_mount_that_names_no_scope_reports_none),
                cmocka_unit_test(test_mount_of_the_callers_own_uid_is_owner_is_caller_unless_opted_in),
                cmocka_unit_test(test_root_mount_is_trusted_by_default_by_root_and_other_uids),
                cmocka_unit_test(test_root_owned_by_another_uid_than_user_id_is_user_namespace),
                cmocka_unit_test(test_caller_in_another_user_namespace_cannot_verify_a_fuse_owner),
                cmocka_unit_test(test_mode_and_size_bounds),
                cmocka_unit_test(test_non_canonical_paths_are_refused_before_anything_else),
                cmocka_unit_test(test_symlink_in_path_is_the_only_finding),
                cmocka_unit_test(test_unreachable_path_with_a_recorded_mount_is_ancestor_overmounted),
                cmocka_unit_test(test_directory_recreated_in_the_upper_mount_is_not_a_mount_point),
                cmocka_unit_test(test_mount_root_of_another_path_is_not_a_mount_point),
                cmocka_unit_test(test_vanished_mount_and_change_are_changed_during_check_once),
                cmocka_unit_test(test_a_reached_mount_missing_from_the_listing_is_changed_during_check),
                cmocka_unit_test(test_every_failure_is_collected_not_only_the_first),
                cmocka_unit_test(test_findings_beyond_the_array_are_counted_not_lost),
                cmocka_unit_test(test_control_bytes_never_reach_a_message),
                cmocka_unit_test(test_judge_survives_null_strings_and_self_parents),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
