/* SPDX-License-Identifier: MIT */
/* OCI image layout (image-spec v1.1): the directory `oci-layout`, `index.json`,
 * `blobs/sha256/<hex>` that skopeo and oras read and write, and the artifact manifests that
 * carry snapshots as layers. Used by `snapfs export/import` and by the daemon's `--store`.
 *
 * Every blob and index.json is written to a temporary file, fsync'd, renamed into place and
 * its directory fsync'd: a crash leaves the old file or the new one, never a torn one. Every
 * read of the layout is bounded and refuses symlinks and non-regular files; every parsed
 * document is checked strictly (sizes, counts, digest format, media types). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/digest.h"
#include "snapshot/oci-desc.h"

/* An open layout: descriptors of its directory and of blobs/sha256; paths are never used
 * again after the open. */
struct snap_oci_layout {
        int dirfd;
        int blobsfd;
        bool private_files; /* SNAP_OCI_PRIVATE: what it makes is 0700 and 0600 */
};

#define SNAP_OCI_LAYOUT_INIT { .dirfd = -1, .blobsfd = -1 }

struct snap_oci_manifest {
        char *artifact_type; /* NULL when absent */
        struct snap_oci_desc config;
        size_t n_layers;
        struct snap_oci_desc *layers;
        bool has_subject;
        struct snap_oci_desc subject;
};

struct snap_oci_index {
        size_t n_manifests;
        struct snap_oci_desc *manifests;
};

enum {
        /* Create the directory, oci-layout and blobs/sha256 when missing. */
        SNAP_OCI_CREATE = 1u << 0,
        /* Everything made in the layout is for this uid alone: directories 0700, files 0600
         * (the daemon's --store, whose snapshots may be secrets). */
        SNAP_OCI_PRIVATE = 1u << 1,
};

/* Opens the layout at path (O_DIRECTORY|O_NOFOLLOW: a symlink as last component is refused
 * with -ELOOP), checks `oci-layout` says imageLayoutVersion 1.0.0 and opens
 * blobs/sha256 the same way. With SNAP_OCI_CREATE, makes what is missing (mode 0755 and 0644
 * before umask, or 0700 and 0600 with SNAP_OCI_PRIVATE, which also applies to every later
 * write through the layout). 0, or -ENOENT (no layout there and no CREATE), -EINVAL (oci-layout is not a
 * version we read, or a part is not a directory), the errno of a step. */
int snap_oci_layout_open(const char *path, unsigned flags, struct snap_oci_layout *out);
void snap_oci_layout_close(struct snap_oci_layout *l);

/* Writes name (a file directly in dirfd) atomically and durably: a temporary file in the
 * same directory, fsync, rename over name, fsync of the directory. 0 or a negative errno;
 * on failure name is unchanged and the temporary file removed. */
int snap_oci_write_atomic(int dirfd, const char *name, const void *buf, size_t len);
/* The same for a file nobody but this uid may read (mode 0600). */
int snap_oci_write_private(int dirfd, const char *name, const void *buf, size_t len);

/* Writes buf as the blob of its SHA-256 (into *digest when not NULL). 0 when written, 1 when
 * an intact blob with that digest was there already (nothing written); a blob there that does
 * not match, or a symlink in its place, is replaced. */
int snap_oci_blob_write(const struct snap_oci_layout *l, const void *buf, size_t len,
                        struct snap_digest *digest);

/* Opens the blob d for reading: the descriptor, after refusing a symlink (-ELOOP), a
 * non-regular file (-EINVAL, -EISDIR), a missing blob (-ENOENT) and a size other than size
 * (-EBADMSG). Nothing is read. */
int snap_oci_blob_open(const struct snap_oci_layout *l, const struct snap_digest *d,
                       uint64_t size);

/* Hashes the blob d through its descriptor, reading at most size + 1 bytes: 0 when it is
 * size bytes that hash to d, -EBADMSG when not, or the errors of snap_oci_blob_open. */
int snap_oci_blob_verify(const struct snap_oci_layout *l, const struct snap_digest *d,
                         uint64_t size);

/* The hashing of snap_oci_blob_verify and snap_oci_blob_read, on the descriptor
 * snap_oci_blob_open gave: reads fd from offset 0, at most size + 1 bytes, copying the first
 * size into buf when not NULL. 0 when fd holds size bytes that hash to want; -EBADMSG when it
 * holds fewer or more (a blob that grew after its size was checked) or other bytes; the errno
 * of a read. */
int snap_oci_hash_fd(int fd, uint64_t size, uint8_t *buf, const struct snap_digest *want);

/* Reads and verifies the blob d: 0 and its size bytes in *buf (malloc'd, never NULL), or
 * -EFBIG when size > limit (nothing read), -EBADMSG, the errors of snap_oci_blob_open. */
int snap_oci_blob_read(const struct snap_oci_layout *l, const struct snap_digest *d,
                       uint64_t size, uint64_t limit, void **buf);

