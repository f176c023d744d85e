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

static int push(struct mc_mount_set *set, uint64_t id, uint64_t parent, const char *mp)
{
        struct mc_mount *m = mc_mount_set_push(set);
        if (!m)
                return -ENOMEM;
        m->id = id;
        m->parent_id = parent;
        m->options = MC_OPT_RW;
        if (mc_mount_set_str(&m->mount_point, mp) < 0 || mc_mount_set_str(&m->root, "/") < 0 ||
            mc_mount_set_str(&m->fstype, "fakefs") < 0)
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

static int fake_statx(int dirfd, const char *path, int flags, unsigned int mask,
                      struct statx *stx)
{
        if ((flags & AT_STATX_FORCE_SYNC) && probe_errno) {
                errno = probe_errno;
                return -1;
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
        fake_kernel = mc_kernel_linux;
        fake_kernel.statx = fake_statx;
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
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
