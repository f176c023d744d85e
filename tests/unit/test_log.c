/* SPDX-License-Identifier: MIT */
/* fs/base/log.c: where the daemon's messages go (standard error while it is read, not
 * /dev/null), and what they say there; a refusal's reason (sfs_say). Their syslog road is
 * test_logs.py's (a private /dev/log needs a mount namespace). */
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
#include <unistd.h>

#include "fs/base/log.h"

/* Standard error replaced by a pipe's write end for the test: the read end. */
static int saved_stderr = -1;

static int stderr_to_pipe(void)
{
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        saved_stderr = dup(2);
        assert_true(saved_stderr >= 0);
        assert_int_equal(dup2(p[1], 2), 2);
        close(p[1]);
        return p[0];
}

static void stderr_to(const char *path)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        saved_stderr = dup(2);
        assert_int_equal(dup2(fd, 2), 2);
        close(fd);
}

static void stderr_back(void)
{
        assert_int_equal(dup2(saved_stderr, 2), 2);
        close(saved_stderr);
        saved_stderr = -1;
}

static size_t drain(int fd, char *buf, size_t size)
{
        ssize_t n = read(fd, buf, size - 1);

        assert_true(n >= 0);
        buf[n] = '\0';
        return (size_t)n;
}

static void test_a_message_reaches_stderr_prefixed_with_errno_kept(void **state)
{
        char buf[256];
        int rd = stderr_to_pipe();

        (void)state;
        assert_true(sfs_log_to_stderr());
        errno = ENOENT;
        LOG("%s: %m\n", "/x");
        assert_int_equal(errno, ENOENT);
        stderr_back();
        drain(rd, buf, sizeof(buf));
        assert_string_equal(buf, "snapfs mount: /x: No such file or directory\n");
        close(rd);
}

/* As fs/fuse/timing.c hands libfuse's messages over: no prefix of ours. */
static void as_libfuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void as_libfuse(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        sfs_vlog(LOG_ERR, "", fmt, ap);
        va_end(ap);
}

static void test_libfuses_messages_keep_their_own_words(void **state)
{
        char buf[256];
        int rd = stderr_to_pipe();

        (void)state;
        as_libfuse("fuse: unknown option(s): `-o %s'\n", "bogus");
        stderr_back();
        drain(rd, buf, sizeof(buf));
        assert_string_equal(buf, "fuse: unknown option(s): `-o bogus'\n");
        close(rd);
}

static void test_a_message_past_the_stack_buffer_is_written_whole(void **state)
{
        char want[5000], buf[8192];
        int rd = stderr_to_pipe();
        size_t n;

        (void)state;
        memset(want, 'a', sizeof(want) - 1);
        want[sizeof(want) - 1] = '\0';
        LOG("%s\n", want);
        stderr_back();
        n = drain(rd, buf, sizeof(buf));
        assert_int_equal(n, strlen("snapfs mount: ") + strlen(want) + 1);
        assert_memory_equal(buf + strlen("snapfs mount: "), want, strlen(want));
        close(rd);
}

/* A daemon's standard error is /dev/null: a message there would be lost, so it is not
 * standard error's. A regular file (-f 2>file) is. */
static void test_dev_null_is_not_standard_error_but_a_file_is(void **state)
{
        (void)state;
        stderr_to("/dev/null");
        assert_false(sfs_log_to_stderr());
        stderr_back();
        {
                char path[] = "/tmp/test_log.XXXXXX";
                int fd = mkstemp(path);

                assert_true(fd >= 0);
                close(fd);
                stderr_to(path);
                assert_true(sfs_log_to_stderr());
                stderr_back();
                unlink(path);
        }
}

static void test_a_closed_standard_error_is_not_written(void **state)
{
        (void)state;
        saved_stderr = dup(2);
        close(2);
        assert_false(sfs_log_to_stderr());
        stderr_back();
        assert_true(sfs_log_to_stderr());
}

struct why {
        char message[16];
};

static void test_a_reason_is_said_if_asked_for_and_the_errno_returned_anyway(void **state)
{
        struct why why, *w = &why, *nobody = NULL;

        (void)state;
        memset(why.message, 'z', sizeof(why.message));
        assert_int_equal(sfs_say(why.message, sizeof(why.message), EPERM, "%s: %d", "dir", 7),
                         -EPERM);
        assert_string_equal(why.message, "dir: 7");
        /* Cut to the buffer, still terminated. */
        assert_int_equal(SAY(w, ELOOP, "%s", "a reason far past sixteen bytes"), -ELOOP);
        assert_string_equal(why.message, "a reason far pa");
        /* Nobody asked why: the same errno, nothing written. */
        assert_int_equal(SAY(nobody, ENOENT, "%s", "unread"), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_message_reaches_stderr_prefixed_with_errno_kept),
                cmocka_unit_test(test_libfuses_messages_keep_their_own_words),
                cmocka_unit_test(test_a_message_past_the_stack_buffer_is_written_whole),
                cmocka_unit_test(test_dev_null_is_not_standard_error_but_a_file_is),
                cmocka_unit_test(test_a_closed_standard_error_is_not_written),
                cmocka_unit_test(test_a_reason_is_said_if_asked_for_and_the_errno_returned_anyway),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
