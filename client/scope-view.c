/* SPDX-License-Identifier: MIT */
/* Where a sandbox reads: a scope's view. The binding of a snapshot there, and the verified
 * open through an entry (docs/design.md, "Scope views and the clients"). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "common/util.h"
#include "common/values.h"
#include "mountcheck/verdict.h"
#include "snapshot/digest.h"
#include "snapshot/name.h"

/* The digest of a snapshot, served on each of its names (fs/tree/tree.h, SFS_XATTR_SHA256). */
#define XATTR_SHA256 "user.snapfs.sha256"

/* The inode number the daemon shows digest d under in the scope's view (each view numbers
 * its own): 0 and *ino, or -ENOENT when the scope has no grant of d. */
static int view_ino(const struct snapfs_grant *g, size_t n, const uint8_t *d, uint64_t *ino)
{
        for (size_t i = 0; i < n; i++)
                if (memcmp(g[i].sha256, d, SNAPFS_DIGEST_LEN) == 0) {
                        *ino = g[i].ino;
                        return 0;
                }
        return -ENOENT;
}

int snapfs_scope_binding(const char *mount, const char *scope, const struct snapfs_binding *b,
                         const struct snapfs_options *opts, char *view, size_t viewlen,
                         struct snapfs_binding *out, struct snapfs_report *why)
{
        struct snapfs_options any;
        struct snapfs_binding got;
        struct snapfs_scope s;
        struct snapfs_grant *grants = NULL;
        struct snap_digest d;
        char hex[SNAP_DIGEST_HEX_LEN + 1], esc[256];
        size_t len, n = 0;
        uint64_t ino = 0;
        int r, fd;

        sfc_report_reset(why);
        if (!b || !view || viewlen < 2 || !out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "no binding or no room for the view's path");
        memcpy(d.bytes, b->sha256, sizeof(d.bytes));
        snap_digest_to_hex(&d, hex);

        r = snapfs_scope_show(mount, scope, opts, &s, &grants, &n, why);
        if (r < 0)
                return r;
        r = view_ino(grants, n, b->sha256, &ino);
        snapfs_free(grants);
        len = strlen(s.view);
        if (r < 0 || len >= viewlen) {
                snapfs_scope_free(&s);
                return r < 0 ? sfc_report_fail(why, r, "open", "%.12s... is not granted to "
                                               "scope %s", hex, scope)
                             : sfc_report_fail(why, -ENAMETOOLONG, "invalid-argument",
                                               "no room for the view's path");
        }
        memcpy(view, s.view, len + 1);
        /* The daemon's word is a hint: the view is judged like any mount (same trust root,
         * same refusals) and the snapshot verified there by its digest, exactly as a sandbox
         * of the scope will. Of any kind: this binds, it hands nothing over. */
        any = opts ? *opts : (struct snapfs_options){ 0 };
        any.flags |= SNAPFS_OPT_KIND_CONTENT | SNAPFS_OPT_KIND_SIGNATURE | SNAPFS_OPT_KIND_MANIFEST;
        fd = snapfs_open_digest(view, hex, &any, &got, why);
        if (fd < 0) {
                snapfs_scope_free(&s);
                return fd;
        }
        safe_close(fd);
        mc_escape(view, esc, sizeof(esc));
        /* Another mount at the view's path than the one the daemon serves the scope on (a
         * view of another daemon of the same owner, say) binds nothing of this scope's. */
        if (got.dev != s.dev) {
                sfc_report_fail(why, -ESTALE, "identity",
                                   "%s is device %u:%u, the daemon serves scope %s on %u:%u", esc,
                                   major(got.dev), minor(got.dev), s.name, major(s.dev),
                                   minor(s.dev));
                snapfs_scope_free(&s);
                return -ESTALE;
        }
        snapfs_scope_free(&s);
        /* The view numbers its own inodes: the grant's number there, not the main mount's. */
        if (got.size != b->size || got.ino != ino)
                return sfc_report_fail(why, -ESTALE, "identity",
                                          "the view %s serves another snapshot under that digest",
                                          esc);
        *out = got;
        return 0;
}

/* How long an entry that keeps moving is followed before giving up, unless
 * $SNAPFS_ENTRY_TIMEOUT (a duration: "30s", "2m", or milliseconds) says otherwise: each move
 * means a newer snapshot to open, and a rotation costs the reader time, never an error, until
 * then. A count of tries was no bound worth having: a rotator faster than an open made the
 * eighth try fail (exec exited 125) while the docs promised a reader never sees a rotation. */
