/* SPDX-License-Identifier: MIT */
/* snapfs audit: does everything a snapfs mount promises hold right now? The mount check,
 * then every snapshot: a digest name, a regular file with one link, mode 0000, the mount's
 * device, an inode of its own, xattrs that agree, and content that hashes to its name. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "client-internal.h"
#include "clientopts.h"
#include "usage.h"
#include "commands.h"
#include "digest.h"
#include "mountcheck.h"
#include "util.h"

#define XATTR_SHA256 "user.snapfs.sha256"
#define XATTR_BINDING "user.snapfs.binding"
#define XATTR_STORE_CORRUPT "user.snapfs.store-corrupt"
#define STAGING ".staging"
/* Past this many snapshots a terminal gets a progress line. */
#define PROGRESS_OVER 1000
#define HASH_CHUNK (128u * 1024)

static void audit_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs audit [--mount MNT] [--owner UID] [--insecure-own-mount] [--json]\n"
                "\n"
                "Check the mount MNT, then every entry of it through the pinned mount root:\n"
                "each name is a SHA-256 (or .staging), each snapshot opens on that very mount, is\n"
                "a regular file with one link and mode 0000 on the mount's device, has an inode\n"
                "no other snapshot has, xattrs user.snapfs.sha256 and user.snapfs.binding that\n"
                "agree with its name and fstat, and content that hashes to its name (re-read and\n"
                "re-hashed). Prints a summary table and every problem; a progress line on a\n"
                "terminal when there are more than %d snapshots.\n"
                "\n"
                "Options:\n"
                "  --mount MNT   " CLI_HELP_MOUNT ";\n"
                "                a lone MNT operand is the same (the older spelling)\n"
                CLI_HELP_TRUST
                "  --json        print one JSON object: ok, error, message, reasons (the\n"
                "                mount's findings, then every problem), mount, compliant,\n"
                "                mount_id, snapshots, bytes, checks [{check, passed, failed}],\n"
                "                problems [{entry, code, message}]\n"
                "  -h, --help    show this help\n"
                "\n"
                "Exit status: 0 everything holds; 1 the mount is not compliant (its snapshots\n"
                "are then not audited) or a problem was found; 2 usage or system error.\n",
                PROGRESS_OVER);
}

enum check {
        CHECK_MOUNT,
        CHECK_NAME,
        CHECK_OPEN,
        CHECK_REGULAR,
        CHECK_MODE,
        CHECK_DEV,
        CHECK_INODE,
        CHECK_XATTRS,
        CHECK_CONTENT,
        CHECK_STORE,
        CHECK_COUNT,
};

static const char *const check_names[CHECK_COUNT] = {
        [CHECK_MOUNT] = "mount compliant",
        [CHECK_NAME] = "name is a SHA-256",
        [CHECK_OPEN] = "opens on the mount",
        [CHECK_REGULAR] = "regular file, 1 link",
        [CHECK_MODE] = "mode 0000",
        [CHECK_DEV] = "device of the mount",
        [CHECK_INODE] = "inode of its own",
        [CHECK_XATTRS] = "xattrs agree",
        [CHECK_CONTENT] = "content hashes to name",
        [CHECK_STORE] = "store blobs intact",
};

struct problem {
        char entry[256];
        char code[32];
        char message[320];
};

struct audit {
        const struct snapfs_mnt *m;
        struct snap_hasher *hasher;
        unsigned passed[CHECK_COUNT], failed[CHECK_COUNT];
        struct problem *problems;
        size_t n_problems, cap_problems;
        struct { uint64_t ino; size_t entry; } *inos;
        size_t n_inos;
        uint64_t snapshots, bytes;
        struct snapfs_usage usage; /* what each uid holds, as the daemon counts it */
        bool have_usage;
};

static void result(struct audit *a, enum check c, bool ok)
{
        if (ok)
                a->passed[c]++;
        else
                a->failed[c]++;
}

