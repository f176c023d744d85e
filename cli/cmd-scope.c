/* SPDX-License-Identifier: MIT */
/* snapfs scope create|ls|rm: scopes of the daemon behind a main mount, through its control
 * file (libsnapfs, docs/design.md "Scopes"). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/scope-out.h"
#include "cli/show.h"
#include "common/util.h"
#include "common/values.h"

#define USAGE_CREATE                                                                         \
        "snapfs scope create [--mount MNT] [TRUST] [--json] NAME --view PATH\n"                \
        "                    [--uid UID[,UID...]] [--gid GID] [--publish] [--until-pid PID]\n" \
        "                    [--max-snapshots N] [--max-bytes SIZE] [--max-staging N]\n"       \
        "                    [--max-staging-bytes SIZE] [--min-bytes SIZE]\n"
#define USAGE_LS "snapfs scope ls [--mount MNT] [TRUST] [--json] [NAME]\n"
#define USAGE_RM "snapfs scope rm [--mount MNT] [TRUST] [--json] NAME\n"

enum {
        OPT_VIEW = CLI_OWN_OPTION,
        OPT_UID,
        OPT_GID,
        OPT_PUBLISH,
        OPT_UNTIL_PID,
        OPT_MAX_SNAPSHOTS,
        OPT_MAX_BYTES,
        OPT_MAX_STAGING,
        OPT_MAX_STAGING_BYTES,
        OPT_MIN_BYTES,
};

/* What every scope subcommand takes. */
#define SCOPE_OPTIONS \
        CLI_OPTIONS_CLIENT, \
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n" \
                        "then scope (create, ls NAME: the scope or null; rm: its\n" \
                        "name), grants (ls NAME), scopes (ls)"), \
        CLI_OPTION_HELP

/* scope ls and scope rm. */
static const struct cli_option scope_options[] = {
        SCOPE_OPTIONS,
        CLI_OPTION_END,
};

/* What scope create is given besides the common options. */
struct create_args {
        struct snapfs_scope_spec *spec;
        const char *view;
        struct value_uid_list uids;
};

/* scope create, whose rows close scope's --help. */
static const struct cli_option scope_create_options[] = {
        SCOPE_OPTIONS,
        CLI_HEADING("create:"),
        { "view", 0, CLI_ARG_DIR, "PATH", NULL,
          "where the view is mounted (required)", OPT_VIEW,
          CLI_STORE(struct create_args, view) },
        { "uid", 0, CLI_ARG_VALUE, "UID[,UID...]", NULL,
          "the uids that may use the view", OPT_UID },
        { "gid", 0, CLI_ARG_VALUE, "GID", NULL,
          "a group whose members may use it (default without --uid and\n"
          "--gid: root only; uid 0 always may)", OPT_GID },
        { "publish", 0, CLI_ARG_NONE, NULL, NULL,
          "processes in the scope may publish in its view (.staging/);\n"
          "without it the view is read-only", OPT_PUBLISH },
        { "until-pid", 0, CLI_ARG_VALUE, "PID", NULL,
          "delete the scope by itself when process PID exits (PID as\n"
          "this pid namespace sees it, which must be the daemon's)", OPT_UNTIL_PID },
        { "max-snapshots", 0, CLI_ARG_VALUE, "N", NULL,
          NULL, OPT_MAX_SNAPSHOTS },
        { "max-bytes", 0, CLI_ARG_VALUE, "SIZE", NULL,
          NULL, OPT_MAX_BYTES },
        { "max-staging", 0, CLI_ARG_VALUE, "N", NULL,
          NULL, OPT_MAX_STAGING },
        { "max-staging-bytes", 0, CLI_ARG_VALUE, "SIZE", NULL,
          "what may be published in the scope's view and staged there\n"
          "(SIZE: digits with an optional K, M or G); past them EDQUOT", OPT_MAX_STAGING_BYTES },
        { "min-bytes", 0, CLI_ARG_VALUE, "SIZE", NULL,
          "bytes guaranteed to the scope, at most its --max-bytes: kept\n"
          "from every other scope and uid but the owner; refused\n"
          "(ENOSPC) when the daemon cannot keep them (default: none,\n"
          "the scope shares what is free)", OPT_MIN_BYTES },
        CLI_OPTION_END,
};

