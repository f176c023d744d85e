/* SPDX-License-Identifier: MIT */
/* snapshot/oci.c: the OCI layout, blobs, manifests, index and tags, and their refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "snapshot/oci.h"
#include "tests/unit/testutil.h"
#include "common/util.h"

/* While set, getrandom fails as it does where a sandbox denies the call (ENOSYS). This
 * definition stands in for the C library's throughout the program, the code under test
 * included; unset, it is the system call. */
static bool getrandom_denied;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
        if (getrandom_denied) {
                errno = ENOSYS;
                return -1;
        }
        return syscall(SYS_getrandom, buf, len, flags);
}

struct fx {
        struct tu_dir dir;
        char layout[300];
        struct snap_oci_layout l;
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        snprintf(f->layout, sizeof(f->layout), "%s/layout", f->dir.path);
        f->l = (struct snap_oci_layout)SNAP_OCI_LAYOUT_INIT;
        *state = f;
        return 0;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
        (void)st, (void)type, (void)ftw;
        return remove(p);
}

static int teardown(void **state)
{
        struct fx *f = *state;

        snap_oci_layout_close(&f->l);
        nftw(f->dir.path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static void open_new(struct fx *f)
{
        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE, &f->l), 0);
}

/* Writes text as the file rel below the layout. */
static void put_file(struct fx *f, const char *rel, const char *text)
{
        char p[PATH_MAX];
        FILE *fp;

        snprintf(p, sizeof(p), "%s/%s", f->layout, rel);
        fp = fopen(p, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

static void blob_path(struct fx *f, const struct snap_digest *d, char p[PATH_MAX])
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        snap_digest_to_hex(d, hex);
        snprintf(p, PATH_MAX, "%s/blobs/sha256/%s", f->layout, hex);
}

static void test_create_then_open_without_create(void **state)
{
        struct fx *f = *state;
        struct snap_oci_layout again = SNAP_OCI_LAYOUT_INIT;

        open_new(f);
        assert_int_equal(snap_oci_layout_open(f->layout, 0, &again), 0);
        snap_oci_layout_close(&again);
}

static void test_open_refuses_missing_layout_unless_create(void **state)
{
        struct fx *f = *state;

        assert_int_equal(snap_oci_layout_open(f->layout, 0, &f->l), -ENOENT);
        assert_int_equal(mkdir(f->layout, 0755), 0);
        assert_int_equal(snap_oci_layout_open(f->layout, 0, &f->l), -ENOENT);
        open_new(f);
}

static void test_open_refuses_other_layout_version(void **state)
{
        struct fx *f = *state;

        assert_int_equal(mkdir(f->layout, 0755), 0);
        put_file(f, "oci-layout", "{\"imageLayoutVersion\":\"2.0.0\"}");
        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE, &f->l), -EINVAL);
        put_file(f, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
        open_new(f);
}

static void test_open_refuses_symlinked_layout_and_blobs(void **state)
{
        struct fx *f = *state;
        char real[PATH_MAX], link[PATH_MAX], p[PATH_MAX];

        tu_path(&f->dir, "real", real);
        tu_path(&f->dir, "link", link);
        assert_int_equal(mkdir(real, 0755), 0);
        assert_int_equal(symlink(real, link), 0);
        assert_int_equal(snap_oci_layout_open(link, SNAP_OCI_CREATE, &f->l), -ELOOP);

        /* blobs/ a symlink to a directory elsewhere: refused, not written through. */
        assert_int_equal(mkdir(f->layout, 0755), 0);
        put_file(f, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
        snprintf(p, sizeof(p), "%s/blobs", f->layout);
        assert_int_equal(symlink(real, p), 0);
        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE, &f->l), -ELOOP);
        assert_int_equal(unlink(p), 0);
        open_new(f);
}

static void test_a_file_where_the_layout_or_blobs_belongs_is_einval_and_a_directory_opens(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        FILE *fp = fopen(f->layout, "w");

        assert_non_null(fp);
        fclose(fp);
        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE, &f->l), -EINVAL);
        assert_int_equal(unlink(f->layout), 0);
        assert_int_equal(mkdir(f->layout, 0755), 0);
        put_file(f, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
        put_file(f, "blobs", "");
        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE, &f->l), -EINVAL);
        snprintf(p, sizeof(p), "%s/blobs", f->layout);
        assert_int_equal(unlink(p), 0);
        open_new(f);
}

static void test_an_empty_or_null_layout_path_is_einval_and_a_real_one_opens(void **state)
{
        struct fx *f = *state;

        assert_int_equal(snap_oci_layout_open("", SNAP_OCI_CREATE, &f->l), -EINVAL);
        assert_int_equal(snap_oci_layout_open(NULL, SNAP_OCI_CREATE, &f->l), -EINVAL);
        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE, NULL), -EINVAL);
        open_new(f);
}

static void test_a_name_with_no_room_for_the_temporary_one_is_enametoolong_and_a_shorter_is_written(void **state)
{
        struct fx *f = *state;
        char name[NAME_MAX + 1] = "";

        open_new(f);
        memset(name, 'n', NAME_MAX - 31);
        assert_int_equal(snap_oci_write_atomic(f->l.dirfd, name, "x", 1), -ENAMETOOLONG);
        name[NAME_MAX - 32] = '\0';
        assert_int_equal(faccessat(f->l.dirfd, name, F_OK, 0), -1);
        assert_int_equal(snap_oci_write_atomic(f->l.dirfd, name, "x", 1), 0);
        assert_int_equal(faccessat(f->l.dirfd, name, F_OK, 0), 0);
}

