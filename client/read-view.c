/* SPDX-License-Identifier: MIT */
/* Where a sandbox reads: the binding of a snapshot as seen through the mount's read view. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "common/util.h"

/* The daemon names its view on the main mount's root (fs/tree/tree.h, SFS_XATTR_READ_VIEW). */
#define XATTR_READ_VIEW "user.snapfs.read-view"

/* The view's path, read from the judged root of mount. A daemon's word is only a hint: the
 * caller judges that path like any mount before it binds anything there. */
static int read_view_path(const struct sfc_mnt *m, char *view, size_t viewlen,
                          struct snapfs_report *why)
{
        _cleanup_close_ int fd = sfc_mnt_open(m, ".", O_RDONLY | O_DIRECTORY, 0);
        ssize_t n;

        if (fd < 0)
                return sfc_report_fail(why, fd, "open", "cannot open the mount's root");
        n = fgetxattr(fd, XATTR_READ_VIEW, view, viewlen - 1);
        if (n < 0) {
                int r = negative_errno();
                if (r == -ENODATA)
                        return sfc_report_fail(why, r, "no-read-view",
                                               "the mount's daemon serves no read view");
                return sfc_report_fail(why, r, "read-view", "cannot ask for the read view");
        }
        view[n] = '\0';
        /* One absolute path with no NUL inside; the mount check refuses anything else about
         * it (a symlink, a non-canonical spelling, the wrong mount). */
        if ((size_t)n != strlen(view) || view[0] != '/')
                return sfc_report_fail(why, -EBADMSG, "read-view",
                                       "the daemon named no usable path for its read view");
        return 0;
}

int snapfs_view_binding(const char *mount, const struct snapfs_binding *b,
                        const struct snapfs_options *opts, char *view, size_t viewlen,
                        struct snapfs_binding *out, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        struct snapfs_options any;
        struct snapfs_binding got;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_binding want;
        int r, fd;

        sfc_report_reset(why);
        if (!b || !view || viewlen < 2 || !out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "no binding or no room for the view's path");
        sfc_binding_to_snap(b, &want);
        snap_digest_to_hex(&want.sha256, hex);

        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                return r;
        r = read_view_path(&m, view, viewlen, why);
        sfc_mnt_close(&m);
        if (r < 0)
                return r;
        /* The view is judged (same trust root, same refusals) and the snapshot verified there
         * by its digest, exactly as a sandbox reading it will. Of any kind: this binds, it
         * hands nothing over (the sandbox's own open decides what it accepts). */
        any = opts ? *opts : (struct snapfs_options){ 0 };
        any.flags |= SNAPFS_OPT_KIND_CONTENT | SNAPFS_OPT_KIND_SIGNATURE | SNAPFS_OPT_KIND_MANIFEST;
        fd = snapfs_open_digest(view, hex, &any, &got, why);
        if (fd < 0)
                return fd;
        safe_close(fd);
        if (got.size != b->size || got.ino != b->ino)
                return sfc_report_fail(why, -ESTALE, "identity",
                                       "the view serves another snapshot under that digest");
        *out = got;
        return 0;
}
