/* SPDX-License-Identifier: MIT */
/* snapshot/verify.c: verifying a descriptor against its binding. */
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
#include <unistd.h>

#include "snapshot/binding.h"
#include "tests/unit/testutil.h"
#include "common/util.h"
#include "snapshot/verify-internal.h"
#include "snapshot/verify.h"

/* Larger than three of verify's 64 KiB read chunks, not a multiple of one. */
#define SIZE 200000
#define LIMIT (1u << 20)

struct fx {
        struct tu_dir dir;
        uint8_t *content;
        int rw; /* the writer's descriptor, kept to play the attacker */
        int ro; /* the descriptor under verification */
        struct snap_binding b;
};

/* A snapshot-like file: content written, then mode 0000. The read-only descriptor is opened
 * before the fchmod so the test needs no root to read a mode-000 file. */
static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        char p[PATH_MAX];
        struct stat st;

        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        f->content = tu_pattern(SIZE, 1);
        assert_non_null(f->content);
        f->rw = tu_create(&f->dir, "snap", f->content, SIZE);
        assert_true(f->rw >= 0);
        f->ro = open(tu_path(&f->dir, "snap", p), O_RDONLY | O_CLOEXEC);
        assert_true(f->ro >= 0);
        assert_int_equal(fchmod(f->rw, 0), 0);

        assert_int_equal(fstat(f->ro, &st), 0);
        f->b.size = (uint64_t)st.st_size;
        f->b.dev = st.st_dev;
        f->b.ino = st.st_ino;
        assert_int_equal(snap_sha256(f->content, SIZE, &f->b.sha256), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        safe_close(f->rw);
        safe_close(f->ro);
        tu_dir_remove(&f->dir);
        free(f->content);
        free(f);
        return 0;
}

/* Runs verify and asserts the errno and the finding together. */
static void expect(struct fx *f, int fd, uint64_t limit, int want, enum snap_verify_finding finding)
{
        struct snap_verify_result res;
        int r = snap_verify_fd(fd, &f->b, limit, NULL, &res);

        if (r != want || res.finding != finding)
                fail_msg("verify gave %d (%s: %s), want %d (%s)", r,
                         snap_verify_finding_name(res.finding), res.message, want,
                         snap_verify_finding_name(finding));
        if (want == 0)
                assert_string_equal(res.message, "");
        else
                assert_true(res.message[0] != '\0' && !strchr(res.message, '\n'));
}

static void test_good_descriptor_passes(void **state)
{
        struct fx *f = *state;
        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
}

static void test_good_descriptor_passes_with_a_reused_hasher(void **state)
{
        struct fx *f = *state;
        struct snap_hasher *h;
        struct snap_verify_result res;

        assert_int_equal(snap_hasher_new(&h), 0);
        /* A hasher left holding unrelated input is reset first. */
        assert_int_equal(snap_hasher_update(h, "junk", 4), 0);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(snap_verify_fd(f->ro, &f->b, LIMIT, h, &res), 0);
                assert_int_equal(res.finding, SNAP_VERIFY_OK);
        }
        snap_hasher_free(h);
}

static void test_result_may_be_null(void **state)
{
        struct fx *f = *state;
        struct snap_binding wrong = f->b;

        assert_int_equal(snap_verify_fd(f->ro, &f->b, LIMIT, NULL, NULL), 0);
        wrong.ino++;
        assert_int_equal(snap_verify_fd(f->ro, &wrong, LIMIT, NULL, NULL), -ESTALE);
}

static void test_file_offset_is_neither_used_nor_moved(void **state)
{
        struct fx *f = *state;

        assert_int_equal(lseek(f->ro, 12345, SEEK_SET), 12345);
        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        assert_int_equal(lseek(f->ro, 0, SEEK_CUR), 12345);
}

static void test_empty_file_passes_against_its_binding(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        struct stat st;
        int rw = tu_create(&f->dir, "empty", NULL, 0), ro;

        assert_true(rw >= 0);
        ro = open(tu_path(&f->dir, "empty", p), O_RDONLY | O_CLOEXEC);
        assert_true(ro >= 0);
        assert_int_equal(fchmod(rw, 0), 0);
        assert_int_equal(fstat(ro, &st), 0);
        f->b.size = 0;
        f->b.ino = st.st_ino;
        assert_int_equal(snap_sha256("", 0, &f->b.sha256), 0);
        expect(f, ro, LIMIT, 0, SNAP_VERIFY_OK);
        /* One byte appended is the one byte verify reads past the size. */
        assert_int_equal(pwrite(rw, "x", 1, 0), 1);
        expect(f, ro, LIMIT, -ESTALE, SNAP_VERIFY_IDENTITY);
        close(rw);
        close(ro);
}