__attribute__((format(printf, 5, 6)))
static int problem(struct audit *a, enum check c, const char *entry, const char *code,
                   const char *fmt, ...)
{
        struct problem *p;
        va_list ap;

        result(a, c, false);
        if (a->n_problems == a->cap_problems) {
                size_t cap = a->cap_problems ? a->cap_problems * 2 : 16;
                p = reallocarray(a->problems, cap, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                a->problems = p;
                a->cap_problems = cap;
        }
        p = &a->problems[a->n_problems++];
        /* Entry names come from the filesystem under audit: escaped, one line each. */
        mc_escape(entry, p->entry, sizeof(p->entry));
        snprintf(p->code, sizeof(p->code), "%s", code);
        va_start(ap, fmt);
        vsnprintf(p->message, sizeof(p->message), fmt, ap);
        va_end(ap);
        return 0;
}

/* A daemon with --store says on its root how many blobs it set aside at start (they did not
 * hash to their names): each is a snapshot the store lost. No attribute: no store. */
static int audit_store(struct audit *a)
{
        /* The pinned root is O_PATH, which has no xattrs to read: a real descriptor of it. */
        _cleanup_close_ int fd = openat(a->m->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char buf[32];
        unsigned long long count;
        ssize_t n;
        char *end;

        if (fd < 0)
                return negative_errno();
        n = fgetxattr(fd, XATTR_STORE_CORRUPT, buf, sizeof(buf) - 1);
        if (n < 0)
                return errno == ENODATA || errno == EOPNOTSUPP ? 0 : negative_errno();
        buf[n] = '\0';
        errno = 0;
        count = strtoull(buf, &end, 10);
        if (errno || end == buf || *end)
                return problem(a, CHECK_STORE, ".", "store-blob-corrupt",
                               "%s is not a count: '%s'", XATTR_STORE_CORRUPT, buf);
        if (count == 0) {
                result(a, CHECK_STORE, true);
                return 0;
        }
        return problem(a, CHECK_STORE, ".", "store-blob-corrupt",
                       "%llu blob(s) of the daemon's --store did not hash to their names at "
                       "start: set aside in its corrupt/ directory, not served", count);
}

/* SHA-256 of the whole content with pread, at most limit + 1 bytes: *len is what was read. */
static int hash_content(int fd, uint64_t limit, struct snap_hasher *h, struct snap_digest *d,
                        uint64_t *len)
{
        _cleanup_free_ uint8_t *buf = malloc(HASH_CHUNK);
        uint64_t off = 0;
        int r;

        if (!buf)
                return -ENOMEM;
        r = snap_hasher_reset(h);
        if (r < 0)
                return r;
        while (off <= limit) {
                ssize_t k = pread(fd, buf, HASH_CHUNK, (off_t)off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                r = snap_hasher_update(h, buf, (size_t)k);
                if (r < 0)
                        return r;
                off += (uint64_t)k;
        }
        *len = off;
        if (off > limit)
                return -EFBIG;
        return snap_hasher_final(h, d);
}

/* One xattr, compared with what it must say. */
static int check_xattr(struct audit *a, int fd, const char *name, const char *xattr,
                       const char *want, bool *ok)
{
        char buf[SNAPFS_BINDING_TEXT_MAX];
        ssize_t n = fgetxattr(fd, xattr, buf, sizeof(buf) - 1);

        if (n < 0) {
                *ok = false;
                return problem(a, CHECK_XATTRS, name, "xattr", "%s: %s", xattr, strerror(errno));
        }
        buf[n] = '\0';
        if ((size_t)n != strlen(want) || strcmp(buf, want) != 0) {
                char esc[sizeof(buf) * 4];
                *ok = false;
                return problem(a, CHECK_XATTRS, name, "xattr", "%s is '%s', expected '%s'", xattr,
                               mc_escape(buf, esc, sizeof(esc)), want);
        }
        return 0;
}

static int audit_snapshot(struct audit *a, const char *name, size_t index)
{
        _cleanup_close_ int fd = -1;
        char text[SNAPFS_BINDING_TEXT_MAX], hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_binding b;
        struct snap_digest d;
        struct stat st;
        uint64_t len = 0;
        bool ok;
        int r;

        fd = snapfs_mnt_open(a->m, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
                return problem(a, CHECK_OPEN, name, "open", "open: %s", strerror(-fd));
        r = snapfs_mnt_confirm(a->m, fd);
        if (r < 0)
                return problem(a, CHECK_OPEN, name, "other-mount",
                               "the descriptor lies on another mount: %s", strerror(-r));
        if (fstat(fd, &st) < 0)
                return problem(a, CHECK_OPEN, name, "io", "fstat: %s", strerror(errno));
        result(a, CHECK_OPEN, true);
        a->snapshots++;

        if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
                r = problem(a, CHECK_REGULAR, name, S_ISREG(st.st_mode) ? "nlink" : "not-regular",
                            "file type %06o, %ju links", (unsigned)(st.st_mode & S_IFMT),
                            (uintmax_t)st.st_nlink);
                if (r < 0 || !S_ISREG(st.st_mode))
                        return r; /* a FIFO or device is never read */
        } else
                result(a, CHECK_REGULAR, true);
        a->bytes += (uint64_t)st.st_size;

        if ((st.st_mode & 07777) != 0)
                r = problem(a, CHECK_MODE, name, "mode", "mode is %04o, must be 0000",
                            (unsigned)(st.st_mode & 07777));
        else
                result(a, CHECK_MODE, true), r = 0;
        if (r < 0)
                return r;

        if ((uint64_t)st.st_dev != a->m->dev)
                r = problem(a, CHECK_DEV, name, "dev", "device %u:%u, the mount's is %u:%u",
                            major(st.st_dev), minor(st.st_dev), major(a->m->dev),
                            minor(a->m->dev));
        else
                result(a, CHECK_DEV, true), r = 0;
        if (r < 0)
                return r;
        /* Inode uniqueness is judged once every snapshot is in (see find_duplicates). */
        a->inos[a->n_inos].ino = (uint64_t)st.st_ino;
        a->inos[a->n_inos++].entry = index;

        r = snap_digest_from_hex(name, SNAP_DIGEST_HEX_LEN, &b.sha256);
        if (r < 0)
                return r;
        b.size = (uint64_t)st.st_size;
        b.dev = (uint64_t)st.st_dev;
        b.ino = (uint64_t)st.st_ino;
        r = snap_binding_format(&b, text, sizeof(text));
        if (r < 0)
                return r;
        ok = true;
        r = check_xattr(a, fd, name, XATTR_SHA256, name, &ok);
        if (r == 0)
                r = check_xattr(a, fd, name, XATTR_BINDING, text, &ok);
        if (r < 0)
                return r;
        if (ok)
                result(a, CHECK_XATTRS, true);

        /* The name is the promise: re-read everything and hash it, whatever the mode said. */
        r = hash_content(fd, SNAPFS_DEFAULT_MAX_SIZE, a->hasher, &d, &len);
        if (r < 0)
                return problem(a, CHECK_CONTENT, name, r == -EFBIG ? "too-big" : "io",
                               "reading the content: %s", strerror(-r));
        if (len != (uint64_t)st.st_size)
                return problem(a, CHECK_CONTENT, name, "size",
                               "read %" PRIu64 " bytes, fstat says %" PRIu64, len,
                               (uint64_t)st.st_size);
        if (!snap_digest_equal(&d, &b.sha256)) {
                snap_digest_to_hex(&d, hex);
                return problem(a, CHECK_CONTENT, name, "digest-mismatch",
                               "content hashes to %s", hex);
        }
        result(a, CHECK_CONTENT, true);
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
                        result(a, CHECK_INODE, true);
                        continue;
                }
                r = problem(a, CHECK_INODE, names[a->inos[i].entry], "duplicate-inode",
                            "inode %" PRIu64 " is shared with another snapshot", a->inos[i].ino);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every name in the judged root ("." and ".." aside). */
static int read_names(const struct snapfs_mnt *m, char ***out, size_t *n_out)
{
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        r = cli_open_root_dir(m, &d);
        if (r < 0)
                return r;
        while ((errno = 0, de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n == cap) {
                        char **p = reallocarray(names, cap = cap ? cap * 2 : 256, sizeof(*names));
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        names = p;
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

static void progress(size_t done, size_t total, bool on)
{
        if (!on)
                return;
        if (done < total)
                fprintf(stderr, "\rsnapfs audit: %zu/%zu entries checked", done, total);
        else
                fprintf(stderr, "\r\033[K"); /* leave the terminal as it was */
}

static int print_text(const char *mount, const struct snapfs_report *why, bool compliant,
                      const struct snapfs_mnt *m, const struct audit *a)
{
        printf("mount      %s: %s", mount, compliant ? "compliant" : "NOT compliant");
        if (compliant)
                printf(" (mount id %" PRIu64 ")", m->mount_id);
        printf("\n");
        cli_print_reasons(stdout, why);
        if (compliant)
                printf("snapshots  %" PRIu64 " (%" PRIu64 " bytes)\n", a->snapshots, a->bytes);
        else
                printf("snapshots  not audited: the mount is not compliant\n");
        if (a->have_usage) {
                printf("\n");
                cli_print_usage(stdout, &a->usage);
        }
        printf("\n%-26s %8s %8s\n", "CHECK", "PASSED", "FAILED");
        for (int c = 0; c < CHECK_COUNT; c++)
                printf("%-26s %8u %8u\n", check_names[c], a->passed[c], a->failed[c]);
        if (a->n_problems)
                printf("\n");
        for (size_t i = 0; i < a->n_problems; i++)
                printf("%s: %s: %s\n", a->problems[i].entry, a->problems[i].code,
                       a->problems[i].message);
        printf("\n%s\n", compliant && a->n_problems == 0 ? "audit: everything holds"
                                                           : "audit: FAILED");
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int print_json(const char *mount, const struct snapfs_report *why, int check,
                      const struct snapfs_mnt *m, const struct audit *a)
{
        const bool compliant = check == 0, ok = compliant && !a->n_problems;
        json_object *o, *checks, *problems, *reasons;

        /* Not compliant: the findings are the reasons (EMEDIUMTYPE, as every client says it).
         * Compliant with problems: the snapshots do not hold what they promise; each problem
         * is a reason too, its entry in the message. */
        o = compliant ? cli_json_result(ok, ok ? NULL : "EBADMSG",
                                        ok ? NULL : "a snapshot does not hold what it promises",
                                        NULL)
                      : cli_json_refusal(check, why);
        if (!o)
                return -ENOMEM;
        if (compliant && json_object_object_get_ex(o, "reasons", &reasons)) {
                for (size_t i = 0; i < a->n_problems; i++) {
                        json_object *p = json_object_new_object();
                        char msg[sizeof(a->problems[i].entry) + sizeof(a->problems[i].message) + 2];
                        if (!p)
                                break;
                        snprintf(msg, sizeof(msg), "%s: %s", a->problems[i].entry,
                                 a->problems[i].message);
                        json_object_object_add(p, "code", json_object_new_string(a->problems[i].code));
                        json_object_object_add(p, "message", json_object_new_string(msg));
                        json_object_array_add(reasons, p);
                }
        }
        json_object_object_add(o, "mount", json_object_new_string(mount));
        json_object_object_add(o, "compliant", json_object_new_boolean(compliant));
        json_object_object_add(o, "mount_id",
                               compliant ? json_object_new_uint64(m->mount_id) : NULL);
        json_object_object_add(o, "snapshots", json_object_new_uint64(a->snapshots));
        json_object_object_add(o, "bytes", json_object_new_uint64(a->bytes));
        checks = json_object_new_array();
        for (int c = 0; checks && c < CHECK_COUNT; c++) {
                json_object *row = json_object_new_object();
                if (!row)
                        break;
                json_object_object_add(row, "check", json_object_new_string(check_names[c]));
                json_object_object_add(row, "passed", json_object_new_uint64(a->passed[c]));
                json_object_object_add(row, "failed", json_object_new_uint64(a->failed[c]));
                json_object_array_add(checks, row);
        }
        json_object_object_add(o, "checks", checks);
        problems = json_object_new_array();
        for (size_t i = 0; problems && i < a->n_problems; i++) {
                json_object *p = json_object_new_object();
                if (!p)
                        break;
                json_object_object_add(p, "entry", json_object_new_string(a->problems[i].entry));
                json_object_object_add(p, "code", json_object_new_string(a->problems[i].code));
                json_object_object_add(p, "message",
                                       json_object_new_string(a->problems[i].message));
                json_object_array_add(problems, p);
        }
        json_object_object_add(o, "problems", problems);
        json_object_object_add(o, "usage", a->have_usage ? cli_json_usage(&a->usage) : NULL);
        return cli_print_json(o);
}

int cli_cmd_audit(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct snapfs_mnt m = SNAPFS_MNT_INIT;
        struct cli_common co;
        struct snapfs_report why;
        struct audit a = { .m = &m };
        char **names = NULL;
        size_t n_names = 0;
        bool compliant, tty;
        int r, check;

        r = cli_parse_common("audit", argc, argv, true, 0, NULL, audit_usage, &co);
        if (r >= 0)
                return r;
        mount = cli_mount_path("audit", &co);
        if (!mount)
                return 2;

        snapfs_report_reset(&why);
        r = snapfs_mnt_check(mount, &co.opts, &m, &why);
        check = r;
        compliant = r == 0;
        if (!compliant && r != -EMEDIUMTYPE && r != -ENOTCONN) {
                cli_print_reasons(stderr, &why);
                return cli_system_error("audit", co.json, r, "%s", mount);
        }
        result(&a, CHECK_MOUNT, compliant);

        if (compliant) {
                r = snap_hasher_new(&a.hasher);
                if (r == 0)
                        r = read_names(&m, &names, &n_names);
                if (r == 0) {
                        a.inos = calloc(n_names ?: 1, sizeof(*a.inos));
                        if (!a.inos)
                                r = -ENOMEM;
                }
                tty = !co.json && n_names > PROGRESS_OVER && isatty(STDERR_FILENO);
                for (size_t i = 0; r == 0 && i < n_names; i++) {
                        if (i % 64 == 0)
                                progress(i, n_names, tty);
                        if (strcmp(names[i], STAGING) == 0) {
                                struct stat st;
                                /* Publishing's write area: a directory, not a snapshot. */
                                if (fstatat(m.fd, STAGING, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                                    !S_ISDIR(st.st_mode))
                                        r = problem(&a, CHECK_NAME, names[i], "unexpected-entry",
                                                    ".staging is not a directory");
                                continue;
                        }
                        if (!snap_is_digest_name(names[i])) {
                                r = problem(&a, CHECK_NAME, names[i], "unexpected-entry",
                                            "not a snapshot name (64 lowercase hex)");
                                continue;
                        }
                        result(&a, CHECK_NAME, true);
                        r = audit_snapshot(&a, names[i], i);
                }
                progress(n_names, n_names, tty);
                if (r == 0)
                        r = find_duplicates(&a, names);
                if (r == 0)
                        r = audit_store(&a);
                /* A daemon that does not report usage (ENODATA) leaves the table out. */
                a.have_usage = r == 0 && snapfs_mnt_usage(&m, &a.usage) == 0;
                if (r < 0) {
                        fprintf(stderr, "snapfs audit: %s: %s\n", mount, strerror(-r));
                        goto out;
                }
        }

        r = co.json ? print_json(mount, &why, check, &m, &a)
                 : print_text(mount, &why, compliant, &m, &a);
        if (r < 0)
                fprintf(stderr, "snapfs audit: writing output: %s\n", strerror(-r));
out:
        for (size_t i = 0; i < n_names; i++)
                free(names[i]);
        free(names);
        free(a.inos);
        free(a.problems);
        snapfs_usage_free(&a.usage);
        snap_hasher_free(a.hasher);
        snapfs_mnt_close(&m);
        if (r < 0)
                return 2;
        return compliant && a.n_problems == 0 ? 0 : 1;
}
