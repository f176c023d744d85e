/* SPDX-License-Identifier: MIT */
/* Strict JSON for OCI documents (oci-json.h) and the descriptor vocabulary (oci-desc.h). */
#include "snapshot/oci-json.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"

int oci_json_parse(const void *buf, size_t len, json_object **out)
{
        return json_parse_strict(buf, len, SNAP_OCI_DOC_MAX, out);
}

int oci_json_add(json_object *obj, const char *key, json_object *o)
{
        return json_add(obj, key, o);
}

/* A string value without an embedded NUL (json-c keeps "\u0000"; C would cut it short and
 * two readers would see two names), at most max bytes. */
static const char *plain_string(json_object *v, size_t max)
{
        const char *s;
        size_t n;

        if (!json_object_is_type(v, json_type_string))
                return NULL;
        s = json_object_get_string(v);
        n = (size_t)json_object_get_string_len(v);
        if (n > max || strlen(s) != n)
                return NULL;
        return s;
}

int oci_json_opt_string(json_object *obj, const char *key, size_t max, char **out)
{
        json_object *v;
        const char *s;

        *out = NULL;
        if (!json_object_object_get_ex(obj, key, &v))
                return 0;
        s = plain_string(v, max);
        if (!s)
                return -EINVAL;
        *out = strdup(s);
        return *out ? 0 : -ENOMEM;
}

int oci_json_opt_type(json_object *obj, const char *key, char **out)
{
        int r = oci_json_opt_string(obj, key, SNAP_OCI_TYPE_MAX, out);

        if (r == 0 && *out && !snap_oci_media_type_valid(*out)) {
                free(*out);
                *out = NULL;
                return -EINVAL;
        }
        return r;
}

int oci_json_check_annotations(json_object *ann, struct snap_oci_desc *d)
{
        if (!json_object_is_type(ann, json_type_object))
                return -EINVAL;
        json_object_object_foreach(ann, key, val) {
                const char *s = plain_string(val, SNAP_OCI_ANNOTATION_MAX);
                char **dst = NULL;

                if (!s)
                        return -EINVAL;
                if (!d)
                        continue;
                if (!strcmp(key, SNAP_OCI_ANNOTATION_TITLE))
                        dst = &d->title;
                else if (!strcmp(key, SNAP_OCI_ANNOTATION_REF_NAME))
                        dst = &d->ref_name;
                else if (!strcmp(key, SNAP_OCI_ANNOTATION_CREATED))
                        dst = &d->created;
                else if (!strcmp(key, SNAP_OCI_ANNOTATION_HOLDERS))
                        dst = &d->holders;
                if (dst) {
                        free(*dst);
                        *dst = strdup(s);
                        if (!*dst)
                                return -ENOMEM;
                }
        }
        return 0;
}

int oci_json_size(json_object *obj, const char *key, uint64_t max, uint64_t *out)
{
        json_object *v;
        int64_t size;

        /* An integer in JSON, not 4.0 or "4"; json-c keeps past-int64 values as uint64 and
         * clamps them here, which the bound then refuses. */
        if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
                return -EINVAL;
        size = json_object_get_int64(v);
        if (size < 0 || (uint64_t)size > max)
                return -EINVAL;
        *out = (uint64_t)size;
        return 0;
}

static int desc_parse(json_object *o, struct snap_oci_desc *d)
{
        json_object *v;
        const char *s;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
        if (!json_object_object_get_ex(o, "mediaType", &v))
                return -EINVAL;
        if ((r = oci_json_opt_type(o, "mediaType", &d->media_type)) < 0)
                return r;
        if (!json_object_object_get_ex(o, "digest", &v) || !(s = plain_string(v, 128)))
                return -EINVAL;
        if ((r = snap_oci_digest_parse(s, strlen(s), &d->digest)) < 0)
                return r;
        if ((r = oci_json_size(o, "size", SNAP_OCI_BLOB_MAX, &d->size)) < 0)
                return r;
        if ((r = oci_json_opt_type(o, "artifactType", &d->artifact_type)) < 0)
                return r;
        if (json_object_object_get_ex(o, "annotations", &v) &&
            (r = oci_json_check_annotations(v, d)) < 0)
                return r;
        return 0;
}

