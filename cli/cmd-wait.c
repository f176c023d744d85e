/* SPDX-License-Identifier: MIT */
/* snapfs wait: sleep until an entry of a scope's view moves, then print what it names. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "common/util.h"
#include "common/values.h"

enum {
        OPT_ENTRY = CLI_OWN_OPTION,
        OPT_TIMEOUT,
};

struct wait_args {
        const char *entry;
        int timeout_ms; /* -1: none */
};

static const struct cli_option wait_options[] = {
        CLI_HEADING("Options:"),
        CLI_OPTION_MOUNT("VIEW", CLI_HELP_MOUNT),
        CLI_OPTIONS_TRUST,
        CLI_OPTION_KIND(CLI_HELP_KIND),
        { "entry", 0, CLI_ARG_VALUE, "ENTRY", NULL,
          "the entry of VIEW to wait for", OPT_ENTRY,
          CLI_STORE(struct wait_args, entry) },
        { "timeout", 0, CLI_ARG_VALUE, "DURATION", NULL,
          "give up after DURATION (\"90\" or \"90s\" seconds, \"15m\", \"2h\";\n"
          "default: no limit)", OPT_TIMEOUT },
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "entry, binding, snapshot"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_wait_help = {
        .head = "Usage: snapfs wait [--mount VIEW] [--owner UID] [--insecure-own-mount]\n"
                "                   --entry ENTRY [--timeout DURATION] [--kind KIND] [--json]\n"
                "\n"
                "Sleep until the entry ENTRY of the scope view VIEW moves from the snapshot it\n"
                "names now (a rotation, snapfs grant --as, or its removal), then print the\n"
                "binding of the snapshot it names then, opened and verified as snapfs exec\n"
                "--entry does. The daemon wakes the wait when the entry moves: nothing polls.\n"
                "Start it before reading the entry, so no move in between is missed.\n"
                "\n",
        .options = wait_options,
        .tail = "\n"
                "Exit status: 0 the entry moved (its new binding printed); 1 it did not move\n"
                "before the timeout, it was removed (removed: ENOENT), or what it names now\n"
                "does not verify; 2 usage or system error.\n",
};

/* --timeout DURATION: -1 to go on, or 2 after the usage error. */
static int take_option(void *arg, int val, const char *value, bool json)
{
        struct wait_args *a = arg;
        uint64_t ms;
        int r;

        (void)val;
        r = value_parse(VALUE_DURATION, value, 0, INT_MAX, &ms);
        if (r < 0)
                return cli_bad_value("wait", json, "--timeout", VALUE_DURATION, value, r, 0,
                                     INT_MAX, NULL);
        a->timeout_ms = (int)ms;
        return -1;
}

static int print_outcome(const char *view, const struct wait_args *a, int fd,
                         const struct snapfs_binding *b, const struct snapfs_report *why,
                         bool json)
{
        struct snapfs_snapshot s;
        char text[SNAPFS_BINDING_TEXT_MAX] = "";
        bool described = false;

        if (fd >= 0) {
                /* What the daemon says of it, read through the very descriptor verified. */
                described = snapfs_describe_fd(fd, b, &s) == 0;
                if (snapfs_binding_format(b, text, sizeof(text)) < 0)
                        return 2;
        }
        if (json) {
                json_object *o = fd >= 0 ? cli_json_result(true, NULL, NULL, NULL)
                                         : cli_json_refusal(fd, why);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(view));
                        json_object_object_add(o, "entry", json_object_new_string(a->entry));
                        json_object_object_add(o, "binding",
                                               fd >= 0 ? json_object_new_string(text) : NULL);
                        json_object_object_add(o, "snapshot",
                                               fd < 0 ? NULL
                                               : described ? cli_snapshot_json(&s)
                                                           : cli_binding_json(b));
                }
                if (cli_print_json(o) < 0)
                        return 2;
        } else if (fd >= 0) {
                printf("%s\n", text);
        } else {
                printf("%s: %s\n", fd == -ETIMEDOUT ? "not moved" : "not waited",
                       snapfs_strerror(fd));
                cli_print_reasons(stdout, why);
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "snapfs wait: writing output: %s\n", strerror(errno));
                return 2;
        }
        return fd >= 0 ? 0 : 1;
}

int cli_cmd_wait(int argc, char **argv)
{
        struct wait_args a = { .timeout_ms = -1 };
        _cleanup_free_ char *view = NULL;
        struct cli_common co;
        struct snapfs_report why = { 0 };
        struct snapfs_binding b;
        int r, fd;

        r = cli_parse(&(struct cli_spec){ .cmd = "wait",
                                          .min_operands = 0, .max_operands = 0,
                                          .help = &cli_wait_help,
                                          .option = take_option, .arg = &a },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        if (!a.entry)
                return cli_usage_error("wait", co.json, true, "--entry is required");
        view = cli_mount_path("wait", &co);
        if (!view)
                return 2;
        fd = snapfs_wait_entry(view, a.entry, a.timeout_ms, &co.opts, &b, &why);
        r = print_outcome(view, &a, fd, &b, &why, co.json);
        if (fd >= 0)
                close(fd);
        return r;
}
