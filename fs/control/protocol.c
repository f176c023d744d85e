/* SPDX-License-Identifier: MIT */
/* The control channel's protocol: a request parsed strictly (one JSON object, every field of
 * its type, no field the operation does not know: a misspelled "publish" must not go
 * unnoticed), dispatched to the registry, its reply built. */
#include "fs/control/protocol.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/config/options.h"
#include "fs/scopes/registry.h"
#include "fs/scopes/scopefile.h"
#include "fs/scopes/scopejson.h"
#include "fs/control/status.h"
#include "snapshot/digest.h"
#include "snapshot/oci-json.h"
#include "common/json.h"
#include "common/utf8.h"
#include "common/util.h"

#define COUNT_MAX (1ULL << 40)

/* A refusal before the registry: the errno and why. */
struct bad {
        int err;
        char text[256];
};

__attribute__((format(printf, 3, 4)))
static int refuse(struct bad *b, int err, const char *fmt, ...)
{
        va_list ap;

        b->err = err;
        va_start(ap, fmt);
        vsnprintf(b->text, sizeof(b->text), fmt, ap);
        va_end(ap);
        return -err;
}

/* Every key of o is one of keys (NULL-terminated). */
static int known_fields(json_object *o, const char *const *keys, struct bad *b)
{
        json_object_object_foreach(o, key, val) {
                bool known = false;
                (void)val;
                for (const char *const *k = keys; *k; k++)
                        known |= strcmp(key, *k) == 0;
                if (!known)
                        return refuse(b, EINVAL, "unknown field \"%s\"", key);
        }
        return 0;
}

/* A field common/json.h refused: its reason is in b already. */
static int field_refused(struct bad *b, int r)
{
        if (r < 0)
                b->err = EINVAL;
        return r;
}

/* A string field: *out (NULL when absent and not required). */
static int str_field(json_object *o, const char *key, bool required, const char **out,
                     struct bad *b)
{
        int r;

        *out = NULL;
        r = json_field_str(o, key, out, b->text, sizeof(b->text));
        if (r == 0 && required)
                return refuse(b, EINVAL, "\"%s\" is missing", key);
        return r < 0 ? field_refused(b, r) : 0;
}

/* An integer field in [min, max]: 1 and *out when present, 0 when absent (or null). */
static int int_field(json_object *o, const char *key, int64_t min, int64_t max, int64_t *out,
                     struct bad *b)
{
        return field_refused(b, json_field_int(o, key, min, max, out, b->text, sizeof(b->text)));
}

static int bool_field(json_object *o, const char *key, bool *out, struct bad *b)
{
        int r;

        *out = false;
        r = json_field_bool(o, key, out, b->text, sizeof(b->text));
        return r < 0 ? field_refused(b, r) : 0;
}

static int digest_field(json_object *o, const char *key, bool required, struct snap_digest *d,
                        bool *present, struct bad *b)
{
        const char *hex;
        int r = str_field(o, key, required, &hex, b);

        *present = false;
        if (r < 0 || !hex)
                return r;
        if (snap_digest_from_hex(hex, strlen(hex), d) < 0)
                return refuse(b, EINVAL, "\"%s\" is not 64 lowercase hex characters", key);
        *present = true;
        return 0;
}

/* One limit: an integer at least 1, or a string the daemon's value parsers take ("64M",
 * "4096"): the same grammar as snapfs mount's options. */