/* The attack a mode-000 anonymous file cannot stop: its owner rewrites bytes in place, same
 * size. dev, ino, size and mode all still match the binding; only the hash can tell. */
static void test_same_size_rewrite_of_one_byte_is_a_digest_mismatch(void **state)
{
        struct fx *f = *state;
        /* First byte, both sides of each read-chunk boundary, last byte. */
        const off_t offsets[] = { 0, 65535, 65536, 131071, 131072, SIZE - 1 };

        for (size_t i = 0; i < ARRAY_SIZE(offsets); i++) {
                uint8_t orig = f->content[offsets[i]], evil = (uint8_t)(orig ^ 0x20);
                struct snap_verify_result res;
                char want[SNAP_DIGEST_HEX_LEN + 1], msg[256];
                struct snap_digest now;
                struct stat st;

                expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
                assert_int_equal(pwrite(f->rw, &evil, 1, offsets[i]), 1);

                /* Everything step 2 looks at still matches the binding. */
                assert_int_equal(fstat(f->ro, &st), 0);
                assert_true(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0);
                assert_true((uint64_t)st.st_size == f->b.size && st.st_ino == f->b.ino &&
                            st.st_dev == f->b.dev);

                assert_int_equal(snap_verify_fd(f->ro, &f->b, LIMIT, NULL, &res), -EBADMSG);
                assert_int_equal(res.finding, SNAP_VERIFY_DIGEST);
                assert_string_equal(snap_verify_finding_name(res.finding), "digest-mismatch");
                f->content[offsets[i]] = evil;
                assert_int_equal(snap_sha256(f->content, SIZE, &now), 0);
                f->content[offsets[i]] = orig;
                snap_digest_to_hex(&now, want);
                snprintf(msg, sizeof(msg), "digest mismatch: content hashes to %s, binding says ",
                         want);
                assert_memory_equal(res.message, msg, strlen(msg));

                /* The byte put back: the same descriptor passes again. */
                assert_int_equal(pwrite(f->rw, &orig, 1, offsets[i]), 1);
                expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        }
}

static void test_growth_is_an_identity_mismatch(void **state)
{
        struct fx *f = *state;

        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        assert_int_equal(pwrite(f->rw, "x", 1, SIZE), 1);
        expect(f, f->ro, LIMIT, -ESTALE, SNAP_VERIFY_IDENTITY);
}

static void test_truncation_is_an_identity_mismatch(void **state)
{
        struct fx *f = *state;

        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        assert_int_equal(ftruncate(f->rw, SIZE - 1), 0);
        expect(f, f->ro, LIMIT, -ESTALE, SNAP_VERIFY_IDENTITY);
}

static void test_other_inode_with_same_content_is_an_identity_mismatch(void **state)
{
        struct fx *f = *state;
        struct snap_binding own;
        struct stat st;
        int twin = tu_create(&f->dir, "twin", f->content, SIZE);

        assert_true(twin >= 0);
        assert_int_equal(fchmod(twin, 0), 0);
        assert_int_equal(fstat(twin, &st), 0);
        assert_true(st.st_ino != f->b.ino);

        expect(f, twin, LIMIT, -ESTALE, SNAP_VERIFY_IDENTITY);
        /* The same file passes against its own binding: only the inode made the difference. */
        own = f->b;
        own.ino = st.st_ino;
        assert_int_equal(snap_verify_fd(twin, &own, LIMIT, NULL, NULL), 0);
        close(twin);
}

static void test_other_dev_is_an_identity_mismatch(void **state)
{
        struct fx *f = *state;

        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        f->b.dev ^= 1;
        expect(f, f->ro, LIMIT, -ESTALE, SNAP_VERIFY_IDENTITY);
}

