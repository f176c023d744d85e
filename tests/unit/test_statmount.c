/* SPDX-License-Identifier: MIT */
/* mc_statmount_record() on hand-built replies: a well-formed one becomes the record both
 * backends agree on, and a reply whose offsets or size point outside it is refused. Then the
 * backend (mc_backend_statmount) against a table of kernel calls (kernel-calls.h) that
 * answers statmount() and listmount() from a few made-up mounts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mountcheck/backend.h"
#include "mountcheck/kernel-calls.h"

#define STRS 256

/* A reply: the fixed part, then STRS bytes of strings (its flexible array member, str[]). */
#define REPLY_SIZE (sizeof(struct mc_kstatmount) + STRS)

/* Appends s to the string area: its offset. */
static uint32_t add(struct mc_kstatmount *r, size_t *used, const char *s)
{
        uint32_t off = (uint32_t)*used;
        size_t n = strlen(s) + 1;

        assert_true(*used + n <= STRS);
        memcpy(r->str + off, s, n);
        *used += n;
        return off;
}

/* A snapfs mount at /run/snap as the kernel reports it: type "fuse", subtype "snapfs". */
static struct mc_kstatmount *snapfs_reply(void)
{
        struct mc_kstatmount *r = calloc(1, REPLY_SIZE);
        size_t used = 0;

        assert_non_null(r);
        r->mask = MC_STATMOUNT_SB_BASIC | MC_STATMOUNT_MNT_BASIC | MC_STATMOUNT_MNT_ROOT |
                     MC_STATMOUNT_MNT_POINT | MC_STATMOUNT_FS_TYPE | MC_STATMOUNT_FS_SUBTYPE |
                     MC_STATMOUNT_MNT_OPTS | MC_STATMOUNT_OPT_ARRAY;
        r->mnt_id = 0x80000123;
        r->mnt_parent_id = 0x80000001;
        r->mnt_attr = MC_MOUNT_ATTR_NOSUID | MC_MOUNT_ATTR_NODEV | MC_MOUNT_ATTR_NOEXEC;
        r->mnt_propagation = MC_MS_PRIVATE;
        r->mnt_root = add(r, &used, "/");
        r->mnt_point = add(r, &used, "/run/snap");
        r->fs_type = add(r, &used, "fuse");
        r->fs_subtype = add(r, &used, "snapfs");
        r->mnt_opts = add(r, &used, "user_id=0,group_id=0");
        r->opt_num = 2;
        r->opt_array = add(r, &used, "user_id=0");
        add(r, &used, "group_id=0");
        r->size = (uint32_t)(offsetof(struct mc_kstatmount, str) + used);
        return r;
}

static void free_mount(struct mc_mount *m)
{
        free(m->mount_point);
        free(m->root);
        free(m->fstype);
        free(m->source);
}

static void test_reply_becomes_the_record_mountinfo_would_give(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), 0);
        assert_int_equal(m.id, 0x80000123);
        assert_int_equal(m.parent_id, 0x80000001);
        assert_string_equal(m.mount_point, "/run/snap");
        assert_string_equal(m.root, "/");
        assert_string_equal(m.fstype, "fuse.snapfs");
        assert_int_equal(m.options, MC_OPT_RW | MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC);
        assert_int_equal(m.propagation, 0);
        assert_true(m.has_user_id);
        assert_int_equal(m.user_id, 0);
        free_mount(&m);
        free(r);
}

static void test_reply_shorter_than_its_fixed_part_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        assert_int_equal(mc_statmount_record(r, sizeof(*r) - 1, &m), -EIO);
        assert_null(m.mount_point);
        free(r);
}

static void test_string_offset_past_the_reply_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        r->mnt_point = STRS + 10;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EIO);
        free_mount(&m);
        free(r);
}

static void test_string_past_the_replys_own_size_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        /* The kernel wrote only the fixed part: the offsets point into bytes it never wrote,
         * although they lie inside the caller's buffer. */
        r->size = (uint32_t)offsetof(struct mc_kstatmount, str);
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EIO);
        free_mount(&m);
        free(r);
}

static void test_more_options_than_strings_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        r->opt_num = 1000;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EIO);
        free_mount(&m);
        free(r);
}

static void test_reply_without_a_field_the_record_needs_is_eopnotsupp(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        r->mask &= ~(uint64_t)MC_STATMOUNT_SB_BASIC;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EOPNOTSUPP);
        free_mount(&m);
        free(r);
}

static void test_kernel_that_cannot_report_a_subtype_is_eopnotsupp(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        /* Linux 6.8 has no FS_SUBTYPE: "fuse" would be all it could say of fuse.snapfs. */
        r->mask &= ~(uint64_t)MC_STATMOUNT_FS_SUBTYPE;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EOPNOTSUPP);
        free_mount(&m);
        /* A kernel that can, for a mount that has none: the type alone. */
        r->mask |= MC_STATMOUNT_SUPPORTED_MASK;
        r->supported_mask = MC_STATMOUNT_FS_SUBTYPE | MC_STATMOUNT_MNT_OPTS;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), 0);
        assert_string_equal(m.fstype, "fuse");
        free_mount(&m);
        free(r);
}

