/* SPDX-License-Identifier: MIT */
/* fs/store/ocistore.c: --store DIR, the snapshots kept in an OCI image layout and served again at
 * start, and the store directories it refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define _XOPEN_SOURCE_EXTENDED 1
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <pthread.h>
#include <time.h>

#include "snapshot/digest.h"
#include "snapshot/name.h"
#include "snapshot/oci.h"
#include "fs/store/ocistore.h"
#include "snapshot/store.h"
#include "tests/unit/testutil.h"

/* What a start handed out: snapshots restored, blobs set aside. */
struct seen {
        unsigned restored, corrupt, warned, titled, unheld;
        struct snap_digest digests[8];
        size_t sizes[8];
        uint32_t holders[8][4];
        size_t n_holders[8];
        struct timespec created[8];
        char corrupt_hex[8][SNAP_DIGEST_HEX_LEN + 1];
};

static int on_restore(void *ctx, const struct snap_digest *d, void *data, size_t len,
                      const struct sfs_ocistore_meta *meta)
{
        struct seen *s = ctx;
        struct snap_digest check;

        s->titled += meta->title != NULL;
        s->unheld += meta->unheld;
        assert_int_equal(snap_sha256(data, len, &check), 0);
        assert_true(snap_digest_equal(&check, d)); /* only intact bytes are handed out */
        assert_true(s->restored < 8);
        assert_true(meta->n_holders <= 4);
        if (meta->n_holders) /* none: a store from before holders were kept */
                memcpy(s->holders[s->restored], meta->holders,
                       meta->n_holders * sizeof(uint32_t));
        s->n_holders[s->restored] = meta->n_holders;
        s->created[s->restored] = meta->created;
        s->digests[s->restored] = *d;
        s->sizes[s->restored++] = len;
        free(data);
        return 0;
}

static void on_corrupt(void *ctx, const char *hex, int err)
{
        struct seen *s = ctx;
        assert_int_equal(err, -EBADMSG);
        assert_true(s->corrupt < 8);
        snprintf(s->corrupt_hex[s->corrupt++], SNAP_DIGEST_HEX_LEN + 1, "%s", hex);
}

static void on_warn(void *ctx, const char *hex, const char *what, int err)
{
        (void)hex, (void)what, (void)err;
        ((struct seen *)ctx)->warned++;
}

struct fx {
        struct tu_dir dir;
        char store[300];
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        snprintf(f->store, sizeof(f->store), "%s/store", f->dir.path);
        *state = f;
        return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        struct fx *f = *state;
        nftw(f->dir.path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* Opens the store and loads it into seen. */
static struct sfs_ocistore *start(struct fx *f, struct seen *seen)
{
        struct sfs_ocistore_hooks h = { on_restore, on_corrupt, on_warn, seen };
        struct sfs_ocistore *s = NULL;

        memset(seen, 0, sizeof(*seen));
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        assert_int_equal(sfs_ocistore_load(s, 1 << 20, &h), 0);
        return s;
}

static const uint32_t owner_only[] = { 0 };

static int add_as(struct sfs_ocistore *s, const char *text, const char *title,
                  const uint32_t *holders, size_t n, struct snap_digest *d)
{
        struct sfs_ocistore_meta meta = { .title = title, .holders = holders, .n_holders = n };
        int r;

        clock_gettime(CLOCK_REALTIME, &meta.created);
        assert_int_equal(snap_sha256(text, strlen(text), d), 0);
        sfs_ocistore_lock(s);
        r = sfs_ocistore_add(s, d, text, strlen(text), &meta);
        sfs_ocistore_unlock(s);
        return r;
}

static void add(struct sfs_ocistore *s, const char *text, const char *title,
                struct snap_digest *d)
{
        assert_int_equal(add_as(s, text, title, owner_only, 1, d), 0);
}

static void blob_path(struct fx *f, const struct snap_digest *d, char p[PATH_MAX])
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        snap_digest_to_hex(d, hex);
        snprintf(p, PATH_MAX, "%s/blobs/sha256/%s", f->store, hex);
}

static bool blob_exists(struct fx *f, const struct snap_digest *d)
{
        char p[PATH_MAX];
        blob_path(f, d, p);
        return access(p, F_OK) == 0;
}

static struct stat stat_of(struct fx *f, const char *name)
{
        char p[PATH_MAX];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", f->store, name);
        assert_int_equal(lstat(p, &st), 0);
        return st;
}

static void test_added_snapshots_are_restored_and_removed_ones_are_not(void **state)
{
        struct fx *f = *state;
        struct snap_digest a, b;
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);

