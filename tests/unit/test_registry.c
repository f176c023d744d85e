/* SPDX-License-Identifier: MIT */
/* fs/scopes/registry.c and fs/control/protocol.c without a mount: a fake view backend records what the
 * registry asks of it, a real --store in a temporary directory keeps what it persists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define _XOPEN_SOURCE_EXTENDED 1
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/store/ocistore.h"
#include "fs/control/protocol.h"
#include "fs/scopes/registry.h"
#include "tests/unit/testutil.h"
#include "tests/unit/treefix.h"
#include "common/util.h"

/* ---- a fake backend ---- */

struct sfs_view {
        char path[256];
};

struct fake {
        unsigned mounted, detached, shut, invalidated;
        char last_invalidated[80];
        int refuse_mount; /* an errno mount answers with, or 0 */
        size_t max_grants; /* a scope's most grants (sfs_scope_set_max_grants), or 0 */
        unsigned lingering; /* views of removed scopes still held open, as lingering says */
};

static int fake_mount(void *ctx, const struct sfs_view_request *req, struct sfs_tree *tree,
                      struct sfs_view **view, uint64_t *dev, char *msg, size_t msgsize)
{
        struct fake *f = ctx;
        if (f->max_grants)
                sfs_scope_set_max_grants(tree, f->max_grants);
        if (f->refuse_mount) {
                snprintf(msg, msgsize, "refused by the test");
                return -f->refuse_mount;
        }
        *view = calloc(1, sizeof(**view));
        assert_non_null(*view);
        snprintf((*view)->path, sizeof((*view)->path), "%s", req->path);
        *dev = 0x1000 + f->mounted++;
        return 0;
}

static void fake_detach(void *ctx, struct sfs_view *view, struct sfs_tree *tree)
{
        ((struct fake *)ctx)->detached++;
        sfs_tree_free(tree);
        free(view);
}

static void fake_invalidate(void *ctx, struct sfs_view *view, const char *name)
{
        struct fake *f = ctx;
        (void)view;
        f->invalidated++;
        snprintf(f->last_invalidated, sizeof(f->last_invalidated), "%s", name);
}

static void fake_invalidate_inode(void *ctx, struct sfs_view *view, uint64_t ino)
{
        (void)ctx, (void)view, (void)ino;
}

static bool fake_alive(void *ctx, struct sfs_view *view)
{
        (void)ctx, (void)view;
        return true;
}

static int fake_clear_stale(void *ctx, const char *path)
{
        (void)ctx, (void)path;
        return 0;
}

static unsigned fake_lingering(void *ctx, char *text, size_t size)
{
        struct fake *f = ctx;

        if (text && f->lingering)
                snprintf(text, size, "/held/view (1 open)");
        return f->lingering;
}

static void fake_shutdown(void *ctx, struct sfs_view *view)
{
        ((struct fake *)ctx)->shut++;
        free(view);
}

/* ---- the fixture ---- */

struct fx {
        struct tu_dir dir;
        struct fake fake;
        struct sfs_view_ops ops;
        struct sfs_ocistore *store;
        struct sfs_ocistore *runtime; /* --runtime-store: the scopes' files */
        struct sfs_tree *main;
        struct sfs_registry *reg;
        char store_path[300];
        char main_path[300]; /* never mounted: where a main mount would be */
        char runtime_path[64];        /* on /dev/shm, a tmpfs */
        char warned[4096];            /* the last start's warnings, one a line */
        unsigned max_scopes;          /* --max-scopes for the next start (0: the default) */
        bool no_runtime;              /* the next start without --runtime-store */
};

static const struct sfs_caller me_template = { .uid = 0, .gid = 0 };

static struct sfs_caller me(void)
{
        struct sfs_caller c = me_template;
        c.pid = getpid();
        return c;
}

static int on_restore(void *ctx, const struct snap_digest *d, void *data, size_t len,
                      const struct sfs_ocistore_meta *meta)
{
        return sfs_tree_restore(ctx, d, data, len, meta->title, meta->holders, meta->n_holders,
                                meta->unheld, &meta->created);
}

static void on_corrupt(void *ctx, const char *hex, int err)
{
        (void)ctx, (void)hex, (void)err;
}

static void on_warn(void *ctx, const char *hex, const char *what, int err)
{
        (void)ctx, (void)hex, (void)what, (void)err;
}

static void on_registry_warn(void *ctx, const char *msg)
{
        struct fx *f = ctx;
        size_t used = strlen(f->warned);

        snprintf(f->warned + used, sizeof(f->warned) - used, "%s\n", msg);
}

/* A main tree over --store at f->store_path (its snapshots served again), and a registry
 * with its scopes back (what could not come back in f->warned). */
static void start(struct fx *f)
{
        struct sfs_tree_config cfg = base_config();
        struct sfs_ocistore_hooks hooks = { on_restore, on_corrupt, on_warn, NULL };

        assert_int_equal(sfs_ocistore_open(f->store_path, 0, &f->store, NULL), 0);
        assert_int_equal(sfs_ocistore_open_runtime(f->runtime_path, f->store, 0, &f->runtime,
                                                   NULL),
                         0);
        cfg.ocistore = f->store;
        cfg.runtime = f->runtime;
        f->main = new_tree(&cfg);
        hooks.ctx = f->main;
        assert_int_equal(sfs_ocistore_load(f->store, 1 << 20, &hooks), 0);
        assert_int_equal(sfs_ocistore_load(f->runtime, 1 << 20, &hooks), 0);
        assert_int_equal(sfs_registry_new(&(struct sfs_registry_config){
                                                  .main = f->main,
                                                  .store = f->store,
                                                  .scope_store = f->no_runtime ? NULL
                                                                               : f->runtime,
                                                  .max_scopes = f->max_scopes,
                                                  .views = &f->ops,
                                                  .uid = getuid(),
                                                  .gid = getgid(),
                                                  .mountpoint = f->main_path,
                                                  .store_dir = f->store_path,
                                          },
                                          &f->reg),
                         0);
        f->warned[0] = '\0';
        assert_int_equal(sfs_registry_restore(f->reg, on_registry_warn, f), 0);
        assert_int_equal(sfs_registry_start(f->reg), 0);
}

