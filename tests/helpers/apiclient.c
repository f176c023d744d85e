/* SPDX-License-Identifier: MIT */
/* apiclient: drives libsnapfs.so through its public header only, for the integration tests,
 * with the same commands and JSON output as the Python client (client/python/snapfs_client),
 * so both clients run the very same cases.
 *
 *   apiclient publish [--owner UID] [--max-size N] [--from-fd] [--name NAME] MNT FILE|-
 *   apiclient open [--owner UID] [--max-size N] [--kind KIND] MNT BINDING
 *   apiclient digest [--owner UID] [--kind KIND] MNT HEX
 *   apiclient verify-fd [--kind KIND] PATH BINDING
 *   apiclient describe [--owner UID] MNT BINDING
 *   apiclient scope-create [TRUST] [--uid UID]... [--gid GID] [--publish] [--until-pid PID]
 *             [--max-snapshots N] [--max-bytes N] [--max-staging N] [--max-staging-bytes N]
 *             [--min-bytes N] MNT NAME VIEW
 *   apiclient scope-list [TRUST] MNT
 *   apiclient scope-show|scope-remove [TRUST] MNT NAME
 *   apiclient grant [TRUST] [--entry ENTRY] MNT SCOPE DIGEST|BINDING
 *   apiclient revoke [TRUST] (--sha256 HEX | --entry ENTRY) MNT SCOPE
 *   apiclient scope-binding [TRUST] MNT SCOPE BINDING
 *   apiclient open-entry [TRUST] [--kind KIND] VIEW ENTRY
 *   apiclient control [TRUST] MNT JSON
 * TRUST: [--owner UID] [--insecure-own-mount] [--trust-user-namespace].
 * KIND: content, signature or manifest (SNAPFS_OPT_KIND_*; repeatable).
 *   apiclient abi
 *
 * Prints one JSON object: ok, error (errno name), message, reasons [{code, message}],
 * result, dropped, binding, snapshot (publish, digest, describe, open-entry: the one
 * snapshot object, as the Python client's Binding.as_dict()), already_published, kind
 * (describe), content_hex (open, digest, open-entry: the bytes read through the returned
 * descriptor), scope, scopes, grants, grant, view, reply (the scope commands: the objects
 * snapfs-client prints). Exit 0 ok, 1 refused, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "snapfs.h"

static json_object *out;

static void put_report(int r, const struct snapfs_report *why)
{
        json_object *list = json_object_new_array();

        /* The shape of every snapfs --json outcome: ok, error, message, reasons, then the
         * command's own fields. */
        json_object_object_add(out, "ok", json_object_new_boolean(r >= 0));
        json_object_object_add(out, "error",
                               r < 0 ? json_object_new_string(strerrorname_np(-r) ?: "?") : NULL);
        json_object_object_add(out, "message",
                               r < 0 ? json_object_new_string(snapfs_strerror(r)) : NULL);
        json_object_object_add(out, "result", json_object_new_int(r));
        for (unsigned i = 0; r < 0 && i < why->n_reasons; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "code", json_object_new_string(why->reasons[i].code));
                json_object_object_add(o, "message",
                                       json_object_new_string(why->reasons[i].message));
                json_object_array_add(list, o);
        }
        json_object_object_add(out, "reasons", list);
        json_object_object_add(out, "dropped", json_object_new_int((int)why->n_dropped));
        /* The report must record what the call returned; the tests look for this key. */
        if (r < 0 && why->error != r)
                json_object_object_add(out, "report_error_mismatch",
                                       json_object_new_int(why->error));
}

static void put_binding(const struct snapfs_binding *b)
{
        char text[SNAPFS_BINDING_TEXT_MAX];

        if (snapfs_binding_format(b, text, sizeof(text)) == 0)
                json_object_object_add(out, "binding", json_object_new_string(text));
}

/* The one snapshot object (docs/design.md), as every client prints it; name, published and
 * publisher null unless known, dev and binding null for a view not mounted (dev 0). */
