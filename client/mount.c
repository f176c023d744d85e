/* SPDX-License-Identifier: MIT */
/* Judging the mount, and opening below its pinned root without leaving it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "snapshot/kind.h"
#include "mountcheck/mountcheck.h"
#include "common/util.h"
#include "snapshot/verify.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* Escaped paths in messages: one line whatever the name holds. */
#define ESC_MAX 256

void sfc_mnt_close(struct sfc_mnt *m)
{
        if (m && m->fd >= 0) {
                safe_close(m->fd);
                m->fd = -1;
        }
}

uint64_t sfc_opt_limit(const struct snapfs_options *opts)
{
        return opts && opts->max_size ? opts->max_size : SNAPFS_DEFAULT_MAX_SIZE;
}

unsigned sfc_opt_kinds(const struct snapfs_options *opts)
{
        unsigned flags = opts ? opts->flags : 0, kinds = 0;

        if (flags & SNAPFS_OPT_KIND_CONTENT)
                kinds |= SFC_KIND_BIT(SNAP_KIND_CONTENT);
        if (flags & SNAPFS_OPT_KIND_SIGNATURE)
                kinds |= SFC_KIND_BIT(SNAP_KIND_SIGNATURE);
        if (flags & SNAPFS_OPT_KIND_MANIFEST)
                kinds |= SFC_KIND_BIT(SNAP_KIND_MANIFEST);
        return kinds ? kinds : SFC_KIND_BIT(SNAP_KIND_CONTENT);
}

int sfc_verify_kind(int fd, const char *hex, const struct snap_binding *want, uint64_t limit,
                    unsigned kinds, struct snap_hasher *hasher, struct snapfs_report *why)
{
        _cleanup_free_ uint8_t *copy = NULL;
        struct snap_verify_result res;
        size_t copy_len = 0;
        int r, kind;

        /* Only content that could be an envelope or a manifest is kept while it is hashed
         * (larger content is content without a look); the kind is decided on exactly the
         * bytes that hashed to the binding, never on a second read. */
        if (kinds && want->size <= SNAP_KIND_SCAN_MAX && want->size <= limit) {
                copy_len = (size_t)want->size;
                copy = malloc(copy_len ? copy_len : 1);
                if (!copy)
                        return sfc_report_fail(why, -ENOMEM, "io", "%s: out of memory", hex);
        }
        r = snap_verify_fd_copy(fd, want, limit, hasher, &res, copy, copy_len);
        if (r < 0)
                return sfc_report_fail(why, r, snap_verify_finding_name(res.finding), "%s: %s",
                                       hex, res.message);
        if (!kinds)
                return 0;
        kind = snap_kind_of(copy, (size_t)want->size);
        if (kind < 0)
                return sfc_report_fail(why, kind, "io", "%s: cannot tell its kind: %s", hex,
                                       strerrordesc_np(-kind) ?: "unknown error");
        /* The attack: a genuine signature envelope (or a signed manifest) is publishable by
         * anyone on a --trust-key mount and "verifies", but its bytes were never vetted as
         * what a child reads; handed over as a config, a runtime would deliver them. */
        if (!(kinds & SFC_KIND_BIT(kind)))
                return sfc_report_fail(why, -ENOMSG, "kind",
                                       "%s is a %s snapshot, not a kind asked for (content "
                                       "unless asked otherwise)",
                                          hex, snap_kind_name(kind));
        return 0;
}

void sfc_finding_hint(int code, const char *mount, char *buf, size_t n)
{
        buf[0] = '\0';
        if (code == MC_NOT_A_MOUNT_POINT)
                snprintf(buf, n, "; nothing is mounted there: run `snapfs mount %s`", mount);
        else if (code == MC_TRANSPORT_NOT_CONNECTED)
                snprintf(buf, n, "; clear the dead mount with `fusermount3 -u %s`, or "
                                 "`snapfs mount --replace-stale %s`", mount, mount);
}

bool sfc_reserved_zero(const uint64_t *r, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (r[i])
                        return false;
        return true;
}

int sfc_mnt_check(const char *mount, const struct snapfs_options *opts, struct sfc_mnt *m,
                  struct snapfs_report *why)
{
        _cleanup_close_ int pinned = -1;
        char esc[ESC_MAX];
        struct mc_policy pol;
        struct mc_verdict v;
        struct statx stx;
        int r;

