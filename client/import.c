/* SPDX-License-Identifier: MIT */
/* snapfs import: every layer of one manifest of an OCI image layout, checked against its
 * digest and size before any is published, then published to a mount. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/transfer.h"
#include "common/util.h"

/* What one import holds: the manifest's bytes, the envelopes that name it, every layer. */
struct plan {
        struct snap_oci_manifest *man;
        void *man_bytes;
        size_t n_env;
        void **env;
        size_t *env_len;
        void **layer;
};

static void plan_free(struct plan *p)
{
        for (size_t i = 0; p->man && p->layer && i < p->man->n_layers; i++)
                free(p->layer[i]);
        free(p->layer);
        for (size_t i = 0; i < p->n_env; i++)
                free(p->env[i]);
        free(p->env);
        free(p->env_len);
        free(p->man_bytes);
        snap_oci_manifest_free(p->man);
}

static const char *describe(int r)
{
        return strerrordesc_np(-r) ?: "unknown error";
}

/* The envelope inside the signature manifest sd, when it names md: 0 and its bytes, 1 when
 * sd is something else (skipped), or -EBADMSG when it is a signature of another manifest. */
static int load_envelope(const struct snap_oci_layout *l, const struct snap_oci_desc *sd,
                         const struct snap_oci_desc *md, void **buf, size_t *len,
                         struct snap_oci_envelope *e)
{
        struct snap_oci_manifest *sm = NULL;
        const struct snap_oci_desc *layer;
        int r;

        r = snap_oci_manifest_load(l, sd, &sm);
        if (r < 0)
                return 1;
        layer = sm->n_layers == 1 ? &sm->layers[0] : NULL;
        r = 1;
        if (layer && !strcmp(layer->media_type, SNAP_OCI_MEDIA_SIGNATURE) &&
            snap_oci_blob_read(l, &layer->digest, layer->size, SNAP_OCI_ENVELOPE_MAX, buf) == 0) {
                *len = (size_t)layer->size;
                r = snap_oci_envelope_parse(*buf, *len, e) == 0 ? 0 : 1;
                /* Its subject is this manifest, its signature covers another: a signature
                 * moved onto a manifest it never signed. */
                if (r == 0 && (!snap_digest_equal(&e->manifest, &md->digest) ||
                               e->manifest_size != md->size))
                        r = -EBADMSG;
                if (r != 0) {
                        free(*buf);
                        *buf = NULL;
                }
        }
        snap_oci_manifest_free(sm);
        return r;
}

/* Finds the signature envelopes of md and, with keys, requires one that verifies. */
static int check_signatures(const struct snap_oci_layout *l, const struct snap_oci_desc *md,
                            struct evp_pkey_st *const *keys, size_t n_keys, struct plan *p,
                            struct sfc_transfer *out, struct snapfs_report *why)
{
        struct snap_oci_index *refs = NULL;
        int worst = -ENOKEY, r;
        char text[SNAP_OCI_DIGEST_TEXT_LEN + 1];

