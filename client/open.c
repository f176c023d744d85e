/* SPDX-License-Identifier: MIT */
/* Verified open and re-verification: docs/design.md "Reading and verifying". */
#include <errno.h>
#include <string.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "common/util.h"
#include "snapshot/verify.h"

int snapfs_open_verified(const char *mount, const struct snapfs_binding *b,
                         const struct snapfs_options *opts, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        struct snap_binding want;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        int fd;

        sfc_report_reset(why);
        if (!b)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no binding");
        sfc_binding_to_snap(b, &want);
        snap_digest_to_hex(&want.sha256, hex);

        fd = sfc_mnt_check(mount, opts, &m, why);
        if (fd < 0)
                return fd;
        fd = sfc_mnt_open_snapshot(&m, hex, &want, sfc_opt_limit(opts),
                                   sfc_opt_kinds(opts), NULL, NULL, why);
        sfc_mnt_close(&m);
        return fd;
}

int snapfs_open_digest(const char *mount, const char *hex, const struct snapfs_options *opts,
                       struct snapfs_binding *out, struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        struct snap_binding got;
        int fd;

        sfc_report_reset(why);
        if (!hex || !out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no digest");
        if (!snap_is_digest_name(hex))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "not a snapshot name (64 lowercase hex characters)");
        fd = sfc_mnt_check(mount, opts, &m, why);
        if (fd < 0)
                return fd;
        fd = sfc_mnt_open_snapshot(&m, hex, NULL, sfc_opt_limit(opts),
                                   sfc_opt_kinds(opts), NULL, &got, why);
        sfc_mnt_close(&m);
        if (fd >= 0)
                sfc_binding_from_snap(&got, out);
        return fd;
}

int snapfs_verify_fd(int fd, const struct snapfs_binding *b, const struct snapfs_options *opts,
                     struct snapfs_report *why)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_binding want;

        sfc_report_reset(why);
        if (fd < 0 || !b)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       fd < 0 ? "no descriptor" : "no binding");
        if (opts && !sfc_reserved_zero(opts->reserved, ARRAY_SIZE(opts->reserved)))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "the options' reserved fields are not zero");
        sfc_binding_to_snap(b, &want);
        snap_digest_to_hex(&want.sha256, hex);
        return sfc_verify_kind(fd, hex, &want, sfc_opt_limit(opts), sfc_opt_kinds(opts),
                               NULL, why);
}