static void stop(struct fx *f)
{
        sfs_registry_free(f->reg);
        sfs_ocistore_close(f->runtime);
        sfs_ocistore_close(f->store);
        sfs_tree_free(f->main);
        f->reg = NULL;
        f->runtime = NULL;
        f->store = NULL;
        f->main = NULL;
}

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(tu_dir_make(&f->dir), 0);
        snprintf(f->store_path, sizeof(f->store_path), "%s/store", f->dir.path);
        snprintf(f->main_path, sizeof(f->main_path), "%s/srv/mnt", f->dir.path);
        snprintf(f->runtime_path, sizeof(f->runtime_path), "/dev/shm/snapfs-unit-XXXXXX");
        assert_non_null(mkdtemp(f->runtime_path));
        f->ops = (struct sfs_view_ops){
                .mount = fake_mount,
                .detach = fake_detach,
                .invalidate = fake_invalidate,
                .invalidate_inode = fake_invalidate_inode,
                .alive = fake_alive,
                .clear_stale = fake_clear_stale,
                .shutdown = fake_shutdown,
                .lingering = fake_lingering,
                .ctx = &f->fake,
        };
        start(f);
        *state = f;
        return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        struct fx *f = *state;

        stop(f);
        nftw(f->dir.path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        nftw(f->runtime_path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* ---- requests, as the control channel takes them ---- */

/* Executes a request: its parsed reply (the caller puts it). */
__attribute__((format(printf, 2, 3)))
static json_object *exec_json(struct fx *f, const char *fmt, ...)
{
        const struct sfs_caller c = me();
        char req[2048], *reply = NULL;
        json_object *o;
        size_t len;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(req, sizeof(req), fmt, ap);
        va_end(ap);
        assert_int_equal(sfs_protocol_exec(f->reg, &c, req, strlen(req), &reply, &len), 0);
        o = json_tokener_parse(reply);
        assert_non_null(o);
        free(reply);
        return o;
}

/* The reply's "error" (NULL when ok), the reply put. */
static char *error_of(json_object *o)
{
        json_object *e;
        char *out = NULL;

        assert_true(json_object_object_get_ex(o, "error", &e));
        if (!json_object_is_type(e, json_type_null))
                out = strdup(json_object_get_string(e));
        json_object_put(o);
        return out;
}

#define assert_reply(f, want, ...)                                                             \
        do {                                                                                   \
                char *_e = error_of(exec_json(f, __VA_ARGS__));                                \
                if ((want) == NULL)                                                            \
                        assert_null(_e);                                                       \
                else                                                                           \
                        assert_string_equal(_e ? _e : "(ok)", (want));                         \
                free(_e);                                                                      \
        } while (0)

static void view_path(struct fx *f, const char *name, char out[PATH_MAX])
{
        snprintf(out, PATH_MAX, "%s/%s", f->dir.path, name);
}

static void create(struct fx *f, const char *name, const char *extra)
{
        char view[PATH_MAX];

        view_path(f, name, view);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"%s\",\"view\":\"%s\"%s}", name,
                     view, extra);
}

static void publish_main(struct fx *f, const char *text, char hex[SNAP_DIGEST_HEX_LEN + 1])
{
        assert_int_equal(publish(f->main, &root, "p", text, strlen(text), NULL), 0);
        hex_of(text, strlen(text), hex);
}

/* ---- tests ---- */

static void test_a_request_that_is_no_json_object_is_einval_and_does_nothing(void **state)
{
        struct fx *f = *state;
        const struct sfs_caller c = me();
        static const char *bad[] = { "", "nope", "[]", "{\"op\":\"scope-list\"} {}", "{\"op\":" };
        char *reply = NULL;
        size_t len;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfs_protocol_exec(f->reg, &c, bad[i], strlen(bad[i]), &reply,
                                                   &len),
                                 -EINVAL);
        /* A NUL inside: not the request it would seem to be. */
        assert_int_equal(sfs_protocol_exec(f->reg, &c, "{\"op\":\"scope-list\"}\0x", 21, &reply,
                                           &len),
                         -EINVAL);
        /* Beside them: the well-formed one, with white space after it. */
        assert_int_equal(sfs_protocol_exec(f->reg, &c, "{\"op\":\"scope-list\"}\n", 20, &reply,
                                           &len),
                         0);
        assert_string_equal(reply, "{\"ok\":true,\"error\":null,\"message\":null,\"scopes\":[]}");
        free(reply);
}

static void test_unknown_ops_fields_and_types_are_refused_in_the_reply(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX];

        view_path(f, "a", view);
        assert_reply(f, "EINVAL", "{\"op\":\"no-such\"}");
        assert_reply(f, "EINVAL", "{\"no-op\":1}");
        assert_reply(f, "EINVAL", "{\"op\":\"scope-list\",\"extra\":1}");
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                                  "\"publish\":\"yes\"}", view);
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                                  "\"until_pid\":1}", view); /* without client_pid */
        assert_reply(f, "EINVAL", "{\"op\":\"revoke\",\"scope\":\"a\"}");
        /* A limit above the daemon's own (--max-bytes 16K, --max-snapshots 8 here). */
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                                  "\"publish\":true,\"limits\":{\"max_bytes\":\"64K\"}}", view);
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                                  "\"limits\":{\"max_snapshots\":9}}", view);
        /* A view path that is not UTF-8 (a lone continuation byte, as JSON's \u escapes cannot
         * spell it: refused by the parser, the write itself EINVAL). */
        {
                const struct sfs_caller c = me();
                char req[PATH_MAX + 64], *reply = NULL;
                size_t len;
                int n = snprintf(req, sizeof(req), "{\"op\":\"scope-create\",\"name\":\"a\","
                                 "\"view\":\"%s\xff\"}", view);
                assert_int_equal(sfs_protocol_exec(f->reg, &c, req, (size_t)n, &reply, &len),
                                 -EINVAL);
        }
        assert_int_equal(f->fake.mounted, 0);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                              "\"publish\":true,\"limits\":{\"max_bytes\":\"16K\","
                              "\"max_snapshots\":8}}", view);
        assert_int_equal(f->fake.mounted, 1);
}

/* A scope's minimum: above its own max_bytes EINVAL; one the daemon cannot keep beside the
 * owner's reserve (1K of --max-bytes 16K here) and the other minimums ENOSPC; neither mounts
 * anything. */
