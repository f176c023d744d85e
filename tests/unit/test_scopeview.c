/* SPDX-License-Identifier: MIT */
/* fs/fuse/scopeview.c without a mount: a view that cannot be mounted is EIO, says where and
 * why, and leaves nothing behind. A view that mounts is test_scope_views.py's (a real FUSE
 * mount). Its other session error, a session libfuse will not create: the options it is
 * given are the daemon's own, fixed ones (sfs_session_new), so only a resource can refuse it;
 * the one taken here is a thread-specific key (fuse_session_new's splice pipe key). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fuse/scopeview.h"
#include "fs/tree/scope.h"
#include "tests/unit/testutil.h"
#include "tests/unit/treefix.h"

static void test_a_view_that_cannot_be_mounted_is_eio_and_says_where(void **state)
{
        struct tu_dir dir;
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *main_tree = new_tree(&cfg), *scope = NULL;
        struct sfs_scope_spec spec = { .name = "sandbox" };
        struct sfs_scopeviews *v = NULL;
        const struct sfs_view_ops *ops;
        struct sfs_view *view = NULL;
        char path[PATH_MAX], msg[512] = "", want[PATH_MAX + 64];
        uint64_t dev = 77;
        struct stat st;

        (void)state;
        assert_int_equal(tu_dir_make(&dir), 0);
        sfs_scope_default_limits(main_tree, &spec.limits);
        assert_int_equal(sfs_tree_new_scope(main_tree, &spec, &scope), 0);
        assert_int_equal(sfs_scopeviews_new(0, false, &v), 0);
        ops = sfs_scopeviews_ops(v);
        /* Where a view cannot be: a directory that does not exist. */
        snprintf(path, sizeof(path), "%s/missing/view", dir.path);
        const struct sfs_view_request req = { .scope = "sandbox", .path = path, .ro = true };
        assert_int_equal(ops->mount(ops->ctx, &req, scope, &view, &dev, msg, sizeof(msg)),
                         -EIO);
        snprintf(want, sizeof(want), "%s: mounting the view failed", path);
        assert_string_equal(msg, want);
        assert_null(view);
        assert_int_equal(dev, 77);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);
        /* The tree stays the caller's: freed here, after the backend. */
        sfs_scopeviews_free(v);
        sfs_tree_free(scope);
        sfs_tree_free(main_tree);
        tu_dir_remove(&dir);
}

/* Takes every thread-specific key this process may still create, as a daemon whose libraries
 * hold them all would have: how many, at most max, were taken into keys. */
static size_t take_all_keys(pthread_key_t *keys, size_t max)
{
        size_t n = 0;

        while (n < max && pthread_key_create(&keys[n], NULL) == 0)
                n++;
        return n;
}

static void test_a_session_libfuse_will_not_create_is_eio_and_leaves_nothing(void **state)
{
        struct tu_dir dir;
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *main_tree = new_tree(&cfg), *scope = NULL;
        struct sfs_scope_spec spec = { .name = "sandbox" };
        struct sfs_scopeviews *v = NULL;
        const struct sfs_view_ops *ops;
        struct sfs_view *view = NULL;
        char path[PATH_MAX], msg[512] = "", want[PATH_MAX + 64];
        static pthread_key_t keys[PTHREAD_KEYS_MAX + 1];
        uint64_t dev = 77;
        size_t n;

        (void)state;
        assert_int_equal(tu_dir_make(&dir), 0);
        sfs_scope_default_limits(main_tree, &spec.limits);
        assert_int_equal(sfs_tree_new_scope(main_tree, &spec, &scope), 0);
        assert_int_equal(sfs_scopeviews_new(0, false, &v), 0);
        ops = sfs_scopeviews_ops(v);
        /* A directory that does not exist: should the session be made after all, the mount
         * fails and nothing is mounted. */
        snprintf(path, sizeof(path), "%s/missing/view", dir.path);
        const struct sfs_view_request req = { .scope = "sandbox", .path = path, .ro = true };
        n = take_all_keys(keys, sizeof(keys) / sizeof(keys[0]));
        assert_true(n < sizeof(keys) / sizeof(keys[0])); /* the limit was reached */
        assert_int_equal(ops->mount(ops->ctx, &req, scope, &view, &dev, msg, sizeof(msg)), -EIO);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(pthread_key_delete(keys[i]), 0);
        assert_string_equal(msg, "cannot create the view's FUSE session");
        assert_null(view);
        assert_int_equal(dev, 77);
        /* Beside it: the same request with keys to spare gets its session, and goes on to the
         * mount, which the missing directory refuses. */
        assert_int_equal(ops->mount(ops->ctx, &req, scope, &view, &dev, msg, sizeof(msg)), -EIO);
        snprintf(want, sizeof(want), "%s: mounting the view failed", path);
        assert_string_equal(msg, want);
        assert_null(view);
        assert_int_equal(dev, 77);
        sfs_scopeviews_free(v);
        sfs_tree_free(scope);
        sfs_tree_free(main_tree);
        tu_dir_remove(&dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_view_that_cannot_be_mounted_is_eio_and_says_where),
                cmocka_unit_test(test_a_session_libfuse_will_not_create_is_eio_and_leaves_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
