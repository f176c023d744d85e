/* SPDX-License-Identifier: MIT */
/* snapshot/store.c: the refcounted in-memory store, its limits and usage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/store.h"
#include "common/util.h"

static const struct snap_store_config cfg_default = {
        .max_object_size = 1024,
        .max_bytes = 4096,
        .max_objects = 16,
        .first_ino = 100,
};

static int setup(void **state)
{
        struct snap_store *s;

        assert_int_equal(snap_store_new(&cfg_default, &s), 0);
        *state = s;
        return 0;
}

static int teardown(void **state)
{
        snap_store_free(*state);
        return 0;
}

static void assert_stats(struct snap_store *s, uint64_t bytes, uint64_t reserved,
                         uint64_t objects, uint64_t indexed)
{
        struct snap_store_stats st;

        snap_store_get_stats(s, &st);
        if (st.bytes != bytes || st.reserved != reserved || st.objects != objects ||
            st.indexed != indexed)
                fail_msg("stats bytes=%llu reserved=%llu objects=%llu indexed=%llu, want "
                         "%llu %llu %llu %llu",
                         (unsigned long long)st.bytes, (unsigned long long)st.reserved,
                         (unsigned long long)st.objects, (unsigned long long)st.indexed,
                         (unsigned long long)bytes, (unsigned long long)reserved,
                         (unsigned long long)objects, (unsigned long long)indexed);
}

static struct snap_object *put_str(struct snap_store *s, const char *str, int want)
{
        struct snap_object *o = NULL;

        assert_int_equal(snap_store_put_bytes(s, str, strlen(str), &o), want);
        return o;
}

static struct snap_digest digest_of(const char *str)
{
        struct snap_digest d;
        assert_int_equal(snap_sha256(str, strlen(str), &d), 0);
        return d;
}

static void test_new_store_is_empty(void **state)
{
        struct snap_store *s = *state;
        struct snap_store_stats st;

        assert_stats(s, 0, 0, 0, 0);
        snap_store_get_stats(s, &st);
        assert_int_equal(st.next_ino, 100);
}

static void test_zero_limit_is_refused_with_einval(void **state)
{
        (void)state;
        struct snap_store_config c;
        struct snap_store *s;

        c = cfg_default, c.max_object_size = 0;
        assert_int_equal(snap_store_new(&c, &s), -EINVAL);
        c = cfg_default, c.max_bytes = 0;
        assert_int_equal(snap_store_new(&c, &s), -EINVAL);
        c = cfg_default, c.max_objects = 0;
        assert_int_equal(snap_store_new(&c, &s), -EINVAL);
        assert_int_equal(snap_store_new(NULL, &s), -EINVAL);

        /* first_ino 0 is not a limit: it means 1. */
        c = cfg_default, c.first_ino = 0;
        assert_int_equal(snap_store_new(&c, &s), 0);
        assert_int_equal(snap_store_alloc_ino(s), 1);
        snap_store_free(s);
}

static void test_put_stores_content_under_its_digest(void **state)
{
        struct snap_store *s = *state;
        struct snap_digest d = digest_of("hello");
        struct snap_object *o = put_str(s, "hello", 0);

        assert_int_equal(o->size, 5);
        assert_memory_equal(o->data, "hello", 5);
        assert_memory_equal(o->digest.bytes, d.bytes, SNAP_DIGEST_LEN);
        assert_int_equal(o->ino, 100);
        assert_true(o->created.tv_sec > 0);
        assert_stats(s, 5, 0, 1, 1);
        snap_store_release(s, o);
}

