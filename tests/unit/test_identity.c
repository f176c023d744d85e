/* SPDX-License-Identifier: MIT */
/* Opening a path without symlinks, both ways (openat2 and the component walk), and the
 * mount identity of a descriptor. No mounts needed: a temporary tree and "/". Where the
 * answer depends on the kernel (a statx field it lacks, a resolution it keeps asking to
 * retry), a table of kernel calls (kernel-calls.h) answers in its place. */
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mountcheck/identity.h"
#include "mountcheck/kernel-calls.h"

static char base[] = "/tmp/mc-identity-XXXXXX";
static char real_dir[256], link_final[256], link_mid[256], through_link[256], file[256],
        through_file[256], missing[256];

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(base))
                return -1;
        snprintf(real_dir, sizeof(real_dir), "%s/real", base);
        snprintf(link_final, sizeof(link_final), "%s/link", base);
        snprintf(link_mid, sizeof(link_mid), "%s/mid", base);
        snprintf(through_link, sizeof(through_link), "%s/mid/real", base);
        snprintf(file, sizeof(file), "%s/file", base);
        snprintf(through_file, sizeof(through_file), "%s/file/x", base);
        snprintf(missing, sizeof(missing), "%s/missing", base);
        if (mkdir(real_dir, 0755) < 0 || symlink(real_dir, link_final) < 0 ||
            symlink(base, link_mid) < 0)
                return -1;
        int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
                return -1;
        close(fd);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        unlink(file);
        unlink(link_mid);
        unlink(link_final);
        rmdir(real_dir);
        rmdir(base);
        return 0;
}

/* A kernel that answers like this one except where a test says otherwise. */
static unsigned int statx_drop_mask;      /* bits removed from stx_mask */
static uint64_t statx_drop_attributes;    /* bits removed from stx_attributes_mask */
static int statx_force_sync_errno;        /* a forced-sync statx fails with this */
static int openat2_eagain;                /* the first this many openat2 calls: EAGAIN */
static int openat2_calls;
static const char *user_namespace_path;   /* NULL: no pidfd support (ENOTTY) */

static int fake_statx(int dirfd, const char *path, int flags, unsigned int mask,
                      struct statx *stx)
{
        if ((flags & AT_STATX_FORCE_SYNC) && statx_force_sync_errno) {
                errno = statx_force_sync_errno;
                return -1;
        }
        if (statx(dirfd, path, flags, mask, stx) < 0)
                return -1;
        stx->stx_mask &= ~statx_drop_mask;
        stx->stx_attributes_mask &= ~statx_drop_attributes;
        return 0;
}

static long fake_openat2(int dirfd, const char *path, struct mc_kopen_how *how, size_t size)
{
        if (openat2_calls++ < openat2_eagain) {
                errno = EAGAIN;
                return -1;
        }
        return mc_kernel_linux.openat2(dirfd, path, how, size);
}

static int fake_user_namespace(void)
{
        if (!user_namespace_path) {
                errno = ENOTTY;
                return -1;
        }
        return open(user_namespace_path, O_RDONLY | O_CLOEXEC);
}

static struct mc_kernel fake_kernel;

static int fake_kernel_setup(void **state)
{
        (void)state;
        statx_drop_mask = 0;
        statx_drop_attributes = 0;
        statx_force_sync_errno = 0;
        openat2_eagain = 0;
        openat2_calls = 0;
        user_namespace_path = NULL;
        fake_kernel = mc_kernel_linux;
        fake_kernel.statx = fake_statx;
        fake_kernel.openat2 = fake_openat2;
        fake_kernel.user_namespace = fake_user_namespace;
        mc_kernel_swap(&fake_kernel);
        return 0;
}

static int fake_kernel_teardown(void **state)
{
        (void)state;
        mc_kernel_swap(NULL);
        return 0;
}

typedef int (*opener)(const char *, int *);
static const opener openers[] = { mc_open_path, mc_open_path_walk };

static void test_final_symlink_is_eloop_both_ways(void **state)
{
        (void)state;
        for (size_t i = 0; i < 2; i++) {
                int fd = -2;
                assert_int_equal(openers[i](link_final, &fd), -ELOOP);
                assert_int_equal(fd, -2);
        }
}

