/* SPDX-License-Identifier: MIT */
/* snapfs grant, snapfs revoke: what a scope's view lists, through the main mount's control
 * file (libsnapfs, docs/design.md "Scopes"). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/scope-out.h"
#include "common/hex.h"
#include "common/util.h"
#include "snapshot/digest.h"

enum {
        OPT_AS = CLI_OWN_OPTION,
};

static const struct cli_option grant_options[] = {
        CLI_OPTIONS_CLIENT,
        { "as", 0, CLI_ARG_VALUE, "ENTRY", NULL,
          "the entry name: 1-64 of [A-Za-z0-9._-], not starting with '.'", OPT_AS },
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "scope, grant (the snapshot object, entry beside it; or\n"
                        "null)"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_grant_help = {
        .head = "Usage: snapfs grant [--mount MNT] [--owner UID] [--insecure-own-mount] [--json]\n"
                "                    NAME DIGEST|BINDING [--as ENTRY]\n"
                "\n"
                "Grant the snapshot DIGEST (64 lowercase hex; a BINDING names it by its sha256)\n"
                "published on the main mount MNT to the scope NAME: its view lists it from now\n"
                "on. With --as, also under the name ENTRY in the view; an ENTRY that exists\n"
                "moves to DIGEST at once, so a reader of the name gets the old snapshot or the\n"
                "new one, never an error. Prints the grant:\n"
                "  sha256=<hex> size=<n> ino=<n> [entry=<ENTRY>]\n"
                "\n",
        .options = grant_options,
        .tail = "\n"
                "Exit status: 0 granted; 1 refused (every reason on standard error); 2 usage\n"
                "or system error.\n",
};

static const struct cli_option revoke_options[] = {
        CLI_OPTIONS_CLIENT,
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "scope, sha256 (or null), entry (or null)"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_revoke_help = {
        .head = "Usage: snapfs revoke [--mount MNT] [--owner UID] [--insecure-own-mount] [--json]\n"
                "                     NAME DIGEST|ENTRY\n"
                "\n"
                "Revoke from the scope NAME every grant of DIGEST (its entries included), or the\n"
                "one entry ENTRY. New lookups in the view get ENOENT; descriptors already open\n"
                "keep reading. A snapshot nothing references any more is removed.\n"
                "\n",
        .options = revoke_options,
        .tail = "\n"
                "Exit status: 0 revoked; 1 refused (every reason on standard error); 2 usage\n"
                "or system error.\n",
};

static json_object *result(bool ok, int r, const struct snapfs_report *why, const char *mount,
                           const char *scope)
{
        json_object *o = ok ? cli_json_result(true, NULL, NULL, NULL) : cli_json_refusal(r, why);

        if (o) {
                json_object_object_add(o, "mount", json_object_new_string(mount));
                json_object_object_add(o, "scope", json_object_new_string(scope));
        }
        return o;
}

/* --as ENTRY: -1 to go on. */
static int take_as(void *arg, int val, const char *value, bool json)
{
        (void)val, (void)json;
        *(const char **)arg = value;
        return -1;
}

/* How a grant or a revoke (cmd) ended, r its call's: with json the object o printed; else,
 * refused, "snapfs CMD: MOUNT: not UNDONE: headline" and the reasons. -1 when it went
 * through without json (the command prints what it did), else the exit code. */
static int outcome(const char *cmd, const char *undone, const char *mount, int r,
                   const struct snapfs_report *why, bool json, json_object *o)
{
        if (json) {
                if (cli_print_json(o) < 0)
                        return 2;
                return r < 0 ? cli_refusal_status(why) : 0;
        }
        if (r >= 0)
                return -1;
        fprintf(stderr, "snapfs %s: %s: not %s: %s\n", cmd, mount, undone, cli_headline(r, why));
        cli_print_reasons(stderr, why);
        return cli_refusal_status(why);
}

int cli_cmd_grant(int argc, char **argv)
{
        const char *entry = NULL;
        _cleanup_free_ char *mount = NULL;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snapfs_report why;
        struct snapfs_binding b;
        struct snapfs_grant g;
        struct cli_common co;
        const char *scope, *what;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "grant", .min_operands = 2, .max_operands = 2,
                                          .what = "NAME and DIGEST or BINDING",
                                          .help = &cli_grant_help,
                                          .option = take_as, .arg = &entry },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        scope = argv[optind];
        what = argv[optind + 1];
        /* A snapshot is its content: the binding's sha256 names it, whichever mount (or
         * view) the binding was taken on. */
        if (snap_is_digest_name(what)) {
                snprintf(hex, sizeof(hex), "%s", what);
        } else if (snapfs_binding_parse(what, &b) == 0) {
                hex_encode(b.sha256, SNAPFS_DIGEST_LEN, hex);
        } else {
                return cli_usage_error("grant", co.json, true,
                                       "'%s' is neither a digest (64 lowercase hex) nor a binding",
                                       what);
        }
        mount = cli_mount_path("grant", &co);
        if (!mount)
                return 2;

        r = snapfs_grant(mount, scope, hex, entry, &co.opts, &g, &why);
        if (co.json) {
                json_object *o = result(r == 0, r, &why, mount, scope);
                if (o && r == 0) {
                        struct snapfs_snapshot snap;
                        struct snapfs_report swhy;
                        struct snapfs_scope s;
                        unsigned seen;
                        /* Where the grant is seen: the scope's view, as the daemon names it
                         * now. */
                        bool shown = snapfs_scope_show(mount, scope, &co.opts, &s, NULL, NULL,
                                                       &swhy) == 0;
                        cli_grants_describe(mount, shown ? &s : NULL, &g, 1, &co.opts, &snap,
                                            &seen);
                        if (shown)
                                snapfs_scope_free(&s);
                        json_object_object_add(o, "grant", cli_grant_json(&g, &snap, seen));
                } else if (o) {
                        json_object_object_add(o, "grant", NULL);
                }
                return outcome("grant", "granted", mount, r, &why, true, o);
        }
        r = outcome("grant", "granted", mount, r, &why, false, NULL);
        if (r >= 0)
                return r;
        cli_grant_print(stdout, &g);
        return fflush(stdout) == 0 ? 0 : 2;
}

int cli_cmd_revoke(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct snapfs_report why;
        struct cli_common co;
        const char *scope, *what, *sha256 = NULL, *entry = NULL;
        json_object *o;
        int r;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "revoke", .min_operands = 2,
                                                .max_operands = 2,
                                                .what = "NAME and DIGEST or ENTRY",
                                                .help = &cli_revoke_help },
                            argc, argv, &co, &mount);
        if (r >= 0)
                return r;
        scope = argv[optind];
        what = argv[optind + 1];
        /* 64 lowercase hex is a digest: an entry never has that form (the view's names would
         * be ambiguous). */
        if (snap_is_digest_name(what))
                sha256 = what;
        else
                entry = what;

        r = snapfs_revoke(mount, scope, sha256, entry, &co.opts, &why);
        o = co.json ? result(r == 0, r, &why, mount, scope) : NULL;
        if (o) {
                json_object_object_add(o, "sha256", sha256 ? json_object_new_string(sha256) : NULL);
                json_object_object_add(o, "entry", entry ? json_object_new_string(entry) : NULL);
        }
        r = outcome("revoke", "revoked", mount, r, &why, co.json, o);
        return r >= 0 ? r : 0;
}
