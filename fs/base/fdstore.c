/* SPDX-License-Identifier: MIT */
/* Descriptors passed at start, and systemd's file-descriptor store (fdstore.h). */
#include "fs/base/fdstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

#define LISTEN_FDS_START 3
#define PASSED_MAX 4096

static struct passed {
        int fd;
        char *name;
} *passed;
static unsigned n_passed;

/* LISTEN_FDS=n for this very process: n, or 0. */
static int listen_count(void)
{
        const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
        char *end;
        long p, n;

        if (!pid || !fds)
                return 0;
        errno = 0;
        p = strtol(pid, &end, 10);
        if (errno || *end || p != (long)getpid())
                return 0;
        n = strtol(fds, &end, 10);
        if (errno || *end || n < 0 || n > PASSED_MAX)
                return -EINVAL;
        return (int)n;
}

int sfs_fdstore_load(void)
{
        int n = listen_count();
        const char *names = getenv("LISTEN_FDNAMES");
        char *copy = names ? strdup(names) : NULL, *save = NULL, *tok;

        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        if (n <= 0 || (names && !copy)) {
                free(copy);
                return n;
        }
        passed = calloc((size_t)n, sizeof(*passed));
        if (!passed) {
                free(copy);
                return -ENOMEM;
        }
        tok = copy ? strtok_r(copy, ":", &save) : NULL;
        for (int i = 0; i < n; i++) {
                int fd = LISTEN_FDS_START + i;

                fcntl(fd, F_SETFD, FD_CLOEXEC);
                passed[i] = (struct passed){ .fd = fd, .name = strdup(tok ? tok : "unknown") };
                tok = tok ? strtok_r(NULL, ":", &save) : NULL;
        }
        n_passed = (unsigned)n;
        free(copy);
        return n;
}

int sfs_fdstore_take(const char *name)
{
        for (unsigned i = 0; i < n_passed; i++)
                if (passed[i].fd >= 0 && passed[i].name && strcmp(passed[i].name, name) == 0) {
                        int fd = passed[i].fd;
                        passed[i].fd = -1;
                        return fd;
                }
        return -1;
}

bool sfs_fdstore_left(const char *prefix)
{
        for (unsigned i = 0; i < n_passed; i++)
                if (passed[i].fd >= 0 && passed[i].name &&
                    strncmp(passed[i].name, prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

void sfs_fdstore_close_rest(void)
{
        for (unsigned i = 0; i < n_passed; i++) {
                safe_close(passed[i].fd);
                free(passed[i].name);
        }
        free(passed);
        passed = NULL;
        n_passed = 0;
}
void sfs_msg_put_fds(struct msghdr *mh, void *buf, const int *fds, unsigned n)
{
        struct cmsghdr *cm;

        mh->msg_control = buf;
        mh->msg_controllen = CMSG_SPACE(sizeof(int) * n);
        cm = CMSG_FIRSTHDR(mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
}

/* One sd_notify datagram carrying state and fds. */
static int notify_with_fds(const char *state, const int *fds, unsigned n)
{
        const char *e = getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        union {
                char buf[CMSG_SPACE(sizeof(int) * 16)];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = (void *)state, .iov_len = strlen(state) };
        struct msghdr mh = { .msg_name = &sa, .msg_iov = &iov, .msg_iovlen = 1 };
        _cleanup_close_ int fd = -1;
        size_t len;

        if (!e || !*e)
                return 0;
        len = strlen(e);
        if ((e[0] != '/' && e[0] != '@') || len >= sizeof(sa.sun_path) || len < 2 || n > 16)
                return -EINVAL;
        memcpy(sa.sun_path, e, len);
        if (e[0] == '@')
                sa.sun_path[0] = '\0';
        mh.msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (e[0] == '/'));
        if (n) {
                memset(&u, 0, sizeof(u));
                sfs_msg_put_fds(&mh, u.buf, fds, n);
        }
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
                return negative_errno();
        return 0;
}

int sfs_fdstore_store(const char *name, int fd)
{
        char state[320];

        snprintf(state, sizeof(state), "FDSTORE=1\nFDNAME=%s", name);
        return notify_with_fds(state, &fd, 1);
}