/* Removes the blob d and fsyncs the directory: 0, or -ENOENT, or the errno of unlink. */
int snap_oci_blob_remove(const struct snap_oci_layout *l, const struct snap_digest *d);

/* True for a tag as SNAP_OCI_TAG_MAX says. */
bool snap_oci_tag_valid(const char *s);

/* Sets d to the empty config descriptor (application/vnd.oci.empty.v1+json, blob "{}"); the
 * strings are static: do not pass d to snap_oci_desc_clear. */
void snap_oci_desc_empty_config(struct snap_oci_desc *d);

/* The manifest as JSON text (malloc'd, *len bytes, NUL-terminated): 0, or -EINVAL when a
 * media type, annotation or count is out of the bounds above, -EFBIG when the text would be
 * longer than SNAP_OCI_DOC_MAX (no reader would take it), -ENOMEM. */
int snap_oci_manifest_build(const struct snap_oci_manifest *m, char **json, size_t *len);

/* Parses a manifest (len bytes, no NUL needed): 0 and *out (free with
 * snap_oci_manifest_free), or -EFBIG (len > SNAP_OCI_DOC_MAX), -EINVAL (not JSON, trailing
 * bytes, schemaVersion not 2, a mediaType other than a manifest's, a bad descriptor: missing
 * or bad mediaType, digest not sha256:<hex>, size not a non-negative integer, annotations not
 * strings, too many layers), -ENOMEM. Unknown fields are ignored, as the spec asks. */
int snap_oci_manifest_parse(const void *buf, size_t len, struct snap_oci_manifest **out);
void snap_oci_manifest_free(struct snap_oci_manifest *m);

/* Parses index.json the same way (schemaVersion 2, mediaType absent or an index's, at most
 * SNAP_OCI_ENTRIES_MAX descriptors). */
int snap_oci_index_parse(const void *buf, size_t len, struct snap_oci_index **out);
void snap_oci_index_free(struct snap_oci_index *ix);

/* Reads and parses the layout's index.json: 0 and *out (an empty index when the file is
 * missing), or the errors of the parse and the bounded read. */
int snap_oci_index_read(const struct snap_oci_layout *l, struct snap_oci_index **out);

/* Builds m, writes it as a blob (with the empty config blob when m's config is that) and
 * fills *out (may be NULL) with its descriptor (static media type; digest and size). 0 or
 * the errors of build and write. */
int snap_oci_manifest_write(const struct snap_oci_layout *l, const struct snap_oci_manifest *m,
                            struct snap_oci_desc *out);

/* Reads the manifest blob of desc verified (size bounded by SNAP_OCI_DOC_MAX: -EFBIG) and
 * parses it: 0 and *out, or the errors of snap_oci_blob_read and snap_oci_manifest_parse. */
int snap_oci_manifest_load(const struct snap_oci_layout *l, const struct snap_oci_desc *desc,
                           struct snap_oci_manifest **out);

/* Tags the manifest desc (its media_type, digest, size, artifact_type) as tag in index.json:
 * entries already carrying that ref name are dropped, every other entry is kept as it was,
 * and the file is rewritten atomically under an exclusive flock of the layout directory
 * (two writers never lose each other's tag). 0, or -EINVAL (bad tag), the errors of
 * reading, parsing and writing. */
int snap_oci_tag(const struct snap_oci_layout *l, const struct snap_oci_desc *desc,
                 const char *tag);

/* Resolves ref, a tag, "@sha256:<hex>" or "sha256:<hex>" (a manifest digest), to the
 * descriptor of a manifest: 0 and *out (strings malloc'd: snap_oci_desc_clear), or -ENOENT
 * (no such tag; no such blob), -ENOTUNIQ (two entries with that tag), -EMEDIUMTYPE (the tag
 * names something that is not an image manifest, e.g. an index), -EINVAL (bad ref). A
 * digest not in index.json resolves when its blob is there. */
int snap_oci_resolve(const struct snap_oci_layout *l, const char *ref, struct snap_oci_desc *out);

/* How much looking for referrers may read (snap_oci_referrers). */
struct snap_oci_bounds {
        uint64_t max_size;  /* an entry listed larger than this is skipped unread */
        uint64_t max_bytes; /* most manifest bytes read in all: past it -E2BIG */
        size_t max_found;   /* most referrers found: past it -E2BIG */
};
/* The defaults: a signature manifest is well under a kilobyte (an empty config, one layer, a
 * subject), so 64 KiB each, 16 MiB in all, 64 signatures of one manifest. */
#define SNAP_OCI_REFERRER_MAX (UINT64_C(64) << 10)
#define SNAP_OCI_REFERRERS_BYTES_MAX (UINT64_C(16) << 20)
#define SNAP_OCI_REFERRERS_MAX 64u

/* The manifests in index.json whose subject is subject and whose artifactType is
 * artifact_type (any when NULL), in index order, each digest once: 0 and *out (free with
 * snap_oci_index_free; n_manifests may be 0). Read is only what may be one: an entry whose
 * own artifactType (in index.json) is another, or larger than bounds->max_size, is skipped
 * unread, and a digest listed again is not read again. Entries that do not load are skipped.
 * -E2BIG past bounds->max_bytes read or bounds->max_found found (NULL: the defaults above),
 * or the errors of reading index.json. */