static void test_intermediate_symlink_is_eloop_both_ways(void **state)
{
        (void)state;
        for (size_t i = 0; i < 2; i++) {
                int fd = -2;
                assert_int_equal(openers[i](through_link, &fd), -ELOOP);
        }
}

static void test_magic_link_is_eloop_both_ways(void **state)
{
        (void)state;
        for (size_t i = 0; i < 2; i++) {
                int fd = -2;
                assert_int_equal(openers[i]("/proc/self/cwd", &fd), -ELOOP);
        }
}

static void test_real_directory_opens_to_the_same_inode_both_ways(void **state)
{
        struct stat want, got;
        (void)state;
        assert_int_equal(stat(real_dir, &want), 0);
        for (size_t i = 0; i < 2; i++) {
                int fd = -1;
                assert_int_equal(openers[i](real_dir, &fd), 0);
                assert_true(fd >= 0);
                assert_int_equal(fstat(fd, &got), 0);
                assert_int_equal(got.st_ino, want.st_ino);
                assert_int_equal(got.st_dev, want.st_dev);
                /* O_PATH: the descriptor cannot be read through. */
                assert_int_equal(fcntl(fd, F_GETFL) & O_PATH, O_PATH);
                assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                close(fd);
        }
}

static void test_missing_is_enoent_and_file_is_enotdir_both_ways(void **state)
{
        (void)state;
        for (size_t i = 0; i < 2; i++) {
                int fd = -2;
                assert_int_equal(openers[i](missing, &fd), -ENOENT);
                assert_int_equal(openers[i](file, &fd), -ENOTDIR);
                assert_int_equal(openers[i](through_file, &fd), -ENOTDIR);
                assert_int_equal(openers[i]("", &fd), -ENOENT);
                assert_int_equal(fd, -2);
        }
}

static void test_root_is_a_mount_root_and_a_subdirectory_is_not(void **state)
{
        struct mc_identity id;
        int fd;
        (void)state;
        assert_int_equal(mc_open_path("/", &fd), 0);
        assert_int_equal(mc_fd_identity(fd, &id), 0);
        assert_true(id.mount_root);
        assert_true(S_ISDIR(id.mode));
        assert_true(id.has_unique || id.has_old);
        close(fd);

        assert_int_equal(mc_open_path(real_dir, &fd), 0);
        assert_int_equal(mc_fd_identity(fd, &id), 0);
        assert_false(id.mount_root);
        assert_int_equal(id.mode & 07777, 0755);
        close(fd);
}

static void test_fd_mount_id_matches_the_identity_and_the_containing_mount(void **state)
{
        struct mc_identity id;
        uint64_t a, b;
        bool ua, ub;
        int dir, f;
        (void)state;
        assert_int_equal(mc_open_path(base, &dir), 0);
        assert_int_equal(mc_fd_identity(dir, &id), 0);
        assert_int_equal(mc_fd_mount_id(dir, &a, &ua), 0);
        assert_int_equal(ua, id.has_unique);
        assert_int_equal(a, id.has_unique ? id.unique_id : id.old_id);
        /* A file opened relative to the directory lies on the same mount. */
        f = openat(dir, "file", O_RDONLY | O_CLOEXEC);
        assert_true(f >= 0);
        assert_int_equal(mc_fd_mount_id(f, &b, &ub), 0);
        assert_int_equal(a, b);
        assert_int_equal(ua, ub);
        close(f);
        close(dir);
}

static void test_bad_descriptors_are_refused(void **state)
{
        struct mc_identity id;
        uint64_t x;
        (void)state;
        assert_int_equal(mc_fd_mount_id(-1, &x, NULL), -EBADF);
        assert_int_equal(mc_fd_identity(-1, &id), -EINVAL);
        assert_int_equal(mc_probe_owner(-1, NULL), -EBADF);
        assert_int_equal(mc_open_path(NULL, &(int){ 0 }), -EINVAL);
}

static void test_probe_answers_on_a_local_filesystem(void **state)
{
        int fd;
        (void)state;
        assert_int_equal(mc_open_path(base, &fd), 0);
        assert_int_equal(mc_probe_owner(fd, NULL), 0);
        close(fd);
}