static void test_a_denied_getrandom_is_eio_and_nothing_is_written(void **state)
{
        struct fx *f = *state;
        int r;

        open_new(f);
        getrandom_denied = true;
        r = snap_oci_write_atomic(f->l.dirfd, "name", "x", 1);
        getrandom_denied = false;
        assert_int_equal(r, -EIO);
        assert_int_equal(faccessat(f->l.dirfd, "name", F_OK, 0), -1);
        assert_int_equal(snap_oci_write_atomic(f->l.dirfd, "name", "x", 1), 0);
        assert_int_equal(faccessat(f->l.dirfd, "name", F_OK, 0), 0);
}

static void test_blob_written_once_and_verified(void **state)
{
        struct fx *f = *state;
        struct snap_digest d, want;
        void *buf = NULL;

        open_new(f);
        assert_int_equal(snap_sha256("hello", 5, &want), 0);
        assert_int_equal(snap_oci_blob_write(&f->l, "hello", 5, &d), 0);
        assert_true(snap_digest_equal(&d, &want));
        assert_int_equal(snap_oci_blob_write(&f->l, "hello", 5, NULL), 1);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 5), 0);
        assert_int_equal(snap_oci_blob_read(&f->l, &d, 5, 5, &buf), 0);
        assert_memory_equal(buf, "hello", 5);
        free(buf);
        assert_int_equal(snap_oci_blob_read(&f->l, &d, 5, 4, &buf), -EFBIG);
}

static void test_tampered_blob_refused_and_rewritten(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        struct snap_digest d;
        void *buf = NULL;
        FILE *fp;

        open_new(f);
        assert_int_equal(snap_oci_blob_write(&f->l, "hello", 5, &d), 0);
        blob_path(f, &d, p);
        fp = fopen(p, "w");
        assert_non_null(fp);
        fputs("jello", fp);
        fclose(fp);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 5), -EBADMSG);
        assert_int_equal(snap_oci_blob_read(&f->l, &d, 5, 5, &buf), -EBADMSG);
        /* Announced with another size: a mismatch before any byte is read. */
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 4), -EBADMSG);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 6), -EBADMSG);
        /* Writing the true bytes again repairs it. */
        assert_int_equal(snap_oci_blob_write(&f->l, "hello", 5, NULL), 0);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 5), 0);
}

static void test_symlinked_blob_refused_then_replaced(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX], target[PATH_MAX];
        struct snap_digest d;
        struct stat st;

        open_new(f);
        assert_int_equal(snap_sha256("hello", 5, &d), 0);
        tu_path(&f->dir, "target", target);
        put_file(f, "../target", "hello");
        blob_path(f, &d, p);
        assert_int_equal(symlink(target, p), 0);
        assert_int_equal(snap_oci_blob_open(&f->l, &d, 5), -ELOOP);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 5), -ELOOP);
        assert_int_equal(snap_oci_blob_write(&f->l, "hello", 5, NULL), 0);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 5), 0);
        assert_int_equal(snap_oci_blob_remove(&f->l, &d), 0);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 5), -ENOENT);
}

static void test_blob_write_without_a_layout_or_bytes_is_einval_and_with_them_writes(void **state)
{
        struct fx *f = *state;
        struct snap_digest d;

        open_new(f);
        assert_int_equal(snap_oci_blob_write(NULL, "x", 1, NULL), -EINVAL);
        assert_int_equal(snap_oci_blob_write(&f->l, NULL, 1, NULL), -EINVAL);
        assert_int_equal(snap_oci_blob_write(&f->l, "x", 1, &d), 0);
        assert_int_equal(snap_oci_blob_verify(&f->l, &d, 1), 0);
}

static void test_blob_open_without_a_layout_or_digest_is_einval_and_with_them_opens(void **state)
{
        struct fx *f = *state;
        struct snap_digest d;
        int fd;

        open_new(f);
        assert_int_equal(snap_oci_blob_write(&f->l, "x", 1, &d), 0);
        assert_int_equal(snap_oci_blob_open(NULL, &d, 1), -EINVAL);
        assert_int_equal(snap_oci_blob_open(&f->l, NULL, 1), -EINVAL);
        fd = snap_oci_blob_open(&f->l, &d, 1);
        assert_true(fd >= 0);
        close(fd);
}

static void test_a_blob_that_grows_after_its_size_was_checked_is_ebadmsg(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        uint8_t buf[5];
        struct snap_digest d;
        FILE *fp;
        int fd;

        open_new(f);
        assert_int_equal(snap_oci_blob_write(&f->l, "hello", 5, &d), 0);
        fd = snap_oci_blob_open(&f->l, &d, 5);
        assert_true(fd >= 0);
        assert_int_equal(snap_oci_hash_fd(fd, 5, NULL, &d), 0);
        assert_int_equal(snap_oci_hash_fd(fd, 5, buf, &d), 0);
        assert_memory_equal(buf, "hello", 5);
        blob_path(f, &d, p);
        fp = fopen(p, "a");
        assert_non_null(fp);
        fputs("!", fp);
        fclose(fp);
        assert_int_equal(snap_oci_hash_fd(fd, 5, NULL, &d), -EBADMSG);
        assert_int_equal(snap_oci_hash_fd(fd, 5, buf, &d), -EBADMSG);
        close(fd);
}

