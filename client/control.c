/* SPDX-License-Identifier: MIT */
/* The control channel of the main mount (docs/design.md, "The control channel"): one JSON
 * request written to MNT/.control, the daemon's JSON reply read back from offset 0. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "common/json.h"
#include "common/util.h"
#include "mountcheck/verdict.h"

/* The file, in the main mount's root. */
#define CONTROL_NAME ".control"

int sfc_errno_from_name(const char *name)
{
        /* The daemon names errnos as strerrorname_np() spells them; no errno of Linux is
         * above 200 (EHWPOISON is 133). */
        if (!name || name[0] != 'E')
                return 0;
        for (int e = 1; e < 200; e++) {
                const char *n = strerrorname_np(e);
                if (n && strcmp(n, name) == 0)
                        return e;
        }
        return 0;
}

int sfc_control_parse_reply(const char *text, size_t len, json_object **out,
                            struct snapfs_report *why)
{
        json_object *o = NULL, *ok, *error, *message;
        const char *name, *msg;
        int e;

        *out = NULL;
        if (len == 0 || memchr(text, '\0', len) || len > INT32_MAX)
                return sfc_report_fail(why, -EPROTO, "reply",
                                          len ? "the daemon's reply holds a NUL byte"
                                              : "the daemon sent no reply");
        /* One object and nothing after it (but the blanks a writer may end with), read by
         * the one strict parser: no key twice, UTF-8, bounded depth. */
        e = json_parse_strict(text, len, SIZE_MAX, &o);
        if (e == -ENOMEM)
                return sfc_report_fail(why, -ENOMEM, "reply", "out of memory");
        if (e < 0)
                return sfc_report_fail(why, -EPROTO, "reply",
                                          "the daemon's reply is not one JSON object");
        if (!json_object_object_get_ex(o, "ok", &ok) || !json_object_is_type(ok, json_type_boolean)) {
                json_object_put(o);
                return sfc_report_fail(why, -EPROTO, "reply",
                                          "the daemon's reply has no \"ok\" field");
        }
        if (json_object_get_boolean(ok)) {
                *out = o;
                return 0;
        }
        /* A refusal: its errno by name, its message as the reason. */
        error = json_object_object_get_ex(o, "error", &error) ? error : NULL;
        message = json_object_object_get_ex(o, "message", &message) ? message : NULL;
        name = json_object_is_type(error, json_type_string) ? json_object_get_string(error) : NULL;
        msg = json_object_is_type(message, json_type_string) ? json_object_get_string(message)
                                                              : NULL;
        e = sfc_errno_from_name(name);
        if (e == 0) {
                char esc[64];
                sfc_report_fail(why, -EPROTO, "reply",
                                   "the daemon refused with no errno this library knows (%s)%s%s",
                                   name ? mc_escape(name, esc, sizeof(esc)) : "none",
                                   msg ? ": " : "", msg ? msg : "");
                json_object_put(o);
                return -EPROTO;
        }
        sfc_report_fail(why, -e, "refused", "%s", msg && *msg ? msg : name);
        *out = o;
        return -e;
}

/* Reads the reply from offset 0 until end of file, at most SFC_CONTROL_REPLY_MAX bytes
 * (a reply past it is the daemon's error, never a reason to allocate without bound):
 * 0 and *text (NUL-terminated, malloc'd) and *len, or a negative errno. */