        assert_int_equal(seen.restored, 0);
        add(s, "alpha", "a.json", &a);
        add(s, "beta", "b.json", &b);
        add(s, "alpha", "again", &a); /* stored already: nothing written */
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_remove(s, &a), 0);
        assert_int_equal(sfs_ocistore_remove(s, &a), -ENOENT);
        sfs_ocistore_unlock(s);
        assert_false(blob_exists(f, &a));
        sfs_ocistore_close(s);

        s = start(f, &seen);
        assert_int_equal(seen.restored, 1);
        assert_true(snap_digest_equal(&seen.digests[0], &b));
        assert_int_equal(seen.sizes[0], 4);
        assert_int_equal(seen.titled, 1);
        assert_int_equal(seen.corrupt, 0);
        assert_int_equal(sfs_ocistore_corrupt(s), 0);
        /* The last one removed: an empty manifest, and an empty start. */
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_remove(s, &b), 0);
        sfs_ocistore_unlock(s);
        sfs_ocistore_close(s);
        s = start(f, &seen);
        assert_int_equal(seen.restored, 0);
        assert_int_equal(seen.warned, 0);
        assert_false(blob_exists(f, &b));
        sfs_ocistore_close(s);
}

static void test_a_blob_that_does_not_match_is_set_aside_the_others_restored(void **state)
{
        struct fx *f = *state;
        struct snap_digest a, b;
        char hex[SNAP_DIGEST_HEX_LEN + 1], p[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);
        int fd;

        add(s, "damaged", "d", &a);
        add(s, "intact", "i", &b);
        sfs_ocistore_close(s);
        snap_digest_to_hex(&a, hex);
        snprintf(p, sizeof(p), "%s/blobs/sha256/%s", f->store, hex);
        fd = open(p, O_WRONLY);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, "D", 1, 0), 1);
        close(fd);

        s = start(f, &seen);
        assert_int_equal(seen.corrupt, 1);
        assert_string_equal(seen.corrupt_hex[0], hex);
        assert_int_equal(sfs_ocistore_corrupt(s), 1);
        assert_int_equal(seen.restored, 1);
        assert_true(snap_digest_equal(&seen.digests[0], &b));
        assert_false(blob_exists(f, &a));
        snprintf(p, sizeof(p), "%s/corrupt/%s", f->store, hex);
        assert_int_equal(access(p, F_OK), 0);
        sfs_ocistore_close(s);

        /* The manifest no longer names it: the next start sets nothing aside. */
        s = start(f, &seen);
        assert_int_equal(seen.corrupt, 0);
        assert_int_equal(seen.restored, 1);
        sfs_ocistore_close(s);
}

static void test_an_unnamed_blob_and_temporary_files_are_removed_at_start(void **state)
{
        struct fx *f = *state;
        struct snap_digest a, orphan;
        char hex[SNAP_DIGEST_HEX_LEN + 1], p[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);
        FILE *out;

        add(s, "named", "n", &a);
        sfs_ocistore_close(s);
        /* A publish that died after its blob, before index.json: never answered. */
        assert_int_equal(snap_sha256("orphan", 6, &orphan), 0);
        snap_digest_to_hex(&orphan, hex);
        snprintf(p, sizeof(p), "%s/blobs/sha256/%s", f->store, hex);
        assert_non_null(out = fopen(p, "w"));
        fputs("orphan", out);
        fclose(out);
        snprintf(p, sizeof(p), "%s/blobs/sha256/.tmp-%s-0123456789abcdef", f->store, hex);
        assert_non_null(out = fopen(p, "w"));
        fputs("orp", out);
        fclose(out);

        s = start(f, &seen);
        assert_int_equal(seen.restored, 1);
        assert_true(snap_digest_equal(&seen.digests[0], &a));
        assert_false(blob_exists(f, &orphan));
        assert_int_equal(access(p, F_OK), -1);
        sfs_ocistore_close(s);
}

static void test_a_missing_or_damaged_index_serves_every_blob_and_deletes_nothing(void **state)
{
        static const char *const damage[] = { NULL, "{\"schemaVersion\": 2, \"mani", "#" };
        struct fx *f = *state;
        struct snap_digest a, b;
        char p[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);
        FILE *out;

        add(s, "kept one", "a", &a);
        add(s, "kept two", "b", &b);
        sfs_ocistore_close(s);
        snprintf(p, sizeof(p), "%s/index.json", f->store);
        for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
                /* Missing, cut short, not JSON: the blobs it named are all served, kept. */
                if (damage[i]) {
                        assert_non_null(out = fopen(p, "w"));
                        fputs(damage[i], out);
                        fclose(out);
                } else {
                        assert_int_equal(unlink(p), 0);
                }
                s = start(f, &seen);
                assert_true(seen.restored >= 2);
                assert_int_equal(seen.titled, 0);
                assert_true(seen.warned >= 1);
                assert_true(blob_exists(f, &a) && blob_exists(f, &b));
                sfs_ocistore_close(s);
                /* The store wrote a valid index.json again: the next start is quiet. */
                s = start(f, &seen);
                assert_int_equal(seen.warned, 0);
                assert_true(blob_exists(f, &a) && blob_exists(f, &b));
                sfs_ocistore_close(s);
        }
}

