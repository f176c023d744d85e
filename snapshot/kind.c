/* SPDX-License-Identifier: MIT */
/* The kind of a snapshot, decided by the same parsers the trust path uses (kind.h). */
#include "snapshot/kind.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "snapshot/oci.h"
#include "common/strtable.h"

static const char *const names[SNAP_KIND_COUNT] = {
        [SNAP_KIND_CONTENT] = "content",
        [SNAP_KIND_SIGNATURE] = "signature",
        [SNAP_KIND_MANIFEST] = "manifest",
};

/* JSON text may start with whitespace; a manifest is an object. Anything else (binary data,
 * a YAML or TOML config, a JSON array) is no manifest, decided without parsing. */
static bool may_be_object(const unsigned char *s, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
                        continue;
                return s[i] == '{';
        }
        return false;
}

int snap_kind_of(const void *buf, size_t len)
{
        struct snap_oci_manifest *m = NULL;
        struct snap_oci_envelope e;
        int r;

        if (len > SNAP_KIND_SCAN_MAX)
                return SNAP_KIND_CONTENT;
        if (!buf)
                return -EINVAL;
        if (!may_be_object(buf, len))
                return SNAP_KIND_CONTENT;
        /* Exactly what a --trust-key daemon reads as a signature: its canonical encoding. A
         * near-envelope (a key added, say) is no signature anywhere, so it is content here;
         * no trust path admits it, so only a publisher trusted for any content can have
         * published it. */
        if (len <= SNAP_OCI_ENVELOPE_MAX && snap_oci_envelope_parse(buf, len, &e) == 0)
                return SNAP_KIND_SIGNATURE;
        r = snap_oci_manifest_parse(buf, len, &m);
        snap_oci_manifest_free(m);
        if (r == -ENOMEM)
                return r;
        return r == 0 ? SNAP_KIND_MANIFEST : SNAP_KIND_CONTENT;
}

const char *snap_kind_name(int kind)
{
        return STRTABLE_NAME(names, kind);
}

int snap_kind_from_name(const char *name)
{
        return STRTABLE_INDEX(names, name);
}
