/* SPDX-License-Identifier: MIT */
/* Publishing: docs/design.md "Publishing (write, then rename)", from the client's side. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "common/util.h"

/* Reads and writes in this size: FUSE splits larger writes into max_write pieces anyway. */
#define CHUNK (128u * 1024)
/* Staging names are random; a collision (EEXIST) just draws another. */
#define STAGING_TRIES 8
/* An EEXIST rename whose existing snapshot is unlinked before we open it: rename again. */
#define RENAME_TRIES 4

/* Where the bytes come from: a buffer, or a descriptor read to its end. size is what a
 * message about a limit can say of it: the buffer's length, or a regular file's remaining
 * bytes (size_known false for a pipe or a socket, which say nothing before their end). */
struct source {
        const uint8_t *data;
        size_t len, off;
        int fd;
        uint64_t size;
        bool size_known;
};

/* Next piece: 0 with *n > 0, 0 with *n == 0 at the end, or a negative errno. */
static int source_next(struct source *s, uint8_t *buf, const uint8_t **p, size_t *n)
{
        if (s->fd < 0) {
                size_t left = s->len - s->off;
                *n = left < CHUNK ? left : CHUNK;
                *p = s->data + s->off;
                s->off += *n;
                return 0;
        }
        for (;;) {
                ssize_t k = read(s->fd, buf, CHUNK);
                if (k >= 0) {
                        *n = (size_t)k;
                        *p = buf;
                        return 0;
                }
                if (errno != EINTR)
                        return negative_errno();
        }
}

static void source_measure(struct source *s)
{
        struct stat st;
        off_t pos;

        if (s->fd < 0) {
                s->size = s->len;
                s->size_known = true;
        } else if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode) &&
                   (pos = lseek(s->fd, 0, SEEK_CUR)) >= 0 && pos <= st.st_size) {
                s->size = (uint64_t)(st.st_size - pos);
                s->size_known = true;
        }
}

/* A scratch staging NAME (docs/design.md, "Publishing"): it starts with '_', so the daemon
 * keeps no name for the snapshot. */
static void staging_name(char *out, size_t n)
{
        static atomic_uint counter;
        uint64_t rnd = 0;

        /* Unpredictable, so another process of the same uid cannot pre-create the name and
         * make us fail; the counter and the clock keep it unique if getrandom is missing. */
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                rnd = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
        }
        snprintf(out, n, ".staging/_lib-%d-%u-%016" PRIx64, (int)getpid(),
                 atomic_fetch_add(&counter, 1), rnd);
}

static const char *describe(int r)
{
        return strerrordesc_np(-r) ?: "unknown error";
}

/* A write the daemon refused: which limit, from the staging file's refusal xattr. */
static int write_refused(const struct sfc_mnt *m, int fd, const struct source *src,
                         uint64_t written, int err, struct snapfs_report *why)
{
        char code[40];
        uint64_t value;

        if (sfc_refusal_read(fd, code, sizeof(code), &value) == 0) {
                if (strcmp(code, "too-big") == 0)
                        return sfc_explain_too_big(why, err,
                                                      src->size_known ? src->size : value,
                                                      src->size_known, value, true);
                return sfc_explain_daemon(why, err, code, value);
        }
        /* A daemon that keeps no reason: it took written bytes, and no more. */
        if (err == -EFBIG)
                return sfc_report_fail(why, err, "too-big",
                                          "the content is over the daemon's snapshot size limit "
                                          "(it took %" PRIu64 " bytes; snapfs mount "
                                          "--max-snapshot-size)", written);
        return sfc_explain_publish(m, why, err, "write", "writing the staging file");
}

/* Copies the source into the staging descriptor, hashing what it writes. */
static int copy_in(const struct sfc_mnt *m, int fd, struct source *src, uint64_t limit,
                   struct snap_hasher *h, uint64_t *written, struct snapfs_report *why)
{
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t total = 0;
        int r;

        if (src->fd >= 0) {
                buf = malloc(CHUNK);
                if (!buf)
                        return sfc_report_fail(why, -ENOMEM, "read", "out of memory");
        }
        for (;;) {
                const uint8_t *p;
                size_t n;

                r = source_next(src, buf, &p, &n);
                if (r < 0)
                        return sfc_report_fail(why, r, "read", "reading the content: %s",
                                               describe(r));
                if (n == 0) {
                        *written = total;
                        return 0;
                }
                if (total + n > limit)
                        return sfc_explain_too_big(why, -EFBIG,
                                                      src->size_known ? src->size : limit,
                                                      src->size_known, limit, false);
                r = snap_hasher_update(h, p, n);
                if (r < 0)
                        return sfc_report_fail(why, r, "io", "hashing: %s", describe(r));
                r = loop_write(fd, p, n);
                if (r < 0)
                        return write_refused(m, fd, src, total, r, why);
                total += n;
        }
}