static void test_mode_other_than_0000_is_refused_with_eperm(void **state)
{
        struct fx *f = *state;
        /* The owner chmod'ing the file back to readable is the first step of the rewrite. */
        const mode_t modes[] = { 0400, 0600, 0200, 0004, 0001, 04000, 02000, 01000 };

        for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
                assert_int_equal(fchmod(f->rw, modes[i]), 0);
                expect(f, f->ro, LIMIT, -EPERM, SNAP_VERIFY_MODE);
        }
        assert_int_equal(fchmod(f->rw, 0), 0);
        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
}

static void test_directory_is_refused_with_eisdir(void **state)
{
        struct fx *f = *state;
        int dir = open(f->dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        assert_true(dir >= 0);
        expect(f, dir, LIMIT, -EISDIR, SNAP_VERIFY_NOT_REGULAR);
        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        close(dir);
}

static void test_device_is_refused_with_einval(void **state)
{
        struct fx *f = *state;
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

        assert_true(null >= 0);
        expect(f, null, LIMIT, -EINVAL, SNAP_VERIFY_NOT_REGULAR);
        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        close(null);
}

static void test_fifo_is_refused_without_reading(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        int fifo;

        /* A blocking descriptor of a FIFO whose writer (this one) never writes: a read would
         * hang until the alarm kills the test. */
        assert_int_equal(mkfifo(tu_path(&f->dir, "fifo", p), 0600), 0);
        fifo = open(p, O_RDWR | O_CLOEXEC);
        assert_true(fifo >= 0);
        alarm(5);
        expect(f, fifo, LIMIT, -EINVAL, SNAP_VERIFY_NOT_REGULAR);
        alarm(0);
        expect(f, f->ro, LIMIT, 0, SNAP_VERIFY_OK);
        close(fifo);
}

static void test_over_the_limit_is_refused_with_efbig(void **state)
{
        struct fx *f = *state;

        expect(f, f->ro, SIZE - 1, -EFBIG, SNAP_VERIFY_TOO_BIG);
        expect(f, f->ro, SIZE, 0, SNAP_VERIFY_OK);
}

static void test_bad_descriptor_is_an_io_finding_with_its_errno(void **state)
{
        struct fx *f = *state;
        int fd = dup(f->ro);

        assert_true(fd >= 0);
        expect(f, fd, LIMIT, 0, SNAP_VERIFY_OK);
        close(fd);
        expect(f, fd, LIMIT, -EBADF, SNAP_VERIFY_IO);
}

/* Changes made in the window between the first fstat and the read, through the hook. */
enum change { NOTHING, GROW, SHRINK, TOUCH_MTIME, LINK };

struct change_ctx {
        struct fx *f;
        enum change what;
};

static void change_file(int fd, void *ctx)
{
        struct change_ctx *c = ctx;
        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };
        char p[PATH_MAX], q[PATH_MAX];

        (void)fd;
        switch (c->what) {
        case NOTHING:
                break;
        case GROW:
                assert_int_equal(pwrite(c->f->rw, "x", 1, SIZE), 1);
                break;
        case SHRINK:
                assert_int_equal(ftruncate(c->f->rw, SIZE - 1), 0);
                break;
        case TOUCH_MTIME:
                assert_int_equal(futimens(c->f->rw, ts), 0);
                break;
        case LINK:
                assert_int_equal(link(tu_path(&c->f->dir, "snap", p),
                                      tu_path(&c->f->dir, "snap2", q)), 0);
                break;
        }
}

static void expect_changed_during(struct fx *f, enum change what, int want,
                                  enum snap_verify_finding finding, const char *words)
{
        struct change_ctx c = { f, what };
        struct snap_verify_result res;
        int r = snap_verify_fd_hooked(f->ro, &f->b, LIMIT, NULL, &res, change_file, &c);

        if (r != want || res.finding != finding)
                fail_msg("verify gave %d (%s: %s), want %d", r,
                         snap_verify_finding_name(res.finding), res.message, want);
        if (words && !strstr(res.message, words))
                fail_msg("message \"%s\" lacks \"%s\"", res.message, words);
}

static void test_nothing_changed_during_verification_passes(void **state)
{
        expect_changed_during(*state, NOTHING, 0, SNAP_VERIFY_OK, NULL);
}

