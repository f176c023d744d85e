/* SPDX-License-Identifier: MIT */
/* What every client subcommand shares (check, put, verify, exec, ls, audit, export, import):
 * the one parser of the mount to use and the owner to trust, and how a refusal's reasons are
 * printed. */
#pragma once

#include <json-c/json.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
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

/* How a command parses besides its options (struct cli_spec's features). */
enum {
        /* The one operand may also be the mount (an alias of --mount, refused when both
         * disagree). */
        CLI_MOUNT_OPERAND = 1u << 0,
        /* --owner any: no owner check at all (snapfs check's policy; never from
         * $SNAPFS_OWNER). */
        CLI_OWNER_ANY = 1u << 1,
        /* Options end at the first operand, whose own options are its business (exec). */
        CLI_STOP_AT_OPERAND = 1u << 2,
};

/* What an option's value is: what the completion offers after it
 * (dist/snapfs-completion.bash, checked against `snapfs help --options CMD`). */
enum cli_arg {
        CLI_ARG_NONE,   /* a flag: no value */
        CLI_ARG_VALUE,  /* a value of the user's own */
        CLI_ARG_FILE,   /* a file */
        CLI_ARG_DIR,    /* a directory */
        CLI_ARG_CHOICE, /* one of the words of choices */
};

/* One option of a command, declared once: getopt_long's table (cli_parse), the rows of
 * --help and `snapfs help CMD` (cli_print_help), and the list the completion and the tests
 * read (cli_print_option_list) all come from it. A table is a command's rows in --help's
 * order, ended by CLI_OPTION_END. */
struct cli_option {
        const char *name;    /* the long name without "--"; NULL: a heading row, or the end */
        char short_name;     /* 'h', or 0 */
        enum cli_arg arg;
        const char *metavar; /* the value's name in --help ("MNT"), NULL for a flag */
        const char *choices; /* CLI_ARG_CHOICE: the words, one space between */
        /* --help's text, lines split by '\n' (indented under the first); a heading row's
         * line as it is; NULL: the row goes on with the next option ("--a N, --b N"). */
        const char *help;
        int val;             /* what getopt_long returns: CLI_OPT_* or from CLI_OWN_OPTION */
        /* CLI_STORE(type, field), or 0: spec->option takes it. */
        size_t store;
};

/* An option cli_parse keeps itself in field of spec->arg (a type), the command's option
 * function never called: a flag sets a bool to true, a value points a const char * at its
 * text (the last one given wins). One past the offset, so 0 stays "not stored". */
#define CLI_STORE(type, field) \
        (offsetof(type, field) + 1 + \
         0 * sizeof(_Generic(((type *)0)->field, bool: 1, const char *: 1)))

/* The options every client command shares, taken by cli_parse itself. */
enum {
        CLI_OPT_HELP = 'h',
        CLI_OPT_MOUNT = 0x100,
        CLI_OPT_OWNER,
        CLI_OPT_INSECURE_OWN_MOUNT,
        CLI_OPT_TRUST_USER_NAMESPACE,
        CLI_OPT_JSON,
        CLI_OPT_KIND,
};

/* A command's own options take val from CLI_OWN_OPTION on, so they never meet a common
 * one. */
#define CLI_OWN_OPTION 0x200

/* The --help texts of the trust options. */
#define CLI_HELP_OWNER "trust a mount made by UID (default: $SNAPFS_OWNER, else 0: root)"
#define CLI_HELP_INSECURE_OWN_MOUNT \
        "INSECURE: also trust a mount made by your own uid. Any process of\n" \
        "your uid can unmount it and mount its own FUSE server in its place,\n" \
        "serving whatever bytes it likes. Refused without it (owner-is-caller)."
#define CLI_HELP_TRUST_USER_NAMESPACE \
        "accept a mount whose owner cannot be verified: one made in another\n" \
        "user namespace, or any FUSE mount when you run inside one\n" \
        "(refused without it: user-namespace)"
/* The --kind text of verify, exec and wait. */
#define CLI_HELP_KIND \
        "the kind of snapshot to accept: content (default), or signature\n" \
        "or manifest (published for --trust-key; never content)"
#define CLI_KIND_WORDS "content signature manifest"

/* A number's macro as text, for a help text: CLI_STR(3) is "3". */
#define CLI_STR(x) CLI_STR_(x)
#define CLI_STR_(x) #x

/* The rows every client command declares from. */
#define CLI_HEADING(text) { .help = (text) }
#define CLI_OPTION_MOUNT(metavar, text) \
        { "mount", 0, CLI_ARG_DIR, (metavar), NULL, (text), CLI_OPT_MOUNT }
#define CLI_OPTION_OWNER(text) { "owner", 0, CLI_ARG_VALUE, "UID", NULL, (text), CLI_OPT_OWNER }
#define CLI_OPTION_INSECURE_OWN_MOUNT(text) \
        { "insecure-own-mount", 0, CLI_ARG_NONE, NULL, NULL, (text), CLI_OPT_INSECURE_OWN_MOUNT }
#define CLI_OPTION_TRUST_USER_NAMESPACE(text) \
        { "trust-user-namespace", 0, CLI_ARG_NONE, NULL, NULL, (text), \
          CLI_OPT_TRUST_USER_NAMESPACE }
