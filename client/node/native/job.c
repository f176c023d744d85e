/* SPDX-License-Identifier: MIT */
/* Asynchronous jobs and value conversions of the snapfs addon (job.h). */
#include "client/node/native/job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/hex.h"

/* A JavaScript number holds integers exactly up to 2^53: past that a size, inode or uid would
 * silently become another one. */
#define EXACT_MAX (UINT64_C(1) << 53)

struct job *job_new(napi_env env)
{
        struct job *j = calloc(1, sizeof(*j));

        if (!j) {
                napi_throw_error(env, "ENOMEM", "snapfs: out of memory");
                return NULL;
        }
        j->fd = -1;
        return j;
}

void job_free(napi_env env, struct job *j)
{
        if (!j)
                return;
        if (j->data_ref)
                napi_delete_reference(env, j->data_ref);
        if (j->fd >= 0)
                close(j->fd);
        free(j->mount);
        free(j->name);
        free(j->text);
        free(j->entry);
        free(j->scope);
        free(j->uids);
        free(j->bindings);
        snapfs_scope_free(&j->scope_out);
        snapfs_scopes_free(j->scopes, j->scopes ? j->n : 0);
        snapfs_free(j->grants);
        free(j->described);
        free(j->seen);
        if (j->reply) {
                /* A control reply may carry what the daemon said of a scope: not left behind. */
                memset(j->reply, 0, strlen(j->reply));
                snapfs_free(j->reply);
        }
        free(j);
}

static void execute(napi_env env, void *data)
{
        struct job *j = data;

        (void)env;
        j->rc = j->run(j);
}

static void complete(napi_env env, napi_status status, void *data)
{
        struct job *j = data;
        napi_value v = NULL;

        if (status == napi_ok && j->rc >= 0) {
                v = j->done(env, j);
                if (v) {
                        napi_resolve_deferred(env, j->deferred, v);
                        goto out;
                }
        }
        if (status != napi_ok)
                j->rc = -ECANCELED;
        if (j->rc >= 0)
                /* done() failed: a JavaScript exception is pending, and it is the reason. */
                napi_get_and_clear_last_exception(env, &v);
        else {
                v = make_refusal(env, j->rc, &j->why);
                /* A refusal by the daemon on the control channel comes with its reply. */
                if (v && j->reply)
                        set_property(env, v, "reply", make_string(env, j->reply));
        }
        if (!v)
                napi_get_null(env, &v);
        napi_reject_deferred(env, j->deferred, v);
out:
        napi_delete_async_work(env, j->work);
        job_free(env, j);
}

napi_value job_queue(napi_env env, struct job *j, const char *what)
{
        napi_value name, promise;

        if (napi_create_promise(env, &j->deferred, &promise) != napi_ok) {
                job_free(env, j);
                return NULL;
        }
        if (napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &name) == napi_ok &&
            napi_create_async_work(env, NULL, name, execute, complete, j, &j->work) == napi_ok) {
                if (napi_queue_async_work(env, j->work) == napi_ok)
                        return promise;
                napi_delete_async_work(env, j->work);
        }
        napi_reject_deferred(env, j->deferred, make_refusal(env, -ENOMEM, NULL));
        job_free(env, j);
        return promise;
}

static bool type_error(napi_env env, const char *what, const char *expected)
{
        char msg[160];

        snprintf(msg, sizeof(msg), "snapfs: %s must be %s", what, expected);
        napi_throw_type_error(env, "EINVAL", msg);
        return false;
}

static bool is_nullish(napi_env env, napi_value v)
{
        napi_valuetype t;

        return !v || (napi_typeof(env, v, &t) == napi_ok &&
                      (t == napi_null || t == napi_undefined));
}

bool arg_string(napi_env env, napi_value v, bool nullable, char **out, const char *what)
{
        size_t len;
        char *s;

        *out = NULL;
        if (is_nullish(env, v))
                return nullable ? true : type_error(env, what, "a string");
        if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok)
                return type_error(env, what, "a string");
        s = malloc(len + 1);
        if (!s) {
                napi_throw_error(env, "ENOMEM", "snapfs: out of memory");
                return false;
        }
        napi_get_value_string_utf8(env, v, s, len + 1, &len);
        /* A NUL inside would cut the path the library sees short of the one the caller
         * named. */
        if (strlen(s) != len) {
                free(s);
                return type_error(env, what, "a string without NUL characters");
        }
        *out = s;
        return true;
}

