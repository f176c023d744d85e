/* SPDX-License-Identifier: MIT */
/* The audit of a judged snapfs mount: each entry of its root checked, each snapshot re-read
 * and re-hashed through snap_hash_fd, every problem kept as data for the caller to print. */
#include "client/mount-audit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "snapshot/digest.h"
#include "snapshot/name.h"
#include "mountcheck/mountcheck.h"
#include "snapshot/readhash.h"
#include "common/array.h"
#include "common/util.h"

#define XATTR_SHA256 "user.snapfs.sha256"
#define XATTR_BINDING "user.snapfs.binding"
#define XATTR_STORE_CORRUPT "user.snapfs.store-corrupt"
#define XATTR_STORE_CHECK "user.snapfs.store-check"
/* A scope's view names its scope on its root (fs/tree/tree.h); its other names are entries. */
#define XATTR_SCOPE "user.snapfs.scope"
/* The daemon's answer is at most 4000 bytes (fs/tree/tree.h); room for more, never cut short. */
#define STORE_CHECK_MAX 8192
#define STAGING ".staging"

const char *const sfc_audit_check_names[SFC_AUDIT_CHECKS] = {
        [SFC_AUDIT_MOUNT] = "mount compliant",
        [SFC_AUDIT_NAME] = "name is a SHA-256",
        [SFC_AUDIT_OPEN] = "opens on the mount",
        [SFC_AUDIT_REGULAR] = "regular file, 1 link",
        [SFC_AUDIT_MODE] = "mode 0000",
        [SFC_AUDIT_DEV] = "device of the mount",
        [SFC_AUDIT_INODE] = "inode of its own",
        [SFC_AUDIT_XATTRS] = "xattrs agree",
        [SFC_AUDIT_CONTENT] = "content hashes to name",
        [SFC_AUDIT_STORE] = "store blobs intact",
        [SFC_AUDIT_ENTRIES] = "entry names a snapshot",
        [SFC_AUDIT_SIGNED] = "in a signed manifest",
        [SFC_AUDIT_SIGNATURES] = "signature, signed manifest",
};

/* One run: the mount, the outcome, and what is judged once every snapshot is in. */
struct audit {
        const struct sfc_mnt *m;
        struct sfc_audit *out;
        struct snap_hasher *hasher;
        struct { uint64_t ino; size_t entry; } *inos;
        size_t n_inos;
};

void sfc_audit_count(struct sfc_audit *a, enum sfc_audit_check c, bool ok)
{
        a->ran[c] = true;
        if (ok)
                a->passed[c]++;
        else
                a->failed[c]++;
}

int sfc_audit_problem(struct sfc_audit *a, enum sfc_audit_check c, const char *entry,
                      const char *code, const char *fmt, ...)
{
        struct sfc_audit_problem *p;
        va_list ap;

        sfc_audit_count(a, c, false);
        if (ARRAY_GROW(a->problems, a->cap_problems, a->n_problems + 1, 16) < 0)
                return -ENOMEM;
        p = &a->problems[a->n_problems++];
        /* Entry names come from the filesystem under audit: escaped, one line each. */
        mc_escape(entry, p->entry, sizeof(p->entry));
        snprintf(p->code, sizeof(p->code), "%s", code);
        va_start(ap, fmt);
        vsnprintf(p->message, sizeof(p->message), fmt, ap);
        va_end(ap);
        return 0;
}

/* The checks below name their run; the problem lands in its outcome. */
#define problem(run, ...) sfc_audit_problem((run)->out, __VA_ARGS__)

/* The count of blobs a --store daemon set aside at start (they did not hash to their names):
 * 0 and *count, 1 when the daemon has no store (no attribute), or a negative errno. */
static int read_set_aside(struct audit *a, int fd, uint64_t *count)
{
        char buf[32];
        unsigned long long v;
        ssize_t n;
        char *end;

        n = fgetxattr(fd, XATTR_STORE_CORRUPT, buf, sizeof(buf) - 1);
        if (n < 0)
                return errno == ENODATA || errno == EOPNOTSUPP ? 1 : negative_errno();
        buf[n] = '\0';
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno || end == buf || *end) {
                int r = problem(a, SFC_AUDIT_STORE, ".", "store-blob-corrupt",
                                "%s is not a count: '%s'", XATTR_STORE_CORRUPT, buf);
                return r < 0 ? r : 1;
        }
        *count = v;
        return 0;
}

