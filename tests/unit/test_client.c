/* SPDX-License-Identifier: MIT */
/* libsnapfs without a mount: the public binding text, the report, snapfs_strerror, argument
 * refusals, snapfs_verify_fd on plain files, and the below-the-root open that every snapshot
 * and staging file goes through. Real mounts are in tests/integration/test_client_api.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "snapshot/oci.h"
#include "client/snapfs.h"
#include "client/transfer.h"
#include "tests/unit/testutil.h"
#include "common/util.h"

#define T(f) cmocka_unit_test(f)

static const char good_text[] =
        "sha256=84b9e5b4126e0e1136bc9e3f11e837ec593fc29b8e4934b424f6da483c8187e4 size=176 "
        "dev=0:39 ino=3";

static void test_binding_text_round_trips(void **state)
{
        struct snapfs_binding b;
        char out[SNAPFS_BINDING_TEXT_MAX];
        (void)state;

        assert_int_equal(snapfs_binding_parse(good_text, &b), 0);
        assert_int_equal(b.size, 176);
        assert_int_equal(b.ino, 3);
        assert_int_equal(b.sha256[0], 0x84);
        assert_int_equal(b.sha256[31], 0xe4);
        assert_int_equal(snapfs_binding_format(&b, out, sizeof(out)), 0);
        assert_string_equal(out, good_text);
}

static void test_binding_parse_refuses_a_second_spelling(void **state)
{
        struct snapfs_binding b;
        char text[256];
        (void)state;

        snprintf(text, sizeof(text), "%s\n", good_text);
        assert_int_equal(snapfs_binding_parse(text, &b), -EINVAL);
        snprintf(text, sizeof(text), " %s", good_text);
        assert_int_equal(snapfs_binding_parse(text, &b), -EINVAL);
        assert_int_equal(snapfs_binding_parse("sha256=84B9E5B4126E0E1136BC9E3F11E837EC"
                                              "593FC29B8E4934B424F6DA483C8187E4 "
                                              "size=176 dev=0:39 ino=3", &b), -EINVAL);
        assert_int_equal(snapfs_binding_parse("sha256=84b9e5b4126e0e1136bc9e3f11e837ec"
                                              "593fc29b8e4934b424f6da483c8187e4 "
                                              "size=0176 dev=0:39 ino=3", &b), -EINVAL);
        assert_int_equal(snapfs_binding_parse("", &b), -EINVAL);
        assert_int_equal(snapfs_binding_parse(NULL, &b), -EINVAL);
        assert_int_equal(snapfs_binding_parse(good_text, NULL), -EINVAL);
        assert_int_equal(snapfs_binding_parse(good_text, &b), 0);
}

static void test_binding_format_refuses_a_short_buffer(void **state)
{
        struct snapfs_binding b;
        char out[SNAPFS_BINDING_TEXT_MAX];
        (void)state;

        assert_int_equal(snapfs_binding_parse(good_text, &b), 0);
        assert_int_equal(snapfs_binding_format(&b, out, strlen(good_text)), -ENOBUFS);
        assert_int_equal(snapfs_binding_format(&b, out, strlen(good_text) + 1), 0);
        assert_int_equal(snapfs_binding_format(NULL, out, sizeof(out)), -EINVAL);
}

static void test_strerror_names_the_library_meaning(void **state)
{
        (void)state;
        assert_string_equal(snapfs_strerror(-EMEDIUMTYPE), "not a compliant snapfs mount");
        assert_string_equal(snapfs_strerror(-ESTALE),
                            "not the snapshot the binding names: dev, ino or size differ");
        assert_string_equal(snapfs_strerror(-EBADMSG),
                            "content does not hash to the binding's SHA-256");
        assert_string_equal(snapfs_strerror(-ENOMSG),
                            "not a kind of snapshot asked for (a signature envelope or a "
                            "manifest is not content)");
        assert_string_equal(snapfs_strerror(0), "success");
        assert_string_equal(snapfs_strerror(1), "success");
        /* Anything else: the C library's description, never NULL. */
        assert_string_equal(snapfs_strerror(-ENOSPC), strerrordesc_np(ENOSPC));
        assert_non_null(snapfs_strerror(-100000));
}

