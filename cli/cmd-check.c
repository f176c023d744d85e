/* SPDX-License-Identifier: MIT */
/* snapfs check: is the mount at PATH compliant? Prints every finding; exit 0/1/2. */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "client/client-internal.h"
#include "mountcheck/mountcheck.h"
#include "common/util.h"

enum {
        OPT_PRESET = CLI_OWN_OPTION,
        OPT_FSTYPE,
        OPT_REQUIRE,
        OPT_FORBID,
        OPT_RO,
        OPT_MODE,
        OPT_MAX_SIZE,
        OPT_NO_PROBE,
        OPT_BACKEND,
};

static const struct cli_option check_options[] = {
        CLI_HEADING("Policy (a preset, then overrides in the order given):"),
        { "preset", 0, CLI_ARG_CHOICE, "NAME", "snapfs tmpfs",
          "snapfs (default): type fuse.snapfs; nosuid,nodev,noexec;\n"
          "private propagation; mounted by --owner (default: root;\n"
          "$SNAPFS_OWNER when set), in the initial user namespace.\n"
          "tmpfs: type tmpfs; rw,nosuid,nodev,noexec; private;\n"
          "root mode 1777; size limit at most 1M.\n"
          "Both: PATH canonical with no symlink, the root of exactly\n"
          "one mount (nothing beneath, on top or below), its root /,\n"
          "not idmapped.", OPT_PRESET },
        { "fstype", 0, CLI_ARG_VALUE, "TYPE", NULL,
          "exact filesystem type as mountinfo spells it\n"
          "(\"fuse.snapfs\", \"tmpfs\"), or \"any\"", OPT_FSTYPE },
        { "require", 0, CLI_ARG_VALUE, "OPT,...", NULL,
          "options the mount must carry; replaces the preset's list\n"
          "(\"\" requires none). OPT: ro rw nosuid nodev noexec\n"
          "noatime nodiratime nosymfollow", OPT_REQUIRE },
        { "forbid", 0, CLI_ARG_VALUE, "OPT,...", NULL,
          "options the mount must not carry; replaces the list", OPT_FORBID },
        { "ro", 0, CLI_ARG_NONE, NULL, NULL,
          "require a read-only mount (and stop requiring rw)", OPT_RO },
        { "mode", 0, CLI_ARG_VALUE, "OCTAL", NULL,
          "permission bits the mount root must have (1777), or \"any\"", OPT_MODE },
        { "max-size", 0, CLI_ARG_VALUE, "SIZE", NULL,
          "largest allowed size= limit, N with optional K, M or G\n"
          "(binary units), or \"any\"", OPT_MAX_SIZE },
        { "owner", 0, CLI_ARG_VALUE, "UID", NULL,
          "uid that must have mounted the FUSE filesystem (its\n"
          "user_id= option), or \"any\". Default: 0, or $SNAPFS_OWNER\n"
          "(a uid, as in every command: never \"any\")", CLI_OPT_OWNER },
        { "insecure-own-mount", 0, CLI_ARG_NONE, NULL, NULL,
          "INSECURE: accept a FUSE mount made by your own uid. Any\n"
          "process of your uid can unmount it and mount its own FUSE\n"
          "server in its place, serving whatever bytes it likes.\n"
          "Without it such a mount is refused (owner-is-caller).", CLI_OPT_INSECURE_OWN_MOUNT },
        { "trust-user-namespace", 0, CLI_ARG_NONE, NULL, NULL,
          "accept a FUSE mount whose superblock may belong to another\n"
          "user namespace, or a check run from inside one (where\n"
          "user_id=0 can be anyone); refused by default (user-namespace)",
          CLI_OPT_TRUST_USER_NAMESPACE },
        { "no-probe", 0, CLI_ARG_NONE, NULL, NULL,
          "skip the liveness probe: one FUSE GETATTR on the mount\n"
          "root that reveals a dead daemon (transport-not-connected).\n"
          "Without the probe the check sends no FUSE request at all.", OPT_NO_PROBE },
        CLI_HEADING(""),
        CLI_HEADING("Output:"),
        { "backend", 0, CLI_ARG_CHOICE, "NAME", "auto statmount mountinfo",
          "auto (default: statmount, or mountinfo where the kernel\n"
          "lacks it), statmount (statx + statmount/listmount), or\n"
          "mountinfo (/proc/self/mountinfo through libmount)", OPT_BACKEND },
        CLI_OPTION_MOUNT("PATH", "the path to judge, as every client takes its mount (made\n"
                                 "absolute, a trailing / dropped); PATH is judged as written"),
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons\n"
                        "[{code, message}] (the findings), mount, backend,\n"
                        "mount_id, mount_id_unique, reasons_dropped, scope (null,\n"
                        "or a view's scope), scope_publishes (and path, the same\n"
                        "as mount: deprecated)"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

/* After --help's text: every finding code, four a line. */
static void print_codes(FILE *f)
{
        for (int c = 0; c < MC_CODE_COUNT; c++)
                fprintf(f, "%s%s", c % 4 == 0 ? "\n  " : " ", mc_code_name((enum mc_code)c));
        fprintf(f, "\n");
}

const struct cli_help cli_check_help = {
        .head = "Usage: snapfs check [--preset snapfs|tmpfs] [POLICY OPTIONS]\n"
                "                    [--backend auto|statmount|mountinfo] [--json]\n"
                "                    [--mount PATH | PATH]\n"
                "\n"
                "Judges the mount that PATH (default: $SNAPFS_MOUNT, else " CLI_DEFAULT_MOUNT ")\n"
                "really reaches - through a descriptor opened without\n"
                "following any symlink, by mount id, never by the text of the mount table - and\n"
                "lists every reason it is not compliant.\n"
                "\n",
        .options = check_options,
        .tail = "\n"
                "A snapfs scope view (its root names the scope it serves) is reported on a line\n"
                "\"scope NAME\" before any finding; a view that is read-write while its scope does\n"
                "not allow publishing is refused (scope-writable).\n"
                "\n"
                "Exit status: 0 compliant (nothing printed without --json, but the scope line);\n"
                "1 not compliant, one \"code: message\" line per finding; 2 usage or system error.\n"
                "\n"
                "Finding codes:",
        .column = 21,
        .more = print_codes,
};

/* The policy and output options; the client options (--mount, --owner, the trust flags,
 * --json) are cli_parse's, as in every client command. */

static const char *option_name(int val)
{
        for (const struct cli_option *o = check_options; o->name || o->help; o++)
                if (o->name && o->val == val)
                        return o->name;
        return "?";
}

/* Policy keys, in the order the options were given; the preset is applied before them all. */
struct setting {
        const char *option; /* as the user typed it, for error messages */
        const char *key;
        const char *value;
};

struct check_args {
        const char *preset;
        enum mc_backend backend;
        struct setting settings[64];
        size_t n_settings;
};

/* One policy or output option: -1 to go on, or 2 after printing why. */
static int take_option(void *arg, int val, const char *value, bool json)
{
        struct check_args *a = arg;
        const char *key;

        switch (val) {
        case OPT_PRESET:
                a->preset = value;
                return -1;
        case OPT_BACKEND:
                if (mc_backend_from_name(value, &a->backend) < 0)
                        return cli_usage_error("check", json, false,
                                               "invalid value for --backend: '%s'", value);
                return -1;
        case OPT_FSTYPE: key = "fstype"; break;
        case OPT_REQUIRE: key = "require"; break;
        case OPT_FORBID: key = "forbid"; break;
        case OPT_RO: key = "ro"; break;
        case OPT_MODE: key = "mode"; break;
        case OPT_MAX_SIZE: key = "max-size"; break;
        default: key = "probe"; value = "no"; break; /* OPT_NO_PROBE */
        }
        if (a->n_settings == ARRAY_SIZE(a->settings))
                return cli_usage_error("check", json, false, "too many policy options");
        a->settings[a->n_settings++] = (struct setting){
                .option = option_name(val),
                .key = key,
                .value = value,
        };
        return -1;
}

/* What to run next after a finding on a snapfs mount that is not there or dead (""
 * otherwise, and for the other presets): into hint (n bytes). */
static void next_step(const char *preset, const char *path, int code, char *hint, size_t n)
{
        char esc[PATH_MAX];

        hint[0] = '\0';
        if (strcmp(preset, "snapfs") == 0)
                sfc_finding_hint(code, mc_escape(path, esc, sizeof(esc)), hint, n);
}

static int print_json(const char *path, const char *preset, const struct mc_verdict *v)
{
        json_object *root = cli_json_result(v->compliant, v->compliant ? NULL : "EMEDIUMTYPE",
                                            v->compliant ? NULL : "not a compliant mount", NULL);
        json_object *list = json_object_new_array();
        int r = 0;

        if (!root || !list) {
                json_object_put(root);
                json_object_put(list);
                return -ENOMEM;
        }
        for (size_t i = 0; i < v->n_findings; i++) {
                json_object *f = json_object_new_object();
                if (!f) {
                        r = -ENOMEM;
                        break;
                }
                json_object_object_add(f, "code",
                                       json_object_new_string(mc_code_name(v->findings[i].code)));
                {
                        /* The same words as the text: the command to run next included. */
                        char hint[PATH_MAX * 2 + 128], *msg = NULL;
                        next_step(preset, path, v->findings[i].code, hint, sizeof(hint));
                        if (asprintf(&msg, "%s%s", v->findings[i].message, hint) < 0)
                                msg = NULL;
                        json_object_object_add(f, "message",
                                               json_object_new_string(msg ?: v->findings[i].message));
                        free(msg);
                }
                json_object_array_add(list, f);
        }
        json_object_object_add(root, "reasons", list);
        /* "mount", as every other command names the path it judged; "path" is the older
         * name of the same value, kept for readers of it (deprecated). */
        json_object_object_add(root, "mount", json_object_new_string(path));
        json_object_object_add(root, "path", json_object_new_string(path));
        json_object_object_add(root, "backend", json_object_new_string(mc_backend_name(v->backend)));
        json_object_object_add(root, "mount_id",
                               v->has_mount_id ? json_object_new_uint64(v->mount_id) : NULL);
        json_object_object_add(root, "mount_id_unique", json_object_new_boolean(v->mount_id_unique));
        json_object_object_add(root, "reasons_dropped", json_object_new_uint64(v->n_dropped));
        /* A snapfs scope view: the scope its daemon says it serves (null for any other mount). */
        json_object_object_add(root, "scope",
                               v->is_scope ? json_object_new_string(v->scope) : NULL);
        json_object_object_add(root, "scope_publishes",
                               v->is_scope ? json_object_new_boolean(v->scope_publishes) : NULL);
        if (r == 0)
                r = cli_print_json(root);
        else
                json_object_put(root);
        return r;
}

/* The policy: the preset, the trust options as every client takes them, then the policy
 * options in the order given. -1 to go on, or 2 after the usage error. */
static int make_policy(struct mc_policy *pol, const struct check_args *a,
                       const struct cli_common *co)
{
        int r;

        if (mc_policy_preset(pol, a->preset) < 0)
                return cli_usage_error("check", co->json, false,
                                       "invalid value for --preset: '%s'", a->preset);
        /* The trust options, as every client takes them. $SNAPFS_OWNER names the trusted
         * owner of the snapfs preset (a tmpfs has no FUSE owner); --owner any switches the
         * owner check off, on this command line only. */
        if (co->owner_any)
                pol->check_owner = false;
        else if ((co->opts.flags & SNAPFS_OPT_OWNER) &&
                 (!co->owner_from_env || strcmp(a->preset, "snapfs") == 0)) {
                pol->check_owner = true;
                pol->owner = co->opts.owner;
        }
        if (co->opts.flags & SNAPFS_OPT_INSECURE_OWN_MOUNT)
                pol->insecure_own_mount = true;
        if (co->opts.flags & SNAPFS_OPT_TRUST_USER_NAMESPACE)
                pol->trust_user_namespace = true;
        for (size_t i = 0; i < a->n_settings; i++) {
                const char *value = a->settings[i].value ? a->settings[i].value : "";
                char what[64];
                uint64_t lo, hi;
                int type;

                r = mc_policy_set(pol, a->settings[i].key, a->settings[i].value);
                if (r == 0)
                        continue;
                snprintf(what, sizeof(what), "--%s", a->settings[i].option);
                /* A size is refused in the words every command uses. */
                if (mc_policy_value_of(a->settings[i].key, &type, &lo, &hi) == 0)
                        return cli_bad_value("check", co->json, what, (enum value_type)type,
                                             value, r, lo, hi, "; or any (no check)");
                return cli_usage_error("check", co->json, false, "invalid value for %s: '%s'",
                                       what, value);
        }
        return -1;
}

int cli_cmd_check(int argc, char **argv)
{
        struct check_args a = { .preset = "snapfs", .backend = MC_BACKEND_AUTO };
        _cleanup_free_ char *path = NULL;
        enum mc_backend backend;
        struct cli_common co;
        struct mc_policy pol;
        struct mc_verdict v;
        const char *preset;
        bool json;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "check", .features = CLI_OWNER_ANY,
                                          .min_operands = 0, .max_operands = 1,
                                          .what = "at most one PATH", .help = &cli_check_help,
                                          .option = take_option,
                                          .arg = &a },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        json = co.json;
        preset = a.preset;
        backend = a.backend;
        if (optind < argc && co.mount_arg && cli_same_mount("check", json, true,
                                                            argv[optind], co.mount_arg) < 0)
                return 2;
        /* PATH is judged exactly as written (the check reports a non-canonical spelling);
         * --mount, like every client's, names a directory: made absolute, trailing '/'
         * dropped. */
        path = optind < argc ? strdup(argv[optind])
                             : cli_absolute_dir(co.mount_arg ?: cli_default_mount());
        if (!path)
                return cli_system_error("check", json, -ENOMEM, "PATH");

        r = make_policy(&pol, &a, &co);
        if (r >= 0)
                return r;

        /* Which scope a view serves is reported whatever its flags (the clients ask only a
         * read-write mount, the one kind the answer can refuse). */
        if (pol.scope != MC_SCOPE_IGNORE)
                pol.scope = MC_SCOPE_REPORT;
        r = mc_check_path(path, &pol, backend, &v, NULL);
        if (r < 0)
                return cli_system_error("check", json, r, "%s", path);
        if (json) {
                r = print_json(path, preset, &v);
                if (r < 0) {
                        fprintf(stderr, "snapfs check: %s\n", strerror(-r));
                        return 2;
                }
        } else {
                if (v.is_scope)
                        printf("scope %s\n", v.scope[0] ? v.scope : "(unnamed)");
                for (size_t i = 0; i < v.n_findings; i++) {
                        char hint[PATH_MAX * 2 + 128];
                        /* What to run next, for a snapfs mount that is not there or dead. */
                        next_step(preset, path, v.findings[i].code, hint, sizeof(hint));
                        printf("%s: %s%s\n", mc_code_name(v.findings[i].code),
                               v.findings[i].message, hint);
                }
                if (v.n_dropped)
                        fprintf(stderr, "snapfs check: %zu more findings not listed\n", v.n_dropped);
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "snapfs check: writing output: %s\n", strerror(errno));
                return 2;
        }
        return v.compliant ? 0 : 1;
}
