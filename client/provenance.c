/* SPDX-License-Identifier: MIT */
/* Which served snapshots a signed manifest accounts for: what `snapfs audit --verify-key`
 * reports. The same rules as a --trust-key daemon (snapshot/trust.h), applied afterwards to
 * what a mount serves, and the same kinds as every client (snapshot/kind.h): only content a
 * signed manifest names counts as signed content. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/kind.h"
#include "client/mount-audit.h"
#include "snapshot/oci.h"
#include "snapshot/safeopen.h"
#include "client/transfer.h"
#include "snapshot/trust.h"
#include "common/util.h"

static void trustp(struct snap_trust **t)
{
        snap_trust_free(*t);
}

/* Opens hex verified, and reads it when it is at most max bytes: 0 and *buf (NULL when
 * larger), *size. */
static int read_small(const struct sfc_mnt *m, const char *hex, uint64_t limit, uint64_t max,
                      struct snap_hasher *h, void **buf, size_t *len, uint64_t *size,
                      struct snapfs_report *why)
{
        struct snap_binding b;
        int fd, r = 0;

        *buf = NULL;
        *len = 0;
        fd = sfc_mnt_open_snapshot(m, hex, NULL, limit, SFC_KINDS_ANY, h, &b, why);
        if (fd < 0)
                return fd;
        *size = b.size;
        if (b.size <= max) {
                r = snap_read_bounded(fd, max, buf, len);
                if (r < 0)
                        r = sfc_report_fail(why, r, "snapshot", "reading %s", hex);
        }
        safe_close(fd);
        return r;
}

void sfc_provenance_free(struct sfc_provenance *p, size_t n)
{
        (void)n;
        free(p);
}

int sfc_provenance_check(const struct sfc_mnt *m, struct evp_pkey_st *const *keys,
                         size_t n_keys, uint64_t limit, struct sfc_provenance **out,
                         size_t *n_out, struct snapfs_report *why)
{
        _cleanup_(trustp) struct snap_trust *t = NULL;
        struct sfc_provenance *res = NULL;
        struct snap_hasher *h = NULL;
        char **names = NULL;
        size_t n = 0;
        int r;

        r = snap_trust_new(&t);
        for (size_t i = 0; r == 0 && i < n_keys; i++)
                r = snap_trust_add_key(t, keys[i]);
        if (r == 0)
                r = snap_hasher_new(&h);
        if (r < 0)
                return sfc_report_fail(why, r, "invalid-argument", "the keys: %s",
                                       strerror(-r));
        r = sfc_mnt_list(m, &names, &n, why);
        if (r < 0)
                goto out;
        res = calloc(n + 1, sizeof(*res));
        if (!res) {
                r = sfc_report_fail(why, -ENOMEM, "io", "out of memory");
                goto out;
        }
        /* As a --trust-key daemon learns: every snapshot's kind, from the bytes that hashed to
         * its name, and each envelope that verifies admits its manifest; then admitted
         * manifests that are served admit their layers; then what is signed is known. */
        for (int pass = 0; pass < 2; pass++) {
                for (size_t i = 0; i < n; i++) {
                        struct sfc_provenance *p = &res[i];
                        struct snap_digest d;
                        const char *reason;
                        void *buf = NULL;
                        size_t len = 0;
                        int k;

                        snap_digest_from_hex(names[i], SNAP_DIGEST_HEX_LEN, &d);
                        if (pass == 1 && (p->kind != SNAP_KIND_MANIFEST ||
                                          !snap_trust_admits_manifest(t, &d, p->size)))
                                continue;
                        r = read_small(m, names[i], limit, SNAP_KIND_SCAN_MAX, h, &buf, &len,
                                       &p->size, why);
                        if (r < 0)
                                goto out;
                        if (pass == 0) {
                                memcpy(p->hex, names[i], sizeof(p->hex));
                                k = snap_kind_of(buf, (size_t)p->size);
                                if (k < 0) {
                                        free(buf);
                                        r = sfc_report_fail(why, k, "io", "out of memory");
                                        goto out;
                                }
                                p->kind = k;
                        }
                        /* Pass 0: envelopes; pass 1: the manifests they sign, which only now
                         * admit their layers (a manifest that does not parse admits none). */
                        if ((pass == 0 && p->kind == SNAP_KIND_SIGNATURE) || pass == 1)
                                p->is_signed = buf && snap_trust_admit(t, &d, buf, len,
                                                                       &reason) == 0;
                        free(buf);
                }
        }
        /* Content counts as signed only when a signed manifest that is served names it as a
         * layer: being signed as a "manifest" by an envelope says nothing about content. */
        for (size_t i = 0; i < n; i++) {
                struct snap_digest d;

                snap_digest_from_hex(names[i], SNAP_DIGEST_HEX_LEN, &d);
                if (res[i].kind == SNAP_KIND_CONTENT)
                        res[i].is_signed = snap_trust_admits_layer(t, &d, res[i].size);
        }
        *out = TAKE_PTR(res);
        *n_out = n;
        r = 0;
out:
        snap_hasher_free(h);
        sfc_names_free(names, n);
        free(res);
        return r;
}

int sfc_audit_signed(const struct sfc_mnt *m, struct evp_pkey_st *const *keys,
                     size_t n_keys, uint64_t limit, struct sfc_audit *a,
                     struct snapfs_report *why)
{
        struct sfc_provenance *p = NULL;
        size_t n = 0;
        int r;

        r = sfc_provenance_check(m, keys, n_keys, limit, &p, &n, why);
        if (r < 0)
                return r;
        /* Both rows ran, over however many snapshots of their kinds there are. */
        a->ran[SFC_AUDIT_SIGNED] = a->ran[SFC_AUDIT_SIGNATURES] = true;
        for (size_t i = 0; i < n && r == 0; i++) {
                const bool content = p[i].kind == SNAP_KIND_CONTENT;
                const enum sfc_audit_check c =
                        content ? SFC_AUDIT_SIGNED : SFC_AUDIT_SIGNATURES;

                if (p[i].is_signed)
                        sfc_audit_count(a, c, true);
                else if (content)
                        r = sfc_audit_problem(a, c, p[i].hex, "unsigned-snapshot",
                                              "content in no manifest signed by a key given "
                                              "(--verify-key)");
                else if (p[i].kind == SNAP_KIND_SIGNATURE)
                        r = sfc_audit_problem(a, c, p[i].hex, "unsigned-snapshot",
                                              "a signature envelope that no key given "
                                              "(--verify-key) verifies");
                else
                        r = sfc_audit_problem(a, c, p[i].hex, "unsigned-snapshot",
                                              "a manifest that no signature verified by a "
                                              "key given (--verify-key) signs");
        }
        sfc_provenance_free(p, n);
        return r;
}