static void test_report_counts_reasons_past_its_capacity(void **state)
{
        struct snapfs_report why;
        (void)state;

        sfc_report_reset(&why);
        for (int i = 0; i < SNAPFS_REASONS_MAX + 3; i++)
                sfc_report_add(&why, "stacked", "reason %d", i);
        assert_int_equal(why.n_reasons, SNAPFS_REASONS_MAX);
        assert_int_equal(why.n_dropped, 3);
        assert_string_equal(why.reasons[SNAPFS_REASONS_MAX - 1].message, "reason 39");
        sfc_report_reset(&why);
        assert_int_equal(why.n_reasons, 0);
        assert_int_equal(why.n_dropped, 0);
}

static void test_report_keeps_each_reason_on_one_line(void **state)
{
        struct snapfs_report why;
        (void)state;

        sfc_report_reset(&why);
        assert_int_equal(sfc_report_fail(&why, -ENOENT, "open", "a\nforged: line\tand\x1b[m"),
                         -ENOENT);
        assert_int_equal(why.error, -ENOENT);
        assert_string_equal(why.reasons[0].code, "open");
        assert_string_equal(why.reasons[0].message, "a?forged: line?and?[m");
}

static void test_report_may_be_null(void **state)
{
        (void)state;
        sfc_report_reset(NULL);
        sfc_report_add(NULL, "x", "y");
        assert_int_equal(sfc_report_fail(NULL, -EIO, "x", "y"), -EIO);
        assert_int_equal(snapfs_open_verified(NULL, NULL, NULL, NULL), -EINVAL);
}

static void test_bad_arguments_are_einval_with_a_reason(void **state)
{
        struct snapfs_report why;
        struct snapfs_binding b;
        (void)state;

        assert_int_equal(snapfs_binding_parse(good_text, &b), 0);
        assert_int_equal(snapfs_open_verified(NULL, &b, NULL, &why), -EINVAL);
        assert_string_equal(why.reasons[0].code, "invalid-argument");
        assert_int_equal(snapfs_open_verified("/run/snapfs", NULL, NULL, &why), -EINVAL);
        assert_int_equal(snapfs_open_digest("/run/snapfs", "ABC", NULL, &b, &why), -EINVAL);
        assert_string_equal(why.reasons[0].code, "invalid-argument");
        assert_int_equal(snapfs_publish("/run/snapfs", NULL, 5, NULL, &b, &why), -EINVAL);
        assert_int_equal(snapfs_publish_fd("/run/snapfs", -1, NULL, &b, &why), -EINVAL);
        assert_int_equal(snapfs_verify_fd(-1, &b, NULL, &why), -EINVAL);
        assert_int_equal(why.error, -EINVAL);
}

static void test_publish_past_the_client_limit_is_efbig_before_any_mount_work(void **state)
{
        struct snapfs_options o = { .max_size = 4 };
        struct snapfs_report why;
        struct snapfs_binding b;
        (void)state;

        /* The mount does not even exist: the size is refused first. */
        assert_int_equal(snapfs_publish("/nonexistent/snapfs", "12345", 5, &o, &b, &why), -EFBIG);
        assert_string_equal(why.reasons[0].code, "too-big");
        assert_int_equal(snapfs_publish("/nonexistent/snapfs", "1234", 4, &o, &b, &why), -ENOENT);
        assert_string_equal(why.reasons[0].code, "mount-check");
}

static void test_options_with_a_reserved_word_set_are_einval_and_zero_ones_go_on(void **state)
{
        static const char hex[] = "abababababababababababababababababababababababababababababababab";
        struct snapfs_options o = { .max_size = 4 };
        struct snapfs_report why;
        struct snapfs_binding b;
        (void)state;

        /* Zero: the mount check runs (and finds no mount there). */
        assert_int_equal(snapfs_open_digest("/nonexistent/snapfs", hex, &o, &b, &why), -ENOENT);
        assert_string_equal(why.reasons[0].code, "mount-check");
        for (size_t i = 0; i < sizeof(o.reserved) / sizeof(o.reserved[0]); i++) {
                o.reserved[i] = 1;
                assert_int_equal(snapfs_open_digest("/nonexistent/snapfs", hex, &o, &b, &why),
                                 -EINVAL);
                assert_string_equal(why.reasons[0].code, "invalid-argument");
                assert_non_null(strstr(why.reasons[0].message, "reserved"));
                o.reserved[i] = 0;
        }
        assert_true(why.reserved[0] == 0 && why.reserved[3] == 0);
}

