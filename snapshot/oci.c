/* SPDX-License-Identifier: MIT */
/* The OCI image layout: oci-layout, index.json and blobs written atomically and durably,
 * read with bounds, and the manifests and index that name snapshots (oci.h). */
#include "snapshot/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "snapshot/oci-json.h"
#include "snapshot/safeopen.h"
#include "common/json.h"
#include "common/util.h"

#define LAYOUT_FILE "oci-layout"
#define INDEX_FILE "index.json"
#define LAYOUT_VERSION "1.0.0"
#define READ_CHUNK (64u * 1024u)

/* sha256("{}"): the empty config blob every artifact manifest points to. */
static const char empty_blob[] = "{}";
static const struct snap_digest empty_digest = { {
        0x44, 0x13, 0x6f, 0xa3, 0x55, 0xb3, 0x67, 0x8a, 0x11, 0x46, 0xad, 0x16, 0xf7, 0xe8, 0x64, 0x9e,
        0x94, 0xfb, 0x4f, 0xc2, 0x1f, 0xe7, 0x7e, 0x83, 0x10, 0xc0, 0x60, 0xf6, 0x1c, 0xaa, 0xff, 0x8a,
} };

static void layoutp(struct snap_oci_layout *l)
{
        snap_oci_layout_close(l);
}

void snap_oci_layout_close(struct snap_oci_layout *l)
{
        if (!l)
                return;
        l->dirfd = safe_close(l->dirfd);
        l->blobsfd = safe_close(l->blobsfd);
}

/* Opens (and with create makes) the directory name below dirfd. O_NOFOLLOW|O_DIRECTORY: a
 * symlink planted for blobs/ or sha256/ would send every write to a directory of the
 * attacker's choosing; here it fails with ELOOP/ENOTDIR instead. */
static int open_subdir(int dirfd, const char *name, bool create, mode_t mode, bool *made)
{
        int fd;

        for (;;) {
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 || errno != ENOENT || !create)
                        break;
                if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                if (made)
                        *made = true;
        }
        if (fd < 0 && errno == ENOTDIR) {
                struct stat st;
                /* Say which: a symlink (-ELOOP) or a file where a directory belongs. */
                if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                        return -ELOOP;
                return -EINVAL;
        }
        return fd < 0 ? negative_errno() : fd;
}

static int fsync_dir(int dirfd)
{
        return fsync(dirfd) < 0 ? negative_errno() : 0;
}

static int write_atomic(int dirfd, const char *name, const void *buf, size_t len,
                        mode_t mode);

static mode_t file_mode(const struct snap_oci_layout *l)
{
        return l->private_files ? 0600 : 0644;
}

static int check_layout_file(int dirfd, bool create, mode_t mode)
{
        static const char text[] = "{\"imageLayoutVersion\":\"" LAYOUT_VERSION "\"}";
        _cleanup_free_ void *buf = NULL;
        json_object *root, *v;
        size_t len;
        int r;

        r = snap_read_untrusted(dirfd, LAYOUT_FILE, 4096, &buf, &len);
        if (r == -ENOENT && create)
                return write_atomic(dirfd, LAYOUT_FILE, text, sizeof(text) - 1, mode);
        if (r < 0)
                return r == -EFBIG ? -EINVAL : r;
        r = oci_json_parse(buf, len, &root);
        if (r < 0)
                return r;
        r = -EINVAL;
        if (json_object_object_get_ex(root, "imageLayoutVersion", &v) &&
            json_object_is_type(v, json_type_string) &&
            strcmp(json_object_get_string(v), LAYOUT_VERSION) == 0)
                r = 0;
        json_object_put(root);
        return r;
}

