/* SPDX-License-Identifier: MIT */
/* snapfs status and snapfs metrics: the daemon's health and counters, asked through the main
 * mount's control file (libsnapfs' snapfs_control; docs/design.md "Health and metrics"). Only
 * the mount owner and root may ask: the daemon refuses anyone else's open (EACCES). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "common/json.h"
#include "common/util.h"
#include "common/values.h"

enum { OPT_FORMAT = CLI_OWN_OPTION, OPT_OUTPUT, OPT_GROUP };

static const struct cli_option status_options[] = {
        CLI_OPTIONS_CLIENT,
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "status (the daemon's, as docs/design.md describes it)"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_status_help = {
        .head = "Usage: snapfs status [--mount MNT] [TRUST] [--json]\n"
                "TRUST: [--owner UID] [--insecure-own-mount] [--trust-user-namespace]\n"
                "\n"
                "The daemon behind the mount MNT: its pid, version and uptime (its supervisor\n"
                "and how many successors took its mounts over), its mounts (the\n"
                "main mount, the read view, every scope's view), the store, the limits and\n"
                "their use, and counters of publishes and refusals by reason. Asked through\n"
                "MNT/.control: the mount owner and root only (EACCES for anyone else).\n"
                "\n",
        .options = status_options,
        .tail = "\n"
                "Exit status: 0 done; 1 refused (the mount, or the daemon: every reason on\n"
                "standard error as \"code: message\" lines); 2 usage or system error.\n",
};

static const struct cli_option metrics_options[] = {
        CLI_OPTIONS_CLIENT,
        { "format", 0, CLI_ARG_CHOICE, "FORMAT", "openmetrics prometheus",
          "openmetrics (default: OpenMetrics 1.0, ending \"# EOF\") or\n"
          "prometheus (the text format 0.0.4 node_exporter's textfile\n"
          "collector reads)", OPT_FORMAT },
        { "output", 0, CLI_ARG_FILE, "FILE", NULL,
          "write FILE whole, atomically (a temporary file beside it,\n"
          "renamed over it), instead of standard output; mode 0600:\n"
          "the counts of every scope are for the operator alone", OPT_OUTPUT },
        { "group", 0, CLI_ARG_VALUE, "GROUP", NULL,
          "with --output: FILE of GROUP (a name or a gid), mode 0640,\n"
          "for a collector that runs as that group (node_exporter:\n"
          "prometheus)", OPT_GROUP },
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_metrics_help = {
        .head = "Usage: snapfs metrics [--mount MNT] [TRUST] [--format FORMAT]\n"
                "                      [--output FILE [--group GROUP]]\n"
                "TRUST: [--owner UID] [--insecure-own-mount] [--trust-user-namespace]\n"
                "\n"
                "The daemon's counters as text for Prometheus: publishes, refusals by reason,\n"
                "bytes served, quota use, request latency per operation as a histogram. Asked\n"
                "through MNT/.control: the mount owner and root only (EACCES for anyone else).\n"
                "\n",
        .options = metrics_options,
        .tail = "\n"
                "Exit status: 0 done; 1 refused (the mount, or the daemon: every reason on\n"
                "standard error as \"code: message\" lines); 2 usage or system error.\n",
};

/* One request through snapfs_control: 0 and *reply (the daemon's object), or the refusal
 * printed (text, or the one JSON object when json) and its exit code. */
static int ask(const char *cmd, const char *mount, const struct cli_common *co,
               const char *request, const char *field, json_object **reply)
{
        _cleanup_free_ char *text = NULL;
        struct snapfs_report why;
        int r;

        *reply = NULL;
        r = snapfs_control(mount, request, &co->opts, &text, &why);
        if (r == 0) {
                /* The library read it strictly already; read the same way here. */
                if (json_parse_strict(text, strlen(text), SIZE_MAX, reply) == 0)
                        return 0;
                *reply = NULL;
                r = -EPROTO;
        }
        if (co->json) {
                json_object *o = cli_json_refusal(r, &why);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_add(o, field, NULL);
                }
                return cli_print_json(o) < 0 ? 2 : 1;
        }
        fprintf(stderr, "snapfs %s: %s: %s\n", cmd, mount, cli_headline(r, &why));
        cli_print_reasons(stderr, &why);
        return 1;
}

/* ---- status ---- */

static json_object *get(json_object *o, const char *path)
{
        char key[64];

        while (o && *path) {
                size_t n = strcspn(path, ".");
                snprintf(key, sizeof(key), "%.*s", (int)n, path);
                if (!json_object_object_get_ex(o, key, &o))
                        return NULL;
                path += n + (path[n] == '.');
        }
        return o;
}

static int64_t num(json_object *o, const char *path)
{
        return json_object_get_int64(get(o, path));
}

