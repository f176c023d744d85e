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

int cli_cmd_help(int argc, char **argv)
{
        const struct cli_command *c;
        char *args[3];

        if (argc < 2) {
                cli_main_usage(stdout);
                return 0;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                printf("Usage: snapfs help [COMMAND]\n\nShow what COMMAND does and takes, or "
                       "every command.\n");
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
        if (c->run == cli_cmd_help) {
                args[0] = "help";
                args[1] = "--help";
                args[2] = NULL;
                return cli_cmd_help(2, args);
        }
        /* Each command's own --help: one text, never two to keep in step. */
        args[0] = (char *)c->name;
        args[1] = (char *)"--help";
        args[2] = NULL;
        return c->run(2, args);
}

static void version_usage(FILE *f)
{
        fprintf(f, "Usage: snapfs version [--json]\n\nPrint the version of snapfs (also: "
                   "snapfs --version).\n");
}

int cli_cmd_version(int argc, char **argv)
{
        struct cli_common co;
        int r = cli_parse(&(struct cli_spec){ .cmd = "version", .features = CLI_NO_TRUST,
                                              .usage = version_usage },
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