static void test_a_plain_directory_is_not_a_snapfs_mount(void **state)
{
        struct snapfs_report why;
        struct snapfs_binding b;
        struct tu_dir d;
        bool not_a_mount = false;
        (void)state;

        assert_int_equal(tu_dir_make(&d), 0);
        assert_int_equal(snapfs_publish(d.path, "x", 1, NULL, &b, &why), -EMEDIUMTYPE);
        for (unsigned i = 0; i < why.n_reasons; i++)
                not_a_mount |= strcmp(why.reasons[i].code, "not-a-mount-point") == 0;
        assert_true(not_a_mount);
        tu_dir_remove(&d);
}

/* A mode-0000 file with known content and its binding, for snapfs_verify_fd. */
struct fx {
        struct tu_dir dir;
        int fd;
        struct snapfs_binding b;
};

static int setup(void **state)
{
        static const char content[] = "{\"mcpServers\": {}}";
        struct fx *f = calloc(1, sizeof(*f));
        struct snap_digest d;
        struct stat st;

        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        f->fd = tu_create(&f->dir, "snap", content, sizeof(content) - 1);
        assert_true(f->fd >= 0);
        assert_int_equal(fchmod(f->fd, 0), 0);
        assert_int_equal(fstat(f->fd, &st), 0);
        assert_int_equal(snap_sha256(content, sizeof(content) - 1, &d), 0);
        memcpy(f->b.sha256, d.bytes, sizeof(f->b.sha256));
        f->b.size = (uint64_t)st.st_size;
        f->b.dev = st.st_dev;
        f->b.ino = st.st_ino;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        close(f->fd);
        tu_dir_remove(&f->dir);
        free(f);
        return 0;
}

static void test_describe_fd_refuses_another_snapshot_and_describes_its_own(void **state)
{
        struct fx *f = *state;
        struct snapfs_binding other = f->b;
        struct snapfs_snapshot s;
        struct stat st;

        assert_int_equal(snapfs_describe_fd(-1, &f->b, &s), -EINVAL);
        assert_int_equal(snapfs_describe_fd(f->fd, NULL, &s), -EINVAL);
        assert_int_equal(snapfs_describe_fd(f->fd, &f->b, NULL), -EINVAL);
        other.ino++;
        assert_int_equal(snapfs_describe_fd(f->fd, &other, &s), -ESTALE);
        other = f->b;
        other.size++;
        assert_int_equal(snapfs_describe_fd(f->fd, &other, &s), -ESTALE);
        /* Its own: the inode's time and owner; a file without the daemon's xattrs has no
         * name and a kind nobody said. */
        assert_int_equal(snapfs_describe_fd(f->fd, &f->b, &s), 0);
        assert_int_equal(fstat(f->fd, &st), 0);
        assert_memory_equal(&s.binding, &f->b, sizeof(f->b));
        assert_int_equal(s.published_sec, st.st_mtim.tv_sec);
        assert_int_equal(s.published_nsec, st.st_mtim.tv_nsec);
        assert_int_equal(s.publisher, st.st_uid);
        assert_string_equal(s.name, "");
        assert_int_equal(s.kind, SNAPFS_KIND_UNKNOWN);
}

static void test_verify_fd_accepts_its_binding(void **state)
{
        struct fx *f = *state;
        struct snapfs_report why;

        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, NULL, &why), 0);
        assert_int_equal(why.error, 0);
        assert_int_equal(why.n_reasons, 0);
}

static void test_verify_fd_refuses_another_digest(void **state)
{
        struct fx *f = *state;
        struct snapfs_report why;

        f->b.sha256[5] ^= 1;
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, NULL, &why), -EBADMSG);
        assert_int_equal(why.n_reasons, 1);
        assert_string_equal(why.reasons[0].code, "digest-mismatch");
        f->b.sha256[5] ^= 1;
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, NULL, &why), 0);
}

static void test_verify_fd_refuses_another_inode(void **state)
{
        struct fx *f = *state;
        struct snapfs_report why;

        f->b.ino++;
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, NULL, &why), -ESTALE);
        assert_string_equal(why.reasons[0].code, "identity");
}

static void test_verify_fd_refuses_a_mode_chmoded_back(void **state)
{
        struct fx *f = *state;
        struct snapfs_report why;

        /* The anonymous-file hole: the owner makes it 0600 again. */
        assert_int_equal(fchmod(f->fd, 0600), 0);
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, NULL, &why), -EPERM);
        assert_string_equal(why.reasons[0].code, "mode");
}