/* A rename the daemon refused: its own reason when it kept one on the staging file (a
 * --trust-key refusal), else what the errno means here. */
static int rename_refused(const struct sfc_mnt *m, const char *staged, const char *hex,
                          int err, struct snapfs_report *why)
{
        _cleanup_close_ int fd = sfc_mnt_open(m, staged, O_PATH, 0);
        char code[40], what[96];
        uint64_t value;

        if (fd >= 0 && sfc_refusal_read(fd, code, sizeof(code), &value) == 0)
                return sfc_explain_daemon(why, err, code, value);
        snprintf(what, sizeof(what), "publishing %.12s...", hex);
        return sfc_explain_publish(m, why, err, "rename", what);
}

/* The snapshot just published (or found published), described through the mount: a
 * publisher the mount does not let read gets its binding from the snapshot's own fstat,
 * through an O_PATH descriptor on the judged mount, and the content rests on the daemon's
 * word: it hashed the bytes to this name before it published them. Readers verify everything
 * when they open it. */
static int identity_only(const struct sfc_mnt *m, const char *hex, uint64_t size,
                         struct snapfs_snapshot *out, struct snapfs_report *why)
{
        int r = sfc_mnt_describe(m, hex, NULL, out, why);

        if (r < 0)
                return r;
        if (out->binding.size != size)
                return sfc_report_fail(why, -ESTALE, "identity",
                                       "%s is not a mode-0000 file of %" PRIu64 " bytes", hex,
                                       size);
        return 0;
}

/* A new staging file on m, its path in staged: named name when given (when taken, a scratch
 * name, or -EBUSY when strict), else a scratch name. Its descriptor, or -errno said in why. */
static int open_staging(const struct sfc_mnt *m, const char *name, bool strict, char *staged,
                        size_t size, struct snapfs_report *why)
{
        int fd = -EEXIST;

        /* The staging NAME is what the daemon keeps as the snapshot's name. */
        if (name) {
                snprintf(staged, size, ".staging/%s", name);
                fd = sfc_mnt_open(m, staged, O_WRONLY | O_CREAT | O_EXCL, 0600);
                if (fd == -EEXIST && strict)
                        return sfc_report_fail(why, -EBUSY, "staging",
                                               "a staging file named %s of your uid exists "
                                               "already: another publish under that name runs, "
                                               "or one was interrupted (the daemon removes it "
                                               "after its --staging-ttl)", name);
        }
        for (int i = 0; fd == -EEXIST && i < STAGING_TRIES; i++) {
                staging_name(staged, size);
                fd = sfc_mnt_open(m, staged, O_WRONLY | O_CREAT | O_EXCL, 0600);
        }
        if (fd < 0)
                return sfc_explain_publish(m, why, fd, "staging", "cannot create a staging file");
        return fd;
}

/* Renames staged to hex (*created false once the staging entry is the snapshot), then binds
 * out to the snapshot published there: 0, 1 when the same bytes were published already, or
 * -errno said in why. */
static int rename_and_bind(const struct sfc_mnt *m, const char *staged, const char *hex,
                           uint64_t limit, uint64_t written, struct snap_hasher *h,
                           bool *created, struct snapfs_snapshot *out, struct snapfs_report *why)
{
        struct snap_binding got;
        int r, already = 0;

        for (int i = 0;; i++) {
                if (renameat(m->fd, staged, m->fd, hex) == 0) {
                        *created = false; /* the staging entry is the snapshot now */
                        already = 0;
                } else if (errno == EEXIST) {
                        already = 1; /* the same bytes are published: bind to those */
                } else {
                        return rename_refused(m, staged, hex, negative_errno(), why);
                }
                /* The binding comes from the published snapshot itself, verified like any
                 * reader would: name, dev, ino and size from its descriptor, content hashed. */
                r = sfc_mnt_open_snapshot(m, hex, NULL, limit, SFC_KINDS_ANY, h, &got, why);
                if (r >= 0) {
                        int k = sfc_fd_describe(r, &got, out);
                        safe_close(r);
                        if (k < 0)
                                return sfc_report_fail(why, k, "io", "fstat %s: %s", hex,
                                                       describe(k));
                        return already;
                }
                if (r == -EACCES) {
                        sfc_report_reset(why);
                        r = identity_only(m, hex, written, out, why);
                        if (r == 0)
                                return already;
                }
                /* Unlinked by its publisher between our rename and open: rename ours again. */
                if (!(already && r == -ENOENT && i + 1 < RENAME_TRIES))
                        return r;
                sfc_report_reset(why);
        }
}

