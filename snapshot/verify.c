/* SPDX-License-Identifier: MIT */
/* Verifying a held descriptor against a binding: fstat, then every byte re-read and hashed,
 * then fstat again. */
#include "snapshot/verify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "snapshot/digest.h"
#include "snapshot/readhash.h"
#include "common/util.h"
#include "snapshot/verify-internal.h"

const char *snap_verify_finding_name(enum snap_verify_finding f)
{
        switch (f) {
        case SNAP_VERIFY_OK:
                return "ok";
        case SNAP_VERIFY_IO:
                return "io";
        case SNAP_VERIFY_NOT_REGULAR:
                return "not-regular";
        case SNAP_VERIFY_MODE:
                return "mode";
        case SNAP_VERIFY_TOO_BIG:
                return "too-big";
        case SNAP_VERIFY_IDENTITY:
                return "identity";
        case SNAP_VERIFY_DIGEST:
                return "digest-mismatch";
        case SNAP_VERIFY_CHANGED:
                return "changed";
        }
        return "unknown";
}

/* Records the finding and its one-line message; returns r so callers can `return report(...)`. */
__attribute__((format(printf, 4, 5)))
static int report(struct snap_verify_result *res, enum snap_verify_finding f, int r,
                  const char *fmt, ...)
{
        va_list ap;

        if (!res)
                return r;
        res->finding = f;
        va_start(ap, fmt);
        vsnprintf(res->message, sizeof(res->message), fmt, ap);
        va_end(ap);
        return r;
}

static int report_io(struct snap_verify_result *res, const char *what, int r)
{
        return report(res, SNAP_VERIFY_IO, r, "%s failed: %s", what,
                      strerrordesc_np(-r) ?: "unknown error");
}