static int limit_field(json_object *o, const char *key, bool size, uint64_t *out, struct bad *b)
{
        json_object *v;
        int r;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (json_object_is_type(v, json_type_int)) {
                int64_t x = json_object_get_int64(v);
                if (x < 1 || (uint64_t)x > (size ? UINT64_MAX >> 2 : COUNT_MAX))
                        return refuse(b, EINVAL, "limits.%s is out of range", key);
                *out = (uint64_t)x;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return refuse(b, EINVAL, "limits.%s is not an integer or a size", key);
        /* The grammar of snapfs mount's options: one parser (common/values.h). */
        r = value_parse(size ? VALUE_SIZE : VALUE_COUNT, json_object_get_string(v), 1,
                        size ? UINT64_MAX >> 2 : COUNT_MAX, out);
        if (r < 0) {
                char why[160];
                value_error(size ? VALUE_SIZE : VALUE_COUNT, json_object_get_string(v), r, 1,
                            size ? UINT64_MAX >> 2 : COUNT_MAX, why, sizeof(why));
                return refuse(b, EINVAL, "limits.%s: %s", key, why);
        }
        return 0;
}

/* "limits": the keys of the scope file's one list of them (fs/scopes/scopefile.h), each in
 * the grammar of snapfs mount's options. */
static int parse_limits(json_object *req, struct sfs_scope_limits *l, struct bad *b)
{
        const char *keys[SFS_LIMIT_FIELDS + 1] = { NULL };
        json_object *o;
        int r;

        *l = (struct sfs_scope_limits){ 0 };
        if (!json_object_object_get_ex(req, "limits", &o) || json_object_is_type(o, json_type_null))
                return 0;
        if (!json_object_is_type(o, json_type_object))
                return refuse(b, EINVAL, "\"limits\" is not an object");
        for (size_t i = 0; i < SFS_LIMIT_FIELDS; i++)
                keys[i] = sfs_limit_fields[i].key;
        if ((r = known_fields(o, keys, b)) < 0)
                return r;
        for (size_t i = 0; i < SFS_LIMIT_FIELDS; i++)
                if ((r = limit_field(o, sfs_limit_fields[i].key, sfs_limit_fields[i].size,
                                     sfs_limit_at(l, i), b)) < 0)
                        return r;
        if (l->max_staging > UINT32_MAX)
                return refuse(b, EINVAL, "limits.max_staging is out of range");
        return 0;
}

static int parse_uids(json_object *req, struct value_uid_list *u, struct bad *b)
{
        json_object *a;

        *u = (struct value_uid_list){ .any = false };
        if (!json_object_object_get_ex(req, "uids", &a) || json_object_is_type(a, json_type_null))
                return 0;
        if (!json_object_is_type(a, json_type_array))
                return refuse(b, EINVAL, "\"uids\" is not an array");
        if (json_object_array_length(a) > VALUE_UID_LIST_MAX)
                return refuse(b, EINVAL, "\"uids\" names more than %d uids", VALUE_UID_LIST_MAX);
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *v = json_object_array_get_idx(a, i);
                int64_t uid;
                if (!json_object_is_type(v, json_type_int) ||
                    (uid = json_object_get_int64(v)) < 0 || uid >= UINT32_MAX)
                        return refuse(b, EINVAL, "\"uids\" holds something that is not a uid");
                if (!value_uid_list_has(u, (uid_t)uid))
                        u->uids[u->n++] = (uid_t)uid;
        }
        return 0;
}

/* ---- replies ---- */

static json_object *reply_new(int err, const char *text)
{
        json_object *o = json_object_new_object();
        _cleanup_free_ char *fixed = NULL, *hex = NULL;

        if (!o)
                return NULL;
        /* A message cut to its buffer can end inside a name's UTF-8 sequence: the reply stays
         * UTF-8 (strict readers of it fail on anything else), the cut byte U+FFFD. */
        if (err && text && utf8_fix(text, &fixed, &hex) == 1)
                text = fixed;
        json_object_object_add(o, "ok", json_object_new_boolean(err == 0));
        json_object_object_add(o, "error", err ? json_object_new_string(strerrorname_np(err))
                                               : json_object_new_null());
        json_object_object_add(o, "message", err ? json_object_new_string(text)
                                                 : json_object_new_null());
        return o;
}

/* ---- operations ---- */

struct ctx {
        struct sfs_registry *reg;
        const struct sfs_caller *c;
        json_object *req;
        json_object *reply; /* built by the operation on success */
        struct bad bad;
        struct sfs_msg msg;
};