/* A manifest of two snapshot layers with titles, and a subject. */
static void make_manifest(struct snap_oci_manifest *m, struct snap_oci_desc layers[2])
{
        *m = (struct snap_oci_manifest){ .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        snap_oci_desc_empty_config(&m->config);
        for (int i = 0; i < 2; i++) {
                layers[i] = (struct snap_oci_desc){
                        .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                        .size = (uint64_t)i + 1,
                        .title = (char *)(i ? "b.json" : "mcp.json"),
                };
                assert_int_equal(snap_sha256(i ? "bb" : "a", (size_t)i + 1, &layers[i].digest), 0);
        }
        m->layers = layers;
        m->n_layers = 2;
}

static void test_manifest_round_trip(void **state)
{
        struct snap_oci_manifest m, *p = NULL;
        struct snap_oci_desc layers[2];
        char *json = NULL;
        size_t len;

        (void)state;
        make_manifest(&m, layers);
        m.has_subject = true;
        m.subject = layers[0];
        m.subject.media_type = (char *)SNAP_OCI_MEDIA_MANIFEST;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_non_null(strstr(json, "\"artifactType\":\"application/vnd.snapfs.snapshots.v1\""));
        assert_non_null(strstr(json, "\"org.opencontainers.image.title\":\"mcp.json\""));
        assert_int_equal(snap_oci_manifest_parse(json, len, &p), 0);
        assert_string_equal(p->artifact_type, SNAP_OCI_ARTIFACT_SNAPSHOTS);
        assert_string_equal(p->config.media_type, SNAP_OCI_MEDIA_EMPTY);
        assert_int_equal(p->config.size, 2);
        assert_int_equal(p->n_layers, 2);
        assert_string_equal(p->layers[1].title, "b.json");
        assert_int_equal(p->layers[1].size, 2);
        assert_true(snap_digest_equal(&p->layers[1].digest, &layers[1].digest));
        assert_true(p->has_subject);
        assert_true(snap_digest_equal(&p->subject.digest, &layers[0].digest));
        snap_oci_manifest_free(p);
        free(json);
}

static void test_manifest_build_of_a_bad_artifact_type_or_too_many_layers_is_einval(void **state)
{
        struct snap_oci_manifest m;
        struct snap_oci_desc layers[2];
        char *json = NULL;
        size_t len;

        (void)state;
        make_manifest(&m, layers);
        m.artifact_type = (char *)"no-slash";
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), -EINVAL);
        m.artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS;
        m.n_layers = SNAP_OCI_ENTRIES_MAX + 1;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), -EINVAL);
        assert_int_equal(snap_oci_manifest_build(&m, NULL, &len), -EINVAL);
        assert_null(json);
        m.n_layers = 2;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_non_null(json);
        free(json);
}

#define D64 "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define CFG "\"config\":{\"mediaType\":\"application/vnd.oci.empty.v1+json\",\"digest\":\"sha256:" D64 "\",\"size\":2}"
#define LAYER(extra) "{\"mediaType\":\"application/vnd.snapfs.snapshot.v1\",\"digest\":\"sha256:" D64 "\",\"size\":2" extra "}"
#define MANIFEST(head, layer) "{\"schemaVersion\":2" head "," CFG ",\"layers\":[" layer "]}"

static int parse_text(const char *text)
{
        struct snap_oci_manifest *m = NULL;
        int r = snap_oci_manifest_parse(text, strlen(text), &m);

        snap_oci_manifest_free(m);
        return r;
}

static void test_manifest_parse_refuses_each_malformed_field(void **state)
{
        static const char *const bad[] = {
                "{\"schemaVersion\":1," CFG ",\"layers\":[]}",
                "{\"schemaVersion\":\"2\"," CFG ",\"layers\":[]}",
                "{\"schemaVersion\":2,\"layers\":[]}",
                "{\"schemaVersion\":2," CFG "}",
                "{\"schemaVersion\":2," CFG ",\"layers\":{}}",
                MANIFEST(",\"mediaType\":\"application/vnd.oci.image.index.v1+json\"", LAYER("")),
                MANIFEST(",\"artifactType\":\"no-slash\"", LAYER("")),
                MANIFEST("", "{\"digest\":\"sha256:" D64 "\",\"size\":2}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"sha512:" D64 "\",\"size\":2}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "0\",\"size\":2}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"SHA256:" D64 "\",\"size\":2}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "\",\"size\":-1}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "\",\"size\":2.0}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "\",\"size\":\"2\"}"),
                MANIFEST("", "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "\",\"size\":99999999999999999999}"),
                MANIFEST("", LAYER(",\"annotations\":{\"org.opencontainers.image.title\":1}")),
                MANIFEST("", LAYER(",\"annotations\":{\"org.opencontainers.image.title\":\"a\\u0000b\"}")),
                MANIFEST("", LAYER(",\"annotations\":[]")),
                MANIFEST("", "1"),
                MANIFEST("", LAYER("")) " x",
                MANIFEST("", LAYER("")) "{}",
                "[]",
                "",
                "{\"schemaVersion\":2, // comment\n" CFG ",\"layers\":[]}",
        };

        (void)state;
        /* The accepted twin of every line below. */
        assert_int_equal(parse_text(MANIFEST("", LAYER(",\"annotations\":{\"org.opencontainers.image.title\":\"x\"}")) " \n"), 0);
        assert_int_equal(parse_text(MANIFEST(",\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"unknown\":[1]", "")), 0);
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                int r = parse_text(bad[i]);
                if (r != -EINVAL)
                        fail_msg("case %zu: %d for %s", i, r, bad[i]);
        }
}

