/* SPDX-License-Identifier: MIT */
/* snapfs put: publish a file (or standard input) and print the snapshot's binding. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "client/client-internal.h"
#include "common/hex.h"
#include "common/util.h"

enum {
        OPT_NAME = CLI_OWN_OPTION,
        OPT_SCOPE,
        OPT_AS,
        OPT_KEEP,
};

struct put_args {
        const char *name, *scope, *entry;
        bool keep;
};

static const struct cli_option put_options[] = {
        CLI_OPTIONS_CLIENT,
        { "name", 0, CLI_ARG_VALUE, "NAME", NULL,
          "the snapshot's name: 1-64 of [A-Za-z0-9._-], starting with\n"
          "neither . nor _", OPT_NAME,
          CLI_STORE(struct put_args, name) },
        { "scope", 0, CLI_ARG_VALUE, "NAME", NULL,
          "publish for the scope NAME alone (the mount owner and root)", OPT_SCOPE,
          CLI_STORE(struct put_args, scope) },
        { "as", 0, CLI_ARG_VALUE, "ENTRY", NULL,
          "with --scope: under the entry name ENTRY", OPT_AS, CLI_STORE(struct put_args, entry) },
        { "keep", 0, CLI_ARG_NONE, NULL, NULL,
          "with --scope: keep a hold on the main mount too", OPT_KEEP,
          CLI_STORE(struct put_args, keep) },
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons, mount,\n"
                        "binding, snapshot {sha256, size, dev, ino, name, published,\n"
                        "publisher, binding}, already_published, read_view (null, or\n"
                        "{mount, binding, snapshot}), scope (null, or {name, entry,\n"
                        "mount, binding, snapshot})"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_put_help = {
        .head = "Usage: snapfs put [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                  [--name NAME] [--scope NAME [--as ENTRY] [--keep]] [--json]\n"
                "                  FILE|-\n"
                "\n"
                "Publish the bytes of FILE (or standard input for -) to the snapfs mount MNT:\n"
                "check the mount, write the bytes to a staging file, rename it to their SHA-256,\n"
                "then open and verify the snapshot. Prints its binding, one line:\n"
                "  sha256=<hex> size=<n> dev=<major>:<minor> ino=<n>\n"
                "The snapshot is named NAME (default: FILE's own name, when it is one), as\n"
                "snapfs ls shows it and an export titles it; content already published keeps\n"
                "its first name. Content already published gives the existing snapshot's\n"
                "binding (and \"already published\" on standard error). Zero bytes are allowed\n"
                "(the empty snapshot).\n"
                "When MNT's daemon also serves a read view (snapfs mount --read-view), a second\n"
                "line gives the binding as seen there, where a sandbox reads, once that view\n"
                "has passed the same mount check and the snapshot verified through it:\n"
                "  read-view sha256=<hex> size=<n> dev=<major>:<minor> ino=<n> VIEW\n"
                "With --scope NAME the snapshot is published for the scope NAME alone: granted\n"
                "to it (under ENTRY with --as: an existing ENTRY moves to it), held by no uid,\n"
                "not listed on the main mount, and gone (from memory and the runtime store)\n"
                "once its last grant goes (a revoke, the entry moved on, the scope removed)\n"
                "and its last descriptor closes. --keep keeps your hold on the main mount as\n"
                "well (the snapshot stays until you remove it). The second line is its binding\n"
                "in that scope's view, judged and verified there as a sandbox of it will:\n"
                "  scope NAME sha256=<hex> size=<n> dev=<major>:<minor> ino=<n> VIEW\n"
                "\n",
        .options = put_options,
        .tail = "\n"
                "Exit status: 0 published (or already there); 1 refused, with every reason on\n"
                "standard error (\"code: message\" lines), or published but its read view\n"
                "does not verify, or (--scope) not granted or not verified in the scope's view;\n"
                "2 usage or system error (FILE unreadable).\n",
};

/* The first line of a refused publish: what happened, before the reasons say why. */
static const char *refused_words(int r, const struct snapfs_report *why)
{
        /* ENOSPC from the store's disk is no limit of the mount's: named as what it is. */
        if (why->n_reasons && strcmp(why->reasons[0].code, "store-full") == 0)
                return "the store's filesystem is full";
        switch (-r) {
        case EPERM:
                return "the daemon refused it";
        case EACCES:
                return "this uid may not publish there";
        case EFBIG:
                return "too big";
        case EDQUOT:
                return "past a limit of your uid";
        case ENOSPC:
                return "the mount is full";
        case EBUSY:
                return "a publish under this name is in the way";
        }
        return snapfs_strerror(r);
}

