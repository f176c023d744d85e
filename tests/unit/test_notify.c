/* SPDX-License-Identifier: MIT */
/* fs/base/notify.c: the sd_notify datagrams a service manager receives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs/base/notify.h"

/* A datagram socket bound at name (a path, or "@abstract"): its descriptor. */
static int bind_dgram(const char *name)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len = strlen(name);
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        memcpy(sa.sun_path, name, len);
        if (name[0] == '@')
                sa.sun_path[0] = '\0';
        assert_int_equal(bind(fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
                         0);
        return fd;
}

static void expect_datagram(int fd, const char *want)
{
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

        assert_int_equal(n, (ssize_t)strlen(want));
        buf[n] = '\0';
        assert_string_equal(buf, want);
}

static void test_ready_reaches_a_path_socket(void **state)
{
        char dir[] = "/tmp/notify-XXXXXX", path[64];
        int fd;
        (void)state;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sock", dir);
        fd = bind_dgram(path);
        setenv("NOTIFY_SOCKET", path, 1);
        assert_int_equal(sfs_notify("MAINPID=42\nREADY=1"), 0);
        expect_datagram(fd, "MAINPID=42\nREADY=1");
        close(fd);
        unlink(path);
        rmdir(dir);
}

static void test_ready_reaches_an_abstract_socket(void **state)
{
        char name[64];
        int fd;
        (void)state;

        snprintf(name, sizeof(name), "@snapfs-notify-test-%d", (int)getpid());
        fd = bind_dgram(name);
        setenv("NOTIFY_SOCKET", name, 1);
        assert_int_equal(sfs_notify("READY=1"), 0);
        expect_datagram(fd, "READY=1");
        close(fd);
}

static void test_no_socket_is_no_error_and_a_bad_one_is_refused(void **state)
{
        (void)state;
        unsetenv("NOTIFY_SOCKET");
        assert_int_equal(sfs_notify("READY=1"), 0);
        setenv("NOTIFY_SOCKET", "", 1);
        assert_int_equal(sfs_notify("READY=1"), 0);
        setenv("NOTIFY_SOCKET", "relative/sock", 1);
        assert_int_equal(sfs_notify("READY=1"), -EINVAL);
        setenv("NOTIFY_SOCKET", "/nonexistent-dir/sock", 1);
        assert_int_equal(sfs_notify("READY=1"), -ENOENT);
        unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ready_reaches_a_path_socket),
                cmocka_unit_test(test_ready_reaches_an_abstract_socket),
                cmocka_unit_test(test_no_socket_is_no_error_and_a_bad_one_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
