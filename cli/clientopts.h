/* SPDX-License-Identifier: MIT */
/* What put, verify, exec, ls and audit share: the mount to use, the owner to trust, and how
 * a refusal's reasons are printed. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "client/snapfs.h"

struct snapfs_mnt;

/* The mount when --mount is not given: $SNAPFS_MOUNT, else /run/snapfs. */
#define CLI_DEFAULT_MOUNT "/run/snapfs"
const char *cli_default_mount(void);
/* The --mount line of every --help. */
#define CLI_HELP_MOUNT "the snapfs mount (default: $SNAPFS_MOUNT, else " CLI_DEFAULT_MOUNT ")"


/* The options put, verify, ls and audit share. */
struct cli_common {
        struct snapfs_options opts; /* --owner */
        const char *mount_arg;      /* --mount as given (or the mount operand), or NULL */
        bool json;                  /* --json */
};

/* What a command takes besides the common options (cli_parse_common's features). */
enum {
        /* The one operand may also be the mount (an alias of --mount, refused when both
         * disagree). */
        CLI_MOUNT_OPERAND = 1u << 0,
        /* --kind KIND: the kind of snapshot to hand over (cli_parse_kind). */
        CLI_KIND = 1u << 1,
        /* The last of the operands may be left out. */
        CLI_OPTIONAL_OPERAND = 1u << 2,
};

/* Parses [--mount MNT] [--owner UID] [--insecure-own-mount] [--trust-user-namespace]
 * [--json] [-h] (and what features add) for "snapfs cmd" ($SNAPFS_OWNER first), then requires
 * exactly `operands` operands, named by what in the error ("one FILE"). Returns -1 to go on
 * (the operands start at argv[optind]), else the exit code: 0 after --help, 2 for a usage
 * error, already printed (as JSON too when --json was asked for). */
int cli_parse_common(const char *cmd, int argc, char **argv, unsigned features, int operands,
                     const char *what, void (*usage)(FILE *f), struct cli_common *c);

/* --kind KIND: content, signature or manifest (snapshot/kind.h), as the SNAPFS_OPT_KIND_*
 * flag of opts (replacing any kind already set). 0, or -EINVAL. */
int cli_parse_kind(const char *s, struct snapfs_options *opts);

/* The --kind line of the --help of verify and exec. */
#define CLI_HELP_KIND \
        "  --kind KIND   the kind of snapshot to accept: content (default), or signature\n" \
        "                or manifest (published for --trust-key; never content)\n"

/* --mount, else $SNAPFS_MOUNT, else CLI_DEFAULT_MOUNT, made absolute without its trailing
 * slashes: malloc'd, or NULL after printing why. */
char *cli_mount_path(const char *cmd, const struct cli_common *c);

/* path made absolute, trailing slashes dropped ("/run/snapfs/" names /run/snapfs; the mount
 * check then refuses a symlink at the last component as at any other): malloc'd, or NULL. */
char *cli_absolute_dir(const char *path);

/* Whether an operand and --mount name one directory: 0, -EINVAL (they differ, printed
 * naming both as a usage error), or -ENOMEM. */
int cli_same_mount(const char *cmd, bool json, void (*usage)(FILE *f), const char *operand,
                   const char *mount_arg);


/* --owner UID: a decimal uid (no sign, no leading zero, < 2^32 - 1). 0, or -EINVAL. */
int cli_parse_owner(const char *s, struct snapfs_options *opts);

/* $SNAPFS_OWNER when set and not empty, else NULL: the trusted owner of every client command
 * (an explicit --owner wins). Every command takes the same values there, those of
 * cli_parse_owner: a uid, never "any". */
const char *cli_env_owner(void);

/* Applies $SNAPFS_OWNER to opts: 0, or 2 after reporting a usage error (as JSON too when
 * json) that it is not a uid. */
int cli_apply_env_owner(const char *cmd, bool json, struct snapfs_options *opts);

/* The trust options of every client command's --help. */
#define CLI_HELP_TRUST \
        "  --owner UID   trust a mount made by UID (default: $SNAPFS_OWNER, else 0: root)\n" \
        "  --insecure-own-mount\n" \
        "                INSECURE: also trust a mount made by your own uid. Any process of\n" \
        "                your uid can unmount it and mount its own FUSE server in its place,\n" \
        "                serving whatever bytes it likes. Refused without it (owner-is-caller).\n" \
        "  --trust-user-namespace\n" \
        "                accept a mount whose owner cannot be verified: one made in another\n" \
        "                user namespace, or any FUSE mount when you run inside one\n" \
        "                (refused without it: user-namespace)\n"


/* One "code: message" line per reason, then a line counting dropped ones. */
void cli_print_reasons(FILE *f, const struct snapfs_report *why);

/* [{"code": ..., "message": ...}, ...] */
json_object *cli_reasons_json(const struct snapfs_report *why);

/* Every --json outcome of every subcommand is one object that starts with the same four
 * fields: {"ok", "error" (null, an errno name or "usage"), "message" (null or text),
 * "reasons" [{code, message}]}; the command adds its own after them (docs/design.md,
 * "Command-line contract"). why may be NULL (no reasons). */
json_object *cli_json_result(bool ok, const char *error, const char *message,
                             const struct snapfs_report *why);

/* cli_json_result of a refusal: error is the errno's name, message snapfs_strerror's. */
json_object *cli_json_refusal(int err, const struct snapfs_report *why);

/* True when argv asks for --json before any "--" or the first operand of exec: a usage
 * error found before the parser reached --json is then reported as JSON too. */
bool cli_json_requested(int argc, char **argv);

/* A usage error: "snapfs CMD: MESSAGE" and the usage on standard error; with json also the
 * one object {"ok": false, "error": "usage", ...} on standard output. Returns 2. */
__attribute__((format(printf, 4, 5)))
int cli_usage_error(const char *cmd, bool json, void (*usage)(FILE *f), const char *fmt, ...);

/* A system error err (negative errno): "snapfs CMD: MESSAGE: strerror" on standard error;
 * with json the object whose error is the errno's name. Returns 2. */
__attribute__((format(printf, 4, 5)))
int cli_system_error(const char *cmd, bool json, int err, const char *fmt, ...);

/* The usage error getopt_long found (called with opterr 0 and ':' leading its optstring):
 * ch is what it returned ('?' or ':'). Returns 2. */
int cli_getopt_error(const char *cmd, bool json, void (*usage)(FILE *f), char **argv, int ch);

/* Prints a JSON object (pretty, no slash escaping) and a newline to stdout, and frees it:
 * 0, or -EIO when stdout cannot take it. */
int cli_print_json(json_object *o);
