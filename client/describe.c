/* SPDX-License-Identifier: MIT */
/* What the daemon says of a snapshot besides its binding: its name, first publish time,
 * publisher and kind (docs/design.md, "One snapshot object"). Read from the snapshot's inode
 * and xattrs, never from its content. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "snapshot/kind.h"
#include "snapshot/name.h"
#include "common/util.h"

bool sfc_name_ok(const char *name)
{
        return name && snap_name_valid(name) && name[0] != '_';
}

/* The xattr name of fd into buf (n bytes, NUL-terminated): its length, or a negative errno.
 * An O_PATH descriptor takes no fgetxattr (EBADF): its /proc/self/fd link names the same
 * inode, so the daemon is asked about exactly the file the descriptor holds. */
static ssize_t read_xattr(int fd, const char *name, char *buf, size_t n)
{
        char path[64];
        ssize_t k = fgetxattr(fd, name, buf, n - 1);

        if (k < 0 && errno == EBADF) {
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                k = getxattr(path, name, buf, n - 1);
        }
        if (k < 0)
                return negative_errno();
        buf[k] = '\0';
        return k;
}

int sfc_fd_describe(int fd, const struct snap_binding *b, struct snapfs_snapshot *out)
{
        char kind[32];
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        *out = (struct snapfs_snapshot){ .kind = SNAPFS_KIND_UNKNOWN };
        sfc_binding_from_snap(b, &out->binding);
        out->published_sec = (int64_t)st.st_mtim.tv_sec;
        out->published_nsec = (uint32_t)st.st_mtim.tv_nsec;
        out->publisher = (uint32_t)st.st_uid;
        /* The daemon's words are printed by every client: only a name of the staging grammar
         * (no control byte, no '/') is taken. */
        if (read_xattr(fd, SFC_XATTR_NAME, out->name, sizeof(out->name)) < 0 ||
            !snap_name_valid(out->name))
                out->name[0] = '\0';
        if (read_xattr(fd, SFC_XATTR_KIND, kind, sizeof(kind)) > 0) {
                int k = snap_kind_from_name(kind);
                out->kind = k >= 0 ? k : SNAPFS_KIND_UNKNOWN;
        }
        return 0;
}

int sfc_mnt_describe(const struct sfc_mnt *m, const char *hex,
                        const struct snap_binding *want, struct snapfs_snapshot *out,
                        struct snapfs_report *why)
{
        _cleanup_close_ int fd = -1;
        struct snap_binding got;
        struct stat st;
        int r;

        r = snap_digest_from_hex(hex, strlen(hex), &got.sha256);
        if (r < 0)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "not a snapshot name (64 lowercase hex characters)");
        /* O_PATH: no FUSE open, so a uid the reader policy leaves out may ask too. */
        fd = sfc_mnt_open(m, hex, O_PATH, 0);
        if (fd < 0)
                return sfc_report_fail(why, fd, "open", "%s: %s", hex,
                                          fd == -ENOENT ? "no such snapshot"
                                                        : strerrordesc_np(-fd) ?: "error");
        r = sfc_mnt_confirm(m, fd);
        if (r < 0)
                return sfc_report_fail(why, r, "other-mount",
                                          "%s lies on another mount than the one checked", hex);
        if (fstat(fd, &st) < 0)
                return sfc_report_fail(why, negative_errno(), "io", "fstat %s", hex);
        if (!S_ISREG(st.st_mode))
                return sfc_report_fail(why, -EINVAL, "not-regular",
                                          "%s is not a regular file", hex);
        if ((st.st_mode & 07777) != 0)
                return sfc_report_fail(why, -EPERM, "mode", "%s has mode %04o, not 0000", hex,
                                          (unsigned)(st.st_mode & 07777));
        got.size = (uint64_t)st.st_size;
        got.dev = (uint64_t)st.st_dev;
        got.ino = (uint64_t)st.st_ino;
        if (got.dev != m->dev || (want && (want->dev != got.dev || want->ino != got.ino ||
                                           want->size != got.size)))
                return sfc_report_fail(why, -ESTALE, "identity",
                                          "%s is not the snapshot the binding names: dev, ino or "
                                          "size differ", hex);
        r = sfc_fd_describe(fd, &got, out);
        if (r < 0)
                return sfc_report_fail(why, r, "io", "fstat %s", hex);
        return 0;
}

int snapfs_describe(const char *mount, const struct snapfs_binding *b,
                    const struct snapfs_options *opts, struct snapfs_snapshot *out,
                    struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        struct snap_binding want;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        int r;

        sfc_report_reset(why);
        if (!b || !out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          !b ? "no binding" : "no snapshot to fill");
        sfc_binding_to_snap(b, &want);
        snap_digest_to_hex(&want.sha256, hex);
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                return r;
        r = sfc_mnt_describe(&m, hex, &want, out, why);
        sfc_mnt_close(&m);
        return r;
}

int snapfs_describe_fd(int fd, const struct snapfs_binding *b, struct snapfs_snapshot *out)
{
        struct snap_binding want;
        struct stat st;

        if (fd < 0 || !b || !out)
                return -EINVAL;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if ((uint64_t)st.st_dev != b->dev || (uint64_t)st.st_ino != b->ino ||
            (uint64_t)st.st_size != b->size)
                return -ESTALE;
        sfc_binding_to_snap(b, &want);
        return sfc_fd_describe(fd, &want, out);
}

int snapfs_describe_view(const char *mount, const char *view, const struct snapfs_binding *b,
                         size_t n, const struct snapfs_options *opts,
                         struct snapfs_snapshot *out, unsigned *seen,
                         struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT, v = SFC_MNT_INIT;
        bool have_view = false;
        int r;

        sfc_report_reset(why);
        if (n && (!b || !out || !seen))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "no bindings, or no room for what they are");
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                return r;
        /* The view is judged as a sandbox's client judges it: a path the daemon named is a
         * hint, and another mount slid over it (or another daemon's view) binds nothing of
         * this one's. Not judged, its bindings stay the daemon's record, marked unseen. */
        if (view)
                have_view = sfc_mnt_check(view, opts, &v, why) == 0;
        for (size_t i = 0; i < n; i++) {
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                struct snapfs_snapshot s;
                struct snap_binding want;

                sfc_binding_to_snap(&b[i], &want);
                snap_digest_to_hex(&want.sha256, hex);
                out[i] = (struct snapfs_snapshot){ .binding = b[i], .kind = SNAPFS_KIND_UNKNOWN };
                seen[i] = 0;
                /* By digest on the main mount: the daemon's own record of the snapshot (its
                 * first name, publish and publisher), which a view redacts for its sandbox.
                 * The same digest of another size is not this snapshot. */
                if (sfc_mnt_describe(&m, hex, NULL, &s, NULL) == 0 &&
                    s.binding.size == b[i].size) {
                        memcpy(out[i].name, s.name, sizeof(out[i].name));
                        out[i].published_sec = s.published_sec;
                        out[i].published_nsec = s.published_nsec;
                        out[i].publisher = s.publisher;
                        out[i].kind = s.kind;
                        seen[i] |= SNAPFS_SEEN_DAEMON;
                }
                if (have_view && sfc_mnt_describe(&v, hex, &want, &s, NULL) == 0)
                        seen[i] |= SNAPFS_SEEN_VIEW;
        }
        sfc_mnt_close(&v);
        sfc_mnt_close(&m);
        /* The view's reasons, if any, stay to say why it was not seen; the call did its
         * work. */
        if (why)
                why->error = 0;
        return 0;
}
