/* SPDX-License-Identifier: MIT */
/* Moving snapshots between a snapfs mount and an OCI image layout (snapshot/oci.h): the
 * engines of `snapfs export` and `snapfs import`. Internal to libsnapfs and the snapfs
 * command: not exported from libsnapfs.so. Both fill a report with every reason and never
 * print. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/binding.h"
#include "client/client-internal.h"
#include "snapshot/oci.h"
#include "snapshot/name.h"

struct evp_pkey_st;

/* SNAPFS_NAME_MAX (snapfs.h) is the staging name's length, public for a name's or an entry's
 * buffer. */
_Static_assert(SNAPFS_NAME_MAX == SNAP_NAME_MAX, "one name grammar");

/* Largest sum of layer sizes one import holds in memory before it publishes any. */
#define SFC_IMPORT_BYTES_MAX (UINT64_C(1) << 30)

/* One snapshot moved: its binding on the mount, and the snapshot as the mount describes it
 * (its name "" when it has none). */
struct sfc_transfer_item {
        struct snap_binding binding;
        struct snapfs_snapshot snap;
        bool already; /* import: the same bytes were published already */
};

struct sfc_transfer {
        struct snap_digest manifest;       /* the snapshots' manifest */
        uint64_t manifest_size;
        bool is_signed;                    /* export: signed; import: signature verified */
        struct snap_digest signature;      /* the signature manifest, when is_signed */
        struct snap_digest key;            /* fingerprint of the key that signed */
        size_t n_items;
        struct sfc_transfer_item *items;
};

void sfc_transfer_free(struct sfc_transfer *t);

/* What `snapfs export` does: judges mount, verified-opens every snapshot named in hexes (n
 * of them; all when n is 0, in digest order), writes each as a blob of layout (created when
 * missing), then one artifact manifest (SNAP_OCI_ARTIFACT_SNAPSHOTS, a layer per snapshot
 * titled by its name) tagged tag in index.json. With sign_key, also the signature envelope
 * and its manifest (subject: the manifest), tagged "<tag>.sig". 0 and *out, or a negative
 * errno with every reason: the mount's, "invalid-argument" (a bad digest or tag),
 * "layout", "snapshot" (one that did not verify), "sign". */
int sfc_export(const char *mount, const struct snapfs_options *opts, const char *layout,
               const char *tag, const char *const *hexes, size_t n,
               struct evp_pkey_st *sign_key, struct sfc_transfer *out,
               struct snapfs_report *why);

/* What `snapfs import` does: resolves ref (a tag or @sha256:<hex>) in layout, finds the
 * signature envelopes of that manifest (index.json's entries read within the bounds of
 * snap_oci_referrers) and, with keys (n_keys of them), requires one that a key verifies before
 * the manifest is read; then reads the manifest verified against its digest and checks every
 * layer blob against its digest and size (reading each whole, bounded by the size limit)
 * before publishing any. Then
 * publishes, in order: each signature envelope that names the manifest and the manifest
 * itself (so a --trust-key daemon learns what it admits; see docs/distribution.md), and every
 * layer, staged under its title when that is a valid NAME. 0 and *out (the layers' bindings),
 * or a negative errno with reasons: "layout" (-E2BIG: more referrers than the bounds allow),
 * "manifest", "blob-missing", "blob-mismatch"
 * (naming the blob; nothing published), "too-big", "unsigned" (-ENOKEY), "wrong-key"
 * (-EKEYREJECTED), "bad-signature" (-EBADMSG), or the publish's. */
int sfc_import(const char *mount, const struct snapfs_options *opts, const char *layout,
               const char *ref, struct evp_pkey_st *const *keys, size_t n_keys,
               struct sfc_transfer *out, struct snapfs_report *why);

/* Every snapshot name (64 hex) in the judged mount's root, sorted: 0 and *names (free with
 * sfc_names_free), *n; or a negative errno with the reason. */
int sfc_mnt_list(const struct sfc_mnt *m, char ***names, size_t *n,
                 struct snapfs_report *why);
void sfc_names_free(char **names, size_t n);

/* What the provenance check found of one served snapshot. */
struct sfc_provenance {
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        uint64_t size;
        int kind;       /* SNAP_KIND_* (snapshot/kind.h) */
        /* content: a layer of a manifest signed by one of the keys, that is served too;
         * signature: an envelope one of the keys verifies; manifest: one such an envelope
         * signs. */
        bool is_signed;
};

/* Which served snapshots are in a manifest signed by one of keys (docs/distribution.md,
 * "Auditing provenance"): every snapshot's kind, the envelopes that verify, the manifests
 * they sign and the layers those name. 0 and *out (one entry per snapshot, sorted by name;
 * free with sfc_provenance_free), *n; or a negative errno with the reason. A snapshot that
 * does not verify while it is read is a failure ("snapshot"). */
int sfc_provenance_check(const struct sfc_mnt *m, struct evp_pkey_st *const *keys,
                         size_t n_keys, uint64_t limit, struct sfc_provenance **out,
                         size_t *n, struct snapfs_report *why);
void sfc_provenance_free(struct sfc_provenance *p, size_t n);

/* Parses "oci:DIR:TAG" (TAG may be "@sha256:<hex>"); as skopeo does, the first ':' after
 * DIR splits, so DIR holds none: 0 and *dir (malloc'd), *ref (points into spec), or
 * -EINVAL. */
int sfc_oci_ref_parse(const char *spec, char **dir, const char **ref);