/* The name FILE gives a snapshot when --name does not: its last component, when that is a
 * name (NULL otherwise: the snapshot gets none). */
static const char *default_name(const char *file)
{
        const char *base = strrchr(file, '/');

        base = base ? base + 1 : file;
        return strcmp(file, "-") != 0 && sfc_name_ok(base) ? base : NULL;
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

        hex_encode(b->sha256, SNAPFS_DIGEST_LEN, hex);
        r = snapfs_grant(mount, scope, hex, entry, opts, NULL, why);
        if (r == 0)
                r = snapfs_scope_binding(mount, scope, b, opts, view, viewlen, vb, why);
        return r;
}

/* The publish itself: for the scope alone (granted as it is published), or, without a scope
 * or with --keep, on the main mount (held by this uid; --keep grants it afterwards). */
static int put_fd(const char *mount, const char *scope, const char *entry, bool keep,
                  const char *name, int in, const struct snapfs_options *opts,
                  struct snapfs_snapshot *s, struct snapfs_report *why)
{
        if (scope && !keep)
                return snapfs_publish_fd_for_scope(mount, scope, entry, name, in, opts, s, why);
        return snapfs_publish_fd_named(mount, name, in, opts, s, why);
}

/* "already published", its name, and who else holds it: the other uids that hold it and the
 * scopes it is granted to, from user.snapfs.holders ("uids=U,U scopes=N"; the owner and root
 * may read it). Content only a scope published shows here as granted to a scope. */
static void say_already(const char *mount, const struct snapfs_snapshot *s)
{
        char path[PATH_MAX], hex[2 * SNAPFS_DIGEST_LEN + 1], holders[200] = "", others[200] = "";
        char *p, *save = NULL;
        unsigned long scopes = 0;
        size_t o = 0;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/%s", mount,
                 hex_encode(s->binding.sha256, SNAPFS_DIGEST_LEN, hex));
        n = getxattr(path, "user.snapfs.holders", holders, sizeof(holders) - 1);
        holders[n > 0 ? n : 0] = '\0';
        p = strstr(holders, " scopes=");
        if (p) {
                scopes = strtoul(p + 8, NULL, 10);
                *p = '\0';
        }
        for (p = strtok_r(strncmp(holders, "uids=", 5) ? holders + strlen(holders) : holders + 5,
                          ",", &save);
             p; p = strtok_r(NULL, ",", &save))
                if (strtoul(p, NULL, 10) != (unsigned long)getuid() && o < sizeof(others))
                        o += (size_t)snprintf(others + o, sizeof(others) - o, "%s%s",
                                              o ? "," : "", p);
        fprintf(stderr, "snapfs put: already published%s%s", s->name[0] ? ", named " : "",
                s->name);
        if (others[0])
                fprintf(stderr, "; also held by uid %s", others);
        if (scopes)
                fprintf(stderr, "; granted to %lu scope%s", scopes, scopes == 1 ? "" : "s");
        fputc('\n', stderr);
}

