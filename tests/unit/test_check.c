/* SPDX-License-Identifier: MIT */
/* mc_check_path_with() driven by a fake backend (the one mocked function: collect), on "/",
 * which is always a mount root: orchestration, pinned descriptor, errors. Where a test needs
 * the kernel to answer otherwise (no unique mount ids, a probe refused), a table of kernel
 * calls (kernel-calls.h) answers in its place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "mountcheck/backend.h"
#include "mountcheck/check.h"
#include "mountcheck/identity.h"
#include "mountcheck/kernel-calls.h"

enum fake_mode { FAKE_ALONE, FAKE_STACKED, FAKE_ERROR, FAKE_AT_PATH };
static enum fake_mode fake_mode;
static int fake_calls;
/* The type and flags of every record the fake lists. */
static const char *fake_fstype = "fakefs";
static uint32_t fake_options = MC_OPT_RW;

static int push(struct mc_mount_set *set, uint64_t id, uint64_t parent, const char *mp)
{
        struct mc_mount *m = mc_mount_set_push(set);
        if (!m)
                return -ENOMEM;
        m->id = id;
        m->parent_id = parent;
        m->options = fake_options;
        if (mc_mount_set_str(&m->mount_point, mp) < 0 || mc_mount_set_str(&m->root, "/") < 0 ||
            mc_mount_set_str(&m->fstype, fake_fstype) < 0)
                return -ENOMEM;
        return 0;
}

static int fake_collect(const struct mc_query *q, struct mc_mount_set *set)
{
        fake_calls++;
        switch (fake_mode) {
        case FAKE_ERROR:
                return -ENOSYS;
        case FAKE_AT_PATH:
                return (q->want & MC_WANT_AT_PATH) ? push(set, 7, 1, q->path) : 0;
        case FAKE_STACKED:
                if (!q->has_target)
                        return 0;
                if (q->want & MC_WANT_PARENT) {
                        int r = push(set, 12345, 12345, q->path);
                        if (r < 0)
                                return r;
                }
                return push(set, q->target_id, 12345, q->path);
        case FAKE_ALONE:
                return q->has_target ? push(set, q->target_id, q->target_id, q->path) : 0;
        }
        return -EINVAL;
}

static const struct mc_backend_ops fake = {
        .name = "fake",
        .kind = MC_BACKEND_AUTO,
        .id_unique = true,
        .collect = fake_collect,
};

static struct mc_policy any_policy(void)
{
        struct mc_policy p;
        assert_int_equal(mc_policy_preset(&p, "snapfs"), 0);
        assert_int_equal(mc_policy_set(&p, "fstype", "any"), 0);
        assert_int_equal(mc_policy_set(&p, "require", ""), 0);
        assert_int_equal(mc_policy_set(&p, "owner", "any"), 0);
        return p;
}

static int fake_setup(void **state)
{
        struct mc_identity id;
        int fd;
        (void)state;
        fake_calls = 0;
        fake_fstype = "fakefs";
        fake_options = MC_OPT_RW;
        /* The fake speaks unique ids: skip where the kernel has none (pre-6.8). */
        if (mc_open_path("/", &fd) < 0)
                return -1;
        int r = mc_fd_identity(fd, &id);
        close(fd);
        return r < 0 || !id.has_unique ? -1 : 0;
}

/* The kernel, except for what a test changes: bits removed from every statx answer, and the
 * errno of the liveness probe (a forced-sync statx). */
static unsigned int statx_drop_mask;
static int probe_errno;
/* A snapfs root's answers about scopes: the xattr user.snapfs.scope (its value, or the errno
 * it fails with) and the lookup of .staging (a directory, or the errno); each counted. */
static const char *scope_value;
static size_t scope_len;
static int scope_errno, staging_errno, scope_asked, staging_asked;

static long fake_dir_getxattr(int dirfd, const char *name, void *value, size_t size)
{
        (void)dirfd;
        scope_asked++;
        assert_string_equal(name, "user.snapfs.scope");
        if (scope_errno) {
                errno = scope_errno;
                return -1;
        }
        if (scope_len > size) {
                errno = ERANGE;
                return -1;
        }
        memcpy(value, scope_value, scope_len);
        return (long)scope_len;
}