static void test_a_minimum_that_cannot_be_kept_is_refused_before_anything_is_made(void **state)
{
        struct fx *f = *state;
        char a[PATH_MAX], b[PATH_MAX];

        view_path(f, "a", a);
        view_path(f, "b", b);
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                                  "\"limits\":{\"max_bytes\":\"4K\",\"min_bytes\":\"8K\"}}", a);
        assert_reply(f, "ENOSPC", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                                  "\"limits\":{\"max_bytes\":\"16K\",\"min_bytes\":\"16K\"}}", a);
        assert_int_equal(f->fake.mounted, 0);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                              "\"limits\":{\"max_bytes\":\"16K\",\"min_bytes\":\"15K\"}}", a);
        assert_int_equal(f->fake.mounted, 1);
        /* The rest is the owner's: not one byte more for another scope's minimum. */
        assert_reply(f, "ENOSPC", "{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"%s\","
                                  "\"limits\":{\"min_bytes\":1}}", b);
        assert_int_equal(f->fake.mounted, 1);
        /* a gone, its minimum is kept no more. */
        assert_reply(f, NULL, "{\"op\":\"scope-remove\",\"name\":\"a\"}");
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"%s\","
                              "\"limits\":{\"min_bytes\":1}}", b);
}

static void test_a_duplicate_key_is_einval_and_does_nothing(void **state)
{
        struct fx *f = *state;
        const struct sfs_caller c = me();
        static const char *bad[] = {
                /* The finding: the last "op" won, and the scope was removed. */
                "{\"op\":\"scope-list\",\"op\":\"scope-remove\",\"name\":\"a\"}",
                /* The same key spelled with an escape is the same key. */
                "{\"op\":\"scope-list\",\"\\u006fp\":\"scope-remove\",\"name\":\"a\"}",
                /* Nested, and in an object inside an array. */
                ("{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"/x\","
                 "\"limits\":{\"max_bytes\":1,\"max_bytes\":2}}"),
                "{\"op\":\"scope-list\",\"x\":[{},{\"a\":1,\"a\":1}]}",
        };
        char *reply = NULL;
        size_t len;

        create(f, "a", "");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sfs_protocol_exec(f->reg, &c, bad[i], strlen(bad[i]), &reply,
                                                   &len),
                                 -EINVAL);
        assert_int_equal(f->fake.detached, 0);
        /* Beside them: each key once removes it. */
        assert_reply(f, NULL, "{\"op\":\"scope-remove\",\"name\":\"a\"}");
        assert_int_equal(f->fake.detached, 1);
}

/* The reply's "message", the reply put. */
static char *message_of(json_object *o)
{
        json_object *e;
        char *out;

        assert_true(json_object_object_get_ex(o, "message", &e));
        out = strdup(json_object_is_type(e, json_type_null) ? "" : json_object_get_string(e));
        json_object_put(o);
        return out;
}

#define assert_busy_naming(f, what, ...)                                                       \
        do {                                                                                   \
                json_object *_o = exec_json(f, __VA_ARGS__), *_e;                              \
                char *_m;                                                                      \
                assert_true(json_object_object_get_ex(_o, "error", &_e));                      \
                assert_string_equal(json_object_get_string(_e), "EBUSY");                      \
                _m = message_of(_o);                                                           \
                assert_non_null(strstr(_m, what));                                             \
                free(_m);                                                                      \
        } while (0)

/* The reply refuses with want_err and says exactly want_msg. */
#define assert_refused(f, want_err, want_msg, ...)                                             \
        do {                                                                                   \
                json_object *_o = exec_json(f, __VA_ARGS__), *_e;                              \
                char *_m;                                                                      \
                assert_true(json_object_object_get_ex(_o, "error", &_e));                      \
                assert_false(json_object_is_type(_e, json_type_null));                         \
                assert_string_equal(json_object_get_string(_e), (want_err));                   \
                _m = message_of(_o);                                                           \
                assert_string_equal(_m, (want_msg));                                           \
                free(_m);                                                                      \
        } while (0)

/* How many elements the array at key of the reply to the request has; the reply put. */
__attribute__((format(printf, 3, 4)))
static size_t count_in_reply(struct fx *f, const char *key, const char *fmt, ...)
{
        json_object *o, *a;
        char req[512];
        size_t n;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(req, sizeof(req), fmt, ap);
        va_end(ap);
        o = exec_json(f, "%s", req);
        assert_true(json_object_object_get_ex(o, key, &a));
        n = json_object_array_length(a);
        json_object_put(o);
        return n;
}

/* "[first,first+1,...]", n uids, into out. */
static const char *uid_list(unsigned first, unsigned n, char *out, size_t size)
{
        size_t used = 0;

        used += (size_t)snprintf(out, size, "[");
        for (unsigned i = 0; i < n; i++)
                used += (size_t)snprintf(out + used, size - used, "%s%u", i ? "," : "", first + i);
        snprintf(out + used, size - used, "]");
        return out;
}

static void test_uids_or_limits_of_the_wrong_shape_are_einval_naming_them_and_make_nothing(
        void **state)
{
        static const struct {
                const char *field, *message;
        } bad[] = {
                { "\"uids\":5", "\"uids\" is not an array" },
                { "\"uids\":[-1]", "\"uids\" holds something that is not a uid" },
                { "\"uids\":[\"0\"]", "\"uids\" holds something that is not a uid" },
                /* (uid_t)-1 is no uid: chown(2)'s "leave it as it is". */
                { "\"uids\":[4294967295]", "\"uids\" holds something that is not a uid" },
                { "\"limits\":[]", "\"limits\" is not an object" },
                /* 0 would read as "the daemon's default". */
                { "\"limits\":{\"max_snapshots\":0}", "limits.max_snapshots is out of range" },
                { "\"limits\":{\"max_bytes\":4611686018427387904}",
                  "limits.max_bytes is out of range" },
                { "\"limits\":{\"max_bytes\":true}",
                  "limits.max_bytes is not an integer or a size" },
                { "\"limits\":{\"max_bytes\":\"12Q\"}",
                  "limits.max_bytes: invalid size '12Q': expected digits with an optional K, M or "
                  "G suffix (binary units: 4096, 256K, 64M, 1G)" },
                /* Past what a scope's 32-bit count holds: refused here, by name, whatever the
                 * daemon's own limit. */
                { "\"limits\":{\"max_staging\":4294967296}", "limits.max_staging is out of range" },
        };
        struct fx *f = *state;
        char view[PATH_MAX], uids[512], msg[64];

        view_path(f, "a", view);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_refused(f, "EINVAL", bad[i].message,
                               "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\",%s}", view,
                               bad[i].field);
        /* One uid more than a list holds (VALUE_UID_LIST_MAX). */
        snprintf(msg, sizeof(msg), "\"uids\" names more than %d uids", VALUE_UID_LIST_MAX);
        assert_refused(f, "EINVAL", msg,
                       "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\",\"uids\":%s}", view,
                       uid_list(1, VALUE_UID_LIST_MAX + 1, uids, sizeof(uids)));
        assert_int_equal(f->fake.mounted, 0);
        assert_int_equal(count_in_reply(f, "scopes", "{\"op\":\"scope-list\"}"), 0);
        /* Beside them: the same fields, well-formed, make the scope; a full list of uids too. */
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                              "\"uids\":[0,7,7,4294967294],\"limits\":{\"max_snapshots\":8,"
                              "\"max_bytes\":\"16K\",\"max_staging\":3}}", view);
        view_path(f, "b", view);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"%s\","
                              "\"uids\":%s,\"limits\":null}", view,
                     uid_list(1, VALUE_UID_LIST_MAX, uids, sizeof(uids)));
        assert_int_equal(f->fake.mounted, 2);
        assert_int_equal(count_in_reply(f, "scopes", "{\"op\":\"scope-list\"}"), 2);
}

