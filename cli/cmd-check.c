/* SPDX-License-Identifier: MIT */
/* snapfs check: is the mount at PATH compliant? Prints every finding; exit 0/1/2. */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "mountcheck/mountcheck.h"
#include "common/util.h"

static void check_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs check [--preset snapfs|tmpfs] [POLICY OPTIONS]\n"
                "                    [--backend auto|statmount|mountinfo] [--json]\n"
                "                    [--mount PATH | PATH]\n"
                "\n"
                "Judges the mount that PATH (default: $SNAPFS_MOUNT, else " CLI_DEFAULT_MOUNT ")\n"
                "really reaches - through a descriptor opened without\n"
                "following any symlink, by mount id, never by the text of the mount table - and\n"
                "lists every reason it is not compliant.\n"
                "\n"
                "Policy (a preset, then overrides in the order given):\n"
                "  --preset NAME      snapfs (default): type fuse.snapfs; nosuid,nodev,noexec;\n"
                "                     private propagation; mounted by --owner (default: root;\n"
                "                     $SNAPFS_OWNER when set), in the initial user namespace.\n"
                "                     tmpfs: type tmpfs; rw,nosuid,nodev,noexec; private;\n"
                "                     root mode 1777; size limit at most 1M.\n"
                "                     Both: PATH canonical with no symlink, the root of exactly\n"
                "                     one mount (nothing beneath, on top or below), its root /,\n"
                "                     not idmapped.\n"
                "  --fstype TYPE      exact filesystem type as mountinfo spells it\n"
                "                     (\"fuse.snapfs\", \"tmpfs\"), or \"any\"\n"
                "  --require OPT,...  options the mount must carry; replaces the preset's list\n"
                "                     (\"\" requires none). OPT: ro rw nosuid nodev noexec\n"
                "                     noatime nodiratime nosymfollow\n"
                "  --forbid OPT,...   options the mount must not carry; replaces the list\n"
                "  --ro               require a read-only mount (and stop requiring rw)\n"
                "  --mode OCTAL       permission bits the mount root must have (1777), or \"any\"\n"
                "  --max-size SIZE    largest allowed size= limit, N with optional K, M or G\n"
                "                     (binary units), or \"any\"\n"
                "  --owner UID        uid that must have mounted the FUSE filesystem (its\n"
                "                     user_id= option), or \"any\". Default: 0, or $SNAPFS_OWNER\n"
                "                     (a uid, as in every command: never \"any\")\n"
                "  --insecure-own-mount\n"
                "                     INSECURE: accept a FUSE mount made by your own uid. Any\n"
                "                     process of your uid can unmount it and mount its own FUSE\n"
                "                     server in its place, serving whatever bytes it likes.\n"
                "                     Without it such a mount is refused (owner-is-caller).\n"
                "  --trust-user-namespace\n"
                "                     accept a FUSE mount whose superblock may belong to another\n"
                "                     user namespace, or a check run from inside one (where\n"
                "                     user_id=0 can be anyone); refused by default (user-namespace)\n"
                "  --no-probe         skip the liveness probe: one FUSE GETATTR on the mount\n"
                "                     root that reveals a dead daemon (transport-not-connected).\n"
                "                     Without the probe the check sends no FUSE request at all.\n"
                "\n"
                "Output:\n"
                "  --backend NAME     auto (default: statmount, or mountinfo where the kernel\n"
                "                     lacks it), statmount (statx + statmount/listmount), or\n"
                "                     mountinfo (/proc/self/mountinfo through libmount)\n"
                "  --mount PATH       the path to judge, as every client takes its mount (made\n"
                "                     absolute, a trailing / dropped); PATH is judged as written\n"
                "  --json             print one JSON object: ok, error, message, reasons\n"
                "                     [{code, message}] (the findings), path, backend,\n"
                "                     mount_id, mount_id_unique, reasons_dropped, scope (null,\n"
                "                     or a view's scope), scope_publishes\n"
                "  -h, --help         show this help\n"
                "\n"
                "A snapfs scope view (its root names the scope it serves) is reported on a line\n"
                "\"scope NAME\" before any finding; a view that is read-write while its scope does\n"
                "not allow publishing is refused (scope-writable).\n"
                "\n"
                "Exit status: 0 compliant (nothing printed without --json, but the scope line);\n"
                "1 not compliant, one \"code: message\" line per finding; 2 usage or system error.\n"
                "\n"
                "Finding codes:");
        for (int c = 0; c < MC_CODE_COUNT; c++)
                fprintf(f, "%s%s", c % 4 == 0 ? "\n  " : " ", mc_code_name((enum mc_code)c));
        fprintf(f, "\n");
}