        snap_oci_digest_format(&md->digest, text);
        r = snap_oci_referrers(l, &md->digest, SNAP_OCI_ARTIFACT_SIGNATURE, NULL, &refs);
        if (r == -E2BIG)
                return sfc_report_fail(why, r, "layout",
                                       "index.json lists more than %u signatures of "
                                       "manifest %s, or more than %" PRIu64 " MiB of "
                                       "manifests that may be: refused before any key "
                                       "decides", SNAP_OCI_REFERRERS_MAX, text,
                                       SNAP_OCI_REFERRERS_BYTES_MAX >> 20);
        if (r < 0)
                return sfc_report_fail(why, r, "layout", "reading index.json: %s",
                                       describe(r));
        p->env = calloc(refs->n_manifests + 1, sizeof(*p->env));
        p->env_len = calloc(refs->n_manifests + 1, sizeof(*p->env_len));
        if (!p->env || !p->env_len) {
                snap_oci_index_free(refs);
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        }
        for (size_t i = 0; i < refs->n_manifests; i++) {
                struct snap_oci_envelope e;
                void *buf = NULL;
                size_t len = 0;

                r = load_envelope(l, &refs->manifests[i], md, &buf, &len, &e);
                if (r == -EBADMSG)
                        worst = -EBADMSG;
                if (r != 0)
                        continue;
                p->env[p->n_env] = buf;
                p->env_len[p->n_env++] = len;
                for (size_t k = 0; k < n_keys && !out->is_signed; k++) {
                        r = snap_oci_envelope_verify(&e, keys[k]);
                        if (r == 0) {
                                out->is_signed = true;
                                out->signature = refs->manifests[i].digest;
                                out->key = e.key;
                        } else if (r == -EBADMSG || worst == -ENOKEY)
                                worst = r;
                }
        }
        snap_oci_index_free(refs);
        if (n_keys == 0 || out->is_signed)
                return 0;
        if (worst == -ENOKEY)
                return sfc_report_fail(why, -ENOKEY, "unsigned",
                                       "manifest %s carries no signature", text);
        if (worst == -EKEYREJECTED)
                return sfc_report_fail(why, -EKEYREJECTED, "wrong-key",
                                       "manifest %s is signed, but by no key given", text);
        return sfc_report_fail(why, -EBADMSG, "bad-signature",
                               "the signature of manifest %s does not verify", text);
}

/* Reads and checks every layer before anything is published. */
static int check_layers(const struct snap_oci_layout *l, uint64_t limit, struct plan *p,
                        struct snapfs_report *why)
{
        const struct snap_oci_manifest *m = p->man;
        uint64_t total = 0;

        p->layer = calloc(m->n_layers + 1, sizeof(*p->layer));
        if (!p->layer)
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        for (size_t i = 0; i < m->n_layers; i++) {
                const struct snap_oci_desc *d = &m->layers[i];
                char text[SNAP_OCI_DIGEST_TEXT_LEN + 1];
                const char *title = d->title ? d->title : "";
                int r;

                snap_oci_digest_format(&d->digest, text);
                total += d->size;
                if (d->size > limit || total > SFC_IMPORT_BYTES_MAX)
                        return sfc_report_fail(why, -EFBIG, "too-big",
                                               "layer %zu (%s) blob %s: %" PRIu64
                                               " bytes is more than can be published", i,
                                               title, text, d->size);
                r = snap_oci_blob_read(l, &d->digest, d->size, limit, &p->layer[i]);
                if (r == -ENOENT)
                        return sfc_report_fail(why, r, "blob-missing",
                                               "layer %zu (%s) blob %s is not in the layout",
                                               i, title, text);
                if (r == -EBADMSG)
                        return sfc_report_fail(why, r, "blob-mismatch",
                                               "layer %zu (%s) blob %s does not match its "
                                               "digest and size (%" PRIu64 " bytes)", i,
                                               title, text, d->size);
                if (r < 0)
                        return sfc_report_fail(why, r, "blob", "layer %zu (%s) blob %s: %s",
                                               i, title, text, describe(r));
        }
        return 0;
}

static int publish_all(const struct sfc_mnt *m, const struct snapfs_options *opts,
                       struct plan *p, const struct snap_oci_desc *md,
                       struct sfc_transfer *out, struct snapfs_report *why)
{
        const struct snap_oci_manifest *man = p->man;
        struct snapfs_snapshot b;
        int r;