static void test_manifest_parse_bounds_size_and_depth(void **state)
{
        size_t big = SNAP_OCI_DOC_MAX + 1, deep = 100;
        _cleanup_free_ char *text = malloc(big), *nest = malloc(2 * deep + 1);
        struct snap_oci_manifest *m = NULL;

        (void)state;
        assert_non_null(text);
        memset(text, ' ', big);
        text[0] = '{';
        text[big - 1] = '}';
        assert_int_equal(snap_oci_manifest_parse(text, big, &m), -EFBIG);
        for (size_t i = 0; i < deep; i++)
                nest[i] = '[', nest[deep + i] = ']';
        nest[2 * deep] = 0;
        assert_int_equal(snap_oci_manifest_parse(nest, 2 * deep, &m), -EINVAL);
}

static void test_more_layers_than_the_bound_are_einval_and_one_layer_parses(void **state)
{
        static const char head[] = "{\"schemaVersion\":2," CFG ",\"layers\":[";
        size_t n = SNAP_OCI_ENTRIES_MAX + 1, len = sizeof(head) - 1 + 2 * n + 1;
        _cleanup_free_ char *text = malloc(len + 1);

        (void)state;
        assert_non_null(text);
        memcpy(text, head, sizeof(head) - 1);
        for (size_t i = 0; i < n; i++)
                memcpy(text + sizeof(head) - 1 + 2 * i, "0,", 2);
        memcpy(text + len - 2, "]}", 3);
        /* Refused by the count, before any element is looked at. */
        assert_int_equal(parse_text(text), -EINVAL);
        assert_int_equal(parse_text(MANIFEST("", LAYER(""))), 0);
}

static void test_manifest_and_index_parse_without_out_are_einval_and_with_it_parse(void **state)
{
        static const char manifest[] = MANIFEST("", LAYER(""));
        static const char index[] = "{\"schemaVersion\":2,\"manifests\":[" LAYER("") "]}";
        struct snap_oci_manifest *m = NULL;
        struct snap_oci_index *ix = NULL;

        (void)state;
        assert_int_equal(snap_oci_manifest_parse(manifest, strlen(manifest), NULL), -EINVAL);
        assert_int_equal(snap_oci_manifest_parse(manifest, strlen(manifest), &m), 0);
        assert_int_equal(m->n_layers, 1);
        snap_oci_manifest_free(m);
        assert_int_equal(snap_oci_index_parse(index, strlen(index), NULL), -EINVAL);
        assert_int_equal(snap_oci_index_parse(index, strlen(index), &ix), 0);
        assert_int_equal(ix->n_manifests, 1);
        snap_oci_index_free(ix);
}

static void test_index_parse(void **state)
{
        static const char good[] = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
                "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:" D64
                "\",\"size\":7,\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\"}}]}";
        static const char bad[] = "{\"schemaVersion\":2,\"mediaType\":"
                "\"application/vnd.oci.image.manifest.v1+json\",\"manifests\":[]}";
        struct snap_oci_index *ix = NULL;

        (void)state;
        assert_int_equal(snap_oci_index_parse(good, strlen(good), &ix), 0);
        assert_int_equal(ix->n_manifests, 1);
        assert_string_equal(ix->manifests[0].ref_name, "v1");
        assert_int_equal(ix->manifests[0].size, 7);
        snap_oci_index_free(ix);
        assert_int_equal(snap_oci_index_parse(bad, strlen(bad), &ix), -EINVAL);
}

static void write_manifest(struct fx *f, struct snap_oci_desc *out)
{
        struct snap_oci_manifest m;
        struct snap_oci_desc layers[2];

        make_manifest(&m, layers);
        assert_int_equal(snap_oci_manifest_write(&f->l, &m, out), 0);
}

static void test_tag_and_resolve(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, got;
        struct snap_oci_manifest *m = NULL;
        struct snap_oci_index *ix = NULL;
        char ref[80] = "@";

        open_new(f);
        write_manifest(f, &md);
        /* The empty config blob came with it. */
        assert_int_equal(snap_oci_blob_verify(&f->l, &md.digest, md.size), 0);
        assert_int_equal(snap_oci_resolve(&f->l, "v1", &got), -ENOENT);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), 0);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v2"), 0);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), 0); /* retag: still one v1 */
        assert_int_equal(snap_oci_index_read(&f->l, &ix), 0);
        assert_int_equal(ix->n_manifests, 2);
        snap_oci_index_free(ix);

        assert_int_equal(snap_oci_resolve(&f->l, "v1", &got), 0);
        assert_true(snap_digest_equal(&got.digest, &md.digest));
        assert_string_equal(got.artifact_type, SNAP_OCI_ARTIFACT_SNAPSHOTS);
        assert_int_equal(snap_oci_manifest_load(&f->l, &got, &m), 0);
        assert_int_equal(m->n_layers, 2);
        assert_string_equal(m->layers[0].title, "mcp.json");
        snap_oci_manifest_free(m);
        snap_oci_desc_clear(&got);

        snap_oci_digest_format(&md.digest, ref + 1);
        assert_int_equal(snap_oci_resolve(&f->l, ref, &got), 0);
        assert_int_equal(got.size, md.size);
        snap_oci_desc_clear(&got);
        assert_int_equal(snap_oci_resolve(&f->l, "bad tag", &got), -EINVAL);
        assert_int_equal(snap_oci_tag(&f->l, &md, "-x"), -EINVAL);
}

