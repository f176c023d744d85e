/* SPDX-License-Identifier: MIT */
/* snapshot/safeopen.c: opening and reading untrusted paths with bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "snapshot/safeopen.h"
#include "tests/unit/testutil.h"
#include "common/util.h"

#define LIMIT 100000u

struct fx {
        struct tu_dir dir;
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        tu_dir_remove(&f->dir);
        free(f);
        return 0;
}

/* A regular file of len pattern bytes in the test's directory; returns its path in p. */
static const char *make_file(struct fx *f, const char *name, size_t len, char p[PATH_MAX])
{
        _cleanup_free_ uint8_t *data = tu_pattern(len, 3);
        int fd;

        assert_non_null(data);
        fd = tu_create(&f->dir, name, data, len);
        assert_true(fd >= 0);
        close(fd);
        return tu_path(&f->dir, name, p);
}

/* The allowance beside each refusal: a regular file of len bytes opens under limit. */
static void expect_regular_accepted(struct fx *f, const char *name, size_t len, uint64_t limit)
{
        char p[PATH_MAX];
        struct stat st;
        int fd;

        make_file(f, name, len, p);
        fd = snap_open_untrusted(AT_FDCWD, p, limit, &st);
        if (fd < 0)
                fail_msg("regular file of %zu bytes refused: %d", len, fd);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_size, len);
        close(fd);
}

/* Bytes this thread has read through read()/pread() since the mark, by the kernel's own count
 * (rchar in /proc/thread-self/io): how a test sees what a read loop really asked for. */
struct io_mark {
        uint64_t rchar;
        size_t self; /* bytes of the mark's own read of the io file, counted after it */
};

static struct io_mark io_mark(void)
{
        char buf[1024];
        struct io_mark m = { 0, 0 };
        const char *line;
        ssize_t n;
        int fd = open("/proc/thread-self/io", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                fail_msg("/proc/thread-self/io: %s (needs CONFIG_TASK_IO_ACCOUNTING)",
                         strerror(errno));
        n = read(fd, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        close(fd);
        buf[n] = '\0';
        line = strstr(buf, "rchar: ");
        assert_non_null(line);
        m.rchar = strtoull(line + 7, NULL, 10);
        m.self = (size_t)n;
        return m;
}

static uint64_t bytes_read_since(struct io_mark m)
{
        struct io_mark now = io_mark();
        return now.rchar - m.rchar - m.self;
}

/* Under valgrind the count also holds valgrind's own reads on this thread (a few bytes a
 * syscall, from the pipe it uses as its big lock); it preloads vgpreload_*.so into the client.
 * Everywhere else the kernel's count must be exact. */
static uint64_t read_slack(void)
{
        const char *pre = getenv("LD_PRELOAD");
        return pre && strstr(pre, "vgpreload") ? 256 : 0;
}

static void assert_bytes_read(struct io_mark m, uint64_t want)
{
        uint64_t n = bytes_read_since(m);

        if (n < want || n > want + read_slack())
                fail_msg("read %" PRIu64 " bytes, want exactly %" PRIu64, n, want);
}

static void test_regular_file_is_opened_read_only_and_close_on_exec(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        struct stat st;
        int fd;

        make_file(f, "file", 123, p);
        fd = snap_open_untrusted(AT_FDCWD, p, LIMIT, &st);
        assert_true(fd >= 0);
        assert_int_equal(st.st_size, 123);
        assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        close(fd);
}

static void test_open_relative_to_a_directory_descriptor(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        int dir, fd;

        make_file(f, "file", 5, p);
        dir = open(f->dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dir >= 0);
        fd = snap_open_untrusted(dir, "file", LIMIT, NULL);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(snap_open_untrusted(dir, "absent", LIMIT, NULL), -ENOENT);
        close(dir);
}

static void test_symlink_is_refused_with_eloop(void **state)
{
        struct fx *f = *state;
        char target[PATH_MAX], link[PATH_MAX];
        int fd;

        make_file(f, "target", 10, target);
        assert_int_equal(symlink(target, tu_path(&f->dir, "link", link)), 0);
        assert_int_equal(snap_open_untrusted(AT_FDCWD, link, LIMIT, NULL), -ELOOP);
        fd = snap_open_untrusted(AT_FDCWD, target, LIMIT, NULL);
        assert_true(fd >= 0);
        close(fd);
}

static void test_fifo_without_writer_is_refused_at_once_with_einval(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];

        assert_int_equal(mkfifo(tu_path(&f->dir, "fifo", p), 0600), 0);
        /* A blocking open or read would wait for a writer forever: the alarm turns that
         * regression into a failure instead of a hang. */
        alarm(5);
        assert_int_equal(snap_open_untrusted(AT_FDCWD, p, LIMIT, NULL), -EINVAL);
        alarm(0);
        expect_regular_accepted(f, "empty", 0, LIMIT);
}

static void test_dev_null_is_refused_with_einval(void **state)
{
        struct fx *f = *state;

        assert_int_equal(snap_open_untrusted(AT_FDCWD, "/dev/null", LIMIT, NULL), -EINVAL);
        expect_regular_accepted(f, "empty", 0, LIMIT);
}

static void test_dev_zero_is_refused_with_einval(void **state)
{
        struct fx *f = *state;

        /* Never ends and reports size 0: reading it unbounded would exhaust memory. */
        assert_int_equal(snap_open_untrusted(AT_FDCWD, "/dev/zero", LIMIT, NULL), -EINVAL);
        expect_regular_accepted(f, "empty", 0, LIMIT);
}

static void test_directory_is_refused_with_eisdir(void **state)
{
        struct fx *f = *state;
        struct stat st;

        assert_int_equal(snap_open_untrusted(AT_FDCWD, f->dir.path, LIMIT, NULL), -EISDIR);
        assert_int_equal(stat(f->dir.path, &st), 0);
        expect_regular_accepted(f, "file", (size_t)st.st_size, LIMIT);
}

static void test_unix_socket_is_refused_with_enxio(void **state)
{
        struct fx *f = *state;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char p[PATH_MAX];
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(s >= 0);
        tu_path(&f->dir, "sock", p);
        assert_true(strlen(p) < sizeof(sa.sun_path));
        strcpy(sa.sun_path, p);
        assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(s, 1), 0);

