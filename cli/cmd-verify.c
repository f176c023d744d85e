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

#include "clientopts.h"
#include "commands.h"
#include "util.h"

static void verify_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs verify [--mount MNT] [--owner UID] [--json] BINDING|PATH\n"
                "\n"
                "Verified open, then close: check the mount (type fuse.snapfs;\n"
                "nosuid,nodev,noexec; private; exactly one mount; mounted by the trusted owner)\n"
                "through a pinned descriptor; open the snapshot relative to it without following\n"
                "a symlink or crossing a mount; confirm the descriptor's mount; fstat it against\n"
                "the binding (regular file, mode 0000, dev, ino, size); read and hash the whole\n"
                "content; fstat again.\n"
                "\n"
                "BINDING is the one-line text form \"sha256=<hex> size=<n> dev=<maj>:<min>\n"
                "ino=<n>\" (quote it), checked on MNT. PATH is MNT/<sha256-hex>: the snapshot is\n"
                "held to its own name (its content must hash to it) and its binding is printed.\n"
                "\n"
                "Options:\n"
                "  --mount MNT   the snapfs mount for a BINDING (default: $SNAPFS_MOUNT, else\n"
                "                " CLI_DEFAULT_MOUNT "); with a PATH it must be PATH's directory\n"
                "  --owner UID   trust a mount made by UID (default: your uid)\n"
                "  --json        print one JSON object: verified, mount, binding (or error,\n"
                "                message, reasons [{code, message}])\n"
                "  -h, --help    show this help\n"
                "\n"
                "Exit status: 0 verified (the binding is printed); 1 not verified, every reason\n"
                "printed as a \"code: message\" line; 2 usage error.\n");
}

int cli_cmd_verify(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL, *path = NULL, *dir = NULL, *name = NULL;
        struct cli_common co;
        struct snapfs_report why;
        struct snapfs_binding b;
        char text[SNAPFS_BINDING_TEXT_MAX];
        const char *arg;
        int r, fd;

        r = cli_parse_common("verify", argc, argv, true, 1,
                             "exactly one BINDING or PATH", verify_usage, &co);
        if (r >= 0)
                return r;
        arg = argv[optind];

        if (strncmp(arg, "sha256=", 7) == 0) {
                if (snapfs_binding_parse(arg, &b) < 0) {
                        fprintf(stderr, "snapfs verify: not a valid binding: '%s'\n", arg);
                        return 2;
                }
                mount = cli_mount_path("verify", &co);
                if (!mount)
                        return 2;
                fd = snapfs_open_verified(mount, &b, &co.opts, &why);
        } else {
                /* dirname/basename may modify their argument: each gets its own copy. */
                path = path_make_absolute(arg);
                dir = path ? strdup(path) : NULL;
                name = path ? strdup(path) : NULL;
                if (!dir || !name) {
                        fprintf(stderr, "snapfs verify: %s\n", strerror(ENOMEM));
                        return 2;
                }
                mount = strdup(dirname(dir));
                if (!mount)
                        return 2;
                if (co.mount_arg) {
                        _cleanup_free_ char *given = path_make_absolute(co.mount_arg);
                        if (!given || strcmp(given, mount) != 0) {
                                fprintf(stderr, "snapfs verify: %s is not on --mount %s\n", arg,
                                        co.mount_arg);
                                return 2;
                        }
                }
                fd = snapfs_open_digest(mount, basename(name), &co.opts, &b, &why);
        }

        if (fd >= 0) {
                close(fd);
                if (snapfs_binding_format(&b, text, sizeof(text)) < 0)
                        return 2;
        }
        if (co.json) {
                json_object *o = json_object_new_object();
                if (o) {
                        json_object_object_add(o, "verified", json_object_new_boolean(fd >= 0));
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        if (fd >= 0)
                                json_object_object_add(o, "binding", json_object_new_string(text));
                }
                if (cli_print_json(fd >= 0 ? o : cli_refusal_json(o, fd, &why)) < 0)
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
