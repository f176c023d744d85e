/* SPDX-License-Identifier: MIT */
/* snapfs ls: the snapshots of a checked mount, for a person (name, size, age, publisher) or
 * as JSON, filtered by name or kind and sorted. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client-internal.h"
#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "cli/usage-table.h"
#include "snapshot/kind.h"
#include "common/util.h"

enum { OPT_NAME = CLI_OWN_OPTION, OPT_KIND, OPT_ALL, OPT_SORT, OPT_NO_TRUNC };

enum sort_key { SORT_PUBLISHED, SORT_NAME, SORT_SIZE, SORT_AGE };

struct ls_args {
        const char *glob;
        unsigned kinds; /* SFC_KIND_BIT mask; 0: content alone */
        bool all, no_trunc;
        enum sort_key sort;
};

static const struct cli_option ls_options[] = {
        CLI_OPTIONS_CLIENT,
        { "name", 0, CLI_ARG_VALUE, "GLOB", NULL,
          "only snapshots whose name matches GLOB (fnmatch: *, ?, [...])", OPT_NAME,
          CLI_STORE(struct ls_args, glob) },
        { "kind", 0, CLI_ARG_CHOICE, "KIND", CLI_KIND_WORDS,
          "only snapshots of KIND: content, signature or manifest\n"
          "(repeatable)", OPT_KIND },
        { "all", 0, CLI_ARG_NONE, NULL, NULL,
          "snapshots of every kind", OPT_ALL, CLI_STORE(struct ls_args, all) },
        { "sort", 0, CLI_ARG_CHOICE, "KEY", "name size age",
          "name (A to Z), size (largest first) or age (newest first);\n"
          "default: publishing order, oldest first", OPT_SORT },
        { "no-trunc", 0, CLI_ARG_NONE, NULL, NULL,
          "whole digests", OPT_NO_TRUNC, CLI_STORE(struct ls_args, no_trunc) },
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "snapshots [{sha256, size, dev, ino, name, published,\n"
                        "publisher, binding, kind}], hidden (how many the filters left\n"
                        "out), usage"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_ls_help = {
        .head = "Usage: snapfs ls [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                 [--name GLOB] [--kind KIND]... [--all] [--sort name|size|age]\n"
                "                 [--no-trunc] [--json]\n"
                "\n"
                "Check the mount, then list its snapshots, oldest first: digest (its first 12\n"
                "characters), name, size (K, M, G: binary units), age since its first publish,\n"
                "and the user who published it. Contents are not read (snapfs audit re-hashes\n"
                "them). Only content is listed: the signature envelopes and manifests an\n"
                "import publishes for its own bookkeeping show with --all or --kind. Then what\n"
                "each uid holds against its limits.\n"
                "\n",
        .options = ls_options,
        .tail = "\n"
                "Exit status: 0 listed; 1 the mount is not compliant (every reason printed);\n"
                "2 usage or system error.\n",
};

/* One of ls's own options: -1 to go on, or 2 after the usage error. */
static int take(void *ctx, int val, const char *arg, bool json)
{
        struct ls_args *a = ctx;

        switch (val) {
        case OPT_KIND:
                return cli_take_kind("ls", json, arg, &a->kinds);
        case OPT_SORT:
                if (!strcmp(arg, "name"))
                        a->sort = SORT_NAME;
                else if (!strcmp(arg, "size"))
                        a->sort = SORT_SIZE;
                else if (!strcmp(arg, "age"))
                        a->sort = SORT_AGE;
                else
                        return cli_usage_error("ls", json, false,
                                               "--sort: '%s' is not name, size or age", arg);
                return -1;
        }
        return 2;
}

static bool shown(const struct ls_args *a, const struct sfc_entry *e)
{
        /* A kind the daemon did not say is listed as content would be. */
        int kind = e->snap.kind >= 0 ? e->snap.kind : SNAPFS_KIND_CONTENT;
        unsigned want = a->kinds ? a->kinds : SFC_KIND_BIT(SNAPFS_KIND_CONTENT);

        if (!a->all && !(want & SFC_KIND_BIT(kind)))
                return false;
        return !a->glob || (e->snap.name[0] && fnmatch(a->glob, e->snap.name, 0) == 0);
}

static int by_name(const void *x, const void *y)
{
        const struct sfc_entry *a = x, *b = y;

        /* Unnamed last, then by digest. */
        if (!a->snap.name[0] || !b->snap.name[0])
                return !a->snap.name[0] - !b->snap.name[0] ?: strcmp(a->hex, b->hex);
        return strcmp(a->snap.name, b->snap.name) ?: strcmp(a->hex, b->hex);
}

static int by_size(const void *x, const void *y)
{
        const struct sfc_entry *a = x, *b = y;

        if (a->snap.binding.size != b->snap.binding.size)
                return a->snap.binding.size < b->snap.binding.size ? 1 : -1;
        return a->snap.binding.ino < b->snap.binding.ino ? -1 : 1;
}

static int by_age(const void *x, const void *y)
{
        const struct sfc_entry *a = x, *b = y;

        if (a->snap.published_sec != b->snap.published_sec)
                return a->snap.published_sec < b->snap.published_sec ? 1 : -1;
        if (a->snap.published_nsec != b->snap.published_nsec)
                return a->snap.published_nsec < b->snap.published_nsec ? 1 : -1;
        return a->snap.binding.ino < b->snap.binding.ino ? 1 : -1;
}

static void print_table(const struct ls_args *a, const struct sfc_entry *items, size_t n)
{
        const int dw = a->no_trunc ? SNAP_DIGEST_HEX_LEN : 12;
        const bool kinds = a->all || a->kinds;
        time_t now = time(NULL);
        int nw = 4;

        for (size_t i = 0; i < n; i++)
                if ((int)strlen(items[i].snap.name) > nw)
                        nw = (int)strlen(items[i].snap.name);
        printf("%-*s  %-*s  %6s  %4s  %s%s\n", dw, "SHA256", nw, "NAME", "SIZE", "AGE",
               kinds ? "KIND       " : "", "PUBLISHER");
        for (size_t i = 0; i < n; i++) {
                const struct snapfs_snapshot *s = &items[i].snap;
                char size[16], age[16], user[64];

                printf("%-*.*s  %-*s  %6s  %4s  ", dw, dw, items[i].hex, nw,
                       s->name[0] ? s->name : "-",
                       cli_human_size(s->binding.size, size, sizeof(size)),
                       cli_age(s->published_sec, now, age, sizeof(age)));
                if (kinds)
                        printf("%-11s", cli_kind_name(s->kind) ?: "?");
                printf("%s\n", cli_user_name(s->publisher, user, sizeof(user)));
        }
}

/* The --json object: the k snapshots shown, how many hidden, the usage table (NULL: not
 * reported). An exit code. */
static int print_json(const char *mount, const struct sfc_entry *items, size_t k,
                      size_t hidden, const struct sfc_usage *usage)
{
        json_object *top = cli_json_result(true, NULL, NULL, NULL);
        json_object *arr = json_object_new_array();

        for (size_t i = 0; arr && i < k; i++) {
                json_object *o = cli_snapshot_json(&items[i].snap);
                const char *kind = cli_kind_name(items[i].snap.kind);
                if (!o)
                        break;
                json_object_object_add(o, "kind", kind ? json_object_new_string(kind) : NULL);
                json_object_array_add(arr, o);
        }
        if (top) {
                json_object_object_add(top, "mount", json_object_new_string(mount));
                /* An object holding the list, as findmnt --json does: room for more. */
                json_object_object_add(top, "snapshots", arr);
                json_object_object_add(top, "hidden", json_object_new_uint64(hidden));
                json_object_object_add(top, "usage", usage ? cli_json_usage(usage) : NULL);
        } else {
                json_object_put(arr);
        }
        return cli_print_json(top) < 0 ? 2 : 0;
}

int cli_cmd_ls(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        _cleanup_free_ struct sfc_entry *items = NULL;
        _cleanup_(sfc_usage_free) struct sfc_usage usage = { 0 };
        struct sfc_mnt m = SFC_MNT_INIT;
        struct ls_args a = { 0 };
        struct cli_common co;
        struct snapfs_report why;
        bool have_usage;
        size_t n = 0, k = 0;
        int r;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "ls", .help = &cli_ls_help,
                                                .option = take, .arg = &a },
                            argc, argv, &co, &mount);
        if (r >= 0)
                return r;

        sfc_report_reset(&why);
        r = sfc_mnt_check(mount, &co.opts, &m, &why);
        if (r < 0) {
                if (co.json) {
                        json_object *o = cli_json_refusal(r, &why);
                        if (o)
                                json_object_object_add(o, "mount", json_object_new_string(mount));
                        return cli_print_json(o) < 0 ? 2 : 1;
                }
                fprintf(stderr, "snapfs ls: %s: %s\n", mount, cli_headline(r, &why));
                cli_print_reasons(stderr, &why);
                return 1;
        }
        r = sfc_mnt_catalog(&m, &items, &n, &why);
        /* Per-uid usage as the daemon counts it; a daemon that does not report it
         * (ENODATA) leaves the table out. */
        have_usage = r == 0 && sfc_mnt_usage(&m, &usage) == 0;
        sfc_mnt_close(&m);
        if (r < 0)
                return cli_system_error("ls", co.json, r, "%s", mount);

        for (size_t i = 0; i < n; i++)
                if (shown(&a, &items[i]))
                        items[k++] = items[i];
        if (a.sort != SORT_PUBLISHED && k)
                qsort(items, k, sizeof(*items),
                      a.sort == SORT_NAME ? by_name : a.sort == SORT_SIZE ? by_size : by_age);

        if (co.json)
                return print_json(mount, items, k, n - k, have_usage ? &usage : NULL);
        print_table(&a, items, k);
        if (have_usage) {
                printf("\n");
                cli_print_usage(stdout, &usage);
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "snapfs ls: writing output: %s\n", strerror(errno));
                return 2;
        }
        /* Said where a person reads it, never mixed into what a script parses. */
        if (n > k && !a.glob && !a.kinds && !a.all)
                fprintf(stderr, "snapfs ls: %zu snapshots of other kinds (signatures, "
                                "manifests) not listed: snapfs ls --all\n", n - k);
        return 0;
}
