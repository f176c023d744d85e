/* SPDX-License-Identifier: MIT */
/* One entry point per `snapfs` subcommand. Each returns the process exit code:
 * 0 success, 1 a negative verdict (not compliant, not verified), 2 usage or system error. */
#pragma once

struct cli_help;

struct cli_command {
        const char *name;
        const char *summary;
        int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
        /* Its --help and its options, declared once (cli/clientopts.h); NULL for mount,
         * whose options are the daemon's table (fs/config/options.c). */
        const struct cli_help *help;
};

/* snapfs mount: serve snapshots (cmd-mount.c, fs/daemon/daemon.c). */
int cli_cmd_mount(int argc, char **argv);

/* snapfs check: mount compliance (cmd-check.c). */
int cli_cmd_check(int argc, char **argv);

/* snapfs put, verify, exec, ls, audit: the client side (cmd-*.c, on libsnapfs). */
int cli_cmd_put(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_exec(int argc, char **argv);
int cli_cmd_ls(int argc, char **argv);
int cli_cmd_audit(int argc, char **argv);
/* snapfs wait: until an entry of a scope view moves (cmd-wait.c). */
int cli_cmd_wait(int argc, char **argv);

/* snapfs rm, prune: remove snapshots through the mount (cmd-rm.c, cmd-prune.c). */
int cli_cmd_rm(int argc, char **argv);
int cli_cmd_prune(int argc, char **argv);

/* snapfs help [COMMAND], snapfs version (cmd-help.c). */
int cli_cmd_help(int argc, char **argv);
int cli_cmd_version(int argc, char **argv);

/* snapfs export, import, keygen: OCI image layouts and signatures (cmd-oci.c). */
int cli_cmd_export(int argc, char **argv);
int cli_cmd_import(int argc, char **argv);
int cli_cmd_keygen(int argc, char **argv);

/* snapfs scope create|ls|rm (cmd-scope.c), grant and revoke (cmd-grant.c): scopes, through
 * the main mount's control file. */
int cli_cmd_scope(int argc, char **argv);
int cli_cmd_grant(int argc, char **argv);
int cli_cmd_revoke(int argc, char **argv);

/* snapfs status and metrics: the daemon's health and counters, through the main mount's
 * control file (cmd-status.c). */
int cli_cmd_status(int argc, char **argv);
int cli_cmd_metrics(int argc, char **argv);
/* Every command and what it does, on f (cmd-help.c). */
#include <stdio.h>
void cli_main_usage(FILE *f);

/* Each command's --help and options (in its cmd-*.c), as the table names them. */
extern const struct cli_help cli_check_help, cli_put_help, cli_ls_help, cli_rm_help,
        cli_prune_help, cli_verify_help, cli_exec_help, cli_wait_help, cli_audit_help,
        cli_export_help, cli_import_help, cli_keygen_help, cli_scope_help, cli_grant_help,
        cli_revoke_help, cli_status_help, cli_metrics_help, cli_help_help, cli_version_help;

/* The options of snapfs mount, as `snapfs help --options mount` lists them (cmd-mount.c). */
void cli_mount_option_list(FILE *f);

/* The table, NULL-name terminated. */
extern const struct cli_command cli_commands[];