static void test_verify_fd_applies_the_size_limit(void **state)
{
        struct fx *f = *state;
        struct snapfs_options o = { .max_size = f->b.size - 1 };
        struct snapfs_report why;

        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, &o, &why), -EFBIG);
        assert_string_equal(why.reasons[0].code, "too-big");
        o.max_size = f->b.size;
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, &o, &why), 0);
}

/* A mode-0000 file holding len bytes of data in f's directory, and its binding. */
static int make_snapshot_file(struct fx *f, const char *name, const void *data, size_t len,
                              struct snapfs_binding *b)
{
        struct snap_digest d;
        struct stat st;
        int fd = tu_create(&f->dir, name, data, len);

        assert_true(fd >= 0);
        assert_int_equal(fchmod(fd, 0), 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(snap_sha256(data, len, &d), 0);
        memcpy(b->sha256, d.bytes, sizeof(b->sha256));
        b->size = (uint64_t)st.st_size;
        b->dev = st.st_dev;
        b->ino = st.st_ino;
        return fd;
}

static void test_verify_fd_refuses_a_signature_envelope_as_content_and_gives_it_when_asked(
        void **state)
{
        struct fx *f = *state;
        struct snapfs_options o = { 0 };
        struct snapfs_report why;
        struct snapfs_binding eb;
        struct snap_digest md;
        EVP_PKEY *key = NULL;
        char *json;
        size_t len;
        int fd;

        assert_int_equal(snap_oci_key_generate(&key), 0);
        assert_int_equal(snap_sha256("manifest", 8, &md), 0);
        assert_int_equal(snap_oci_sign(key, &md, 8, &json, &len), 0);
        fd = make_snapshot_file(f, "envelope", json, len, &eb);
        /* It verifies (the bytes are the bound ones), and is still not content. */
        assert_int_equal(snapfs_verify_fd(fd, &eb, NULL, &why), -ENOMSG);
        assert_int_equal(why.n_reasons, 1);
        assert_string_equal(why.reasons[0].code, "kind");
        assert_non_null(strstr(why.reasons[0].message, "signature"));
        o.flags = SNAPFS_OPT_KIND_SIGNATURE;
        assert_int_equal(snapfs_verify_fd(fd, &eb, &o, &why), 0);
        /* Asked for signatures only, a config is refused; asked for both, both pass. */
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, &o, &why), -ENOMSG);
        o.flags |= SNAPFS_OPT_KIND_CONTENT;
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, &o, &why), 0);
        assert_int_equal(snapfs_verify_fd(fd, &eb, &o, &why), 0);
        assert_int_equal(snapfs_verify_fd(f->fd, &f->b, NULL, &why), 0);
        close(fd);
        free(json);
        EVP_PKEY_free(key);
}

static void test_verify_fd_refuses_a_manifest_as_content_and_gives_it_when_asked(void **state)
{
        struct fx *f = *state;
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        struct snapfs_options o = { .flags = SNAPFS_OPT_KIND_MANIFEST };
        struct snapfs_report why;
        struct snapfs_binding mb;
        char *json;
        size_t len;
        int fd;

        snap_oci_desc_empty_config(&m.config);
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        fd = make_snapshot_file(f, "manifest", json, len, &mb);
        assert_int_equal(snapfs_verify_fd(fd, &mb, NULL, &why), -ENOMSG);
        assert_string_equal(why.reasons[0].code, "kind");
        assert_int_equal(snapfs_verify_fd(fd, &mb, &o, &why), 0);
        close(fd);
        free(json);
}