static json_object *snapshot_json(const struct snapfs_snapshot *s, bool known)
{
        json_object *o = json_object_new_object();
        char hex[2 * SNAPFS_DIGEST_LEN + 1], dev[32], when[32], text[SNAPFS_BINDING_TEXT_MAX];
        time_t t = (time_t)s->published_sec;
        struct tm tm;

        for (size_t i = 0; i < SNAPFS_DIGEST_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", s->binding.sha256[i]);
        snprintf(dev, sizeof(dev), "%u:%u", major(s->binding.dev), minor(s->binding.dev));
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        snapfs_binding_format(&s->binding, text, sizeof(text));
        json_object_object_add(o, "sha256", json_object_new_string(hex));
        json_object_object_add(o, "size", json_object_new_uint64(s->binding.size));
        json_object_object_add(o, "dev", s->binding.dev ? json_object_new_string(dev) : NULL);
        json_object_object_add(o, "ino", json_object_new_uint64(s->binding.ino));
        json_object_object_add(o, "name", known && s->name[0] ? json_object_new_string(s->name)
                                                              : NULL);
        json_object_object_add(o, "published", known ? json_object_new_string(when) : NULL);
        json_object_object_add(o, "publisher",
                               known ? json_object_new_uint64(s->publisher) : NULL);
        json_object_object_add(o, "binding",
                               s->binding.dev ? json_object_new_string(text) : NULL);
        return o;
}

static void put_snapshot(const struct snapfs_snapshot *s)
{
        json_object_object_add(out, "snapshot", snapshot_json(s, true));
}

/* Reads the whole descriptor with pread (the offset stays at 0) into hex. */
static int put_content(int fd)
{
        static const char digits[] = "0123456789abcdef";
        char *hex = NULL;
        size_t len = 0, cap = 0;
        unsigned char buf[65536];
        off_t off = 0;

        for (;;) {
                ssize_t k = pread(fd, buf, sizeof(buf), off);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                if (len + 2 * (size_t)k + 1 > cap) {
                        cap = (len + 2 * (size_t)k + 1) * 2;
                        hex = realloc(hex, cap);
                        if (!hex)
                                return -ENOMEM;
                }
                for (ssize_t i = 0; i < k; i++) {
                        hex[len++] = digits[buf[i] >> 4];
                        hex[len++] = digits[buf[i] & 15];
                }
                off += k;
        }
        json_object_object_add(out, "content_hex", json_object_new_string_len(hex ? hex : "",
                                                                               (int)len));
        free(hex);
        return 0;
}

static int read_all(int fd, char **data, size_t *len)
{
        size_t cap = 65536;
        char *buf = malloc(cap);

        *len = 0;
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k;
                if (*len == cap) {
                        char *n = realloc(buf, cap *= 2);
                        if (!n) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = n;
                }
                k = read(fd, buf + *len, cap - *len);
                if (k < 0) {
                        free(buf);
                        return -errno;
                }
                if (k == 0)
                        break;
                *len += (size_t)k;
        }
        *data = buf;
        return 0;
}

/* The binding text is parsed here, not by the library call: report it the same way. */
static int bad_binding(struct snapfs_report *why)
{
        why->error = -EINVAL;
        why->n_reasons = 1;
        snprintf(why->reasons[0].code, sizeof(why->reasons[0].code), "invalid-argument");
        snprintf(why->reasons[0].message, sizeof(why->reasons[0].message), "not a binding");
        return -EINVAL;
}

/* ---- scopes: the objects the Python client's Scope.as_dict() and Grant.as_dict() give ---- */

static json_object *limit_json(uint64_t v)
{
        return v ? json_object_new_uint64(v) : NULL;
}