static void test_a_digest_that_is_not_64_lowercase_hex_is_einval_and_grants_nothing(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1], upper[SNAP_DIGEST_HEX_LEN + 1];
        const char *msg = "\"sha256\" is not 64 lowercase hex characters";

        create(f, "a", "");
        publish_main(f, "content", hex);
        for (size_t i = 0; i <= SNAP_DIGEST_HEX_LEN; i++)
                upper[i] = (char)toupper((unsigned char)hex[i]);
        assert_refused(f, "EINVAL", msg, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\"}",
                       upper);
        assert_refused(f, "EINVAL", msg, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%.63s\"}",
                       hex);
        assert_refused(f, "EINVAL", msg, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%sa\"}",
                       hex);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 0);
        /* Beside them: the digest as it is grants, and revokes; in revoke the same check. */
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\"}", hex);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 1);
        assert_refused(f, "EINVAL", msg, "{\"op\":\"revoke\",\"scope\":\"a\",\"sha256\":\"%s\"}",
                       upper);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 1);
        assert_reply(f, NULL, "{\"op\":\"revoke\",\"scope\":\"a\",\"sha256\":\"%s\"}", hex);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 0);
}

static void test_a_metrics_format_other_than_the_two_is_einval(void **state)
{
        struct fx *f = *state;
        json_object *o, *fmt;

        assert_refused(f, "EINVAL", "\"format\" is \"openmetrics\" or \"prometheus\"",
                       "{\"op\":\"metrics\",\"format\":\"json\"}");
        /* Beside it: each of the two, and none (OpenMetrics). */
        o = exec_json(f, "{\"op\":\"metrics\",\"format\":\"prometheus\"}");
        assert_true(json_object_object_get_ex(o, "format", &fmt));
        assert_string_equal(json_object_get_string(fmt), "prometheus");
        json_object_put(o);
        o = exec_json(f, "{\"op\":\"metrics\"}");
        assert_true(json_object_object_get_ex(o, "format", &fmt));
        assert_string_equal(json_object_get_string(fmt), "openmetrics");
        json_object_put(o);
        assert_reply(f, NULL, "{\"op\":\"metrics\",\"format\":\"openmetrics\"}");
}

static void test_a_view_over_another_view_the_main_mount_or_the_store_is_ebusy(void **state)
{
        struct fx *f = *state;
        char dir[PATH_MAX];
        struct stat st;

        snprintf(dir, sizeof(dir), "%s/nest", f->dir.path);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(dir, sizeof(dir), "%s/srv", f->dir.path);
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s/nest/a\"}",
                     f->dir.path);
        /* An ancestor of another view: mounted, it would hide that view from its tenant. */
        assert_busy_naming(f, "the view of scope a",
                           "{\"op\":\"scope-create\",\"name\":\"anc\",\"view\":\"%s/nest\"}",
                           f->dir.path);
        /* Of the main mount (and its control channel with it), and the main mount itself. */
        assert_busy_naming(f, "the main mount",
                           "{\"op\":\"scope-create\",\"name\":\"anc\",\"view\":\"%s/srv\"}",
                           f->dir.path);
        assert_busy_naming(f, "the main mount",
                           "{\"op\":\"scope-create\",\"name\":\"anc\",\"view\":\"%s\"}",
                           f->main_path);
        /* --store, and a path inside it. */
        assert_busy_naming(f, "--store",
                           "{\"op\":\"scope-create\",\"name\":\"anc\",\"view\":\"%s\"}",
                           f->store_path);
        assert_busy_naming(f, "inside --store",
                           "{\"op\":\"scope-create\",\"name\":\"anc\",\"view\":\"%s/scopes\"}",
                           f->store_path);
        /* Nothing was made for them. */
        snprintf(dir, sizeof(dir), "%s/srv/mnt", f->dir.path);
        assert_int_equal(stat(dir, &st), -1);
        assert_int_equal(f->fake.mounted, 1);
        /* Beside them: a sibling of the refused ancestor's child is accepted. */
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"sib\",\"view\":\"%s/nest/b\"}",
                     f->dir.path);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"sib2\",\"view\":\"%s/srv/other\"}",
                     f->dir.path);
        assert_int_equal(f->fake.mounted, 3);
}

static void test_an_entry_shaped_like_a_digest_in_any_case_or_an_option_is_einval(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1], upper[SNAP_DIGEST_HEX_LEN + 1];

        create(f, "a", "");
        publish_main(f, "content", hex);
        for (size_t i = 0; i <= SNAP_DIGEST_HEX_LEN; i++)
                upper[i] = (char)toupper((unsigned char)hex[i]);
        /* The finding: an uppercase digest as an entry, movable to other content. */
        assert_reply(f, "EINVAL", "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\","
                                  "\"entry\":\"%s\"}", hex, upper);
        assert_reply(f, "EINVAL", "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\","
                                  "\"entry\":\"%s\"}", hex, hex);
        assert_reply(f, "EINVAL", "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\","
                                  "\"entry\":\"-rf\"}", hex);
        assert_reply(f, "EINVAL", "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\","
                                  "\"entry\":\"--\"}", hex);
        /* Beside them: a name, and one with a '-' that does not lead. */
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\","
                              "\"entry\":\"current\"}", hex);
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\","
                              "\"entry\":\"rf-\"}", hex);
}

