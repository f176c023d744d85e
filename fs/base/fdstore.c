/* SPDX-License-Identifier: MIT */
/* Descriptors passed at start, and systemd's file-descriptor store (fdstore.h). */
#include "fs/base/fdstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