static void test_repair_writes_only_the_right_bytes_of_a_stored_blob(void **state)
{
        struct fx *f = *state;
        struct snap_digest a, other;
        char p[PATH_MAX], buf[16] = { 0 };
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);
        FILE *out;

        add(s, "right bytes", "a", &a);
        blob_path(f, &a, p);
        assert_non_null(out = fopen(p, "r+"));
        fputs("wrong", out);
        fclose(out);
        /* Other bytes under its name: refused, the blob left as it is. */
        assert_int_equal(sfs_ocistore_repair(s, &a, "wrong bytes", 11), -EBADMSG);
        assert_int_equal(snap_sha256("not stored", 10, &other), 0);
        assert_int_equal(sfs_ocistore_repair(s, &other, "not stored", 10), -ENOENT);
        assert_false(blob_exists(f, &other));
        /* The right ones: rewritten. */
        assert_int_equal(sfs_ocistore_repair(s, &a, "right bytes", 11), 0);
        assert_non_null(out = fopen(p, "r"));
        assert_int_equal(fread(buf, 1, sizeof(buf), out), 11);
        fclose(out);
        assert_memory_equal(buf, "right bytes", 11);
        sfs_ocistore_close(s);
}

static void test_a_lost_manifest_serves_every_intact_blob_untitled(void **state)
{
        struct fx *f = *state;
        struct snap_digest a, b;
        char p[PATH_MAX], q[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);
        FILE *ix;
        char buf[4096];
        size_t n;
        char *at;

        add(s, "first", "1", &a);
        add(s, "second", "2", &b);
        sfs_ocistore_close(s);
        /* Remove the manifest index.json names: its layers must not be thrown away. */
        snprintf(p, sizeof(p), "%s/index.json", f->store);
        assert_non_null(ix = fopen(p, "r"));
        n = fread(buf, 1, sizeof(buf) - 1, ix);
        fclose(ix);
        buf[n] = '\0';
        at = strstr(buf, "\"digest\":\"sha256:");
        assert_non_null(at);
        at += strlen("\"digest\":\"sha256:");
        at[SNAP_DIGEST_HEX_LEN] = '\0';
        snprintf(q, sizeof(q), "%s/blobs/sha256/%s", f->store, at);
        assert_int_equal(unlink(q), 0);

        s = start(f, &seen);
        assert_int_equal(seen.restored, 2);
        assert_int_equal(seen.titled, 0);
        assert_true(seen.warned >= 1);
        sfs_ocistore_close(s);
        /* It wrote a new manifest: the next start is an ordinary one. */
        s = start(f, &seen);
        assert_int_equal(seen.restored, 2);
        assert_int_equal(seen.warned, 0);
        sfs_ocistore_close(s);
}

static void test_a_second_opener_of_the_same_store_is_refused(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore *s = NULL, *t = NULL;

        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 0, &t, NULL), -EWOULDBLOCK);
        assert_null(t);
        sfs_ocistore_close(s);
        /* Once closed, the store opens again. */
        assert_int_equal(sfs_ocistore_open(f->store, 0, &t, NULL), 0);
        sfs_ocistore_close(t);
}

static void test_a_store_writable_by_others_or_owned_by_another_uid_is_eperm(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore *s = NULL;

        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        sfs_ocistore_close(s);
        s = NULL;
        /* Another uid that can write the store could plant a blob served at the next start. */
        assert_int_equal(chmod(f->store, 0775), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), -EPERM);
        assert_null(s);
        assert_int_equal(chmod(f->store, 0757), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), -EPERM);
        assert_int_equal(chmod(f->store, 0755), 0);
        if (geteuid() == 0) {
                assert_int_equal(chown(f->store, 4242, 4242), 0);
                assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), -EPERM);
                assert_int_equal(chown(f->store, 0, 0), 0);
        }
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        sfs_ocistore_close(s);
}

static void test_a_store_past_what_one_manifest_names_is_enospc_and_keeps_the_rest(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore *s = NULL;
        struct snap_digest d[3];
        struct seen seen;
        static const char *text[3] = { "one", "two", "three" };

        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        /* The same path as at SNAP_OCI_ENTRIES_MAX, reached in three snapshots. */
        sfs_ocistore_set_max_entries(s, 2);
        for (int i = 0; i < 3; i++)
                assert_int_equal(snap_sha256(text[i], strlen(text[i]), &d[i]), 0);
        assert_int_equal(add_as(s, text[0], "a", owner_only, 1, &d[0]), 0);
        assert_int_equal(add_as(s, text[1], "b", owner_only, 1, &d[1]), 0);
        assert_int_equal(add_as(s, text[2], "c", owner_only, 1, &d[2]), -ENOSPC);
        /* The manifest's bound, not a full disk: the caller must not say "filesystem full". */
        assert_false(sfs_ocistore_full(s));
        /* Refused before anything was written: not even its blob. */
        assert_false(blob_exists(f, &d[2]));
        sfs_ocistore_close(s);
        /* What was stored is served again; what was refused is not. */
        s = start(f, &seen);
        assert_int_equal(seen.restored, 2);
        sfs_ocistore_close(s);
}

