/* SPDX-License-Identifier: MIT */
/* Reasons a call failed, as data, and what each errno of this library means in words. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/client-internal.h"

void sfc_report_reset(struct snapfs_report *why)
{
        if (!why)
                return;
        why->error = 0;
        why->n_reasons = 0;
        why->n_dropped = 0;
        memset(why->reserved, 0, sizeof(why->reserved));
}

__attribute__((format(printf, 3, 0)))
static void vadd(struct snapfs_report *why, const char *code, const char *fmt, va_list ap)
{
        struct snapfs_reason *r;

        if (why->n_reasons >= SNAPFS_REASONS_MAX) {
                why->n_dropped++;
                return;
        }
        r = &why->reasons[why->n_reasons++];
        snprintf(r->code, sizeof(r->code), "%s", code);
        vsnprintf(r->message, sizeof(r->message), fmt, ap);
        /* One reason, one line: callers print them one per line, and a byte that ends a line
         * would let a crafted name forge a second reason. Paths are escaped before they are
         * formatted in; this catches anything else (an errno text never has one). */
        for (char *p = r->message; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
}

void sfc_report_add(struct snapfs_report *why, const char *code, const char *fmt, ...)
{
        va_list ap;

        if (!why)
                return;
        va_start(ap, fmt);
        vadd(why, code, fmt, ap);
        va_end(ap);
}

int sfc_report_fail(struct snapfs_report *why, int err, const char *code, const char *fmt,
                    ...)
{
        va_list ap;

        if (!why)
                return err;
        va_start(ap, fmt);
        vadd(why, code, fmt, ap);
        va_end(ap);
        why->error = err;
        return err;
}

int sfc_report_error(struct snapfs_report *why, int err)
{
        if (why)
                why->error = err;
        return err;
}

const char *snapfs_strerror(int err)
{
        if (err >= 0)
                return "success";
        switch (-err) {
        case EMEDIUMTYPE:
                return "not a compliant snapfs mount";
        case ENOTCONN:
                return "the snapfs daemon of this mount is gone";
        case ESTALE:
                return "not the snapshot the binding names: dev, ino or size differ";
        case EBADMSG:
                return "content does not hash to the binding's SHA-256";
        case EXDEV:
                return "the file is not on the checked mount";
        case EPERM:
                return "mode is not 0000, or the operation is not permitted";
        case EFBIG:
                return "larger than the snapshot size limit";
        case EAGAIN:
                return "changed while being verified";
        case ELOOP:
                return "a symlink where a snapshot should be";
        case ENOENT:
                return "no such snapshot or mount (or scope, grant or entry)";
        case EINVAL:
                return "not a regular file, or an invalid argument";
        case ENOMSG:
                return "not a kind of snapshot asked for (a signature envelope or a manifest "
                       "is not content)";
        case ETIMEDOUT:
                return "the entry did not move before the timeout";
        }
        /* strerrordesc_np: a static string, safe from any thread (unlike strerror). */
        return strerrordesc_np(-err) ?: "unknown error";
}