static void test_growth_during_verification_is_caught_as_changed(void **state)
{
        expect_changed_during(*state, GROW, -EAGAIN, SNAP_VERIFY_CHANGED,
                              "grew past the 200000 bytes fstat said");
}

static void test_truncation_during_verification_is_caught_as_changed(void **state)
{
        expect_changed_during(*state, SHRINK, -EAGAIN, SNAP_VERIFY_CHANGED,
                              "read 199999 bytes, fstat said 200000");
}

static void test_mtime_change_during_verification_is_caught_as_changed(void **state)
{
        expect_changed_during(*state, TOUCH_MTIME, -EAGAIN, SNAP_VERIFY_CHANGED, "mtime differs");
}

static void test_new_link_during_verification_is_caught_as_changed(void **state)
{
        expect_changed_during(*state, LINK, -EAGAIN, SNAP_VERIFY_CHANGED, "nlink differs");
}

static void test_stat_comparison_names_each_changed_field(void **state)
{
        (void)state;
        struct stat a, b;

        memset(&a, 0, sizeof(a));
        a.st_dev = 1, a.st_ino = 2, a.st_mode = S_IFREG, a.st_nlink = 1, a.st_uid = 3;
        a.st_gid = 4, a.st_size = 5, a.st_mtim.tv_sec = 6, a.st_mtim.tv_nsec = 7;
        a.st_ctim.tv_sec = 8, a.st_ctim.tv_nsec = 9;

        b = a;
        assert_null(snap_stat_changed(&a, &b));
        /* atime moves on every read and says nothing about the content: ignored. */
        b.st_atim.tv_sec = 99;
        assert_null(snap_stat_changed(&a, &b));

#define CHANGED(field, name)                                              \
        do {                                                              \
                b = a;                                                    \
                b.field += 1;                                             \
                assert_string_equal(snap_stat_changed(&a, &b), name);     \
        } while (0)
        CHANGED(st_dev, "dev");
        CHANGED(st_ino, "ino");
        CHANGED(st_mode, "mode");
        CHANGED(st_nlink, "nlink");
        CHANGED(st_uid, "uid");
        CHANGED(st_gid, "gid");
        CHANGED(st_size, "size");
        CHANGED(st_mtim.tv_sec, "mtime");
        CHANGED(st_mtim.tv_nsec, "mtime");
        CHANGED(st_ctim.tv_sec, "ctime");
        CHANGED(st_ctim.tv_nsec, "ctime");
#undef CHANGED
}

static void test_finding_names_are_stable(void **state)
{
        (void)state;
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_OK), "ok");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_IO), "io");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_NOT_REGULAR), "not-regular");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_MODE), "mode");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_TOO_BIG), "too-big");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_IDENTITY), "identity");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_DIGEST), "digest-mismatch");
        assert_string_equal(snap_verify_finding_name(SNAP_VERIFY_CHANGED), "changed");
        assert_string_equal(snap_verify_finding_name((enum snap_verify_finding)99), "unknown");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_good_descriptor_passes),
                T(test_good_descriptor_passes_with_a_reused_hasher),
                T(test_result_may_be_null),
                T(test_file_offset_is_neither_used_nor_moved),
                T(test_empty_file_passes_against_its_binding),
                T(test_same_size_rewrite_of_one_byte_is_a_digest_mismatch),
                T(test_growth_is_an_identity_mismatch),
                T(test_truncation_is_an_identity_mismatch),
                T(test_other_inode_with_same_content_is_an_identity_mismatch),
                T(test_other_dev_is_an_identity_mismatch),
                T(test_mode_other_than_0000_is_refused_with_eperm),
                T(test_directory_is_refused_with_eisdir),
                T(test_device_is_refused_with_einval),
                T(test_fifo_is_refused_without_reading),
                T(test_over_the_limit_is_refused_with_efbig),
                T(test_bad_descriptor_is_an_io_finding_with_its_errno),
                T(test_nothing_changed_during_verification_passes),
                T(test_growth_during_verification_is_caught_as_changed),
                T(test_truncation_during_verification_is_caught_as_changed),
                T(test_mtime_change_during_verification_is_caught_as_changed),
                T(test_new_link_during_verification_is_caught_as_changed),
                T(test_stat_comparison_names_each_changed_field),
                T(test_finding_names_are_stable),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
