/* SPDX-License-Identifier: MIT */
/* What kind of snapshot a content is: the one classification every client (and the daemon)
 * asks before handing a snapshot over. A signature envelope and a manifest are published so
 * that a --trust-key daemon learns what it admits (docs/distribution.md), and anyone may copy
 * a genuine envelope into any mount: their bytes were never vetted as anything's
 * configuration. A client that hands such a snapshot over as content would give a child bytes
 * the signer never meant as content, so clients deliver only content unless asked for
 * another kind (docs/design.md, "Kinds of snapshot"). Pure: no I/O. */
#pragma once

#include <stddef.h>

#include "snapshot/oci-desc.h"

enum snap_kind {
        /* Anything else: what a runtime hands to a child. */
        SNAP_KIND_CONTENT = 0,
        /* A signature envelope in its canonical encoding (snap_oci_envelope_parse accepts
         * it): what a --trust-key daemon admits a manifest by. */
        SNAP_KIND_SIGNATURE = 1,
        /* An OCI image manifest (snap_oci_manifest_parse accepts it): what a --trust-key
         * daemon admits layers by. */
        SNAP_KIND_MANIFEST = 2,
        SNAP_KIND_COUNT,
};

/* Content larger than this is always SNAP_KIND_CONTENT: no envelope or manifest is (the
 * parsers refuse more than SNAP_OCI_DOC_MAX bytes), so a caller need not read it. */
#define SNAP_KIND_SCAN_MAX SNAP_OCI_DOC_MAX

/* The kind of the len bytes at buf (buf is not read, and may be NULL, when len is past
 * SNAP_KIND_SCAN_MAX): a SNAP_KIND_*, or -ENOMEM when parsing ran out of memory (never
 * "content" then: a caller fails closed), -EINVAL for a NULL buf of a length it must read. */
int snap_kind_of(const void *buf, size_t len);

/* "content", "signature", "manifest"; NULL for a value that is none of them. */
const char *snap_kind_name(int kind);
/* The SNAP_KIND_* named name (exactly as snap_kind_name spells it), or -EINVAL. */
int snap_kind_from_name(const char *name);