static json_object *scope_json(const struct snapfs_scope *sc)
{
        json_object *o = json_object_new_object(), *uids = json_object_new_array(),
                    *limits = json_object_new_object(), *use = json_object_new_object();
        char dev[32];

        snprintf(dev, sizeof(dev), "%u:%u", major(sc->dev), minor(sc->dev));
        for (size_t i = 0; i < sc->n_uids; i++)
                json_object_array_add(uids, json_object_new_int64(sc->uids[i]));
        json_object_object_add(limits, "max_snapshots", limit_json(sc->limits.max_snapshots));
        json_object_object_add(limits, "max_bytes", limit_json(sc->limits.max_bytes));
        json_object_object_add(limits, "max_staging", limit_json(sc->limits.max_staging));
        json_object_object_add(limits, "max_staging_bytes",
                               limit_json(sc->limits.max_staging_bytes));
        json_object_object_add(limits, "min_bytes", limit_json(sc->min_bytes));
        json_object_object_add(use, "snapshots", json_object_new_uint64(sc->usage.snapshots));
        json_object_object_add(use, "bytes", json_object_new_uint64(sc->usage.bytes));
        json_object_object_add(use, "staging", json_object_new_uint64(sc->usage.staging));
        json_object_object_add(use, "staging_bytes",
                               json_object_new_uint64(sc->usage.staging_bytes));
        json_object_object_add(o, "name", json_object_new_string(sc->name));
        json_object_object_add(o, "view", json_object_new_string(sc->view));
        json_object_object_add(o, "dev", (sc->flags & SNAPFS_SCOPE_UNMOUNTED)
                                                 ? NULL : json_object_new_string(dev));
        json_object_object_add(o, "uids", uids);
        json_object_object_add(o, "gid", (sc->flags & SNAPFS_SCOPE_GID)
                                                 ? json_object_new_int64(sc->gid) : NULL);
        json_object_object_add(o, "publish",
                               json_object_new_boolean(!!(sc->flags & SNAPFS_SCOPE_PUBLISH)));
        json_object_object_add(o, "until_pid", (sc->flags & SNAPFS_SCOPE_UNTIL_PID)
                                                       ? json_object_new_int(sc->until_pid)
                                                       : NULL);
        json_object_object_add(o, "limits", limits);
        json_object_object_add(o, "usage", use);
        json_object_object_add(o, "grants", json_object_new_uint64(sc->n_grants));
        return o;
}

/* The n grants g of the scope sc (NULL: not known) as Grant.as_dict() gives them: the one
 * snapshot object as snapfs_describe_view finds it (the view's binding, the main mount's
 * word on the digest), the entry beside it. */
static json_object *grants_json(const char *mount, const struct snapfs_scope *sc,
                                const struct snapfs_grant *g, size_t n,
                                const struct snapfs_options *opts)
{
        bool mounted = sc && !(sc->flags & SNAPFS_SCOPE_UNMOUNTED);
        struct snapfs_binding *b = calloc(n + 1, sizeof(*b));
        struct snapfs_snapshot *s = calloc(n + 1, sizeof(*s));
        unsigned *seen = calloc(n + 1, sizeof(*seen));
        json_object *list = json_object_new_array();
        struct snapfs_report why;

        if (!b || !s || !seen)
                abort();
        for (size_t i = 0; i < n; i++) {
                memcpy(b[i].sha256, g[i].sha256, sizeof(b[i].sha256));
                b[i].size = g[i].size;
                b[i].dev = mounted ? sc->dev : 0;
                b[i].ino = g[i].ino;
        }
        if (snapfs_describe_view(mount, mounted ? sc->view : NULL, b, n, opts, s, seen,
                                 &why) < 0) {
                for (size_t i = 0; i < n; i++) {
                        s[i] = (struct snapfs_snapshot){ .binding = b[i] };
                        seen[i] = 0;
                }
        }
        for (size_t i = 0; i < n; i++) {
                json_object *o = snapshot_json(&s[i], seen[i] & SNAPFS_SEEN_DAEMON);
                json_object_object_add(o, "entry", g[i].entry[0]
                                                           ? json_object_new_string(g[i].entry)
                                                           : NULL);
                json_object_array_add(list, o);
        }
        free(b);
        free(s);
        free(seen);
        return list;
}