static void test_names_and_views_are_taken_once(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX];

        create(f, "a", "");
        view_path(f, "a", view);
        assert_reply(f, "EEXIST", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s/b\"}",
                     f->dir.path);
        assert_reply(f, "EEXIST", "{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"%s\"}", view);
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"..\",\"view\":\"%s/c\"}",
                     f->dir.path);
        create(f, "b", "");
        assert_int_equal(f->fake.mounted, 2);
}

static void test_a_mount_that_fails_leaves_no_scope_and_no_directory(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX], file[PATH_MAX];
        struct stat st;

        f->fake.refuse_mount = EIO;
        view_path(f, "a", view);
        assert_reply(f, "EIO", "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\"}", view);
        assert_int_equal(stat(view, &st), -1);
        snprintf(file, sizeof(file), "%s/scopes/a.json", f->runtime_path);
        assert_int_equal(stat(file, &st), -1);
        f->fake.refuse_mount = 0;
        create(f, "a", "");
        assert_int_equal(stat(view, &st), 0);
        assert_int_equal(stat(file, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
}

/* What tying a scope to a process answers here: NULL (it works), or "ENOSYS" where the
 * kernel (or valgrind, which runs these tests too) has no pidfd_open, where the daemon refuses
 * a scope it could not tie rather than make one that outlives its process. */
static const char *tie_answer(void)
{
        long fd = syscall(SYS_pidfd_open, getpid(), 0);

        if (fd < 0 && errno == ENOSYS)
                return "ENOSYS";
        assert_true(fd >= 0);
        close((int)fd);
        return NULL;
}

static void test_a_client_pid_that_is_not_the_callers_is_einval(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX];

        view_path(f, "tied", view);
        /* The caller's pid is the test's: a child's number names another process. */
        assert_reply(f, "EINVAL", "{\"op\":\"scope-create\",\"name\":\"tied\",\"view\":\"%s\","
                                  "\"until_pid\":1,\"client_pid\":1}", view);
        assert_reply(f, tie_answer(), "{\"op\":\"scope-create\",\"name\":\"tied\",\"view\":\"%s\","
                                      "\"until_pid\":1,\"client_pid\":%d}", view, (int)getpid());
}

static bool listed(struct fx *f, const char *name)
{
        json_object *o = exec_json(f, "{\"op\":\"scope-list\"}"), *a;
        bool found = false;

        assert_true(json_object_object_get_ex(o, "scopes", &a));
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *n;
                json_object_object_get_ex(json_object_array_get_idx(a, i), "name", &n);
                found |= strcmp(json_object_get_string(n), name) == 0;
        }
        json_object_put(o);
        return found;
}

static void test_a_scope_tied_to_a_process_goes_when_it_exits(void **state)
{
        struct fx *f = *state;
        struct timespec step = { .tv_nsec = 10 * 1000 * 1000 };
        char view[PATH_MAX];
        pid_t child = fork();

        if (child == 0) {
                pause();
                _exit(0);
        }
        view_path(f, "tied", view);
        if (tie_answer()) {
                /* No pidfd here: refused, and no scope made. */
                assert_reply(f, "ENOSYS", "{\"op\":\"scope-create\",\"name\":\"tied\",\"view\":"
                                          "\"%s\",\"until_pid\":%d,\"client_pid\":%d}",
                             view, (int)child, (int)getpid());
                assert_false(listed(f, "tied"));
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                return;
        }
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"tied\",\"view\":\"%s\","
                              "\"until_pid\":%d,\"client_pid\":%d}", view, (int)child,
                     (int)getpid());
        create(f, "untied", "");
        assert_true(listed(f, "tied"));
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        /* The watcher's thread removes it: wait for that state, never a fixed time. */
        for (int i = 0; i < 2000 && listed(f, "tied"); i++)
                nanosleep(&step, NULL);
        assert_false(listed(f, "tied"));
        assert_true(listed(f, "untied"));
        assert_int_equal(f->fake.detached, 1);
        /* Gone already: refused. */
        assert_reply(f, "ESRCH", "{\"op\":\"scope-create\",\"name\":\"tied\",\"view\":\"%s\","
                                 "\"until_pid\":%d,\"client_pid\":%d}", view, (int)child,
                     (int)getpid());
}

static void test_grants_and_scopes_come_back_after_a_restart(void **state)
{
        struct fx *f = *state;
        char a[SNAP_DIGEST_HEX_LEN + 1], b[SNAP_DIGEST_HEX_LEN + 1];
        json_object *o, *grants;

        publish_main(f, "granted plainly", a);
        publish_main(f, "granted by name", b);
        create(f, "sandbox", ",\"publish\":true,\"uids\":[1000,1001],\"gid\":77");
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\"}", a);
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\","
                              "\"entry\":\"cfg\"}", b);
        stop(f);
        start(f);
        o = exec_json(f, "{\"op\":\"scope-show\",\"name\":\"sandbox\"}");
        assert_true(json_object_object_get_ex(o, "grants", &grants));
        assert_int_equal(json_object_array_length(grants), 2);
        assert_non_null(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "\"uids\":[1000,1001]"));
        assert_non_null(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "\"gid\":77"));
        assert_non_null(strstr(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "\"entry\":\"cfg\""));
        json_object_put(o);
}

static void test_a_revoke_answered_never_comes_back(void **state)
{
        struct fx *f = *state;
        char a[SNAP_DIGEST_HEX_LEN + 1];
        json_object *o, *grants;

        publish_main(f, "revoked", a);
        create(f, "sandbox", "");
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\","
                              "\"entry\":\"cfg\"}", a);
        assert_reply(f, NULL, "{\"op\":\"revoke\",\"scope\":\"sandbox\",\"entry\":\"cfg\"}");
        /* The entry and the digest that left with it are stale in the view's kernel. */
        assert_int_equal(f->fake.invalidated, 2);
        assert_reply(f, "ENOENT", "{\"op\":\"revoke\",\"scope\":\"sandbox\",\"entry\":\"cfg\"}");
        stop(f);
        start(f);
        o = exec_json(f, "{\"op\":\"scope-show\",\"name\":\"sandbox\"}");
        assert_true(json_object_object_get_ex(o, "grants", &grants));
        assert_int_equal(json_object_array_length(grants), 0);
        json_object_put(o);
}

