/* SPDX-License-Identifier: MIT */
/* snapfs prune: remove the snapshots older than a duration, of a kind, or both. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/remove.h"
#include "snapshot/kind.h"
#include "common/util.h"
#include "common/values.h"

enum { OPT_OLDER_THAN = CLI_OWN_OPTION, OPT_KIND, OPT_NAME, OPT_DRY_RUN };

struct prune_args {
        bool dry_run, aged;
        uint64_t older_ms;
        unsigned kinds;
        const char *glob;
};

static const struct cli_option prune_options[] = {
        CLI_OPTIONS_CLIENT,
        { "older-than", 0, CLI_ARG_VALUE, "DURATION", NULL,
          "first published longer ago than DURATION: 90, 90s,\n"
          "15m, 2h, 7d, 2w", OPT_OLDER_THAN },
        { "kind", 0, CLI_ARG_CHOICE, "KIND", CLI_KIND_WORDS,
          "content, signature or manifest (repeatable: any)", OPT_KIND },
        { "name", 0, CLI_ARG_VALUE, "GLOB", NULL,
          "named to match GLOB (fnmatch: *, ?, [...])", OPT_NAME,
          CLI_STORE(struct prune_args, glob) },
        { "dry-run", 0, CLI_ARG_NONE, NULL, NULL,
          "say what would be removed, remove nothing", OPT_DRY_RUN,
          CLI_STORE(struct prune_args, dry_run) },
        CLI_OPTION_JSON("print one JSON object, as snapfs rm does"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_prune_help = {
        .head = "Usage: snapfs prune [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                    [--older-than DURATION] [--kind KIND]... [--name GLOB]\n"
                "                    [--dry-run] [--json]\n"
                "\n"
                "Check the mount, then remove, through the mount (unlink), every snapshot that\n"
                "meets all the criteria given: first published longer than DURATION ago, of\n"
                "KIND, named to match GLOB. --older-than or --kind is required: prune never\n"
                "removes everything unasked. The signature envelopes and manifests an import\n"
                "publishes are --kind signature and --kind manifest. Only the mount's owner\n"
                "and root remove snapshots (see snapfs rm).\n"
                "\n",
        .options = prune_options,
        .tail = "\n"
                "Exit status: 0 pruned (or nothing to prune); 1 a removal was refused; 2 usage\n"
                "or system error.\n",
};

/* One of prune's own options: -1 to go on, or 2 after the usage error. */
static int take(void *ctx, int val, const char *arg, bool json)
{
        struct prune_args *a = ctx;
        int r;

        switch (val) {
        case OPT_OLDER_THAN:
                r = value_parse_duration(arg, &a->older_ms);
                if (r < 0)
                        return cli_bad_value("prune", json, "--older-than", VALUE_DURATION, arg,
                                             r, 0, UINT64_MAX, NULL);
                a->aged = true;
                return -1;
        case OPT_KIND:
                return cli_take_kind("prune", json, arg, &a->kinds);
        }
        return 2;
}

static bool chosen(const struct prune_args *a, const struct sfc_entry *e,
                   const struct timespec *now)
{
        const struct snapfs_snapshot *s = &e->snap;

        if (a->aged) {
                /* Milliseconds since the first publish, a future time counting as none. */
                int64_t age_ms = ((int64_t)now->tv_sec - s->published_sec) * 1000 +
                                 ((int64_t)now->tv_nsec - (int64_t)s->published_nsec) / 1000000;
                if (age_ms <= 0 || (uint64_t)age_ms <= a->older_ms)
                        return false;
        }
        /* A kind the daemon does not say is never one asked for. */
        if (a->kinds && (s->kind < 0 || !(a->kinds & SFC_KIND_BIT(s->kind))))
                return false;
        return !a->glob || (s->name[0] && fnmatch(a->glob, s->name, 0) == 0);
}

int cli_cmd_prune(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct prune_args a = { 0 };
        struct cli_remover rm;
        struct cli_common co;
        struct snapfs_report why;
        struct timespec now;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "prune", .help = &cli_prune_help,
                                          .option = take, .arg = &a },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        if (!a.aged && !a.kinds)
                return cli_usage_error("prune", co.json, false,
                                       "say what to prune: --older-than DURATION, --kind KIND, "
                                       "or both (snapfs rm removes snapshots by name)");
        mount = cli_mount_path("prune", &co);
        if (!mount)
                return 2;
        r = cli_remover_start(&rm, "prune", mount, co.json, a.dry_run, &co.opts, &why);
        if (r >= 0)
                return r;
        clock_gettime(CLOCK_REALTIME, &now);
        for (size_t i = 0; i < rm.n; i++)
                if (chosen(&a, &rm.items[i], &now))
                        cli_remover_one(&rm, &rm.items[i]);
        return cli_remover_finish(&rm);
}
