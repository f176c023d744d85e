/* SPDX-License-Identifier: MIT */
/* Scopes from the client's side: typed requests on the control channel (control.c), and the
 * daemon's replies read back into snapfs_scope and snapfs_grant (docs/design.md, "The control
 * channel"). */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "common/json.h"
#include "common/util.h"
#include "snapshot/digest.h"
#include "snapshot/name.h"

/* ---- reading the daemon's JSON ---- */

/* The member, NULL when absent or null. */
static json_object *field(json_object *o, const char *key)
{
        json_object *v = NULL;

        return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* The typed fields of common/json.h: absent or null leaves *out, anything but what is asked
 * is -EPROTO (the daemon said something it does not say). */
static int get_uint(json_object *o, const char *key, uint64_t max, uint64_t *out)
{
        return json_field_uint(o, key, max, out, NULL, 0) < 0 ? -EPROTO : 0;
}

static int get_bool(json_object *o, const char *key, bool *out)
{
        return json_field_bool(o, key, out, NULL, 0) < 0 ? -EPROTO : 0;
}

/* A string field, NULL when absent or null. */
static int get_str(json_object *o, const char *key, const char **out)
{
        *out = NULL;
        return json_field_str(o, key, out, NULL, 0) < 0 ? -EPROTO : 0;
}

static bool name_valid(const char *s)
{
        return s && snap_name_valid(s);
}

/* "maj:min", decimal, as the kernel prints a device. */
static int parse_dev(const char *s, uint64_t *out)
{
        unsigned long maj, min;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EPROTO;
        errno = 0;
        maj = strtoul(s, &end, 10);
        if (errno || *end != ':' || end[1] < '0' || end[1] > '9' || maj > 0xfffff)
                return -EPROTO;
        min = strtoul(end + 1, &end, 10);
        if (errno || *end || min > 0xfffff)
                return -EPROTO;
        *out = makedev((unsigned)maj, (unsigned)min);
        return 0;
}

/* An id that may be null (a scope without a group, an until-pid): 1 and *out when there, 0
 * when absent or null, -EPROTO. */
static int get_id(json_object *o, const char *key, uint64_t max, uint64_t *out)
{
        int r = json_field_uint(o, key, max, out, NULL, 0);

        return r < 0 ? -EPROTO : r;
}

/* The scope's name, view and device. */
static int scope_place(json_object *o, struct snapfs_scope *out)
{
        const char *name, *view, *dev;

        if (get_str(o, "name", &name) < 0 || !name_valid(name) || get_str(o, "view", &view) < 0 ||
            !view || view[0] != '/' || strlen(view) >= PATH_MAX || get_str(o, "dev", &dev) < 0)
                return -EPROTO;
        /* dev is null while the view is not mounted (unmounted from outside): the scope is
         * there, unserved. Absent is no scope of the protocol's. */
        if (!dev && !json_object_object_get_ex(o, "dev", NULL))
                return -EPROTO;
        if (!dev)
                out->flags |= SNAPFS_SCOPE_UNMOUNTED;
        else if (parse_dev(dev, &out->dev) < 0)
                return -EPROTO;
        strcpy(out->name, name);
        out->view = strdup(view);
        return out->view ? 0 : -ENOMEM;
}

/* Who the scope's users are: its uids, its group. */
static int scope_users(json_object *o, struct snapfs_scope *out)
{
        json_object *uids = NULL;
        uint64_t gid;
        size_t n;
        int r;

        if (json_field_of(o, "uids", json_type_array, &uids, NULL, 0) < 0)
                return -EPROTO;
        n = uids ? json_object_array_length(uids) : 0;
        if (n && !(out->uids = calloc(n, sizeof(*out->uids))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *u = json_object_array_get_idx(uids, i);
                int64_t x = json_object_get_int64(u);
                if (!json_object_is_type(u, json_type_int) || x < 0 || x >= UINT32_MAX)
                        return -EPROTO;
                out->uids[out->n_uids++] = (uint32_t)x;
        }
        if ((r = get_id(o, "gid", UINT32_MAX - 1, &gid)) == 1) {
                out->flags |= SNAPFS_SCOPE_GID;
                out->gid = (uint32_t)gid;
        }
        return r < 0 ? r : 0;
}

/* Whether it publishes, and the process it is tied to. */
static int scope_ties(json_object *o, struct snapfs_scope *out)
{
        bool publish = false;
        uint64_t pid;
        int r;

        if (get_bool(o, "publish", &publish) < 0)
                return -EPROTO;
        if (publish)
                out->flags |= SNAPFS_SCOPE_PUBLISH;
        if ((r = get_id(o, "until_pid", INT32_MAX, &pid)) == 1) {
                out->flags |= SNAPFS_SCOPE_UNTIL_PID;
                out->until_pid = (int32_t)pid;
        }
        return r < 0 ? r : 0;
}

/* The numbers of the object under key (absent or null: none), each into its place. */
struct number {
        const char *key;
        uint64_t *out;
};

static int numbers(json_object *o, const char *key, const struct number *v, size_t n)
{
        json_object *sub = NULL;

        if (json_field_of(o, key, json_type_object, &sub, NULL, 0) < 0)
                return -EPROTO;
        for (size_t i = 0; sub && i < n; i++)
                if (get_uint(sub, v[i].key, UINT64_MAX, v[i].out) < 0)
                        return -EPROTO;
        return 0;
}

/* Its limits, its usage against them, how many grants it has. */
static int scope_numbers(json_object *o, struct snapfs_scope *out)
{
        const struct number limits[] = {
                { "max_snapshots", &out->limits.max_snapshots },
                { "max_bytes", &out->limits.max_bytes },
                { "max_staging", &out->limits.max_staging },
                { "max_staging_bytes", &out->limits.max_staging_bytes },
                { "min_bytes", &out->min_bytes },
        };
        const struct number usage[] = {
                { "snapshots", &out->usage.snapshots },
                { "bytes", &out->usage.bytes },
                { "staging", &out->usage.staging },
                { "staging_bytes", &out->usage.staging_bytes },
        };

        if (numbers(o, "limits", limits, ARRAY_SIZE(limits)) < 0 ||
            numbers(o, "usage", usage, ARRAY_SIZE(usage)) < 0)
                return -EPROTO;
        return get_uint(o, "grants", UINT64_MAX, &out->n_grants);
}

int sfc_scope_from_json(json_object *o, struct snapfs_scope *out)
{
        int r;

        memset(out, 0, sizeof(*out));
        if (!json_object_is_type(o, json_type_object))
                return -EPROTO;
        r = scope_place(o, out);
        if (r == 0)
                r = scope_users(o, out);
        if (r == 0)
                r = scope_ties(o, out);
        if (r == 0)
                r = scope_numbers(o, out);
        if (r < 0)
                snapfs_scope_free(out);
        return r;
}

int sfc_grant_from_json(json_object *o, struct snapfs_grant *out)
{
        const char *hex, *entry;
        struct snap_digest d;

        memset(out, 0, sizeof(*out));
        if (!json_object_is_type(o, json_type_object) || get_str(o, "sha256", &hex) < 0 ||
            !hex || !snap_is_digest_name(hex) ||
            snap_digest_from_hex(hex, SNAP_DIGEST_HEX_LEN, &d) < 0 ||
            get_str(o, "entry", &entry) < 0 || (entry && !name_valid(entry)) ||
            !field(o, "size") || get_uint(o, "size", UINT64_MAX, &out->size) < 0 ||
            !field(o, "ino") || get_uint(o, "ino", UINT64_MAX, &out->ino) < 0)
                return -EPROTO;
        memcpy(out->sha256, d.bytes, sizeof(out->sha256));
        if (entry)
                strcpy(out->entry, entry);
        return 0;
}

void snapfs_scope_free(struct snapfs_scope *s)
{
        if (!s)
                return;
        free(s->view);
        free(s->uids);
        memset(s, 0, sizeof(*s));
}

void snapfs_scopes_free(struct snapfs_scope *v, size_t n)
{
        if (!v)
                return;
        for (size_t i = 0; i < n; i++)
                snapfs_scope_free(&v[i]);
        free(v);
}

/* ---- requests ---- */

static int add(json_object *o, const char *key, json_object *v)
{
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_limit(json_object *limits, const char *key, uint64_t v)
{
        return v ? add(limits, key, json_object_new_uint64(v)) : 0;
}

static json_object *request(const char *op)
{
        json_object *o = json_object_new_object();

        if (o && add(o, "op", json_object_new_string(op)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* {op, name}: a request about one scope. */
static json_object *named_request(const char *op, const char *name)
{
        json_object *o = request(op);

        if (o && add(o, "name", json_object_new_string(name)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static int bad_name(struct snapfs_report *why, const char *what, const char *s)
{
        return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                  "%s %s: 1-%d of [A-Za-z0-9._-], not starting with '.'",
                                  s ? "not a valid" : "no", what, SNAPFS_NAME_MAX);
}

int sfc_scope_create_request(const struct snapfs_scope_spec *spec, int32_t client_pid,
                             json_object **out, struct snapfs_report *why)
{
        _cleanup_json_ json_object *o = NULL;
        json_object *limits, *uids;

        *out = NULL;
        if (!spec)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no scope to create");
        if (!name_valid(spec->name))
                return bad_name(why, "scope name", spec->name);
        /* The daemon resolves the view in its own mount namespace: a relative path would name
         * a directory relative to wherever the daemon runs. */
        if (!spec->view || spec->view[0] != '/')
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "the view must be an absolute path");
        if (spec->n_uids && !spec->uids)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no uids");
        if (!sfc_reserved_zero(spec->reserved, ARRAY_SIZE(spec->reserved)))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "the scope spec's reserved fields are not zero");
        if ((spec->flags & SNAPFS_SCOPE_UNTIL_PID) && spec->until_pid <= 0)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "until_pid must be a process id (above 0)");
        if (spec->flags & ~(unsigned)(SNAPFS_SCOPE_GID | SNAPFS_SCOPE_PUBLISH |
                                      SNAPFS_SCOPE_UNTIL_PID))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "unknown scope flags %#x", spec->flags);
        for (size_t i = 0; i < spec->n_uids; i++)
                if (spec->uids[i] == UINT32_MAX)
                        return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                                  "uid %" PRIu32 " names no user", spec->uids[i]);
        if ((spec->flags & SNAPFS_SCOPE_GID) && spec->gid == UINT32_MAX)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "gid %" PRIu32 " names no group", spec->gid);

        o = request("scope-create");
        if (!o || add(o, "name", json_object_new_string(spec->name)) < 0 ||
            add(o, "view", json_object_new_string(spec->view)) < 0 ||
            add(o, "publish", json_object_new_boolean(!!(spec->flags & SNAPFS_SCOPE_PUBLISH))) < 0)
                return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
        if (spec->n_uids) {
                if (add(o, "uids", uids = json_object_new_array()) < 0)
                        return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
                for (size_t i = 0; i < spec->n_uids; i++)
                        if (json_object_array_add(uids, json_object_new_int64(spec->uids[i])) < 0)
                                return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
        }
        if (((spec->flags & SNAPFS_SCOPE_GID) &&
             add(o, "gid", json_object_new_int64(spec->gid)) < 0) ||
            /* The pid the kernel stamps on the request's write goes with until_pid: the daemon
             * compares the two (docs/design.md, "A scope"). */
            ((spec->flags & SNAPFS_SCOPE_UNTIL_PID) &&
             (add(o, "until_pid", json_object_new_int(spec->until_pid)) < 0 ||
              add(o, "client_pid", json_object_new_int(client_pid)) < 0)) ||
            add(o, "limits", limits = json_object_new_object()) < 0 ||
            add_limit(limits, "max_snapshots", spec->limits.max_snapshots) < 0 ||
            add_limit(limits, "max_bytes", spec->limits.max_bytes) < 0 ||
            add_limit(limits, "max_staging", spec->limits.max_staging) < 0 ||
            add_limit(limits, "max_staging_bytes", spec->limits.max_staging_bytes) < 0 ||
            add_limit(limits, "min_bytes", spec->min_bytes) < 0)
                return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
        *out = TAKE_PTR(o);
        return 0;
}

/* ---- the calls ---- */

/* Judges mount, sends request (taken over), and hands back the reply (json_object_put it). */
static int call(const char *mount, json_object *req, const struct snapfs_options *opts,
                json_object **reply, struct snapfs_report *why)
{
        _cleanup_json_ json_object *o = req;
        struct sfc_mnt m = SFC_MNT_INIT;
        int r;

        *reply = NULL;
        if (!o)
                return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
        r = sfc_mnt_check(mount, opts, &m, why);
        if (r < 0)
                return r;
        r = sfc_mnt_control(&m, o, reply, why);
        sfc_mnt_close(&m);
        if (r < 0) {
                json_object_put(*reply);
                *reply = NULL;
        }
        return r;
}

static int bad_reply(struct snapfs_report *why, int r, const char *what)
{
        if (r == -ENOMEM)
                return sfc_report_fail(why, r, "reply", "out of memory");
        return sfc_report_fail(why, -EPROTO, "reply",
                                  "the daemon's reply has no valid %s", what);
}

/* call, and the scope its reply holds: 0 with *reply and *s (snapfs_scope_free), or the
 * refusal. */
static int call_for_scope(const char *mount, json_object *req, const struct snapfs_options *opts,
                          json_object **reply, struct snapfs_scope *s, struct snapfs_report *why)
{
        int r = call(mount, req, opts, reply, why);

        if (r < 0)
                return r;
        r = sfc_scope_from_json(field(*reply, "scope"), s);
        return r < 0 ? bad_reply(why, r, "scope") : 0;
}

int snapfs_scope_create(const char *mount, const struct snapfs_scope_spec *spec,
                        const struct snapfs_options *opts, struct snapfs_scope *out,
                        struct snapfs_report *why)
{
        _cleanup_json_ json_object *reply = NULL;
        json_object *req = NULL;
        struct snapfs_scope s;
        int r;

        sfc_report_reset(why);
        if (out)
                memset(out, 0, sizeof(*out));
        /* The id the kernel stamps on the write that carries the request: the calling
         * thread's, in the daemon's pid namespace. The daemon compares the two, so a pid given
         * from another pid namespace (where it names another process) is refused. */
        r = sfc_scope_create_request(spec, (int32_t)gettid(), &req, why);
        if (r < 0)
                return r;
        r = call_for_scope(mount, req, opts, &reply, &s, why);
        if (r < 0)
                return r;
        if (out)
                *out = s;
        else
                snapfs_scope_free(&s);
        return 0;
}

int snapfs_scope_list(const char *mount, const struct snapfs_options *opts,
                      struct snapfs_scope **out, size_t *n, struct snapfs_report *why)
{
        _cleanup_json_ json_object *reply = NULL;
        struct snapfs_scope *v;
        json_object *list;
        size_t len;
        int r;

        sfc_report_reset(why);
        if (!out || !n)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no room for the list");
        *out = NULL;
        *n = 0;
        r = call(mount, request("scope-list"), opts, &reply, why);
        if (r < 0)
                return r;
        list = field(reply, "scopes");
        if (!json_object_is_type(list, json_type_array))
                return bad_reply(why, -EPROTO, "scopes list");
        len = json_object_array_length(list);
        v = calloc(len ? len : 1, sizeof(*v));
        if (!v)
                return sfc_report_fail(why, -ENOMEM, "reply", "out of memory");
        for (size_t i = 0; i < len; i++) {
                r = sfc_scope_from_json(json_object_array_get_idx(list, i), &v[i]);
                if (r < 0) {
                        snapfs_scopes_free(v, i);
                        return bad_reply(why, r, "scope");
                }
        }
        *out = v;
        *n = len;
        return 0;
}

int snapfs_scope_show(const char *mount, const char *name, const struct snapfs_options *opts,
                      struct snapfs_scope *out, struct snapfs_grant **grants, size_t *n_grants,
                      struct snapfs_report *why)
{
        _cleanup_json_ json_object *reply = NULL;
        json_object *req, *list = NULL;
        struct snapfs_grant *g = NULL;
        struct snapfs_scope s;
        size_t len = 0;
        int r;

        sfc_report_reset(why);
        if (out)
                memset(out, 0, sizeof(*out));
        if (grants)
                *grants = NULL;
        if (n_grants)
                *n_grants = 0;
        if (!out || (grants && !n_grants))
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no room for the scope");
        if (!name_valid(name))
                return bad_name(why, "scope name", name);
        req = named_request("scope-show", name);
        r = call_for_scope(mount, req, opts, &reply, &s, why);
        if (r < 0)
                return r;
        if (grants) {
                list = field(reply, "grants");
                if (!json_object_is_type(list, json_type_array)) {
                        snapfs_scope_free(&s);
                        return bad_reply(why, -EPROTO, "grants list");
                }
                len = json_object_array_length(list);
                g = calloc(len ? len : 1, sizeof(*g));
                if (!g) {
                        snapfs_scope_free(&s);
                        return sfc_report_fail(why, -ENOMEM, "reply", "out of memory");
                }
                for (size_t i = 0; i < len; i++)
                        if (sfc_grant_from_json(json_object_array_get_idx(list, i), &g[i]) < 0) {
                                free(g);
                                snapfs_scope_free(&s);
                                return bad_reply(why, -EPROTO, "grant");
                        }
                *grants = g;
                *n_grants = len;
        }
        *out = s;
        return 0;
}

int snapfs_scope_remove(const char *mount, const char *name, const struct snapfs_options *opts,
                        struct snapfs_report *why)
{
        _cleanup_json_ json_object *reply = NULL;
        json_object *req;

        sfc_report_reset(why);
        if (!name_valid(name))
                return bad_name(why, "scope name", name);
        req = named_request("scope-remove", name);
        return call(mount, req, opts, &reply, why);
}

/* {op, scope, sha256?, entry?}: the request of grant and revoke. */
static int grant_request(const char *op, const char *scope, const char *sha256,
                         const char *entry, json_object **out, struct snapfs_report *why)
{
        _cleanup_json_ json_object *o = NULL;

        *out = NULL;
        if (!name_valid(scope))
                return bad_name(why, "scope name", scope);
        if (sha256 && !snap_is_digest_name(sha256))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "not a snapshot's digest (64 lowercase hex characters)");
        /* The daemon's grammar, refused before asking (snapshot/name.h): an entry is a name
         * in the view beside the granted digests, and one shaped like a digest in any case
         * would make a name of the view mean two things; one starting with '-' is an option
         * to the next tool that meets it. */
        if (entry && !snap_entry_name_valid(entry))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "not a valid entry name: " SNAP_ENTRY_NAME_RULE);
        o = request(op);
        if (!o || add(o, "scope", json_object_new_string(scope)) < 0 ||
            (sha256 && add(o, "sha256", json_object_new_string(sha256)) < 0) ||
            (entry && add(o, "entry", json_object_new_string(entry)) < 0))
                return sfc_report_fail(why, -ENOMEM, "control", "out of memory");
        *out = TAKE_PTR(o);
        return 0;
}

