/* SPDX-License-Identifier: MIT */
/* fs/tree/watch.c: a scope view's watch of an entry (VIEW/.watch.NAME) is ready once the
 * entry moves or goes, and the poll handles it keeps are woken by that move, once, and by
 * nothing else; a watch is refused whom the view refuses, and tells nothing of what is not
 * there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/treefix.h"
#include "fs/tree/scope.h"

static const struct sfs_caller carol = { .uid = 2000, .gid = 2000, .pid = 21 };
static const struct sfs_caller dave = { .uid = 2001, .gid = 2001, .pid = 22 };

/* Poll handles, as the FUSE layer would hand them: each records whether it was woken or only
 * dropped, and the test counts both (none may be lost or handed back twice). */
struct ph {
        int woken, dropped;
};

static void wake(void *p)
{
        ((struct ph *)p)->woken++;
}

static void drop(void *p)
{
        ((struct ph *)p)->dropped++;
}

static const struct sfs_poll_ops ops = { .wake = wake, .drop = drop };
static const int session_a, session_b; /* two sessions' identities */

struct fx {
        struct sfs_tree *main, *a, *b;
};

static struct sfs_tree *scope_of(struct sfs_tree *main, const char *name)
{
        struct sfs_scope_spec spec = { .name = name };
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
        f->a = scope_of(f->main, "sandbox-a");
        f->b = scope_of(f->main, "sandbox-b");
        assert_int_equal(publish(f->main, &root, "v1", "token v1", 8, NULL), 0);
        assert_int_equal(publish(f->main, &root, "v2", "token v2", 8, NULL), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        sfs_tree_free(f->a);
        sfs_tree_free(f->b);
        sfs_tree_free(f->main);
        free(f);
        return 0;
}

/* A change as the registry makes it: applied, then (the kernel's entries invalidated) its
 * moves announced. *marked (may be NULL): whether it marked a watch. */
static int apply_marked(struct sfs_tree *t, enum sfs_scope_op_kind kind, const char *text,
                        const char *entry, bool announce, bool *marked)
{
        struct sfs_scope_op op = { .kind = kind, .has_digest = text != NULL, .entry = entry };
        struct sfs_scope_effects fx = { 0 };
        int r;

        if (text)
                assert_int_equal(snap_sha256(text, strlen(text), &op.digest), 0);
        r = sfs_scope_apply(t, &op, NULL, &fx);
        if (marked)
                *marked = fx.watches;
        if (announce && fx.watches)
                sfs_tree_announce_moves(t);
        sfs_scope_effects_release(t, &fx);
        sfs_scope_effects_free(&fx);
        return r;
}

static int apply(struct sfs_tree *t, enum sfs_scope_op_kind kind, const char *text,
                 const char *entry)
{
        return apply_marked(t, kind, text, entry, true, NULL);
}

static struct sfs_node *watch(struct sfs_tree *t, const struct sfs_caller *c, const char *entry,
                              int want)
{
        char name[sizeof(SFS_WATCH_PREFIX) + SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_entry e = { 0 };

        snprintf(name, sizeof(name), ".watch.%s", entry);
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), name, &e), want);
        if (want == 0) {
                assert_int_equal(e.entry_timeout, 0); /* never answered from the dcache */
                assert_int_equal(sfs_node_kind(e.node), SFS_KIND_WATCH);
        }
        return want == 0 ? e.node : NULL;
}

static unsigned poll_of(struct sfs_tree *t, struct sfs_node *n, uint64_t fh, struct ph *ph,
                        const void *session)
{
        unsigned revents = ~0u;

        assert_int_equal(sfs_tree_poll(t, &carol, n, fh, ph, session, &ops, &revents), 0);
        return revents;
}

static void test_a_rotation_wakes_the_watch_of_its_entry_once(void **state)
{
        struct fx *f = *state;
        struct ph p1 = { 0 }, p2 = { 0 };
        struct sfs_node *w;
        struct stat st;
        double timeout;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        w = watch(f->a, &carol, "token", 0);
        /* Not moved: not ready, and the handles are kept (two pollers without a handle). */
        assert_int_equal(poll_of(f->a, w, 0, &p1, &session_a), 0);
        assert_int_equal(poll_of(f->a, w, 0, &p2, &session_a), 0);
        assert_int_equal(p1.woken + p1.dropped + p2.woken + p2.dropped, 0);
        /* Granting what the entry names already moves nothing. */
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        assert_int_equal(p1.woken + p2.woken, 0);
        /* The rotation wakes both, once. */
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v2", "token"), 0);
        assert_int_equal(p1.woken, 1);
        assert_int_equal(p2.woken, 1);
        assert_int_equal(p1.dropped + p2.dropped, 0);
        /* Ready from now on, without keeping a handle; unlinked. */
        p1 = (struct ph){ 0 };
        assert_int_equal(poll_of(f->a, w, 0, &p1, &session_a), POLLIN | POLLRDNORM | POLLPRI);
        assert_int_equal(p1.dropped, 1);
        assert_int_equal(sfs_tree_getattr(f->a, &carol, w, &st, &timeout), 0);
        assert_int_equal(st.st_nlink, 0);
        assert_int_equal(st.st_size, 0);
        /* A new lookup watches the new binding: another node, not ready. */
        assert_ptr_not_equal(watch(f->a, &carol, "token", 0), w);
        sfs_tree_forget(f->a, w, 1);
}