enum {
        OPT_PRESET = 0x100,
        OPT_FSTYPE,
        OPT_REQUIRE,
        OPT_FORBID,
        OPT_RO,
        OPT_MODE,
        OPT_MAX_SIZE,
        OPT_OWNER,
        OPT_NO_PROBE,
        OPT_INSECURE_OWN_MOUNT,
        OPT_TRUST_USERNS,
        OPT_BACKEND,
        OPT_JSON,
        OPT_MOUNT,
};

static const struct option check_options[] = {
        { "preset", required_argument, NULL, OPT_PRESET },
        { "fstype", required_argument, NULL, OPT_FSTYPE },
        { "require", required_argument, NULL, OPT_REQUIRE },
        { "forbid", required_argument, NULL, OPT_FORBID },
        { "ro", no_argument, NULL, OPT_RO },
        { "mode", required_argument, NULL, OPT_MODE },
        { "max-size", required_argument, NULL, OPT_MAX_SIZE },
        { "owner", required_argument, NULL, OPT_OWNER },
        { "no-probe", no_argument, NULL, OPT_NO_PROBE },
        { "insecure-own-mount", no_argument, NULL, OPT_INSECURE_OWN_MOUNT },
        { "trust-user-namespace", no_argument, NULL, OPT_TRUST_USERNS },
        { "backend", required_argument, NULL, OPT_BACKEND },
        { "json", no_argument, NULL, OPT_JSON },
        { "mount", required_argument, NULL, OPT_MOUNT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

static const char *option_name(int val)
{
        for (const struct option *o = check_options; o->name; o++)
                if (o->val == val)
                        return o->name;
        return "?";
}

/* Policy keys, in the order the options were given; the preset is applied before them all. */
struct setting {
        const char *option; /* as the user typed it, for error messages */
        const char *key;
        const char *value;
};

static int print_json(const char *path, const struct mc_verdict *v)
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
                json_object_object_add(f, "message", json_object_new_string(v->findings[i].message));
                json_object_array_add(list, f);
        }
        json_object_object_add(root, "reasons", list);
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

int cli_cmd_check(int argc, char **argv)
{
        struct setting settings[64];
        size_t n_settings = 0;
        const char *preset = "snapfs", *mount_arg = NULL;
        _cleanup_free_ char *path = NULL;
        enum mc_backend backend = MC_BACKEND_AUTO;
        struct mc_policy pol;
        struct mc_verdict v;
        bool json = cli_json_requested(argc, argv);
        int c, r;

        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", check_options, NULL)) != -1) {
                const char *key = NULL;
                switch (c) {
                case 'h':
                        check_usage(stdout);
                        return 0;
                case OPT_PRESET:
                        preset = optarg;
                        continue;
                case OPT_BACKEND:
                        if (mc_backend_from_name(optarg, &backend) < 0)
                                return cli_usage_error("check", json, NULL,
                                                       "invalid value for --backend: '%s'", optarg);
                        continue;
                case OPT_JSON:
                        json = true;
                        continue;
                case OPT_MOUNT:
                        mount_arg = optarg;
                        continue;
                case OPT_FSTYPE: key = "fstype"; break;
                case OPT_REQUIRE: key = "require"; break;
                case OPT_FORBID: key = "forbid"; break;
                case OPT_RO: key = "ro"; break;
                case OPT_MODE: key = "mode"; break;
                case OPT_MAX_SIZE: key = "max-size"; break;
                case OPT_OWNER: key = "owner"; break;
                case OPT_NO_PROBE: key = "probe"; optarg = (char *)"no"; break;
                case OPT_INSECURE_OWN_MOUNT: key = "insecure-own-mount"; optarg = (char *)"yes"; break;
                case OPT_TRUST_USERNS: key = "user-namespace"; optarg = (char *)"trust"; break;
                default:
                        return cli_getopt_error("check", json, check_usage, argv, c);
                }
                if (n_settings == ARRAY_SIZE(settings))
                        return cli_usage_error("check", json, NULL, "too many policy options");
                settings[n_settings++] = (struct setting){
                        .option = option_name(c),
                        .key = key,
                        .value = optarg,
                };
        }
        if (argc - optind > 1)
                return cli_usage_error("check", json, check_usage, "expected at most one PATH");
        if (optind < argc && mount_arg && cli_same_mount("check", json, check_usage,
                                                         argv[optind], mount_arg) < 0)
                return 2;
        /* PATH is judged exactly as written (the check reports a non-canonical spelling);
         * --mount, like every client's, names a directory: made absolute, trailing '/'
         * dropped. */
        path = optind < argc ? strdup(argv[optind])
                             : cli_absolute_dir(mount_arg ?: cli_default_mount());
        if (!path)
                return cli_system_error("check", json, -ENOMEM, "PATH");

        if (mc_policy_preset(&pol, preset) < 0)
                return cli_usage_error("check", json, NULL, "invalid value for --preset: '%s'",
                                       preset);
        /* $SNAPFS_OWNER names the trusted owner for every client command, a uid in every one
         * of them (never "any": a stray variable must not switch the owner check off here
         * while every other command refuses it); --owner wins. */
        {
                struct snapfs_options env = { 0 };
                if (cli_apply_env_owner("check", json, &env) != 0)
                        return 2;
                if (strcmp(preset, "snapfs") == 0 && (env.flags & SNAPFS_OPT_OWNER) &&
                    mc_policy_set(&pol, "owner", cli_env_owner()) < 0)
                        return cli_usage_error("check", json, NULL,
                                               "SNAPFS_OWNER: invalid uid '%s'",
                                               cli_env_owner());
        }
        for (size_t i = 0; i < n_settings; i++) {
                r = mc_policy_set(&pol, settings[i].key, settings[i].value);
                if (r < 0)
                        return cli_usage_error("check", json, NULL,
                                               "invalid value for --%s: '%s'", settings[i].option,
                                               settings[i].value ? settings[i].value : "");
        }

        /* Which scope a view serves is reported whatever its flags (the clients ask only a
         * read-write mount, the one kind the answer can refuse). */
        if (pol.scope != MC_SCOPE_IGNORE)
                pol.scope = MC_SCOPE_REPORT;
        r = mc_check_path(path, &pol, backend, &v, NULL);
        if (r < 0)
                return cli_system_error("check", json, r, "%s", path);
        if (json) {
                r = print_json(path, &v);
                if (r < 0) {
                        fprintf(stderr, "snapfs check: %s\n", strerror(-r));
                        return 2;
                }
        } else {
                if (v.is_scope)
                        printf("scope %s\n", v.scope[0] ? v.scope : "(unnamed)");
                for (size_t i = 0; i < v.n_findings; i++)
                        printf("%s: %s\n", mc_code_name(v.findings[i].code), v.findings[i].message);
                if (v.n_dropped)
                        fprintf(stderr, "snapfs check: %zu more findings not listed\n", v.n_dropped);
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "snapfs check: writing output: %s\n", strerror(errno));
                return 2;
        }
        return v.compliant ? 0 : 1;
}
