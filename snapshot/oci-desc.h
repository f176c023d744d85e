/* SPDX-License-Identifier: MIT */
/* The vocabulary of OCI documents that every part of the layout code shares: media types,
 * annotation keys, the bounds on what is parsed, the content descriptor and the text of its
 * digest. Implemented in oci-json.c, below oci.c and oci-sign.c, which build on it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/digest.h"

#define SNAP_OCI_MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define SNAP_OCI_MEDIA_INDEX "application/vnd.oci.image.index.v1+json"
#define SNAP_OCI_MEDIA_EMPTY "application/vnd.oci.empty.v1+json"
/* artifactType of a manifest whose layers are snapshots, and the media type of each layer
 * (the snapshot's bytes as they are). */
#define SNAP_OCI_ARTIFACT_SNAPSHOTS "application/vnd.snapfs.snapshots.v1"
#define SNAP_OCI_MEDIA_SNAPSHOT "application/vnd.snapfs.snapshot.v1"
/* artifactType of a signature manifest (an OCI referrer whose subject is the signed
 * manifest) and the media type of its one layer, the signature envelope. */
#define SNAP_OCI_ARTIFACT_SIGNATURE "application/vnd.snapfs.signature.v1"
#define SNAP_OCI_MEDIA_SIGNATURE "application/vnd.snapfs.signature.v1+json"

#define SNAP_OCI_ANNOTATION_TITLE "org.opencontainers.image.title"
#define SNAP_OCI_ANNOTATION_REF_NAME "org.opencontainers.image.ref.name"
/* RFC 3339 time: on a layer of the daemon's --store, when the snapshot was first published. */
#define SNAP_OCI_ANNOTATION_CREATED "org.opencontainers.image.created"
/* On a layer of the daemon's --store: the uids holding the snapshot, in decimal, separated by
 * commas, in the order they took their holds. */
#define SNAP_OCI_ANNOTATION_HOLDERS "vnd.snapfs.holders"

/* Bounds on what is parsed: a manifest or index.json larger than 4 MiB (what registries
 * accept), more than 65536 layers or index entries, a media type longer than 255 bytes, an
 * annotation value longer than 1024 bytes, a size past 2^40 are refused with -EFBIG or
 * -EINVAL. */
#define SNAP_OCI_DOC_MAX (UINT64_C(4) << 20)
#define SNAP_OCI_ENTRIES_MAX 65536u
#define SNAP_OCI_TYPE_MAX 255u
#define SNAP_OCI_ANNOTATION_MAX 1024u
#define SNAP_OCI_BLOB_MAX (UINT64_C(1) << 40)
/* A tag: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}, as registries and skopeo accept it. */
#define SNAP_OCI_TAG_MAX 128u

/* A content descriptor. Strings are malloc'd and owned by the document they belong to. */
struct snap_oci_desc {
        char *media_type;           /* never NULL in a parsed or built document */
        struct snap_digest digest;  /* sha256 only */
        uint64_t size;
        char *artifact_type;        /* NULL when absent */
        char *title;                /* annotation org.opencontainers.image.title, or NULL */
        char *ref_name;             /* annotation org.opencontainers.image.ref.name, or NULL */
        char *created;              /* annotation org.opencontainers.image.created, or NULL */
        char *holders;              /* annotation SNAP_OCI_ANNOTATION_HOLDERS, or NULL */
};

/* "sha256:<64 lowercase hex>" (strict, len bytes of s): 0 and *out, or -EINVAL. */
int snap_oci_digest_parse(const char *s, size_t len, struct snap_digest *out);
/* out needs 7 + 64 + 1 bytes. */
#define SNAP_OCI_DIGEST_TEXT_LEN (7 + SNAP_DIGEST_HEX_LEN)
void snap_oci_digest_format(const struct snap_digest *d, char out[SNAP_OCI_DIGEST_TEXT_LEN + 1]);

/* True for a media type of the form type/subtype of RFC 6838 restricted-name characters,
 * at most SNAP_OCI_TYPE_MAX bytes. */
bool snap_oci_media_type_valid(const char *s);
/* Frees d's strings and zeroes it. */
void snap_oci_desc_clear(struct snap_oci_desc *d);