/* The daemon's answer to XATTR_STORE_CHECK (fs/tree/tree.h): a header line, then "repaired HEX",
 * "corrupt HEX" or "missing HEX" lines, then "more=N". Each problem names its blob. */
static int parse_store_check(struct audit *a, char *text)
{
        struct sfc_audit_store *st = &a->out->store;
        char *line, *save = NULL;
        unsigned long long blobs, intact, corrupt, missing, set_aside, more;
        int used = 0, r = 0;

        if (sscanf(text, "blobs=%llu intact=%llu corrupt=%llu missing=%llu set-aside=%llu\n%n",
                   &blobs, &intact, &corrupt, &missing, &set_aside, &used) != 5 || !used)
                return problem(a, SFC_AUDIT_STORE, ".", "store-blob-corrupt",
                               "%s does not say what the store holds", XATTR_STORE_CHECK);
        a->out->ran[SFC_AUDIT_STORE] = true;
        *st = (struct sfc_audit_store){ .state = SFC_AUDIT_STORE_REHASHED, .blobs = blobs,
                                           .intact = intact, .corrupt = corrupt,
                                           .missing = missing, .set_aside = set_aside };
        a->out->passed[SFC_AUDIT_STORE] += (unsigned)intact;
        for (line = strtok_r(text + used, "\n", &save); r == 0 && line;
             line = strtok_r(NULL, "\n", &save)) {
                /* Found corrupt or missing and rewritten from the daemon's own copy: intact
                 * now, and said so. */
                if (!strncmp(line, "repaired ", 9) && snap_is_digest_name(line + 9))
                        st->repaired++;
                else if (!strncmp(line, "corrupt ", 8) && snap_is_digest_name(line + 8))
                        r = problem(a, SFC_AUDIT_STORE, line + 8, "store-blob-corrupt",
                                    "the blob on disk does not hash to its name (changed since "
                                    "it was written): the snapshot is served from memory, but "
                                    "a restart sets it aside");
                else if (!strncmp(line, "missing ", 8) && snap_is_digest_name(line + 8))
                        r = problem(a, SFC_AUDIT_STORE, line + 8, "store-blob-missing",
                                    "the blob is gone from the store: the snapshot is served "
                                    "from memory, but a restart drops it");
                else if (sscanf(line, "more=%llu", &more) == 1)
                        r = problem(a, SFC_AUDIT_STORE, ".", "store-blob-corrupt",
                                    "%llu more blob(s) of the store are corrupt or missing",
                                    more);
                else
                        r = problem(a, SFC_AUDIT_STORE, ".", "store-blob-corrupt",
                                    "%s has a line that is no finding", XATTR_STORE_CHECK);
        }
        if (r == 0 && set_aside)
                r = problem(a, SFC_AUDIT_STORE, ".", "store-blob-corrupt",
                            "%llu blob(s) of the daemon's --store did not hash to their names "
                            "at start: set aside in its corrupt/ directory, not served",
                            set_aside);
        return r;
}

/* A daemon with --store re-hashes every blob of it on disk when the mount owner or root asks
 * (XATTR_STORE_CHECK): each blob that changed or went since it was written is a problem named
 * by its digest. Another uid may not ask; then the audit says plainly that the store's blobs
 * were not re-hashed, and counts only the blobs the daemon set aside at its start. No
 * attribute: no store. */