/* A publish and where a sandbox reads it, as put prints them. */
struct put_out {
        const char *mount, *scope, *entry;
        bool keep;                   /* --keep: published on the main mount, then granted */
        int r;                       /* snapfs_publish_fd_named's: 1 already published */
        struct snapfs_snapshot s;
        char text[SNAPFS_BINDING_TEXT_MAX];
        int vr;                      /* the view's verification: 0, or a negative errno */
        bool view_failed;            /* vr is a failure (no read view at all is none) */
        struct snapfs_binding vb;
        struct snapfs_report vwhy;
        char vtext[SNAPFS_BINDING_TEXT_MAX], view[PATH_MAX];
};

/* Publishes FILE (or standard input for "-") under name on o->mount: o->r and o->s, or the
 * exit code after printing why (-1 to go on). */
static int publish(struct put_out *o, const struct cli_common *co, const char *file,
                   const char *name, bool named)
{
        _cleanup_close_ int fd = -1;
        struct snapfs_report why;
        int in = STDIN_FILENO;

        if (strcmp(file, "-") != 0) {
                /* O_NONBLOCK is not used: a FIFO as FILE is a stream to publish, on purpose. */
                fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return cli_system_error("put", co->json, negative_errno(), "%s", file);
                in = fd;
        }
        o->r = put_fd(o->mount, o->scope, o->entry, o->keep, name, in, &co->opts, &o->s, &why);
        /* FILE's own name is only a default: taken by a staging file of this uid (a publish
         * under it runs, or was interrupted), the snapshot goes unnamed rather than refused.
         * Nothing was read yet when that is found. */
        if (o->r == -EBUSY && !named && name)
                o->r = put_fd(o->mount, o->scope, o->entry, o->keep, NULL, in, &co->opts, &o->s,
                              &why);
        if (o->r >= 0)
                return -1;
        if (co->json) {
                json_object *j = cli_json_refusal(o->r, &why);
                if (j)
                        json_object_object_add(j, "mount", json_object_new_string(o->mount));
                if (cli_print_json(j) < 0)
                        return 2;
        } else {
                fprintf(stderr, "snapfs put: %s: not published: %s\n", o->mount,
                        refused_words(o->r, &why));
                cli_print_reasons(stderr, &why);
        }
        return 1;
}

/* Where a sandbox reads: the same snapshot through the daemon's read view (or, with --scope,
 * granted to the scope and through its view), judged and verified there like any mount. 0,
 * or -1 when a binding cannot be written. */
static int through_view(struct put_out *o, const struct cli_common *co)
{
        if (o->scope && !o->keep)
                o->vr = snapfs_scope_binding(o->mount, o->scope, &o->s.binding, &co->opts,
                                             o->view, sizeof(o->view), &o->vb, &o->vwhy);
        else if (o->scope)
                o->vr = put_in_scope(o->mount, o->scope, o->entry, &o->s.binding, &co->opts,
                                     o->view, sizeof(o->view), &o->vb, &o->vwhy);
        else
                o->vr = snapfs_view_binding(o->mount, &o->s.binding, &co->opts, o->view,
                                            sizeof(o->view), &o->vb, &o->vwhy);
        if (o->vr == 0 && snapfs_binding_format(&o->vb, o->vtext, sizeof(o->vtext)) < 0)
                return -1;
        /* No read view (ENODATA) is no failure; a scope that did not take it always is. */
        o->view_failed = o->vr < 0 && (o->scope || o->vr != -ENODATA);
        return 0;
}

/* {mount, binding, snapshot} of the view (and the scope's name and entry), or NULL. */
static json_object *view_json(const struct put_out *o)
{
        struct snapfs_snapshot vs = o->s;
        json_object *v;

        if (o->vr != 0 || !(v = json_object_new_object()))
                return NULL;
        vs.binding = o->vb;
        if (o->scope) {
                json_object_object_add(v, "name", json_object_new_string(o->scope));
                json_object_object_add(v, "entry",
                                       o->entry ? json_object_new_string(o->entry) : NULL);
        }
        json_object_object_add(v, "mount", json_object_new_string(o->view));
        json_object_object_add(v, "binding", json_object_new_string(o->vtext));
        json_object_object_add(v, "snapshot", cli_snapshot_json(&vs));
        return v;
}

