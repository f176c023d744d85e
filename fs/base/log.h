/* SPDX-License-Identifier: MIT */
/* The daemon's messages: standard error while someone reads it (the foreground, or the
 * daemonized child before it reports to its parent), syslog (the journal, where there is
 * one) once standard error is /dev/null or closed, as a daemonized process's is. Every
 * message of fs/ goes through here, libfuse's own included (fs/fuse/timing.c routes them). */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

/* Writes one message at a syslog priority (LOG_ERR, ...): on standard error as
 * "<prefix><message>", or to syslog (facility daemon) without the prefix and the final
 * newline. "%m" and errno work as in printf(3); errno is left as it was. */
void sfs_vlog(int priority, const char *prefix, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));
void sfs_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether a message now goes to standard error: false when descriptor 2 is closed or is
 * /dev/null (a daemon's, after it detached), where a message would be lost. */
bool sfs_log_to_stderr(void);

/* A refusal's reason, for a caller that may want it: formats into buf (n bytes) unless buf is
 * NULL, and returns -err, so one statement says why and fails. */
int sfs_say(char *buf, size_t n, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* The same for a reason struct *why with a char array message (why may be NULL). */
#define SAY(why, err, ...)                                                                         \
        sfs_say((why) ? (why)->message : NULL, sizeof((why)->message), (err), __VA_ARGS__)

/* The daemon's message, at error priority, prefixed "snapfs mount: " on standard error. */
#define LOG(...) sfs_log(LOG_ERR, __VA_ARGS__)
