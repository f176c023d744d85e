/* SPDX-License-Identifier: MIT */
/* Findings as data: codes and their names, one-line escaped messages, and the backends'
 * names. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mountcheck/verdict.h"
#include "common/strtable.h"

static const char *const code_names[MC_CODE_COUNT] = {
        [MC_NON_CANONICAL_PATH] = "non-canonical-path",
        [MC_SYMLINK_IN_PATH] = "symlink-in-path",
        [MC_NOT_A_MOUNT_POINT] = "not-a-mount-point",
        [MC_ANCESTOR_OVERMOUNTED] = "ancestor-overmounted",
        [MC_BIND_OF_SUBDIRECTORY] = "bind-of-subdirectory",
        [MC_STACKED] = "stacked",
        [MC_SUBMOUNT] = "submount",
        [MC_FSTYPE] = "fstype",
        [MC_MISSING_OPTION] = "missing-option",
        [MC_FORBIDDEN_OPTION] = "forbidden-option",
        [MC_PROPAGATION] = "propagation",
        [MC_IDMAPPED] = "idmapped",
        [MC_OWNER] = "owner",
        [MC_MODE] = "mode",
        [MC_SIZE] = "size",
        [MC_TRANSPORT_NOT_CONNECTED] = "transport-not-connected",
        [MC_CHANGED_DURING_CHECK] = "changed-during-check",
        [MC_OWNER_IS_CALLER] = "owner-is-caller",
        [MC_USER_NAMESPACE] = "user-namespace",
        [MC_SCOPE_WRITABLE] = "scope-writable",
};

static const char *const backend_names[] = {
        [MC_BACKEND_AUTO] = "auto",
        [MC_BACKEND_STATMOUNT] = "statmount",
        [MC_BACKEND_MOUNTINFO] = "mountinfo",
};

const char *mc_code_name(enum mc_code code)
{
        return STRTABLE_NAME(code_names, code);
}

const char *mc_backend_name(enum mc_backend b)
{
        return STRTABLE_NAME(backend_names, b);
}

int mc_backend_from_name(const char *name, enum mc_backend *out)
{
        int i = STRTABLE_INDEX(backend_names, name);

        if (i < 0 || !out)
                return -EINVAL;
        *out = (enum mc_backend)i;
        return 0;
}

void mc_verdict_init(struct mc_verdict *v)
{
        memset(v, 0, sizeof(*v));
}

char *mc_escape(const char *s, char *out, size_t n)
{
        size_t o = 0;

        if (n == 0)
                return out;
        for (; s && *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c < 0x20 || c == 0x7f || c == '\\') {
                        if (o + 4 >= n)
                                break;
                        snprintf(out + o, 5, "\\%03o", c);
                        o += 4;
                } else {
                        if (o + 1 >= n)
                                break;
                        out[o++] = (char)c;
                }
        }
        out[o] = '\0';
        return out;
}

void mc_verdict_add(struct mc_verdict *v, enum mc_code code, const char *fmt, ...)
{
        struct mc_finding *f;
        va_list ap;

        v->compliant = false;
        if (v->n_findings >= MC_FINDINGS_MAX) {
                v->n_dropped++;
                return;
        }
        f = &v->findings[v->n_findings++];
        f->code = code;
        va_start(ap, fmt);
        vsnprintf(f->message, sizeof(f->message), fmt, ap);
        va_end(ap);
        /* Callers escape what they interpolate; this is the backstop that keeps it one line. */
        for (char *p = f->message; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
}

bool mc_verdict_has(const struct mc_verdict *v, enum mc_code code)
{
        for (size_t i = 0; i < v->n_findings; i++)
                if (v->findings[i].code == code)
                        return true;
        return false;
}
