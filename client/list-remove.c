/* SPDX-License-Identifier: MIT */
/* snapfs_remove and snapfs_list: what snapfs rm and snapfs ls do, for a program. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-internal.h"
#include "client/snapfs.h"
#include "common/util.h"

/* Every snapshot of the judged mount: 0 with m open and *items, *n; or the error, m closed. */
static int catalog(const char *mount, const struct snapfs_options *opts, struct sfc_mnt *m,
                   struct sfc_entry **items, size_t *n, struct snapfs_report *why)
{
        int r;

        if (!mount)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no mount");
        r = sfc_mnt_check(mount, opts, m, why);
        if (r == 0)
                r = sfc_mnt_catalog(m, items, n, why);
        if (r < 0)
                sfc_mnt_close(m);
        return r;
}

/* Removes each chosen entry, the first refusal kept as the result (the others still tried,
 * as snapfs rm does). */
static int remove_chosen(const struct sfc_mnt *m, const struct sfc_entry *items,
                         const size_t *match, size_t k, size_t *removed, size_t *kept,
                         struct snapfs_report *why)
{
        int first = 0;

        for (size_t i = 0; i < k; i++) {
                struct snapfs_report one;
                bool stays = false;
                int r;

                sfc_report_reset(&one);
                r = sfc_mnt_remove(m, &items[match[i]], &stays, &one);
                if (r < 0) {
                        if (!first) {
                                first = r;
                                *why = one;
                        }
                } else if (stays) {
                        (*kept)++;
                } else {
                        (*removed)++;
                }
        }
        return first;
}

int snapfs_remove(const char *mount, const char *target, unsigned flags,
                  const struct snapfs_options *opts, size_t *removed, size_t *kept,
                  struct snapfs_report *why)
{
        _cleanup_free_ struct sfc_entry *items = NULL;
        _cleanup_free_ size_t *match = NULL;
        struct sfc_mnt m = SFC_MNT_INIT;
        size_t n = 0, k = 0, gone = 0, stay = 0;
        struct snapfs_report local;
        int r;

        if (!why)
                why = &local;
        sfc_report_reset(why);
        if (removed)
                *removed = 0;
        if (kept)
                *kept = 0;
        if (!target || flags & ~(unsigned)SNAPFS_REMOVE_ALL)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       !target ? "no target" : "unknown flags");
        r = catalog(mount, opts, &m, &items, &n, why);
        if (r < 0)
                return r;
        match = calloc(n + 1, sizeof(*match));
        if (!match) {
                sfc_mnt_close(&m);
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        }
        /* Resolved before anything is removed: a target that names nothing or several
         * removes nothing. */
        r = sfc_catalog_match(items, n, target, flags & SNAPFS_REMOVE_ALL, match, n, &k, why);
        if (r == 0)
                r = remove_chosen(&m, items, match, k, &gone, &stay, why);
        sfc_mnt_close(&m);
        if (removed)
                *removed = gone;
        if (kept)
                *kept = stay;
        why->error = r;
        return r;
}

int snapfs_list(const char *mount, const struct snapfs_options *opts,
                struct snapfs_snapshot **out, size_t *n_out, struct snapfs_report *why)
{
        _cleanup_free_ struct sfc_entry *items = NULL;
        struct sfc_mnt m = SFC_MNT_INIT;
        struct snapfs_snapshot *v;
        size_t n = 0;
        int r;

        sfc_report_reset(why);
        if (!out || !n_out)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no room for the list");
        *out = NULL;
        *n_out = 0;
        r = catalog(mount, opts, &m, &items, &n, why);
        if (r < 0)
                return r;
        sfc_mnt_close(&m);
        v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        for (size_t i = 0; i < n; i++)
                v[i] = items[i].snap;
        *out = v;
        *n_out = n;
        return 0;
}