int snap_oci_layout_open(const char *path, unsigned flags, struct snap_oci_layout *out)
{
        _cleanup_(layoutp) struct snap_oci_layout l = SNAP_OCI_LAYOUT_INIT;
        bool create = flags & SNAP_OCI_CREATE;
        mode_t dir_mode = flags & SNAP_OCI_PRIVATE ? 0700 : 0755;
        _cleanup_close_ int blobs = -1;
        bool made = false;
        int r;

        if (!path || !*path || !out)
                return -EINVAL;
        l.private_files = flags & SNAP_OCI_PRIVATE;
        l.dirfd = open_subdir(AT_FDCWD, path, create, dir_mode, NULL);
        if (l.dirfd < 0)
                return l.dirfd;
        r = check_layout_file(l.dirfd, create, file_mode(&l));
        if (r < 0)
                return r;
        blobs = open_subdir(l.dirfd, "blobs", create, dir_mode, &made);
        if (blobs < 0)
                return blobs;
        l.blobsfd = open_subdir(blobs, "sha256", create, dir_mode, &made);
        if (l.blobsfd < 0)
                return l.blobsfd;
        /* A directory made now must survive a crash as its parent's entry too. */
        if (made && ((r = fsync_dir(blobs)) < 0 || (r = fsync_dir(l.dirfd)) < 0))
                return r;
        *out = l;
        l.dirfd = l.blobsfd = -1;
        return 0;
}

int snap_oci_write_atomic(int dirfd, const char *name, const void *buf, size_t len)
{
        return write_atomic(dirfd, name, buf, len, 0644);
}

int snap_oci_write_private(int dirfd, const char *name, const void *buf, size_t len)
{
        return write_atomic(dirfd, name, buf, len, 0600);
}

static int write_atomic(int dirfd, const char *name, const void *buf, size_t len, mode_t mode)
{
        char tmp[NAME_MAX + 1];
        uint64_t rnd;
        int fd, r;

        if (strlen(name) > NAME_MAX - 32)
                return -ENAMETOOLONG;
        if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return -EIO;
        /* A name of its own per writer: two writers never share a temporary file, and
         * O_EXCL|O_NOFOLLOW refuses whatever someone placed under that name. */
        snprintf(tmp, sizeof(tmp), ".tmp-%s-%016" PRIx64, name, rnd);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return negative_errno();
        r = loop_write(fd, buf, len);
        if (r == 0 && fsync(fd) < 0)
                r = negative_errno();
        if (close(fd) < 0 && r == 0)
                r = negative_errno();
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = negative_errno();
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return r;
        }
        /* The rename is durable only once the directory is. */
        return fsync_dir(dirfd);
}

int snap_oci_blob_write(const struct snap_oci_layout *l, const void *buf, size_t len,
                        struct snap_digest *digest)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_digest d;
        int r;

        if (!l || (!buf && len > 0))
                return -EINVAL;
        r = snap_sha256(buf, len, &d);
        if (r < 0)
                return r;
        if (digest)
                *digest = d;
        if (snap_oci_blob_verify(l, &d, len) == 0)
                return 1;
        snap_digest_to_hex(&d, hex);
        /* The rename replaces a corrupt blob or a symlink planted under its name (rename
         * never follows the target). */
        r = write_atomic(l->blobsfd, hex, buf, len, file_mode(l));
        return r < 0 ? r : 0;
}

int snap_oci_blob_open(const struct snap_oci_layout *l, const struct snap_digest *d,
                       uint64_t size)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct stat st;
        int fd;

        if (!l || !d)
                return -EINVAL;
        snap_digest_to_hex(d, hex);
        /* Symlinks refused: a blob linked to /etc/shadow or to another user's file must not
         * be read into a snapshot. Bigger than announced: a mismatch, never read. */
        fd = snap_open_untrusted(l->blobsfd, hex, size, &st);
        if (fd == -EFBIG)
                return -EBADMSG;
        if (fd < 0)
                return fd;
        if ((uint64_t)st.st_size != size) {
                safe_close(fd);
                return -EBADMSG;
        }
        return fd;
}

