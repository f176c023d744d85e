/* SPDX-License-Identifier: MIT */
/* The sd_notify datagram to $NOTIFY_SOCKET, written out (notify.h). */
#include "fs/base/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/util.h"

int sfs_notify(const char *state)
{
        const char *e = getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        size_t len;
        socklen_t salen;

        if (!e || !*e)
                return 0;
        len = strlen(e);
        if ((e[0] != '/' && e[0] != '@') || len >= sizeof(sa.sun_path) || len < 2)
                return -EINVAL;
        memcpy(sa.sun_path, e, len);
        if (e[0] == '@')
                sa.sun_path[0] = '\0'; /* abstract namespace: no terminating NUL counts */
        salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (e[0] == '/'));
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        /* MSG_NOSIGNAL: a manager that went away must not kill the daemon with SIGPIPE. */
        if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
                return negative_errno();
        return 0;
}