static void test_holders_and_the_first_publish_time_come_back_after_a_restart(void **state)
{
        struct fx *f = *state;
        static const uint32_t two[] = { 1000, 0 }, one[] = { 0 };
        struct snap_digest a, b;
        struct timespec before;
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);

        clock_gettime(CLOCK_REALTIME, &before);
        assert_int_equal(add_as(s, "shared", "s", two, 2, &a), 0);
        assert_int_equal(add_as(s, "alone", "o", one, 1, &b), 0);
        sfs_ocistore_close(s);

        s = start(f, &seen);
        assert_int_equal(seen.restored, 2);
        assert_true(snap_digest_equal(&seen.digests[0], &a)); /* in publish order */
        assert_int_equal(seen.n_holders[0], 2);
        assert_int_equal(seen.holders[0][0], 1000);
        assert_int_equal(seen.holders[0][1], 0);
        assert_int_equal(seen.n_holders[1], 1);
        assert_true(seen.created[0].tv_sec >= before.tv_sec);
        /* A hold dropped is dropped after the next restart too. */
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_set_holders(s, &a, one, 1), 0);
        sfs_ocistore_unlock(s);
        sfs_ocistore_close(s);
        s = start(f, &seen);
        assert_int_equal(seen.n_holders[0], 1);
        assert_int_equal(seen.holders[0][0], 0);
        assert_int_equal(seen.unheld, 0);
        sfs_ocistore_close(s);
}

static void test_a_snapshot_nobody_holds_comes_back_held_by_nobody(void **state)
{
        struct fx *f = *state;
        static const uint32_t one[] = { 0 };
        struct snap_digest a, b;
        struct sfs_ocistore_meta meta = { .title = "scoped", .unheld = true };
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);

        /* Published in a scope: no uid holds it, its grant keeps it. */
        assert_int_equal(snap_sha256("scoped", 6, &a), 0);
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_add(s, &a, "scoped", 6, &meta), 0);
        sfs_ocistore_unlock(s);
        /* Held, then every hold dropped while grants keep it. */
        assert_int_equal(add_as(s, "held", "h", one, 1, &b), 0);
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_set_holders(s, &b, NULL, 0), 0);
        sfs_ocistore_unlock(s);
        sfs_ocistore_close(s);

        s = start(f, &seen);
        assert_int_equal(seen.restored, 2);
        assert_int_equal(seen.unheld, 2);
        assert_int_equal(seen.n_holders[0], 0);
        assert_int_equal(seen.n_holders[1], 0);
        assert_int_equal(seen.warned, 0);
        /* Beside them, a hold taken again comes back as a hold. */
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_set_holders(s, &b, one, 1), 0);
        sfs_ocistore_unlock(s);
        sfs_ocistore_close(s);
        s = start(f, &seen);
        assert_int_equal(seen.unheld, 1);
        assert_int_equal(seen.n_holders[1], 1);
        sfs_ocistore_close(s);
}

/* A runtime store on /dev/shm (a tmpfs), paired with the fixture's store: path gets its
 * directory, removed by rm_ram. */
static struct sfs_ocistore *open_ram(struct sfs_ocistore *durable, char path[64])
{
        struct sfs_ocistore *rt = NULL;

        snprintf(path, 64, "/dev/shm/snapfs-unit-XXXXXX");
        assert_non_null(mkdtemp(path));
        assert_int_equal(sfs_ocistore_open_runtime(path, durable, 0, &rt, NULL), 0);
        return rt;
}

static void rm_ram(const char *path)
{
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static bool ram_blob(const char *path, const struct snap_digest *d)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1], p[PATH_MAX];

        snap_digest_to_hex(d, hex);
        snprintf(p, sizeof(p), "%s/blobs/sha256/%s", path, hex);
        return access(p, F_OK) == 0;
}