static int fstat_retry(int fd, struct stat *st)
{
        /* fstat on a FUSE file goes to the daemon and can be interrupted by a signal. */
        while (fstat(fd, st) < 0)
                if (errno != EINTR)
                        return negative_errno();
        return 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The name of field st_f, without its prefix, when it differs between before and after. */
#define CHANGED(f) (before->st_##f != after->st_##f ? #f : NULL)

const char *snap_stat_changed(const struct stat *before, const struct stat *after)
{
        const char *field = CHANGED(dev) ?: CHANGED(ino) ?: CHANGED(mode) ?: CHANGED(nlink) ?:
                            CHANGED(uid) ?: CHANGED(gid) ?: CHANGED(size);

        if (field)
                return field;
        /* Any write moves mtime, a chmod/chown/link moves ctime; nanoseconds included so two
         * changes within one second are not mistaken for none. */
        if (!same_time(&before->st_mtim, &after->st_mtim))
                return "mtime";
        if (!same_time(&before->st_ctim, &after->st_ctim))
                return "ctime";
        return NULL;
}

/* Step 2 of "Reading and verifying": what fstat alone can refuse, before a byte is read. */
static int check_metadata(const struct stat *st, const struct snap_binding *b, uint64_t limit,
                          struct snap_verify_result *res)
{
        uint64_t size = (uint64_t)st->st_size;

        if (S_ISDIR(st->st_mode))
                return report(res, SNAP_VERIFY_NOT_REGULAR, -EISDIR,
                              "not a regular file: a directory");
        /* A FIFO or device could block the reader or never end: never read one. */
        if (!S_ISREG(st->st_mode))
                return report(res, SNAP_VERIFY_NOT_REGULAR, -EINVAL,
                              "not a regular file: file type %06o",
                              (unsigned)(st->st_mode & S_IFMT));
        /* A snapshot has no permission bits at all: a mode-000 file whose owner chmod'ed it
         * back (the anonymous-file hole) is refused here; setuid, setgid and sticky included. */
        if ((st->st_mode & 07777) != 0)
                return report(res, SNAP_VERIFY_MODE, -EPERM, "mode is %04o, must be 0000",
                              (unsigned)(st->st_mode & 07777));
        if (size > limit)
                return report(res, SNAP_VERIFY_TOO_BIG, -EFBIG,
                              "size %" PRIu64 " exceeds the limit of %" PRIu64 " bytes", size,
                              limit);
        if ((uint64_t)st->st_dev != b->dev || (uint64_t)st->st_ino != b->ino || size != b->size)
                return report(res, SNAP_VERIFY_IDENTITY, -ESTALE,
                              "identity mismatch: file is dev=%u:%u ino=%" PRIu64
                              " size=%" PRIu64 ", binding says dev=%u:%u ino=%" PRIu64
                              " size=%" PRIu64,
                              major(st->st_dev), minor(st->st_dev), (uint64_t)st->st_ino, size,
                              major(b->dev), minor(b->dev), b->ino, b->size);
        return 0;
}

static int verify_fd(int fd, const struct snap_binding *b, uint64_t limit,
                     struct snap_hasher *hasher, struct snap_verify_result *res,
                     void (*before_read)(int fd, void *ctx), void *ctx, void *copy,
                     size_t copy_len)
{
        struct snap_hasher *own = NULL;
        struct snap_digest d;
        struct stat st, again;
        const char *field;
        uint64_t got = 0;
        int r;

        if (res) {
                res->finding = SNAP_VERIFY_OK;
                res->message[0] = '\0';
        }

        r = fstat_retry(fd, &st);
        if (r < 0)
                return report_io(res, "fstat", r);
        r = check_metadata(&st, b, limit, res);
        if (r < 0)
                return r;

        if (before_read)
                before_read(fd, ctx);

        if (!hasher) {
                r = snap_hasher_new(&own);
                if (r < 0)
                        return report_io(res, "hasher", r);
                hasher = own;
        } else {
                r = snap_hasher_reset(hasher);
                if (r < 0)
                        return report_io(res, "hasher", r);
        }
        r = snap_hash_fd_copy(fd, (uint64_t)st.st_size, hasher, &got, copy, copy_len);
        if (r == 0)
                r = snap_hasher_final(hasher, &d);
        snap_hasher_free(own);
        if (r < 0)
                return report_io(res, "pread", r);

        /* A length other than fstat's: the file was truncated or grew after the first fstat. */
        if (got > (uint64_t)st.st_size)
                return report(res, SNAP_VERIFY_CHANGED, -EAGAIN,
                              "changed during verification: grew past the %" PRIu64
                              " bytes fstat said", (uint64_t)st.st_size);
        if (got < (uint64_t)st.st_size)
                return report(res, SNAP_VERIFY_CHANGED, -EAGAIN,
                              "changed during verification: read %" PRIu64
                              " bytes, fstat said %" PRIu64, got, (uint64_t)st.st_size);

        r = fstat_retry(fd, &again);
        if (r < 0)
                return report_io(res, "fstat", r);
        /* Checked before the digest: a write during the read explains a mismatch better than
         * "digest mismatch" does, and the caller may retry. A rewrite done before the first
         * fstat leaves both fstat results equal, so only the digest below can catch it. */
        field = snap_stat_changed(&st, &again);
        if (field)
                return report(res, SNAP_VERIFY_CHANGED, -EAGAIN,
                              "changed during verification: %s differs between the two fstat calls",
                              field);

        if (!snap_digest_equal(&d, &b->sha256)) {
                char have[SNAP_DIGEST_HEX_LEN + 1], want[SNAP_DIGEST_HEX_LEN + 1];
                snap_digest_to_hex(&d, have);
                snap_digest_to_hex(&b->sha256, want);
                return report(res, SNAP_VERIFY_DIGEST, -EBADMSG,
                              "digest mismatch: content hashes to %s, binding says %s", have,
                              want);
        }
        return 0;
}

int snap_verify_fd_hooked(int fd, const struct snap_binding *b, uint64_t limit,
                          struct snap_hasher *hasher, struct snap_verify_result *res,
                          void (*before_read)(int fd, void *ctx), void *ctx)
{
        return verify_fd(fd, b, limit, hasher, res, before_read, ctx, NULL, 0);
}

int snap_verify_fd(int fd, const struct snap_binding *b, uint64_t limit,
                   struct snap_hasher *hasher, struct snap_verify_result *res)
{
        return verify_fd(fd, b, limit, hasher, res, NULL, NULL, NULL, 0);
}

int snap_verify_fd_copy(int fd, const struct snap_binding *b, uint64_t limit,
                        struct snap_hasher *hasher, struct snap_verify_result *res, void *copy,
                        size_t copy_len)
{
        return verify_fd(fd, b, limit, hasher, res, NULL, NULL, copy, copy_len);
}