bool arg_u64(napi_env env, napi_value v, uint64_t max, uint64_t *out, const char *what)
{
        double d;

        if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0) || d != (double)(uint64_t)d ||
            (uint64_t)d > max || (uint64_t)d >= EXACT_MAX)
                return type_error(env, what, "a non-negative integer in range");
        *out = (uint64_t)d;
        return true;
}

static bool get(napi_env env, napi_value obj, const char *key, napi_value *out)
{
        return napi_get_named_property(env, obj, key, out) == napi_ok;
}

/* { flags, owner, maxSize }: the TypeScript side turned the trust options into these. */
bool arg_options(napi_env env, napi_value v, struct snapfs_options *out)
{
        napi_value f, o, m;
        uint64_t flags, owner, max;

        memset(out, 0, sizeof(*out));
        if (!get(env, v, "flags", &f) || !get(env, v, "owner", &o) || !get(env, v, "maxSize", &m))
                return type_error(env, "options", "an object");
        if (!arg_u64(env, f, UINT32_MAX, &flags, "options.flags") ||
            !arg_u64(env, o, UINT32_MAX - 1, &owner, "options.owner") ||
            !arg_u64(env, m, UINT64_MAX, &max, "options.maxSize"))
                return false;
        out->flags = (unsigned)flags;
        out->owner = (uint32_t)owner;
        out->max_size = max;
        return true;
}

/* A binding's text, parsed by the library's strict parser. */
bool arg_binding(napi_env env, napi_value v, struct snapfs_binding *out)
{
        char *text = NULL;
        int r;

        if (!arg_string(env, v, false, &text, "binding"))
                return false;
        r = snapfs_binding_parse(text, out);
        free(text);
        if (r < 0) {
                struct snapfs_report why = { .error = r, .n_reasons = 1 };
                snprintf(why.reasons[0].code, sizeof(why.reasons[0].code), "invalid-argument");
                snprintf(why.reasons[0].message, sizeof(why.reasons[0].message),
                         "not a binding: expected sha256=<hex> size=<n> dev=<major>:<minor> "
                         "ino=<n>");
                napi_throw(env, make_refusal(env, r, &why));
                return false;
        }
        return true;
}

napi_value make_null(napi_env env)
{
        napi_value v = NULL;

        napi_get_null(env, &v);
        return v;
}

napi_value make_string(napi_env env, const char *s)
{
        napi_value v = NULL;

        if (!s)
                return make_null(env);
        napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
        return v;
}

napi_value make_number(napi_env env, uint64_t n)
{
        napi_value v = NULL;

        if (n >= EXACT_MAX) {
                napi_throw_range_error(env, "ERANGE", "snapfs: a value past 2^53");
                return NULL;
        }
        napi_create_double(env, (double)n, &v);
        return v;
}

napi_value make_bool(napi_env env, bool b)
{
        napi_value v = NULL;

        napi_get_boolean(env, b, &v);
        return v;
}

void set_property(napi_env env, napi_value obj, const char *key, napi_value v)
{
        if (obj && v)
                napi_set_named_property(env, obj, key, v);
}

static const char *kind_name(int kind)
{
        switch (kind) {
        case SNAPFS_KIND_CONTENT:
                return "content";
        case SNAPFS_KIND_SIGNATURE:
                return "signature";
        case SNAPFS_KIND_MANIFEST:
                return "manifest";
        }
        return NULL;
}

napi_value make_snapshot(napi_env env, const struct snapfs_binding *b,
                         const struct snapfs_snapshot *s, bool mounted)
{
        char hex[2 * SNAPFS_DIGEST_LEN + 1], dev[32], when[32], text[SNAPFS_BINDING_TEXT_MAX];
        napi_value o;

        if (napi_create_object(env, &o) != napi_ok)
                return NULL;
        hex_encode(b->sha256, SNAPFS_DIGEST_LEN, hex);
        snprintf(dev, sizeof(dev), "%u:%u", major(b->dev), minor(b->dev));
        if (snapfs_binding_format(b, text, sizeof(text)) < 0)
                text[0] = '\0';
        if (s) {
                time_t t = (time_t)s->published_sec;
                struct tm tm;
                if (!gmtime_r(&t, &tm) || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ",
                                                   &tm) == 0)
                        snprintf(when, sizeof(when), "%" PRId64, s->published_sec);
        }
        /* In the order every --json prints them. */
        set_property(env, o, "sha256", make_string(env, hex));
        set_property(env, o, "size", make_number(env, b->size));
        set_property(env, o, "dev", mounted ? make_string(env, dev) : make_null(env));
        set_property(env, o, "ino", make_number(env, b->ino));
        set_property(env, o, "name", make_string(env, s && s->name[0] ? s->name : NULL));
        set_property(env, o, "published", make_string(env, s ? when : NULL));
        set_property(env, o, "publisher", s ? make_number(env, s->publisher) : make_null(env));
        set_property(env, o, "binding", make_string(env, mounted ? text : NULL));
        set_property(env, o, "kind", make_string(env, s ? kind_name(s->kind) : NULL));
        return o;
}

