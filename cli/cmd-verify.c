/* SPDX-License-Identifier: MIT */
/* snapfs verify: is this binding (or this snapshot path) a genuine snapshot on a compliant
 * snapfs mount, with exactly its bytes? Every reason when not; exit 0/1/2. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "snapshot/digest.h"
#include "common/util.h"

static const struct cli_option verify_options[] = {
        CLI_HEADING("Options:"),
        CLI_OPTION_MOUNT("MNT", "the snapfs mount for a BINDING (default: $SNAPFS_MOUNT, else\n"
                                CLI_DEFAULT_MOUNT "); with a PATH it must be PATH's directory"),
        CLI_OPTIONS_TRUST,
        CLI_OPTION_KIND(CLI_HELP_KIND),
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons\n"
                        "[{code, message}], mount, binding, snapshot {sha256, size,\n"
                        "dev, ino, name, published, publisher, binding}"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_verify_help = {
        .head = "Usage: snapfs verify [--mount MNT] [--owner UID] [--insecure-own-mount] [--kind KIND]\n"
                "                     [--json] BINDING|PATH\n"
                "\n"
                "Verified open, then close: check the mount (type fuse.snapfs;\n"
                "nosuid,nodev,noexec; private; exactly one mount; mounted by the trusted owner)\n"
                "through a pinned descriptor; open the snapshot relative to it without following\n"
                "a symlink or crossing a mount; confirm the descriptor's mount; fstat it against\n"
                "the binding (regular file, mode 0000, dev, ino, size); read and hash the whole\n"
                "content; fstat again; content only, unless --kind asks for a signature\n"
                "envelope or a manifest (refused otherwise: ENOMSG, reason \"kind\").\n"
                "\n"
                "BINDING is the one-line text form \"sha256=<hex> size=<n> dev=<maj>:<min>\n"
                "ino=<n>\" (quote it), checked on MNT. PATH is MNT/<sha256-hex> (or the bare\n"
                "<sha256-hex>, on MNT): the snapshot is held to its own name (its content must\n"
                "hash to it) and its binding is printed.\n"
                "\n",
        .options = verify_options,
        .tail = "\n"
                "Exit status: 0 verified (the binding is printed); 1 not verified, every reason\n"
                "printed as a \"code: message\" line; 2 usage error.\n",
};

/* Opens what arg names, verified: a binding on the mount, or a snapshot path held to its
 * own name. -1 with *fd (a descriptor, or the refusal with why) and *mount set, or the exit
 * code after a usage error. */
static int open_arg(const char *arg, const struct cli_common *co, char **mount,
                    struct snapfs_binding *b, struct snapfs_report *why, int *fd)
{
        _cleanup_free_ char *path = NULL, *dir = NULL, *name = NULL;

        if (strncmp(arg, "sha256=", 7) == 0) {
                if (snapfs_binding_parse(arg, b) < 0)
                        return cli_usage_error("verify", co->json, false,
                                               "not a valid binding: '%s'", arg);
                *mount = cli_mount_path("verify", co);
                if (!*mount)
                        return 2;
                *fd = snapfs_open_verified(*mount, b, &co->opts, why);
        } else {
                /* dirname/basename may modify their argument: each gets its own copy. */
                path = path_make_absolute(arg);
                dir = path ? strdup(path) : NULL;
                name = path ? strdup(path) : NULL;
                if (!dir || !name)
                        return cli_system_error("verify", co->json, -ENOMEM, "%s", arg);
                if (!snap_is_digest_name(basename(name)))
                        return cli_usage_error("verify", co->json, false,
                                               "'%s' is neither a binding (sha256=<hex> size=<n> "
                                               "dev=<maj>:<min> ino=<n>) nor a snapshot path "
                                               "(MNT/<sha256-hex>)", arg);
                if (!strchr(arg, '/')) {
                        /* A bare digest names that snapshot on the mount. */
                        *mount = cli_mount_path("verify", co);
                } else {
                        *mount = cli_absolute_dir(dirname(dir));
                        if (*mount && co->mount_arg) {
                                _cleanup_free_ char *given = cli_absolute_dir(co->mount_arg);
                                if (given && strcmp(given, *mount) != 0)
                                        return cli_usage_error("verify", co->json, false,
                                                               "%s is not on --mount %s", arg,
                                                               co->mount_arg);
                        }
                }
                if (!*mount)
                        return 2;
                *fd = snapfs_open_digest(*mount, basename(name), &co->opts, b, why);
        }
        return -1;
}

int cli_cmd_verify(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct cli_common co;
        struct snapfs_report why;
        struct snapfs_binding b;
        struct snapfs_snapshot s;
        bool described = false;
        char text[SNAPFS_BINDING_TEXT_MAX];
        const char *arg;
        int r, fd = -1;

        r = cli_parse(&(struct cli_spec){ .cmd = "verify",
                                          .min_operands = 1, .max_operands = 1,
                                          .what = "exactly one BINDING or PATH",
                                          .help = &cli_verify_help },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        arg = argv[optind];

        r = open_arg(arg, &co, &mount, &b, &why, &fd);
        if (r >= 0)
                return r;
        if (fd >= 0) {
                /* What the daemon says of it, read through the very descriptor verified. */
                described = snapfs_describe_fd(fd, &b, &s) == 0;
                close(fd);
                if (snapfs_binding_format(&b, text, sizeof(text)) < 0)
                        return 2;
        }
        if (co.json) {
                json_object *o = fd >= 0 ? cli_json_result(true, NULL, NULL, NULL)
                                         : cli_json_refusal(fd, &why);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_add(o, "binding",
                                               fd >= 0 ? json_object_new_string(text) : NULL);
                        json_object_object_add(o, "snapshot",
                                               fd < 0 ? NULL
                                               : described ? cli_snapshot_json(&s)
                                                           : cli_binding_json(&b));
                }
                if (cli_print_json(o) < 0)
                        return 2;
        } else if (fd >= 0) {
                printf("%s\n", text);
        } else {
                printf("not verified: %s\n", snapfs_strerror(fd));
                cli_print_reasons(stdout, &why);
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "snapfs verify: writing output: %s\n", strerror(errno));
                return 2;
        }
        return fd >= 0 ? 0 : 1;
}