int oci_json_desc_parse(json_object *o, struct snap_oci_desc *d)
{
        int r;

        *d = (struct snap_oci_desc){ 0 };
        r = desc_parse(o, d);
        if (r < 0)
                snap_oci_desc_clear(d);
        return r;
}

/* The annotations a descriptor keeps, in the order they are written. */
static const struct {
        const char *key;
        size_t offset;
} annotations[] = {
        { SNAP_OCI_ANNOTATION_TITLE, offsetof(struct snap_oci_desc, title) },
        { SNAP_OCI_ANNOTATION_REF_NAME, offsetof(struct snap_oci_desc, ref_name) },
        { SNAP_OCI_ANNOTATION_CREATED, offsetof(struct snap_oci_desc, created) },
        { SNAP_OCI_ANNOTATION_HOLDERS, offsetof(struct snap_oci_desc, holders) },
};

int oci_json_desc_new(const struct snap_oci_desc *d, json_object **out)
{
        char digest[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        json_object *o, *ann = NULL;
        bool has_annotations = false;
        int r;

        if (!d->media_type || !snap_oci_media_type_valid(d->media_type) ||
            (d->artifact_type && !snap_oci_media_type_valid(d->artifact_type)) ||
            d->size > SNAP_OCI_BLOB_MAX)
                return -EINVAL;
        for (size_t i = 0; i < ARRAY_SIZE(annotations); i++) {
                const char *v = *(char *const *)((const char *)d + annotations[i].offset);
                if (v && strlen(v) > SNAP_OCI_ANNOTATION_MAX)
                        return -EINVAL;
                has_annotations |= v != NULL;
        }
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        snap_oci_digest_format(&d->digest, digest);
        if ((r = oci_json_add(o, "mediaType", json_object_new_string(d->media_type))) < 0 ||
            (r = oci_json_add(o, "digest", json_object_new_string(digest))) < 0 ||
            (r = oci_json_add(o, "size", json_object_new_int64((int64_t)d->size))) < 0 ||
            (d->artifact_type &&
             (r = oci_json_add(o, "artifactType", json_object_new_string(d->artifact_type))) < 0))
                goto fail;
        if (has_annotations) {
                ann = json_object_new_object();
                if ((r = oci_json_add(o, "annotations", ann)) < 0)
                        goto fail;
                for (size_t i = 0; i < ARRAY_SIZE(annotations); i++) {
                        const char *v = *(char *const *)((const char *)d + annotations[i].offset);
                        if (v && (r = oci_json_add(ann, annotations[i].key,
                                                   json_object_new_string(v))) < 0)
                                goto fail;
                }
        }
        *out = o;
        return 0;
fail:
        json_object_put(o);
        return r;
}

void snap_oci_desc_clear(struct snap_oci_desc *d)
{
        if (!d)
                return;
        free(d->media_type);
        free(d->artifact_type);
        free(d->title);
        free(d->ref_name);
        free(d->created);
        free(d->holders);
        *d = (struct snap_oci_desc){ 0 };
}

int snap_oci_digest_parse(const char *s, size_t len, struct snap_digest *out)
{
        /* sha256 only: another algorithm would need another hash to check the blob, and a
         * blob we cannot check is a blob we must not serve. */
        if (!s || len != SNAP_OCI_DIGEST_TEXT_LEN || memcmp(s, "sha256:", 7) != 0)
                return -EINVAL;
        return snap_digest_from_hex(s + 7, len - 7, out);
}

void snap_oci_digest_format(const struct snap_digest *d, char out[SNAP_OCI_DIGEST_TEXT_LEN + 1])
{
        memcpy(out, "sha256:", 7);
        snap_digest_to_hex(d, out + 7);
}

static bool alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool restricted_char(char c)
{
        return alnum(c) || (c && strchr("!#$&^_.+-", c) != NULL);
}

bool snap_oci_media_type_valid(const char *s)
{
        size_t n, slash = 0, seen = 0;

        if (!s)
                return false;
        n = strlen(s);
        if (n == 0 || n > SNAP_OCI_TYPE_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '/') {
                        if (seen++ || i == 0 || i + 1 == n)
                                return false;
                        slash = i;
                        continue;
                }
                if (!restricted_char(s[i]))
                        return false;
        }
        /* RFC 6838: each part begins with a letter or digit. */
        return seen == 1 && alnum(s[0]) && alnum(s[slash + 1]);
}
