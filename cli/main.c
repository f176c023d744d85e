/* SPDX-License-Identifier: MIT */
/* snapfs: the command line front end. Dispatches to one subcommand per file (cmd-*.c). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

const struct cli_command cli_commands[] = {
        { "mount", "mount snapfs and serve snapshots", cli_cmd_mount,
          NULL },
        { "check", "judge whether the mount at a path is compliant", cli_cmd_check,
          &cli_check_help },
        { "put", "publish a file and print its binding", cli_cmd_put,
          &cli_put_help },
        { "ls", "list the snapshots of a mount: name, size, age, publisher", cli_cmd_ls,
          &cli_ls_help },
        { "rm", "remove snapshots by name, digest or binding", cli_cmd_rm,
          &cli_rm_help },
        { "prune", "remove snapshots older than a duration, or of a kind", cli_cmd_prune,
          &cli_prune_help },
        { "verify", "verify a binding or a snapshot path, with every reason", cli_cmd_verify,
          &cli_verify_help },
        { "exec", "run a program with a verified snapshot as a descriptor", cli_cmd_exec,
          &cli_exec_help },
        { "wait", "wait for an entry of a scope view to move, then print its binding",
          cli_cmd_wait, &cli_wait_help },
        { "audit", "check a mount and re-hash every snapshot on it", cli_cmd_audit,
          &cli_audit_help },
        { "export", "write snapshots into an OCI image layout, optionally signed", cli_cmd_export,
          &cli_export_help },
        { "import", "publish the snapshots of an OCI image layout", cli_cmd_import,
          &cli_import_help },
        { "keygen", "write an Ed25519 key pair for signing exports", cli_cmd_keygen,
          &cli_keygen_help },
        { "scope", "create, list and delete scopes: a view per sandbox", cli_cmd_scope,
          &cli_scope_help },
        { "grant", "grant a snapshot to a scope, optionally under an entry name", cli_cmd_grant,
          &cli_grant_help },
        { "revoke", "revoke a snapshot or an entry from a scope", cli_cmd_revoke,
          &cli_revoke_help },
        { "status", "the daemon's health: mounts, store, limits, counters", cli_cmd_status,
          &cli_status_help },
        { "metrics", "the daemon's counters as OpenMetrics text", cli_cmd_metrics,
          &cli_metrics_help },
        { "help", "show what a command does and takes", cli_cmd_help,
          &cli_help_help },
        { "version", "print the version", cli_cmd_version,
          &cli_version_help },
        { NULL, NULL, NULL, NULL },
};

/* mount -t fuse.snapfs SOURCE MNT -o OPTS: util-linux runs mount.fuse3, which runs
 * "snapfs SOURCE MNT -o OPTS" (the subtype as the program name). That is "snapfs mount -o OPTS
 * MNT"; SOURCE is free text for mountinfo's first column and means nothing to snapfs. */
static int mount_helper(int argc, char **argv)
{
        char *args[argc];
        int n = 0;

        args[n++] = "mount";
        for (int i = 3; i < argc; i++)
                args[n++] = argv[i];
        args[n++] = argv[2];
        args[n] = NULL;
        return cli_cmd_mount(n, args);
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                cli_main_usage(stderr);
                return 2;
        }
        if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
                return cli_cmd_version(1, argv);
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                cli_main_usage(stdout);
                return 0;
        }
        for (const struct cli_command *c = cli_commands; c->name; c++)
                if (strcmp(argv[1], c->name) == 0)
                        return c->run(argc - 1, argv + 1);
        /* Only mount.fuse3's exact shape, so a mistyped command never mounts anything. */
        if (argc >= 5 && argv[1][0] != '-' && argv[2][0] == '/' && strcmp(argv[3], "-o") == 0)
                return mount_helper(argc, argv);
        fprintf(stderr, "snapfs: unknown command '%s'; run 'snapfs help' for the list\n",
                argv[1]);
        return 2;
}