static void test_open_below_the_root_refuses_a_symlink_and_dotdot(void **state)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        struct tu_dir d;
        char p[PATH_MAX];
        int fd;
        (void)state;

        assert_int_equal(tu_dir_make(&d), 0);
        assert_int_equal(symlink("/etc/hostname", tu_path(&d, "link", p)), 0);
        fd = tu_create(&d, "file", "x", 1);
        assert_true(fd >= 0);
        close(fd);
        m.fd = open(d.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(m.fd >= 0);

        assert_int_equal(sfc_mnt_open(&m, "link", O_RDONLY, 0), -ELOOP);
        /* RESOLVE_BENEATH: ".." never climbs out of the judged root. */
        assert_int_equal(sfc_mnt_open(&m, "../etc", O_RDONLY, 0), -EXDEV);
        assert_int_equal(sfc_mnt_open(&m, "/etc/hostname", O_RDONLY, 0), -EXDEV);
        fd = sfc_mnt_open(&m, "file", O_RDONLY, 0);
        assert_true(fd >= 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        close(fd);
        sfc_mnt_close(&m);
        assert_int_equal(m.fd, -1);
        tu_dir_remove(&d);
}

static void test_open_below_the_root_refuses_leaving_the_mount(void **state)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        (void)state;

        /* /proc is a mount of its own below /: RESOLVE_NO_XDEV stops at its root. */
        m.fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(m.fd >= 0);
        assert_int_equal(sfc_mnt_open(&m, "proc/self/status", O_RDONLY, 0), -EXDEV);
        sfc_mnt_close(&m);
        m.fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(m.fd >= 0);
        int fd = sfc_mnt_open(&m, "self/status", O_RDONLY, 0);
        /* /proc/self is a symlink: refused too; the mount's own file opens. */
        assert_int_equal(fd, -ELOOP);
        fd = sfc_mnt_open(&m, "uptime", O_RDONLY, 0);
        assert_true(fd >= 0);
        close(fd);
        sfc_mnt_close(&m);
}

static void test_the_fallback_without_openat2_refuses_the_same(void **state)
{
        struct tu_dir d;
        char p[PATH_MAX];
        int root, fd;
        (void)state;

        assert_int_equal(tu_dir_make(&d), 0);
        assert_int_equal(symlink("/etc", tu_path(&d, "link", p)), 0);
        assert_int_equal(mkdir(tu_path(&d, "sub", p), 0755), 0);
        fd = tu_create(&d, "sub/file", "x", 1);
        assert_true(fd >= 0);
        close(fd);
        root = open(d.path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(root >= 0);
        assert_int_equal(sfc_open_beneath_by_hand(root, "link", O_RDONLY, 0), -ELOOP);
        assert_int_equal(sfc_open_beneath_by_hand(root, "link/hostname", O_RDONLY, 0), -ELOOP);
        assert_int_equal(sfc_open_beneath_by_hand(root, "../etc", O_RDONLY, 0), -EXDEV);
        assert_int_equal(sfc_open_beneath_by_hand(root, "sub/../sub/file", O_RDONLY, 0),
                         -EXDEV);
        assert_int_equal(sfc_open_beneath_by_hand(root, "/etc/hostname", O_RDONLY, 0), -EXDEV);
        fd = sfc_open_beneath_by_hand(root, "sub/file", O_RDONLY, 0);
        assert_true(fd >= 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        close(fd);
        close(root);
        /* /proc is another mount below /. */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(sfc_open_beneath_by_hand(root, "proc/uptime", O_RDONLY, 0), -EXDEV);
        close(root);
        assert_int_equal(unlink(tu_path(&d, "sub/file", p)), 0); /* tu_dir_remove goes one level */
        assert_int_equal(rmdir(tu_path(&d, "sub", p)), 0);
        tu_dir_remove(&d);
}

static void test_usage_text_parses_into_limits_and_uids(void **state)
{
        struct sfc_usage u;
        (void)state;

        assert_int_equal(sfc_usage_parse("limits uid-snapshots=2 uid-bytes=1048576 owner=0 "
                                         "reserve-snapshots=256 reserve-bytes=4194304\n"
                                         "uid=1000 snapshots=2 bytes=7 staging=1 "
                                         "staging-bytes=5\nmore=3\n",
                                         &u),
                         0);
        assert_int_equal(u.uid_snapshots, 2);
        assert_int_equal(u.uid_bytes, 1048576);
        assert_int_equal(u.reserve_snapshots, 256);
        assert_int_equal(u.n, 1);
        assert_int_equal(u.uids[0].uid, 1000);
        assert_int_equal(u.uids[0].staging_bytes, 5);
        assert_int_equal(u.more, 3);
        sfc_usage_free(&u);
}

static void test_usage_text_that_is_not_its_form_is_ebadmsg(void **state)
{
        static const char *bad[] = {
                "",
                "uid=1000 snapshots=2 bytes=7 staging=1 staging-bytes=5\n",
                "limits uid-snapshots=2 uid-bytes=1 owner=0 reserve-snapshots=1\n",
                "limits uid-snapshots=+2 uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1\n",
                "limits uid-snapshots=2 uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1 x=1\n",
                "limits uid-snapshots=2 uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1\nuid=4294967296 snapshots=0 bytes=0 staging=0 "
                "staging-bytes=0\n",
                "limits uid-snapshots=99999999999999999999 uid-bytes=1 owner=0 "
                "reserve-snapshots=1 reserve-bytes=1\n",
        };
        struct sfc_usage u;
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfc_usage_parse(bad[i], &u), -EBADMSG);
}

static void test_usage_fields_without_digits_or_key_are_ebadmsg_and_the_form_parses(void **state)
{
        static const char *bad[] = {
                /* "limits " and nothing: no field at all. */
                "limits \n",
                "limits uid-snapshots= uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1\n",
                /* The "more=" line has no field after it to catch what a field left. */
                "limits uid-snapshots=2 uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1\nmore=5x\n",
                "limits uid-snapshots=2 uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1\nmore=\n",
                "limits uid-snapshots=2 uid-bytes=1 owner=0 reserve-snapshots=1 "
                "reserve-bytes=1\nmore=18446744073709551616\n",
        };
        static const char good[] = "limits uid-snapshots=2 uid-bytes=1 owner=0 "
                                   "reserve-snapshots=1 reserve-bytes=1\nmore=5\n";
        struct sfc_usage u;
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfc_usage_parse(bad[i], &u), -EBADMSG);
        assert_int_equal(sfc_usage_parse(good, &u), 0);
        assert_int_equal(u.more, 5);
        sfc_usage_free(&u);
}