int snap_oci_hash_fd(int fd, uint64_t size, uint8_t *buf, const struct snap_digest *want)
{
        struct snap_hasher *h = NULL;
        uint8_t chunk[READ_CHUNK];
        struct snap_digest got;
        uint64_t have = 0;
        int r;

        r = snap_hasher_new(&h);
        if (r < 0)
                return r;
        for (;;) {
                uint64_t room = size - have + 1; /* one byte past size says "too long" */
                uint8_t *dst = buf && have < size ? buf + have : chunk;
                size_t n = room < READ_CHUNK ? (size_t)room : READ_CHUNK;
                ssize_t k;

                if (buf && have < size && n > size - have)
                        n = (size_t)(size - have);
                if (n == 0)
                        n = 1, dst = chunk;
                k = pread(fd, dst, n, (off_t)have);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = negative_errno();
                        goto out;
                }
                if (k == 0)
                        break;
                have += (uint64_t)k;
                if (have > size) {
                        r = -EBADMSG;
                        goto out;
                }
                r = snap_hasher_update(h, dst, (size_t)k);
                if (r < 0)
                        goto out;
        }
        r = snap_hasher_final(h, &got);
        if (r == 0 && (have != size || !snap_digest_equal(&got, want)))
                r = -EBADMSG;
out:
        snap_hasher_free(h);
        return r;
}

int snap_oci_blob_verify(const struct snap_oci_layout *l, const struct snap_digest *d,
                         uint64_t size)
{
        _cleanup_close_ int fd = snap_oci_blob_open(l, d, size);

        if (fd < 0)
                return fd;
        return snap_oci_hash_fd(fd, size, NULL, d);
}

int snap_oci_blob_read(const struct snap_oci_layout *l, const struct snap_digest *d,
                       uint64_t size, uint64_t limit, void **buf)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ uint8_t *data = NULL;
        int r;

        if (size > limit || size > SIZE_MAX - 1)
                return -EFBIG;
        fd = snap_oci_blob_open(l, d, size);
        if (fd < 0)
                return fd;
        data = malloc(size ? (size_t)size : 1);
        if (!data)
                return -ENOMEM;
        r = snap_oci_hash_fd(fd, size, data, d);
        if (r < 0)
                return r;
        *buf = TAKE_PTR(data);
        return 0;
}

int snap_oci_blob_remove(const struct snap_oci_layout *l, const struct snap_digest *d)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        snap_digest_to_hex(d, hex);
        if (unlinkat(l->blobsfd, hex, 0) < 0)
                return negative_errno();
        return fsync_dir(l->blobsfd);
}

void snap_oci_desc_empty_config(struct snap_oci_desc *d)
{
        *d = (struct snap_oci_desc){
                .media_type = (char *)SNAP_OCI_MEDIA_EMPTY,
                .digest = empty_digest,
                .size = sizeof(empty_blob) - 1,
        };
}


void snap_oci_manifest_free(struct snap_oci_manifest *m)
{
        if (!m)
                return;
        free(m->artifact_type);
        snap_oci_desc_clear(&m->config);
        for (size_t i = 0; i < m->n_layers; i++)
                snap_oci_desc_clear(&m->layers[i]);
        free(m->layers);
        snap_oci_desc_clear(&m->subject);
        free(m);
}

void snap_oci_index_free(struct snap_oci_index *ix)
{
        if (!ix)
                return;
        for (size_t i = 0; i < ix->n_manifests; i++)
                snap_oci_desc_clear(&ix->manifests[i]);
        free(ix->manifests);
        free(ix);
}

static void manifestp(struct snap_oci_manifest **m)
{
        snap_oci_manifest_free(*m);
}

static void indexp(struct snap_oci_index **ix)
{
        snap_oci_index_free(*ix);
}

/* A new document of media_type holding arr under key (arr taken, even on failure):
 * schemaVersion 2, mediaType, artifactType when not NULL, then key, the order of every
 * document this file writes. 0 and *out, or -ENOMEM. */