/* --owner, --insecure-own-mount, --trust-user-namespace with their usual texts. */
#define CLI_OPTIONS_TRUST \
        CLI_OPTION_OWNER(CLI_HELP_OWNER), \
        CLI_OPTION_INSECURE_OWN_MOUNT(CLI_HELP_INSECURE_OWN_MOUNT), \
        CLI_OPTION_TRUST_USER_NAMESPACE(CLI_HELP_TRUST_USER_NAMESPACE)
/* The rows a client command's table starts with: the heading, --mount MNT and the trust
 * options, with their usual texts. */
#define CLI_OPTIONS_CLIENT \
        CLI_HEADING("Options:"), \
        CLI_OPTION_MOUNT("MNT", CLI_HELP_MOUNT), \
        CLI_OPTIONS_TRUST
#define CLI_OPTION_JSON(text) { "json", 0, CLI_ARG_NONE, NULL, NULL, (text), CLI_OPT_JSON }
#define CLI_OPTION_KIND(text) \
        { "kind", 0, CLI_ARG_CHOICE, "KIND", CLI_KIND_WORDS, (text), CLI_OPT_KIND }
#define CLI_OPTION_HELP { "help", 'h', CLI_ARG_NONE, NULL, NULL, "show this help", CLI_OPT_HELP }
#define CLI_OPTION_END { 0 }

/* A command's --help: head (the usage line through the text before the options), the rows
 * of options, then tail and what more prints (NULL: nothing); the help of the rows starts at
 * column (0: 16). */
struct cli_help {
        const char *head;
        const struct cli_option *options;
        const char *tail;
        int column;
        void (*more)(FILE *f);
};

/* Prints h as --help shows it. */
void cli_print_help(FILE *f, const struct cli_help *h);

/* One line per option of options, for the completion and the tests: "--NAME KIND
 * [WORD...]", KIND one of flag, value, file, dir, choice (then its words). */
void cli_print_option_list(FILE *f, const struct cli_option *options);

struct cli_spec {
        const char *cmd;                /* "put": "snapfs put: " starts every message */
        unsigned features;              /* CLI_* */
        int min_operands, max_operands; /* max -1: no bound */
        const char *what;               /* the operands in a usage error: "one FILE" */
        /* What --help prints; its options are every option the command takes, the common
         * ones included: the trust options ($SNAPFS_OWNER read) only when it has --owner,
         * --json only when it has it. */
        const struct cli_help *help;
        /* The options taken when not all of help's (scope ls and rm take fewer than scope's
         * --help lists), else NULL. */
        const struct cli_option *options;
        /* Takes one of its own (val from CLI_OWN_OPTION; value NULL for a flag): -1 to go
         * on, or an exit code, the refusal printed (cli_usage_error with json). */
        int (*option)(void *arg, int val, const char *value, bool json);
        void *arg;
};

/* --kind KIND of a command that takes it again and again (ls, prune): its SFC_KIND_BIT added
 * to *kinds. -1 to go on, or 2 after the usage error. */
int cli_take_kind(const char *cmd, bool json, const char *value, unsigned *kinds);

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

/* cli_parse, then the mount to use (cli_mount_path) in *mount, malloc'd: -1 to go on, else
 * the exit code, printed. */
int cli_parse_mount(const struct cli_spec *spec, int argc, char **argv, struct cli_common *c,
                    char **mount);

/* --mount, else $SNAPFS_MOUNT, else CLI_DEFAULT_MOUNT, made absolute without its trailing
 * slashes: malloc'd, or NULL after printing why. */
char *cli_mount_path(const char *cmd, const struct cli_common *c);

/* path made absolute, trailing slashes dropped ("/run/snapfs/" names /run/snapfs; the mount
 * check then refuses a symlink at the last component as at any other): malloc'd, or NULL. */
char *cli_absolute_dir(const char *path);

/* Whether an operand and --mount name one directory: 0, -EINVAL (they differ, printed
 * naming both as a usage error, with hint as cli_usage_error's), or -ENOMEM. */
int cli_same_mount(const char *cmd, bool json, bool hint, const char *operand,
                   const char *mount_arg);


/* A usage error for a value of type t refused with err: "snapfs CMD: WHAT: invalid uid
 * '007': expected ..." (value_error's words, then also when not NULL). Returns 2. */
int cli_bad_value(const char *cmd, bool json, const char *what, enum value_type t,
                  const char *value, int err, uint64_t min, uint64_t max, const char *also);

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

/* An object of string fields: key, value, key, value, ... up to a NULL key. NULL without
 * memory. */
json_object *cli_json_strings(const char *key, ...);

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

/* A usage error: "snapfs CMD: MESSAGE" on standard error, and with hint a line pointing at
 * 'snapfs CMD --help'; with json also the one object {"ok": false, "error": "usage", ...} on
 * standard output. Returns 2. */
__attribute__((format(printf, 4, 5)))
int cli_usage_error(const char *cmd, bool json, bool hint, const char *fmt, ...);

/* A system error err (negative errno): "snapfs CMD: MESSAGE: strerror" on standard error;
 * with json the object whose error is the errno's name. Returns 2. */
__attribute__((format(printf, 4, 5)))
int cli_system_error(const char *cmd, bool json, int err, const char *fmt, ...);

/* The usage error getopt_long found (called with opterr 0 and ':' leading its optstring):
 * ch is what it returned ('?' or ':'). Returns 2. */
int cli_getopt_error(const char *cmd, bool json, bool hint, char **argv, int ch);

/* Prints a JSON object (pretty, no slash escaping) and a newline to stdout, and frees it:
 * 0, or -EIO when stdout cannot take it. */
int cli_print_json(json_object *o);
