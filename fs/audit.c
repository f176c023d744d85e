/* SPDX-License-Identifier: MIT */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "util.h"

struct sfs_audit {
        int fd;
        bool owns_fd;
        atomic_uint_fast64_t failures;
};

int sfs_audit_open(const char *path, struct sfs_audit **out)
{
        struct sfs_audit *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        if (path) {
                /* O_NOFOLLOW: a symlink planted at the log path must not redirect our appends
                 * into another file. */
                a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (a->fd < 0) {
                        int r = negative_errno();
                        free(a);
                        return r;
                }
                a->owns_fd = true;
        } else {
                a->fd = STDERR_FILENO;
        }
        *out = a;
        return 0;
}

void sfs_audit_close(struct sfs_audit *a)
{
        if (!a)
                return;
        if (a->owns_fd)
                close(a->fd);
        free(a);
}

uint64_t sfs_audit_failures(const struct sfs_audit *a)
{
        return a ? atomic_load(&a->failures) : 0;
}

static void add_str(json_object *o, const char *key, const char *v)
{
        if (v)
                json_object_object_add(o, key, json_object_new_string(v));
}

void sfs_audit_emit(struct sfs_audit *a, const struct sfs_audit_event *ev)
{
        struct timespec ts;
        struct tm tm;
        char when[96];
        const char *line;
        json_object *o;
        size_t len;
        ssize_t n;

        if (!a)
                return;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long)(ts.tv_nsec / 1000) % 1000000);

        o = json_object_new_object();
        if (!o) {
                atomic_fetch_add(&a->failures, 1);
                return;
        }
        add_str(o, "time", when);
        add_str(o, "event", ev->event);
        add_str(o, "op", ev->op);
        json_object_object_add(o, "uid", json_object_new_int64(ev->uid));
        json_object_object_add(o, "pid", json_object_new_int64(ev->pid));
        /* Caller-supplied names may hold control characters or invalid UTF-8; json-c escapes
         * them, so a hostile name cannot forge a second log line. */
        add_str(o, "digest", ev->digest);
        add_str(o, "name", ev->name);
        add_str(o, "target", ev->target);
        if (ev->size)
                json_object_object_add(o, "size", json_object_new_uint64(ev->size));
        json_object_object_add(o, "errno", json_object_new_int(ev->err));
        if (ev->err)
                add_str(o, "error", strerrorname_np(ev->err));

        line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                     JSON_C_TO_STRING_NOSLASHESCAPE);
        len = strlen(line);
        {
                _cleanup_free_ char *buf = malloc(len + 1);
                if (!buf) {
                        atomic_fetch_add(&a->failures, 1);
                        json_object_put(o);
                        return;
                }
                memcpy(buf, line, len);
                buf[len] = '\n';
                do
                        n = write(a->fd, buf, len + 1);
                while (n < 0 && errno == EINTR);
                if (n != (ssize_t)(len + 1))
                        atomic_fetch_add(&a->failures, 1);
        }
        json_object_put(o);
}