static void test_tag_keeps_foreign_entries_and_refuses_ambiguity(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, got;
        char text[1024];

        open_new(f);
        snprintf(text, sizeof(text),
                 "{\"schemaVersion\":2,\"manifests\":["
                 "{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"sha256:" D64
                 "\",\"size\":2,\"platform\":{\"os\":\"linux\"},\"annotations\":{\"org.opencontainers.image.ref.name\":\"idx\"}},"
                 "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "\",\"size\":2,\"annotations\":{\"org.opencontainers.image.ref.name\":\"twice\"}},"
                 "{\"mediaType\":\"a/b\",\"digest\":\"sha256:" D64 "\",\"size\":2,\"annotations\":{\"org.opencontainers.image.ref.name\":\"twice\"}}]}");
        put_file(f, "index.json", text);
        assert_int_equal(snap_oci_resolve(&f->l, "idx", &got), -EMEDIUMTYPE);
        assert_int_equal(snap_oci_resolve(&f->l, "twice", &got), -ENOTUNIQ);
        write_manifest(f, &md);
        assert_int_equal(snap_oci_tag(&f->l, &md, "twice"), 0);
        assert_int_equal(snap_oci_resolve(&f->l, "twice", &got), 0);
        snap_oci_desc_clear(&got);
        assert_int_equal(snap_oci_resolve(&f->l, "idx", &got), -EMEDIUMTYPE);

        /* A malformed index.json is refused, not carried forward. */
        put_file(f, "index.json", "{\"schemaVersion\":2,\"manifests\":[{}]}");
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), -EINVAL);
}

static void test_index_read_without_a_layout_or_out_is_einval_and_with_them_reads(void **state)
{
        struct fx *f = *state;
        struct snap_oci_index *ix = NULL;

        open_new(f);
        assert_int_equal(snap_oci_index_read(NULL, &ix), -EINVAL);
        assert_int_equal(snap_oci_index_read(&f->l, NULL), -EINVAL);
        assert_null(ix);
        assert_int_equal(snap_oci_index_read(&f->l, &ix), 0);
        assert_int_equal(ix->n_manifests, 0);
        snap_oci_index_free(ix);
}

static void test_manifest_write_and_load_without_their_arguments_are_einval_and_with_them_work(void **state)
{
        struct fx *f = *state;
        struct snap_oci_manifest m, *got = NULL;
        struct snap_oci_desc layers[2], md;

        open_new(f);
        make_manifest(&m, layers);
        assert_int_equal(snap_oci_manifest_write(NULL, &m, &md), -EINVAL);
        assert_int_equal(snap_oci_manifest_write(&f->l, NULL, &md), -EINVAL);
        assert_int_equal(snap_oci_manifest_write(&f->l, &m, &md), 0);
        assert_int_equal(snap_oci_manifest_load(NULL, &md, &got), -EINVAL);
        assert_int_equal(snap_oci_manifest_load(&f->l, NULL, &got), -EINVAL);
        assert_int_equal(snap_oci_manifest_load(&f->l, &md, NULL), -EINVAL);
        assert_null(got);
        assert_int_equal(snap_oci_manifest_load(&f->l, &md, &got), 0);
        assert_int_equal(got->n_layers, 2);
        snap_oci_manifest_free(got);
}

/* index.json of exactly size bytes: one foreign entry padded with an unknown field, which a
 * rewrite keeps. */
static void put_index_of_size(struct fx *f, size_t size)
{
        static const char head[] = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"a/b\","
                "\"digest\":\"sha256:" D64 "\",\"size\":2,\"pad\":\"";
        static const char tail[] = "\"}]}";
        _cleanup_free_ char *text = malloc(size + 1);

        assert_non_null(text);
        memset(text, 'x', size);
        memcpy(text, head, sizeof(head) - 1);
        memcpy(text + size - (sizeof(tail) - 1), tail, sizeof(tail));
        put_file(f, "index.json", text);
}

static void test_a_tag_that_would_grow_index_json_past_the_bound_is_efbig_and_one_that_fits_is_written(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, got;
        struct snap_oci_index *ix = NULL;

        open_new(f);
        write_manifest(f, &md);
        put_index_of_size(f, SNAP_OCI_DOC_MAX - 16);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), -EFBIG);
        assert_int_equal(snap_oci_resolve(&f->l, "v1", &got), -ENOENT);
        put_index_of_size(f, SNAP_OCI_DOC_MAX - 1024);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), 0);
        assert_int_equal(snap_oci_index_read(&f->l, &ix), 0);
        assert_int_equal(ix->n_manifests, 2);
        snap_oci_index_free(ix);
}

static void test_resolve_without_its_arguments_is_einval_and_with_them_resolves(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, got;

        open_new(f);
        write_manifest(f, &md);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), 0);
        assert_int_equal(snap_oci_resolve(NULL, "v1", &got), -EINVAL);
        assert_int_equal(snap_oci_resolve(&f->l, NULL, &got), -EINVAL);
        assert_int_equal(snap_oci_resolve(&f->l, "v1", NULL), -EINVAL);
        assert_int_equal(snap_oci_resolve(&f->l, "v1", &got), 0);
        assert_true(snap_digest_equal(&got.digest, &md.digest));
        snap_oci_desc_clear(&got);
}

static void test_referrers_found_by_subject(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, sd, layer;
        struct snap_oci_manifest sig = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SIGNATURE };
        struct snap_oci_index *refs = NULL;

        open_new(f);
        write_manifest(f, &md);
        assert_int_equal(snap_oci_tag(&f->l, &md, "v1"), 0);
        snap_oci_desc_empty_config(&sig.config);
        layer = (struct snap_oci_desc){ .media_type = (char *)SNAP_OCI_MEDIA_SIGNATURE, .size = 2 };
        assert_int_equal(snap_oci_blob_write(&f->l, "{}", 2, &layer.digest), 1);
        sig.layers = &layer;
        sig.n_layers = 1;
        sig.has_subject = true;
        sig.subject = md;
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, NULL, &refs), 0);
        assert_int_equal(refs->n_manifests, 0);
        snap_oci_index_free(refs);
        assert_int_equal(snap_oci_manifest_write(&f->l, &sig, &sd), 0);
        assert_int_equal(snap_oci_tag(&f->l, &sd, "v1.sig"), 0);
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, NULL, &refs), 0);
        assert_int_equal(refs->n_manifests, 1);
        assert_true(snap_digest_equal(&refs->manifests[0].digest, &sd.digest));
        snap_oci_index_free(refs);
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SNAPSHOTS, NULL, &refs), 0);
        assert_int_equal(refs->n_manifests, 0);
        snap_oci_index_free(refs);
}