static void test_usage_value_with_a_nul_inside_is_ebadmsg(void **state)
{
        char buf[128];
        static const char text[] = "limits uid-snapshots=2 uid-bytes=1 owner=0 "
                                   "reserve-snapshots=1 reserve-bytes=1\n";
        struct sfc_usage u;
        size_t n = sizeof(text) - 1;
        (void)state;

        memcpy(buf, text, n);
        assert_int_equal(sfc_usage_parse_value(buf, n, &u), 0);
        sfc_usage_free(&u);
        memcpy(buf, text, n);
        buf[6] = '\0';
        assert_int_equal(sfc_usage_parse_value(buf, n, &u), -EBADMSG);
}

static void test_oci_reference_needs_the_transport_a_directory_and_a_tag(void **state)
{
        static const char *bad[] = { "docker://host/x:1", "dir:/tmp/x:1", "oci:", "oci:dir",
                                     "oci::tag", "oci:dir:" };
        const char *ref = NULL;
        char *dir = NULL;
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(sfc_oci_ref_parse(bad[i], &dir, &ref), -EINVAL);
                assert_null(dir);
        }
        assert_int_equal(sfc_oci_ref_parse("oci:/srv/layout:v1", &dir, &ref), 0);
        assert_string_equal(dir, "/srv/layout");
        assert_string_equal(ref, "v1");
        free(dir);
}

static void test_a_named_publish_refuses_a_name_outside_the_grammar_before_the_mount(void **state)
{
        static const char *const bad[] = { "", ".hidden", "_scratch", "a/b", "sp ace", "x\n",
                                           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" };
        struct snapfs_snapshot s;
        struct snapfs_report why;
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_false(sfc_name_ok(bad[i]));
                assert_int_equal(snapfs_publish_named("/nonexistent/snapfs", bad[i], "x", 1, NULL,
                                                      &s, &why),
                                 -EINVAL);
                assert_string_equal(why.reasons[0].code, "invalid-argument");
        }
        /* A name of the grammar gets as far as the mount, which is not there. */
        assert_true(sfc_name_ok("mcp.json"));
        assert_int_equal(snapfs_publish_named("/nonexistent/snapfs", "mcp.json", "x", 1, NULL, &s,
                                              &why),
                         -ENOENT);
        assert_string_equal(why.reasons[0].code, "mount-check");
        assert_non_null(strstr(why.reasons[0].message, "run `snapfs mount /nonexistent/snapfs`"));
}

static void test_the_client_limit_names_itself_and_its_option(void **state)
{
        struct snapfs_options o = { .max_size = 256 * 1024 };
        struct snapfs_snapshot s;
        struct snapfs_report why;
        static char big[300000];
        (void)state;

        assert_int_equal(snapfs_publish_named("/nonexistent/snapfs", NULL, big, sizeof(big), &o,
                                              &s, &why),
                         -EFBIG);
        assert_string_equal(why.reasons[0].message,
                            "300000 bytes is over the client's limit of 256K (the max_size "
                            "option of the client library)");
}

