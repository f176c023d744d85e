/* SPDX-License-Identifier: MIT */
/* snapfs put: publish a file (or standard input) and print the snapshot's binding. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "common/util.h"

static void put_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs put [--mount MNT] [--owner UID] [--insecure-own-mount] [--json]\n"
                "                  [--scope NAME [--as ENTRY]] FILE|-\n"
                "\n"
                "Publish the bytes of FILE (or standard input for -) to the snapfs mount MNT:\n"
                "check the mount, write the bytes to a staging file, rename it to their SHA-256,\n"
                "then open and verify the snapshot. Prints its binding, one line:\n"
                "  sha256=<hex> size=<n> dev=<major>:<minor> ino=<n>\n"
                "Content already published gives the existing snapshot's binding (and \"already\n"
                "published\" on standard error). Zero bytes are allowed (the empty snapshot).\n"
                "When MNT's daemon also serves a read view (snapfs mount --read-view), a second\n"
                "line gives the binding as seen there, where a sandbox reads, once that view\n"
                "has passed the same mount check and the snapshot verified through it:\n"
                "  read-view sha256=<hex> size=<n> dev=<major>:<minor> ino=<n> VIEW\n"
                "With --scope NAME the snapshot is also granted to the scope NAME (under ENTRY\n"
                "with --as: an existing ENTRY moves to it), and the second line is its binding\n"
                "in that scope's view, judged and verified there as a sandbox of it will:\n"
                "  scope NAME sha256=<hex> size=<n> dev=<major>:<minor> ino=<n> VIEW\n"
                "\n"
                "Options:\n"
                "  --mount MNT   " CLI_HELP_MOUNT "\n"
                CLI_HELP_TRUST
                "  --scope NAME  grant the snapshot to the scope NAME (snapfs grant)\n"
                "  --as ENTRY    with --scope: under the entry name ENTRY\n"
                "  --json        print one JSON object: ok, error, message, reasons, mount,\n"
                "                binding, sha256, size, dev, ino, already_published,\n"
                "                read_view (null, or {mount, binding}), scope (null, or\n"
                "                {name, entry, mount, binding})\n"
                "  -h, --help    show this help\n"
                "\n"
                "Exit status: 0 published (or already there); 1 refused, with every reason on\n"
                "standard error (\"code: message\" lines), or published but its read view\n"
                "does not verify, or (--scope) not granted or not verified in the scope's view;\n"
                "2 usage or system error (FILE unreadable).\n");
}

static json_object *binding_json(const char *mount, const struct snapfs_binding *b,
                                 const char *text, int r, json_object *o)
{
        char hex[2 * SNAPFS_DIGEST_LEN + 1], dev[32];

        if (!o)
                return NULL;
        for (size_t i = 0; i < SNAPFS_DIGEST_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", b->sha256[i]);
        snprintf(dev, sizeof(dev), "%u:%u", major(b->dev), minor(b->dev));
        json_object_object_add(o, "mount", json_object_new_string(mount));
        json_object_object_add(o, "binding", json_object_new_string(text));
        json_object_object_add(o, "sha256", json_object_new_string(hex));
        json_object_object_add(o, "size", json_object_new_uint64(b->size));
        json_object_object_add(o, "dev", json_object_new_string(dev));
        json_object_object_add(o, "ino", json_object_new_uint64(b->ino));
        json_object_object_add(o, "already_published", json_object_new_boolean(r == 1));
        return o;
}

/* --scope: grant the published snapshot b to the scope (under entry), then its binding as
 * that scope's view shows it. 0, or the first refusal. */
static int put_in_scope(const char *mount, const char *scope, const char *entry,
                        const struct snapfs_binding *b, const struct snapfs_options *opts,
                        char *view, size_t viewlen, struct snapfs_binding *vb,
                        struct snapfs_report *why)
{
        char hex[2 * SNAPFS_DIGEST_LEN + 1];
        int r;

