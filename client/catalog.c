/* SPDX-License-Identifier: MIT */
/* The snapshots of a judged mount as a person asks about them (snapfs ls, rm, prune): each
 * described by the daemon, found by digest, digest prefix, binding or name, and removed
 * through the mount (unlink). Reads no content. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "snapshot/digest.h"
#include "common/array.h"
#include "common/util.h"

static int by_ino(const void *a, const void *b)
{
        const struct sfc_entry *x = a, *y = b;

        /* Inode numbers are handed out in publishing order and never reused. */
        return x->snap.binding.ino < y->snap.binding.ino ? -1
                                                         : x->snap.binding.ino > y->snap.binding.ino;
}

int sfc_mnt_catalog(const struct sfc_mnt *m, struct sfc_entry **out, size_t *n_out,
                       struct snapfs_report *why)
{
        _cleanup_free_ struct sfc_entry *items = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int r;

        r = sfc_mnt_opendir(m, &d);
        if (r < 0)
                return sfc_report_fail(why, r, "open", "listing the mount: %s",
                                          strerrordesc_np(-r) ?: "error");
        while ((errno = 0, de = readdir(d))) {
                if (!snap_is_digest_name(de->d_name))
                        continue; /* ".", "..", ".staging" */
                if (ARRAY_GROW(items, cap, n + 1, 256) < 0) {
                        closedir(d);
                        return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
                }
                memcpy(items[n].hex, de->d_name, sizeof(items[n].hex));
                /* Unlinked since readdir, or not a snapshot the mount vouches for: not
                 * listed (snapfs audit names such entries). */
                if (sfc_mnt_describe(m, de->d_name, NULL, &items[n].snap, NULL) == 0)
                        n++;
        }
        r = errno ? negative_errno() : 0;
        closedir(d);
        if (r < 0)
                return sfc_report_fail(why, r, "open", "listing the mount: %s",
                                          strerrordesc_np(-r) ?: "error");
        if (n)
                qsort(items, n, sizeof(*items), by_ino);
        *out = TAKE_PTR(items);
        *n_out = n;
        return 0;
}

static bool is_hex(const char *s)
{
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

int sfc_catalog_match(const struct sfc_entry *items, size_t n, const char *target,
                         bool all, size_t *match, size_t max, size_t *n_match,
                         struct snapfs_report *why)
{
        struct snapfs_binding b;
        size_t len = strlen(target), k = 0;
        bool named = false;

        *n_match = 0;
        if (strncmp(target, "sha256=", 7) == 0) {
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                struct snap_binding sb;
                if (snapfs_binding_parse(target, &b) < 0)
                        return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                                  "not a valid binding: %.200s", target);
                sfc_binding_to_snap(&b, &sb);
                snap_digest_to_hex(&sb.sha256, hex);
                for (size_t i = 0; i < n; i++) {
                        if (strcmp(items[i].hex, hex) != 0)
                                continue;
                        /* The binding names one snapshot of one mount instance: the same
                         * digest at another inode is another snapshot. */
                        if (items[i].snap.binding.dev != b.dev ||
                            items[i].snap.binding.ino != b.ino ||
                            items[i].snap.binding.size != b.size)
                                return sfc_report_fail(why, -ESTALE, "identity",
                                                          "the snapshot %.12s... on the mount is "
                                                          "not the one the binding names (dev, "
                                                          "ino or size differ)", hex);
                        match[k++] = i;
                }
                if (k == 0)
                        return sfc_report_fail(why, -ENOENT, "no-such-snapshot",
                                                  "no snapshot %.12s... on the mount", hex);
                *n_match = k;
                return 0;
        }
        /* A name first: it is what a person typed after reading snapfs ls. */
        for (size_t i = 0; i < n; i++)
                if (items[i].snap.name[0] && strcmp(items[i].snap.name, target) == 0) {
                        if (k < max)
                                match[k] = i;
                        k++;
                        named = true;
                }
        /* Then a digest, or the start of one of at least 12 hex characters (what snapfs ls
         * shows). */
        if (!named && len >= 12 && len <= SNAP_DIGEST_HEX_LEN && is_hex(target))
                for (size_t i = 0; i < n; i++)
                        if (strncmp(items[i].hex, target, len) == 0) {
                                if (k < max)
                                        match[k] = i;
                                k++;
                        }
        if (k == 0)
                return sfc_report_fail(why, -ENOENT, "no-such-snapshot",
                                          "no snapshot named %.100s (or whose digest starts so) "
                                          "on the mount: see snapfs ls --all", target);
        if (k > max)
                return sfc_report_fail(why, -ENOMEM, "io", "out of memory");
        *n_match = k;
        if (k > 1 && !named)
                return sfc_report_fail(why, -ENOTUNIQ, "ambiguous",
                                          "%zu snapshots have a digest that starts with %.64s: "
                                          "give more of it", k, target);
        if (k > 1 && !all)
                return sfc_report_fail(why, -ENOTUNIQ, "ambiguous",
                                          "%zu snapshots are named %.64s: give a digest, or "
                                          "--all to remove them all", k, target);
        return 0;
}

int sfc_mnt_remove(const struct sfc_mnt *m, const struct sfc_entry *e, bool *kept,
                      struct snapfs_report *why)
{
        struct stat st;

        *kept = false;
        if (unlinkat(m->fd, e->hex, 0) < 0) {
                int r = negative_errno();
                switch (-r) {
                case EPERM:
                        return sfc_report_fail(why, r, "not-permitted",
                                                  "%.12s...: only the mount's owner and root "
                                                  "remove snapshots (a holder drops its own "
                                                  "hold when the daemon runs with "
                                                  "--unlink-own)", e->hex);
                case EACCES:
                        return sfc_report_fail(why, r, "policy",
                                                  "%.12s...: this uid is outside the mount's "
                                                  "reader and publisher policies", e->hex);
                case ENOENT:
                        return sfc_report_fail(why, r, "no-such-snapshot",
                                                  "%.12s...: removed meanwhile", e->hex);
                }
                return sfc_report_fail(why, r, "unlink", "%.12s...: %s", e->hex,
                                          strerrordesc_np(-r) ?: "error");
        }
        /* With --unlink-own a holder's unlink drops its hold alone: the snapshot stays for
         * its other holders, at the same inode. */
        if (fstatat(m->fd, e->hex, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (uint64_t)st.st_ino == e->snap.binding.ino)
                *kept = true;
        return 0;
}
