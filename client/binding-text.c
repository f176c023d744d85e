/* SPDX-License-Identifier: MIT */
/* The public binding type and its text form, on top of snapshot/binding.c. */
#include <errno.h>
#include <string.h>

#include "client/client-internal.h"

void sfc_binding_to_snap(const struct snapfs_binding *in, struct snap_binding *out)
{
        memcpy(out->sha256.bytes, in->sha256, SNAPFS_DIGEST_LEN);
        out->size = in->size;
        out->dev = in->dev;
        out->ino = in->ino;
}

void sfc_binding_from_snap(const struct snap_binding *in, struct snapfs_binding *out)
{
        memcpy(out->sha256, in->sha256.bytes, SNAPFS_DIGEST_LEN);
        out->size = in->size;
        out->dev = in->dev;
        out->ino = in->ino;
}

int snapfs_binding_format(const struct snapfs_binding *b, char *buf, size_t buflen)
{
        struct snap_binding sb;

        if (!b || !buf)
                return -EINVAL;
        sfc_binding_to_snap(b, &sb);
        return snap_binding_format(&sb, buf, buflen);
}

int snapfs_binding_parse(const char *text, struct snapfs_binding *out)
{
        struct snap_binding sb;
        int r;

        if (!text || !out)
                return -EINVAL;
        /* strlen stops at the first NUL, and the strict parser refuses any short form. */
        r = snap_binding_parse(text, strlen(text), &sb);
        if (r < 0)
                return r;
        sfc_binding_from_snap(&sb, out);
        return 0;
}