static void test_a_move_is_not_ready_until_it_is_announced(void **state)
{
        struct fx *f = *state;
        struct ph p = { 0 }, later = { 0 };
        struct sfs_node *w, *fresh;
        bool marked = false;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        w = watch(f->a, &carol, "token", 0);
        assert_int_equal(poll_of(f->a, w, 0, &p, &session_a), 0);
        /* Applied, its names not yet invalidated: nobody woken, nothing ready, since a waiter
         * opening the entry by name now could still reach the old node the kernel caches. */
        assert_int_equal(apply_marked(f->a, SFS_SCOPE_GRANT, "token v2", "token", false,
                                      &marked), 0);
        assert_true(marked);
        assert_int_equal(p.woken + p.dropped, 0);
        assert_int_equal(poll_of(f->a, w, 0, &later, &session_a), 0);
        /* A lookup meanwhile watches the new binding already. */
        fresh = watch(f->a, &carol, "token", 0);
        assert_ptr_not_equal(fresh, w);
        sfs_tree_announce_moves(f->a);
        assert_int_equal(p.woken, 1);
        assert_int_equal(later.woken, 1);
        assert_int_equal(poll_of(f->a, fresh, 0, NULL, &session_a), 0);
        /* A change that moves no entry marks nothing. */
        assert_int_equal(apply_marked(f->a, SFS_SCOPE_GRANT, "token v1", NULL, false, &marked),
                         0);
        assert_false(marked);
        sfs_tree_forget(f->a, w, 1);
        sfs_tree_forget(f->a, fresh, 1);
}

static void test_a_removal_hangs_up_and_a_new_watch_is_enoent(void **state)
{
        struct fx *f = *state;
        struct ph p = { 0 };
        struct sfs_node *w;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        w = watch(f->a, &carol, "token", 0);
        assert_int_equal(poll_of(f->a, w, 7, &p, &session_a), 0);
        assert_int_equal(apply(f->a, SFS_SCOPE_REVOKE, NULL, "token"), 0);
        assert_int_equal(p.woken, 1);
        p = (struct ph){ 0 };
        assert_int_equal(poll_of(f->a, w, 7, &p, &session_a),
                         POLLIN | POLLRDNORM | POLLPRI | POLLHUP);
        watch(f->a, &carol, "token", -ENOENT);
        sfs_tree_forget(f->a, w, 1);
}