        m->fd = -1;
        if (!mount)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no mount path");
        /* A field of a later release set: refused rather than ignored (SNAPFS_RESERVED). */
        if (opts && !sfc_reserved_zero(opts->reserved, ARRAY_SIZE(opts->reserved)))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "the options' reserved fields are not zero");
        mc_escape(mount, esc, sizeof(esc));

        mc_policy_preset(&pol, "snapfs");
        /* The owner is the trust root: anyone may mount a FUSE filesystem that calls itself
         * fuse.snapfs (fsname and subtype are the mounter's choice), so only a mount made by
         * the uid the caller trusts can vouch for its snapshots. */
        if (opts && (opts->flags & SNAPFS_OPT_OWNER))
                pol.owner = opts->owner;
        /* A mount of the caller's own uid is refused unless asked for: code of that uid, the
         * very threat snapfs is for, can replace it with a server of its own. */
        pol.insecure_own_mount = opts && (opts->flags & SNAPFS_OPT_INSECURE_OWN_MOUNT);
        pol.trust_user_namespace = opts && (opts->flags & SNAPFS_OPT_TRUST_USER_NAMESPACE);

        r = mc_check_path(mount, &pol, MC_BACKEND_AUTO, &v, &pinned);
        if (r == -ENOENT)
                return sfc_report_fail(why, r, "mount-check",
                                          "cannot check the mount %s: no such directory; "
                                          "create it and run `snapfs mount %s`", esc, esc);
        if (r < 0)
                return sfc_report_fail(why, r, "mount-check", "cannot check the mount %s: %s",
                                       esc, strerrordesc_np(-r) ?: "unknown error");
        if (!v.compliant) {
                for (size_t i = 0; i < v.n_findings; i++) {
                        char hint[ESC_MAX * 2 + 128];
                        /* What to run next: "not a mount point" after an unmount means
                         * nothing serves there yet. */
                        sfc_finding_hint(v.findings[i].code, esc, hint, sizeof(hint));
                        sfc_report_add(why, mc_code_name(v.findings[i].code), "%s%s",
                                          v.findings[i].message, hint);
                }
                if (why)
                        why->n_dropped += (unsigned)v.n_dropped;
                if (v.n_findings == 0 && v.n_dropped == 0)
                        sfc_report_add(why, "mount-check", "%s is not compliant", esc);
                return sfc_report_error(why, mc_verdict_has(&v, MC_TRANSPORT_NOT_CONNECTED) ?
                                                        -ENOTCONN : -EMEDIUMTYPE);
        }
        if (pinned < 0 || !v.has_mount_id)
                return sfc_report_fail(why, -EIO, "mount-check",
                                       "the check of %s returned no mount", esc);
        /* The device the snapshots' bindings carry. AT_STATX_DONT_SYNC: the VFS answers, no
         * FUSE round trip. */
        if (statx(pinned, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0)
                return sfc_report_fail(why, negative_errno(), "mount-check", "statx %s: %s",
                                       esc, strerrordesc_np(errno) ?: "unknown error");
        m->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        m->mount_id = v.mount_id;
        m->unique = v.mount_id_unique;
        m->fd = TAKE_FD(pinned);
        return 0;
}

/* Where openat2 is missing (before Linux 5.6, under a seccomp profile that answers ENOSYS,
 * or under valgrind), the same guarantees by hand: walk name one component at a time with
 * O_PATH|O_NOFOLLOW, refuse an absolute name, "." or ".." (-EXDEV, as RESOLVE_BENEATH would),
 * a symlink anywhere (-ELOOP, as RESOLVE_NO_SYMLINKS would) and any component on another
 * mount than the root's (-EXDEV, as RESOLVE_NO_XDEV would), then open the last component
 * with O_NOFOLLOW and check its mount too. */
int sfc_open_beneath_by_hand(int root, const char *name, int flags, mode_t mode)
{
        _cleanup_free_ char *copy = strdup(name);
        _cleanup_close_ int dir = -1;
        uint64_t root_id, id;
        bool root_unique, unique;
        char *comp, *next;
        int fd, r, at;

        if (!copy)
                return -ENOMEM;
        if (name[0] == '/' || name[0] == '\0')
                return name[0] == '/' ? -EXDEV : -ENOENT;
        r = mc_fd_mount_id(root, &root_id, &root_unique);
        if (r < 0)
                return r;
        at = root;
        for (comp = copy; comp; comp = next) {
                struct stat st;

                next = strchr(comp, '/');
                if (next)
                        *next++ = '\0';
                if (strcmp(comp, "..") == 0 || strcmp(comp, ".") == 0 || comp[0] == '\0')
                        return -EXDEV;
                if (next) {
                        fd = openat(at, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0)
                                return negative_errno();
                        safe_close(dir);
                        dir = fd;
                        at = dir;
                        if (fstat(dir, &st) < 0)
                                return negative_errno();
                        if (S_ISLNK(st.st_mode))
                                return -ELOOP;
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                } else {
                        fd = openat(at, comp, flags | O_CLOEXEC | O_NOFOLLOW, mode);
                        if (fd < 0)
                                return negative_errno();
                }
                r = mc_fd_mount_id(next ? dir : fd, &id, &unique);
                if (r < 0 || id != root_id || unique != root_unique) {
                        if (!next)
                                safe_close(fd);
                        return r < 0 ? r : -EXDEV;
                }
        }
        return fd;
}