const struct cli_help cli_scope_help = {
        .head = "Usage: " USAGE_CREATE
                "       " USAGE_LS
                "       " USAGE_RM
                "TRUST: [--owner UID] [--insecure-own-mount] [--trust-user-namespace]\n"
                "\n"
                "A scope is what one sandbox may see: a mount of its own, the view, that lists\n"
                "and opens only the snapshots granted to it (snapfs grant). The mount owner and\n"
                "root manage scopes through the main mount MNT, whose daemon serves every view.\n"
                "\n"
                "  create NAME   create the scope and mount its view at PATH (an absolute path\n"
                "                where the daemon runs; the daemon makes the directory when it\n"
                "                is missing). NAME: 1-64 of [A-Za-z0-9._-], not starting with '.'\n"
                "  ls [NAME]     every scope with its usage; with NAME, that scope and its grants\n"
                "  rm NAME       delete the scope: its grants go, its view is detached (open\n"
                "                descriptors keep reading until closed)\n"
                "\n",
        .options = scope_create_options,
        .tail = "\n"
                "Exit status: 0 done; 1 refused (the mount, or the daemon: every reason on\n"
                "standard error as \"code: message\" lines); 2 usage or system error.\n",
};

/* The refusal of a call: text or the one JSON object (its command fields null). */
static int refused(const char *cmd, const char *mount, int r, const struct snapfs_report *why,
                   bool json, json_object *fields)
{
        if (json) {
                json_object *o = cli_json_refusal(r, why);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_foreach(fields, key, val)
                                json_object_object_add(o, key, json_object_get(val));
                }
                json_object_put(fields);
                return cli_print_json(o) < 0 ? 2 : cli_refusal_status(why);
        }
        json_object_put(fields);
        fprintf(stderr, "snapfs %s: %s: %s\n", cmd, mount, cli_headline(r, why));
        cli_print_reasons(stderr, why);
        return cli_refusal_status(why);
}

static json_object *fields1(const char *key, json_object *v)
{
        json_object *o = json_object_new_object();

        if (o)
                json_object_object_add(o, key, v);
        else
                json_object_put(v);
        return o;
}

/* One option of scope create, parsed by common/values.h as every command parses its values:
 * -1 to go on, or 2 after a usage error. */
static int take_create_option(void *arg, int val, const char *value, bool json)
{
        static const char *const limit_name[] = { "--max-snapshots", "--max-bytes",
                                                  "--max-staging", "--max-staging-bytes" };
        struct create_args *a = arg;
        struct snapfs_scope_spec *spec = a->spec;
        uint64_t *limit[] = { &spec->limits.max_snapshots, &spec->limits.max_bytes,
                              &spec->limits.max_staging, &spec->limits.max_staging_bytes };
        const char *cmd = "scope create";
        uint32_t uid;
        uint64_t v;
        int r;

        switch (val) {
        case OPT_UID:
                /* A scope's users are named: never "any". */
                r = value_parse_uid_list(value, &a->uids);
                if (r == 0 && a->uids.any)
                        r = -EINVAL;
                if (r < 0)
                        return cli_bad_value(cmd, json, "--uid", VALUE_UID_LIST, value, r, 0,
                                             UINT64_MAX, "; not any: a scope's users are named");
                return -1;
        case OPT_GID:
                r = value_parse_uid(value, &uid);
                if (r < 0)
                        return cli_bad_value(cmd, json, "--gid", VALUE_UID, value, r, 0,
                                             VALUE_UID_MAX, NULL);
                spec->flags |= SNAPFS_SCOPE_GID;
                spec->gid = uid;
                return -1;
        case OPT_PUBLISH:
                spec->flags |= SNAPFS_SCOPE_PUBLISH;
                return -1;
        case OPT_MIN_BYTES:
                r = value_parse(VALUE_SIZE, value, 1, UINT64_MAX, &spec->min_bytes);
                if (r < 0)
                        return cli_bad_value(cmd, json, "--min-bytes", VALUE_SIZE, value, r, 1,
                                             UINT64_MAX, NULL);
                return -1;
        case OPT_UNTIL_PID:
                r = value_parse(VALUE_COUNT, value, 1, INT32_MAX, &v);
                if (r < 0)
                        return cli_bad_value(cmd, json, "--until-pid", VALUE_COUNT, value, r, 1,
                                             INT32_MAX, NULL);
                spec->flags |= SNAPFS_SCOPE_UNTIL_PID;
                spec->until_pid = (int32_t)v;
                return -1;
        default: {
                size_t i = (size_t)(val - OPT_MAX_SNAPSHOTS);
                enum value_type t = i & 1 ? VALUE_SIZE : VALUE_COUNT;
                r = value_parse(t, value, 1, UINT64_MAX, limit[i]);
                if (r < 0)
                        return cli_bad_value(cmd, json, limit_name[i], t, value, r, 1,
                                             UINT64_MAX, NULL);
                return -1;
        }
        }
}