static int doc_new(const char *media_type, const char *artifact_type, const char *key,
                   json_object *arr, json_object **out)
{
        _cleanup_json_ json_object *root = json_object_new_object();

        if (!root || !arr ||
            json_object_object_add(root, "schemaVersion", json_object_new_int(2)) < 0 ||
            json_object_object_add(root, "mediaType", json_object_new_string(media_type)) < 0 ||
            (artifact_type &&
             json_object_object_add(root, "artifactType",
                                    json_object_new_string(artifact_type)) < 0) ||
            json_object_object_add(root, key, arr) < 0) {
                json_object_put(arr);
                return -ENOMEM;
        }
        *out = TAKE_PTR(root);
        return 0;
}

/* root as a document's text (json-c's, kept until root changes): 0, *text and *n, or -ENOMEM,
 * or -EFBIG past what any reader (this one included) takes: written, it could never be read
 * back. */
static int doc_text(json_object *root, const char **text, size_t *n)
{
        *text = json_object_to_json_string_length(
                root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, n);
        if (!*text)
                return -ENOMEM;
        if (*n > SNAP_OCI_DOC_MAX)
                return -EFBIG;
        return 0;
}

int snap_oci_manifest_build(const struct snap_oci_manifest *m, char **json, size_t *len)
{
        _cleanup_json_ json_object *root = NULL;
        json_object *layers, *o;
        const char *text;
        size_t n;
        int r;

        if (!m || !json || !len || m->n_layers > SNAP_OCI_ENTRIES_MAX ||
            (m->artifact_type && !snap_oci_media_type_valid(m->artifact_type)))
                return -EINVAL;
        layers = json_object_new_array_ext((int)m->n_layers);
        r = doc_new(SNAP_OCI_MEDIA_MANIFEST, m->artifact_type, "layers", layers, &root);
        if (r < 0)
                return r;
        r = oci_json_desc_new(&m->config, &o);
        if (r < 0 || (r = oci_json_add(root, "config", o)) < 0)
                return r;
        for (size_t i = 0; i < m->n_layers; i++) {
                r = oci_json_desc_new(&m->layers[i], &o);
                if (r < 0)
                        return r;
                if (json_object_array_add(layers, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
        }
        if (m->has_subject) {
                r = oci_json_desc_new(&m->subject, &o);
                if (r < 0 || (r = oci_json_add(root, "subject", o)) < 0)
                        return r;
        }
        r = doc_text(root, &text, &n);
        if (r < 0)
                return r;
        *json = strndup(text, n);
        if (!*json)
                return -ENOMEM;
        *len = n;
        return 0;
}

/* Checks the optional "mediaType" of a document against want. */
static int check_doc_media_type(json_object *root, const char *want)
{
        json_object *v;

        if (!json_object_object_get_ex(root, "mediaType", &v))
                return 0;
        if (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), want))
                return -EINVAL;
        return 0;
}

static int check_schema_version(json_object *root)
{
        json_object *v;

        if (!json_object_object_get_ex(root, "schemaVersion", &v) ||
            !json_object_is_type(v, json_type_int) || json_object_get_int64(v) != 2)
                return -EINVAL;
        return 0;
}

/* Parses a manifest or an index: one JSON object, schemaVersion 2, mediaType absent or
 * media_type, annotations (when there) strings only. */
static int parse_doc(const void *buf, size_t len, const char *media_type, json_object **out)
{
        _cleanup_json_ json_object *root = NULL;
        json_object *v;
        int r;

        r = oci_json_parse(buf, len, &root);
        if (r < 0)
                return r;
        if ((r = check_schema_version(root)) < 0 || (r = check_doc_media_type(root, media_type)) < 0)
                return r;
        if (json_object_object_get_ex(root, "annotations", &v) &&
            (r = oci_json_check_annotations(v, NULL)) < 0)
                return r;
        *out = TAKE_PTR(root);
        return 0;
}