static void test_a_runtime_store_on_a_disk_is_refused_and_one_in_ram_taken(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore_why why;
        struct sfs_ocistore *rt = NULL;
        char disk[PATH_MAX], ram[64];

        /* The fixture's directory is on the disk /tmp is on (the premise, checked). */
        snprintf(disk, sizeof(disk), "%s/runtime", f->dir.path);
        {
                struct statfs sf;
                assert_int_equal(statfs(f->dir.path, &sf), 0);
                if (sf.f_type == TMPFS_MAGIC)
                        fail_msg("the test directory is on a tmpfs: set TMPDIR to a disk");
        }
        assert_int_equal(sfs_ocistore_open_runtime(disk, NULL, 0, &rt, &why), -EMEDIUMTYPE);
        assert_null(rt);
        assert_string_equal(why.fstype, "a disk");
        rt = open_ram(NULL, ram);
        assert_non_null(rt);
        sfs_ocistore_close(rt);
        rm_ram(ram);
}

static void test_a_paired_runtime_store_shares_the_lock_and_gives_held_content_to_the_disk(
        void **state)
{
        struct fx *f = *state;
        static const uint32_t one[] = { 1000 };
        struct sfs_ocistore_meta meta = { .title = "scoped", .unheld = true };
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen), *rt;
        struct snap_digest a, b;
        char ram[64];

        rt = open_ram(s, ram);
        assert_int_equal(snap_sha256("scoped a", 8, &a), 0);
        assert_int_equal(snap_sha256("scoped b", 8, &b), 0);
        /* One lock: the runtime store's is the disk store's (the lock order allows one). */
        sfs_ocistore_lock(rt);
        assert_int_equal(sfs_ocistore_add(rt, &a, "scoped a", 8, &meta), 0);
        assert_int_equal(sfs_ocistore_add(rt, &b, "scoped b", 8, &meta), 0);
        /* A uid publishes b on the main mount too: it moves to the disk, held. */
        assert_int_equal(sfs_ocistore_set_holders(s, &b, one, 1), 0);
        /* A removal through either finds a blob in the other. */
        assert_int_equal(sfs_ocistore_remove(s, &a), 0);
        sfs_ocistore_unlock(s);
        assert_false(ram_blob(ram, &a) || blob_exists(f, &a));
        assert_true(blob_exists(f, &b));
        assert_false(ram_blob(ram, &b));
        sfs_ocistore_close(rt);
        sfs_ocistore_close(s);
        rm_ram(ram);
        s = start(f, &seen);
        assert_int_equal(seen.restored, 1);
        assert_int_equal(seen.n_holders[0], 1);
        sfs_ocistore_close(s);
}

/* What a start read of the scopes' files. */
struct scopes_seen {
        unsigned n, unreadable;
        char names[4][SNAP_NAME_MAX + 1];
        char texts[4][64];
};

static int on_scope(void *ctx, const char *name, const char *text, size_t len, int err)
{
        struct scopes_seen *s = ctx;

        assert_true(s->n < 4);
        snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
        if (err) {
                assert_null(text);
                s->unreadable++;
        } else {
                snprintf(s->texts[s->n], sizeof(s->texts[0]), "%.*s", (int)len, text);
        }
        s->n++;
        return 0;
}

static void test_scope_files_are_private_durable_and_read_back_in_name_order(void **state)
{
        struct fx *f = *state;
        struct scopes_seen seen = { 0 };
        struct seen loaded;
        char p[PATH_MAX], q[PATH_MAX];
        struct stat st;
        struct sfs_ocistore *s = start(f, &loaded);

        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_put_scope(s, "b-sandbox", "{\"b\":1}", 7), 0);
        assert_int_equal(sfs_ocistore_put_scope(s, "a-sandbox", "{\"a\":1}", 7), 0);
        assert_int_equal(sfs_ocistore_put_scope(s, "a-sandbox", "{\"a\":2}", 7), 0);
        /* Not a name: nothing written. */
        assert_int_equal(sfs_ocistore_put_scope(s, "../x", "{}", 2), -EINVAL);
        assert_int_equal(sfs_ocistore_put_scope(s, ".hidden", "{}", 2), -EINVAL);
        sfs_ocistore_unlock(s);
        snprintf(p, sizeof(p), "%s/scopes/a-sandbox.json", f->store);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        snprintf(p, sizeof(p), "%s/scopes", f->store);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);
        /* A link in their directory is never followed; a file of another name is no scope. */
        snprintf(p, sizeof(p), "%s/scopes/c-link.json", f->store);
        snprintf(q, sizeof(q), "%s/scopes/a-sandbox.json", f->store);
        assert_int_equal(symlink(q, p), 0);
        snprintf(p, sizeof(p), "%s/scopes/notes.txt", f->store);
        assert_int_equal(close(open(p, O_WRONLY | O_CREAT, 0600)), 0);

        assert_int_equal(sfs_ocistore_load_scopes(s, on_scope, &seen), 0);
        assert_int_equal(seen.n, 3);
        assert_string_equal(seen.names[0], "a-sandbox");
        assert_string_equal(seen.texts[0], "{\"a\":2}");
        assert_string_equal(seen.names[1], "b-sandbox");
        assert_string_equal(seen.names[2], "c-link");
        assert_int_equal(seen.unreadable, 1);

        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_drop_scope(s, "b-sandbox"), 0);
        assert_int_equal(sfs_ocistore_drop_scope(s, "b-sandbox"), -ENOENT);
        sfs_ocistore_unlock(s);
        memset(&seen, 0, sizeof(seen));
        assert_int_equal(sfs_ocistore_load_scopes(s, on_scope, &seen), 0);
        assert_int_equal(seen.n, 2);
        assert_string_equal(seen.names[1], "c-link");
        sfs_ocistore_close(s);
}