static void test_a_start_collects_what_no_scope_came_back_for(void **state)
{
        struct fx *f = *state;
        char scoped[SNAP_DIGEST_HEX_LEN + 1], held[SNAP_DIGEST_HEX_LEN + 1], p[PATH_MAX];
        struct sfs_node *n;
        struct stat st;

        publish_main(f, "held", held);
        create(f, "sandbox", "");
        /* Published in the main mount, granted, then every hold dropped: its grant keeps it. */
        publish_main(f, "kept by its grant", scoped);
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\"}", scoped);
        n = lookup_digest(f->main, &root, "kept by its grant", 0);
        (void)n;
        assert_int_equal(sfs_tree_unlink(f->main, &root, sfs_tree_root(f->main), scoped), 0);
        stop(f);
        /* The scope's file goes while the daemon is down (an operator, a crash mid-delete). */
        snprintf(p, sizeof(p), "%s/scopes/sandbox.json", f->runtime_path);
        assert_int_equal(unlink(p), 0);
        start(f);
        snprintf(p, sizeof(p), "%s/blobs/sha256/%s", f->store_path, scoped);
        assert_int_equal(stat(p, &st), -1);
        lookup_digest(f->main, &root, "kept by its grant", -ENOENT);
        snprintf(p, sizeof(p), "%s/blobs/sha256/%s", f->store_path, held);
        assert_int_equal(stat(p, &st), 0);
        lookup_digest(f->main, &root, "held", 0);
}

static void test_a_scope_file_that_does_not_parse_stops_the_collection(void **state)
{
        struct fx *f = *state;
        char scoped[SNAP_DIGEST_HEX_LEN + 1], p[PATH_MAX];
        FILE *fp;

        create(f, "sandbox", "");
        publish_main(f, "only granted", scoped);
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\"}", scoped);
        assert_int_equal(sfs_tree_unlink(f->main, &root, sfs_tree_root(f->main), scoped), 0);
        stop(f);
        snprintf(p, sizeof(p), "%s/scopes/sandbox.json", f->runtime_path);
        fp = fopen(p, "w");
        assert_non_null(fp);
        fputs("{ not json", fp);
        fclose(fp);
        start(f);
        /* Not collected: a scope that did not come back might still need it. */
        lookup_digest(f->main, &root, "only granted", 0);
        assert_false(listed(f, "sandbox"));
}

static void test_removing_a_scope_collects_its_last_grants_and_detaches_its_view(void **state)
{
        struct fx *f = *state;
        char a[SNAP_DIGEST_HEX_LEN + 1], p[PATH_MAX];
        struct stat st;

        publish_main(f, "only this scope's", a);
        create(f, "sandbox", "");
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\"}", a);
        assert_int_equal(sfs_tree_unlink(f->main, &root, sfs_tree_root(f->main), a), 0);
        lookup_digest(f->main, &root, "only this scope's", 0);
        assert_reply(f, NULL, "{\"op\":\"scope-remove\",\"name\":\"sandbox\"}");
        assert_int_equal(f->fake.detached, 1);
        lookup_digest(f->main, &root, "only this scope's", -ENOENT);
        snprintf(p, sizeof(p), "%s/blobs/sha256/%s", f->store_path, a);
        assert_int_equal(stat(p, &st), -1);
        view_path(f, "sandbox", p);
        assert_int_equal(stat(p, &st), -1); /* made by the registry, removed by it */
        assert_reply(f, "ENOENT", "{\"op\":\"scope-remove\",\"name\":\"sandbox\"}");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* ---- the scope's file, decoded at a start ---- */

static char *read_text(const char *path)
{
        FILE *fp = fopen(path, "r");
        char *text = calloc(1, 65536);
        size_t n;

        assert_non_null(fp);
        assert_non_null(text);
        n = fread(text, 1, 65535, fp);
        assert_true(n > 0 && n < 65535);
        fclose(fp);
        return text;
}

static void write_text(const char *path, const char *text)
{
        FILE *fp = fopen(path, "w");

        assert_non_null(fp);
        assert_int_equal(fputs(text, fp) >= 0, 1);
        assert_int_equal(fclose(fp), 0);
}

/* text with its first from replaced by to (from must be there). */
static char *replaced(const char *text, const char *from, const char *to)
{
        const char *at = strstr(text, from);
        char *out;

        assert_non_null(at);
        out = malloc(strlen(text) + strlen(to) + 1);
        assert_non_null(out);
        sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        return out;
}

/* The daemon restarted over sandbox's file as text: whether the scope came back. */
static bool back_with(struct fx *f, const char *text)
{
        char p[PATH_MAX];

        stop(f);
        snprintf(p, sizeof(p), "%s/scopes/sandbox.json", f->runtime_path);
        write_text(p, text);
        start(f);
        return listed(f, "sandbox");
}

#define UNPARSED "scope sandbox: its file does not parse ("

/* The last start's warning that sandbox's file does not parse names why. */
static void assert_unparsed(const struct fx *f, const char *why)
{
        char expect[256];

        snprintf(expect, sizeof(expect), "%s%s); left as it is", UNPARSED, why);
        if (!strstr(f->warned, expect))
                fail_msg("\"%s\" not in \"%s\"", expect, f->warned);
}

/* A scope's file checked at a start: a file with a field out of its range does not come back
 * (it is left as it is, and the warning names the field), the same file with that field right
 * does. */
static void test_a_scope_file_with_a_field_out_of_its_range_does_not_come_back(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX], a[SNAP_DIGEST_HEX_LEN + 1];
        _cleanup_free_ char *good = NULL;
        /* One field of each part (each field's own check: test_scopefile.c). */
        static const char *const bad[][3] = {
                { "\"version\":1", "\"version\":2", "\"version\" is out of range" },
                { "\"uids\":[1000", "\"uids\":[-1", "uids[0]: not a uid" },
                { "\"max_bytes\":", "\"max_bytes\":-1,\"x\":", "\"max_bytes\" is out of range" },
                { "\"grants\"", "\"grantz\"", "\"grants\" is missing" },
        };

        publish_main(f, "granted", a);
        create(f, "sandbox", ",\"uids\":[1000]");
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"sandbox\",\"sha256\":\"%s\"}", a);
        snprintf(p, sizeof(p), "%s/scopes/sandbox.json", f->runtime_path);
        good = read_text(p);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_free_ char *text = replaced(good, bad[i][0], bad[i][1]);

                assert_false(back_with(f, text));
                assert_unparsed(f, bad[i][2]);
        }
        /* Grants the tree refuses (a digest twice): the rest parses, the grants do not. */
        {
                const char *text = good;
                const char *grant = strstr(text, "\"grants\":[") + strlen("\"grants\":[");
                const char *end = strchr(grant, '}');
                _cleanup_free_ char *twice = NULL;

                assert_non_null(end);
                assert_true(asprintf(&twice, "%.*s,%.*s%s", (int)(end + 1 - text), text,
                                     (int)(end + 1 - grant), grant, end + 1) > 0);
                assert_false(back_with(f, twice));
                assert_non_null(strstr(f->warned, "scope sandbox: its grants do not parse "
                                                  "(Invalid argument)"));
        }
        assert_true(back_with(f, good));
        assert_string_equal(f->warned, "");
}

