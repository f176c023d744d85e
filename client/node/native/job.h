/* SPDX-License-Identifier: MIT */
/* The Node-API side of the snapfs addon: one asynchronous job per libsnapfs call, and the
 * conversions between JavaScript values and libsnapfs's structs.
 *
 * Every libsnapfs call can block (a FUSE round trip to a daemon that may be slow or stalled,
 * a whole snapshot hashed), so none runs on the JavaScript thread: each call copies its
 * arguments into a struct job, runs in libuv's thread pool (run(), no JavaScript value
 * touched there), and settles its promise on the JavaScript thread (done()). */
#pragma once

#define NAPI_VERSION 8
#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/snapfs.h"

struct job {
        napi_async_work work;
        napi_deferred deferred;
        /* In the thread pool: the libsnapfs call. Returns what it returns (< 0: rejected). */
        int (*run)(struct job *);
        /* On the JavaScript thread, when run() returned >= 0: the promise's value. */
        napi_value (*done)(napi_env, struct job *);
        int rc;
        struct snapfs_report why;
        struct snapfs_options opts;

        /* Arguments, copied from JavaScript (NULL when not given). */
        char *mount, *name, *text, *entry, *scope;
        napi_ref data_ref; /* keeps a Buffer alive while run() reads it */
        const void *data;
        size_t len;
        int fd;
        int timeout_ms; /* waitEntry's: -1 for none */
        uint64_t mnt_id;
        struct snapfs_binding b;
        struct snapfs_scope_spec spec;
        uint32_t *uids;
        struct snapfs_binding *bindings; /* describe_view's input, n of them */
        unsigned flags;                  /* snapfs_remove's */

        /* Results. */
        struct snapfs_binding out_b;
        struct snapfs_snapshot snap;
        bool have_snap;
        struct snapfs_scope scope_out;
        struct snapfs_scope *scopes;
        size_t n;
        struct snapfs_grant grant_out;
        struct snapfs_grant *grants;
        struct snapfs_snapshot *described; /* n of them, with seen[] */
        unsigned *seen;
        bool seen_in_view; /* the scope's view was mounted when its grants were described */
        char *reply;
        char view[4096];
        size_t removed, kept;            /* snapfs_remove's counts */
};

/* A new job, or NULL with a JavaScript exception pending. */
struct job *job_new(napi_env env);

/* Queues j (run, then done or the rejection) and returns its promise; NULL, j freed and an
 * exception pending, when there is no promise to return. */
napi_value job_queue(napi_env env, struct job *j, const char *what);

/* Frees j and everything it holds (closes fd when >= 0 and not handed over). */
void job_free(napi_env env, struct job *j);

/* Argument readers: true, or false with a TypeError pending. A null or undefined value gives
 * NULL where allowed (nullable). */
bool arg_string(napi_env env, napi_value v, bool nullable, char **out, const char *what);
bool arg_u64(napi_env env, napi_value v, uint64_t max, uint64_t *out, const char *what);
bool arg_options(napi_env env, napi_value v, struct snapfs_options *out);
bool arg_binding(napi_env env, napi_value v, struct snapfs_binding *out);

/* Value makers (NULL on failure: a JavaScript exception is then pending). */
napi_value make_string(napi_env env, const char *s);      /* null for NULL */
napi_value make_number(napi_env env, uint64_t v);          /* exact up to 2^53 */
napi_value make_null(napi_env env);
napi_value make_bool(napi_env env, bool v);
void set_property(napi_env env, napi_value obj, const char *key, napi_value v);

/* The one snapshot object (docs/design.md, "One snapshot object") of a binding, with what
 * the daemon says of it when s is not NULL: sha256, size, dev, ino, name, published,
 * publisher, binding, and kind. mounted false: dev and binding null (a scope's view that is
 * not mounted). */
napi_value make_snapshot(napi_env env, const struct snapfs_binding *b,
                         const struct snapfs_snapshot *s, bool mounted);

/* A scope as `snapfs scope ls --json` prints it, with devNumber (its dev as a number) too. */
napi_value make_scope(napi_env env, const struct snapfs_scope *s);

/* The rejection value: { errno, code, message, reasons: [{code, message}], dropped }. */
napi_value make_refusal(napi_env env, int rc, const struct snapfs_report *why);
