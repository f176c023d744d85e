/* SPDX-License-Identifier: MIT */
/* Strict JSON for OCI documents (oci-json.h) and the descriptor vocabulary (oci-desc.h). */
#include "snapshot/oci-json.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define DEPTH_MAX 32

/* Duplicate keys. json-c keeps the last value of a key given twice, where another reader
 * keeps the first or refuses: {"op":"scope-list","op":"scope-remove"} would be two requests
 * to two readers. json-c says nothing, so the lexical pass counts the members of each object
 * (its ':' outside strings), in the order the objects open, and the parsed tree, walked in
 * the same order, must have as many keys in each: a duplicate is one key fewer in the first
 * object that holds one (every object before it in that order is parsed as written). */
struct members {
        uint32_t *count;   /* members of the n-th object to open */
        size_t n, cap;
        size_t stack[DEPTH_MAX + 1]; /* open containers: object index + 1, or 0 for an array */
        size_t depth;
};

static int members_see(struct members *m, unsigned char c)
{
        if (c == '{' || c == '[') {
                if (m->depth > DEPTH_MAX)
                        return -EINVAL; /* the parser refuses it too */
                if (c == '[') {
                        m->stack[m->depth++] = 0;
                        return 0;
                }
                if (m->n == m->cap) {
                        size_t cap = m->cap ? 2 * m->cap : 16;
                        uint32_t *v = realloc(m->count, cap * sizeof(*v));
                        if (!v)
                                return -ENOMEM;
                        m->count = v;
                        m->cap = cap;
                }
                m->count[m->n] = 0;
                m->stack[m->depth++] = ++m->n;
        } else if (c == '}' || c == ']') {
                if (m->depth == 0)
                        return -EINVAL;
                m->depth--;
        } else if (m->depth && m->stack[m->depth - 1]) {
                m->count[m->stack[m->depth - 1] - 1]++;
        }
        return 0;
}

/* Walks o in the order its objects opened: false at the first object with fewer keys than
 * members written. */
static bool members_match(json_object *o, const struct members *m, size_t *next)
{
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if (!members_match(json_object_array_get_idx(o, i), m, next))
                                return false;
                return true;
        }
        if (!json_object_is_type(o, json_type_object))
                return true;
        if (*next >= m->n || (size_t)json_object_object_length(o) != m->count[(*next)++])
                return false;
        json_object_object_foreach(o, key, val) {
                (void)key;
                if (!members_match(val, m, next))
                        return false;
        }
        return true;
}

/* What json-c's strict mode (0.16) still lets through: single-quoted strings, bare words such
 * as NaN or Infinity, and raw control bytes inside strings. Another reader of the same signed
 * bytes (skopeo, a registry) refuses them or reads them otherwise, and a document two readers
 * read differently can name different layers to each. So this pass refuses them first: 0,
 * or -EINVAL. Strings are skipped with their escapes; outside them, the only words are true,
 * false and null. */
static int rfc8259_lexically(const char *p, size_t len, struct members *m)
{
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)p[i];
                if (c == '{' || c == '[' || c == '}' || c == ']' || c == ':') {
                        if (members_see(m, c) < 0)
                                return -EINVAL;
                } else if (c == '"') {
                        for (i++; i < len && p[i] != '"'; i++) {
                                if ((unsigned char)p[i] < 0x20)
                                        return -EINVAL;
                                if (p[i] == '\\')
                                        i++;
                        }
                } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                        size_t n = 0;
                        while (i + n < len && ((p[i + n] >= 'a' && p[i + n] <= 'z') ||
                                               (p[i + n] >= 'A' && p[i + n] <= 'Z')))
                                n++;
                        /* An exponent's e/E belongs to a number: a digit came before it. */
                        if (n == 1 && (c == 'e' || c == 'E') && i > 0 && p[i - 1] >= '0' &&
                            p[i - 1] <= '9') {
                                continue;
                        }
                        if (!(n == 4 && memcmp(p + i, "true", 4) == 0) &&
                            !(n == 5 && memcmp(p + i, "false", 5) == 0) &&
                            !(n == 4 && memcmp(p + i, "null", 4) == 0))
                                return -EINVAL;
                        i += n - 1;
                } else if (c == '\'') {
                        return -EINVAL;
                }
        }
        return 0;
}

int oci_json_parse(const void *buf, size_t len, json_object **out)
{
        return oci_json_parse_max(buf, len, SNAP_OCI_DOC_MAX, out);
}

int oci_json_parse_max(const void *buf, size_t len, size_t max, json_object **out)
{
        struct members m = { 0 };
        json_tokener *tok;
        json_object *root;
        const char *p = buf;
        size_t end, next = 0;
        int r;

        if (!buf)
                return -EINVAL;
        if (len > max || len > INT32_MAX)
                return -EFBIG;
        if (len == 0)
                return -EINVAL;
        r = rfc8259_lexically(p, len, &m);
        if (r < 0) {
                free(m.count);
                return r;
        }
        tok = json_tokener_new_ex(DEPTH_MAX);
        if (!tok) {
                free(m.count);
                return -ENOMEM;
        }
        /* Strict: no comments or trailing commas that another reader of the same bytes
         * (skopeo, a registry) would refuse or read otherwise; invalid UTF-8 refused. What
         * strict mode misses, rfc8259_lexically refused above. */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        root = json_tokener_parse_ex(tok, p, (int)len);
        end = root ? json_tokener_get_parse_end(tok) : 0;
        json_tokener_free(tok);
        if (!root) {
                free(m.count);
                return -EINVAL;
        }
        /* Trailing bytes: a second document behind the first is ambiguous. */
        for (; end < len; end++)
                if (p[end] != ' ' && p[end] != '\n' && p[end] != '\r' && p[end] != '\t') {
                        json_object_put(root);
                        free(m.count);
                        return -EINVAL;
                }
        if (!json_object_is_type(root, json_type_object) || !members_match(root, &m, &next) ||
            next != m.n) {
                json_object_put(root);
                free(m.count);
                return -EINVAL;
        }
        free(m.count);
        *out = root;
        return 0;
}

int oci_json_add(json_object *obj, const char *key, json_object *o)
{
        if (!o)
                return -ENOMEM;
        if (json_object_object_add(obj, key, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        return 0;
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

static int desc_parse(json_object *o, struct snap_oci_desc *d)
{
        json_object *v;
        const char *s;
        int64_t size;
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
        /* An integer in JSON, not 4.0 or "4"; json-c keeps past-int64 values as uint64 and
         * clamps them here, which the bound then refuses. */
        if (!json_object_object_get_ex(o, "size", &v) || !json_object_is_type(v, json_type_int))
                return -EINVAL;
        size = json_object_get_int64(v);
        if (size < 0 || (uint64_t)size > SNAP_OCI_BLOB_MAX)
                return -EINVAL;
        d->size = (uint64_t)size;
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
