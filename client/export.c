/* SPDX-License-Identifier: MIT */
/* snapfs export: verified snapshots of a mount into an OCI image layout, as one artifact
 * manifest, optionally signed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "snapshot/safeopen.h"
#include "client/transfer.h"
#include "common/array.h"
#include "common/util.h"

static const char *describe(int r)
{
        return strerrordesc_np(-r) ?: "unknown error";
}

void sfc_transfer_free(struct sfc_transfer *t)
{
        if (!t)
                return;
        free(t->items);
        *t = (struct sfc_transfer){ 0 };
}

int sfc_oci_ref_parse(const char *spec, char **dir, const char **ref)
{
        const char *p, *colon;

        if (!spec || strncmp(spec, "oci:", 4) != 0)
                return -EINVAL;
        p = spec + 4;
        colon = strchr(p, ':');
        if (!colon || colon == p || !colon[1])
                return -EINVAL;
        *dir = strndup(p, (size_t)(colon - p));
        if (!*dir)
                return -ENOMEM;
        *ref = colon + 1;
        return 0;
}

static int cmp_hex(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void sfc_names_free(char **names, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* Every snapshot name in the judged mount's root, sorted (a manifest that does not depend
 * on readdir order: the same snapshots export to the same digest). */
int sfc_mnt_list(const struct sfc_mnt *m, char ***out, size_t *n,
                 struct snapfs_report *why)
{
        char **names = NULL;
        size_t cap = 0, k = 0;
        struct dirent *e;
        DIR *d;
        int fd;

        fd = sfc_mnt_open(m, ".", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return sfc_report_fail(why, fd, "open", "listing the mount: %s", describe(fd));
        d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                safe_close(fd);
                return sfc_report_fail(why, r, "open", "listing the mount: %s", describe(r));
        }
        while ((errno = 0, e = readdir(d))) {
                if (!snap_is_digest_name(e->d_name))
                        continue;
                if (ARRAY_GROW(names, cap, k + 1, 64) < 0)
                        goto nomem;
                names[k] = strdup(e->d_name);
                if (!names[k])
                        goto nomem;
                k++;
        }
        closedir(d);
        if (k)
                qsort(names, k, sizeof(*names), cmp_hex);
        *out = names;
        *n = k;
        return 0;
nomem:
        closedir(d);
        sfc_names_free(names, k);
        return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
}

/* Verified-opens hex on m, writes its bytes as a blob, fills *layer and *item. */
static int export_one(const struct sfc_mnt *m, const struct snap_oci_layout *l,
                      const char *hex, uint64_t limit, struct snap_hasher *h,
                      struct snap_oci_desc *layer, struct sfc_transfer_item *item,
                      struct snapfs_report *why)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ void *buf = NULL;
        struct snap_digest written;
        size_t len;
        int r;

        fd = sfc_mnt_open_snapshot(m, hex, NULL, limit, SFC_KINDS_ANY, h, &item->binding,
                                   why);
        if (fd < 0)
                return fd;
        r = sfc_fd_describe(fd, &item->binding, &item->snap);
        if (r < 0)
                return sfc_report_fail(why, r, "snapshot", "fstat %s: %s", hex, describe(r));
        /* Read again through the verified descriptor; the blob's own hash below must name
         * the same digest, or nothing is tagged. */
        r = snap_read_bounded(fd, limit, &buf, &len);
        if (r < 0)
                return sfc_report_fail(why, r, "snapshot", "reading %s: %s", hex, describe(r));
        r = snap_oci_blob_write(l, buf, len, &written);
        if (r < 0)
                return sfc_report_fail(why, r, "layout", "writing blob %s: %s", hex,
                                       describe(r));
        if (!snap_digest_equal(&written, &item->binding.sha256) || len != item->binding.size)
                return sfc_report_fail(why, -EBADMSG, "snapshot",
                                       "%s changed while it was exported", hex);
        *layer = (struct snap_oci_desc){
                .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                .digest = written,
                .size = len,
                .title = item->snap.name[0] ? item->snap.name : NULL,
        };
        return 0;
}

/* Writes m and tags it: 0 and *desc, or the failure with its reason. */
static int write_tagged(const struct snap_oci_layout *l, const struct snap_oci_manifest *m,
                        const char *tag, struct snap_oci_desc *desc, const char *what,
                        struct snapfs_report *why)
{
        int r = snap_oci_manifest_write(l, m, desc);

        if (r == 0)
                r = snap_oci_tag(l, desc, tag);
        if (r < 0)
                return sfc_report_fail(why, r, "layout", "writing %s: %s", what, describe(r));
        return 0;
}

/* The envelope over md, its blob, a signature manifest whose subject is md, tagged
 * "<tag>.sig": skopeo 1.9 copies one tag at a time and no referrers, so the tag is what
 * carries the signature through a registry. */