static void test_caller_user_namespace_agrees_with_proc(void **state)
{
        struct stat st;
        int r = mc_caller_initial_userns();
        long pidfd = syscall(__NR_pidfd_open, getpid(), 0);
        (void)state;
        /* Where pidfd_open does not exist (valgrind 3.19 does not emulate it), the answer is
         * that error, never a guess from elsewhere. */
        if (pidfd < 0) {
                assert_int_equal(errno, ENOSYS);
                assert_int_equal(r, -ENOSYS);
                return;
        }
        close((int)pidfd);
        /* The test runs with a /proc it can trust; the library asks by pidfd instead. */
        assert_int_equal(stat("/proc/self/ns/user", &st), 0);
        assert_int_equal(r, st.st_ino == 0xEFFFFFFDU);
}

static void test_walk_refuses_a_missing_path_or_result(void **state)
{
        int fd = -2;
        (void)state;
        assert_int_equal(mc_open_path_walk(NULL, &fd), -EINVAL);
        assert_int_equal(mc_open_path_walk(real_dir, NULL), -EINVAL);
        assert_int_equal(mc_open_path(real_dir, NULL), -EINVAL);
        assert_int_equal(fd, -2);
}

static void test_walk_on_a_kernel_that_hides_the_file_type_is_eopnotsupp(void **state)
{
        int fd = -2;
        (void)state;
        /* Without the type a symlink cannot be told from a directory: refuse, never guess. */
        statx_drop_mask = STATX_TYPE;
        assert_int_equal(mc_open_path_walk(real_dir, &fd), -EOPNOTSUPP);
        assert_int_equal(fd, -2);
        statx_drop_mask = 0;
        assert_int_equal(mc_open_path_walk(real_dir, &fd), 0);
        close(fd);
}

static void test_resolution_retried_eight_times_then_eagain(void **state)
{
        int fd = -2;
        (void)state;
        /* A rename or mount racing every resolution: give up rather than loop forever. */
        openat2_eagain = 1000;
        assert_int_equal(mc_open_path(real_dir, &fd), -EAGAIN);
        assert_int_equal(openat2_calls, 8);
        assert_int_equal(fd, -2);
        /* Seven races, then a quiet moment: the eighth try opens it. */
        openat2_calls = 0;
        openat2_eagain = 7;
        assert_int_equal(mc_open_path(real_dir, &fd), 0);
        assert_int_equal(openat2_calls, 8);
        close(fd);
}

static void test_identity_on_a_kernel_without_the_mount_root_attribute_is_eopnotsupp(void **state)
{
        struct mc_identity id;
        int fd;
        (void)state;
        assert_int_equal(mc_open_path("/", &fd), 0);
        /* Without it "not the root of a mount" would be a guess. */
        statx_drop_attributes = MC_STATX_ATTR_MOUNT_ROOT;
        assert_int_equal(mc_fd_identity(fd, &id), -EOPNOTSUPP);
        statx_drop_attributes = 0;
        statx_drop_mask = STATX_MODE;
        assert_int_equal(mc_fd_identity(fd, &id), -EOPNOTSUPP);
        statx_drop_mask = STATX_TYPE;
        assert_int_equal(mc_fd_identity(fd, &id), -EOPNOTSUPP);
        statx_drop_mask = 0;
        assert_int_equal(mc_fd_identity(fd, &id), 0);
        assert_true(id.mount_root);
        close(fd);
}

static void test_identity_on_a_kernel_without_mount_ids_is_eopnotsupp(void **state)
{
        struct mc_identity id;
        int fd;
        (void)state;
        assert_int_equal(mc_open_path("/", &fd), 0);
        statx_drop_mask = MC_STATX_MNT_ID_UNIQUE | MC_STATX_MNT_ID;
        assert_int_equal(mc_fd_identity(fd, &id), -EOPNOTSUPP);
        /* Before Linux 6.8: the reusable id only, which mountinfo shows. */
        statx_drop_mask = MC_STATX_MNT_ID_UNIQUE;
        assert_int_equal(mc_fd_identity(fd, &id), 0);
        assert_false(id.has_unique);
        assert_true(id.has_old);
        close(fd);
}

static void test_fd_mount_id_on_a_kernel_without_mount_ids_is_eopnotsupp(void **state)
{
        struct mc_identity id;
        uint64_t x = 42;
        bool unique = true;
        int fd;
        (void)state;
        assert_int_equal(mc_open_path("/", &fd), 0);
        assert_int_equal(mc_fd_identity(fd, &id), 0);
        statx_drop_mask = MC_STATX_MNT_ID_UNIQUE | MC_STATX_MNT_ID;
        assert_int_equal(mc_fd_mount_id(fd, &x, &unique), -EOPNOTSUPP);
        assert_int_equal(x, 42);
        statx_drop_mask = MC_STATX_MNT_ID_UNIQUE;
        assert_int_equal(mc_fd_mount_id(fd, &x, &unique), 0);
        assert_false(unique);
        assert_int_equal(x, id.old_id);
        close(fd);
}