static void set_scope(const char *value, int err)
{
        scope_value = value;
        scope_len = value ? strlen(value) : 0;
        scope_errno = err;
}

static int fake_statx(int dirfd, const char *path, int flags, unsigned int mask,
                      struct statx *stx)
{
        if ((flags & AT_STATX_FORCE_SYNC) && probe_errno) {
                errno = probe_errno;
                return -1;
        }
        if (strcmp(path, ".staging") == 0) {
                staging_asked++;
                if (staging_errno) {
                        errno = staging_errno;
                        return -1;
                }
                memset(stx, 0, sizeof(*stx));
                stx->stx_mask = STATX_TYPE;
                stx->stx_mode = S_IFDIR | 01777;
                return 0;
        }
        if (statx(dirfd, path, flags, mask, stx) < 0)
                return -1;
        stx->stx_mask &= ~statx_drop_mask;
        return 0;
}

static struct mc_kernel fake_kernel;

static int fake_kernel_setup(void **state)
{
        int r = fake_setup(state);

        statx_drop_mask = 0;
        probe_errno = 0;
        set_scope(NULL, ENODATA);
        staging_errno = ENOENT;
        scope_asked = staging_asked = 0;
        fake_kernel = mc_kernel_linux;
        fake_kernel.statx = fake_statx;
        fake_kernel.dir_getxattr = fake_dir_getxattr;
        mc_kernel_swap(&fake_kernel);
        return r;
}

static int fake_kernel_teardown(void **state)
{
        (void)state;
        mc_kernel_swap(NULL);
        return 0;
}

static void test_compliant_verdict_hands_out_the_pinned_root(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        uint64_t id;
        bool unique;
        int fd = -2;
        (void)state;
        fake_mode = FAKE_ALONE;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_true(v.compliant);
        assert_true(v.has_mount_id);
        assert_true(fd >= 0);
        assert_int_equal(mc_fd_mount_id(fd, &id, &unique), 0);
        assert_int_equal(id, v.mount_id);
        assert_int_equal(unique, v.mount_id_unique);
        close(fd);
}

static void test_refusal_hands_out_no_descriptor(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        fake_mode = FAKE_STACKED;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_false(v.compliant);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_STACKED);
        assert_int_equal(fd, -1);
}

static void test_backend_error_is_returned_not_judged(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        fake_mode = FAKE_ERROR;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), -ENOSYS);
        assert_false(v.compliant);
        assert_int_equal(fd, -1);
}

static void test_non_canonical_path_never_reaches_the_backend(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        (void)state;
        fake_mode = FAKE_ALONE;
        assert_int_equal(mc_check_path_with("//", &p, &fake, &v, NULL), 0);
        assert_int_equal(fake_calls, 0);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_NON_CANONICAL_PATH);
}

static void test_missing_path_is_enoent_unless_a_mount_is_recorded_there(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        const char *path = "/nonexistent-mc-test-path";
        (void)state;
        fake_mode = FAKE_ALONE;
        assert_int_equal(mc_check_path_with(path, &p, &fake, &v, NULL), -ENOENT);
        fake_mode = FAKE_AT_PATH;
        assert_int_equal(mc_check_path_with(path, &p, &fake, &v, NULL), 0);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_ANCESTOR_OVERMOUNTED);
        assert_false(v.has_mount_id);
}

static void test_bad_arguments_are_einval(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        assert_int_equal(mc_check_path(NULL, &p, MC_BACKEND_AUTO, &v, &fd), -EINVAL);
        assert_int_equal(fd, -1);
        assert_int_equal(mc_check_path("/", NULL, MC_BACKEND_AUTO, &v, NULL), -EINVAL);
        assert_int_equal(mc_check_path("/", &p, MC_BACKEND_AUTO, NULL, NULL), -EINVAL);
        assert_int_equal(mc_check_path("/", &p, (enum mc_backend)42, &v, NULL), -EINVAL);
}