static void test_type_or_subtype_offset_past_the_reply_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };
        uint32_t type = r->fs_type;

        (void)state;
        r->fs_type = STRS;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EIO);
        free_mount(&m);
        memset(&m, 0, sizeof(m));
        r->fs_type = type;
        r->fs_subtype = STRS + 100;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EIO);
        free_mount(&m);
        free(r);
}

static void test_option_string_past_the_reply_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        /* Without the array (before Linux 6.12) the comma-separated string is read. */
        r->mask &= ~(uint64_t)MC_STATMOUNT_OPT_ARRAY;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), 0);
        assert_true(m.has_user_id);
        free_mount(&m);
        memset(&m, 0, sizeof(m));
        r->mnt_opts = STRS + 1;
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, &m), -EIO);
        free_mount(&m);
        free(r);
}

static void test_no_reply_or_no_record_is_eio(void **state)
{
        struct mc_kstatmount *r = snapfs_reply();
        struct mc_mount m = { 0 };

        (void)state;
        assert_int_equal(mc_statmount_record(NULL, REPLY_SIZE, &m), -EIO);
        assert_int_equal(mc_statmount_record(r, REPLY_SIZE, NULL), -EIO);
        free(r);
}

/* The fake kernel: a few mounts, each answered as snapfs_reply() with its own ids and mount
 * point. 100 is "/", 200 the snapfs mount on it, 300 a submount of 200, 301 a mount below 300
 * (listmount of 200 lists it too: all descendants, not only children). */
struct fake_mount {
        uint64_t id, parent;
        const char *mount_point;
};
static const struct fake_mount fake_mounts[] = {
        { 100, 100, "/" },
        { 200, 100, "/run/snap" },
        { 300, 200, "/run/snap/sub" },
        { 301, 300, "/run/snap/sub/deeper" },
};
static size_t overflow_below;   /* statmount: EOVERFLOW for any buffer smaller than this */
static size_t sizes[16];        /* the buffer sizes statmount was called with */
static size_t n_sizes;

static const struct fake_mount *fake_find(uint64_t id)
{
        for (size_t i = 0; i < sizeof(fake_mounts) / sizeof(fake_mounts[0]); i++)
                if (fake_mounts[i].id == id)
                        return &fake_mounts[i];
        return NULL;
}

static long fake_statmount(const struct mc_kmnt_id_req *req, struct mc_kstatmount *buf,
                           size_t size, unsigned int flags)
{
        const struct fake_mount *fm = fake_find(req->mnt_id);
        struct mc_kstatmount *r;
        size_t used;

        assert_int_equal(flags, 0);
        assert_int_equal(req->size, MC_MNT_ID_REQ_SIZE_VER0);
        if (n_sizes < sizeof(sizes) / sizeof(sizes[0]))
                sizes[n_sizes++] = size;
        if (!fm) {
                errno = ENOENT;
                return -1;
        }
        if (size < overflow_below) {
                errno = EOVERFLOW;
                return -1;
        }
        r = snapfs_reply();
        used = r->size - offsetof(struct mc_kstatmount, str);
        r->mnt_id = fm->id;
        r->mnt_parent_id = fm->parent;
        r->mnt_point = add(r, &used, fm->mount_point);
        r->size = (uint32_t)(offsetof(struct mc_kstatmount, str) + used);
        assert_true(r->size <= size);
        memcpy(buf, r, r->size);
        free(r);
        return 0;
}

static long fake_listmount(const struct mc_kmnt_id_req *req, uint64_t *ids, size_t n,
                           unsigned int flags)
{
        size_t k = 0;

        assert_int_equal(flags, 0);
        /* Every mount below req->mnt_id (all of them below the root), in id order, after
         * req->param: what this kernel's listmount() returns. */
        for (size_t i = 0; i < sizeof(fake_mounts) / sizeof(fake_mounts[0]) && k < n; i++) {
                const struct fake_mount *fm = &fake_mounts[i];
                bool below = req->mnt_id == MC_LSMT_ROOT;

                for (const struct fake_mount *a = fm; !below && a->parent != a->id;
                     a = fake_find(a->parent))
                        below = a->parent == req->mnt_id;
                if (below && fm->id > req->param)
                        ids[k++] = fm->id;
        }
        return (long)k;
}

static struct mc_kernel fake_kernel;

static int fake_kernel_setup(void **state)
{
        (void)state;
        overflow_below = 0;
        n_sizes = 0;
        fake_kernel = mc_kernel_linux;
        fake_kernel.statmount = fake_statmount;
        fake_kernel.listmount = fake_listmount;
        mc_kernel_swap(&fake_kernel);
        return 0;
}