static void test_sizes_are_spelled_as_the_size_grammar_takes_them(void **state)
{
        char buf[32];
        (void)state;

        assert_string_equal(sfc_size_text(262144, buf, sizeof(buf)), "256K");
        assert_string_equal(sfc_size_text(UINT64_C(1) << 30, buf, sizeof(buf)), "1G");
        assert_string_equal(sfc_size_text(UINT64_C(64) << 20, buf, sizeof(buf)), "64M");
        assert_string_equal(sfc_size_text(UINT64_C(3) << 40, buf, sizeof(buf)), "3072G");
        assert_string_equal(sfc_size_text(300000, buf, sizeof(buf)), "300000 bytes");
        assert_string_equal(sfc_size_text(0, buf, sizeof(buf)), "0 bytes");
}

static void test_the_daemons_refusal_parses_into_its_code_and_limit_and_nothing_else(
        void **state)
{
        static const char *const bad[] = { "", " too-big", "Too-big", "too-big ", "too-big x",
                                           "too-big max=", "too-big max=12a", "a\nb", "x=1",
                                           "too_big" };
        char code[40];
        uint64_t v;
        (void)state;

        assert_int_equal(sfc_refusal_parse("too-big max-snapshot-size=262144", code,
                                              sizeof(code), &v),
                         0);
        assert_string_equal(code, "too-big");
        assert_int_equal(v, 262144);
        assert_int_equal(sfc_refusal_parse("not-in-signed-manifest", code, sizeof(code), &v),
                         0);
        assert_string_equal(code, "not-in-signed-manifest");
        assert_int_equal(v, 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfc_refusal_parse(bad[i], code, sizeof(code), &v), -EBADMSG);
        /* A code longer than the room for it is refused, never cut. */
        assert_int_equal(sfc_refusal_parse("not-in-signed-manifest", code, 8, &v), -EBADMSG);
}

static void test_the_daemons_reasons_say_what_to_do(void **state)
{
        struct snapfs_report why;
        (void)state;

        sfc_report_reset(&why);
        assert_int_equal(sfc_explain_daemon(&why, -EPERM, "not-in-signed-manifest", 0),
                         -EPERM);
        assert_string_equal(why.reasons[0].code, "not-in-signed-manifest");
        assert_non_null(strstr(why.reasons[0].message, "snapfs import"));
        sfc_report_reset(&why);
        sfc_explain_daemon(&why, -EDQUOT, "staging-bytes", 4 << 20);
        assert_non_null(strstr(why.reasons[0].message, "limit of 4M per uid (snapfs mount "
                                                       "--max-staging-bytes)"));
        sfc_report_reset(&why);
        assert_int_equal(sfc_explain_daemon(&why, -ENOSPC, "reserved", 2 << 20), -ENOSPC);
        assert_string_equal(why.reasons[0].code, "reserved");
        assert_non_null(strstr(why.reasons[0].message, "is reserved: 2M kept for other scopes'"));
        sfc_report_reset(&why);
        sfc_explain_too_big(&why, -EFBIG, 0, false, 262144, true);
        assert_string_equal(why.reasons[0].message,
                            "the content is over the daemon's limit of 256K (snapfs mount "
                            "--max-snapshot-size, at most 1G)");
}

/* A catalog of three snapshots: two named cfg, one named other, no mount needed. */
static void catalog(struct sfc_entry e[3])
{
        static const char *const names[] = { "cfg", "cfg", "other" };
        static const char *const data[] = { "a", "b", "c" };

        for (int i = 0; i < 3; i++) {
                struct snap_digest d;
                e[i] = (struct sfc_entry){ 0 };
                assert_int_equal(snap_sha256(data[i], 1, &d), 0);
                snap_digest_to_hex(&d, e[i].hex);
                memcpy(e[i].snap.binding.sha256, d.bytes, SNAPFS_DIGEST_LEN);
                e[i].snap.binding.size = 1;
                e[i].snap.binding.dev = 77;
                e[i].snap.binding.ino = (uint64_t)i + 3;
                snprintf(e[i].snap.name, sizeof(e[i].snap.name), "%s", names[i]);
        }
}

/* sfc_catalog_match with a fresh report (it adds to what a caller gives it). */
static int match(const struct sfc_entry *e, const char *target, bool all, size_t *m,
                 size_t *k, struct snapfs_report *why)
{
        sfc_report_reset(why);
        return sfc_catalog_match(e, 3, target, all, m, 3, k, why);
}