static int op_scope_create(struct ctx *x)
{
        static const char *const keys[] = { "op", "name", "view", "uids", "gid", "publish",
                                            "until_pid", "client_pid", "limits", NULL };
        struct sfs_scope_request q = { 0 };
        struct sfs_scope_info scope;
        int64_t v;
        int r;

        if ((r = known_fields(x->req, keys, &x->bad)) < 0 ||
            (r = str_field(x->req, "name", true, &q.name, &x->bad)) < 0 ||
            (r = str_field(x->req, "view", true, &q.view, &x->bad)) < 0 ||
            (r = parse_uids(x->req, &q.uids, &x->bad)) < 0 ||
            (r = bool_field(x->req, "publish", &q.publish, &x->bad)) < 0 ||
            (r = parse_limits(x->req, &q.limits, &x->bad)) < 0)
                return r;
        if ((r = int_field(x->req, "gid", 0, UINT32_MAX - 1, &v, &x->bad)) < 0)
                return r;
        if (r == 1) {
                q.has_gid = true;
                q.gid = (gid_t)v;
        }
        if ((r = int_field(x->req, "until_pid", 1, INT32_MAX, &v, &x->bad)) < 0)
                return r;
        q.until_pid = r == 1 ? (pid_t)v : 0;
        if ((r = int_field(x->req, "client_pid", 1, INT32_MAX, &v, &x->bad)) < 0)
                return r;
        q.client_pid = r == 1 ? (pid_t)v : 0;
        if (q.until_pid && !q.client_pid)
                return refuse(&x->bad, EINVAL, "\"until_pid\" needs \"client_pid\", the "
                              "client's own getpid()");
        r = sfs_registry_create(x->reg, x->c, &q, &scope, &x->msg);
        if (r < 0)
                return r;
        r = json_add(x->reply, "scope", sfs_scope_info_json(&scope));
        sfs_scope_info_clear(&scope);
        return r;
}

/* An op that takes no field but "op" and answers with one object, what get makes of the
 * registry, under key. */
static int reply_with(struct ctx *x, const char *key,
                      int (*get)(struct sfs_registry *, struct json_object **))
{
        static const char *const keys[] = { "op", NULL };
        json_object *o = NULL;
        int r = known_fields(x->req, keys, &x->bad);

        if (r == 0)
                r = get(x->reg, &o);
        if (r < 0)
                return r;
        json_object_object_add(x->reply, key, o);
        return 0;
}

/* The registry's scopes as the control channel reports them. */
static int scopes_json(struct sfs_registry *reg, struct json_object **out)
{
        struct sfs_scope_info *v;
        size_t n;
        int r = sfs_registry_list(reg, &v, &n);

        if (r < 0)
                return r;
        *out = sfs_scope_infos_json(v, n);
        sfs_scope_infos_free(v, n);
        return *out ? 0 : -ENOMEM;
}

static int op_scope_list(struct ctx *x)
{
        return reply_with(x, "scopes", scopes_json);
}

static int op_scope_show(struct ctx *x)
{
        static const char *const keys[] = { "op", "name", NULL };
        struct sfs_scope_info scope;
        struct sfs_grant_info *grants;
        const char *name;
        size_t n;
        int r;

        if ((r = known_fields(x->req, keys, &x->bad)) < 0 ||
            (r = str_field(x->req, "name", true, &name, &x->bad)) < 0)
                return r;
        r = sfs_registry_show(x->reg, name, &scope, &grants, &n, &x->msg);
        if (r < 0)
                return r;
        r = json_add(x->reply, "scope", sfs_scope_info_json(&scope));
        if (r == 0)
                r = json_add(x->reply, "grants", sfs_grant_infos_json(grants, n));
        sfs_scope_info_clear(&scope);
        free(grants);
        return r;
}

static int op_scope_remove(struct ctx *x)
{
        static const char *const keys[] = { "op", "name", NULL };
        const char *name;
        int r;

        if ((r = known_fields(x->req, keys, &x->bad)) < 0 ||
            (r = str_field(x->req, "name", true, &name, &x->bad)) < 0)
                return r;
        return sfs_registry_remove(x->reg, x->c, name, &x->msg);
}

/* What grant and revoke name: the scope, the snapshot by its digest (sha256, which a grant
 * needs), the name of an entry in the scope's view. */
struct grant_req {
        const char *scope, *entry;
        struct snap_digest d;
        bool have;
};

static int grant_fields(struct ctx *x, bool need_digest, struct grant_req *g)
{
        static const char *const keys[] = { "op", "scope", "sha256", "entry", NULL };
        int r;

        if ((r = known_fields(x->req, keys, &x->bad)) < 0 ||
            (r = str_field(x->req, "scope", true, &g->scope, &x->bad)) < 0 ||
            (r = digest_field(x->req, "sha256", need_digest, &g->d, &g->have, &x->bad)) < 0 ||
            (r = str_field(x->req, "entry", false, &g->entry, &x->bad)) < 0)
                return r;
        return 0;
}

static int op_grant(struct ctx *x)
{
        struct sfs_grant_info grant;
        struct grant_req g;
        int r;

        if ((r = grant_fields(x, true, &g)) < 0 ||
            (r = sfs_registry_grant(x->reg, x->c, g.scope, &g.d, g.entry, &grant, &x->msg)) < 0)
                return r;
        return json_add(x->reply, "grant", sfs_grant_info_json(&grant));
}

