/* SPDX-License-Identifier: MIT */
/* Which served snapshots a signed manifest accounts for: what `snapfs audit --verify-key`
 * reports. The same rules as a --trust-key daemon (snapshot/trust.h), applied afterwards to
 * what a mount serves. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount-audit.h"
#include "oci.h"
#include "safeopen.h"
#include "transfer.h"
#include "trust.h"
#include "util.h"

static void trustp(struct snap_trust **t)
{
        snap_trust_free(*t);
}

/* Opens names[i] verified, and reads it when it is at most max bytes: 0 and *buf (NULL when
 * larger), *size. */
static int read_small(const struct snapfs_mnt *m, const char *hex, uint64_t limit, uint64_t max,
                      struct snap_hasher *h, void **buf, size_t *len, uint64_t *size,
                      struct snapfs_report *why)
{
        struct snap_binding b;
        int fd, r = 0;

        *buf = NULL;
        fd = snapfs_mnt_open_snapshot(m, hex, NULL, limit, h, &b, why);
        if (fd < 0)
                return fd;
        *size = b.size;
        if (b.size <= max) {
                r = snap_read_bounded(fd, max, buf, len);
                if (r < 0)
                        r = snapfs_report_fail(why, r, "snapshot", "reading %s", hex);
        }
        safe_close(fd);
        return r;
}

int snapfs_provenance_check(const struct snapfs_mnt *m, struct evp_pkey_st *const *keys,
                            size_t n_keys, uint64_t limit, char ***unsigned_names,
                            size_t *n_unsigned, size_t *n_checked, struct snapfs_report *why)
{
        _cleanup_(trustp) struct snap_trust *t = NULL;
        _cleanup_free_ uint64_t *sizes = NULL;
        _cleanup_free_ bool *ok = NULL;
        struct snap_hasher *h = NULL;
        char **names = NULL, **bad = NULL;
        size_t n = 0, k = 0;
        int r;

        r = snap_trust_new(&t);
        for (size_t i = 0; r == 0 && i < n_keys; i++)
                r = snap_trust_add_key(t, keys[i]);
        if (r == 0)
                r = snap_hasher_new(&h);
        if (r < 0)
                return snapfs_report_fail(why, r, "invalid-argument", "the keys: %s",
                                          strerror(-r));
        r = snapfs_mnt_list(m, &names, &n, why);
        if (r < 0)
                goto out;
        sizes = calloc(n + 1, sizeof(*sizes));
        ok = calloc(n + 1, sizeof(*ok));
        bad = calloc(n + 1, sizeof(*bad));
        if (!sizes || !ok || !bad) {
                r = snapfs_report_fail(why, -ENOMEM, "io", "out of memory");
                goto out;
        }
        /* Three passes, as a --trust-key daemon learns: envelopes that verify admit their
         * manifests; admitted manifests that are served admit their layers; then the
         * layers. */
        for (int pass = 0; pass < 3; pass++) {
                for (size_t i = 0; i < n; i++) {
                        struct snap_digest d;
                        const char *reason;
                        void *buf = NULL;
                        size_t len = 0;

                        if (ok[i])
                                continue;
                        snap_digest_from_hex(names[i], SNAP_DIGEST_HEX_LEN, &d);
                        if (pass == 2) {
                                ok[i] = snap_trust_admits(t, &d, sizes[i]);
                                continue;
                        }
                        if (pass == 1 && !snap_trust_admits(t, &d, sizes[i]))
                                continue;
                        r = read_small(m, names[i], limit,
                                       pass == 0 ? SNAP_OCI_ENVELOPE_MAX : SNAP_OCI_DOC_MAX, h,
                                       &buf, &len, &sizes[i], why);
                        if (r < 0)
                                goto out;
                        if (buf)
                                ok[i] = snap_trust_admit(t, &d, buf, len, &reason) == 0;
                        free(buf);
                }
        }
        for (size_t i = 0; i < n; i++)
                if (!ok[i])
                        bad[k++] = TAKE_PTR(names[i]);
        *unsigned_names = TAKE_PTR(bad);
        *n_unsigned = k;
        *n_checked = n;
        r = 0;
out:
        snap_hasher_free(h);
        snapfs_names_free(names, n);
        free(bad);
        return r;
}

int snapfs_audit_signed(const struct snapfs_mnt *m, struct evp_pkey_st *const *keys,
                        size_t n_keys, uint64_t limit, struct snapfs_audit *a,
                        struct snapfs_report *why)
{
        char **bad = NULL;
        size_t n_bad = 0, n = 0;
        int r;

        r = snapfs_provenance_check(m, keys, n_keys, limit, &bad, &n_bad, &n, why);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n - n_bad; i++)
                snapfs_audit_count(a, SNAPFS_AUDIT_SIGNED, true);
        for (size_t i = 0; i < n_bad && r == 0; i++)
                r = snapfs_audit_problem(a, SNAPFS_AUDIT_SIGNED, bad[i], "unsigned-snapshot",
                                         "in no manifest signed by a key given "
                                         "(--verify-key)");
        snapfs_names_free(bad, n_bad);
        return r;
}
