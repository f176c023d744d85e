/* SPDX-License-Identifier: MIT */
/* What put, verify, exec, ls and audit share: the mount to use, the owner to trust, and how
 * a refusal's reasons are printed. */
#pragma once

#include <dirent.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "snapfs.h"

struct snapfs_mnt;

/* The mount when --mount is not given: $SNAPFS_MOUNT, else /run/snapfs. */
#define CLI_DEFAULT_MOUNT "/run/snapfs"
const char *cli_default_mount(void);
/* The --mount line of every --help. */
#define CLI_HELP_MOUNT "the snapfs mount (default: $SNAPFS_MOUNT, else " CLI_DEFAULT_MOUNT ")"


/* The options put, verify, ls and audit share. */
struct cli_common {
        struct snapfs_options opts; /* --owner */
        const char *mount_arg;      /* --mount as given, or NULL */
        bool json;                  /* --json */
};

/* Parses [--mount MNT] (when with_mount) [--owner UID] [--json] [-h] for "snapfs cmd", then
 * requires exactly `operands` operands, named by what in the error ("one FILE"). Returns -1
 * to go on (the operands start at argv[optind]), else the exit code: 0 after --help, 2 for a
 * usage error, already printed. */
int cli_parse_common(const char *cmd, int argc, char **argv, bool with_mount, int operands,
                     const char *what, void (*usage)(FILE *f), struct cli_common *c);

/* --mount, else $SNAPFS_MOUNT, else CLI_DEFAULT_MOUNT, made absolute: malloc'd, or NULL after
 * printing why. */
char *cli_mount_path(const char *cmd, const struct cli_common *c);

/* The judged mount's root, opened for listing below its pinned descriptor (never through the
 * path again): 0 and *out (closedir it), or a negative errno. */
int cli_open_root_dir(const struct snapfs_mnt *m, DIR **out);

/* --owner UID: a decimal uid (no sign, no leading zero, < 2^32 - 1). 0, or -EINVAL. */
int cli_parse_owner(const char *s, struct snapfs_options *opts);

/* One "code: message" line per reason, then a line counting dropped ones. */
void cli_print_reasons(FILE *f, const struct snapfs_report *why);

/* [{"code": ..., "message": ...}, ...] */
json_object *cli_reasons_json(const struct snapfs_report *why);

/* Adds error (the errno's name), message (snapfs_strerror) and reasons to o; returns o. */
json_object *cli_refusal_json(json_object *o, int err, const struct snapfs_report *why);

/* Prints a JSON object (pretty, no slash escaping) and a newline to stdout, and frees it:
 * 0, or -EIO when stdout cannot take it. */
int cli_print_json(json_object *o);