        /* Provenance first: a --trust-key daemon admits a manifest once it has seen an
         * envelope it verifies, and the layers once it has seen that manifest. */
        for (size_t i = 0; i < p->n_env; i++) {
                r = sfc_mnt_publish(m, p->env[i], p->env_len[i], "signature.json", opts, &b,
                                    why);
                /* A --trust-key daemon refuses the signature of a key it does not trust; one
                 * by a key it trusts may still follow. The manifest's publish says whether
                 * any was admitted. */
                if (r == -EPERM) {
                        sfc_report_reset(why);
                        continue;
                }
                if (r < 0)
                        return r;
        }
        if (p->n_env > 0) {
                r = sfc_mnt_publish(m, p->man_bytes, (size_t)md->size, "manifest.json", opts,
                                    &b, why);
                if (r < 0)
                        return r;
        }
        out->items = calloc(man->n_layers + 1, sizeof(*out->items));
        if (!out->items)
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        for (size_t i = 0; i < man->n_layers; i++) {
                struct sfc_transfer_item *it = &out->items[i];
                const char *title = man->layers[i].title;
                bool named = snap_name_valid(title);

                /* The layer's title comes back as the snapshot's name (published before,
                 * it keeps the name it has). */
                r = sfc_mnt_publish(m, p->layer[i], (size_t)man->layers[i].size,
                                    named ? title : NULL, opts, &it->snap, why);
                if (r < 0)
                        return r;
                sfc_binding_to_snap(&it->snap.binding, &it->binding);
                it->already = r == 1;
                out->n_items = i + 1;
        }
        return 0;
}

static int import_from(const struct snapfs_options *opts, const char *mount,
                       const struct snap_oci_layout *l, const char *ref,
                       struct evp_pkey_st *const *keys, size_t n_keys, struct plan *p,
                       struct sfc_transfer *out, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        char text[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        struct snap_oci_desc md = { 0 };
        int r;

        r = snap_oci_resolve(l, ref, &md);
        if (r < 0)
                return sfc_report_fail(why, r, "layout", "%s: %s", ref,
                                       r == -ENOENT ? "no such tag or manifest"
                                                       : describe(r));
        snap_oci_digest_format(&md.digest, text);
        out->manifest = md.digest;
        out->manifest_size = md.size;
        /* The key decides first, on the manifest's digest and size alone: an unsigned
         * manifest (up to 4 MiB, 65536 layers) is refused before it is read or parsed. */
        r = check_signatures(l, &md, keys, n_keys, p, out, why);
        if (r < 0)
                goto out;
        r = snap_oci_blob_read(l, &md.digest, md.size, SNAP_OCI_DOC_MAX, &p->man_bytes);
        if (r == 0)
                r = snap_oci_manifest_parse(p->man_bytes, md.size, &p->man);
        if (r < 0) {
                sfc_report_fail(why, r, "manifest", "manifest %s: %s", text,
                                r == -EBADMSG ? "does not match its digest and size"
                                : r == -EINVAL ? "not a valid OCI image manifest"
                                                  : describe(r));
                goto out;
        }
        r = check_layers(l, sfc_opt_limit(opts), p, why);
        if (r < 0)
                goto out;
        /* Only now the mount: every byte to publish is in memory and checked. */
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                goto out;
        r = publish_all(&m, opts, p, &md, out, why);
out:
        sfc_mnt_close(&m);
        snap_oci_desc_clear(&md);
        return r;
}

int sfc_import(const char *mount, const struct snapfs_options *opts, const char *layout,
               const char *ref, struct evp_pkey_st *const *keys, size_t n_keys,
               struct sfc_transfer *out, struct snapfs_report *why)
{
        struct snap_oci_layout l = SNAP_OCI_LAYOUT_INIT;
        struct plan p = { 0 };
        int r;

        sfc_report_reset(why);
        if (!out || !layout || !ref || !mount || (n_keys && !keys))
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no layout");
        *out = (struct sfc_transfer){ 0 };
        r = snap_oci_layout_open(layout, 0, &l);
        if (r < 0)
                return sfc_report_fail(why, r, "layout", "%s: %s", layout,
                                       r == -ENOENT ? "not an OCI image layout"
                                                       : describe(r));
        r = import_from(opts, mount, &l, ref, keys, n_keys, &p, out, why);
        if (r < 0 && out->n_items == 0) {
                free(out->items);
                out->items = NULL;
        }
        plan_free(&p);
        snap_oci_layout_close(&l);
        return r;
}