static void test_another_scopes_rotation_and_another_entrys_wake_nothing(void **state)
{
        struct fx *f = *state;
        struct ph pb = { 0 }, pother = { 0 };
        struct sfs_node *wb, *wother;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "other"), 0);
        assert_int_equal(apply(f->b, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        wb = watch(f->b, &carol, "token", 0);
        wother = watch(f->a, &carol, "other", 0);
        assert_int_equal(poll_of(f->b, wb, 0, &pb, &session_b), 0);
        assert_int_equal(poll_of(f->a, wother, 0, &pother, &session_a), 0);
        /* A's "token" moves: B's entry of the same name and digest, and A's other entry of
         * the same digest, are not woken and stay not ready. */
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v2", "token"), 0);
        assert_int_equal(pb.woken + pb.dropped + pother.woken + pother.dropped, 0);
        /* B's own rotation wakes B's waiter; A's other entry sleeps on. */
        assert_int_equal(apply(f->b, SFS_SCOPE_GRANT, "token v2", "token"), 0);
        assert_int_equal(pb.woken, 1);
        assert_int_equal(pother.woken, 0);
        sfs_tree_forget(f->b, wb, 1);
        /* Forgotten with a handle kept: dropped, never woken. */
        sfs_tree_forget(f->a, wother, 1);
        assert_int_equal(pother.dropped, 1);
        assert_int_equal(pother.woken, 0);
}

static void test_a_handle_keeps_one_poll_handle_and_a_session_end_drops_its_own(void **state)
{
        struct fx *f = *state;
        struct ph first = { 0 }, again = { 0 }, other = { 0 };
        struct sfs_node *w;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        w = watch(f->a, &carol, "token", 0);
        /* The kernel polls one file again after every wake-up it did not act on: its last
         * handle replaces the one before (dropped, not woken). */
        assert_int_equal(poll_of(f->a, w, 5, &first, &session_a), 0);
        assert_int_equal(poll_of(f->a, w, 5, &again, &session_a), 0);
        assert_int_equal(first.dropped, 1);
        assert_int_equal(poll_of(f->a, w, 6, &other, &session_b), 0);
        /* Session a ends: its handle goes, never woken; session b's is kept. */
        sfs_tree_poll_forget(f->a, &session_a);
        assert_int_equal(again.dropped, 1);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v2", "token"), 0);
        assert_int_equal(again.woken, 0);
        assert_int_equal(other.woken, 1);
        assert_int_equal(first.woken, 0);
        sfs_tree_forget(f->a, w, 1);
}

static void test_pollers_without_a_handle_are_bounded_the_oldest_woken(void **state)
{
        struct fx *f = *state;
        struct ph p[65] = { 0 };
        struct sfs_node *w;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        w = watch(f->a, &carol, "token", 0);
        for (int i = 0; i < 64; i++)
                assert_int_equal(poll_of(f->a, w, 0, &p[i], &session_a), 0);
        assert_int_equal(p[0].woken, 0);
        /* The 65th: the oldest is woken now (it polls again if it still waits). */
        assert_int_equal(poll_of(f->a, w, 0, &p[64], &session_a), 0);
        assert_int_equal(p[0].woken, 1);
        assert_int_equal(p[1].woken, 0);
        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v2", "token"), 0);
        for (int i = 0; i < 65; i++)
                assert_int_equal(p[i].woken + p[i].dropped, 1);
        sfs_tree_forget(f->a, w, 1);
}

static void test_a_watch_is_refused_as_the_entry_is_and_never_of_a_digest(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_entry e = { 0 };
        struct sfs_node *w;
        unsigned revents;
        struct ph p = { 0 };

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        hex_of("token v1", 8, hex);
        /* dave is no user of the view: EACCES, for the entry and its watch alike ... */
        assert_int_equal(sfs_tree_lookup(f->a, &dave, sfs_tree_root(f->a), "token", &e),
                         -EACCES);
        watch(f->a, &dave, "token", -EACCES);
        /* ... which carol, a user, gets. An absent entry, a digest (it never moves) and the
         * main mount have no watch. */
        w = watch(f->a, &carol, "token", 0);
        watch(f->a, &carol, "absent", -ENOENT);
        watch(f->a, &carol, hex, -ENOENT);
        watch(f->main, &root, "token", -ENOENT);
        /* A watch handed to dave is polled as refused, its handle not kept. */
        assert_int_equal(sfs_tree_poll(f->a, &dave, w, 0, &p, &session_a, &ops, &revents),
                         -EACCES);
        assert_int_equal(p.dropped, 1);
        sfs_tree_forget(f->a, w, 1);
}

static void test_a_watch_opens_read_only_and_reads_empty(void **state)
{
        struct fx *f = *state;
        struct sfs_open_info oi = { 0 };
        struct sfs_handle *h = NULL;
        struct sfs_node *w;
        struct readback rb;

        assert_int_equal(apply(f->a, SFS_SCOPE_GRANT, "token v1", "token"), 0);
        w = watch(f->a, &carol, "token", 0);
        assert_int_equal(sfs_tree_open(f->a, &carol, w, O_WRONLY, &h, &oi), -EROFS);
        assert_int_equal(sfs_tree_open(f->a, &dave, w, O_RDONLY, &h, &oi), -EACCES);
        assert_int_equal(sfs_tree_open(f->a, &carol, w, O_RDONLY, &h, &oi), 0);
        assert_true(oi.direct_io);
        rb.len = 0;
        assert_int_equal(sfs_tree_read(f->a, h, 4096, 0, collect, &rb), 0);
        assert_int_equal(rb.len, 0);
        sfs_tree_release(f->a, h);
        sfs_tree_forget(f->a, w, 1);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_a_rotation_wakes_the_watch_of_its_entry_once),
                T(test_a_move_is_not_ready_until_it_is_announced),
                T(test_a_removal_hangs_up_and_a_new_watch_is_enoent),
                T(test_another_scopes_rotation_and_another_entrys_wake_nothing),
                T(test_a_handle_keeps_one_poll_handle_and_a_session_end_drops_its_own),
                T(test_pollers_without_a_handle_are_bounded_the_oldest_woken),
                T(test_a_watch_is_refused_as_the_entry_is_and_never_of_a_digest),
                T(test_a_watch_opens_read_only_and_reads_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