static int audit_store(struct audit *a)
{
        /* The pinned root is O_PATH, which has no xattrs to read: a real descriptor of it. */
        _cleanup_close_ int fd = openat(a->m->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct sfc_audit_store *st = &a->out->store;
        _cleanup_free_ char *buf = NULL;
        const char *why;
        uint64_t count = 0;
        ssize_t n;
        int r;

        if (fd < 0)
                return negative_errno();
        buf = malloc(STORE_CHECK_MAX + 1);
        if (!buf)
                return -ENOMEM;
        /* One call with room for the whole answer: every call is a re-hash of the store. */
        n = fgetxattr(fd, XATTR_STORE_CHECK, buf, STORE_CHECK_MAX);
        if (n >= 0) {
                buf[n] = '\0';
                return parse_store_check(a, buf);
        }
        if (errno == EACCES)
                why = "only the mount owner and root may have the daemon re-hash its store";
        else if (errno == ENODATA || errno == EOPNOTSUPP)
                why = "this daemon does not re-hash its store on request";
        else
                return negative_errno();
        r = read_set_aside(a, fd, &count);
        if (r != 0)
                return r < 0 ? r : 0; /* no store at all: nothing to say */
        *st = (struct sfc_audit_store){ .state = SFC_AUDIT_STORE_NOT_REHASHED,
                                           .set_aside = count };
        snprintf(st->note, sizeof(st->note), "%s", why);
        if (count == 0)
                return 0;
        return problem(a, SFC_AUDIT_STORE, ".", "store-blob-corrupt",
                       "%llu blob(s) of the daemon's --store did not hash to their names at "
                       "start: set aside in its corrupt/ directory, not served",
                       (unsigned long long)count);
}

/* SHA-256 of the content that fstat says is size bytes long, through the one shared reader
 * (snap_hash_fd): one byte more is read, so content that outgrew fstat is seen (*len). */
static int hash_content(int fd, uint64_t size, struct snap_hasher *h, struct snap_digest *d,
                        uint64_t *len)
{
        int r;

        if (size > SNAPFS_DEFAULT_MAX_SIZE)
                return -EFBIG;
        r = snap_hasher_reset(h);
        if (r == 0)
                r = snap_hash_fd(fd, size, h, len);
        if (r == 0)
                r = snap_hasher_final(h, d);
        return r;
}

/* One xattr, compared with what it must say. */
static int check_xattr(struct audit *a, int fd, const char *name, const char *xattr,
                       const char *want, bool *ok)
{
        char buf[SNAPFS_BINDING_TEXT_MAX];
        ssize_t n = fgetxattr(fd, xattr, buf, sizeof(buf) - 1);

        if (n < 0) {
                *ok = false;
                return problem(a, SFC_AUDIT_XATTRS, name, "xattr", "%s: %s", xattr, strerror(errno));
        }
        buf[n] = '\0';
        if ((size_t)n != strlen(want) || strcmp(buf, want) != 0) {
                char esc[sizeof(buf) * 4];
                *ok = false;
                return problem(a, SFC_AUDIT_XATTRS, name, "xattr", "%s is '%s', expected '%s'", xattr,
                               mc_escape(buf, esc, sizeof(esc)), want);
        }
        return 0;
}

/* The file's type, link count, mode and device as a snapshot's must be, each problem
 * recorded: 0, 1 when it is no regular file (a FIFO or device is never read), or -errno. */
static int audit_stat(struct audit *a, const char *name, const struct stat *st)
{
        int r;

        if (!S_ISREG(st->st_mode) || st->st_nlink != 1) {
                r = problem(a, SFC_AUDIT_REGULAR, name,
                            S_ISREG(st->st_mode) ? "nlink" : "not-regular", "file type %06o, %ju links", (unsigned)(st->st_mode & S_IFMT),
                            (uintmax_t)st->st_nlink);
                if (r < 0 || !S_ISREG(st->st_mode))
                        return r < 0 ? r : 1;
        } else
                sfc_audit_count(a->out, SFC_AUDIT_REGULAR, true);
        a->out->bytes += (uint64_t)st->st_size;

        if ((st->st_mode & 07777) != 0)
                r = problem(a, SFC_AUDIT_MODE, name, "mode", "mode is %04o, must be 0000",
                            (unsigned)(st->st_mode & 07777));
        else
                sfc_audit_count(a->out, SFC_AUDIT_MODE, true), r = 0;
        if (r < 0)
                return r;

        if ((uint64_t)st->st_dev != a->m->dev)
                r = problem(a, SFC_AUDIT_DEV, name, "dev", "device %u:%u, the mount's is %u:%u",
                            major(st->st_dev), minor(st->st_dev), major(a->m->dev),
                            minor(a->m->dev));
        else
                sfc_audit_count(a->out, SFC_AUDIT_DEV, true), r = 0;
        return r;
}

/* The snapshot's xattrs name its digest and its binding (*b, made from name and st): each
 * problem recorded. 0 or -errno. */
static int audit_xattrs(struct audit *a, int fd, const char *name, const struct stat *st,
                        struct snap_binding *b)
{
        char text[SNAPFS_BINDING_TEXT_MAX];
        bool ok = true;
        int r;

        r = snap_digest_from_hex(name, SNAP_DIGEST_HEX_LEN, &b->sha256);
        if (r < 0)
                return r;
        b->size = (uint64_t)st->st_size;
        b->dev = (uint64_t)st->st_dev;
        b->ino = (uint64_t)st->st_ino;
        r = snap_binding_format(b, text, sizeof(text));
        if (r < 0)
                return r;
        r = check_xattr(a, fd, name, XATTR_SHA256, name, &ok);
        if (r == 0)
                r = check_xattr(a, fd, name, XATTR_BINDING, text, &ok);
        if (r < 0)
                return r;
        if (ok)
                sfc_audit_count(a->out, SFC_AUDIT_XATTRS, true);
        return 0;
}

/* The name is the promise: everything re-read and hashed, whatever the mode said. A problem
 * recorded when it is not what want names; 0 or -errno. */
static int audit_content(struct audit *a, int fd, const char *name, const struct stat *st,
                         const struct snap_digest *want)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_digest d;
        uint64_t len = 0;
        int r = hash_content(fd, (uint64_t)st->st_size, a->hasher, &d, &len);

        if (r < 0)
                return problem(a, SFC_AUDIT_CONTENT, name, r == -EFBIG ? "too-big" : "io",
                               "reading the content: %s", strerror(-r));
        if (len != (uint64_t)st->st_size)
                return problem(a, SFC_AUDIT_CONTENT, name, "size",
                               "read %" PRIu64 " bytes, fstat says %" PRIu64, len,
                               (uint64_t)st->st_size);
        if (!snap_digest_equal(&d, want)) {
                snap_digest_to_hex(&d, hex);
                return problem(a, SFC_AUDIT_CONTENT, name, "digest-mismatch",
                               "content hashes to %s", hex);
        }
        sfc_audit_count(a->out, SFC_AUDIT_CONTENT, true);
        return 0;
}

