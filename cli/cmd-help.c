/* SPDX-License-Identifier: MIT */
/* snapfs help [COMMAND] and snapfs version: what a person types first. */
#include <stdio.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "config.h"

void cli_main_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs [--version] [--help] COMMAND [ARGS...]\n"
                "\n"
                "Immutable, content-addressed snapshots over FUSE, and the checks that let a\n"
                "process trust them.\n"
                "\n"
                "Commands:\n");
        for (const struct cli_command *c = cli_commands; c->name; c++)
                fprintf(f, "  %-8s %s\n", c->name, c->summary);
        fprintf(f, "\nRun 'snapfs help COMMAND' (or 'snapfs COMMAND --help') for a command's "
                   "options;\n'man snapfs' for all of them.\n");
}

static const struct cli_command *find(const char *name)
{
        for (const struct cli_command *c = cli_commands; c->name; c++)
                if (strcmp(c->name, name) == 0)
                        return c;
        return NULL;
}

static const struct cli_option help_options[] = {
        CLI_HEADING("Options:"),
        { "options", 0, CLI_ARG_NONE, NULL, NULL,
          "list COMMAND's options instead, one a line: --NAME KIND\n"
          "[WORD...], KIND one of flag, value, file, dir or choice (then\n"
          "its words); what the bash completion offers", CLI_OWN_OPTION },
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_help_help = {
        .head = "Usage: snapfs help [--options] [COMMAND]\n\nShow what COMMAND does and takes, "
                "or every command.\n\n",
        .options = help_options,
};

/* snapfs help --options COMMAND: the options c declares. */
static int list_options(const struct cli_command *c)
{
        if (c->help)
                cli_print_option_list(stdout, c->help->options);
        else
                cli_mount_option_list(stdout);
        return fflush(stdout) == 0 ? 0 : 2;
}

int cli_cmd_help(int argc, char **argv)
{
        const bool list = argc > 1 && strcmp(argv[1], "--options") == 0;
        const struct cli_command *c;
        char *args[3];

        if (list) {
                argc--;
                argv++;
        }
        if (argc < 2 && list)
                return cli_usage_error("help", false, false, "--options: which COMMAND?");
        if (argc < 2) {
                cli_main_usage(stdout);
                return 0;
        }
        if (!list && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                cli_print_help(stdout, &cli_help_help);
                return 0;
        }
        c = find(argv[1]);
        /* One line, as every usage error: the list is one command away. */
        if (!c) {
                fprintf(stderr, "snapfs help: unknown command '%s'; run 'snapfs help' for the "
                                "list\n", argv[1]);
                return 2;
        }
        if (argc > 2) {
                fprintf(stderr, "snapfs help: unexpected argument '%s': one COMMAND at most\n",
                        argv[2]);
                return 2;
        }
        if (list)
                return list_options(c);
        /* Each command's own --help: one text, never two to keep in step. */
        args[0] = (char *)c->name;
        args[1] = (char *)"--help";
        args[2] = NULL;
        return c->run(2, args);
}

static const struct cli_option version_options[] = {
        CLI_HEADING("Options:"),
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, version"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_version_help = {
        .head = "Usage: snapfs version [--json]\n\nPrint the version of snapfs (also: "
                "snapfs --version).\n\n",
        .options = version_options,
};

int cli_cmd_version(int argc, char **argv)
{
        struct cli_common co;
        int r = cli_parse(&(struct cli_spec){ .cmd = "version",
                                              .help = &cli_version_help },
                          argc, argv, &co);

        if (r >= 0)
                return r;
        if (co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                if (o)
                        json_object_object_add(o, "version",
                                               json_object_new_string(SNAPFS_VERSION));
                return cli_print_json(o) < 0 ? 2 : 0;
        }
        printf("snapfs %s\n", SNAPFS_VERSION);
        return fflush(stdout) == 0 ? 0 : 2;
}
