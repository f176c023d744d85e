/* SPDX-License-Identifier: MIT */
/* snapfs rm: remove snapshots named by digest, binding or name, through the mount. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/remove.h"
#include "common/util.h"

enum { OPT_ALL = CLI_OWN_OPTION, OPT_DRY_RUN };

struct rm_args {
        bool all, dry_run;
};

static const struct cli_option rm_options[] = {
        CLI_OPTIONS_CLIENT,
        { "all", 0, CLI_ARG_NONE, NULL, NULL, "every snapshot a name names", OPT_ALL,
          CLI_STORE(struct rm_args, all) },
        { "dry-run", 0, CLI_ARG_NONE, NULL, NULL, "say what would be removed, remove nothing",
          OPT_DRY_RUN, CLI_STORE(struct rm_args, dry_run) },
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "dry_run, snapshots [{sha256, size, dev, ino, name, published,\n"
                        "publisher, binding, kind, removed, kept, error, message}]"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_rm_help = {
        .head = "Usage: snapfs rm [--mount MNT] [--owner UID] [--insecure-own-mount] [--all]\n"
                "                 [--dry-run] [--json] TARGET...\n"
                "\n"
                "Check the mount, then remove the snapshots each TARGET names, through the mount\n"
                "(unlink): a name (as snapfs ls shows it), a digest or its first 12 or more\n"
                "characters, or a binding (\"sha256=<hex> size=<n> dev=<maj>:<min> ino=<n>\":\n"
                "exactly that snapshot). A name that several snapshots have is refused unless\n"
                "--all. Every TARGET is resolved before anything is removed: one that names\n"
                "nothing removes nothing. Only the mount's owner and root remove snapshots;\n"
                "when the daemon runs with --unlink-own, a holder's rm drops its own hold and\n"
                "the snapshot stays for its other holders. Descriptors already open keep\n"
                "reading a removed snapshot.\n"
                "\n",
        .options = rm_options,
        .tail = "\n"
                "Exit status: 0 removed; 1 a TARGET names nothing or several, or a removal\n"
                "was refused (EPERM: not the owner or root); 2 usage or system error.\n",
};

int cli_cmd_rm(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        _cleanup_free_ size_t *match = NULL;
        _cleanup_free_ bool *chosen = NULL;
        struct rm_args a = { 0 };
        struct cli_remover rm;
        struct cli_common co;
        struct snapfs_report why;
        int r;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "rm", .min_operands = 1,
                                                .max_operands = -1,
                                                .what = "at least one TARGET (a name, a "
                                                        "digest or a binding)",
                                                .help = &cli_rm_help, .arg = &a },
                            argc, argv, &co, &mount);
        if (r >= 0)
                return r;
        r = cli_remover_start(&rm, "rm", mount, co.json, a.dry_run, &co.opts, &why);
        if (r >= 0)
                return r;
        match = calloc(rm.n + 1, sizeof(*match));
        chosen = calloc(rm.n + 1, sizeof(*chosen));
        if (!match || !chosen) {
                sfc_report_fail(&why, -ENOMEM, "io", "out of memory");
                return cli_remover_refuse(&rm, -ENOMEM, &why);
        }
        /* Every TARGET first: a typo among them removes nothing. */
        for (int i = optind; i < argc; i++) {
                size_t k = 0;
                r = sfc_catalog_match(rm.items, rm.n, argv[i], a.all, match, rm.n, &k, &why);
                if (r < 0)
                        return cli_remover_refuse(&rm, r, &why);
                for (size_t j = 0; j < k; j++)
                        chosen[match[j]] = true;
        }
        for (size_t i = 0; i < rm.n; i++)
                if (chosen[i])
                        cli_remover_one(&rm, &rm.items[i]);
        return cli_remover_finish(&rm);
}