        for (size_t i = 0; i < SNAPFS_DIGEST_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", b->sha256[i]);
        r = snapfs_grant(mount, scope, hex, entry, opts, NULL, why);
        if (r == 0)
                r = snapfs_scope_binding(mount, scope, b, opts, view, viewlen, vb, why);
        return r;
}

enum {
        OPT_SCOPE = CLI_OWN_OPTION,
        OPT_AS,
};

struct put_args {
        const char *scope, *entry;
};

/* --scope NAME, --as ENTRY: -1 to go on. */
static int take_option(void *arg, int val, const char *value, bool json)
{
        struct put_args *a = arg;

        (void)json;
        if (val == OPT_SCOPE)
                a->scope = value;
        else
                a->entry = value;
        return -1;
}

int cli_cmd_put(int argc, char **argv)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *mount = NULL;
        struct cli_common co;
        struct snapfs_report why, vwhy;
        struct snapfs_binding b, vb;
        char text[SNAPFS_BINDING_TEXT_MAX], vtext[SNAPFS_BINDING_TEXT_MAX], view[PATH_MAX];
        int vr;
        bool view_failed;
        static const struct option options[] = {
                { "scope", required_argument, NULL, OPT_SCOPE },
                { "as", required_argument, NULL, OPT_AS },
                { NULL, 0, NULL, 0 },
        };
        struct put_args pa = { NULL, NULL };
        const char *file, *scope, *entry;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "put", .min_operands = 1, .max_operands = 1,
                                          .what = "one FILE (or - for standard input)",
                                          .usage = put_usage, .options = options,
                                          .option = take_option, .arg = &pa },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        scope = pa.scope;
        entry = pa.entry;
        if (entry && !scope)
                return cli_usage_error("put", co.json, put_usage, "--as needs --scope");
        file = argv[optind];
        mount = cli_mount_path("put", &co);
        if (!mount)
                return 2;

        if (strcmp(file, "-") == 0) {
                r = snapfs_publish_fd(mount, STDIN_FILENO, &co.opts, &b, &why);
        } else {
                /* O_NONBLOCK is not used: a FIFO as FILE is a stream to publish, on purpose. */
                fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return cli_system_error("put", co.json, negative_errno(), "%s", file);
                r = snapfs_publish_fd(mount, fd, &co.opts, &b, &why);
        }

        if (r < 0) {
                if (co.json) {
                        json_object *o = cli_json_refusal(r, &why);
                        if (o)
                                json_object_object_add(o, "mount", json_object_new_string(mount));
                        if (cli_print_json(o) < 0)
                                return 2;
                } else {
                        fprintf(stderr, "snapfs put: %s: not published: %s\n", mount,
                                snapfs_strerror(r));
                        cli_print_reasons(stderr, &why);
                }
                return 1;
        }
        if (snapfs_binding_format(&b, text, sizeof(text)) < 0)
                return 2;
        /* Where a sandbox reads: the same snapshot through the daemon's read view (or, with
         * --scope, granted to the scope and through its view), judged and verified there like
         * any mount. */
        if (scope)
                vr = put_in_scope(mount, scope, entry, &b, &co.opts, view, sizeof(view), &vb,
                                  &vwhy);
        else
                vr = snapfs_view_binding(mount, &b, &co.opts, view, sizeof(view), &vb, &vwhy);
        if (vr == 0 && snapfs_binding_format(&vb, vtext, sizeof(vtext)) < 0)
                return 2;
        /* No read view (ENODATA) is no failure; a scope that did not take it always is. */
        view_failed = vr < 0 && (scope || vr != -ENODATA);
        if (co.json) {
                json_object *o = view_failed ? cli_json_refusal(vr, &vwhy)
                                             : cli_json_result(true, NULL, NULL, NULL);
                json_object *v = NULL;
                if (vr == 0 && (v = json_object_new_object())) {
                        if (scope) {
                                json_object_object_add(v, "name", json_object_new_string(scope));
                                json_object_object_add(v, "entry",
                                                       entry ? json_object_new_string(entry)
                                                             : NULL);
                        }
                        json_object_object_add(v, "mount", json_object_new_string(view));
                        json_object_object_add(v, "binding", json_object_new_string(vtext));
                }
                o = binding_json(mount, &b, text, r, o);
                if (o) {
                        json_object_object_add(o, "read_view", scope ? NULL : v);
                        json_object_object_add(o, "scope", scope ? v : NULL);
                } else {
                        json_object_put(v);
                }
                if (cli_print_json(o) < 0)
                        return 2;
                return view_failed ? 1 : 0;
        }
        /* Idempotent: the content is there, bound to the existing snapshot. Not a failure. */
        if (r == 1)
                fprintf(stderr, "snapfs put: already published\n");
        if (printf("%s\n", text) < 0 ||
            (vr == 0 && !scope && printf("read-view %s %s\n", vtext, view) < 0) ||
            (vr == 0 && scope && printf("scope %s %s %s\n", scope, vtext, view) < 0) ||
            fflush(stdout) != 0) {
                fprintf(stderr, "snapfs put: writing output: %s\n", strerror(errno));
                return 2;
        }
        if (view_failed) {
                if (scope)
                        fprintf(stderr, "snapfs put: %s: published, but not granted to scope "
                                        "%s or not verified in its view: %s\n", mount, scope,
                                snapfs_strerror(vr));
                else
                        fprintf(stderr, "snapfs put: %s: published, but its read view does not "
                                        "verify: %s\n", mount, snapfs_strerror(vr));
                cli_print_reasons(stderr, &vwhy);
                return 1;
        }
        return 0;
}