static napi_value limit(napi_env env, uint64_t v)
{
        return v ? make_number(env, v) : make_null(env);
}

napi_value make_scope(napi_env env, const struct snapfs_scope *s)
{
        bool mounted = !(s->flags & SNAPFS_SCOPE_UNMOUNTED);
        napi_value o, uids, limits, usage;
        char dev[32];

        if (napi_create_object(env, &o) != napi_ok || napi_create_array(env, &uids) != napi_ok ||
            napi_create_object(env, &limits) != napi_ok || napi_create_object(env, &usage) != napi_ok)
                return NULL;
        snprintf(dev, sizeof(dev), "%u:%u", major(s->dev), minor(s->dev));
        for (size_t i = 0; i < s->n_uids; i++)
                napi_set_element(env, uids, (uint32_t)i, make_number(env, s->uids[i]));
        set_property(env, limits, "max_snapshots", limit(env, s->limits.max_snapshots));
        set_property(env, limits, "max_bytes", limit(env, s->limits.max_bytes));
        set_property(env, limits, "max_staging", limit(env, s->limits.max_staging));
        set_property(env, limits, "max_staging_bytes", limit(env, s->limits.max_staging_bytes));
        set_property(env, limits, "min_bytes", limit(env, s->min_bytes));
        set_property(env, usage, "snapshots", make_number(env, s->usage.snapshots));
        set_property(env, usage, "bytes", make_number(env, s->usage.bytes));
        set_property(env, usage, "staging", make_number(env, s->usage.staging));
        set_property(env, usage, "staging_bytes", make_number(env, s->usage.staging_bytes));
        set_property(env, o, "name", make_string(env, s->name));
        set_property(env, o, "view", make_string(env, s->view ? s->view : ""));
        set_property(env, o, "dev", mounted ? make_string(env, dev) : make_null(env));
        set_property(env, o, "uids", uids);
        set_property(env, o, "gid", (s->flags & SNAPFS_SCOPE_GID) ? make_number(env, s->gid)
                                                          : make_null(env));
        set_property(env, o, "publish", make_bool(env, s->flags & SNAPFS_SCOPE_PUBLISH));
        set_property(env, o, "until_pid", (s->flags & SNAPFS_SCOPE_UNTIL_PID)
                                         ? make_number(env, (uint64_t)s->until_pid)
                                         : make_null(env));
        set_property(env, o, "limits", limits);
        set_property(env, o, "usage", usage);
        set_property(env, o, "grants", make_number(env, s->n_grants));
        set_property(env, o, "devNumber", mounted ? make_number(env, s->dev) : make_null(env));
        return o;
}

napi_value make_refusal(napi_env env, int rc, const struct snapfs_report *why)
{
        napi_value o, reasons;
        const char *name = strerrorname_np(-rc);
        unsigned n = why ? why->n_reasons : 0;

        if (napi_create_object(env, &o) != napi_ok || napi_create_array(env, &reasons) != napi_ok)
                return NULL;
        if (n > SNAPFS_REASONS_MAX)
                n = SNAPFS_REASONS_MAX;
        for (unsigned i = 0; i < n; i++) {
                napi_value r;
                if (napi_create_object(env, &r) != napi_ok)
                        return NULL;
                set_property(env, r, "code", make_string(env, why->reasons[i].code));
                set_property(env, r, "message", make_string(env, why->reasons[i].message));
                napi_set_element(env, reasons, i, r);
        }
        set_property(env, o, "errno", make_number(env, (uint64_t)-rc));
        set_property(env, o, "code", make_string(env, name ? name : "EIO"));
        set_property(env, o, "message", make_string(env, snapfs_strerror(rc)));
        set_property(env, o, "reasons", reasons);
        set_property(env, o, "dropped", make_number(env, why ? why->n_dropped : 0));
        return o;
}