int snap_oci_referrers(const struct snap_oci_layout *l, const struct snap_digest *subject,
                       const char *artifact_type, const struct snap_oci_bounds *bounds,
                       struct snap_oci_index **out);

/* ---- Signatures (oci-sign.c) --------------------------------------------------------
 *
 * A signature envelope is a small JSON document, the one layer of a signature manifest:
 *   {"mediaType": SNAP_OCI_MEDIA_SIGNATURE, "algorithm": "ed25519",
 *    "manifest": {"digest": "sha256:<hex>", "size": N},
 *    "key": "sha256:<hex of the SHA-256 of the public key's DER SubjectPublicKeyInfo>",
 *    "signature": "<base64 of the 64-byte Ed25519 signature>"}
 * The signed message is "snapfs-signature-v1\nsha256:<hex>\n<size>\n": the manifest's digest
 * and size, under a prefix no other use of the key shares. An envelope is
 * self-authenticating: whoever holds the public key can check it without the layout. */

struct evp_pkey_st;

struct snap_oci_envelope {
        struct snap_digest manifest;
        uint64_t manifest_size;
        struct snap_digest key;  /* fingerprint of the signing public key */
        uint8_t signature[64];
};

#define SNAP_OCI_ENVELOPE_MAX 4096u

/* A new Ed25519 key pair: 0 and *out (EVP_PKEY_free), or -EIO. */
int snap_oci_key_generate(struct evp_pkey_st **out);
/* PEM text of the private key (PKCS#8) or of the public key (SubjectPublicKeyInfo): 0 and
 * *pem (malloc'd, *len bytes, NUL-terminated), or -EIO/-ENOMEM. */
int snap_oci_key_to_pem(struct evp_pkey_st *key, bool private_key, char **pem, size_t *len);
/* The longest key file read, in bytes: an Ed25519 PEM is a few hundred. */
#define SNAP_OCI_KEY_FILE_MAX (16u * 1024u)
/* Parses a PEM key (len bytes, at most SNAP_OCI_KEY_FILE_MAX): a private key, or with
 * want_private false a public key. 0 and *out, or -EINVAL (not PEM, not Ed25519, too long),
 * -EKEYREJECTED (want_private false and a private key: a verifier is never handed the
 * secret). */
int snap_oci_key_from_pem(const void *pem, size_t len, bool want_private,
                          struct evp_pkey_st **out);
/* Reads a PEM key file (bounded, no symlink, regular file) and parses it as above. */
int snap_oci_key_load(const char *path, bool want_private, struct evp_pkey_st **out);
/* SHA-256 of the key's DER SubjectPublicKeyInfo: 0, or -EIO. */
int snap_oci_key_fingerprint(struct evp_pkey_st *key, struct snap_digest *out);

/* The longest canonical envelope text, terminating NUL included (about 300 bytes are used). */
#define SNAP_OCI_ENVELOPE_TEXT_MAX 512u

/* The canonical encoding of e, the only text of an envelope that is accepted: exactly
 *   {"mediaType":"<SNAP_OCI_MEDIA_SIGNATURE>","algorithm":"ed25519",
 *    "manifest":{"digest":"sha256:<hex>","size":<decimal>},"key":"sha256:<hex>",
 *    "signature":"<base64>"}
 * on one line, with no whitespace at all. Writes it NUL-terminated into out (outlen bytes;
 * SNAP_OCI_ENVELOPE_TEXT_MAX is always enough): its length, or -EINVAL (no e or out),
 * -ENOBUFS (outlen too short). */
int snap_oci_envelope_encode(const struct snap_oci_envelope *e, char *out, size_t outlen);
/* Signs the manifest digest and size with key: 0 and the envelope JSON in *json (malloc'd,
 * *len bytes; its canonical encoding), or -EINVAL (not an Ed25519 private key), -EIO,
 * -ENOMEM. */
int snap_oci_sign(struct evp_pkey_st *key, const struct snap_digest *manifest, uint64_t size,
                  char **json, size_t *len);
/* Parses an envelope strictly (at most SNAP_OCI_ENVELOPE_MAX bytes; every field present and
 * well formed) and accepts only its canonical encoding (snap_oci_envelope_encode of what was
 * parsed must give back buf byte for byte: an unknown or duplicate key, whitespace, another
 * key order or an escape is refused). 0 and *out, or -EINVAL / -EFBIG. */
int snap_oci_envelope_parse(const void *buf, size_t len, struct snap_oci_envelope *out);
/* Checks e against the public key pub: 0 when e was signed by pub; -EKEYREJECTED when e names
 * another key; -EBADMSG when the signature does not verify; -EIO. */
int snap_oci_envelope_verify(const struct snap_oci_envelope *e, struct evp_pkey_st *pub);