/* Publishes src on the judged mount m: staging file (named name when given: when it is
 * taken, a scratch name, or -EBUSY when strict), content, rename to its digest, then the
 * snapshot itself, verified and described. */
static int publish_on(const struct sfc_mnt *m, struct source *src, const char *name,
                      const char *for_scope, bool strict, const struct snapfs_options *opts,
                      struct snapfs_snapshot *out, struct snapfs_report *why)
{
        struct snap_hasher *h = NULL;
        struct snap_digest d;
        char staged[96], hex[SNAP_DIGEST_HEX_LEN + 1];
        uint64_t limit = sfc_opt_limit(opts), written = 0;
        int fd = -1, r;
        bool created = false;

        source_measure(src);
        r = snap_hasher_new(&h);
        if (r < 0) {
                sfc_report_fail(why, r, "io", "hasher: %s", describe(r));
                goto out;
        }

        fd = open_staging(m, name, strict, staged, sizeof(staged), why);
        if (fd < 0) {
                r = fd;
                goto out;
        }
        created = true;
        r = sfc_mnt_confirm(m, fd);
        if (r < 0) {
                sfc_report_fail(why, r, "other-mount",
                                "the staging file lies on another mount than the one checked");
                goto out;
        }
        /* For a scope: said before a byte is written, so a refusal costs nothing. */
        if (for_scope &&
            fsetxattr(fd, "user.snapfs.for-scope", for_scope, strlen(for_scope), 0) < 0) {
                r = negative_errno();
                sfc_report_fail(why, r, r == -EACCES ? "not-operator" : "scope",
                                r == -EACCES ? "only the mount owner and root publish for a "
                                               "scope"
                                             : "publishing for scope %s: %s",
                                for_scope, describe(r));
                goto out;
        }

        r = copy_in(m, fd, src, limit, h, &written, why);
        if (r < 0)
                goto out;
        /* close is where FUSE reports a failed flush: its result counts. */
        r = close(fd) < 0 ? negative_errno() : 0;
        fd = -1;
        if (r < 0) {
                sfc_report_fail(why, r, "write", "closing the staging file: %s", describe(r));
                goto out;
        }
        r = snap_hasher_final(h, &d);
        if (r < 0) {
                sfc_report_fail(why, r, "io", "hashing: %s", describe(r));
                goto out;
        }
        snap_digest_to_hex(&d, hex);

        r = rename_and_bind(m, staged, hex, limit, written, h, &created, out, why);
out:
        safe_close(fd);
        /* Removed in every outcome: a staging file left behind would count against the
         * uid's staging quota and hold the bytes. */
        if (created)
                (void)unlinkat(m->fd, staged, 0);
        snap_hasher_free(h);
        return r;
}

static int publish(const char *mount, struct source *src, const char *name,
                   const char *for_scope, const struct snapfs_options *opts,
                   struct snapfs_snapshot *out, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        int r;

        sfc_report_reset(why);
        if (!out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no binding to fill");
        if (name && !sfc_name_ok(name))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "'%s' is not a snapshot name: 1-64 of "
                                          "[A-Za-z0-9._-], starting with neither '.' nor '_'",
                                          name);
        if (src->fd < 0 && src->len > sfc_opt_limit(opts))
                return sfc_explain_too_big(why, -EFBIG, src->len, true,
                                              sfc_opt_limit(opts), false);
        /* The mount is judged before a byte is written: a secret must never be handed to a
         * mount that only looks like snapfs. */
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                return r;
        r = publish_on(&m, src, name, for_scope, true, opts, out, why);
        sfc_mnt_close(&m);
        return r;
}

int sfc_mnt_publish(const struct sfc_mnt *m, const void *data, size_t len,
                    const char *name, const struct snapfs_options *opts,
                       struct snapfs_snapshot *out, struct snapfs_report *why)
{
        struct source src = { .data = data ? data : (const uint8_t *)"", .len = len, .fd = -1 };