static int print_json(const struct put_out *o)
{
        json_object *j = o->view_failed ? cli_json_refusal(o->vr, &o->vwhy)
                                         : cli_json_result(true, NULL, NULL, NULL);
        json_object *v = view_json(o);

        if (j) {
                json_object_object_add(j, "mount", json_object_new_string(o->mount));
                json_object_object_add(j, "binding", json_object_new_string(o->text));
                json_object_object_add(j, "snapshot", cli_snapshot_json(&o->s));
                json_object_object_add(j, "already_published",
                                       json_object_new_boolean(o->r == 1));
                json_object_object_add(j, "read_view", o->scope ? NULL : v);
                json_object_object_add(j, "scope", o->scope ? v : NULL);
        } else {
                json_object_put(v);
        }
        if (cli_print_json(j) < 0)
                return 2;
        return o->view_failed ? 1 : 0;
}

static int print_text(const struct put_out *o)
{
        /* Idempotent: the content is there, bound to the existing snapshot. Not a failure. */
        if (o->r == 1)
                say_already(o->mount, &o->s);
        if (printf("%s\n", o->text) < 0 ||
            (o->vr == 0 && !o->scope && printf("read-view %s %s\n", o->vtext, o->view) < 0) ||
            (o->vr == 0 && o->scope &&
             printf("scope %s %s %s\n", o->scope, o->vtext, o->view) < 0) ||
            fflush(stdout) != 0) {
                fprintf(stderr, "snapfs put: writing output: %s\n", strerror(errno));
                return 2;
        }
        if (!o->view_failed)
                return 0;
        if (o->scope)
                fprintf(stderr, "snapfs put: %s: published, but not granted to scope %s or not "
                                "verified in its view: %s\n", o->mount, o->scope,
                        snapfs_strerror(o->vr));
        else
                fprintf(stderr, "snapfs put: %s: published, but its read view does not "
                                "verify: %s\n", o->mount, snapfs_strerror(o->vr));
        cli_print_reasons(stderr, &o->vwhy);
        return 1;
}

int cli_cmd_put(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct put_args pa = { NULL, NULL, NULL, false };
        struct put_out o = { 0 };
        struct cli_common co;
        const char *file;
        int r;

        r = cli_parse(&(struct cli_spec){ .cmd = "put", .min_operands = 1, .max_operands = 1,
                                          .what = "one FILE (or - for standard input)",
                                          .help = &cli_put_help,
                                          .arg = &pa },
                      argc, argv, &co);
        if (r >= 0)
                return r;
        if (pa.entry && !pa.scope)
                return cli_usage_error("put", co.json, true, "--as needs --scope");
        if (pa.keep && !pa.scope)
                return cli_usage_error("put", co.json, true, "--keep needs --scope");
        file = argv[optind];
        if (pa.name && !sfc_name_ok(pa.name))
                return cli_usage_error("put", co.json, false,
                                       "--name: '%s' is not a snapshot name: 1-64 of "
                                       "[A-Za-z0-9._-], starting with neither . nor _",
                                       pa.name);
        mount = cli_mount_path("put", &co);
        if (!mount)
                return 2;
        o.mount = mount;
        o.scope = pa.scope;
        o.entry = pa.entry;
        o.keep = pa.keep;
        r = publish(&o, &co, file, pa.name ?: default_name(file), pa.name != NULL);
        if (r >= 0)
                return r;
        if (snapfs_binding_format(&o.s.binding, o.text, sizeof(o.text)) < 0 ||
            through_view(&o, &co) < 0)
                return 2;
        return co.json ? print_json(&o) : print_text(&o);
}
