/* SPDX-License-Identifier: MIT */
/* The OCI manifest, index.json and signature envelope parsers on arbitrary bytes (the first
 * byte picks which). Any errno but -EINVAL/-EFBIG/-ENOMEM is a bug; a manifest that parses
 * builds again into a document that parses to the same descriptors, so what export writes
 * is what import reads. */
#include <errno.h>

#include "tests/fuzz/fuzz.h"
#include "snapshot/oci.h"

static bool str_equal(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool desc_equal(const struct snap_oci_desc *a, const struct snap_oci_desc *b)
{
        return str_equal(a->media_type, b->media_type) &&
               snap_digest_equal(&a->digest, &b->digest) && a->size == b->size &&
               str_equal(a->artifact_type, b->artifact_type) && str_equal(a->title, b->title) &&
               str_equal(a->ref_name, b->ref_name);
}

static void check_manifest(const uint8_t *data, size_t size)
{
        struct snap_oci_manifest *m = NULL, *again = NULL;
        char *json = NULL;
        size_t len;
        int r;

        r = snap_oci_manifest_parse(data, size, &m);
        FZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -ENOMEM);
        if (r < 0)
                return;
        FZ_CHECK(m->config.media_type && snap_oci_media_type_valid(m->config.media_type));
        FZ_CHECK(m->n_layers <= SNAP_OCI_ENTRIES_MAX);
        /* The builder drops annotations other than the title and every ref name it is
         * given, so the comparison is of what it writes. */
        for (size_t i = 0; i < m->n_layers; i++)
                FZ_CHECK(m->layers[i].size <= SNAP_OCI_BLOB_MAX);
        r = snap_oci_manifest_build(m, &json, &len);
        FZ_CHECK(r == 0 || r == -ENOMEM);
        if (r == 0) {
                FZ_CHECK(snap_oci_manifest_parse(json, len, &again) == 0);
                FZ_CHECK(str_equal(m->artifact_type, again->artifact_type));
                FZ_CHECK(desc_equal(&m->config, &again->config));
                FZ_CHECK(m->n_layers == again->n_layers);
                for (size_t i = 0; i < m->n_layers; i++)
                        FZ_CHECK(desc_equal(&m->layers[i], &again->layers[i]));
                FZ_CHECK(m->has_subject == again->has_subject);
                if (m->has_subject)
                        FZ_CHECK(desc_equal(&m->subject, &again->subject));
        }
        snap_oci_manifest_free(again);
        snap_oci_manifest_free(m);
        free(json);
}

static void check_index(const uint8_t *data, size_t size)
{
        struct snap_oci_index *ix = NULL;
        int r = snap_oci_index_parse(data, size, &ix);

        FZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -ENOMEM);
        if (r == 0) {
                FZ_CHECK(ix->n_manifests <= SNAP_OCI_ENTRIES_MAX);
                for (size_t i = 0; i < ix->n_manifests; i++)
                        FZ_CHECK(snap_oci_media_type_valid(ix->manifests[i].media_type));
        }
        snap_oci_index_free(ix);
}

static void check_envelope(const uint8_t *data, size_t size)
{
        struct snap_oci_envelope e;
        int r = snap_oci_envelope_parse(data, size, &e);

        FZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -ENOMEM);
        if (r == 0)
                FZ_CHECK(e.manifest_size <= SNAP_OCI_DOC_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        switch (data[0] % 3) {
        case 0:
                check_manifest(data + 1, size - 1);
                break;
        case 1:
                check_index(data + 1, size - 1);
                break;
        default:
                check_envelope(data + 1, size - 1);
                break;
        }
        return 0;
}