        assert_int_equal(snap_open_untrusted(AT_FDCWD, p, LIMIT, NULL), -ENXIO);
        expect_regular_accepted(f, "file", 0, LIMIT);
        close(s);
}

static void test_file_over_the_limit_is_refused_with_efbig(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        int fd;

        make_file(f, "big", LIMIT + 1, p);
        assert_int_equal(snap_open_untrusted(AT_FDCWD, p, LIMIT, NULL), -EFBIG);
        /* The same file under a limit it fits, and a file exactly at the limit. */
        fd = snap_open_untrusted(AT_FDCWD, p, LIMIT + 1, NULL);
        assert_true(fd >= 0);
        close(fd);
        expect_regular_accepted(f, "exact", LIMIT, LIMIT);
}

static void test_refused_open_reads_nothing(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        struct io_mark m;

        make_file(f, "big", LIMIT + 1, p);
        m = io_mark();
        assert_int_equal(snap_open_untrusted(AT_FDCWD, p, LIMIT, NULL), -EFBIG);
        assert_int_equal(snap_open_untrusted(AT_FDCWD, "/dev/zero", LIMIT, NULL), -EINVAL);
        assert_bytes_read(m, 0);
}

static void test_missing_file_gives_enoent(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];

        assert_int_equal(snap_open_untrusted(AT_FDCWD, tu_path(&f->dir, "absent", p), LIMIT, NULL),
                         -ENOENT);
        expect_regular_accepted(f, "present", 1, LIMIT);
}

static void test_read_bounded_reads_the_whole_file(void **state)
{
        struct fx *f = *state;
        _cleanup_free_ uint8_t *want = tu_pattern(LIMIT, 3);
        char p[PATH_MAX];
        void *buf = NULL;
        size_t len = 0;
        int fd;

        make_file(f, "file", LIMIT, p);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(snap_read_bounded(fd, LIMIT, &buf, &len), 0);
        assert_int_equal(len, LIMIT);
        assert_memory_equal(buf, want, LIMIT);
        free(buf);
        close(fd);
}

static void test_read_bounded_of_empty_file_gives_a_buffer(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        void *buf = NULL;
        size_t len = 1;
        int fd;

        make_file(f, "empty", 0, p);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(snap_read_bounded(fd, LIMIT, &buf, &len), 0);
        assert_non_null(buf);
        assert_int_equal(len, 0);
        free(buf);
        /* And with a limit of 0, an empty file is still within it. */
        assert_int_equal(snap_read_bounded(fd, 0, &buf, &len), 0);
        assert_non_null(buf);
        free(buf);
        close(fd);
}