/* An until-pid's record needs its pid, start and boot; a whole one of another boot comes back
 * as a scope whose process is gone. */
static void test_a_scope_files_until_without_its_pid_start_or_boot_does_not_come_back(
        void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        _cleanup_free_ char *good = NULL;
        static const char *const bad[][2] = {
                { "{\"until\":{\"start\":5,\"boot_id\":\"b\"},", "\"pid\" is missing" },
                { "{\"until\":{\"pid\":7,\"start\":5,\"boot_id\":3},",
                  "\"boot_id\" is not a string" },
        };

        create(f, "sandbox", "");
        snprintf(p, sizeof(p), "%s/scopes/sandbox.json", f->runtime_path);
        good = read_text(p);
        assert_int_equal(good[0], '{');
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_free_ char *text = replaced(good, "{", bad[i][0]);

                assert_false(back_with(f, text));
                assert_unparsed(f, bad[i][1]);
        }
        {
                _cleanup_free_ char *text =
                        replaced(good, "{", "{\"until\":{\"pid\":7,\"start\":5,\"boot_id\":\"b\"},");

                assert_false(back_with(f, text));
                assert_null(strstr(f->warned, UNPARSED));
                assert_non_null(strstr(f->warned, "scope sandbox: its until-pid 7 is gone"));
        }
}

/* Two files naming one view: the first back keeps it, the second does not come back. */
static void test_a_second_scope_file_over_the_same_view_does_not_come_back(void **state)
{
        struct fx *f = *state;
        char p[PATH_MAX];
        _cleanup_free_ char *good = NULL, *other = NULL;

        create(f, "sandbox", "");
        snprintf(p, sizeof(p), "%s/scopes/sandbox.json", f->runtime_path);
        good = read_text(p);
        other = replaced(good, "\"name\":\"sandbox\"", "\"name\":\"other\"");
        stop(f);
        snprintf(p, sizeof(p), "%s/scopes/other.json", f->runtime_path);
        write_text(p, other);
        start(f);
        assert_true(listed(f, "sandbox") != listed(f, "other"));
        assert_non_null(strstr(f->warned, "its file does not parse (Invalid argument)"));
        /* Its own view, and it comes back too. */
        stop(f);
        free(other);
        other = replaced(good, "\"name\":\"sandbox\"", "\"name\":\"other\"");
        {
                _cleanup_free_ char *moved = replaced(other, "/sandbox\"", "/other\"");

                write_text(p, moved);
        }
        start(f);
        assert_true(listed(f, "sandbox"));
        assert_true(listed(f, "other"));
}

/* A view sfs_view_path_prepare refuses (its parent missing): the refusal it said, and no
 * scope, no directory, no mount. */
static void test_a_view_the_path_checks_refuse_is_refused_with_their_reason(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX], want[PATH_MAX + 80];
        struct stat st;

        view_path(f, "none/a", view);
        snprintf(want, sizeof(want), "%s: none does not exist (a view's parent directory must)",
                 view);
        assert_refused(f, "EINVAL", want,
                       "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\"}", view);
        assert_int_equal(stat(view, &st), -1);
        assert_int_equal(f->fake.mounted, 0);
        assert_false(listed(f, "a"));
        /* Beside it: the parent made, the same request makes the scope. */
        view_path(f, "none", want);
        assert_int_equal(mkdir(want, 0755), 0);
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\"}", view);
        assert_int_equal(f->fake.mounted, 1);
        assert_true(listed(f, "a"));
}

/* --max-scopes: a create past it is ENOSPC saying so; the views of removed scopes still held
 * open count, and are named. */
static void test_a_create_past_max_scopes_is_enospc_naming_what_holds_the_room(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX];

        stop(f);
        f->max_scopes = 1;
        start(f);
        create(f, "a", "");
        view_path(f, "b", view);
        assert_refused(f, "ENOSPC", "this daemon serves at most 1 scopes (--max-scopes): delete "
                       "one first (snapfs scope rm NAME)",
                       "{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"%s\"}", view);
        assert_false(listed(f, "b"));
        assert_reply(f, NULL, "{\"op\":\"scope-remove\",\"name\":\"a\"}");
        /* a's view still held open: its session is still the daemon's. */
        f->fake.lingering = 1;
        assert_refused(f, "ENOSPC", "at most 1 scopes (--max-scopes), counting 1 removed scopes' "
                       "views still held open: /held/view (1 open); close what holds them, or "
                       "delete a scope",
                       "{\"op\":\"scope-create\",\"name\":\"b\",\"view\":\"%s\"}", view);
        assert_false(listed(f, "b"));
        assert_int_equal(f->fake.mounted, 1);
        /* Beside them: the view let go, the same create makes b. */
        f->fake.lingering = 0;
        create(f, "b", "");
        assert_true(listed(f, "b"));
        assert_int_equal(f->fake.mounted, 2);
}

/* A create's name, view and limits out of shape: EINVAL, each saying what is wrong, and
 * nothing made. */