#define ENTRY_TIMEOUT_ENV "SNAPFS_ENTRY_TIMEOUT"
#define ENTRY_TIMEOUT_MS 10000

/* One attempt of snapfs_open_entry on the judged view m. The descriptor, or a negative errno;
 * *moved says the entry named another snapshot meanwhile (the one opened was revoked from the
 * view: its nlink is 0), so a new attempt gets the snapshot it names now. */
/* Why entry (esc, escaped) could not be opened (fd, a negative errno), in why: fd. */
static int open_refused(int fd, const char *esc, struct snapfs_report *why)
{
        switch (-fd) {
        case ENOENT:
                return sfc_report_fail(why, fd, "open", "no entry %s in this view", esc);
        case ESTALE:
                return sfc_report_fail(why, fd, "changed",
                                       "%s moved to another snapshot while being opened", esc);
        default:
                return sfc_open_refused(why, fd, esc);
        }
}

/* The digest the content must hash to, asked of the descriptor (the node the name resolved
 * to), never of the name again: into hex (SNAP_DIGEST_HEX_LEN + 2 bytes) and *d. 0, or
 * -EBADMSG (none, or not 64 lowercase hex), -ESTALE (a digest-named entry that is another
 * snapshot), -errno, said in why. */
static int digest_of(int fd, const char *entry, const char *esc, char *hex,
                     struct snap_digest *d, struct snapfs_report *why)
{
        ssize_t n = fgetxattr(fd, XATTR_SHA256, hex, SNAP_DIGEST_HEX_LEN + 1);
        int r;

        if (n < 0) {
                r = negative_errno();
                return sfc_report_fail(why, r == -ENODATA || r == -ERANGE ? -EBADMSG : r,
                                       "entry", "%s: no digest of its own (%s): %s", esc,
                                       XATTR_SHA256, strerrordesc_np(-r) ?: "unknown error");
        }
        hex[n] = '\0';
        if ((size_t)n != SNAP_DIGEST_HEX_LEN || !snap_is_digest_name(hex) ||
            snap_digest_from_hex(hex, SNAP_DIGEST_HEX_LEN, d) < 0)
                return sfc_report_fail(why, -EBADMSG, "entry",
                                       "%s: its digest is not 64 lowercase hex characters", esc);
        /* A digest name is its own claim: the node behind it must say the same. */
        if (snap_is_digest_name(entry) && strcmp(entry, hex) != 0)
                return sfc_report_fail(why, -ESTALE, "identity", "%s is the snapshot %s", esc,
                                       hex);
        return 0;
}