static int read_reply(int fd, char **text, size_t *len)
{
        _cleanup_free_ char *buf = NULL;
        size_t cap = 0, n = 0;

        for (;;) {
                ssize_t k;
                if (n == cap) {
                        /* One byte past the bound is read to tell a reply at the bound from
                         * one past it. */
                        size_t ncap = cap ? cap * 2 : 16384;
                        char *nb;
                        if (cap > SFC_CONTROL_REPLY_MAX)
                                return -EMSGSIZE;
                        if (ncap > SFC_CONTROL_REPLY_MAX + 1)
                                ncap = SFC_CONTROL_REPLY_MAX + 1;
                        nb = realloc(buf, ncap + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = ncap;
                }
                /* pread at our own offset: every read reaches the daemon (direct I/O), and the
                 * reply is the file's content from 0. */
                k = pread(fd, buf + n, cap - n, (off_t)n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        buf[n] = '\0';
        *len = n;
        *text = TAKE_PTR(buf);
        return 0;
}

static int control_failed(struct snapfs_report *why, int r, const char *step)
{
        switch (-r) {
        case ENOENT:
                return sfc_report_fail(why, -EOPNOTSUPP, "control",
                                          "the mount has no " CONTROL_NAME " for this caller: "
                                          "its daemon takes no control requests, or not from "
                                          "this uid (only the mount owner and root)");
        case EACCES:
                return sfc_report_fail(why, r, "control",
                                          "only the mount owner and root may use " CONTROL_NAME);
        case ELOOP:
                return sfc_report_fail(why, r, "control",
                                          CONTROL_NAME " is a symlink: refused, never followed");
        case EXDEV:
                return sfc_report_fail(why, r, "other-mount",
                                          CONTROL_NAME " lies on another mount than the one "
                                          "checked");
        case EMSGSIZE:
                return sfc_report_fail(why, -EPROTO, "reply",
                                          "the daemon's reply is larger than %u bytes",
                                          (unsigned)SFC_CONTROL_REPLY_MAX);
        default:
                return sfc_report_fail(why, r, "control", "%s " CONTROL_NAME ": %s", step,
                                          strerrordesc_np(-r) ?: "unknown error");
        }
}

int sfc_mnt_control_text(const struct sfc_mnt *m, const char *request, size_t len,
                         char **reply, size_t *reply_len, struct snapfs_report *why)
{
        _cleanup_close_ int fd = -1;
        struct stat st;
        ssize_t w;
        int r;

        *reply = NULL;
        if (len == 0 || len > SFC_CONTROL_REQUEST_MAX)
                return sfc_report_fail(why, len ? -E2BIG : -EINVAL, "invalid-argument",
                                          len ? "the request is larger than %u bytes"
                                              : "an empty request",
                                          (unsigned)SFC_CONTROL_REQUEST_MAX);
        /* Relative to the pinned root of the judged mount, never by path: nothing slid over
         * the mount after the check receives the request (or answers it). O_NONBLOCK: a FIFO
         * planted by an impostor never blocks us. */
        fd = sfc_mnt_open(m, CONTROL_NAME, O_RDWR | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
                return control_failed(why, fd, "open");
        r = sfc_mnt_confirm(m, fd);
        if (r < 0)
                return control_failed(why, r, "open");
        if (fstat(fd, &st) < 0)
                return control_failed(why, negative_errno(), "fstat");
        if (!S_ISREG(st.st_mode))
                return sfc_report_fail(why, -EPROTO, "control",
                                          CONTROL_NAME " is not a regular file");
        /* One request, one write: the daemon runs it during the write and answers with the
         * full length, or refuses a request that is not one JSON object (EINVAL). */
        do
                w = write(fd, request, len);
        while (w < 0 && errno == EINTR);
        if (w < 0) {
                r = negative_errno();
                if (r == -EINVAL)
                        return sfc_report_fail(why, r, "refused",
                                                  "the daemon refused the request as not one "
                                                  "well-formed JSON object");
                return control_failed(why, r, "write to");
        }
        if ((size_t)w != len)
                return sfc_report_fail(why, -EPROTO, "control",
                                          "the daemon took %zd of the request's %zu bytes", w, len);
        r = read_reply(fd, reply, reply_len);
        if (r < 0)
                return control_failed(why, r, "read");
        return 0;
}

int sfc_mnt_control(const struct sfc_mnt *m, json_object *request, json_object **reply,
                    struct snapfs_report *why)
{
        _cleanup_free_ char *text = NULL;
        const char *req;
        size_t len, tlen;
        int r;

        *reply = NULL;
        req = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!req)
                return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
        len = strlen(req);
        r = sfc_mnt_control_text(m, req, len, &text, &tlen, why);
        if (r < 0)
                return r;
        return sfc_control_parse_reply(text, tlen, reply, why);
}

int snapfs_control(const char *mount, const char *request, const struct snapfs_options *opts,
                   char **reply, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        _cleanup_free_ char *text = NULL;
        json_object *o = NULL;
        size_t len;
        int r;

        sfc_report_reset(why);
        if (reply)
                *reply = NULL;
        if (!request || !reply)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "no request or no room for the reply");
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                return r;
        r = sfc_mnt_control_text(&m, request, strlen(request), &text, &len, why);
        sfc_mnt_close(&m);
        if (r < 0)
                return r;
        r = sfc_control_parse_reply(text, len, &o, why);
        /* The daemon's own words, whatever they say: a refusal's reply has its fields too. */
        if (o)
                *reply = TAKE_PTR(text);
        json_object_put(o);
        return r;
}

void snapfs_free(void *p)
{
        free(p);
}