static int op_revoke(struct ctx *x)
{
        struct grant_req g;
        int r = grant_fields(x, false, &g);

        if (r < 0)
                return r;
        if (g.have == (g.entry != NULL))
                return refuse(&x->bad, EINVAL, "revoke takes one of \"sha256\" and \"entry\"");
        return sfs_registry_revoke(x->reg, x->c, g.scope, g.have ? &g.d : NULL, g.entry, &x->msg);
}

static int op_status(struct ctx *x)
{
        return reply_with(x, "status", sfs_status_json);
}

static int op_metrics(struct ctx *x)
{
        static const char *const keys[] = { "op", "format", NULL };
        enum sfs_metrics_format fmt = SFS_METRICS_OPENMETRICS;
        const char *format;
        char *text;
        size_t len;
        int r;

        if ((r = known_fields(x->req, keys, &x->bad)) < 0 ||
            (r = str_field(x->req, "format", false, &format, &x->bad)) < 0)
                return r;
        if (format && strcmp(format, "prometheus") == 0)
                fmt = SFS_METRICS_PROMETHEUS;
        else if (format && strcmp(format, "openmetrics") != 0)
                return refuse(&x->bad, EINVAL, "\"format\" is \"openmetrics\" or \"prometheus\"");
        r = sfs_status_metrics(x->reg, fmt, &text, &len);
        if (r < 0)
                return r;
        json_object_object_add(x->reply, "format",
                               json_object_new_string(fmt == SFS_METRICS_PROMETHEUS ? "prometheus"
                                                                                     : "openmetrics"));
        json_object_object_add(x->reply, "text", json_object_new_string_len(text, (int)len));
        free(text);
        return 0;
}

/* The operations. */
static const struct {
        const char *name;
        int (*fn)(struct ctx *x);
} ops[] = {
        { "scope-create", op_scope_create },
        { "scope-list", op_scope_list },
        { "scope-show", op_scope_show },
        { "scope-remove", op_scope_remove },
        { "grant", op_grant },
        { "revoke", op_revoke },
        { "status", op_status },
        { "metrics", op_metrics },
};

int sfs_protocol_exec(void *reg, const struct sfs_caller *c, const char *req, size_t len,
                      char **reply, size_t *reply_len)
{
        struct ctx x = { .reg = reg, .c = c };
        const char *op = NULL, *text;
        json_object *out;
        int r = -EINVAL;

        if (len > INT32_MAX || memchr(req, '\0', len))
                return -EINVAL;
        /* The one strict parser (common/json.h, at the bound of a document): one object,
         * UTF-8, a bounded depth, nothing after it, and no key twice — json-c alone keeps the
         * last of two "op" keys, so {"op":"scope-list","op":"scope-remove",...} removed a
         * scope while a proxy that checked the first "op" saw a listing. */
        if (oci_json_parse(req, len, &x.req) < 0)
                return -EINVAL; /* nothing executed: the write itself fails */
        x.reply = reply_new(0, NULL);
        if (!x.reply) {
                json_object_put(x.req);
                return -ENOMEM;
        }
        if (str_field(x.req, "op", true, &op, &x.bad) == 0) {
                r = refuse(&x.bad, EINVAL, "unknown op \"%s\"", op);
                for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
                        if (strcmp(op, ops[i].name) == 0) {
                                x.bad = (struct bad){ 0 };
                                r = ops[i].fn(&x);
                                break;
                        }
        }
        if (r < 0) {
                /* The registry audits what it refuses; a request refused before it, here. */
                if (x.bad.err) {
                        const char *scope = NULL;
                        bool named_scope = op && (!strcmp(op, "grant") || !strcmp(op, "revoke"));
                        str_field(x.req, named_scope ? "scope" : "name", false, &scope,
                                  &(struct bad){ 0 });
                        sfs_registry_audit_refused(reg, c, op ? op : "control", scope, x.bad.err);
                }
                json_object_put(x.reply);
                x.reply = reply_new(-r, x.bad.err ? x.bad.text : x.msg.text);
        }
        out = x.reply;
        text = out ? json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE)
                   : NULL;
        *reply = text ? strdup(text) : NULL;
        *reply_len = *reply ? strlen(*reply) : 0;
        json_object_put(out);
        json_object_put(x.req);
        return *reply ? 0 : -ENOMEM;
}