/* The array under key (required): each element parsed as a descriptor into *out. */
static int parse_desc_array(json_object *root, const char *key, struct snap_oci_desc **out,
                            size_t *n)
{
        json_object *arr;
        size_t count;

        if (!json_object_object_get_ex(root, key, &arr) ||
            !json_object_is_type(arr, json_type_array))
                return -EINVAL;
        count = json_object_array_length(arr);
        if (count > SNAP_OCI_ENTRIES_MAX)
                return -EINVAL;
        *out = calloc(count ? count : 1, sizeof(**out));
        if (!*out)
                return -ENOMEM;
        *n = 0;
        for (size_t i = 0; i < count; i++) {
                int r = oci_json_desc_parse(json_object_array_get_idx(arr, i), &(*out)[i]);
                if (r < 0)
                        return r;
                *n = i + 1;
        }
        return 0;
}

/* A manifest or an index (parse_doc's checks) into a new zeroed struct of size bytes that fill
 * completes from the JSON: 0 and *out, or -EINVAL (out NULL, or what the checks and fill
 * refuse), -EFBIG, -ENOMEM; done frees what fill left of a doc it refused. */
static int parse_doc_into(const void *buf, size_t len, const char *media_type, size_t size,
                          int (*fill)(json_object *root, void *doc), void (*done)(void *doc),
                          void **out)
{
        _cleanup_json_ json_object *root = NULL;
        void *doc;
        int r;

        if (!out)
                return -EINVAL;
        r = parse_doc(buf, len, media_type, &root);
        if (r < 0)
                return r;
        doc = calloc(1, size);
        if (!doc)
                return -ENOMEM;
        r = fill(root, doc);
        if (r < 0)
                done(doc);
        else
                *out = doc;
        return r;
}

static int manifest_fill(json_object *root, void *doc)
{
        struct snap_oci_manifest *m = doc;
        json_object *v;
        int r;

        r = oci_json_opt_type(root, "artifactType", &m->artifact_type);
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(root, "config", &v))
                return -EINVAL;
        r = oci_json_desc_parse(v, &m->config);
        if (r < 0)
                return r;
        r = parse_desc_array(root, "layers", &m->layers, &m->n_layers);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(root, "subject", &v)) {
                r = oci_json_desc_parse(v, &m->subject);
                if (r < 0)
                        return r;
                m->has_subject = true;
        }
        return 0;
}

static void manifest_done(void *doc)
{
        snap_oci_manifest_free(doc);
}

int snap_oci_manifest_parse(const void *buf, size_t len, struct snap_oci_manifest **out)
{
        return parse_doc_into(buf, len, SNAP_OCI_MEDIA_MANIFEST, sizeof(**out), manifest_fill,
                              manifest_done, (void **)out);
}

static int index_fill(json_object *root, void *doc)
{
        struct snap_oci_index *ix = doc;

        return parse_desc_array(root, "manifests", &ix->manifests, &ix->n_manifests);
}

static void index_done(void *doc)
{
        snap_oci_index_free(doc);
}

int snap_oci_index_parse(const void *buf, size_t len, struct snap_oci_index **out)
{
        return parse_doc_into(buf, len, SNAP_OCI_MEDIA_INDEX, sizeof(**out), index_fill,
                              index_done, (void **)out);
}

/* index.json's bytes: 0 and *buf, *len; 1 when there is none yet. */
static int read_index_file(const struct snap_oci_layout *l, void **buf, size_t *len)
{
        int r = snap_read_untrusted(l->dirfd, INDEX_FILE, SNAP_OCI_DOC_MAX, buf, len);
        return r == -ENOENT ? 1 : r;
}

