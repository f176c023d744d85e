/* SPDX-License-Identifier: MIT */
/* snapfs ls: the snapshots of a checked mount, with who published them and when. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "cli/clientopts.h"
#include "cli/usage-table.h"
#include "cli/commands.h"
#include "snapshot/digest.h"
#include "common/util.h"

static void ls_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs ls [--mount MNT] [--owner UID] [--insecure-own-mount] [--json]\n"
                "\n"
                "Check the mount, then list its snapshots in publishing order: digest, size,\n"
                "inode, publisher uid and publish time (UTC). Contents are not read; snapfs\n"
                "audit re-hashes them.\n"
                "\n"
                "Options:\n"
                "  --mount MNT   " CLI_HELP_MOUNT "\n"
                CLI_HELP_TRUST
                "  --json        print one JSON object: ok, error, message, reasons, mount,\n"
                "                snapshots [{sha256, size, ino, uid, published, binding}]\n"
                "  -h, --help    show this help\n"
                "\n"
                "Exit status: 0 listed; 1 the mount is not compliant (every reason printed);\n"
                "2 usage or system error.\n");
}

struct item {
        char name[SNAP_DIGEST_HEX_LEN + 1];
        struct stat st;
};

static int by_ino(const void *a, const void *b)
{
        const struct item *x = a, *y = b;

        /* Inode numbers are handed out in publishing order and never reused. */
        return x->st.st_ino < y->st.st_ino ? -1 : x->st.st_ino > y->st.st_ino;
}

static void iso_time(const struct timespec *ts, char *out, size_t n)
{
        struct tm tm;

        gmtime_r(&ts->tv_sec, &tm);
        strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Every snapshot entry of the judged root, stat'ed relative to it. */
static int list(const struct sfc_mnt *m, struct item **out, size_t *n_out)
{
        _cleanup_free_ struct item *items = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;
        int r;

        r = sfc_mnt_opendir(m, &d);
        if (r < 0)
                return r;
        while ((errno = 0, de = readdir(d))) {
                if (!snap_is_digest_name(de->d_name))
                        continue; /* ".", "..", ".staging" */
                if (n == cap) {
                        struct item *p = reallocarray(items, cap = cap ? cap * 2 : 256,
                                                      sizeof(*items));
                        if (!p) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        items = p;
                }
                memcpy(items[n].name, de->d_name, sizeof(items[n].name));
                /* Unlinked since readdir: not listed. */
                if (fstatat(dirfd(d), de->d_name, &items[n].st, AT_SYMLINK_NOFOLLOW) == 0)
                        n++;
        }
        if (errno) {
                r = negative_errno();
                closedir(d);
                return r;
        }
        closedir(d);
        if (n)
                qsort(items, n, sizeof(*items), by_ino);
        *out = TAKE_PTR(items);
        *n_out = n;
        return 0;
}

int cli_cmd_ls(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        _cleanup_free_ struct item *items = NULL;
        struct sfc_mnt m = SFC_MNT_INIT;
        struct cli_common co;
        _cleanup_(sfc_usage_free) struct sfc_usage usage = { 0 };
        struct snapfs_report why;
        bool have_usage = false;
        size_t n = 0;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "ls", .usage = ls_usage }, argc, argv, &co);
        if (r >= 0)
                return r;
        mount = cli_mount_path("ls", &co);
        if (!mount)
                return 2;

        sfc_report_reset(&why);
        r = sfc_mnt_check(mount, &co.opts, &m, &why);
        if (r < 0) {
                if (co.json) {
                        json_object *o = cli_json_refusal(r, &why);
                        if (o)
                                json_object_object_add(o, "mount", json_object_new_string(mount));
                        return cli_print_json(o) < 0 ? 2 : 1;
                }
                fprintf(stderr, "snapfs ls: %s: %s\n", mount, snapfs_strerror(r));
                cli_print_reasons(stderr, &why);
                return 1;
        }
        r = list(&m, &items, &n);
        /* Per-uid usage as the daemon counts it; a daemon that does not report it
         * (ENODATA) leaves the table out. */
        have_usage = r == 0 && sfc_mnt_usage(&m, &usage) == 0;
        sfc_mnt_close(&m);
        if (r < 0)
                return cli_system_error("ls", co.json, r, "%s", mount);

        if (co.json) {
                json_object *top = cli_json_result(true, NULL, NULL, NULL);
                json_object *arr = json_object_new_array();
                for (size_t i = 0; arr && i < n; i++) {
                        json_object *o = json_object_new_object();
                        char when[32], text[SNAPFS_BINDING_TEXT_MAX];
                        const struct stat *st = &items[i].st;

                        if (!o)
                                break;
                        iso_time(&st->st_mtim, when, sizeof(when));
                        /* Identity as fstatat reports it; the content is not read here. */
                        snprintf(text, sizeof(text),
                                 "sha256=%s size=%" PRIu64 " dev=%u:%u ino=%" PRIu64,
                                 items[i].name, (uint64_t)st->st_size, major(st->st_dev),
                                 minor(st->st_dev), (uint64_t)st->st_ino);
                        json_object_object_add(o, "sha256", json_object_new_string(items[i].name));
                        json_object_object_add(o, "size",
                                               json_object_new_uint64((uint64_t)st->st_size));
                        json_object_object_add(o, "ino",
                                               json_object_new_uint64((uint64_t)st->st_ino));
                        json_object_object_add(o, "uid", json_object_new_uint64(st->st_uid));
                        json_object_object_add(o, "published", json_object_new_string(when));
                        json_object_object_add(o, "binding", json_object_new_string(text));
                        json_object_array_add(arr, o);
                }
                if (top) {
                        json_object_object_add(top, "mount", json_object_new_string(mount));
                        /* An object holding the list, as findmnt --json does: room for more. */
                        json_object_object_add(top, "snapshots", arr);
                        json_object_object_add(top, "usage",
                                               have_usage ? cli_json_usage(&usage) : NULL);
                } else {
                        json_object_put(arr);
                }
                return cli_print_json(top) < 0 ? 2 : 0;
        }
        printf("%-64s %10s %8s %6s  %s\n", "SHA256", "SIZE", "INODE", "UID", "PUBLISHED");
        for (size_t i = 0; i < n; i++) {
                char when[32];
                iso_time(&items[i].st.st_mtim, when, sizeof(when));
                printf("%s %10" PRIu64 " %8" PRIu64 " %6u  %s\n", items[i].name,
                       (uint64_t)items[i].st.st_size, (uint64_t)items[i].st.st_ino,
                       (unsigned)items[i].st.st_uid, when);
        }
        if (have_usage) {
                printf("\n");
                cli_print_usage(stdout, &usage);
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "snapfs ls: writing output: %s\n", strerror(errno));
                return 2;
        }
        return 0;
}