/* A signature manifest whose subject is md, written as a blob (not tagged): *sd. */
static void write_signature_manifest(struct fx *f, const struct snap_oci_desc *md,
                                     const char *envelope, struct snap_oci_desc *sd)
{
        struct snap_oci_manifest sig = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SIGNATURE };
        struct snap_oci_desc layer = { .media_type = (char *)SNAP_OCI_MEDIA_SIGNATURE,
                                       .size = strlen(envelope) };

        snap_oci_desc_empty_config(&sig.config);
        assert_true(snap_oci_blob_write(&f->l, envelope, layer.size, &layer.digest) >= 0);
        sig.layers = &layer;
        sig.n_layers = 1;
        sig.has_subject = true;
        sig.subject = *md;
        assert_int_equal(snap_oci_manifest_write(&f->l, &sig, sd), 0);
}

/* index.json of n entries, entry i naming d[i] (size[i]) with artifactType types[i] (NULL:
 * none). */
static void put_index(struct fx *f, size_t n, const struct snap_oci_desc *const *d,
                      const char *const *types)
{
        char *text = NULL, *prev;
        char digest[SNAP_OCI_DIGEST_TEXT_LEN + 1];

        assert_true(asprintf(&text, "{\"schemaVersion\":2,\"manifests\":[") > 0);
        for (size_t i = 0; i < n; i++) {
                prev = text;
                snap_oci_digest_format(&d[i]->digest, digest);
                assert_true(asprintf(&text, "%s%s{\"mediaType\":\"%s\",\"digest\":\"%s\","
                                            "\"size\":%llu%s%s%s}",
                                     prev, i ? "," : "", SNAP_OCI_MEDIA_MANIFEST, digest,
                                     (unsigned long long)d[i]->size,
                                     types[i] ? ",\"artifactType\":\"" : "",
                                     types[i] ? types[i] : "", types[i] ? "\"" : "") > 0);
                free(prev);
        }
        prev = text;
        assert_true(asprintf(&text, "%s]}", prev) > 0);
        free(prev);
        put_file(f, "index.json", text);
        free(text);
}

static void test_referrers_read_a_digest_listed_again_once_and_find_it_once(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, sd;
        struct snap_oci_index *refs = NULL;
        struct snap_oci_bounds b = { .max_size = SNAP_OCI_REFERRER_MAX, .max_found = 8 };
        const struct snap_oci_desc *entries[3];
        const char *types[3] = { NULL, NULL, NULL };

        open_new(f);
        write_manifest(f, &md);
        write_signature_manifest(f, &md, "{}", &sd);
        entries[0] = entries[1] = entries[2] = &sd;
        put_index(f, 3, entries, types);
        /* Room to read it once, not three times: the same digest is read once. */
        b.max_bytes = sd.size;
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), 0);
        assert_int_equal(refs->n_manifests, 1);
        assert_true(snap_digest_equal(&refs->manifests[0].digest, &sd.digest));
        snap_oci_index_free(refs);
        /* Less than one: refused, before a key could decide. */
        b.max_bytes = sd.size - 1;
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), -E2BIG);
}

static void test_referrers_skip_unread_an_entry_too_large_or_typed_as_another_artifact(
        void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, sd;
        struct snap_oci_index *refs = NULL;
        struct snap_oci_bounds b = { .max_bytes = 0, .max_found = 8 };
        const struct snap_oci_desc *entries[1];
        const char *types[1] = { SNAP_OCI_ARTIFACT_SNAPSHOTS };

        open_new(f);
        write_manifest(f, &md);
        write_signature_manifest(f, &md, "{}", &sd);
        entries[0] = &sd;
        /* No byte may be read: an entry the index says is another artifact is not. */
        b.max_size = SNAP_OCI_REFERRER_MAX;
        put_index(f, 1, entries, types);
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), 0);
        assert_int_equal(refs->n_manifests, 0);
        snap_oci_index_free(refs);
        /* Nor one larger than the largest referrer read. */
        types[0] = SNAP_OCI_ARTIFACT_SIGNATURE;
        put_index(f, 1, entries, types);
        b.max_size = sd.size - 1;
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), 0);
        assert_int_equal(refs->n_manifests, 0);
        snap_oci_index_free(refs);
        /* The allowance: the same entry within the bounds is found. */
        b.max_size = sd.size;
        b.max_bytes = sd.size;
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), 0);
        assert_int_equal(refs->n_manifests, 1);
        snap_oci_index_free(refs);
}

static void test_referrers_past_the_most_found_are_e2big_and_up_to_it_listed(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc md, sd[3];
        struct snap_oci_index *refs = NULL;
        struct snap_oci_bounds b = { .max_size = SNAP_OCI_REFERRER_MAX,
                                     .max_bytes = SNAP_OCI_REFERRERS_BYTES_MAX, .max_found = 2 };
        const struct snap_oci_desc *entries[3] = { &sd[0], &sd[1], &sd[2] };
        const char *types[3] = { NULL, NULL, NULL };

        open_new(f);
        write_manifest(f, &md);
        write_signature_manifest(f, &md, "{\"a\":1}", &sd[0]);
        write_signature_manifest(f, &md, "{\"a\":2}", &sd[1]);
        write_signature_manifest(f, &md, "{\"a\":3}", &sd[2]);
        put_index(f, 3, entries, types);
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), -E2BIG);
        put_index(f, 2, entries, types);
        assert_int_equal(snap_oci_referrers(&f->l, &md.digest, SNAP_OCI_ARTIFACT_SIGNATURE, &b,
                                            &refs), 0);
        assert_int_equal(refs->n_manifests, 2);
        snap_oci_index_free(refs);
}

