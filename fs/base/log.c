/* SPDX-License-Identifier: MIT */
/* The daemon's messages, on standard error or syslog (log.h). */
#include "fs/base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>

#define SFS_LOG_PREFIX "snapfs mount: "

bool sfs_log_to_stderr(void)
{
        struct stat st;

        if (fstat(2, &st) < 0)
                return false;
        /* /dev/null is the character device 1:3 under any name (a daemon's standard error,
         * or a bind mount of it in a private /dev). */
        return !(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
}

int sfs_say(char *buf, size_t n, int err, const char *fmt, ...)
{
        va_list ap;

        if (buf) {
                va_start(ap, fmt);
                vsnprintf(buf, n, fmt, ap);
                va_end(ap);
        }
        return -err;
}

void sfs_vlog(int priority, const char *prefix, const char *fmt, va_list ap)
{
        int saved = errno;
        char buf[2048], *text = buf, *big = NULL;
        va_list again;
        int n;

        /* Formatted once, then written in one call: threads' messages do not interleave. */
        va_copy(again, ap);
        n = vsnprintf(buf, sizeof(buf), fmt, ap);
        if (n >= (int)sizeof(buf)) {
                errno = saved;
                if (vasprintf(&big, fmt, again) >= 0)
                        text = big;
                else
                        big = NULL; /* out of memory: the message cut at sizeof(buf) */
        }
        va_end(again);
        if (n < 0)
                text = (char *)fmt;
        if (sfs_log_to_stderr()) {
                fprintf(stderr, "%s%s", prefix, text);
        } else {
                size_t len = strlen(text);

                while (len > 0 && text[len - 1] == '\n')
                        len--;
                syslog(LOG_DAEMON | (priority & LOG_PRIMASK), "%.*s", (int)len, text);
        }
        free(big);
        errno = saved;
}

void sfs_log(int priority, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        sfs_vlog(priority, SFS_LOG_PREFIX, fmt, ap);
        va_end(ap);
}