        sfc_report_reset(why);
        if ((!data && len > 0) || !out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no data");
        if (len > sfc_opt_limit(opts))
                return sfc_explain_too_big(why, -EFBIG, len, true, sfc_opt_limit(opts),
                                              false);
        return publish_on(m, &src, name, NULL, false, opts, out, why);
}

int snapfs_publish_named(const char *mount, const char *name, const void *data, size_t len,
                         const struct snapfs_options *opts, struct snapfs_snapshot *out,
                         struct snapfs_report *why)
{
        struct source src = { .data = data, .len = len, .fd = -1 };

        if (!data && len > 0) {
                sfc_report_reset(why);
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no data");
        }
        if (!data)
                src.data = (const uint8_t *)"";
        return publish(mount, &src, name, NULL, opts, out, why);
}

int snapfs_publish_fd_named(const char *mount, const char *name, int fd,
                            const struct snapfs_options *opts, struct snapfs_snapshot *out,
                            struct snapfs_report *why)
{
        struct source src = { .fd = fd };

        if (fd < 0) {
                sfc_report_reset(why);
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no descriptor");
        }
        return publish(mount, &src, name, NULL, opts, out, why);
}

/* A scope or entry name: 1-SNAPFS_NAME_MAX of [A-Za-z0-9._-], not starting with '.' (the
 * daemon judges it again). */
static bool scope_name_ok(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > SNAPFS_NAME_MAX || s[0] == '.')
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* "SCOPE" or "SCOPE/ENTRY" into buf (2 * SNAPFS_NAME_MAX + 2 bytes): 0, or -EINVAL with why
 * filled for a name outside the grammar. */
static int for_scope_value(const char *scope, const char *entry, char *buf, size_t size,
                           struct snapfs_report *why)
{
        if (!scope || !scope_name_ok(scope))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "'%s' is not a scope name: 1-64 of [A-Za-z0-9._-], not "
                                       "starting with '.'", scope ? scope : "");
        if (entry && !scope_name_ok(entry))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "'%s' is not an entry name: 1-64 of [A-Za-z0-9._-], not "
                                       "starting with '.'", entry);
        snprintf(buf, size, "%s%s%s", scope, entry ? "/" : "", entry ? entry : "");
        return 0;
}

int snapfs_publish_for_scope(const char *mount, const char *scope, const char *entry,
                             const char *name, const void *data, size_t len,
                             const struct snapfs_options *opts, struct snapfs_snapshot *out,
                             struct snapfs_report *why)
{
        struct source src = { .data = data ? data : (const uint8_t *)"", .len = len, .fd = -1 };
        char dest[2 * SNAPFS_NAME_MAX + 2];

        sfc_report_reset(why);
        if (!data && len > 0)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no data");
        if (for_scope_value(scope, entry, dest, sizeof(dest), why) < 0)
                return -EINVAL;
        return publish(mount, &src, name, dest, opts, out, why);
}

int snapfs_publish_fd_for_scope(const char *mount, const char *scope, const char *entry,
                                const char *name, int fd, const struct snapfs_options *opts,
                                struct snapfs_snapshot *out, struct snapfs_report *why)
{
        struct source src = { .fd = fd };
        char dest[2 * SNAPFS_NAME_MAX + 2];

        sfc_report_reset(why);
        if (fd < 0)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no descriptor");
        if (for_scope_value(scope, entry, dest, sizeof(dest), why) < 0)
                return -EINVAL;
        return publish(mount, &src, name, dest, opts, out, why);
}

int snapfs_publish(const char *mount, const void *data, size_t len,
                   const struct snapfs_options *opts, struct snapfs_binding *out,
                   struct snapfs_report *why)
{
        struct snapfs_snapshot s;
        int r;

        if (!out) {
                sfc_report_reset(why);
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no binding to fill");
        }
        r = snapfs_publish_named(mount, NULL, data, len, opts, &s, why);
        if (r >= 0)
                *out = s.binding;
        return r;
}

int snapfs_publish_fd(const char *mount, int fd, const struct snapfs_options *opts,
                      struct snapfs_binding *out, struct snapfs_report *why)
{
        struct snapfs_snapshot s;
        int r;

        if (!out) {
                sfc_report_reset(why);
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no binding to fill");
        }
        r = snapfs_publish_fd_named(mount, NULL, fd, opts, &s, why);
        if (r >= 0)
                *out = s.binding;
        return r;
}