static void test_referrers_without_their_arguments_are_einval_and_with_them_list(void **state)
{
        struct fx *f = *state;
        struct snap_oci_index *refs = NULL;
        struct snap_digest subject;

        open_new(f);
        assert_int_equal(snap_sha256("m", 1, &subject), 0);
        assert_int_equal(snap_oci_referrers(NULL, &subject, NULL, NULL, &refs), -EINVAL);
        assert_int_equal(snap_oci_referrers(&f->l, NULL, NULL, NULL, &refs), -EINVAL);
        assert_int_equal(snap_oci_referrers(&f->l, &subject, NULL, NULL, NULL), -EINVAL);
        assert_null(refs);
        assert_int_equal(snap_oci_referrers(&f->l, &subject, NULL, NULL, &refs), 0);
        assert_int_equal(refs->n_manifests, 0);
        snap_oci_index_free(refs);
}

static void test_signature_verifies_only_with_its_key(void **state)
{
        EVP_PKEY *key = NULL, *other = NULL, *pub = NULL;
        struct snap_oci_envelope e, bad;
        struct snap_digest md;
        char *json = NULL, *pem = NULL;
        size_t len, plen;

        (void)state;
        assert_int_equal(snap_oci_key_generate(&key), 0);
        assert_int_equal(snap_oci_key_generate(&other), 0);
        assert_int_equal(snap_sha256("manifest", 8, &md), 0);
        assert_int_equal(snap_oci_sign(key, &md, 8, &json, &len), 0);
        assert_int_equal(snap_oci_envelope_parse(json, len, &e), 0);

        assert_int_equal(snap_oci_key_to_pem(key, false, &pem, &plen), 0);
        assert_non_null(strstr(pem, "BEGIN PUBLIC KEY"));
        assert_int_equal(snap_oci_key_from_pem(pem, plen, true, &pub), -EINVAL);
        assert_int_equal(snap_oci_key_from_pem(pem, plen, false, &pub), 0);
        /* A public key cannot sign. */
        assert_int_equal(snap_oci_sign(pub, &md, 8, &json, &len), -EINVAL);

        assert_int_equal(snap_oci_envelope_verify(&e, pub), 0);
        assert_int_equal(snap_oci_envelope_verify(&e, other), -EKEYREJECTED);
        bad = e;
        bad.signature[5] ^= 1;
        assert_int_equal(snap_oci_envelope_verify(&bad, pub), -EBADMSG);
        bad = e;
        bad.manifest.bytes[0] ^= 1;
        assert_int_equal(snap_oci_envelope_verify(&bad, pub), -EBADMSG);
        bad = e;
        bad.manifest_size++;
        assert_int_equal(snap_oci_envelope_verify(&bad, pub), -EBADMSG);

        free(pem);
        free(json);
        EVP_PKEY_free(key);
        EVP_PKEY_free(other);
        EVP_PKEY_free(pub);
}

static void test_envelope_parse_is_strict(void **state)
{
        EVP_PKEY *key = NULL;
        struct snap_oci_envelope e;
        struct snap_digest md;
        char *json = NULL, *p;
        size_t len;

        (void)state;
        assert_int_equal(snap_oci_key_generate(&key), 0);
        assert_int_equal(snap_sha256("m", 1, &md), 0);
        assert_int_equal(snap_oci_sign(key, &md, 1, &json, &len), 0);
        assert_int_equal(snap_oci_envelope_parse(json, len, &e), 0);
        /* The base64 padding "==" changed to "=A": another spelling, refused. */
        p = strstr(json, "==\"");
        assert_non_null(p);
        p[1] = 'A';
        assert_int_equal(snap_oci_envelope_parse(json, len, &e), -EINVAL);
        p[1] = '=';
        p = strstr(json, "ed25519");
        p[0] = 'E';
        assert_int_equal(snap_oci_envelope_parse(json, len, &e), -EINVAL);
        free(json);
        EVP_PKEY_free(key);
}

static void test_a_private_layout_makes_directories_0700_and_files_0600(void **state)
{
        struct fx *f = *state;
        struct snap_oci_layout shared = SNAP_OCI_LAYOUT_INIT;
        struct snap_digest d;
        char p[PATH_MAX];
        struct stat st;

        assert_int_equal(snap_oci_layout_open(f->layout, SNAP_OCI_CREATE | SNAP_OCI_PRIVATE,
                                              &f->l),
                         0);
        assert_int_equal(snap_oci_blob_write(&f->l, "secret", 6, &d), 0);
        blob_path(f, &d, p);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        snprintf(p, sizeof(p), "%s/blobs/sha256", f->layout);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);
        snprintf(p, sizeof(p), "%s/oci-layout", f->layout);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        /* Beside it, a layout for distribution (export) is made as before: 0644 less umask. */
        snap_oci_layout_close(&f->l);
        snprintf(p, sizeof(p), "%s.shared", f->layout);
        assert_int_equal(snap_oci_layout_open(p, SNAP_OCI_CREATE, &shared), 0);
        assert_int_equal(snap_oci_blob_write(&shared, "public", 6, &d), 0);
        snap_oci_layout_close(&shared);
        {
                char hex[SNAP_DIGEST_HEX_LEN + 1], q[PATH_MAX + 80];
                snap_digest_to_hex(&d, hex);
                snprintf(q, sizeof(q), "%s/blobs/sha256/%s", p, hex);
                assert_int_equal(stat(q, &st), 0);
                mode_t um = umask(0);
                umask(um);
                assert_int_equal(st.st_mode & 0777, 0644 & ~um);
                unlink(q);
                snprintf(q, sizeof(q), "%s/blobs/sha256", p);
                rmdir(q);
                snprintf(q, sizeof(q), "%s/blobs", p);
                rmdir(q);
                snprintf(q, sizeof(q), "%s/oci-layout", p);
                unlink(q);
                rmdir(p);
        }
}