static const char *str(json_object *o, const char *path)
{
        json_object *v = get(o, path);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "-";
}

static void print_mount(const char *what, json_object *m)
{
        if (!m || json_object_is_type(m, json_type_null))
                return;
        printf("%-10s %s (dev %s%s)\n", what, str(m, "path"), str(m, "dev"),
               json_object_get_boolean(get(m, "read_only")) ? ", read-only" : "");
}

static void print_status(json_object *s)
{
        json_object *scopes = get(s, "mounts.scopes"), *ref = get(s, "counters.refusals_by_reason");
        size_t n = scopes && json_object_is_type(scopes, json_type_array)
                           ? json_object_array_length(scopes)
                           : 0;

        printf("pid        %" PRId64 "\n", num(s, "pid"));
        printf("version    %s\n", str(s, "version"));
        printf("started    %s (up %" PRId64 " s)\n", str(s, "started"), num(s, "uptime_s"));
        /* The process that keeps the mounts for a successor, and how many took over. */
        if (num(s, "supervisor_pid") > 0)
                printf("supervisor %" PRId64 "\n", num(s, "supervisor_pid"));
        printf("takeovers  %" PRId64 "\n", num(s, "takeovers"));
        /* How snapshot reads are served: by the kernel from sealed backing files, or by the
         * daemon, and why. */
        if (strcmp(str(s, "reads.mode"), "passthrough") == 0)
                printf("reads      passthrough (%" PRId64 " backing files)\n",
                       num(s, "reads.backing_files"));
        else
                printf("reads      through the daemon (%s)\n", str(s, "reads.why"));
        print_mount("mount", get(s, "mounts.main"));
        print_mount("read view", get(s, "mounts.read_view"));
        for (size_t i = 0; i < n; i++) {
                json_object *sc = json_object_array_get_idx(scopes, i);
                printf("scope      %s: %s (dev %s)\n", str(sc, "name"), str(sc, "view"),
                       get(sc, "dev") && json_object_is_type(get(sc, "dev"), json_type_string)
                               ? str(sc, "dev")
                               : "not mounted");
        }
        printf("store      %s: %" PRId64 " blobs, %" PRId64 " bytes, %" PRId64 " corrupt\n",
               json_object_is_type(get(s, "store.dir"), json_type_string) ? str(s, "store.dir")
                                                                          : "(memory)",
               num(s, "store.blobs"), num(s, "store.bytes"), num(s, "store.corrupt"));
        printf("snapshots  %" PRId64 " of %" PRId64 "\n", num(s, "usage.snapshots"),
               num(s, "limits.max_snapshots"));
        printf("bytes      %" PRId64 " of %" PRId64 " (staging: %" PRId64 " files, %" PRId64
               " bytes)\n",
               num(s, "usage.bytes"), num(s, "limits.max_bytes"), num(s, "usage.staging_files"),
               num(s, "usage.staging_bytes"));
        printf("limits     snapshot %" PRId64 " bytes; per uid %" PRId64 " snapshots, %" PRId64
               " bytes, %" PRId64 " staging files, %" PRId64 " staging bytes\n",
               num(s, "limits.max_snapshot_size"), num(s, "limits.max_uid_snapshots"),
               num(s, "limits.max_uid_bytes"), num(s, "limits.max_staging"),
               num(s, "limits.max_staging_bytes"));
        printf("published  %" PRId64 "\n", num(s, "counters.publishes"));
        printf("refused    %" PRId64, num(s, "counters.refusals"));
        if (ref && json_object_is_type(ref, json_type_object)) {
                const char *sep = " (";
                json_object_object_foreach(ref, key, val) {
                        printf("%s%s %" PRId64, sep, key, json_object_get_int64(val));
                        sep = ", ";
                }
                if (strcmp(sep, ", ") == 0)
                        printf(")");
        }
        printf("\n");
        printf("requests   %" PRId64 " answered, %" PRId64 " bytes read\n",
               num(s, "counters.requests"), num(s, "counters.bytes_read"));
        /* Refusals nobody heard: said whenever there are any, first word first. */
        if (num(s, "counters.audit_lines_lost"))
                printf("audit      %" PRId64 " lines lost: the audit log could not be written "
                       "(see the daemon's journal or standard error)\n",
                       num(s, "counters.audit_lines_lost"));
}