static void test_a_create_out_of_shape_says_what_is_wrong_and_makes_nothing(void **state)
{
        static const char *names[] = { "..", ".a", "a/b", "" };
        static const char *views[] = { "relative", "//x", "/x/./y", "/x/../y", "/x/" };
        const char *view_msg = "view: an absolute, canonical path in UTF-8 (no \"//\", \".\" or "
                               "\"..\" component, no trailing \"/\")";
        struct fx *f = *state;
        char view[PATH_MAX];

        view_path(f, "a", view);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                assert_refused(f, "EINVAL", "a scope name is 1-64 of [A-Za-z0-9._-], not "
                               "starting with '.'",
                               "{\"op\":\"scope-create\",\"name\":\"%s\",\"view\":\"%s\"}",
                               names[i], view);
        for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
                assert_refused(f, "EINVAL", view_msg,
                               "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\"}",
                               views[i]);
        assert_refused(f, "EINVAL", "limits.min_bytes 8192 is above the scope's max_bytes "
                       "(4096): ask for at most that",
                       "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\","
                       "\"limits\":{\"max_bytes\":\"4K\",\"min_bytes\":\"8K\"}}", view);
        assert_int_equal(f->fake.mounted, 0);
        assert_int_equal(count_in_reply(f, "scopes", "{\"op\":\"scope-list\"}"), 0);
        /* Beside them: a name with a dot inside, and a minimum of the whole maximum. */
        assert_reply(f, NULL, "{\"op\":\"scope-create\",\"name\":\"a.b\",\"view\":\"%s\","
                              "\"limits\":{\"max_bytes\":\"4K\",\"min_bytes\":\"4K\"}}", view);
        assert_true(listed(f, "a.b"));
}

/* A daemon whose --store is a disk and that has no --runtime-store: no scopes at all, saying
 * how to have them. */
static void test_scopes_asked_of_a_daemon_with_only_a_disk_store_are_einval(void **state)
{
        struct fx *f = *state;
        char view[PATH_MAX];
        struct stat st;

        stop(f);
        f->no_runtime = true;
        start(f);
        view_path(f, "a", view);
        assert_refused(f, "EINVAL", "this daemon keeps --store on a disk, where a scope's content "
                       "must never go: start it with --runtime-store DIR (a directory on a RAM "
                       "filesystem, tmpfs) to have scopes",
                       "{\"op\":\"scope-create\",\"name\":\"a\",\"view\":\"%s\"}", view);
        assert_int_equal(stat(view, &st), -1);
        assert_int_equal(f->fake.mounted, 0);
        assert_false(listed(f, "a"));
        /* Beside it: the same daemon with --runtime-store makes the scope. */
        stop(f);
        f->no_runtime = false;
        start(f);
        create(f, "a", "");
        assert_true(listed(f, "a"));
}

/* A grant or revoke in a scope that is not there: ENOENT naming it, nothing granted. */
static void test_a_grant_or_revoke_in_no_scope_is_enoent_naming_it(void **state)
{
        struct fx *f = *state;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        const char *want = "no scope named none: snapfs scope ls lists the scopes; snapfs scope "
                           "create none --view PATH makes it";

        create(f, "a", "");
        publish_main(f, "content", hex);
        assert_refused(f, "ENOENT", want, "{\"op\":\"grant\",\"scope\":\"none\",\"sha256\":\"%s\"}",
                       hex);
        assert_refused(f, "ENOENT", want,
                       "{\"op\":\"revoke\",\"scope\":\"none\",\"sha256\":\"%s\"}", hex);
        assert_false(listed(f, "none"));
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 0);
        /* Beside them: the scope that is there takes the grant. */
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\"}", hex);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 1);
}

/* A scope full of grants (lowered to one here): ENOSPC saying to revoke, the grant not made. */
static void test_a_grant_past_a_full_scope_is_enospc(void **state)
{
        struct fx *f = *state;
        char one[SNAP_DIGEST_HEX_LEN + 1], two[SNAP_DIGEST_HEX_LEN + 1];
        char want[128];

        f->fake.max_grants = 1;
        create(f, "a", "");
        publish_main(f, "one", one);
        publish_main(f, "two", two);
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\"}", one);
        snprintf(want, sizeof(want), "a scope holds at most %d grants: revoke one first (snapfs "
                 "revoke)", SFS_SCOPE_GRANTS_MAX);
        assert_refused(f, "ENOSPC", want, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\"}",
                       two);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 1);
        /* Beside it: the first revoked, the second fits. */
        assert_reply(f, NULL, "{\"op\":\"revoke\",\"scope\":\"a\",\"sha256\":\"%s\"}", one);
        assert_reply(f, NULL, "{\"op\":\"grant\",\"scope\":\"a\",\"sha256\":\"%s\"}", two);
        assert_int_equal(count_in_reply(f, "grants", "{\"op\":\"scope-show\",\"name\":\"a\"}"), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_a_request_that_is_no_json_object_is_einval_and_does_nothing),
                T(test_a_view_the_path_checks_refuse_is_refused_with_their_reason),
                T(test_a_create_past_max_scopes_is_enospc_naming_what_holds_the_room),
                T(test_a_create_out_of_shape_says_what_is_wrong_and_makes_nothing),
                T(test_scopes_asked_of_a_daemon_with_only_a_disk_store_are_einval),
                T(test_a_grant_or_revoke_in_no_scope_is_enoent_naming_it),
                T(test_a_grant_past_a_full_scope_is_enospc),
                T(test_unknown_ops_fields_and_types_are_refused_in_the_reply),
                T(test_a_minimum_that_cannot_be_kept_is_refused_before_anything_is_made),
                T(test_a_duplicate_key_is_einval_and_does_nothing),
                T(test_uids_or_limits_of_the_wrong_shape_are_einval_naming_them_and_make_nothing),
                T(test_a_digest_that_is_not_64_lowercase_hex_is_einval_and_grants_nothing),
                T(test_a_metrics_format_other_than_the_two_is_einval),
                T(test_names_and_views_are_taken_once),
                T(test_an_entry_shaped_like_a_digest_in_any_case_or_an_option_is_einval),
                T(test_a_view_over_another_view_the_main_mount_or_the_store_is_ebusy),
                T(test_a_mount_that_fails_leaves_no_scope_and_no_directory),
                T(test_a_client_pid_that_is_not_the_callers_is_einval),
                T(test_a_scope_tied_to_a_process_goes_when_it_exits),
                T(test_grants_and_scopes_come_back_after_a_restart),
                T(test_a_revoke_answered_never_comes_back),
                T(test_a_start_collects_what_no_scope_came_back_for),
                T(test_a_scope_file_that_does_not_parse_stops_the_collection),
                T(test_removing_a_scope_collects_its_last_grants_and_detaches_its_view),
                T(test_a_scope_file_with_a_field_out_of_its_range_does_not_come_back),
                T(test_a_scope_files_until_without_its_pid_start_or_boot_does_not_come_back),
                T(test_a_second_scope_file_over_the_same_view_does_not_come_back),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