static void test_put_of_same_content_returns_the_same_object_and_inode(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *a = put_str(s, "same bytes", 0);
        struct snap_object *b = put_str(s, "same bytes", 1);

        assert_ptr_equal(a, b);
        assert_int_equal(a->ino, b->ino);
        /* Stored once. */
        assert_stats(s, 10, 0, 1, 1);
        /* Different content beside it is a different object. */
        struct snap_object *c = put_str(s, "other bytes", 0);
        assert_ptr_not_equal(a, c);
        assert_int_not_equal(a->ino, c->ino);
        snap_store_release(s, a);
        snap_store_release(s, b);
        snap_store_release(s, c);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_put_with_a_given_digest_is_found_under_it(void **state)
{
        struct snap_store *s = *state;
        struct snap_digest d = digest_of("abc");
        struct snap_put p = { .data = "abc", .len = 3, .digest = &d, .publisher_uid = 1000 };
        struct snap_object *o, *l;

        assert_int_equal(snap_store_put(s, &p, &o), 0);
        assert_int_equal(o->publisher_uid, 1000);
        l = snap_store_lookup(s, &d);
        assert_ptr_equal(l, o);
        snap_store_release(s, l);
        snap_store_release(s, o);
}

static void test_lookup_of_unknown_digest_gives_null(void **state)
{
        struct snap_store *s = *state;
        struct snap_digest known = digest_of("known"), unknown = digest_of("unknown");
        struct snap_object *o = put_str(s, "known", 0), *l;

        assert_null(snap_store_lookup(s, &unknown));
        l = snap_store_lookup(s, &known);
        assert_ptr_equal(l, o);
        snap_store_release(s, l);
        snap_store_release(s, o);
}

static void test_release_of_the_last_reference_frees_the_object(void **state)
{
        struct snap_store *s = *state;
        struct snap_digest d = digest_of("refcounted");
        struct snap_object *o = put_str(s, "refcounted", 0), *l;

        snap_store_ref(s, o);
        snap_store_release(s, o);
        /* One reference left: still there. */
        l = snap_store_lookup(s, &d);
        assert_ptr_equal(l, o);
        snap_store_release(s, l);
        assert_stats(s, 10, 0, 1, 1);

        snap_store_release(s, o);
        assert_null(snap_store_lookup(s, &d));
        assert_stats(s, 0, 0, 0, 0);
}

static void test_counters_return_to_zero_after_all_releases(void **state)
{
        (void)state;
        struct snap_store_config c = { .max_object_size = 64, .max_bytes = 1 << 20,
                                       .max_objects = 5000 };
        struct snap_object **objs = calloc(5000, sizeof(*objs));
        struct snap_store *s;
        uint64_t bytes = 0;
        char buf[64];

        assert_non_null(objs);
        assert_int_equal(snap_store_new(&c, &s), 0);
        /* Enough objects to grow the table several times. */
        for (int i = 0; i < 5000; i++) {
                int n = snprintf(buf, sizeof(buf), "object %d", i);
                assert_int_equal(snap_store_put_bytes(s, buf, (size_t)n, &objs[i]), 0);
                bytes += (uint64_t)n;
        }
        assert_stats(s, bytes, 0, 5000, 5000);
        /* Every one still found after the growth. */
        for (int i = 0; i < 5000; i++) {
                struct snap_object *l = snap_store_lookup(s, &objs[i]->digest);
                assert_ptr_equal(l, objs[i]);
                snap_store_release(s, l);
        }
        for (int i = 0; i < 5000; i += 2)
                snap_store_release(s, objs[i]);
        for (int i = 1; i < 5000; i += 2)
                snap_store_release(s, objs[i]);
        assert_stats(s, 0, 0, 0, 0);
        snap_store_free(s);
        free(objs);
}

static void test_object_over_max_object_size_is_refused_with_efbig(void **state)
{
        struct snap_store *s = *state;
        static uint8_t big[1025];
        struct snap_object *o = NULL, *ok;

        memset(big, 'x', sizeof(big));
        assert_int_equal(snap_store_put_bytes(s, big, 1025, &o), -EFBIG);
        assert_null(o);
        assert_stats(s, 0, 0, 0, 0);
        assert_int_equal(snap_store_put_bytes(s, big, 1024, &ok), 0);
        snap_store_release(s, ok);
}

static void test_total_bytes_limit_is_refused_with_enospc(void **state)
{
        struct snap_store *s = *state;
        static uint8_t buf[1024];
        struct snap_object *objs[4], *o = NULL, *again;

        for (int i = 0; i < 4; i++) {
                memset(buf, 'a' + i, sizeof(buf));
                assert_int_equal(snap_store_put_bytes(s, buf, 1024, &objs[i]), 0);
        }
        assert_stats(s, 4096, 0, 4, 4);
        assert_int_equal(snap_store_put_bytes(s, "1", 1, &o), -ENOSPC);
        assert_null(o);
        /* Content already stored costs nothing: still served. */
        assert_int_equal(snap_store_put_bytes(s, buf, 1024, &again), 1);
        assert_ptr_equal(again, objs[3]);
        snap_store_release(s, again);
        /* Room made: the refused put succeeds. */
        snap_store_release(s, objs[0]);
        assert_int_equal(snap_store_put_bytes(s, "1", 1, &o), 0);
        snap_store_release(s, o);
        for (int i = 1; i < 4; i++)
                snap_store_release(s, objs[i]);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_object_count_limit_is_refused_with_enospc(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *objs[16], *o = NULL, *again;
        char buf[16];

        for (int i = 0; i < 16; i++) {
                snprintf(buf, sizeof(buf), "%d", i);
                objs[i] = put_str(s, buf, 0);
        }
        assert_int_equal(snap_store_put_bytes(s, "one more", 8, &o), -ENOSPC);
        assert_int_equal(snap_store_put_bytes(s, "", 0, &o), -ENOSPC);
        assert_null(o);
        again = put_str(s, "15", 1);
        assert_ptr_equal(again, objs[15]);
        snap_store_release(s, again);
        snap_store_release(s, objs[0]);
        o = put_str(s, "one more", 0);
        snap_store_release(s, o);
        for (int i = 1; i < 16; i++)
                snap_store_release(s, objs[i]);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_reservation_past_max_bytes_is_refused_with_enospc(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *o = NULL;

        assert_int_equal(snap_store_reserve(s, 4097), -ENOSPC);
        assert_stats(s, 0, 0, 0, 0);
        assert_int_equal(snap_store_reserve(s, 4000), 0);
        assert_int_equal(snap_store_reserve(s, 97), -ENOSPC);
        assert_int_equal(snap_store_reserve(s, 96), 0);
        assert_stats(s, 0, 4096, 0, 0);
        /* Reserved bytes are used: a put that takes none of them does not fit. */
        assert_int_equal(snap_store_put_bytes(s, "x", 1, &o), -ENOSPC);
        snap_store_unreserve(s, 96);
        o = put_str(s, "x", 0);
        snap_store_release(s, o);
        snap_store_unreserve(s, 4000);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_put_takes_over_its_reservation(void **state)
{
        struct snap_store *s = *state;
        static uint8_t buf[1000];
        struct snap_put p = { .data = buf, .len = 600, .reserved = 1000 };
        struct snap_object *o;

        memset(buf, 'r', sizeof(buf));
        assert_int_equal(snap_store_reserve(s, 4000), 0);
        assert_stats(s, 0, 4000, 0, 0);
        /* 4000 reserved: only a put that brings its reservation with it fits. */
        assert_int_equal(snap_store_put_bytes(s, buf, 600, &o), -ENOSPC);
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        /* The object holds 600; its 1000 reserved bytes are gone, unused ones included. */
        assert_stats(s, 600, 3000, 1, 1);
        snap_store_unreserve(s, 3000);
        snap_store_release(s, o);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_dedup_put_does_not_take_the_reservation(void **state)
{
        struct snap_store *s = *state;
        struct snap_put p = { .data = "dup", .len = 3, .reserved = 10 };
        struct snap_object *a = put_str(s, "dup", 0), *b;

        assert_int_equal(snap_store_reserve(s, 10), 0);
        assert_int_equal(snap_store_put(s, &p, &b), 1);
        assert_ptr_equal(a, b);
        assert_stats(s, 3, 10, 1, 1);
        snap_store_unreserve(s, 10);
        snap_store_release(s, a);
        snap_store_release(s, b);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_unreserve_of_more_than_reserved_is_clamped(void **state)
{
        struct snap_store *s = *state;

        assert_int_equal(snap_store_reserve(s, 10), 0);
        snap_store_unreserve(s, 1000);
        assert_stats(s, 0, 0, 0, 0);
        /* The limit is intact, not wrapped into a huge allowance. */
        assert_int_equal(snap_store_reserve(s, 4097), -ENOSPC);
        assert_int_equal(snap_store_reserve(s, 4096), 0);
        snap_store_unreserve(s, 4096);
}

static void test_inode_numbers_are_new_after_release_and_re_put(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *a = put_str(s, "first", 0), *b, *c;
        uint64_t ia = a->ino, ib, ic;

        snap_store_release(s, a);
        b = put_str(s, "second", 0);
        ib = b->ino;
        assert_true(ib > ia);
        snap_store_release(s, b);
        /* Even the same content as a freed object gets a number never seen before. */
        c = put_str(s, "first", 0);
        ic = c->ino;
        assert_true(ic > ib);
        snap_store_release(s, c);
}

static void test_alloc_ino_and_put_draw_from_one_counter(void **state)
{
        struct snap_store *s = *state;
        uint64_t n = snap_store_alloc_ino(s);
        struct snap_object *a = put_str(s, "a", 0), *b;
        struct snap_put p = { .data = "b", .len = 1 };

        assert_int_equal(n, 100);
        assert_int_equal(a->ino, 101);
        /* A number drawn for content still being written is the one the object gets. */
        p.ino = snap_store_alloc_ino(s);
        assert_int_equal(p.ino, 102);
        assert_int_equal(snap_store_put(s, &p, &b), 0);
        assert_int_equal(b->ino, 102);
        assert_int_equal(snap_store_alloc_ino(s), 103);
        snap_store_release(s, a);
        snap_store_release(s, b);
}

static void test_explicit_ino_past_the_counter_moves_the_counter(void **state)
{
        struct snap_store *s = *state;
        struct snap_put p = { .data = "b", .len = 1, .ino = 500 };
        struct snap_object *o;

        assert_int_equal(snap_store_put(s, &p, &o), 0);
        assert_int_equal(o->ino, 500);
        assert_int_equal(snap_store_alloc_ino(s), 501);
        snap_store_release(s, o);
}

static void test_detach_then_re_put_gives_a_new_inode_and_keeps_the_old_readable(void **state)
{
        struct snap_store *s = *state;
        struct snap_digest d = digest_of("detach me");
        struct snap_object *old = put_str(s, "detach me", 0), *fresh, *l;

        assert_int_equal(snap_store_detach(s, old), 0);
        assert_null(snap_store_lookup(s, &d));
        assert_int_equal(snap_store_detach(s, old), -ENOENT);
        assert_stats(s, 9, 0, 1, 0);

        fresh = put_str(s, "detach me", 0);
        assert_ptr_not_equal(fresh, old);
        assert_true(fresh->ino > old->ino);
        l = snap_store_lookup(s, &d);
        assert_ptr_equal(l, fresh);
        snap_store_release(s, l);
        assert_stats(s, 18, 0, 2, 1);

        /* The detached object still reads its content until its last release. */
        assert_memory_equal(old->data, "detach me", 9);
        snap_store_release(s, old);
        assert_stats(s, 9, 0, 1, 1);
        snap_store_release(s, fresh);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_owned_buffer_is_taken_over_by_a_new_object(void **state)
{
        struct snap_store *s = *state;
        char *buf = strdup("owned content");
        struct snap_put p = { .data = buf, .len = strlen(buf), .owned = buf };
        struct snap_object *o;

        assert_non_null(buf);
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        /* No copy: the object's data is the buffer, freed by the last release (a leak or a
         * double free would show under ASan and valgrind). */
        assert_ptr_equal(o->data, buf);
        snap_store_release(s, o);
}

static void test_owned_buffer_is_not_taken_on_dedup(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *a = put_str(s, "owned content", 0), *b;
        char *buf = strdup("owned content");
        struct snap_put p = { .data = buf, .len = strlen(buf), .owned = buf };

        assert_non_null(buf);
        assert_int_equal(snap_store_put(s, &p, &b), 1);
        assert_ptr_equal(a, b);
        assert_ptr_not_equal(b->data, buf);
        /* Still the caller's: freeing it here must be the only free. */
        free(buf);
        snap_store_release(s, a);
        snap_store_release(s, b);
}

static void test_owned_buffer_is_not_taken_on_refusal(void **state)
{
        struct snap_store *s = *state;
        char *big = calloc(1, 1025), *small = strdup("small");
        struct snap_put p = { .data = big, .len = 1025, .owned = big };
        struct snap_object *o = NULL;

        assert_non_null(big);
        assert_non_null(small);
        assert_int_equal(snap_store_put(s, &p, &o), -EFBIG);
        assert_int_equal(snap_store_reserve(s, 4096), 0);
        p = (struct snap_put){ .data = small, .len = 5, .owned = small };
        assert_int_equal(snap_store_put(s, &p, &o), -ENOSPC);
        assert_null(o);
        free(big);
        /* Room again: the same buffer is taken this time. */
        snap_store_unreserve(s, 4096);
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        assert_ptr_equal(o->data, small);
        snap_store_release(s, o);
}

static void test_malformed_put_is_refused_with_einval(void **state)
{
        struct snap_store *s = *state;
        char *buf = strdup("abc");
        struct snap_put no_data = { .data = NULL, .len = 3 };
        struct snap_put other_owned = { .data = "abc", .len = 3, .owned = buf };
        struct snap_put empty = { .data = NULL, .len = 0 };
        struct snap_object *o = NULL;

        assert_non_null(buf);
        assert_int_equal(snap_store_put(s, &no_data, &o), -EINVAL);
        assert_int_equal(snap_store_put(s, &other_owned, &o), -EINVAL);
        assert_null(o);
        assert_stats(s, 0, 0, 0, 0);
        free(buf);
        /* NULL data is fine for empty content, and the object's data is still not NULL. */
        assert_int_equal(snap_store_put(s, &empty, &o), 0);
        assert_non_null(o->data);
        assert_int_equal(o->size, 0);
        snap_store_release(s, o);
}

static int count_fn(const struct snap_object *o, void *ctx)
{
        (void)o;
        (*(int *)ctx)++;
        return 0;
}

static int stop_fn(const struct snap_object *o, void *ctx)
{
        (void)o;
        (*(int *)ctx)++;
        return 7;
}

static void test_foreach_visits_indexed_objects_and_stops_early(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *o[5];
        char buf[8];
        int n = 0;

        for (int i = 0; i < 5; i++) {
                snprintf(buf, sizeof(buf), "o%d", i);
                o[i] = put_str(s, buf, 0);
        }
        assert_int_equal(snap_store_detach(s, o[2]), 0);
        assert_int_equal(snap_store_foreach(s, count_fn, &n), 0);
        assert_int_equal(n, 4);
        n = 0;
        assert_int_equal(snap_store_foreach(s, stop_fn, &n), 7);
        assert_int_equal(n, 1);
        for (int i = 0; i < 5; i++)
                snap_store_release(s, o[i]);
}

static void test_free_frees_objects_still_referenced(void **state)
{
        (void)state;
        struct snap_store *s;
        struct snap_object *a, *b;
        char *buf = strdup("owned and detached");
        struct snap_put p = { .data = buf, .len = strlen(buf), .owned = buf };

        assert_non_null(buf);
        assert_int_equal(snap_store_new(&cfg_default, &s), 0);
        a = put_str(s, "indexed", 0);
        assert_int_equal(snap_store_put(s, &p, &b), 0);
        assert_int_equal(snap_store_detach(s, b), 0);
        assert_int_equal(a->data[0], 'i');
        /* Neither is released: the leak checkers see whether free found them both. */
        snap_store_free(s);
}

/* Two threads, 10,000 put/release cycles each; a quarter of the content is shared between
 * them, so dedup, the last release and a concurrent put of the same bytes all meet. Failures
 * are counted, not asserted, in the threads: cmocka's assertions are not thread-safe. */
#define CYCLES 10000

struct worker {
        struct snap_store *s;
        int id;
        int errors;
        int news;
        uint64_t inos[CYCLES]; /* inode numbers of the objects this thread created */
};

static void *work(void *arg)
{
        struct worker *w = arg;
        char buf[64];

        for (int i = 0; i < CYCLES; i++) {
                struct snap_object *o = NULL, *l;
                int n = i % 4 == 0 ? snprintf(buf, sizeof(buf), "shared %d", (i / 4) % 8)
                                   : snprintf(buf, sizeof(buf), "thread %d cycle %d", w->id, i);
                int r = snap_store_put_bytes(w->s, buf, (size_t)n, &o);

                if (r != 0 && r != 1) {
                        w->errors++;
                        continue;
                }
                if (r == 0)
                        w->inos[w->news++] = o->ino;
                if (o->size != (uint64_t)n || memcmp(o->data, buf, (size_t)n) != 0)
                        w->errors++;
                if (i % 16 == 0) {
                        l = snap_store_lookup(w->s, &o->digest);
                        if (l != o)
                                w->errors++;
                        snap_store_release(w->s, l);
                }
                snap_store_release(w->s, o);
        }
        return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static void test_two_threads_put_and_release_keep_counters_consistent(void **state)
{
        struct snap_store *s = *state;
        struct worker *w = calloc(2, sizeof(*w));
        struct snap_store_stats st;
        uint64_t *all;
        size_t total;

        assert_non_null(w);
        for (int t = 0; t < 2; t++) {
                w[t].s = s;
                w[t].id = t;
        }
        pthread_t th[2];
        for (int t = 0; t < 2; t++)
                assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
        for (int t = 0; t < 2; t++)
                assert_int_equal(pthread_join(th[t], NULL), 0);

        assert_int_equal(w[0].errors, 0);
        assert_int_equal(w[1].errors, 0);
        assert_stats(s, 0, 0, 0, 0);

        /* Every object created got its own number, below the counter. */
        total = (size_t)(w[0].news + w[1].news);
        assert_true(total >= 2 * (CYCLES * 3 / 4));
        all = malloc(total * sizeof(*all));
        assert_non_null(all);
        memcpy(all, w[0].inos, (size_t)w[0].news * sizeof(*all));
        memcpy(all + w[0].news, w[1].inos, (size_t)w[1].news * sizeof(*all));
        qsort(all, total, sizeof(*all), cmp_u64);
        snap_store_get_stats(s, &st);
        for (size_t i = 1; i < total; i++)
                assert_true(all[i] > all[i - 1]);
        assert_true(all[0] >= 100 && all[total - 1] < st.next_ino);
        free(all);
        free(w);
}

/* ---- inode order and per-uid limits ---- */

static int collect_ino(const struct snap_object *o, void *ctx)
{
        uint64_t *v = ctx;
        v[++v[0]] = o->ino;
        return v[0] == 3; /* three at a time, like a listing reply that is full */
}

static struct snap_object *put_as(struct snap_store *s, uint32_t uid, const char *text,
                                  uint64_t ino, int want)
{
        struct snap_object *o = NULL;
        const struct snap_put p = { .data = text, .len = strlen(text), .ino = ino,
                                    .publisher_uid = uid };
        assert_int_equal(snap_store_put(s, &p, &o), want);
        return want >= 0 ? o : NULL;
}

static void test_foreach_from_resumes_in_inode_order_across_changes(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *o[6];
        uint64_t v[8] = { 0 };
        /* Inode numbers handed out in one order, content published in another (staging
         * files get theirs at create). */
        uint64_t ino[6];
        for (int i = 0; i < 6; i++)
                ino[i] = snap_store_alloc_ino(s);
        for (int i = 5; i >= 0; i--) {
                char text[8];
                snprintf(text, sizeof(text), "o%d", i);
                o[i] = put_as(s, 1, text, ino[i], 0);
        }
        assert_int_equal(snap_store_foreach_from(s, 0, SNAP_FOREACH_ALL, collect_ino, v), 1);
        assert_int_equal(v[1], ino[0]);
        assert_int_equal(v[2], ino[1]);
        assert_int_equal(v[3], ino[2]);
        /* Between two replies: the next one goes, an earlier one goes, one is published. */
        snap_store_detach(s, o[3]);
        snap_store_detach(s, o[0]);
        struct snap_object *late = put_as(s, 1, "late", 0, 0);
        v[0] = 0;
        assert_int_equal(snap_store_foreach_from(s, ino[2] + 1, SNAP_FOREACH_ALL, collect_ino, v), 1);
        assert_int_equal(v[1], ino[4]);
        assert_int_equal(v[2], ino[5]);
        assert_int_equal(v[3], late->ino);
        for (int i = 0; i < 6; i++)
                snap_store_release(s, o[i]);
        snap_store_release(s, late);
}

static void test_uid_past_its_own_limits_gets_edquot_others_still_publish(void **state)
{
        struct snap_store_config c = cfg_default;
        struct snap_store_usage u;
        struct snap_object *a, *b, *x;
        struct snap_store *s;
        (void)state;

        c.max_uid_objects = 2;
        c.max_uid_bytes = 100;
        c.privileged_uid = 0;
        assert_int_equal(snap_store_new(&c, &s), 0);
        a = put_as(s, 1000, "one", 0, 0);
        b = put_as(s, 1000, "two", 0, 0);
        put_as(s, 1000, "three", 0, -EDQUOT);
        /* Another uid, and the privileged one, are not held by uid 1000's count. */
        x = put_as(s, 1001, "three", 0, 0);
        snap_store_release(s, x);
        /* Removed but still referenced: still counted. */
        snap_store_detach(s, a);
        put_as(s, 1000, "four", 0, -EDQUOT);
        snap_store_get_usage(s, 1000, &u);
        assert_int_equal(u.objects, 2);
        assert_int_equal(u.bytes, 6);
        /* The last reference gone: the count is back. */
        snap_store_release(s, a);
        x = put_as(s, 1000, "four", 0, 0);
        snap_store_release(s, x);
        snap_store_release(s, b);
        /* Bytes: 100 at most. */
        {
                char big[102];
                memset(big, 'b', sizeof(big) - 1);
                big[101] = '\0';
                put_as(s, 1000, big, 0, -EDQUOT);
                big[100] = '\0';
                x = put_as(s, 1000, big, 0, 0);
                snap_store_release(s, x);
        }
        assert_int_equal(snap_store_list_usage(s, &u, 1), 0);
        snap_store_free(s);
}

static void test_reserve_is_kept_for_the_privileged_uid(void **state)
{
        struct snap_store_config c = cfg_default;
        struct snap_object *o[4];
        struct snap_store *s;
        (void)state;

        c.max_objects = 4;
        c.reserve_objects = 1;
        c.reserve_bytes = 1024;
        c.privileged_uid = 7;
        assert_int_equal(snap_store_new(&c, &s), 0);
        o[0] = put_as(s, 1000, "a", 0, 0);
        o[1] = put_as(s, 1001, "b", 0, 0);
        o[2] = put_as(s, 1002, "c", 0, 0);
        put_as(s, 1003, "d", 0, -ENOSPC);
        o[3] = put_as(s, 7, "d", 0, 0);
        put_as(s, 7, "e", 0, -ENOSPC);
        /* Bytes: others may reserve all but the reserve, the privileged uid the rest. */
        assert_int_equal(snap_store_reserve_as(s, 1000, 4096 - 4 - 1024 + 1), -ENOSPC);
        assert_int_equal(snap_store_reserve_as(s, 1000, 4096 - 4 - 1024), 0);
        assert_int_equal(snap_store_reserve_as(s, 1000, 1), -ENOSPC);
        assert_int_equal(snap_store_reserve_as(s, 7, 1024), 0);
        for (int i = 0; i < 4; i++)
                snap_store_release(s, o[i]);
        snap_store_free(s);
}

/* A scope's minimum: what it does not use of it is kept from every other claimant but the
 * privileged uid, never from itself. The attack: one scope publishing within its own limit
 * until another scope's first publish got ENOSPC. */
static void test_an_unused_minimum_is_kept_from_others_not_from_its_own(void **state)
{
        struct snap_store_config c = cfg_default;
        struct snap_keep *sb, *more;
        struct snap_claim claim, refused;
        struct snap_store_stats st;
        struct snap_store *s;
        (void)state;

        c.max_bytes = 8192;
        c.max_object_size = 4096;
        c.reserve_bytes = 512;
        c.privileged_uid = 0;
        assert_int_equal(snap_store_new(&c, &s), 0);
        /* A minimum the daemon cannot guarantee beside the owner's reserve: refused, and the
         * same with one byte less taken. */
        assert_int_equal(snap_store_keep_new(s, 8192 - 512 + 1, false, &more), -ENOSPC);
        assert_null(more);
        assert_int_equal(snap_store_keep_new(s, 2048, false, &sb), 0);
        assert_non_null(sb);
        assert_int_equal(snap_store_keep_new(s, 8192 - 512 - 2048 + 1, false, &more), -ENOSPC);
        /* A flooding claimant without a minimum gets all but the reserve and sb's minimum. */
        assert_int_equal(snap_store_reserve_kept(s, 1000, NULL, 8192 - 512 - 2048 + 1), -ENOSPC);
        assert_int_equal(snap_store_reserve_kept(s, 1000, NULL, 8192 - 512 - 2048), 0);
        assert_int_equal(snap_store_reserve_kept(s, 1000, NULL, 1), -ENOSPC);
        assert_int_equal(snap_store_claim_unheld(s, 1, 0, &refused), -ENOSPC);
        assert_int_equal(snap_store_kept_from(s, NULL), 2048);
        assert_int_equal(snap_store_kept_from(s, sb), 0);
        /* At that moment sb stages and publishes 1536 bytes within its minimum. */
        assert_int_equal(snap_store_reserve_kept(s, 1001, sb, 1536), 0);
        assert_int_equal(snap_store_kept_from(s, NULL), 512);
        assert_int_equal(snap_store_claim_kept(s, sb, 1536, 1536, &claim), 0);
        assert_true(claim.held);
        /* A third claimant without a minimum is still refused; the owner's reserve is the
         * owner's. */
        assert_int_equal(snap_store_reserve_kept(s, 1002, NULL, 1), -ENOSPC);
        assert_int_equal(snap_store_reserve_as(s, 0, 512), 0);
        /* Nothing is free now: a new minimum is refused, one restored at a start is not. */
        assert_int_equal(snap_store_keep_new(s, 1, false, &more), -ENOSPC);
        assert_int_equal(snap_store_keep_new(s, 1, true, &more), 0);
        snap_store_get_stats(s, &st);
        assert_int_equal(st.minimums, 2049);
        snap_store_keep_free(s, more);
        /* sb's minimum used up keeps nothing more; given back, it is kept again. */
        snap_store_keep_use(s, sb, true, 512);
        assert_int_equal(snap_store_kept_from(s, NULL), 0);
        snap_store_keep_use(s, sb, false, 2048);
        assert_int_equal(snap_store_kept_from(s, NULL), 2048);
        /* Its scope deleted: kept for nobody, though what it holds lingers. */
        snap_store_keep_end(s, sb);
        assert_int_equal(snap_store_kept_from(s, NULL), 0);
        snap_store_get_stats(s, &st);
        assert_int_equal(st.minimums, 0);
        snap_store_keep_free(s, sb);
        snap_store_unclaim(s, &claim);
        snap_store_free(s);
}

static void assert_usage(struct snap_store *s, uint32_t uid, uint64_t objects, uint64_t bytes)
{
        struct snap_store_usage u;

        snap_store_get_usage(s, uid, &u);
        if (u.objects != objects || u.bytes != bytes)
                fail_msg("uid %u holds %llu objects, %llu bytes; want %llu, %llu", uid,
                         (unsigned long long)u.objects, (unsigned long long)u.bytes,
                         (unsigned long long)objects, (unsigned long long)bytes);
}

static struct snap_store *quota_store(void)
{
        struct snap_store_config c = cfg_default;
        struct snap_store *s;

        c.max_uid_objects = 2;
        c.max_uid_bytes = 100;
        c.privileged_uid = 0;
        assert_int_equal(snap_store_new(&c, &s), 0);
        return s;
}

static void test_a_second_holder_is_charged_and_a_holder_again_changes_nothing(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_object *o;
        uint32_t h[4];
        (void)state;

        o = put_as(s, 1000, "shared", 0, 0);
        assert_int_equal(snap_store_hold(s, o, 1001), 0);
        assert_int_equal(snap_store_hold(s, o, 1001), 1);
        assert_int_equal(snap_store_hold(s, o, 1000), 1);
        assert_int_equal(snap_store_get_holders(s, o, h, 4), 2);
        assert_int_equal(h[0], 1000);
        assert_int_equal(h[1], 1001);
        assert_usage(s, 1000, 1, 6);
        assert_usage(s, 1001, 1, 6);
        /* Stored once whatever the holders. */
        assert_stats(s, 6, 0, 1, 1);
        snap_store_release(s, o);
        /* The last reference: every holder's charge goes with it. */
        assert_usage(s, 1000, 0, 0);
        assert_usage(s, 1001, 0, 0);
        snap_store_free(s);
}

static void test_a_hold_past_the_uids_limits_is_edquot_decided_without_change(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_object *a, *b, *shared;
        (void)state;

        a = put_as(s, 1000, "one", 0, 0);
        b = put_as(s, 1000, "two", 0, 0);
        shared = put_as(s, 1001, "three", 0, 0);
        assert_int_equal(snap_store_hold_check(s, shared, 1000), -EDQUOT);
        assert_int_equal(snap_store_hold(s, shared, 1000), -EDQUOT);
        assert_false(snap_store_holds(s, shared, 1000));
        assert_usage(s, 1000, 2, 6);
        /* Beside it: uid 1000's own, and the privileged uid, which has no limit. */
        assert_int_equal(snap_store_hold_check(s, a, 1000), 1);
        assert_int_equal(snap_store_hold_check(s, shared, 0), 0);
        assert_int_equal(snap_store_hold(s, shared, 0), 0);
        snap_store_release(s, a);
        snap_store_release(s, b);
        snap_store_release(s, shared);
        snap_store_free(s);
}

static void test_holders_past_the_maximum_are_edquot_but_the_privileged_uid_holds(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_object *o = put_as(s, 1, "popular", 0, 0);
        (void)state;

        for (uint32_t uid = 2; uid <= SNAP_HOLDERS_MAX; uid++)
                assert_int_equal(snap_store_hold(s, o, uid), 0);
        assert_int_equal(snap_store_hold(s, o, 5000), -EDQUOT);
        assert_int_equal(snap_store_hold(s, o, 0), 0);
        assert_int_equal(snap_store_get_holders(s, o, NULL, 0), SNAP_HOLDERS_MAX + 1);
        snap_store_release(s, o);
        snap_store_free(s);
}

static void test_dropping_one_hold_keeps_the_object_the_last_detaches_it(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_object *o, *again;
        (void)state;

        o = put_as(s, 1000, "kept", 0, 0);
        assert_int_equal(snap_store_hold(s, o, 1001), 0);
        assert_true(snap_store_kept_without(s, o, &(struct snap_drop){ .hold = true, .uid = 1000 }));
        assert_false(snap_store_kept_without(
                s, o, &(struct snap_drop){ .hold = true, .uid = SNAP_HOLDER_ALL }));
        /* A uid holding nothing drops nothing. */
        assert_int_equal(snap_store_unhold(s, o, 1002), -ENOENT);
        assert_int_equal(snap_store_unhold(s, o, 1000), 0);
        assert_usage(s, 1000, 0, 0);
        again = snap_store_lookup(s, &o->digest);
        assert_ptr_equal(again, o);
        snap_store_release(s, again);
        /* The last hold: detached, its holder still charged while it is referenced. */
        assert_false(snap_store_kept_without(s, o, &(struct snap_drop){ .hold = true, .uid = 1001 }));
        assert_int_equal(snap_store_unhold(s, o, 1001), 1);
        assert_null(snap_store_lookup(s, &o->digest));
        assert_usage(s, 1001, 1, 4);
        assert_int_equal(snap_store_unhold(s, o, 1001), -ENOENT);
        snap_store_release(s, o);
        assert_usage(s, 1001, 0, 0);
        assert_stats(s, 0, 0, 0, 0);
        snap_store_free(s);
}

static void test_every_hold_at_once_detaches_and_keeps_every_charge_until_release(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_object *o = put_as(s, 1000, "all", 0, 0);
        (void)state;

        assert_int_equal(snap_store_hold(s, o, 1001), 0);
        assert_int_equal(snap_store_unhold(s, o, SNAP_HOLDER_ALL), 1);
        assert_usage(s, 1000, 1, 3);
        assert_usage(s, 1001, 1, 3);
        snap_store_release(s, o);
        assert_usage(s, 1000, 0, 0);
        assert_usage(s, 1001, 0, 0);
        snap_store_free(s);
}

static void test_a_claim_decides_and_charges_before_the_put_that_takes_it(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_claim claim, refused;
        struct snap_object *o = NULL, *a, *b;
        struct snap_put p = { .data = "claimed", .len = 7, .publisher_uid = 1000 };
        (void)state;

        assert_int_equal(snap_store_reserve_as(s, 1000, 7), 0);
        assert_int_equal(snap_store_claim(s, 1000, 7, 7, &claim), 0);
        assert_true(claim.held);
        assert_stats(s, 7, 0, 1, 0);
        assert_usage(s, 1000, 1, 7);
        p.claim = &claim;
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        assert_false(claim.held);
        assert_stats(s, 7, 0, 1, 1);
        assert_usage(s, 1000, 1, 7);
        /* At its limit the claim itself is refused: nothing is charged. */
        a = put_as(s, 1000, "x", 0, 0);
        assert_int_equal(snap_store_claim(s, 1000, 1, 0, &refused), -EDQUOT);
        assert_false(refused.held);
        assert_usage(s, 1000, 2, 8);
        /* Given back: counts and the reservation as before the claim. */
        b = put_as(s, 1001, "y", 0, 0);
        assert_int_equal(snap_store_reserve_as(s, 1001, 3), 0);
        assert_int_equal(snap_store_claim(s, 1001, 3, 3, &claim), 0);
        assert_usage(s, 1001, 2, 4);
        snap_store_unclaim(s, &claim);
        snap_store_unclaim(s, &claim); /* a second time changes nothing */
        assert_usage(s, 1001, 1, 1);
        assert_stats(s, 9, 3, 3, 3);
        snap_store_unreserve(s, 3);
        snap_store_release(s, o);
        snap_store_release(s, a);
        snap_store_release(s, b);
        snap_store_free(s);
}

static void test_restored_holders_are_charged_whatever_the_limits_are_now(void **state)
{
        struct snap_store *s = quota_store();
        static const uint32_t holders[] = { 1000, 1001 }, twice[] = { 1000, 1000 };
        const struct timespec then = { .tv_sec = 1234567890, .tv_nsec = 5 };
        struct snap_object *o[3] = { 0 }, *x = NULL;
        char text[3][8];
        (void)state;

        /* uid 1000 held three before a restart that lowered its limit to two. */
        for (int i = 0; i < 3; i++) {
                struct snap_put p = { .len = 7, .publisher_uid = 1000, .holders = holders,
                                      .n_holders = 2, .created = &then, .unlimited = true };
                snprintf(text[i], sizeof(text[i]), "stored%d", i);
                p.data = text[i];
                assert_int_equal(snap_store_put(s, &p, &o[i]), 0);
        }
        assert_usage(s, 1000, 3, 21);
        assert_usage(s, 1001, 3, 21);
        assert_int_equal(o[0]->created.tv_sec, then.tv_sec);
        assert_int_equal(o[0]->publisher_uid, 1000);
        /* Over its limits now: no more, and no wrap of its byte count. */
        put_as(s, 1000, "more", 0, -EDQUOT);
        /* A uid named twice is no list of holders. */
        {
                struct snap_put p = { .data = "twice", .len = 5, .publisher_uid = 1000,
                                      .holders = twice, .n_holders = 2, .unlimited = true };
                assert_int_equal(snap_store_put(s, &p, &x), -EINVAL);
        }
        for (int i = 0; i < 3; i++)
                snap_store_release(s, o[i]);
        snap_store_free(s);
}

static void test_more_holders_than_a_snapshot_takes_or_a_detached_one_are_refused(void **state)
{
        struct snap_store *s = quota_store();
        uint32_t many[SNAP_HOLDERS_MAX + 2];
        struct snap_put p = { .data = "crowded", .len = 7, .publisher_uid = 1,
                              .holders = many, .unlimited = true };
        struct snap_object *o = NULL;
        (void)state;

        for (uint32_t i = 0; i < SNAP_HOLDERS_MAX + 2; i++)
                many[i] = i + 1;
        p.n_holders = SNAP_HOLDERS_MAX + 2;
        assert_int_equal(snap_store_put(s, &p, &o), -EINVAL);
        p.n_holders = SNAP_HOLDERS_MAX + 1;
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        /* Detached: nothing holds it any more, nobody may take a hold. */
        assert_int_equal(snap_store_unhold(s, o, SNAP_HOLDER_ALL), 1);
        assert_int_equal(snap_store_hold_check(s, o, 0), -ENOENT);
        assert_int_equal(snap_store_hold(s, o, 0), -ENOENT);
        snap_store_release(s, o);
        snap_store_free(s);
}

static void test_a_claim_larger_than_one_object_may_be_is_efbig(void **state)
{
        struct snap_store *s = *state;
        struct snap_claim claim;

        assert_int_equal(snap_store_claim(s, 1000, cfg_default.max_object_size + 1, 0, &claim),
                         -EFBIG);
        assert_false(claim.held);
        assert_int_equal(snap_store_claim(s, 1000, cfg_default.max_object_size, 0, &claim), 0);
        snap_store_unclaim(s, &claim);
        assert_stats(s, 0, 0, 0, 0);
}


/* ---- grants: the second kind of reference ---- */

/* A new object nobody holds and one scope references, as a scope's publish makes it. */
static struct snap_object *put_granted(struct snap_store *s, const char *text, int want)
{
        struct snap_object *o = NULL;
        const struct snap_put p = { .data = text, .len = strlen(text), .publisher_uid = 1000,
                                    .unheld = true, .grants = 1 };
        assert_int_equal(snap_store_put(s, &p, &o), want);
        return want >= 0 ? o : NULL;
}

static void test_a_grant_keeps_an_object_its_last_hold_left(void **state)
{
        struct snap_store *s = quota_store();
        const struct snap_drop all = { .hold = true, .uid = SNAP_HOLDER_ALL };
        struct snap_object *o = put_as(s, 1000, "granted", 0, 0), *l;
        (void)state;

        assert_int_equal(snap_store_grant(s, o), 0);
        assert_true(snap_store_kept_without(s, o, &all));
        /* Every hold goes: the grant keeps it published, no longer held, nobody charged. */
        assert_int_equal(snap_store_unhold(s, o, SNAP_HOLDER_ALL), 0);
        assert_true(snap_store_indexed(s, o));
        assert_false(snap_store_held(s, o));
        assert_usage(s, 1000, 0, 0);
        l = snap_store_lookup(s, &o->digest);
        assert_ptr_equal(l, o);
        snap_store_release(s, l);
        /* Its last reference: detached. */
        assert_false(snap_store_kept_without(s, o, &(struct snap_drop){ .grants = 1 }));
        assert_int_equal(snap_store_ungrant(s, o), 1);
        assert_false(snap_store_indexed(s, o));
        assert_null(snap_store_lookup(s, &o->digest));
        assert_int_equal(snap_store_ungrant(s, o), -ENOENT);
        snap_store_release(s, o);
        assert_stats(s, 0, 0, 0, 0);
        snap_store_free(s);
}

static void test_a_hold_keeps_an_object_its_last_grant_left(void **state)
{
        struct snap_store *s = *state;
        struct snap_object *o = put_as(s, 1000, "held", 0, 0);

        assert_int_equal(snap_store_grant(s, o), 0);
        assert_int_equal(snap_store_grant(s, o), 0);
        assert_true(snap_store_kept_without(s, o, &(struct snap_drop){ .grants = 2 }));
        assert_int_equal(snap_store_ungrant(s, o), 0);
        assert_int_equal(snap_store_ungrant(s, o), 0);
        assert_true(snap_store_held(s, o));
        /* No grant left to drop: refused, nothing changes. */
        assert_int_equal(snap_store_ungrant(s, o), -ENOENT);
        assert_true(snap_store_indexed(s, o));
        snap_store_release(s, o);
}

static void test_an_object_published_in_a_scope_is_held_by_nobody(void **state)
{
        struct snap_store *s = quota_store();
        struct snap_object *o, *again;
        (void)state;

        o = put_granted(s, "scoped", 0);
        assert_true(snap_store_indexed(s, o));
        assert_false(snap_store_held(s, o));
        assert_int_equal(snap_store_get_holders(s, o, NULL, 0), 0);
        assert_usage(s, 1000, 0, 0);
        assert_stats(s, 6, 0, 1, 1);
        /* The same bytes again are the same object: one snapshot, one copy. */
        again = put_granted(s, "scoped", 1);
        assert_ptr_equal(again, o);
        snap_store_release(s, again);
        /* A uid may still hold it, charged as any holder. */
        assert_int_equal(snap_store_hold(s, o, 1001), 0);
        assert_true(snap_store_held(s, o));
        assert_usage(s, 1001, 1, 6);
        snap_store_release(s, o);
        snap_store_free(s);
}

static void test_an_unheld_put_with_holders_or_a_held_one_with_grants_is_einval(void **state)
{
        struct snap_store *s = *state;
        static const uint32_t holders[] = { 1000 };
        struct snap_put p = { .data = "x", .len = 1, .unheld = true, .holders = holders,
                              .n_holders = 1 };
        struct snap_object *o = NULL;

        assert_int_equal(snap_store_put(s, &p, &o), -EINVAL);
        p = (struct snap_put){ .data = "x", .len = 1, .grants = 1 };
        assert_int_equal(snap_store_put(s, &p, &o), -EINVAL);
        assert_stats(s, 0, 0, 0, 0);
}

static void test_an_unheld_claim_keeps_the_reserve_and_charges_nobody(void **state)
{
        struct snap_store_config c = cfg_default;
        struct snap_claim claim, refused;
        struct snap_object *o = NULL;
        struct snap_store *s;
        struct snap_put p = { .data = "claimed", .len = 7, .unheld = true, .grants = 1 };
        (void)state;

        c.max_objects = 2;
        c.reserve_objects = 1;
        c.privileged_uid = 0;
        assert_int_equal(snap_store_new(&c, &s), 0);
        assert_int_equal(snap_store_claim_unheld(s, 7, 0, &claim), 0);
        assert_true(claim.unheld);
        assert_stats(s, 7, 0, 1, 0);
        /* Another claim would take the privileged uid's reserve: a scope never does. */
        assert_int_equal(snap_store_claim_unheld(s, 1, 0, &refused), -ENOSPC);
        assert_false(refused.held);
        /* A held put cannot take an unheld claim, nor the other way round. */
        p.claim = &claim;
        p.unheld = false;
        p.grants = 0;
        p.publisher_uid = 0;
        assert_int_equal(snap_store_put(s, &p, &o), -EINVAL);
        p.unheld = true;
        p.grants = 1;
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        assert_false(claim.held);
        assert_usage(s, 0, 0, 0);
        assert_stats(s, 7, 0, 1, 1);
        /* The privileged uid still has its reserve. */
        put_as(s, 0, "owner", 0, 0);
        snap_store_free(s);
}

static void test_collect_detaches_only_what_nothing_references(void **state)
{
        struct snap_store *s = *state;
        struct snap_put p = { .data = "orphan", .len = 6, .unheld = true };
        struct snap_object *orphan = NULL, *granted, *held;
        uint64_t v[8] = { 0 };

        /* Served again from a store, its grants still to come. */
        assert_int_equal(snap_store_put(s, &p, &orphan), 0);
        granted = put_granted(s, "granted", 0);
        held = put_as(s, 1000, "held", 0, 0);
        assert_int_equal(snap_store_foreach_from(s, 0, SNAP_FOREACH_UNREFERENCED, collect_ino, v),
                         0);
        assert_int_equal(v[0], 1);
        assert_int_equal(v[1], orphan->ino);
        memset(v, 0, sizeof(v));
        assert_int_equal(snap_store_foreach_from(s, 0, SNAP_FOREACH_HELD, collect_ino, v), 0);
        assert_int_equal(v[0], 1);
        assert_int_equal(v[1], held->ino);
        assert_int_equal(snap_store_collect(s, granted), 0);
        assert_int_equal(snap_store_collect(s, held), 0);
        assert_int_equal(snap_store_collect(s, orphan), 1);
        assert_int_equal(snap_store_collect(s, orphan), -ENOENT);
        assert_false(snap_store_indexed(s, orphan));
        assert_true(snap_store_indexed(s, granted));
        snap_store_release(s, orphan);
        snap_store_release(s, granted);
        snap_store_release(s, held);
}

/* The freed hook: told once, at the last reference, with the object still whole. */
static int freed_calls;
static uint64_t freed_size;

static void count_freed(const struct snap_object *o)
{
        freed_calls++;
        freed_size = o->size;
}

static void test_freed_is_told_once_at_the_last_release_not_before(void **state)
{
        struct snap_store_config cfg = cfg_default;
        struct snap_store *s;
        struct snap_object *o, *again;

        (void)state;
        cfg.freed = count_freed;
        freed_calls = 0;
        assert_int_equal(snap_store_new(&cfg, &s), 0);
        assert_int_equal(snap_store_put_bytes(s, "abc", 3, &o), 0);
        assert_int_equal(snap_store_put_bytes(s, "abc", 3, &again), 1);
        assert_ptr_equal(o, again);
        snap_store_release(s, again);
        assert_int_equal(freed_calls, 0); /* one reference left: not freed */
        snap_store_release(s, o);
        assert_int_equal(freed_calls, 1);
        assert_int_equal(freed_size, 3);
        /* And for what the store still holds when it is freed. */
        assert_int_equal(snap_store_put_bytes(s, "held", 4, &o), 0);
        snap_store_free(s);
        assert_int_equal(freed_calls, 2);
        assert_int_equal(freed_size, 4);
}

/* The adopt hook: its copy is what the store serves, given back when the put stores
 * nothing, and never freed by the store. */
static uint8_t adopted_buf[2][16];
static int adopted, given_back;

static const uint8_t *adopt_copy(const struct snap_object *o)
{
        uint8_t *buf = adopted_buf[adopted % 2];

        memcpy(buf, o->data, o->size);
        adopted++;
        return buf;
}

static void adopt_freed(const struct snap_object *o)
{
        if (o->data == adopted_buf[0] || o->data == adopted_buf[1])
                given_back++;
}

static void test_adopt_keeps_the_hooks_copy_and_a_duplicate_put_gives_it_back(void **state)
{
        struct snap_store_config cfg = cfg_default;
        struct snap_store *s;
        struct snap_object *o, *dup;
        struct snap_put p = { .data = "content", .len = 7 };
        char *owned = strdup("content");

        (void)state;
        cfg.adopt = adopt_copy;
        cfg.freed = adopt_freed;
        adopted = given_back = 0;
        assert_int_equal(snap_store_new(&cfg, &s), 0);
        /* Taken over from the caller (owned) and adopted: the store frees the heap copy. */
        p.data = owned;
        p.owned = owned;
        assert_int_equal(snap_store_put(s, &p, &o), 0);
        assert_ptr_equal(o->data, adopted_buf[0]);
        assert_memory_equal(o->data, "content", 7);
        /* The same content again: found first, before any copy is offered. */
        p = (struct snap_put){ .data = "content", .len = 7 };
        assert_int_equal(snap_store_put(s, &p, &dup), 1);
        assert_ptr_equal(dup, o);
        assert_int_equal(adopted, 1);
        snap_store_release(s, dup);
        /* Empty content is never offered. */
        assert_int_equal(snap_store_put_bytes(s, "", 0, &dup), 0);
        assert_int_equal(adopted, 1);
        snap_store_release(s, dup);
        snap_store_release(s, o);
        assert_int_equal(given_back, 1);
        snap_store_free(s);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_freed_is_told_once_at_the_last_release_not_before),
                cmocka_unit_test(test_adopt_keeps_the_hooks_copy_and_a_duplicate_put_gives_it_back),
                T(test_new_store_is_empty),
                cmocka_unit_test(test_an_unused_minimum_is_kept_from_others_not_from_its_own),
                T(test_zero_limit_is_refused_with_einval),
                T(test_put_stores_content_under_its_digest),
                T(test_put_of_same_content_returns_the_same_object_and_inode),
                T(test_put_with_a_given_digest_is_found_under_it),
                T(test_lookup_of_unknown_digest_gives_null),
                T(test_release_of_the_last_reference_frees_the_object),
                T(test_counters_return_to_zero_after_all_releases),
                T(test_object_over_max_object_size_is_refused_with_efbig),
                T(test_total_bytes_limit_is_refused_with_enospc),
                T(test_object_count_limit_is_refused_with_enospc),
                T(test_reservation_past_max_bytes_is_refused_with_enospc),
                T(test_put_takes_over_its_reservation),
                T(test_dedup_put_does_not_take_the_reservation),
                T(test_unreserve_of_more_than_reserved_is_clamped),
                T(test_inode_numbers_are_new_after_release_and_re_put),
                T(test_alloc_ino_and_put_draw_from_one_counter),
                T(test_explicit_ino_past_the_counter_moves_the_counter),
                T(test_detach_then_re_put_gives_a_new_inode_and_keeps_the_old_readable),
                T(test_owned_buffer_is_taken_over_by_a_new_object),
                T(test_owned_buffer_is_not_taken_on_dedup),
                T(test_owned_buffer_is_not_taken_on_refusal),
                T(test_malformed_put_is_refused_with_einval),
                T(test_foreach_visits_indexed_objects_and_stops_early),
                T(test_free_frees_objects_still_referenced),
                T(test_two_threads_put_and_release_keep_counters_consistent),
                T(test_foreach_from_resumes_in_inode_order_across_changes),
                T(test_uid_past_its_own_limits_gets_edquot_others_still_publish),
                T(test_reserve_is_kept_for_the_privileged_uid),
                T(test_a_second_holder_is_charged_and_a_holder_again_changes_nothing),
                T(test_a_hold_past_the_uids_limits_is_edquot_decided_without_change),
                T(test_holders_past_the_maximum_are_edquot_but_the_privileged_uid_holds),
                T(test_dropping_one_hold_keeps_the_object_the_last_detaches_it),
                T(test_every_hold_at_once_detaches_and_keeps_every_charge_until_release),
                T(test_a_claim_decides_and_charges_before_the_put_that_takes_it),
                T(test_restored_holders_are_charged_whatever_the_limits_are_now),
                T(test_more_holders_than_a_snapshot_takes_or_a_detached_one_are_refused),
                T(test_a_claim_larger_than_one_object_may_be_is_efbig),
                T(test_a_grant_keeps_an_object_its_last_hold_left),
                T(test_a_hold_keeps_an_object_its_last_grant_left),
                T(test_an_object_published_in_a_scope_is_held_by_nobody),
                T(test_an_unheld_put_with_holders_or_a_held_one_with_grants_is_einval),
                T(test_an_unheld_claim_keeps_the_reserve_and_charges_nobody),
                T(test_collect_detaches_only_what_nothing_references),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
