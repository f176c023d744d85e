/* SPDX-License-Identifier: MIT */
/* What every client subcommand shares (check, put, verify, exec, ls, audit, export, import):
 * the one parser of the mount to use and the owner to trust, and how a refusal's reasons are
 * printed. */
#pragma once

#include <json-c/json.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "client/snapfs.h"
#include "common/values.h"

struct sfc_mnt;

/* The mount when --mount is not given: $SNAPFS_MOUNT, else /run/snapfs. */
#define CLI_DEFAULT_MOUNT "/run/snapfs"
const char *cli_default_mount(void);
/* The --mount line of every --help. */
#define CLI_HELP_MOUNT "the snapfs mount (default: $SNAPFS_MOUNT, else " CLI_DEFAULT_MOUNT ")"


/* What every client subcommand takes: the mount and the owner to trust (cli_parse). */
struct cli_common {
        struct snapfs_options opts; /* --owner (or $SNAPFS_OWNER), the trust flags, --kind */
        const char *mount_arg;      /* --mount as given (or the mount operand), or NULL */
        bool json;                  /* --json */
        bool owner_from_env;        /* opts' owner is $SNAPFS_OWNER's (no --owner) */
        bool owner_any;             /* --owner any (with CLI_OWNER_ANY): no owner check */
};

/* What a command takes besides the trust options (struct cli_spec's features). */
enum {
        /* The one operand may also be the mount (an alias of --mount, refused when both
         * disagree). */
        CLI_MOUNT_OPERAND = 1u << 0,
        /* --kind KIND: the kind of snapshot to hand over (snapshot/kind.h). */
        CLI_KIND = 1u << 1,
        /* --owner any: no owner check at all (snapfs check's policy; never from
         * $SNAPFS_OWNER). */
        CLI_OWNER_ANY = 1u << 2,
        /* No --json (snapfs exec: its standard output is the program's). */
        CLI_NO_JSON = 1u << 3,
        /* Options end at the first operand, whose own options are its business (exec). */
        CLI_STOP_AT_OPERAND = 1u << 4,
        /* No trust options at all: not a client of a mount (keygen). */
        CLI_NO_TRUST = 1u << 5,
};

/* A command's own options beside the common ones: getopt_long's table (val from
 * CLI_OWN_OPTION on, so it never meets a common one) and what takes each. */
#define CLI_OWN_OPTION 0x200

struct cli_spec {
        const char *cmd;                /* "put": "snapfs put: " starts every message */
        unsigned features;              /* CLI_* */
        int min_operands, max_operands; /* max -1: no bound */
        const char *what;               /* the operands in a usage error: "one FILE" */
        void (*usage)(FILE *f);
        const struct option *options;   /* the command's own, or NULL */
        /* Takes one of them (value NULL for a flag): -1 to go on, or an exit code, the
         * refusal printed (cli_usage_error with json). */
        int (*option)(void *arg, int val, const char *value, bool json);
        void *arg;
};

/* True when argv asks for --json before any "--": a usage error found before the parser
 * reached --json (a command dispatching to its subcommands) is then reported as JSON too. */
bool cli_json_requested(int argc, char **argv);

/* The one parser of the client options: --mount MNT, --owner UID, --insecure-own-mount,
 * --trust-user-namespace, $SNAPFS_MOUNT (cli_mount_path), $SNAPFS_OWNER (read first, --owner
 * wins), --json and -h, and what spec adds; every client subcommand parses through it. Then
 * requires min..max operands. Returns -1 to go on (the operands start at argv[optind]), else
 * the exit code: 0 after --help, 2 for a usage error, already printed (as JSON too when
 * --json was asked for). */
int cli_parse(const struct cli_spec *spec, int argc, char **argv, struct cli_common *c);

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


/* A usage error for a value of type t refused with err: "snapfs CMD: WHAT: invalid uid
 * '007': expected ..." (value_error's words, then also when not NULL). Returns 2. */
int cli_bad_value(const char *cmd, bool json, const char *what, enum value_type t,
                  const char *value, int err, uint64_t min, uint64_t max, const char *also);

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


/* Why the key file path could not be used (r from snap_oci_key_load; want_private as asked),
 * as one phrase that says what to do: a private key where a public one is expected names the
 * public file to give instead. Writes at most n bytes to buf and returns buf. */
const char *cli_key_error(const char *path, int r, bool want_private, char *buf, size_t n);

/* A key file refused (r): "snapfs CMD: MESSAGE" on standard error; with json the object whose
 * error is r's name and whose one reason is {"key", MESSAGE}. Returns 2. */
int cli_key_refused(const char *cmd, bool json, int r, const char *message);

/* One "code: message" line per reason, then a line counting dropped ones. */
void cli_print_reasons(FILE *f, const struct snapfs_report *why);
/* The first line of a refusal: the first reason's own words (the cause and what to do), or
 * what err means when there is none. An errno's words alone headed a bad scope name with "not
 * a regular file, or an invalid argument", the reason second. */
const char *cli_headline(int err, const struct snapfs_report *why);
/* The exit status of a refusal: 2 for input refused before any request (a usage error, the
 * reason "invalid-argument"), else 1. */
int cli_refusal_status(const struct snapfs_report *why);

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

/* A usage error: "snapfs CMD: MESSAGE" on standard error, and when usage is given a line
 * pointing at 'snapfs CMD --help'; with json also the one object {"ok": false, "error":
 * "usage", ...} on standard output. Returns 2. */
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