static int fake_kernel_teardown(void **state)
{
        (void)state;
        mc_kernel_swap(NULL);
        return 0;
}

static const struct mc_query snap_query = {
        .path = "/run/snap",
        .want = MC_WANT_TARGET | MC_WANT_PARENT | MC_WANT_CHILDREN,
        .has_target = true,
        .target_id = 200,
};

static void test_target_parent_and_children_but_no_grandchild(void **state)
{
        struct mc_mount_set set = { 0 };

        (void)state;
        assert_int_equal(mc_backend_statmount.collect(&snap_query, &set), 0);
        assert_int_equal(set.n, 3);
        assert_string_equal(mc_mount_set_find(&set, 200)->mount_point, "/run/snap");
        assert_string_equal(mc_mount_set_find(&set, 100)->mount_point, "/");
        assert_string_equal(mc_mount_set_find(&set, 300)->mount_point, "/run/snap/sub");
        assert_null(mc_mount_set_find(&set, 301));
        mc_mount_set_free(&set);
}

static void test_a_reply_that_never_fits_stops_at_16_mib_with_eoverflow(void **state)
{
        static const size_t want[] = { 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216 };
        struct mc_mount_set set = { 0 };

        (void)state;
        /* A kernel that always says "too small" must not make the check allocate forever. */
        overflow_below = SIZE_MAX;
        assert_int_equal(mc_backend_statmount.collect(&snap_query, &set), -EOVERFLOW);
        assert_int_equal(set.n, 0);
        assert_int_equal(n_sizes, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < n_sizes; i++)
                assert_int_equal(sizes[i], want[i]);
        /* One that is satisfied by 64 KiB: the buffer grows to it and the record comes. */
        overflow_below = 65536;
        n_sizes = 0;
        assert_int_equal(mc_backend_statmount.collect(&snap_query, &set), 0);
        assert_int_equal(set.n, 3);
        assert_int_equal(sizes[2], 65536);
        mc_mount_set_free(&set);
}

static void test_a_vanished_target_is_no_record_not_an_error(void **state)
{
        struct mc_mount_set set = { 0 };
        struct mc_query q = snap_query;

        (void)state;
        /* Unmounted between statx and statmount: the judge reports the change. */
        q.target_id = 999;
        assert_int_equal(mc_backend_statmount.collect(&q, &set), 0);
        assert_int_equal(set.n, 0);
}

static void test_mounts_at_the_path_are_found_among_all(void **state)
{
        struct mc_mount_set set = { 0 };
        struct mc_query q = { .path = "/run/snap/sub", .want = MC_WANT_AT_PATH };

        (void)state;
        assert_int_equal(mc_backend_statmount.collect(&q, &set), 0);
        assert_int_equal(set.n, 1);
        assert_int_equal(set.v[0].id, 300);
        mc_mount_set_free(&set);
}

static void test_a_query_without_its_target_or_set_is_einval(void **state)
{
        struct mc_mount_set set = { 0 };
        struct mc_query q = snap_query;

        (void)state;
        assert_int_equal(mc_backend_statmount.collect(NULL, &set), -EINVAL);
        assert_int_equal(mc_backend_statmount.collect(&q, NULL), -EINVAL);
        q.has_target = false;
        assert_int_equal(mc_backend_statmount.collect(&q, &set), -EINVAL);
        assert_int_equal(n_sizes, 0);
        assert_int_equal(set.n, 0);
}

#define FAKE_KERNEL(t) cmocka_unit_test_setup_teardown(t, fake_kernel_setup, fake_kernel_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reply_becomes_the_record_mountinfo_would_give),
                cmocka_unit_test(test_reply_shorter_than_its_fixed_part_is_eio),
                cmocka_unit_test(test_string_offset_past_the_reply_is_eio),
                cmocka_unit_test(test_string_past_the_replys_own_size_is_eio),
                cmocka_unit_test(test_more_options_than_strings_is_eio),
                cmocka_unit_test(test_reply_without_a_field_the_record_needs_is_eopnotsupp),
                cmocka_unit_test(test_kernel_that_cannot_report_a_subtype_is_eopnotsupp),
                cmocka_unit_test(test_type_or_subtype_offset_past_the_reply_is_eio),
                cmocka_unit_test(test_option_string_past_the_reply_is_eio),
                cmocka_unit_test(test_no_reply_or_no_record_is_eio),
                FAKE_KERNEL(test_target_parent_and_children_but_no_grandchild),
                FAKE_KERNEL(test_a_reply_that_never_fits_stops_at_16_mib_with_eoverflow),
                FAKE_KERNEL(test_a_vanished_target_is_no_record_not_an_error),
                FAKE_KERNEL(test_mounts_at_the_path_are_found_among_all),
                FAKE_KERNEL(test_a_query_without_its_target_or_set_is_einval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