int snap_oci_index_read(const struct snap_oci_layout *l, struct snap_oci_index **out)
{
        _cleanup_free_ void *buf = NULL;
        size_t len;
        int r;

        if (!l || !out)
                return -EINVAL;
        r = read_index_file(l, &buf, &len);
        if (r < 0)
                return r;
        if (r == 1) {
                *out = calloc(1, sizeof(**out));
                return *out ? 0 : -ENOMEM;
        }
        return snap_oci_index_parse(buf, len, out);
}

int snap_oci_manifest_write(const struct snap_oci_layout *l, const struct snap_oci_manifest *m,
                            struct snap_oci_desc *out)
{
        _cleanup_free_ char *json = NULL;
        struct snap_digest d;
        size_t len;
        int r;

        if (!l || !m)
                return -EINVAL;
        if (snap_digest_equal(&m->config.digest, &empty_digest) &&
            (r = snap_oci_blob_write(l, empty_blob, sizeof(empty_blob) - 1, NULL)) < 0)
                return r;
        r = snap_oci_manifest_build(m, &json, &len);
        if (r < 0)
                return r;
        r = snap_oci_blob_write(l, json, len, &d);
        if (r < 0)
                return r;
        if (out)
                *out = (struct snap_oci_desc){
                        .media_type = (char *)SNAP_OCI_MEDIA_MANIFEST,
                        .digest = d,
                        .size = len,
                        .artifact_type = m->artifact_type,
                };
        return 0;
}

int snap_oci_manifest_load(const struct snap_oci_layout *l, const struct snap_oci_desc *desc,
                           struct snap_oci_manifest **out)
{
        _cleanup_free_ void *buf = NULL;
        int r;

        if (!l || !desc || !out)
                return -EINVAL;
        r = snap_oci_blob_read(l, &desc->digest, desc->size, SNAP_OCI_DOC_MAX, &buf);
        if (r < 0)
                return r;
        return snap_oci_manifest_parse(buf, desc->size, out);
}

bool snap_oci_tag_valid(const char *s)
{
        size_t n;

        if (!s || !*s)
                return false;
        n = strlen(s);
        if (n > SNAP_OCI_TAG_MAX || s[0] == '.' || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-'))
                        return false;
        }
        return true;
}

/* True when the index.json entry e carries the ref name tag. */
static bool entry_has_tag(json_object *e, const char *tag)
{
        json_object *ann, *v;

        return json_object_object_get_ex(e, "annotations", &ann) &&
               json_object_is_type(ann, json_type_object) &&
               json_object_object_get_ex(ann, SNAP_OCI_ANNOTATION_REF_NAME, &v) &&
               json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), tag);
}