static void test_a_layer_without_holders_or_time_loads_with_none_and_the_blobs_time(void **state)
{
        struct fx *f = *state;
        struct snap_oci_layout l = SNAP_OCI_LAYOUT_INIT;
        struct snap_oci_desc layer = { .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                       .title = (char *)"old.json" }, desc;
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS,
                                       .n_layers = 1, .layers = &layer };
        struct timespec times[2] = { { .tv_sec = 1234567890 }, { .tv_sec = 1234567890 } };
        char p[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s;

        /* A store as an older daemon wrote it: titles, no holders, no times. */
        assert_int_equal(snap_oci_layout_open(f->store, SNAP_OCI_CREATE, &l), 0);
        assert_int_equal(snap_oci_blob_write(&l, "older", 5, &layer.digest), 0);
        layer.size = 5;
        snap_oci_desc_empty_config(&m.config);
        assert_int_equal(snap_oci_manifest_write(&l, &m, &desc), 0);
        assert_int_equal(snap_oci_tag(&l, &desc, SFS_OCISTORE_TAG), 0);
        snap_oci_layout_close(&l);
        blob_path(f, &layer.digest, p);
        assert_int_equal(utimensat(AT_FDCWD, p, times, 0), 0);

        s = start(f, &seen);
        assert_int_equal(seen.restored, 1);
        assert_int_equal(seen.titled, 1);
        assert_int_equal(seen.n_holders[0], 0); /* the caller decides: the mount owner */
        assert_int_equal(seen.created[0].tv_sec, 1234567890);
        assert_int_equal(seen.warned, 0);
        sfs_ocistore_close(s);
}

static void test_annotations_that_do_not_parse_are_warned_about_and_treated_as_absent(void **state)
{
        /* Each layer one way of being wrong; the last one right, beside them. */
        static const struct { const char *holders, *created; } bad[] = {
                { ",", "2026-11-30 00:40:32Z" },         /* no uid; a space, no T */
                { "01", "2026-13-01T00:00:00Z" },        /* leading zero; month 13 */
                { "4294967295", "2026-11-30T00:40:32" }, /* the kernel's "no uid"; no Z */
                { "1000,1000", "1969-12-31T23:59:59Z" }, /* twice; -1, timegm's error */
                { "1000;1001", "garbage" },              /* not a comma */
                { "1000,", "2026-11-30T24:00:00Z" },     /* nothing after the comma; hour 24 */
                { "1000,0", "2026-11-30T00:40:32.5Z" },  /* right */
        };
        enum { N = sizeof(bad) / sizeof(bad[0]) };
        struct fx *f = *state;
        struct snap_oci_layout l = SNAP_OCI_LAYOUT_INIT;
        struct snap_oci_desc layers[N], desc;
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS,
                                       .n_layers = N, .layers = layers };
        struct timespec times[2] = { { .tv_sec = 1111111111 }, { .tv_sec = 1111111111 } };
        char p[PATH_MAX], text[N][16];
        struct seen seen;
        struct sfs_ocistore *s;

        assert_int_equal(snap_oci_layout_open(f->store, SNAP_OCI_CREATE, &l), 0);
        for (int i = 0; i < N; i++) {
                snprintf(text[i], sizeof(text[i]), "layer %d", i);
                layers[i] = (struct snap_oci_desc){ .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                                    .size = strlen(text[i]),
                                                    .holders = (char *)bad[i].holders,
                                                    .created = (char *)bad[i].created };
                assert_int_equal(snap_oci_blob_write(&l, text[i], strlen(text[i]),
                                                     &layers[i].digest),
                                 0);
                blob_path(f, &layers[i].digest, p);
                assert_int_equal(utimensat(AT_FDCWD, p, times, 0), 0);
        }
        snap_oci_desc_empty_config(&m.config);
        assert_int_equal(snap_oci_manifest_write(&l, &m, &desc), 0);
        assert_int_equal(snap_oci_tag(&l, &desc, SFS_OCISTORE_TAG), 0);
        snap_oci_layout_close(&l);

        s = start(f, &seen);
        assert_int_equal(seen.restored, N);
        assert_int_equal(seen.warned, 2 * (N - 1));
        for (int i = 0; i < N - 1; i++) {
                assert_int_equal(seen.n_holders[i], 0);
                assert_int_equal(seen.created[i].tv_sec, 1111111111);
        }
        assert_int_equal(seen.n_holders[N - 1], 2);
        assert_int_equal(seen.holders[N - 1][0], 1000);
        assert_int_equal(seen.created[N - 1].tv_sec, 1795999232); /* 2026-11-30T00:40:32Z */
        assert_int_equal(seen.created[N - 1].tv_nsec, 500000000);
        sfs_ocistore_close(s);
}