static void test_rm_targets_match_a_name_a_prefix_or_a_binding_exactly(void **state)
{
        struct sfc_entry e[3];
        struct snapfs_report why;
        char text[SNAPFS_BINDING_TEXT_MAX], prefix[13];
        size_t m[3], k;
        (void)state;

        catalog(e);
        assert_int_equal(match(e, "other", false, m, &k, &why), 0);
        assert_int_equal(k, 1);
        assert_int_equal(m[0], 2);
        /* A name of two: refused unless all, then both. */
        assert_int_equal(match(e, "cfg", false, m, &k, &why), -ENOTUNIQ);
        assert_string_equal(why.reasons[0].code, "ambiguous");
        assert_int_equal(match(e, "cfg", true, m, &k, &why), 0);
        assert_int_equal(k, 2);
        /* The first 12 characters of a digest, as ls shows it; 11 are too few to be one. */
        snprintf(prefix, sizeof(prefix), "%.12s", e[1].hex);
        assert_int_equal(match(e, prefix, false, m, &k, &why), 0);
        assert_int_equal(m[0], 1);
        prefix[11] = '\0';
        assert_int_equal(match(e, prefix, false, m, &k, &why), -ENOENT);
        assert_string_equal(why.reasons[0].code, "no-such-snapshot");
        /* A binding: exactly its inode; the same digest at another is another snapshot. */
        assert_int_equal(snapfs_binding_format(&e[0].snap.binding, text, sizeof(text)), 0);
        assert_int_equal(match(e, text, false, m, &k, &why), 0);
        assert_int_equal(m[0], 0);
        e[0].snap.binding.ino = 99;
        assert_int_equal(match(e, text, false, m, &k, &why), -ESTALE);
        assert_int_equal(match(e, "sha256=xyz", false, m, &k, &why),
                         -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_binding_text_round_trips),
                T(test_usage_fields_without_digits_or_key_are_ebadmsg_and_the_form_parses),
                T(test_usage_value_with_a_nul_inside_is_ebadmsg),
                T(test_oci_reference_needs_the_transport_a_directory_and_a_tag),
                T(test_binding_parse_refuses_a_second_spelling),
                T(test_binding_format_refuses_a_short_buffer),
                T(test_strerror_names_the_library_meaning),
                T(test_report_counts_reasons_past_its_capacity),
                T(test_report_keeps_each_reason_on_one_line),
                T(test_report_may_be_null),
                T(test_bad_arguments_are_einval_with_a_reason),
                T(test_publish_past_the_client_limit_is_efbig_before_any_mount_work),
                T(test_a_named_publish_refuses_a_name_outside_the_grammar_before_the_mount),
                T(test_the_client_limit_names_itself_and_its_option),
                T(test_sizes_are_spelled_as_the_size_grammar_takes_them),
                T(test_the_daemons_refusal_parses_into_its_code_and_limit_and_nothing_else),
                T(test_the_daemons_reasons_say_what_to_do),
                T(test_rm_targets_match_a_name_a_prefix_or_a_binding_exactly),
                T(test_options_with_a_reserved_word_set_are_einval_and_zero_ones_go_on),
                T(test_a_plain_directory_is_not_a_snapfs_mount),
                T(test_usage_text_parses_into_limits_and_uids),
                T(test_usage_text_that_is_not_its_form_is_ebadmsg),
                cmocka_unit_test_setup_teardown(test_verify_fd_accepts_its_binding, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(
                        test_describe_fd_refuses_another_snapshot_and_describes_its_own, setup,
                        teardown),
                cmocka_unit_test_setup_teardown(test_verify_fd_refuses_another_digest, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_verify_fd_refuses_another_inode, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_verify_fd_refuses_a_mode_chmoded_back, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(
                        test_verify_fd_refuses_a_signature_envelope_as_content_and_gives_it_when_asked,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(
                        test_verify_fd_refuses_a_manifest_as_content_and_gives_it_when_asked,
                        setup, teardown),
                cmocka_unit_test_setup_teardown(test_verify_fd_applies_the_size_limit, setup,
                                                teardown),
                T(test_open_below_the_root_refuses_a_symlink_and_dotdot),
                T(test_open_below_the_root_refuses_leaving_the_mount),
                T(test_the_fallback_without_openat2_refuses_the_same),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