static int scope_create(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL, *view_abs = NULL;
        struct snapfs_scope_spec spec = { 0 };
        struct create_args a = { .spec = &spec };
        struct snapfs_scope s;
        struct snapfs_report why;
        struct cli_common co;
        const char *view;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "scope create", .min_operands = 1,
                                          .max_operands = 1, .what = "one NAME",
                                          .help = &cli_scope_help,
                                          .option = take_create_option, .arg = &a },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        view = a.view;
        if (!view)
                return cli_usage_error("scope create", co.json, true, "--view is required");
        if (!*view)
                return cli_usage_error("scope create", co.json, false, "--view: an empty path");
        spec.uids = a.uids.uids;
        spec.n_uids = a.uids.n;
        spec.name = argv[optind];
        /* Like --mount: made absolute, a trailing '/' dropped; the daemon refuses a symlink
         * anywhere in it. */
        view_abs = cli_absolute_dir(view);
        if (!view_abs)
                return cli_system_error("scope create", co.json, negative_errno(), "--view");
        mount = cli_mount_path("scope create", &co);
        if (!mount)
                return 2;
        spec.view = view_abs;

        r = snapfs_scope_create(mount, &spec, &co.opts, &s, &why);
        if (r < 0)
                return refused("scope create", mount, r, &why, co.json, fields1("scope", NULL));
        if (co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_add(o, "scope", cli_scope_json(&s));
                }
                snapfs_scope_free(&s);
                return cli_print_json(o) < 0 ? 2 : 0;
        }
        cli_scope_print(stdout, &s);
        snapfs_scope_free(&s);
        return fflush(stdout) == 0 ? 0 : 2;
}

/* scope ls: every scope of mount. An exit code. */
static int list_scopes(const char *mount, const struct cli_common *co)
{
        struct snapfs_report why;
        struct snapfs_scope *v;
        size_t n;
        int r;

        r = snapfs_scope_list(mount, &co->opts, &v, &n, &why);
        if (r < 0)
                return refused("scope ls", mount, r, &why, co->json, fields1("scopes", NULL));
        if (co->json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                json_object *list = json_object_new_array();
                for (size_t i = 0; list && i < n; i++)
                        json_object_array_add(list, cli_scope_json(&v[i]));
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_add(o, "scopes", list);
                } else {
                        json_object_put(list);
                }
                snapfs_scopes_free(v, n);
                return cli_print_json(o) < 0 ? 2 : 0;
        }
        cli_scope_table(stdout, v, n);
        snapfs_scopes_free(v, n);
        return fflush(stdout) == 0 ? 0 : 2;
}