static void test_more_holders_than_a_layer_takes_or_an_unknown_snapshot_are_refused(void **state)
{
        struct fx *f = *state;
        uint32_t many[SNAP_HOLDERS_MAX + 2];
        struct snap_digest d;
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);

        for (uint32_t i = 0; i < SNAP_HOLDERS_MAX + 2; i++)
                many[i] = i;
        assert_int_equal(add_as(s, "crowded", "c", many, SNAP_HOLDERS_MAX + 2, &d), -EINVAL);
        assert_false(blob_exists(f, &d));
        assert_int_equal(add_as(s, "crowded", "c", many, SNAP_HOLDERS_MAX + 1, &d), 0);
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_set_holders(s, &d, many, SNAP_HOLDERS_MAX + 2), -EINVAL);
        assert_int_equal(snap_sha256("not stored", 10, &d), 0);
        assert_int_equal(sfs_ocistore_set_holders(s, &d, many, 1), -ENOENT);
        sfs_ocistore_unlock(s);
        sfs_ocistore_close(s);
}

static void test_a_fresh_store_is_tagged_at_once_and_everything_in_it_is_private(void **state)
{
        struct fx *f = *state;
        struct snap_digest a;
        char p[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);

        /* index.json tags an (empty) manifest before any publish. */
        assert_true(S_ISREG(stat_of(f, "index.json").st_mode));
        assert_int_equal(stat_of(f, "index.json").st_mode & 0777, 0600);
        assert_int_equal(stat_of(f, "oci-layout").st_mode & 0777, 0600);
        assert_int_equal(stat_of(f, "blobs").st_mode & 0777, 0700);
        assert_int_equal(stat_of(f, "blobs/sha256").st_mode & 0777, 0700);
        add(s, "a secret", "s", &a);
        blob_path(f, &a, p);
        assert_int_equal(stat_of(f, p + strlen(f->store) + 1).st_mode & 0777, 0600);
        sfs_ocistore_close(s);
        /* A store an older daemon left readable is made private at the next start. */
        assert_int_equal(chmod(p, 0644), 0);
        snprintf(p, sizeof(p), "%s/blobs", f->store);
        assert_int_equal(chmod(p, 0755), 0);
        s = start(f, &seen);
        assert_int_equal(seen.restored, 1);
        assert_int_equal(stat_of(f, "blobs").st_mode & 0777, 0700);
        blob_path(f, &a, p);
        assert_int_equal(stat_of(f, p + strlen(f->store) + 1).st_mode & 0777, 0600);
        sfs_ocistore_close(s);
}

static void test_a_subdirectory_others_can_write_or_another_uid_owns_is_eperm(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore_why why;
        struct sfs_ocistore *s = NULL;
        char p[PATH_MAX];

        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        sfs_ocistore_close(s);
        s = NULL;
        /* The attack: blobs/ 0777 inside a private store, blobs/sha256 moved away by another
         * uid, nothing served after a restart. */
        snprintf(p, sizeof(p), "%s/blobs", f->store);
        assert_int_equal(chmod(p, 0777), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, &why), -EPERM);
        assert_string_equal(why.path, "blobs");
        assert_null(s);
        assert_int_equal(chmod(p, 0700), 0);
        snprintf(p, sizeof(p), "%s/blobs/sha256", f->store);
        assert_int_equal(chmod(p, 0730), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, &why), -EPERM);
        assert_string_equal(why.path, "blobs/sha256");
        assert_int_equal(chmod(p, 0700), 0);
        snprintf(p, sizeof(p), "%s/" SFS_OCISTORE_CORRUPT_DIR, f->store);
        assert_int_equal(mkdir(p, 0700), 0);
        if (geteuid() == 0) {
                assert_int_equal(chown(p, 4242, 4242), 0);
                assert_int_equal(sfs_ocistore_open(f->store, 0, &s, &why), -EPERM);
                assert_string_equal(why.path, SFS_OCISTORE_CORRUPT_DIR);
                assert_int_equal(chown(p, 0, 0), 0);
        }
        /* Beside them, the same store private again opens. */
        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, &why), 0);
        sfs_ocistore_close(s);
}

struct closer {
        struct sfs_ocistore *s;
};

static void *close_later(void *arg)
{
        struct closer *c = arg;

        usleep(100 * 1000);
        sfs_ocistore_close(c->s);
        return NULL;
}