static void test_read_bounded_stops_after_limit_plus_one_bytes(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        void *buf = NULL;
        size_t len = 0;
        struct io_mark m;
        int fd;

        /* Ten times the limit: an unbounded read would take all of it. */
        make_file(f, "big", 10 * LIMIT, p);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        m = io_mark();
        assert_int_equal(snap_read_bounded(fd, LIMIT, &buf, &len), -EFBIG);
        assert_bytes_read(m, LIMIT + 1);
        assert_null(buf);

        /* A file of exactly the limit is read whole, plus nothing: EOF costs no byte. */
        close(fd);
        make_file(f, "exact", LIMIT, p);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        m = io_mark();
        assert_int_equal(snap_read_bounded(fd, LIMIT, &buf, &len), 0);
        assert_bytes_read(m, LIMIT);
        assert_int_equal(len, LIMIT);
        free(buf);
        close(fd);
}

static void test_read_bounded_stops_on_a_source_that_never_ends(void **state)
{
        (void)state;
        void *buf = NULL;
        size_t len = 0;
        struct io_mark m;
        int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

        /* /dev/zero reports st_size 0 and never reaches EOF: only the bound stops the loop. */
        assert_true(fd >= 0);
        alarm(5);
        m = io_mark();
        assert_int_equal(snap_read_bounded(fd, LIMIT, &buf, &len), -EFBIG);
        assert_bytes_read(m, LIMIT + 1);
        alarm(0);
        assert_null(buf);
        close(fd);
}

static void test_read_bounded_does_not_trust_a_zero_st_size(void **state)
{
        (void)state;
        void *buf = NULL;
        size_t len = 0;
        struct stat st;
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

        /* A regular file that says 0 bytes and has more: the content is read, not the size. */
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISREG(st.st_mode) && st.st_size == 0);
        assert_int_equal(snap_read_bounded(fd, LIMIT, &buf, &len), 0);
        assert_true(len > 0);
        assert_memory_equal(buf, "Name:", 5);
        free(buf);
        assert_int_equal(snap_read_bounded(fd, 1, &buf, &len), -EFBIG);
        close(fd);
}

static void test_read_bounded_of_a_pipe_gives_espipe(void **state)
{
        (void)state;
        void *buf = NULL;
        size_t len = 0;
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "abc", 3), 3);
        assert_int_equal(snap_read_bounded(p[0], LIMIT, &buf, &len), -ESPIPE);
        assert_null(buf);
        close(p[0]);
        close(p[1]);
}

static void test_read_untrusted_gives_the_content(void **state)
{
        struct fx *f = *state;
        _cleanup_free_ uint8_t *want = tu_pattern(777, 3);
        char p[PATH_MAX];
        void *buf = NULL;
        size_t len = 0;

        make_file(f, "file", 777, p);
        assert_int_equal(snap_read_untrusted(AT_FDCWD, p, LIMIT, &buf, &len), 0);
        assert_int_equal(len, 777);
        assert_memory_equal(buf, want, 777);
        free(buf);
}

static void test_read_untrusted_refuses_what_open_refuses(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX], link[PATH_MAX];
        void *buf = NULL;
        size_t len = 0;

        make_file(f, "big", LIMIT + 1, p);
        assert_int_equal(snap_read_untrusted(AT_FDCWD, p, LIMIT, &buf, &len), -EFBIG);
        assert_int_equal(symlink(p, tu_path(&f->dir, "link", link)), 0);
        assert_int_equal(snap_read_untrusted(AT_FDCWD, link, LIMIT + 1, &buf, &len), -ELOOP);
        assert_int_equal(snap_read_untrusted(AT_FDCWD, "/dev/zero", LIMIT, &buf, &len), -EINVAL);
        assert_null(buf);
        assert_int_equal(snap_read_untrusted(AT_FDCWD, p, LIMIT + 1, &buf, &len), 0);
        assert_int_equal(len, LIMIT + 1);
        free(buf);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_regular_file_is_opened_read_only_and_close_on_exec),
                T(test_open_relative_to_a_directory_descriptor),
                T(test_symlink_is_refused_with_eloop),
                T(test_fifo_without_writer_is_refused_at_once_with_einval),
                T(test_dev_null_is_refused_with_einval),
                T(test_dev_zero_is_refused_with_einval),
                T(test_directory_is_refused_with_eisdir),
                T(test_unix_socket_is_refused_with_enxio),
                T(test_file_over_the_limit_is_refused_with_efbig),
                T(test_refused_open_reads_nothing),
                T(test_missing_file_gives_enoent),
                T(test_read_bounded_reads_the_whole_file),
                T(test_read_bounded_of_empty_file_gives_a_buffer),
                T(test_read_bounded_stops_after_limit_plus_one_bytes),
                T(test_read_bounded_stops_on_a_source_that_never_ends),
                T(test_read_bounded_does_not_trust_a_zero_st_size),
                T(test_read_bounded_of_a_pipe_gives_espipe),
                T(test_read_untrusted_gives_the_content),
                T(test_read_untrusted_refuses_what_open_refuses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
