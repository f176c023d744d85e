/* SPDX-License-Identifier: MIT */
/* fs/tree/control-file.c, the daemon's side (test_control.c is client/control.c's): MNT/.control, one
 * request per descriptor, executed during its write, the reply read back; the owner's and
 * root's alone. The executor is a stub here (the registry's protocol is test_registry.c's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/treefix.h"

static unsigned executed;

/* Answers "reply:" and the request; "bad" is no request at all. */
static int stub(void *ctx, const struct sfs_caller *c, const char *req, size_t len, char **reply,
                size_t *reply_len)
{
        (void)ctx, (void)c;
        if (len == 3 && memcmp(req, "bad", 3) == 0)
                return -EINVAL;
        executed++;
        *reply = malloc(len + 6);
        assert_non_null(*reply);
        memcpy(*reply, "reply:", 6);
        memcpy(*reply + 6, req, len);
        *reply_len = len + 6;
        return 0;
}

static struct sfs_tree *tree(bool hook)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;

        cfg.owner_uid = alice.uid;
        t = new_tree(&cfg);
        if (hook)
                sfs_tree_set_control(t, stub, NULL);
        executed = 0;
        return t;
}

static struct sfs_node *control_node(struct sfs_tree *t, const struct sfs_caller *c)
{
        struct sfs_entry e;
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), ".control", &e), 0);
        return e.node;
}

static void test_only_the_owner_and_root_open_it(void **state)
{
        struct sfs_tree *t = tree(true);
        struct sfs_node *n = control_node(t, &bob);
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct stat st;
        double timeout;

        (void)state;
        /* Another uid finds it (the policy lets it see the root) but may not open it. */
        assert_int_equal(sfs_tree_getattr(t, &bob, n, &st, &timeout), 0);
        assert_int_equal(st.st_mode, S_IFREG | 0600);
        assert_int_equal(st.st_uid, alice.uid);
        assert_int_equal(timeout, 0);
        assert_int_equal(sfs_tree_open(t, &bob, n, O_RDWR, &h, &oi), -EACCES);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDWR, &h, &oi), 0);
        assert_true(oi.direct_io);
        sfs_tree_release(t, h);
        assert_int_equal(sfs_tree_open(t, &root, n, O_RDWR, &h, &oi), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

struct listing {
        bool control;
};

static int note(void *ctx, const char *name, uint64_t ino, mode_t mode, off_t next)
{
        (void)ino, (void)mode, (void)next;
        ((struct listing *)ctx)->control |= strcmp(name, ".control") == 0;
        return 0;
}

static bool lists_control(struct sfs_tree *t, const struct sfs_caller *c)
{
        struct listing l = { false };
        struct sfs_dir *d;

        assert_int_equal(sfs_tree_opendir(t, c, sfs_tree_root(t), &d), 0);
        assert_int_equal(sfs_tree_readdir(t, d, 0, note, &l), 0);
        sfs_tree_releasedir(t, d);
        return l.control;
}

static void test_it_is_listed_for_the_owner_and_root_alone(void **state)
{
        struct sfs_tree *t = tree(true);

        (void)state;
        assert_true(lists_control(t, &alice));
        assert_true(lists_control(t, &root));
        assert_false(lists_control(t, &bob));
        sfs_tree_free(t);
}

static void test_a_read_only_mount_has_none(void **state)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_tree *t;
        struct sfs_entry e;

        (void)state;
        cfg.read_only = true;
        t = new_tree(&cfg);
        assert_int_equal(sfs_tree_lookup(t, &root, sfs_tree_root(t), ".control", &e), -ENOENT);
        assert_false(lists_control(t, &root));
        sfs_tree_free(t);
}

static void test_one_request_per_descriptor_executed_during_its_write(void **state)
{
        struct sfs_tree *t = tree(true);
        struct sfs_node *n = control_node(t, &alice);
        struct readback rb = { .len = 0 };
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDWR, &h, &oi), 0);
        /* Nothing to read before the request. */
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, 0);
        /* Not a whole request at offset 0, or none at all: refused, nothing executed. */
        assert_int_equal(sfs_tree_write(t, &alice, h, "{}", 2, 1), -EINVAL);
        assert_int_equal(sfs_tree_write(t, &alice, h, "", 0, 0), -EINVAL);
        assert_int_equal(sfs_tree_write(t, &alice, h, "bad", 3, 0), -EINVAL);
        assert_int_equal(executed, 0);
        /* Another uid holding the descriptor: refused too. */
        assert_int_equal(sfs_tree_write(t, &bob, h, "{}", 2, 0), -EACCES);
        assert_int_equal(sfs_tree_write(t, &alice, h, "{}", 2, 0), 0);
        assert_int_equal(executed, 1);
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, 8);
        assert_memory_equal(rb.buf, "reply:{}", 8);
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 6, collect, &rb), 0);
        assert_memory_equal(rb.buf, "{}", 2);
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 8, collect, &rb), 0);
        assert_int_equal(rb.len, 0);
        /* A second request, on the same descriptor, at any offset: EBUSY. */
        assert_int_equal(sfs_tree_write(t, &alice, h, "{}", 2, 0), -EBUSY);
        assert_int_equal(sfs_tree_write(t, &alice, h, "{}", 2, 2), -EBUSY);
        assert_int_equal(executed, 1);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_a_request_past_64k_is_einval(void **state)
{
        struct sfs_tree *t = tree(true);
        struct sfs_node *n = control_node(t, &alice);
        char *big = calloc(1, SFS_CONTROL_REQUEST_MAX + 1);
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        assert_non_null(big);
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDWR, &h, &oi), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h, big, SFS_CONTROL_REQUEST_MAX + 1, 0),
                         -EINVAL);
        assert_int_equal(sfs_tree_write(t, &alice, h, big, SFS_CONTROL_REQUEST_MAX, 0), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
        free(big);
}

static void test_without_an_executor_a_request_is_eopnotsupp(void **state)
{
        struct sfs_tree *t = tree(false);
        struct sfs_node *n = control_node(t, &alice);
        struct sfs_open_info oi;
        struct sfs_handle *h;

        (void)state;
        assert_int_equal(sfs_tree_open(t, &alice, n, O_RDWR, &h, &oi), 0);
        assert_int_equal(sfs_tree_write(t, &alice, h, "{}", 2, 0), -EOPNOTSUPP);
        /* Not executed: the descriptor may still make its request once one is there. */
        sfs_tree_set_control(t, stub, NULL);
        assert_int_equal(sfs_tree_write(t, &alice, h, "{}", 2, 0), 0);
        sfs_tree_release(t, h);
        sfs_tree_free(t);
}

static void test_it_is_neither_removed_nor_renamed(void **state)
{
        struct sfs_tree *t = tree(true);
        struct sfs_node *published;

        (void)state;
        assert_int_equal(sfs_tree_unlink(t, &root, sfs_tree_root(t), ".control"), -EPERM);
        assert_int_equal(sfs_tree_rename(t, &root, sfs_tree_root(t), ".control", sfs_tree_root(t),
                                         "x", 0, &published),
                         -EPERM);
        control_node(t, &root);
        sfs_tree_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_only_the_owner_and_root_open_it),
                cmocka_unit_test(test_it_is_listed_for_the_owner_and_root_alone),
                cmocka_unit_test(test_a_read_only_mount_has_none),
                cmocka_unit_test(test_one_request_per_descriptor_executed_during_its_write),
                cmocka_unit_test(test_a_request_past_64k_is_einval),
                cmocka_unit_test(test_without_an_executor_a_request_is_eopnotsupp),
                cmocka_unit_test(test_it_is_neither_removed_nor_renamed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