/* scope ls NAME --json: the scope and its grants, each described. An exit code. */
static int show_scope_json(const char *mount, const struct cli_common *co,
                           struct snapfs_scope *s, const struct snapfs_grant *g, size_t n)
{
        _cleanup_free_ struct snapfs_snapshot *snap = calloc(n ? n : 1, sizeof(*snap));
        _cleanup_free_ unsigned *seen = calloc(n ? n : 1, sizeof(*seen));
        json_object *o = cli_json_result(true, NULL, NULL, NULL);
        json_object *list = snap && seen ? json_object_new_array() : NULL;

        if (list)
                cli_grants_describe(mount, s, g, n, &co->opts, snap, seen);
        for (size_t i = 0; list && i < n; i++)
                json_object_array_add(list, cli_grant_json(&g[i], &snap[i], seen[i]));
        if (o) {
                json_object_object_add(o, "mount", json_object_new_string(mount));
                json_object_object_add(o, "scope", cli_scope_json(s));
                json_object_object_add(o, "grants", list);
        } else {
                json_object_put(list);
        }
        snapfs_scope_free(s);
        return cli_print_json(o) < 0 ? 2 : 0;
}

/* scope ls NAME: the scope, then its grants. An exit code. */
static int show_scope(const char *mount, const char *name, const struct cli_common *co)
{
        _cleanup_free_ struct snapfs_grant *g = NULL;
        struct snapfs_report why;
        struct snapfs_scope s;
        size_t n;
        int r;

        r = snapfs_scope_show(mount, name, &co->opts, &s, &g, &n, &why);
        if (r < 0) {
                json_object *f = fields1("scope", NULL);
                if (f)
                        json_object_object_add(f, "grants", NULL);
                return refused("scope ls", mount, r, &why, co->json, f);
        }
        if (co->json)
                return show_scope_json(mount, co, &s, g, n);
        cli_scope_print(stdout, &s);
        snapfs_scope_free(&s);
        for (size_t i = 0; i < n; i++)
                cli_grant_print(stdout, &g[i]);
        return fflush(stdout) == 0 ? 0 : 2;
}

static int scope_ls(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct cli_common co;
        int r;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "scope ls", .max_operands = 1,
                                                .what = "at most one NAME",
                                                .help = &cli_scope_help, .options = scope_options },
                            argc, argv, &co, &mount);
        if (r >= 0)
                return r;
        return optind < argc ? show_scope(mount, argv[optind], &co) : list_scopes(mount, &co);
}

static int scope_rm(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct snapfs_report why;
        struct cli_common co;
        int r;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "scope rm", .min_operands = 1,
                                                .max_operands = 1, .what = "one NAME",
                                                .help = &cli_scope_help, .options = scope_options },
                            argc, argv, &co, &mount);
        if (r >= 0)
                return r;
        r = snapfs_scope_remove(mount, argv[optind], &co.opts, &why);
        if (r < 0)
                return refused("scope rm", mount, r, &why, co.json,
                               fields1("scope", json_object_new_string(argv[optind])));
        if (co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_add(o, "scope", json_object_new_string(argv[optind]));
                }
                return cli_print_json(o) < 0 ? 2 : 0;
        }
        return 0;
}

int cli_cmd_scope(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } subs[] = {
                { "create", scope_create },
                { "ls", scope_ls },
                { "rm", scope_rm },
        };
        bool json = cli_json_requested(argc, argv);

        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                cli_print_help(stdout, &cli_scope_help);
                return 0;
        }
        for (size_t i = 0; argc >= 2 && i < ARRAY_SIZE(subs); i++)
                if (strcmp(argv[1], subs[i].name) == 0)
                        return subs[i].run(argc - 1, argv + 1);
        if (argc < 2)
                return cli_usage_error("scope", json, true, "expected create, ls or rm");
        return cli_usage_error("scope", json, true,
                               "unknown subcommand '%s' (create, ls or rm)", argv[1]);
}