int cli_cmd_status(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct cli_common co;
        json_object *reply, *status;
        int r;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "status", .what = "no operand",
                                                .help = &cli_status_help },
                            argc, argv, &co, &mount);
        if (r >= 0)
                return r;
        r = ask("status", mount, &co, "{\"op\":\"status\"}", "status", &reply);
        if (r)
                return r;
        if (!json_object_object_get_ex(reply, "status", &status) ||
            !json_object_is_type(status, json_type_object)) {
                json_object_put(reply);
                return cli_system_error("status", co.json, -EPROTO,
                                        "%s: the daemon's reply has no status", mount);
        }
        if (co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(mount));
                        json_object_object_add(o, "status", json_object_get(status));
                }
                json_object_put(reply);
                return cli_print_json(o) < 0 ? 2 : 0;
        }
        print_status(status);
        json_object_put(reply);
        return fflush(stdout) == 0 ? 0 : 2;
}

/* ---- metrics ---- */

struct metrics_args {
        const char *format;
        const char *output;
        bool has_group;
        gid_t group;
};

/* --group: a number, or the name of a group (getgrnam_r). 0 and *gid, -ENOENT for a name no
 * group has, or getgrnam_r's error. */
static int group_id(const char *text, gid_t *gid)
{
        struct group gr, *found = NULL;
        char buf[16384];
        uint32_t id;
        int r;

        if (value_parse_uid(text, &id) == 0) {
                *gid = (gid_t)id;
                return 0;
        }
        r = getgrnam_r(text, &gr, buf, sizeof(buf), &found);
        if (r)
                return -r;
        if (!found)
                return -ENOENT;
        *gid = found->gr_gid;
        return 0;
}

static int take_metrics_option(void *arg, int val, const char *value, bool json)
{
        struct metrics_args *a = arg;

        if (val == OPT_FORMAT) {
                if (strcmp(value, "openmetrics") != 0 && strcmp(value, "prometheus") != 0)
                        return cli_usage_error("metrics", json, true,
                                               "--format: '%s' is not openmetrics or "
                                               "prometheus", value);
                a->format = value;
        } else if (val == OPT_GROUP) {
                if (group_id(value, &a->group) < 0)
                        return cli_usage_error("metrics", json, true,
                                               "--group: no group '%s'", value);
                a->has_group = true;
        } else {
                if (!*value)
                        return cli_usage_error("metrics", json, true,
                                               "--output: an empty path");
                a->output = value;
        }
        return -1;
}

/* FILE written whole or not at all: a scraper reading it mid-write would take half a text
 * for the whole (node_exporter's textfile collector reads whatever is there). The temporary
 * file is made O_EXCL beside it and renamed over it. 0 or -errno. */
static int write_atomically(const char *path, const char *text, size_t len,
                            const struct metrics_args *a)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        size_t done = 0;
        int r;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        /* Every scope's publish, grant and refusal counts: a tenant reading them counts its
         * neighbours. The owner's alone (mkostemp's 0600, from the start), or its and the
         * collector's group's. */
        if (a->has_group && (fchown(fd, (uid_t)-1, a->group) < 0 || fchmod(fd, 0640) < 0))
                goto fail;
        while (done < len) {
                ssize_t w = write(fd, text + done, len - done);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        goto fail;
                done += (size_t)w;
        }
        if (fsync(fd) < 0 || rename(tmp, path) < 0)
                goto fail;
        return 0;
fail:
        r = negative_errno();
        unlink(tmp);
        return r;
}

int cli_cmd_metrics(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL, *request = NULL;
        struct metrics_args a = { .format = "openmetrics" };
        struct cli_common co;
        json_object *reply, *text;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "metrics", .min_operands = 0, .max_operands = 0,
                                          .what = "no operand", .help = &cli_metrics_help,
                                          .option = take_metrics_option,
                                          .arg = &a },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        if (a.has_group && !a.output)
                return cli_usage_error("metrics", false, true,
                                       "--group: only with --output");
        mount = cli_mount_path("metrics", &co);
        if (!mount)
                return 2;
        if (asprintf(&request, "{\"op\":\"metrics\",\"format\":\"%s\"}", a.format) < 0)
                return cli_system_error("metrics", false, -ENOMEM, "request");
        r = ask("metrics", mount, &co, request, "text", &reply);
        if (r)
                return r;
        if (!json_object_object_get_ex(reply, "text", &text) ||
            !json_object_is_type(text, json_type_string)) {
                json_object_put(reply);
                return cli_system_error("metrics", false, -EPROTO,
                                        "%s: the daemon's reply has no text", mount);
        }
        if (a.output) {
                r = write_atomically(a.output, json_object_get_string(text),
                                     (size_t)json_object_get_string_len(text), &a);
                json_object_put(reply);
                return r < 0 ? cli_system_error("metrics", false, r, "--output %s", a.output)
                             : 0;
        }
        fwrite(json_object_get_string(text), 1, (size_t)json_object_get_string_len(text), stdout);
        json_object_put(reply);
        return fflush(stdout) == 0 ? 0 : 2;
}