static int sign_manifest(const struct snap_oci_layout *l, const struct snap_oci_desc *md,
                         const char *tag, struct evp_pkey_st *key, struct sfc_transfer *out,
                         struct snapfs_report *why)
{
        struct snap_oci_manifest sm = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SIGNATURE };
        _cleanup_free_ char *env = NULL;
        struct snap_oci_desc layer, sd;
        char sigtag[SNAP_OCI_TAG_MAX + 8];
        size_t len;
        int r;

        r = snap_oci_sign(key, &md->digest, md->size, &env, &len);
        if (r < 0)
                return sfc_report_fail(why, r, "sign", "signing: %s", describe(r));
        r = snap_oci_key_fingerprint(key, &out->key);
        if (r < 0)
                return sfc_report_fail(why, r, "sign", "key fingerprint: %s", describe(r));
        layer = (struct snap_oci_desc){ .media_type = (char *)SNAP_OCI_MEDIA_SIGNATURE,
                                        .size = len, .title = (char *)"signature.json" };
        r = snap_oci_blob_write(l, env, len, &layer.digest);
        if (r < 0)
                return sfc_report_fail(why, r, "layout", "writing the signature: %s",
                                       describe(r));
        snap_oci_desc_empty_config(&sm.config);
        sm.layers = &layer;
        sm.n_layers = 1;
        sm.has_subject = true;
        sm.subject = *md;
        sm.subject.artifact_type = NULL;
        snprintf(sigtag, sizeof(sigtag), "%s.sig", tag);
        r = write_tagged(l, &sm, sigtag, &sd, "the signature manifest", why);
        if (r < 0)
                return r;
        out->signature = sd.digest;
        out->is_signed = true;
        return 0;
}

static int export_on(const struct sfc_mnt *m, const struct snap_oci_layout *l,
                     const char *tag, char **hexes, size_t n, uint64_t limit,
                     struct evp_pkey_st *key, struct sfc_transfer *out,
                     struct snapfs_report *why)
{
        struct snap_oci_manifest man = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        _cleanup_free_ struct snap_oci_desc *layers = calloc(n ? n : 1, sizeof(*layers));
        struct snap_hasher *h = NULL;
        struct snap_oci_desc md;
        int r;

        out->items = calloc(n ? n : 1, sizeof(*out->items));
        if (!layers || !out->items)
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        r = snap_hasher_new(&h);
        if (r < 0)
                return sfc_report_fail(why, r, "io", "hasher: %s", describe(r));
        for (size_t i = 0; i < n; i++) {
                r = export_one(m, l, hexes[i], limit, h, &layers[i], &out->items[i], why);
                if (r < 0)
                        break;
                layers[i].title = out->items[i].snap.name[0] ? out->items[i].snap.name : NULL;
                out->n_items = i + 1;
        }
        snap_hasher_free(h);
        if (r < 0)
                return r;
        snap_oci_desc_empty_config(&man.config);
        man.layers = layers;
        man.n_layers = n;
        r = write_tagged(l, &man, tag, &md, "the manifest", why);
        if (r < 0)
                return r;
        out->manifest = md.digest;
        out->manifest_size = md.size;
        return key ? sign_manifest(l, &md, tag, key, out, why) : 0;
}

/* The digests asked for, checked and without repeats (a layer twice would publish once and
 * confuse a reader counting layers). */
static int collect(const char *const *hexes, size_t n, char ***out, size_t *k,
                   struct snapfs_report *why)
{
        char **names = calloc(n ? n : 1, sizeof(*names));

        if (!names)
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        *k = 0;
        for (size_t i = 0; i < n; i++) {
                bool seen = false;
                if (!snap_is_digest_name(hexes[i])) {
                        sfc_names_free(names, *k);
                        return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                               "'%s' is not a snapshot name (64 lowercase "
                                               "hex characters)", hexes[i]);
                }
                for (size_t j = 0; j < *k && !seen; j++)
                        seen = !strcmp(names[j], hexes[i]);
                if (seen)
                        continue;
                names[*k] = strdup(hexes[i]);
                if (!names[*k]) {
                        sfc_names_free(names, *k);
                        return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
                }
                (*k)++;
        }
        *out = names;
        return 0;
}

int sfc_export(const char *mount, const struct snapfs_options *opts, const char *layout,
               const char *tag, const char *const *hexes, size_t n,
               struct evp_pkey_st *sign_key, struct sfc_transfer *out,
               struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        struct snap_oci_layout l = SNAP_OCI_LAYOUT_INIT;
        char **names = NULL;
        size_t k = 0;
        int r;

        sfc_report_reset(why);
        if (!out || !layout || !mount)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no layout");
        *out = (struct sfc_transfer){ 0 };
        if (!snap_oci_tag_valid(tag) || (sign_key && strlen(tag) + 4 > SNAP_OCI_TAG_MAX))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "'%s' is not a tag ([A-Za-z0-9_][A-Za-z0-9._-]*, at "
                                       "most %u characters, 4 fewer when signing)",
                                          tag ? tag : "", SNAP_OCI_TAG_MAX);
        r = collect(hexes, n, &names, &k, why);
        if (r < 0)
                return r;
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                goto out;
        if (n == 0) {
                sfc_names_free(names, 0);
                names = NULL;
                r = sfc_mnt_list(&m, &names, &k, why);
                if (r < 0)
                        goto out;
        }
        r = snap_oci_layout_open(layout, SNAP_OCI_CREATE, &l);
        if (r < 0) {
                sfc_report_fail(why, r, "layout", "%s: %s", layout, describe(r));
                goto out;
        }
        r = export_on(&m, &l, tag, names, k, sfc_opt_limit(opts), sign_key, out, why);
out:
        if (r < 0)
                sfc_transfer_free(out);
        sfc_names_free(names, k);
        snap_oci_layout_close(&l);
        sfc_mnt_close(&m);
        return r;
}