static void test_a_second_opener_names_the_holder_and_waits_for_it_to_let_go(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore_why why;
        struct sfs_ocistore *s = NULL, *t = NULL;
        struct closer c;
        pthread_t th;

        assert_int_equal(sfs_ocistore_open(f->store, 0, &s, NULL), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 0, &t, &why), -EWOULDBLOCK);
        assert_int_equal(why.holder, getpid());
        /* The holder lets go while the second waits (a daemon still exiting): it gets in. */
        c.s = s;
        assert_int_equal(pthread_create(&th, NULL, close_later, &c), 0);
        assert_int_equal(sfs_ocistore_open(f->store, 60000, &t, &why), 0);
        pthread_join(th, NULL);
        sfs_ocistore_close(t);
}

static void test_the_check_re_hashes_the_blobs_on_disk_and_names_each_bad_one(void **state)
{
        struct fx *f = *state;
        struct sfs_ocistore_check ck;
        struct snap_digest a, b, c;
        char p[PATH_MAX];
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);
        int fd;

        add(s, "intact", "i", &a);
        add(s, "will change", "c", &b);
        add(s, "will vanish", "v", &c);
        /* Beside the findings, the clean store: every blob intact (with the manifest and its
         * config). */
        assert_int_equal(sfs_ocistore_check(s, &ck), 0);
        assert_int_equal(ck.blobs, 5);
        assert_int_equal(ck.intact, 5);
        assert_int_equal(ck.n_named, 0);
        /* Changed on disk while it runs (same size), and removed. */
        blob_path(f, &b, p);
        fd = open(p, O_WRONLY);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, "W", 1, 0), 1);
        close(fd);
        blob_path(f, &c, p);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(sfs_ocistore_check(s, &ck), 0);
        assert_int_equal(ck.blobs, 5);
        assert_int_equal(ck.intact, 3);
        assert_int_equal(ck.corrupt, 1);
        assert_int_equal(ck.missing, 1);
        assert_int_equal(ck.n_named, 2);
        assert_true(snap_digest_equal(&ck.bad[0].digest, &b));
        assert_int_equal(ck.bad[0].err, -EBADMSG);
        assert_true(snap_digest_equal(&ck.bad[1].digest, &c));
        assert_int_equal(ck.bad[1].err, -ENOENT);
        sfs_ocistore_close(s);
}

static void test_remove_takes_the_blob_first_and_the_snapshot_stays_gone(void **state)
{
        struct fx *f = *state;
        struct snap_digest a, b;
        struct seen seen;
        struct sfs_ocistore *s = start(f, &seen);

        add(s, "gone", "g", &a);
        add(s, "kept", "k", &b);
        sfs_ocistore_lock(s);
        assert_int_equal(sfs_ocistore_remove(s, &a), 0);
        sfs_ocistore_unlock(s);
        assert_false(blob_exists(f, &a));
        assert_true(blob_exists(f, &b));
        sfs_ocistore_close(s);
        s = start(f, &seen);
        assert_int_equal(seen.restored, 1);
        assert_true(snap_digest_equal(&seen.digests[0], &b));
        assert_int_equal(seen.warned, 0);
        sfs_ocistore_close(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(
                        test_added_snapshots_are_restored_and_removed_ones_are_not, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_blob_that_does_not_match_is_set_aside_the_others_restored, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_an_unnamed_blob_and_temporary_files_are_removed_at_start, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_lost_manifest_serves_every_intact_blob_untitled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_a_second_opener_of_the_same_store_is_refused,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_store_writable_by_others_or_owned_by_another_uid_is_eperm, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_store_past_what_one_manifest_names_is_enospc_and_keeps_the_rest,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_holders_and_the_first_publish_time_come_back_after_a_restart, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_layer_without_holders_or_time_loads_with_none_and_the_blobs_time,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_snapshot_nobody_holds_comes_back_held_by_nobody, setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_scope_files_are_private_durable_and_read_back_in_name_order, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_annotations_that_do_not_parse_are_warned_about_and_treated_as_absent,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_more_holders_than_a_layer_takes_or_an_unknown_snapshot_are_refused,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_fresh_store_is_tagged_at_once_and_everything_in_it_is_private,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_subdirectory_others_can_write_or_another_uid_owns_is_eperm, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_second_opener_names_the_holder_and_waits_for_it_to_let_go, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_the_check_re_hashes_the_blobs_on_disk_and_names_each_bad_one, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_remove_takes_the_blob_first_and_the_snapshot_stays_gone, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_missing_or_damaged_index_serves_every_blob_and_deletes_nothing,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_repair_writes_only_the_right_bytes_of_a_stored_blob, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_runtime_store_on_a_disk_is_refused_and_one_in_ram_taken, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(
                        test_a_paired_runtime_store_shares_the_lock_and_gives_held_content_to_the_disk,
                        setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