/* The digest of a grant operand: 64 hex as it is, a binding by its sha256. */
static const char *digest_of(const char *what, char hex[2 * SNAPFS_DIGEST_LEN + 1])
{
        struct snapfs_binding b;

        if (strlen(what) == 2 * SNAPFS_DIGEST_LEN || snapfs_binding_parse(what, &b) < 0)
                return what;
        for (size_t i = 0; i < SNAPFS_DIGEST_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", b.sha256[i]);
        return hex;
}

static int usage(void)
{
        fprintf(stderr, "usage: apiclient publish|open|digest|verify-fd|describe|scope-create|"
                        "scope-list|scope-show|scope-remove|grant|revoke|scope-binding|"
                        "open-entry|wait-entry|control|abi ...\n");
        return 2;
}

static int cmd_abi(void)
{
#define SIZE(t) \
        json_object_object_add(out, "sizeof " #t, json_object_new_int((int)sizeof(struct t)))
#define OFF(t, f) \
        json_object_object_add(out, #t "." #f, json_object_new_int((int)offsetof(struct t, f)))
        SIZE(snapfs_binding);
        OFF(snapfs_binding, size);
        OFF(snapfs_binding, dev);
        OFF(snapfs_binding, ino);
        SIZE(snapfs_options);
        OFF(snapfs_options, owner);
        OFF(snapfs_options, max_size);
        OFF(snapfs_options, reserved);
        SIZE(snapfs_reason);
        OFF(snapfs_reason, message);
        SIZE(snapfs_report);
        OFF(snapfs_report, n_reasons);
        OFF(snapfs_report, n_dropped);
        OFF(snapfs_report, reasons);
        OFF(snapfs_report, reserved);
        SIZE(snapfs_snapshot);
        OFF(snapfs_snapshot, name);
        OFF(snapfs_snapshot, published_sec);
        OFF(snapfs_snapshot, published_nsec);
        OFF(snapfs_snapshot, publisher);
        OFF(snapfs_snapshot, kind);
        OFF(snapfs_snapshot, reserved);
        SIZE(snapfs_scope_spec);
        OFF(snapfs_scope_spec, n_uids);
        OFF(snapfs_scope_spec, until_pid);
        OFF(snapfs_scope_spec, limits);
        OFF(snapfs_scope_spec, min_bytes);
        OFF(snapfs_scope_spec, reserved);
        SIZE(snapfs_scope);
        OFF(snapfs_scope, view);
        OFF(snapfs_scope, dev);
        OFF(snapfs_scope, flags);
        OFF(snapfs_scope, until_pid);
        OFF(snapfs_scope, limits);
        OFF(snapfs_scope, usage);
        OFF(snapfs_scope, n_grants);
        OFF(snapfs_scope, min_bytes);
        OFF(snapfs_scope, reserved);
        SIZE(snapfs_grant);
        OFF(snapfs_grant, size);
        OFF(snapfs_grant, ino);
        OFF(snapfs_grant, entry);
        OFF(snapfs_grant, reserved);
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "owner", required_argument, NULL, 'o' },
                { "max-size", required_argument, NULL, 'm' },
                { "from-fd", no_argument, NULL, 'f' },
                { "insecure-own-mount", no_argument, NULL, 'I' },
                { "kind", required_argument, NULL, 'k' },
                { "trust-user-namespace", no_argument, NULL, 'U' },
                { "uid", required_argument, NULL, 'u' },
                { "gid", required_argument, NULL, 'g' },
                { "publish", no_argument, NULL, 'p' },
                { "until-pid", required_argument, NULL, 'P' },
                { "max-snapshots", required_argument, NULL, '1' },
                { "max-bytes", required_argument, NULL, '2' },
                { "max-staging", required_argument, NULL, '3' },
                { "max-staging-bytes", required_argument, NULL, '4' },
                { "min-bytes", required_argument, NULL, '5' },
                { "entry", required_argument, NULL, 'e' },
                { "sha256", required_argument, NULL, 's' },
                { "name", required_argument, NULL, 'n' },
                { "timeout", required_argument, NULL, 't' },
                { NULL, 0, NULL, 0 },
        };
        struct snapfs_scope_spec spec = { 0 };
        uint32_t uids[64];
        const char *entry = NULL, *sha256 = NULL;
        static const char *const kinds[] = { "content", "signature", "manifest" };
        struct snapfs_options opts = { 0 };
        struct snapfs_report why = { 0 };
        struct snapfs_binding b;
        struct snapfs_snapshot s;
        const char *cmd, *name = NULL;
        bool from_fd = false;
        int c, r = 0, fd, timeout_ms = -1;

        if (argc < 2)
                return usage();
        cmd = argv[1];
        optind = 2;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (c) {
                case 'o':
                        opts.flags |= SNAPFS_OPT_OWNER;
                        opts.owner = (uint32_t)strtoul(optarg, NULL, 10);
                        break;
                case 'm':
                        opts.max_size = strtoull(optarg, NULL, 10);
                        break;
                case 'f':
                        from_fd = true;
                        break;
                case 'I':
                        opts.flags |= SNAPFS_OPT_INSECURE_OWN_MOUNT;
                        break;
                case 'U':
                        opts.flags |= SNAPFS_OPT_TRUST_USER_NAMESPACE;
                        break;
                case 'u':
                        if (spec.n_uids == sizeof(uids) / sizeof(uids[0]))
                                return usage();
                        uids[spec.n_uids++] = (uint32_t)strtoul(optarg, NULL, 10);
                        break;
                case 'g':
                        spec.flags |= SNAPFS_SCOPE_GID;
                        spec.gid = (uint32_t)strtoul(optarg, NULL, 10);
                        break;
                case 'p':
                        spec.flags |= SNAPFS_SCOPE_PUBLISH;
                        break;
                case 'P':
                        spec.flags |= SNAPFS_SCOPE_UNTIL_PID;
                        spec.until_pid = (int32_t)strtol(optarg, NULL, 10);
                        break;
                case '1':
                        spec.limits.max_snapshots = strtoull(optarg, NULL, 10);
                        break;
                case '2':
                        spec.limits.max_bytes = strtoull(optarg, NULL, 10);
                        break;
                case '3':
                        spec.limits.max_staging = strtoull(optarg, NULL, 10);
                        break;
                case '4':
                        spec.limits.max_staging_bytes = strtoull(optarg, NULL, 10);
                        break;
                case '5':
                        spec.min_bytes = strtoull(optarg, NULL, 10);
                        break;
                case 'e':
                        entry = optarg;
                        break;
                case 's':
                        sha256 = optarg;
                        break;
                case 'n':
                        name = optarg;
                        break;
                case 't':
                        timeout_ms = (int)strtol(optarg, NULL, 10) * 1000;
                        break;
                case 'k':
                        if (strcmp(optarg, "content") == 0)
                                opts.flags |= SNAPFS_OPT_KIND_CONTENT;
                        else if (strcmp(optarg, "signature") == 0)
                                opts.flags |= SNAPFS_OPT_KIND_SIGNATURE;
                        else if (strcmp(optarg, "manifest") == 0)
                                opts.flags |= SNAPFS_OPT_KIND_MANIFEST;
                        else
                                return usage();
                        break;
                default:
                        return usage();
                }
        }
        argc -= optind;
        argv += optind;
        out = json_object_new_object();

        if (strcmp(cmd, "abi") == 0 && argc == 0) {
                cmd_abi();
                printf("%s\n", json_object_to_json_string(out));
                return 0;
        } else if (strcmp(cmd, "publish") == 0 && argc == 2) {
                bool stdin_ = strcmp(argv[1], "-") == 0;
                fd = stdin_ ? 0 : open(argv[1], O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return usage();
                if (from_fd) {
                        r = snapfs_publish_fd_named(argv[0], name, fd, &opts, &s, &why);
                } else {
                        char *data = NULL;
                        size_t len = 0;
                        if (read_all(fd, &data, &len) < 0)
                                return usage();
                        r = snapfs_publish_named(argv[0], name, data, len, &opts, &s, &why);
                        free(data);
                }
                if (r >= 0) {
                        put_binding(&s.binding);
                        put_snapshot(&s);
                        json_object_object_add(out, "already_published",
                                               json_object_new_boolean(r == 1));
                }
        } else if (strcmp(cmd, "open") == 0 && argc == 2) {
                if (snapfs_binding_parse(argv[1], &b) < 0) {
                        r = bad_binding(&why);
                } else {
                        r = fd = snapfs_open_verified(argv[0], &b, &opts, &why);
                        if (fd >= 0) {
                                put_binding(&b);
                                /* Re-verifying the held descriptor must pass too. */
                                r = snapfs_verify_fd(fd, &b, &opts, &why);
                                if (r == 0)
                                        r = put_content(fd);
                                close(fd);
                        }
                }
        } else if (strcmp(cmd, "digest") == 0 && argc == 2) {
                r = fd = snapfs_open_digest(argv[0], argv[1], &opts, &b, &why);
                if (fd >= 0) {
                        put_binding(&b);
                        if (snapfs_describe_fd(fd, &b, &s) == 0)
                                put_snapshot(&s);
                        r = put_content(fd);
                        close(fd);
                }
        } else if (strcmp(cmd, "describe") == 0 && argc == 2) {
                if (snapfs_binding_parse(argv[1], &b) < 0) {
                        r = bad_binding(&why);
                } else {
                        r = snapfs_describe(argv[0], &b, &opts, &s, &why);
                        if (r == 0) {
                                put_binding(&s.binding);
                                put_snapshot(&s);
                                json_object_object_add(out, "kind",
                                                       s.kind >= 0 && s.kind < 3
                                                               ? json_object_new_string(kinds[s.kind])
                                                               : NULL);
                        }
                }
        } else if (strcmp(cmd, "verify-fd") == 0 && argc == 2) {
                fd = open(argv[0], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0) {
                        fprintf(stderr, "apiclient: %s: %m\n", argv[0]);
                        return 2;
                }
                if (snapfs_binding_parse(argv[1], &b) < 0)
                        r = bad_binding(&why);
                else
                        r = snapfs_verify_fd(fd, &b, &opts, &why);
                close(fd);
        } else if (strcmp(cmd, "scope-create") == 0 && argc == 3) {
                struct snapfs_scope sc;
                spec.name = argv[1];
                spec.view = argv[2];
                spec.uids = uids;
                r = snapfs_scope_create(argv[0], &spec, &opts, &sc, &why);
                if (r == 0) {
                        json_object_object_add(out, "scope", scope_json(&sc));
                        snapfs_scope_free(&sc);
                }
        } else if (strcmp(cmd, "scope-list") == 0 && argc == 1) {
                struct snapfs_scope *v;
                size_t n;
                r = snapfs_scope_list(argv[0], &opts, &v, &n, &why);
                if (r == 0) {
                        json_object *list = json_object_new_array();
                        for (size_t i = 0; i < n; i++)
                                json_object_array_add(list, scope_json(&v[i]));
                        json_object_object_add(out, "scopes", list);
                        snapfs_scopes_free(v, n);
                }
        } else if (strcmp(cmd, "scope-show") == 0 && argc == 2) {
                struct snapfs_scope sc;
                struct snapfs_grant *g;
                size_t n;
                r = snapfs_scope_show(argv[0], argv[1], &opts, &sc, &g, &n, &why);
                if (r == 0) {
                        json_object_object_add(out, "scope", scope_json(&sc));
                        json_object_object_add(out, "grants",
                                               grants_json(argv[0], &sc, g, n, &opts));
                        snapfs_scope_free(&sc);
                        snapfs_free(g);
                }
        } else if (strcmp(cmd, "scope-remove") == 0 && argc == 2) {
                r = snapfs_scope_remove(argv[0], argv[1], &opts, &why);
        } else if (strcmp(cmd, "grant") == 0 && argc == 3) {
                char hex[2 * SNAPFS_DIGEST_LEN + 1];
                struct snapfs_grant g;
                r = snapfs_grant(argv[0], argv[1], digest_of(argv[2], hex), entry, &opts, &g,
                                 &why);
                if (r == 0) {
                        struct snapfs_report swhy;
                        struct snapfs_scope sc;
                        bool shown = snapfs_scope_show(argv[0], argv[1], &opts, &sc, NULL, NULL,
                                                       &swhy) == 0;
                        json_object *list = grants_json(argv[0], shown ? &sc : NULL, &g, 1,
                                                        &opts);
                        json_object_object_add(out, "grant",
                                               json_object_get(json_object_array_get_idx(list,
                                                                                         0)));
                        json_object_put(list);
                        if (shown)
                                snapfs_scope_free(&sc);
                }
        } else if (strcmp(cmd, "revoke") == 0 && argc == 2) {
                r = snapfs_revoke(argv[0], argv[1], sha256, entry, &opts, &why);
        } else if (strcmp(cmd, "scope-binding") == 0 && argc == 3) {
                char view[PATH_MAX];
                struct snapfs_binding vb;
                if (snapfs_binding_parse(argv[2], &b) < 0) {
                        r = bad_binding(&why);
                } else {
                        r = snapfs_scope_binding(argv[0], argv[1], &b, &opts, view, sizeof(view),
                                                 &vb, &why);
                        if (r == 0) {
                                unsigned seen = 0;
                                json_object_object_add(out, "view", json_object_new_string(view));
                                put_binding(&vb);
                                /* The main mount's word on the digest, as the Python client
                                 * asks it. */
                                if (snapfs_describe_view(argv[0], NULL, &vb, 1, &opts, &s, &seen,
                                                         &why) < 0) {
                                        s = (struct snapfs_snapshot){ .binding = vb };
                                        seen = 0;
                                }
                                json_object_object_add(out, "snapshot",
                                                       snapshot_json(&s,
                                                                     seen & SNAPFS_SEEN_DAEMON));
                        }
                }
        } else if (strcmp(cmd, "open-entry") == 0 && argc == 2) {
                r = fd = snapfs_open_entry(argv[0], argv[1], &opts, &b, &why);
                if (fd >= 0) {
                        put_binding(&b);
                        if (snapfs_describe_fd(fd, &b, &s) == 0)
                                put_snapshot(&s);
                        r = put_content(fd);
                        close(fd);
                }
        } else if (strcmp(cmd, "wait-entry") == 0 && argc == 2) {
                r = fd = snapfs_wait_entry(argv[0], argv[1], timeout_ms, &opts, &b, &why);
                if (fd >= 0) {
                        put_binding(&b);
                        if (snapfs_describe_fd(fd, &b, &s) == 0)
                                put_snapshot(&s);
                        r = put_content(fd);
                        close(fd);
                }
        } else if (strcmp(cmd, "control") == 0 && argc == 2) {
                char *reply = NULL;
                r = snapfs_control(argv[0], argv[1], &opts, &reply, &why);
                json_object_object_add(out, "reply", reply ? json_tokener_parse(reply) : NULL);
                snapfs_free(reply);
        } else {
                return usage();
        }
        put_report(r, &why);
        printf("%s\n", json_object_to_json_string(out));
        json_object_put(out);
        return r < 0 ? 1 : 0;
}