int sfc_mnt_open(const struct sfc_mnt *m, const char *name, int flags, mode_t mode)
{
        /* RESOLVE_NO_SYMLINKS: a symlink at the name (or in .staging/) is refused, never
         *   followed to a file of someone else's choosing.
         * RESOLVE_NO_XDEV: a mount slid over the snapshot or over .staging/ after the check
         *   would otherwise receive the open (and, for publishing, the secret bytes).
         * RESOLVE_BENEATH: ".." never climbs out of the judged root. */
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
                .mode = (flags & O_CREAT) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                           RESOLVE_NO_XDEV,
        };
        long fd;

        if (!m || m->fd < 0 || !name)
                return -EINVAL;
        for (int tries = 0; tries < 8; tries++) {
                fd = syscall(SYS_openat2, m->fd, name, &how, sizeof(how));
                if (fd >= 0)
                        return (int)fd;
                if (errno == ENOSYS)
                        return sfc_open_beneath_by_hand(m->fd, name, flags, mode);
                if (errno != EAGAIN) /* EAGAIN: a concurrent rename or mount; resolve again */
                        return negative_errno();
        }
        return -EAGAIN;
}

int sfc_mnt_confirm(const struct sfc_mnt *m, int fd)
{
        uint64_t id;
        bool unique;
        int r;

        r = mc_fd_mount_id(fd, &id, &unique);
        if (r < 0)
                return r;
        return id == m->mount_id && unique == m->unique ? 0 : -EXDEV;
}

int sfc_open_refused(struct snapfs_report *why, int r, const char *name)
{
        switch (-r) {
        case ELOOP:
                return sfc_report_fail(why, r, "open",
                                       "%s is a symlink: refused, never followed", name);
        case EXDEV:
                return sfc_report_fail(why, r, "other-mount",
                                       "%s lies on another mount than the one checked", name);
        default:
                return sfc_report_fail(why, r, "open", "open %s: %s", name,
                                       strerrordesc_np(-r) ?: "unknown error");
        }
}

static int open_failed(struct snapfs_report *why, int r, const char *hex)
{
        if (r == -ENOENT)
                return sfc_report_fail(why, r, "open", "no snapshot %s on this mount", hex);
        return sfc_open_refused(why, r, hex);
}

int sfc_mnt_open_snapshot(const struct sfc_mnt *m, const char *hex,
                          const struct snap_binding *want, uint64_t limit, unsigned kinds,
                          struct snap_hasher *hasher, struct snap_binding *got,
                          struct snapfs_report *why)
{
        _cleanup_close_ int fd = -1;
        struct snap_binding own;
        struct stat st;
        int r;

        if (!snap_is_digest_name(hex))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "not a snapshot name (64 lowercase hex characters)");

        /* Step 1: O_NONBLOCK so a FIFO planted at the name never blocks the open; O_NOCTTY
         * so a terminal never becomes ours. Nothing is read before fstat has judged. */
        fd = sfc_mnt_open(m, hex, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
                return open_failed(why, fd, hex);

        /* Step 3: the descriptor itself lies on the judged mount (openat2 already refused a
         * crossing; this also covers the pre-openat2 fallback). */
        r = sfc_mnt_confirm(m, fd);
        if (r < 0)
                return open_failed(why, r, hex);

        if (!want) {
                /* Only the name is known: the identity to hold the file to is its own. */
                if (fstat(fd, &st) < 0)
                        return sfc_report_fail(why, negative_errno(), "io", "fstat %s: %s",
                                               hex, strerrordesc_np(errno) ?: "unknown error");
                if (snap_digest_from_hex(hex, SNAP_DIGEST_HEX_LEN, &own.sha256) < 0)
                        return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                               "not a snapshot name");
                own.size = st.st_size >= 0 ? (uint64_t)st.st_size : 0;
                own.dev = (uint64_t)st.st_dev;
                own.ino = (uint64_t)st.st_ino;
                want = &own;
        }

        /* Steps 2 and 4: fstat against the binding, the whole content hashed, fstat again;
         * then what kind of snapshot it is, when a kind was asked for. */
        r = sfc_verify_kind(fd, hex, want, limit, kinds, hasher, why);
        if (r < 0)
                return r;
        if (got)
                *got = *want;
        return TAKE_FD(fd);
}

int sfc_mnt_opendir(const struct sfc_mnt *m, DIR **out)
{
        int fd = sfc_mnt_open(m, ".", O_RDONLY | O_DIRECTORY, 0);

        if (fd < 0)
                return fd;
        *out = fdopendir(fd);
        if (!*out) {
                int r = negative_errno();
                safe_close(fd);
                return r;
        }
        return 0;
}