static void test_a_manifest_no_reader_would_take_is_efbig_and_a_smaller_one_builds(void **state)
{
        static char title[SNAP_OCI_ANNOTATION_MAX + 1];
        struct snap_oci_manifest m;
        struct snap_oci_desc *layers;
        size_t n = SNAP_OCI_DOC_MAX / SNAP_OCI_ANNOTATION_MAX + 1, len;
        char *json = NULL;

        (void)state;
        memset(title, 't', SNAP_OCI_ANNOTATION_MAX);
        layers = calloc(n, sizeof(*layers));
        assert_non_null(layers);
        make_manifest(&m, layers);
        for (size_t i = 0; i < n; i++) {
                layers[i] = m.layers[i % 2];
                layers[i].title = title;
        }
        m.layers = layers;
        m.n_layers = n;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), -EFBIG);
        assert_null(json);
        m.n_layers = n / 2;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_true(len <= SNAP_OCI_DOC_MAX);
        free(json);
        free(layers);
}

static void test_the_created_and_holders_annotations_round_trip(void **state)
{
        struct snap_oci_manifest m, *p = NULL;
        struct snap_oci_desc layers[2];
        char *json = NULL;
        size_t len;

        (void)state;
        make_manifest(&m, layers);
        layers[0].created = (char *)"2026-11-30T00:40:32.758093123Z";
        layers[0].holders = (char *)"1000,0";
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_non_null(strstr(json, "\"org.opencontainers.image.created\":"
                                     "\"2026-11-30T00:40:32.758093123Z\""));
        assert_non_null(strstr(json, "\"vnd.snapfs.holders\":\"1000,0\""));
        assert_int_equal(snap_oci_manifest_parse(json, len, &p), 0);
        assert_string_equal(p->layers[0].created, "2026-11-30T00:40:32.758093123Z");
        assert_string_equal(p->layers[0].holders, "1000,0");
        /* A layer without them has neither. */
        assert_null(p->layers[1].created);
        assert_null(p->layers[1].holders);
        snap_oci_manifest_free(p);
        free(json);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_create_then_open_without_create),
                T(test_open_refuses_missing_layout_unless_create),
                T(test_open_refuses_other_layout_version),
                T(test_open_refuses_symlinked_layout_and_blobs),
                T(test_a_file_where_the_layout_or_blobs_belongs_is_einval_and_a_directory_opens),
                T(test_an_empty_or_null_layout_path_is_einval_and_a_real_one_opens),
                T(test_a_name_with_no_room_for_the_temporary_one_is_enametoolong_and_a_shorter_is_written),
                T(test_a_denied_getrandom_is_eio_and_nothing_is_written),
                T(test_blob_written_once_and_verified),
                T(test_tampered_blob_refused_and_rewritten),
                T(test_symlinked_blob_refused_then_replaced),
                T(test_blob_write_without_a_layout_or_bytes_is_einval_and_with_them_writes),
                T(test_blob_open_without_a_layout_or_digest_is_einval_and_with_them_opens),
                T(test_a_blob_that_grows_after_its_size_was_checked_is_ebadmsg),
                T(test_manifest_round_trip),
                T(test_a_private_layout_makes_directories_0700_and_files_0600),
                T(test_a_manifest_no_reader_would_take_is_efbig_and_a_smaller_one_builds),
                T(test_the_created_and_holders_annotations_round_trip),
                T(test_manifest_build_of_a_bad_artifact_type_or_too_many_layers_is_einval),
                T(test_manifest_parse_refuses_each_malformed_field),
                T(test_manifest_parse_bounds_size_and_depth),
                T(test_more_layers_than_the_bound_are_einval_and_one_layer_parses),
                T(test_manifest_and_index_parse_without_out_are_einval_and_with_it_parse),
                T(test_index_parse),
                T(test_tag_and_resolve),
                T(test_tag_keeps_foreign_entries_and_refuses_ambiguity),
                T(test_index_read_without_a_layout_or_out_is_einval_and_with_them_reads),
                T(test_manifest_write_and_load_without_their_arguments_are_einval_and_with_them_work),
                T(test_a_tag_that_would_grow_index_json_past_the_bound_is_efbig_and_one_that_fits_is_written),
                T(test_resolve_without_its_arguments_is_einval_and_with_them_resolves),
                T(test_referrers_found_by_subject),
                T(test_referrers_without_their_arguments_are_einval_and_with_them_list),
                T(test_referrers_read_a_digest_listed_again_once_and_find_it_once),
                T(test_referrers_skip_unread_an_entry_too_large_or_typed_as_another_artifact),
                T(test_referrers_past_the_most_found_are_e2big_and_up_to_it_listed),
                T(test_signature_verifies_only_with_its_key),
                T(test_envelope_parse_is_strict),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