static void test_a_kernel_without_unique_ids_is_eopnotsupp_for_a_backend_that_needs_them(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        /* Before Linux 6.8 statx reports only the reusable id, which statmount cannot take. */
        statx_drop_mask = MC_STATX_MNT_ID_UNIQUE;
        fake_mode = FAKE_ALONE;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), -EOPNOTSUPP);
        assert_int_equal(fake_calls, 0);
        assert_false(v.compliant);
        assert_int_equal(fd, -1);
        /* The automatic choice falls back to mountinfo, which lists reusable ids. */
        p.require_private = false;
        assert_int_equal(mc_check_path("/", &p, MC_BACKEND_AUTO, &v, NULL), 0);
        assert_int_equal(v.backend, MC_BACKEND_MOUNTINFO);
        assert_true(v.has_mount_id);
        assert_false(v.mount_id_unique);
}

static void test_probe_eoverflow_is_user_namespace_even_when_trusted(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        fake_mode = FAKE_ALONE;
        /* FUSE's answer to a caller its connection's user namespace does not map: a fact
         * about the mount, judged, not a system error handed back. */
        probe_errno = EOVERFLOW;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_USER_NAMESPACE);
        assert_non_null(strstr(v.findings[0].message, "EOVERFLOW"));
        assert_int_equal(fd, -1);
        /* Trusting user namespaces cannot help: none of the caller's requests gets through. */
        p.trust_user_namespace = true;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_USER_NAMESPACE);
        /* The probe answered: the same mount is compliant. */
        probe_errno = 0;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_true(v.compliant);
        assert_true(fd >= 0);
        close(fd);
}

static void test_probe_enotconn_is_transport_not_connected_and_eacces_an_error(void **state)
{
        struct mc_policy p = any_policy();
        struct mc_verdict v;
        (void)state;
        fake_mode = FAKE_ALONE;
        probe_errno = ENOTCONN;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_TRANSPORT_NOT_CONNECTED);
        /* Any other refusal of the probe is the caller's system error, not a verdict. */
        probe_errno = EACCES;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), -EACCES);
        assert_false(v.compliant);
        /* Without the probe nothing is sent, so nothing can be refused. */
        p.probe_transport = false;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
}

/* "/" listed as a snapfs mount (fstype fuse.snapfs, flags as given), its root a view of
 * scope "sandbox-a" that does not publish unless a test says so. */
static struct mc_policy scope_view(uint32_t options)
{
        struct mc_policy p = any_policy();
        fake_mode = FAKE_ALONE;
        fake_fstype = "fuse.snapfs";
        fake_options = options;
        set_scope("sandbox-a", 0);
        return p;
}

static void test_a_read_write_view_without_staging_is_scope_writable_and_with_it_compliant(
        void **state)
{
        struct mc_policy p = scope_view(MC_OPT_RW);
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_int_equal(v.n_findings, 1);
        assert_int_equal(v.findings[0].code, MC_SCOPE_WRITABLE);
        assert_true(v.is_scope);
        assert_string_equal(v.scope, "sandbox-a");
        assert_int_equal(fd, -1);
        assert_int_equal(scope_asked, 1);
        assert_int_equal(staging_asked, 1);
        /* The scope allows publishing: its root has .staging/, the same mount passes. */
        staging_errno = 0;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_true(v.compliant);
        assert_true(v.scope_publishes);
        assert_true(fd >= 0);
        close(fd);
}

static void test_a_read_only_mount_is_asked_about_its_scope_only_to_report_it(void **state)
{
        struct mc_policy p = scope_view(MC_OPT_RO);
        struct mc_verdict v;
        (void)state;
        assert_int_equal(p.scope, MC_SCOPE_JUDGE);
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        assert_false(v.is_scope);
        assert_int_equal(scope_asked, 0);
        p.scope = MC_SCOPE_REPORT;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        assert_true(v.is_scope);
        assert_string_equal(v.scope, "sandbox-a");
        assert_int_equal(scope_asked, 1);
}

static void test_only_a_live_snapfs_mount_is_asked_about_scopes(void **state)
{
        struct mc_policy p = scope_view(MC_OPT_RW);
        struct mc_verdict v;
        (void)state;
        /* Anyone may set user.snapfs.scope on a tmpfs root: another type is never asked. */
        fake_fstype = "tmpfs";
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        assert_false(v.is_scope);
        /* Neither without the probe (a daemon checking itself) nor with it ignored. */
        fake_fstype = "fuse.snapfs";
        p.probe_transport = false;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        p.probe_transport = true;
        p.scope = MC_SCOPE_IGNORE;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        assert_int_equal(scope_asked, 0);
        /* A dead daemon is not asked either: its finding is the transport's. */
        p.scope = MC_SCOPE_JUDGE;
        probe_errno = ENOTCONN;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_int_equal(v.findings[0].code, MC_TRANSPORT_NOT_CONNECTED);
        assert_int_equal(scope_asked, 0);
        /* The same live snapfs mount is asked. */
        probe_errno = 0;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_int_equal(scope_asked, 1);
        assert_true(v.is_scope);
}