static void test_owner_probe_on_a_kernel_without_the_uid_is_eopnotsupp(void **state)
{
        uint32_t uid = 42;
        int fd;
        (void)state;
        assert_int_equal(mc_open_path(base, &fd), 0);
        statx_drop_mask = STATX_UID;
        assert_int_equal(mc_probe_owner(fd, &uid), -EOPNOTSUPP);
        assert_int_equal(uid, 42);
        /* Liveness alone needs no owner. */
        assert_int_equal(mc_probe_owner(fd, NULL), 0);
        statx_drop_mask = 0;
        assert_int_equal(mc_probe_owner(fd, &uid), 0);
        assert_int_equal(uid, geteuid());
        close(fd);
}

static void test_probe_passes_the_kernels_refusal_on(void **state)
{
        int fd;
        (void)state;
        assert_int_equal(mc_open_path(base, &fd), 0);
        statx_force_sync_errno = ENOTCONN;
        assert_int_equal(mc_probe_owner(fd, NULL), -ENOTCONN);
        statx_force_sync_errno = EOVERFLOW;
        assert_int_equal(mc_probe_owner(fd, &(uint32_t){ 0 }), -EOVERFLOW);
        close(fd);
}

static void test_user_namespace_answer_that_is_not_a_namespace_is_eio(void **state)
{
        struct stat st;
        (void)state;
        /* The descriptor the kernel handed back must be an nsfs inode, or its inode number
         * means nothing. */
        user_namespace_path = base;
        assert_int_equal(mc_caller_initial_userns(), -EIO);
        /* A kernel before 6.11 has no such ioctl: that error, never a guess. */
        user_namespace_path = NULL;
        assert_int_equal(mc_caller_initial_userns(), -ENOTTY);
        /* The real namespace descriptor (opened through this test's trusted /proc). */
        user_namespace_path = "/proc/self/ns/user";
        assert_int_equal(stat(user_namespace_path, &st), 0);
        assert_int_equal(mc_caller_initial_userns(), st.st_ino == 0xEFFFFFFDU);
}

#define FAKE_KERNEL(t) cmocka_unit_test_setup_teardown(t, fake_kernel_setup, fake_kernel_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_final_symlink_is_eloop_both_ways),
                cmocka_unit_test(test_intermediate_symlink_is_eloop_both_ways),
                cmocka_unit_test(test_magic_link_is_eloop_both_ways),
                cmocka_unit_test(test_real_directory_opens_to_the_same_inode_both_ways),
                cmocka_unit_test(test_missing_is_enoent_and_file_is_enotdir_both_ways),
                cmocka_unit_test(test_root_is_a_mount_root_and_a_subdirectory_is_not),
                cmocka_unit_test(test_fd_mount_id_matches_the_identity_and_the_containing_mount),
                cmocka_unit_test(test_bad_descriptors_are_refused),
                cmocka_unit_test(test_probe_answers_on_a_local_filesystem),
                cmocka_unit_test(test_caller_user_namespace_agrees_with_proc),
                cmocka_unit_test(test_walk_refuses_a_missing_path_or_result),
                FAKE_KERNEL(test_walk_on_a_kernel_that_hides_the_file_type_is_eopnotsupp),
                FAKE_KERNEL(test_resolution_retried_eight_times_then_eagain),
                FAKE_KERNEL(test_identity_on_a_kernel_without_the_mount_root_attribute_is_eopnotsupp),
                FAKE_KERNEL(test_identity_on_a_kernel_without_mount_ids_is_eopnotsupp),
                FAKE_KERNEL(test_fd_mount_id_on_a_kernel_without_mount_ids_is_eopnotsupp),
                FAKE_KERNEL(test_owner_probe_on_a_kernel_without_the_uid_is_eopnotsupp),
                FAKE_KERNEL(test_probe_passes_the_kernels_refusal_on),
                FAKE_KERNEL(test_user_namespace_answer_that_is_not_a_namespace_is_eio),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
