/* SPDX-License-Identifier: MIT */
/* mc_statmount_record() on hand-built replies: a well-formed one becomes the record both
 * backends agree on, and a reply whose offsets or size point outside it is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernel.h"

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reply_becomes_the_record_mountinfo_would_give),
                cmocka_unit_test(test_reply_shorter_than_its_fixed_part_is_eio),
                cmocka_unit_test(test_string_offset_past_the_reply_is_eio),
                cmocka_unit_test(test_string_past_the_replys_own_size_is_eio),
                cmocka_unit_test(test_more_options_than_strings_is_eio),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