static int audit_snapshot(struct audit *a, const char *name, size_t index)
{
        _cleanup_close_ int fd = -1;
        struct snap_binding b;
        struct stat st;
        int r;

        fd = sfc_mnt_open(a->m, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
                return problem(a, SFC_AUDIT_OPEN, name, "open", "open: %s", strerror(-fd));
        r = sfc_mnt_confirm(a->m, fd);
        if (r < 0)
                return problem(a, SFC_AUDIT_OPEN, name, "other-mount",
                               "the descriptor lies on another mount: %s", strerror(-r));
        if (fstat(fd, &st) < 0)
                return problem(a, SFC_AUDIT_OPEN, name, "io", "fstat: %s", strerror(errno));
        sfc_audit_count(a->out, SFC_AUDIT_OPEN, true);
        a->out->snapshots++;

        r = audit_stat(a, name, &st);
        if (r != 0)
                return r < 0 ? r : 0;
        /* Inode uniqueness is judged once every snapshot is in (see find_duplicates). */
        a->inos[a->n_inos].ino = (uint64_t)st.st_ino;
        a->inos[a->n_inos++].entry = index;

        r = audit_xattrs(a, fd, name, &st, &b);
        if (r < 0)
                return r;
        return audit_content(a, fd, name, &st, &b.sha256);
}

/* Whether the judged root is a scope's view: 1 yes, 0 no, or a negative errno. */
static int is_scope_view(const struct sfc_mnt *m)
{
        /* The pinned root is O_PATH, which has no xattrs to read: a real descriptor of it. */
        _cleanup_close_ int fd = openat(m->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char buf[80];

        if (fd < 0)
                return negative_errno();
        if (fgetxattr(fd, XATTR_SCOPE, buf, sizeof(buf)) >= 0 || errno == ERANGE)
                return 1;
        return errno == ENODATA || errno == EOPNOTSUPP ? 0 : negative_errno();
}

/* An entry of a scope's view (docs/design.md, "Scopes"): an alias of a granted snapshot, so
 * the same node as a digest name listed beside it: a regular file of mode 0000 on the mount,
 * whose digest (its xattr) is that name, with that name's inode. Its content is the
 * snapshot's, re-hashed under the digest name. Audited once every snapshot is in; an entry
 * moved meanwhile shows as a problem of this one run. */
static int audit_entry(struct audit *a, const char *name, char **names, size_t n_names)
{
        _cleanup_close_ int fd = -1;
        char hex[SNAP_DIGEST_HEX_LEN + 2];
        struct stat st;
        ssize_t n;
        size_t i, k;

        fd = sfc_mnt_open(a->m, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
                return problem(a, SFC_AUDIT_ENTRIES, name, "open", "open: %s", strerror(-fd));
        if (sfc_mnt_confirm(a->m, fd) < 0)
                return problem(a, SFC_AUDIT_ENTRIES, name, "other-mount",
                               "the descriptor lies on another mount");
        if (fstat(fd, &st) < 0)
                return problem(a, SFC_AUDIT_ENTRIES, name, "io", "fstat: %s", strerror(errno));
        if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0 || (uint64_t)st.st_dev != a->m->dev)
                return problem(a, SFC_AUDIT_ENTRIES, name, "entry",
                               "not a snapshot of this mount: file type %06o, mode %04o, device "
                               "%u:%u", (unsigned)(st.st_mode & S_IFMT),
                               (unsigned)(st.st_mode & 07777), major(st.st_dev),
                               minor(st.st_dev));
        n = fgetxattr(fd, XATTR_SHA256, hex, sizeof(hex) - 1);
        if (n < 0)
                return problem(a, SFC_AUDIT_ENTRIES, name, "entry", "%s: %s", XATTR_SHA256,
                               strerror(errno));
        hex[n] = '\0';
        if ((size_t)n != SNAP_DIGEST_HEX_LEN || !snap_is_digest_name(hex))
                return problem(a, SFC_AUDIT_ENTRIES, name, "entry",
                               "%s is not 64 lowercase hex characters", XATTR_SHA256);
        for (i = 0; i < n_names && strcmp(names[i], hex) != 0; i++)
                ;
        for (k = 0; i < n_names && k < a->n_inos && a->inos[k].entry != i; k++)
                ;
        if (i == n_names || k == a->n_inos)
                return problem(a, SFC_AUDIT_ENTRIES, name, "entry",
                               "names %s, which the view does not list", hex);
        if (a->inos[k].ino != (uint64_t)st.st_ino)
                return problem(a, SFC_AUDIT_ENTRIES, name, "entry",
                               "inode %ju, but %s is inode %" PRIu64, (uintmax_t)st.st_ino, hex,
                               a->inos[k].ino);
        sfc_audit_count(a->out, SFC_AUDIT_ENTRIES, true);
        return 0;
}

static int by_ino(const void *x, const void *y)
{
        const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

        return a < b ? -1 : a > b;
}

static int find_duplicates(struct audit *a, char **names)
{
        int r;

        /* The ino is the first member: sorting by it keeps each entry index beside it. */
        qsort(a->inos, a->n_inos, sizeof(a->inos[0]), by_ino);
        for (size_t i = 0; i < a->n_inos; i++) {
                bool dup = (i > 0 && a->inos[i].ino == a->inos[i - 1].ino) ||
                           (i + 1 < a->n_inos && a->inos[i].ino == a->inos[i + 1].ino);
                if (!dup) {
                        sfc_audit_count(a->out, SFC_AUDIT_INODE, true);
                        continue;
                }
                r = problem(a, SFC_AUDIT_INODE, names[a->inos[i].entry], "duplicate-inode",
                            "inode %" PRIu64 " is shared with another snapshot", a->inos[i].ino);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every name in the judged root ("." and ".." aside). */
static int read_names(const struct sfc_mnt *m, char ***out, size_t *n_out)
{
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        r = sfc_mnt_opendir(m, &d);
        if (r < 0)
                return r;
        while ((errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (ARRAY_GROW(names, cap, n + 1, 256) < 0) {
                        r = -ENOMEM;
                        break;
                }
                names[n] = strdup(de->d_name);
                if (!names[n]) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        if (r == 0 && errno)
                r = negative_errno();
        closedir(d);
        *out = names;
        *n_out = n;
        return r;
}

/* Progress is reported every PROGRESS_ENTRIES entries or PROGRESS_BYTES bytes. */
#define PROGRESS_ENTRIES 64
#define PROGRESS_BYTES (UINT64_C(8) << 20)

/* The bytes to re-hash, from the attributes alone: what the progress counts. */
static uint64_t bytes_to_hash(const struct sfc_mnt *m, char **names, size_t n)
{
        uint64_t total = 0;

        for (size_t i = 0; i < n; i++) {
                struct stat st;
                if (snap_is_digest_name(names[i]) &&
                    fstatat(m->fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                        total += (uint64_t)st.st_size;
        }
        return total;
}

/* One name of the root listing (not a view's entry): the staging directory, the control
 * file, or a snapshot audited; anything else is a problem. 0 or -errno. */
static int audit_name(struct audit *a, const char *name, size_t index)
{
        struct stat st;

        if (strcmp(name, STAGING) == 0) {
                /* Publishing's write area: a directory, not a snapshot. */
                if (fstatat(a->m->fd, STAGING, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISDIR(st.st_mode))
                        return problem(a, SFC_AUDIT_NAME, name, "unexpected-entry",
                                       ".staging is not a directory");
                return 0;
        }
        if (strcmp(name, ".control") == 0) {
                /* The daemon's control channel, listed for the mount owner and root: a
                 * regular file, not a snapshot (docs/design.md). */
                if (fstatat(a->m->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        return problem(a, SFC_AUDIT_NAME, name, "unexpected-entry",
                                       ".control is not a regular file");
                return 0;
        }
        if (!snap_is_digest_name(name))
                return problem(a, SFC_AUDIT_NAME, name, "unexpected-entry",
                               "not a snapshot name (64 lowercase hex)");
        sfc_audit_count(a->out, SFC_AUDIT_NAME, true);
        return audit_snapshot(a, name, index);
}

int sfc_audit_mount(const struct sfc_mnt *m, struct sfc_audit *out,
                       void (*progress)(const struct sfc_audit_progress *p, void *ctx),
                       void *ctx)
{
        /* The checks of every snapshot run over all of them, even none. */
        static const enum sfc_audit_check each[] = {
                SFC_AUDIT_NAME,  SFC_AUDIT_OPEN,  SFC_AUDIT_REGULAR,
                SFC_AUDIT_MODE,  SFC_AUDIT_DEV,   SFC_AUDIT_INODE,
                SFC_AUDIT_XATTRS, SFC_AUDIT_CONTENT,
        };
        struct audit a = { .m = m, .out = out };
        struct sfc_audit_progress p = { 0 };
        uint64_t reported = 0;
        char **names = NULL;
        _cleanup_free_ size_t *entries = NULL;
        size_t n_names = 0, n_entries = 0;
        int r, view;

        view = is_scope_view(m);
        if (view < 0)
                return view;
        r = snap_hasher_new(&a.hasher);
        if (r == 0)
                r = read_names(m, &names, &n_names);
        if (r == 0) {
                a.inos = calloc(n_names ?: 1, sizeof(*a.inos));
                entries = calloc(n_names ?: 1, sizeof(*entries));
                if (!a.inos || !entries)
                        r = -ENOMEM;
        }
        for (size_t i = 0; i < ARRAY_SIZE(each); i++)
                out->ran[each[i]] = r == 0;
        if (r == 0 && progress)
                p.total_bytes = bytes_to_hash(m, names, n_names);
        p.total_entries = n_names;
        for (size_t i = 0; r == 0 && i < n_names; i++) {
                p.entries = i;
                p.bytes = out->bytes;
                if (progress && (i % PROGRESS_ENTRIES == 0 || p.bytes - reported >= PROGRESS_BYTES)) {
                        progress(&p, ctx);
                        reported = p.bytes;
                }
                /* In a scope's view a name in the staging grammar is an entry, audited once
                 * the snapshots it may name are in. */
                if (view && !snap_is_digest_name(names[i]) && snap_name_valid(names[i]) &&
                    strcmp(names[i], STAGING) != 0 && strcmp(names[i], ".control") != 0)
                        entries[n_entries++] = i;
                else
                        r = audit_name(&a, names[i], i);
        }
        /* A view's entries are checked even when it has none: "0 passed" is then the truth,
         * where a main mount's row says the check did not run. */
        if (view)
                out->ran[SFC_AUDIT_ENTRIES] = true;
        for (size_t i = 0; r == 0 && i < n_entries; i++)
                r = audit_entry(&a, names[entries[i]], names, n_names);
        if (progress) {
                p.entries = n_names;
                p.bytes = p.total_bytes = out->bytes > p.total_bytes ? out->bytes : p.total_bytes;
                progress(&p, ctx);
        }
        if (r == 0)
                r = find_duplicates(&a, names);
        if (r == 0)
                r = audit_store(&a);
        for (size_t i = 0; i < n_names; i++)
                free(names[i]);
        free(names);
        free(a.inos);
        snap_hasher_free(a.hasher);
        return r;
}

void sfc_audit_free(struct sfc_audit *a)
{
        free(a->problems);
        a->problems = NULL;
        a->n_problems = a->cap_problems = 0;
}