static int open_entry_once(const struct sfc_mnt *m, const char *entry, const char *esc,
                           const struct snapfs_options *opts, struct snapfs_binding *out,
                           bool *moved, struct snapfs_report *why)
{
        _cleanup_close_ int fd = -1;
        struct snap_binding want;
        char hex[SNAP_DIGEST_HEX_LEN + 2];
        struct stat st;
        int r;

        *moved = false;
        /* Step 1, through the entry: O_NONBLOCK so a FIFO planted at the name never blocks,
         * O_NOFOLLOW (added) so a symlink is refused. The entry may move to another snapshot
         * at any moment; from here on everything is asked of this descriptor, which holds the
         * snapshot the name resolved to. */
        fd = sfc_mnt_open(m, entry, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0) {
                /* The snapshot the name resolved to went with its grant before the open
                 * reached it (the daemon answers ESTALE; the kernel's one lookup again met the
                 * next move too): the entry moved on. */
                *moved = fd == -ESTALE;
                return open_refused(fd, esc, why);
        }
        /* Step 3: the descriptor lies on the judged view. */
        r = sfc_mnt_confirm(m, fd);
        if (r < 0)
                return r == -EXDEV ? sfc_report_fail(why, r, "other-mount",
                                                        "%s lies on another mount than the one "
                                                        "checked", esc)
                                   : sfc_report_fail(why, r, "open", "%s: cannot tell its mount",
                                                        esc);
        if (fstat(fd, &st) < 0)
                return sfc_report_fail(why, negative_errno(), "io", "fstat %s: %s", esc,
                                          strerrordesc_np(errno) ?: "unknown error");
        if (!S_ISREG(st.st_mode))
                return sfc_report_fail(why, -EINVAL, "not-regular",
                                          "%s is not a regular file", esc);
        /* Revoked between the open and now: the entry names a newer snapshot. */
        if (st.st_nlink == 0) {
                *moved = true;
                return sfc_report_fail(why, -EAGAIN, "changed",
                                          "%s moved to another snapshot while being opened", esc);
        }

        r = digest_of(fd, entry, esc, hex, &want.sha256, why);
        if (r < 0)
                return r;

        /* Steps 2, 4 and 5 on that descriptor: the identity it has now (dev, ino, size), the
         * whole content hashed against the digest, fstat again, its kind. A revocation while
         * it is hashed shows as a change (nlink): the entry moved on. */
        want.size = st.st_size >= 0 ? (uint64_t)st.st_size : 0;
        want.dev = (uint64_t)st.st_dev;
        want.ino = (uint64_t)st.st_ino;
        r = sfc_verify_kind(fd, hex, &want, sfc_opt_limit(opts), sfc_opt_kinds(opts),
                               NULL, why);
        if (r == -EAGAIN && fstat(fd, &st) == 0 && st.st_nlink == 0)
                *moved = true;
        if (r < 0)
                return r;
        if (out)
                sfc_binding_from_snap(&want, out);
        return TAKE_FD(fd);
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* $SNAPFS_ENTRY_TIMEOUT in ms into *out (the default without it): 0, or -EINVAL reported. */
static int entry_timeout(uint64_t *out, struct snapfs_report *why)
{
        const char *v = secure_getenv(ENTRY_TIMEOUT_ENV);

        *out = ENTRY_TIMEOUT_MS;
        if (!v || !*v)
                return 0;
        if (value_parse_duration(v, out) < 0)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "$" ENTRY_TIMEOUT_ENV " is no duration: give one as "
                                          "30s, 2m or milliseconds");
        return 0;
}

/* A pause between two tries, a little longer each time (at most 20 ms) and jittered, so the
 * next open does not start in step with a rotator that keeps moving the entry. */
static void entry_pause(unsigned tries)
{
        unsigned step = tries < 20 ? tries : 20;
        long ns = (long)step * 1000000L;
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        ns = ns / 2 + (ts.tv_nsec % (ns + 1)) / 2;
        ts = (struct timespec){ .tv_sec = 0, .tv_nsec = ns };
        nanosleep(&ts, NULL);
}

int snapfs_open_entry(const char *view, const char *entry, const struct snapfs_options *opts,
                      struct snapfs_binding *out, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        char esc[96];
        bool moved = false;
        uint64_t timeout, until;
        unsigned tries = 0;
        int r;

        sfc_report_reset(why);
        /* A name of the view's root, never a path: "../x", "a/b" or "." cannot name a
         * grant. */
        if (!entry || !(snap_entry_name_valid(entry) || snap_is_digest_name(entry)))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "%s: " SNAP_ENTRY_NAME_RULE ", or a granted digest",
                                       entry ? "not a valid entry name" : "no entry name");
        mc_escape(entry, esc, sizeof(esc));
        r = entry_timeout(&timeout, why);
        if (r < 0)
                return r;
        r = sfc_mnt_check(view, opts, &m, why);
        if (r < 0)
                return r;
        /* An entry moved while it was opened leaves the snapshot it named revoked: open it
         * again, to hand over the snapshot it names now, whole (a rotation yields the old
         * snapshot or the new one, never an error while it settles). */
        until = now_ms() + timeout;
        for (;;) {
                sfc_report_reset(why);
                r = open_entry_once(&m, entry, esc, opts, out, &moved, why);
                if (r >= 0 || !moved)
                        break;
                if (now_ms() >= until) {
                        sfc_report_reset(why);
                        r = sfc_report_fail(why, -EAGAIN, "changed",
                                               "%s moved to another snapshot during each of %u "
                                               "opens in %llu ms: rotated faster than it can be "
                                               "read; allow longer with $" ENTRY_TIMEOUT_ENV,
                                               esc, tries + 1, (unsigned long long)timeout);
                        break;
                }
                entry_pause(++tries);
        }
        sfc_mnt_close(&m);
        return r;
}