int snapfs_grant(const char *mount, const char *scope, const char *sha256, const char *entry,
                 const struct snapfs_options *opts, struct snapfs_grant *out,
                 struct snapfs_report *why)
{
        _cleanup_json_ json_object *reply = NULL;
        json_object *req;
        struct snapfs_grant g;
        int r;

        sfc_report_reset(why);
        if (out)
                memset(out, 0, sizeof(*out));
        if (!sha256)
                return sfc_report_fail(why, -EINVAL, "invalid-argument", "no digest to grant");
        r = grant_request("grant", scope, sha256, entry, &req, why);
        if (r < 0)
                return r;
        r = call(mount, req, opts, &reply, why);
        if (r < 0)
                return r;
        if (sfc_grant_from_json(field(reply, "grant"), &g) < 0)
                return bad_reply(why, -EPROTO, "grant");
        /* The daemon granted what was asked, or its reply is not to be believed. */
        if (strcmp(g.entry, entry ? entry : "") != 0) {
                return sfc_report_fail(why, -EPROTO, "reply",
                                          "the daemon's reply names another grant than the one "
                                          "asked for");
        }
        {
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                struct snap_digest d;
                memcpy(d.bytes, g.sha256, sizeof(d.bytes));
                snap_digest_to_hex(&d, hex);
                if (strcmp(hex, sha256) != 0)
                        return sfc_report_fail(why, -EPROTO, "reply",
                                                  "the daemon's reply names another grant than "
                                                  "the one asked for");
        }
        if (out)
                *out = g;
        return 0;
}

int snapfs_revoke(const char *mount, const char *scope, const char *sha256, const char *entry,
                  const struct snapfs_options *opts, struct snapfs_report *why)
{
        _cleanup_json_ json_object *reply = NULL;
        json_object *req;
        int r;

        sfc_report_reset(why);
        if (!sha256 == !entry)
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                          "revoke takes a digest or an entry, exactly one");
        r = grant_request("revoke", scope, sha256, entry, &req, why);
        if (r < 0)
                return r;
        return call(mount, req, opts, &reply, why);
}