static int tag_locked(const struct snap_oci_layout *l, const struct snap_oci_desc *desc,
                      const char *tag)
{
        _cleanup_json_ json_object *old = NULL, *root = NULL;
        _cleanup_(indexp) struct snap_oci_index *check = NULL;
        _cleanup_free_ void *buf = NULL;
        struct snap_oci_desc entry = *desc;
        json_object *list, *arr = NULL, *o;
        const char *text;
        size_t len;
        int r;

        r = read_index_file(l, &buf, &len);
        if (r < 0)
                return r;
        if (r == 0) {
                /* Strictly first: a rewrite must not carry a malformed entry forward. */
                r = snap_oci_index_parse(buf, len, &check);
                if (r < 0)
                        return r;
                r = oci_json_parse(buf, len, &old);
                if (r < 0)
                        return r;
        }
        list = json_object_new_array();
        r = doc_new(SNAP_OCI_MEDIA_INDEX, NULL, "manifests", list, &root);
        if (r < 0)
                return r;
        if (old && json_object_object_get_ex(old, "manifests", &arr)) {
                size_t n = json_object_array_length(arr);
                for (size_t i = 0; i < n; i++) {
                        json_object *e = json_object_array_get_idx(arr, i);
                        if (entry_has_tag(e, tag))
                                continue;
                        if (json_object_array_add(list, json_object_get(e)) < 0) {
                                json_object_put(e);
                                return -ENOMEM;
                        }
                }
        }
        if (old && json_object_object_get_ex(old, "annotations", &o) &&
            json_object_object_add(root, "annotations", json_object_get(o)) < 0)
                return -ENOMEM;
        entry.title = NULL;
        entry.ref_name = (char *)tag;
        r = oci_json_desc_new(&entry, &o);
        if (r < 0)
                return r;
        if (json_object_array_add(list, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        r = doc_text(root, &text, &len);
        if (r < 0)
                return r;
        return write_atomic(l->dirfd, INDEX_FILE, text, len, file_mode(l));
}

int snap_oci_tag(const struct snap_oci_layout *l, const struct snap_oci_desc *desc,
                 const char *tag)
{
        int r;

        if (!l || !desc || !snap_oci_tag_valid(tag) || !desc->media_type)
                return -EINVAL;
        /* Read, modify and rewrite index.json under one lock: without it, two exports into one
         * layout each drop the other's tag. */
        if (flock(l->dirfd, LOCK_EX) < 0)
                return negative_errno();
        r = tag_locked(l, desc, tag);
        flock(l->dirfd, LOCK_UN);
        return r;
}

static int desc_copy(const struct snap_oci_desc *in, struct snap_oci_desc *out)
{
        *out = (struct snap_oci_desc){ .digest = in->digest, .size = in->size };
        out->media_type = strdup(in->media_type);
        if (in->artifact_type)
                out->artifact_type = strdup(in->artifact_type);
        if (in->ref_name)
                out->ref_name = strdup(in->ref_name);
        if (!out->media_type || (in->artifact_type && !out->artifact_type) ||
            (in->ref_name && !out->ref_name)) {
                snap_oci_desc_clear(out);
                return -ENOMEM;
        }
        return 0;
}

int snap_oci_resolve(const struct snap_oci_layout *l, const char *ref, struct snap_oci_desc *out)
{
        _cleanup_(indexp) struct snap_oci_index *ix = NULL;
        const struct snap_oci_desc *found = NULL;
        struct snap_digest d;
        bool by_digest;
        int r;

        if (!l || !ref || !out)
                return -EINVAL;
        if (ref[0] == '@')
                ref++;
        by_digest = strncmp(ref, "sha256:", 7) == 0;
        if (by_digest ? snap_oci_digest_parse(ref, strlen(ref), &d) < 0 : !snap_oci_tag_valid(ref))
                return -EINVAL;
        r = snap_oci_index_read(l, &ix);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ix->n_manifests; i++) {
                const struct snap_oci_desc *e = &ix->manifests[i];
                if (by_digest ? !snap_digest_equal(&e->digest, &d)
                              : !e->ref_name || strcmp(e->ref_name, ref))
                        continue;
                if (found && !by_digest)
                        return -ENOTUNIQ;
                if (!found)
                        found = e;
        }
        if (!found && by_digest) {
                /* Not tagged (a referrer, say): the blob itself, its size from the file. */
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                struct stat st;
                int fd;

                snap_digest_to_hex(&d, hex);
                fd = snap_open_untrusted(l->blobsfd, hex, SNAP_OCI_DOC_MAX, &st);
                if (fd < 0)
                        return fd;
                safe_close(fd);
                *out = (struct snap_oci_desc){ .digest = d, .size = (uint64_t)st.st_size };
                out->media_type = strdup(SNAP_OCI_MEDIA_MANIFEST);
                return out->media_type ? 0 : -ENOMEM;
        }
        if (!found)
                return -ENOENT;
        if (strcmp(found->media_type, SNAP_OCI_MEDIA_MANIFEST))
                return -EMEDIUMTYPE;
        return desc_copy(found, out);
}

/* The digests already looked at: open addressing in a power-of-two table at most half full.
 * Digests are SHA-256 outputs, so their first bytes are already a uniform hash. */
struct digest_set {
        struct snap_digest *d;
        bool *used;
        size_t cap;
};

static int digest_set_init(struct digest_set *s, size_t n)
{
        s->cap = 16;
        while (s->cap < 2 * n)
                s->cap *= 2;
        s->d = calloc(s->cap, sizeof(*s->d));
        s->used = calloc(s->cap, sizeof(*s->used));
        return s->d && s->used ? 0 : -ENOMEM;
}

static void digest_set_free(struct digest_set *s)
{
        free(s->d);
        free(s->used);
}

/* Adds d: true when it was not there yet. */
static bool digest_set_add(struct digest_set *s, const struct snap_digest *d)
{
        uint64_t h;
        size_t i;

        memcpy(&h, d->bytes, sizeof(h));
        for (i = (size_t)h & (s->cap - 1); s->used[i]; i = (i + 1) & (s->cap - 1))
                if (snap_digest_equal(&s->d[i], d))
                        return false;
        s->used[i] = true;
        s->d[i] = *d;
        return true;
}

int snap_oci_referrers(const struct snap_oci_layout *l, const struct snap_digest *subject,
                       const char *artifact_type, const struct snap_oci_bounds *bounds,
                       struct snap_oci_index **out)
{
        static const struct snap_oci_bounds defaults = {
                .max_size = SNAP_OCI_REFERRER_MAX,
                .max_bytes = SNAP_OCI_REFERRERS_BYTES_MAX,
                .max_found = SNAP_OCI_REFERRERS_MAX,
        };
        _cleanup_(indexp) struct snap_oci_index *ix = NULL, *res = NULL;
        struct digest_set seen = { 0 };
        uint64_t read_bytes = 0;
        int r;

        if (!l || !subject || !out)
                return -EINVAL;
        if (!bounds)
                bounds = &defaults;
        r = snap_oci_index_read(l, &ix);
        if (r < 0)
                return r;
        res = calloc(1, sizeof(*res));
        if (!res || !(res->manifests = calloc(ix->n_manifests ? ix->n_manifests : 1,
                                              sizeof(*res->manifests))))
                return -ENOMEM;
        r = digest_set_init(&seen, ix->n_manifests);
        for (size_t i = 0; r == 0 && i < ix->n_manifests; i++) {
                _cleanup_(manifestp) struct snap_oci_manifest *m = NULL;
                const struct snap_oci_desc *e = &ix->manifests[i];

                /* Whatever the index itself says is no referrer of the kind asked for, and
                 * whatever is too large to be one, is never read. The attack: index.json
                 * naming one 4 MiB manifest 26,000 times, each entry read, hashed and parsed
                 * before any key could decide (about an hour); a digest is looked at once. */
                if (strcmp(e->media_type, SNAP_OCI_MEDIA_MANIFEST) ||
                    (artifact_type && e->artifact_type && strcmp(e->artifact_type, artifact_type)) ||
                    e->size > bounds->max_size || !digest_set_add(&seen, &e->digest))
                        continue;
                /* Many small ones add up: the bytes read in all are bounded too. */
                read_bytes += e->size;
                if (read_bytes > bounds->max_bytes) {
                        r = -E2BIG;
                        break;
                }
                if (snap_oci_manifest_load(l, e, &m) < 0)
                        continue;
                if (!m->has_subject || !snap_digest_equal(&m->subject.digest, subject))
                        continue;
                if (artifact_type && (!m->artifact_type || strcmp(m->artifact_type, artifact_type)))
                        continue;
                if (res->n_manifests == bounds->max_found) {
                        r = -E2BIG;
                        break;
                }
                r = desc_copy(e, &res->manifests[res->n_manifests]);
                if (r == 0)
                        res->n_manifests++;
        }
        digest_set_free(&seen);
        if (r < 0)
                return r;
        *out = TAKE_PTR(res);
        return 0;
}