static void test_a_root_that_names_no_scope_is_no_view(void **state)
{
        struct mc_policy p = scope_view(MC_OPT_RW);
        struct mc_verdict v;
        (void)state;
        set_scope(NULL, ENODATA);
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        assert_false(v.is_scope);
        assert_int_equal(staging_asked, 0);
        set_scope(NULL, EOPNOTSUPP);
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_true(v.compliant);
        assert_false(v.is_scope);
}

static void test_a_view_whose_name_is_unreadable_is_judged_without_a_name(void **state)
{
        char long_name[80];
        struct mc_policy p = scope_view(MC_OPT_RW);
        struct mc_verdict v;
        (void)state;
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        set_scope(long_name, 0); /* longer than the buffer: ERANGE */
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_int_equal(v.findings[0].code, MC_SCOPE_WRITABLE);
        assert_string_equal(v.scope, "");
        long_name[65] = '\0'; /* fits the buffer, longer than any scope name */
        set_scope(long_name, 0);
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_int_equal(v.findings[0].code, MC_SCOPE_WRITABLE);
        assert_string_equal(v.scope, "");
        scope_value = "a\0b"; /* a NUL inside */
        scope_len = 3;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_int_equal(v.findings[0].code, MC_SCOPE_WRITABLE);
        assert_string_equal(v.scope, "");
        /* The longest name there is reads whole. */
        long_name[64] = '\0';
        set_scope(long_name, 0);
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, NULL), 0);
        assert_string_equal(v.scope, long_name);
}

static void test_a_daemon_that_will_not_say_is_an_error_not_a_verdict(void **state)
{
        struct mc_policy p = scope_view(MC_OPT_RW);
        struct mc_verdict v;
        int fd = -2;
        (void)state;
        set_scope(NULL, EACCES);
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), -EACCES);
        assert_false(v.compliant);
        assert_int_equal(fd, -1);
        set_scope("sandbox-a", 0);
        staging_errno = EIO;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), -EIO);
        assert_int_equal(fd, -1);
        staging_errno = 0;
        assert_int_equal(mc_check_path_with("/", &p, &fake, &v, &fd), 0);
        assert_true(v.compliant);
        close(fd);
}

#define FAKE_KERNEL(t) cmocka_unit_test_setup_teardown(t, fake_kernel_setup, fake_kernel_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_compliant_verdict_hands_out_the_pinned_root, fake_setup),
                cmocka_unit_test_setup(test_refusal_hands_out_no_descriptor, fake_setup),
                cmocka_unit_test_setup(test_backend_error_is_returned_not_judged, fake_setup),
                cmocka_unit_test_setup(test_non_canonical_path_never_reaches_the_backend, fake_setup),
                cmocka_unit_test_setup(test_missing_path_is_enoent_unless_a_mount_is_recorded_there, fake_setup),
                cmocka_unit_test(test_bad_arguments_are_einval),
                FAKE_KERNEL(test_a_kernel_without_unique_ids_is_eopnotsupp_for_a_backend_that_needs_them),
                FAKE_KERNEL(test_probe_eoverflow_is_user_namespace_even_when_trusted),
                FAKE_KERNEL(test_probe_enotconn_is_transport_not_connected_and_eacces_an_error),
                FAKE_KERNEL(test_a_read_write_view_without_staging_is_scope_writable_and_with_it_compliant),
                FAKE_KERNEL(test_a_read_only_mount_is_asked_about_its_scope_only_to_report_it),
                FAKE_KERNEL(test_only_a_live_snapfs_mount_is_asked_about_scopes),
                FAKE_KERNEL(test_a_root_that_names_no_scope_is_no_view),
                FAKE_KERNEL(test_a_view_whose_name_is_unreadable_is_judged_without_a_name),
                FAKE_KERNEL(test_a_daemon_that_will_not_say_is_an_error_not_a_verdict),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
