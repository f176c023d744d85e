/* SPDX-License-Identifier: MIT */
/* The snapfs Node.js addon: libsnapfs's calls as promises, for the TypeScript package around
 * it (client/node/src). Every check is libsnapfs's own: the mount check, the open relative to
 * the pinned mount root, fstat against the binding, the whole content hashed. This file only
 * copies arguments in and results out (job.h), and refuses to load against a libsnapfs of
 * another version than the one it was compiled with, whose struct layouts it cannot know. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "client/node/native/job.h"

/* statx's mount ids, newer than Debian 12's headers: the unique one (Linux 6.8+) and the
 * reusable one mountinfo lists. */
#define NODE_STATX_MNT_ID 0x00001000U
#define NODE_STATX_MNT_ID_UNIQUE 0x00004000U
/* Which of the two a recorded id is: set above every id the kernel hands out (unique ids
 * start at 2^31, reusable ones are small). */
#define MNT_ID_IS_UNIQUE (UINT64_C(1) << 63)

/* The id of the mount fd lies on, tagged with its kind; 0 when the kernel says neither. */
static uint64_t mount_id(int fd)
{
        static const unsigned masks[] = { NODE_STATX_MNT_ID_UNIQUE, NODE_STATX_MNT_ID };
        struct statx stx;

        for (size_t i = 0; i < 2; i++) {
                memset(&stx, 0, sizeof(stx));
                /* AT_STATX_DONT_SYNC: the mount id comes from the VFS, no GETATTR needed. */
                if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, masks[i], &stx) == 0 &&
                    (stx.stx_mask & masks[i]) && !(stx.stx_mnt_id & MNT_ID_IS_UNIQUE))
                        return stx.stx_mnt_id | (i == 0 ? MNT_ID_IS_UNIQUE : 0);
        }
        return 0;
}

/* ---- arguments ------------------------------------------------------------------------ */

#define ARGS(n)                                                                               \
        size_t argc = (n);                                                                    \
        napi_value argv[(n) > 0 ? (n) : 1];                                                   \
        struct job *j;                                                                        \
        void *data;                                                                           \
        if (napi_get_cb_info(env, info, &argc, argv, NULL, &data) != napi_ok)                 \
                return NULL;                                                                  \
        j = job_new(env);                                                                     \
        if (!j)                                                                               \
                return NULL

/* An argument that could not be read: the job goes, and the exception pending (a TypeError,
 * a refusal of the binding's text) is thrown before any promise exists. */
#define FAIL()                                                                                \
        do {                                                                                  \
                job_free(env, j);                                                             \
                return NULL;                                                                  \
        } while (0)

#define QUEUE(what) return job_queue(env, j, (what))

/* ---- publish ---------------------------------------------------------------------------- */

static int run_publish(struct job *j)
{
        return snapfs_publish_named(j->mount, j->name, j->data, j->len, &j->opts, &j->snap,
                                    &j->why);
}

static napi_value done_publish(napi_env env, struct job *j)
{
        napi_value o = make_snapshot(env, &j->snap.binding, &j->snap, true);

        set_property(env, o, "alreadyPublished", make_bool(env, j->rc == 1));
        return o;
}

/* The bytes to publish: true, or false with a TypeError pending. They stay where they are:
 * a reference keeps the buffer alive until the job is done, so a large snapshot is not
 * copied once more. */
static bool arg_data(napi_env env, napi_value v, struct job *j)
{
        bool typed = false;
        void *data = NULL;

        if (napi_is_typedarray(env, v, &typed) != napi_ok || !typed) {
                napi_throw_type_error(env, "EINVAL", "snapfs: data must be a Uint8Array");
                return false;
        }
        napi_get_typedarray_info(env, v, NULL, &j->len, &data, NULL, NULL);
        if (napi_create_reference(env, v, 1, &j->data_ref) != napi_ok)
                return false;
        j->data = data ? data : "";
        return true;
}

/* What a publish takes after its mount (and its scope and entry): the data at argv[0], then
 * the name (string | null) and the options, read in that order (name, options, data). */
static bool arg_publish(napi_env env, const napi_value *argv, struct job *j)
{
        return arg_string(env, argv[1], true, &j->name, "name") &&
               arg_options(env, argv[2], &j->opts) && arg_data(env, argv[0], j);
}

/* publish(mount, data: Buffer | Uint8Array, name: string | null, options) */
static napi_value publish(napi_env env, napi_callback_info info)
{
        ARGS(4);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") || !arg_publish(env, argv + 1, j))
                FAIL();
        j->run = run_publish;
        j->done = done_publish;
        QUEUE("snapfs.publish");
}

/* Published for the scope alone: granted to it as it is published, held by no uid, so never
 * listed on the main mount (a secret there is every reader's of the main mount) and gone
 * with its last grant. */
static int run_publish_for_scope(struct job *j)
{
        return snapfs_publish_for_scope(j->mount, j->scope, j->entry, j->name, j->data, j->len,
                                        &j->opts, &j->snap, &j->why);
}

/* publishForScope(mount, scope, entry: string | null, data, name: string | null, options):
 * what publish() resolves to, the binding being the main mount's (the owner's and root's). */
static napi_value publish_for_scope(napi_env env, napi_callback_info info)
{
        ARGS(6);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_string(env, argv[1], false, &j->scope, "scope") ||
            !arg_string(env, argv[2], true, &j->entry, "entry") || !arg_publish(env, argv + 3, j))
                FAIL();
        j->run = run_publish_for_scope;
        j->done = done_publish;
        QUEUE("snapfs.publish");
}

/* ---- verified open ---------------------------------------------------------------------- */

static int record_open(struct job *j, int fd)
{
        if (fd < 0)
                return fd;
        j->fd = fd;
        j->mnt_id = mount_id(fd);
        /* What the daemon says of the snapshot, read through the verified descriptor; its
         * binding alone when it says nothing. */
        j->have_snap = snapfs_describe_fd(fd, &j->out_b, &j->snap) == 0;
        return fd;
}

static int run_open_binding(struct job *j)
{
        j->out_b = j->b;
        return record_open(j, snapfs_open_verified(j->mount, &j->b, &j->opts, &j->why));
}

static int run_open_entry(struct job *j)
{
        return record_open(j, snapfs_open_entry(j->mount, j->entry, &j->opts, &j->out_b,
                                                &j->why));
}

static napi_value done_open(napi_env env, struct job *j)
{
        napi_value o, fd;
        char id[32];

        if (napi_create_object(env, &o) != napi_ok || napi_create_int32(env, j->fd, &fd) != napi_ok)
                return NULL;
        snprintf(id, sizeof(id), "%" PRIu64, j->mnt_id);
        set_property(env, o, "snapshot",
                     make_snapshot(env, &j->out_b, j->have_snap ? &j->snap : NULL, true));
        set_property(env, o, "mountId", make_string(env, id));
        set_property(env, o, "fd", fd);
        /* Handed over: the caller closes it now. */
        j->fd = -1;
        return o;
}

/* Sleeps in this pool thread until the entry moves (the daemon's poll notice), then opens
 * what it names: one thread of the pool per pending wait, and no timer. */
static int run_wait_entry(struct job *j)
{
        return record_open(j, snapfs_wait_entry(j->mount, j->entry, j->timeout_ms, &j->opts,
                                                &j->out_b, &j->why));
}

/* openBinding(mount, binding, options) -> { fd, snapshot, mountId } */
static napi_value open_binding(napi_env env, napi_callback_info info)
{
        ARGS(3);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_binding(env, argv[1], &j->b) || !arg_options(env, argv[2], &j->opts))
                FAIL();
        j->run = run_open_binding;
        j->done = done_open;
        QUEUE("snapfs.openVerified");
}

/* waitEntry(view, entry, timeoutMs | null, options) -> { fd, snapshot, mountId } */
static napi_value wait_entry(napi_env env, napi_callback_info info)
{
        napi_valuetype t;
        uint64_t ms = 0;

        ARGS(4);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_string(env, argv[1], false, &j->entry, "entry") ||
            napi_typeof(env, argv[2], &t) != napi_ok ||
            (t != napi_null && t != napi_undefined &&
             !arg_u64(env, argv[2], INT32_MAX, &ms, "timeout")) ||
            !arg_options(env, argv[3], &j->opts))
                FAIL();
        j->timeout_ms = t == napi_null || t == napi_undefined ? -1 : (int)ms;
        j->run = run_wait_entry;
        j->done = done_open;
        QUEUE("snapfs.wait");
}

/* The descriptor a FileHandle got by opening /proc/self/fd/N of a verified one (Node cannot
 * wrap an existing descriptor in a FileHandle): it must lie on the very mount the verified
 * open judged, and pass every check of snapfs_verify_fd itself (fstat against the binding,
 * the whole content hashed, fstat again, its kind). The magic link reaches the verified
 * file's own mount and dentry, but the number N could have been closed and reused by another
 * thread in between: that is what these checks catch. */
static int run_verify_reopened(struct job *j)
{
        uint64_t id = mount_id(j->fd);
        int r;

        if (!id || id != j->mnt_id) {
                j->why.error = -EXDEV;
                j->why.n_reasons = 1;
                snprintf(j->why.reasons[0].code, sizeof(j->why.reasons[0].code), "other-mount");
                snprintf(j->why.reasons[0].message, sizeof(j->why.reasons[0].message),
                         "the reopened descriptor is not on the mount the verified open "
                         "judged");
                return -EXDEV;
        }
        r = snapfs_verify_fd(j->fd, &j->b, &j->opts, &j->why);
        return r;
}

static napi_value done_verify(napi_env env, struct job *j)
{
        napi_value v = NULL;

        (void)j;
        napi_get_undefined(env, &v);
        return v;
}

/* verifyReopened(fd, binding, options, mountId): the caller keeps its descriptor. */
static napi_value verify_reopened(napi_env env, napi_callback_info info)
{
        uint64_t fd = 0;
        char *id = NULL, *end = NULL;

        ARGS(4);
        if (!arg_u64(env, argv[0], INT32_MAX, &fd, "fd") || !arg_binding(env, argv[1], &j->b) ||
            !arg_options(env, argv[2], &j->opts) ||
            !arg_string(env, argv[3], false, &id, "mountId"))
                FAIL();
        errno = 0;
        j->mnt_id = strtoull(id, &end, 10);
        if (errno || !end || *end)
                j->mnt_id = 0;
        free(id);
        /* Borrowed, not owned: dup it so that job_free's close never touches the caller's. */
        j->fd = fcntl((int)fd, F_DUPFD_CLOEXEC, 3);
        if (j->fd < 0) {
                napi_throw(env, make_refusal(env, -errno, NULL));
                FAIL();
        }
        j->run = run_verify_reopened;
        j->done = done_verify;
        QUEUE("snapfs.openVerified");
}

/* ---- removing ------------------------------------------------------------------------- */

static int run_remove(struct job *j)
{
        return snapfs_remove(j->mount, j->text, j->flags, &j->opts, &j->removed, &j->kept,
                             &j->why);
}

static napi_value done_remove(napi_env env, struct job *j)
{
        napi_value o;

        if (napi_create_object(env, &o) != napi_ok)
                return NULL;
        set_property(env, o, "removed", make_number(env, j->removed));
        set_property(env, o, "kept", make_number(env, j->kept));
        return o;
}

/* remove(mount, target, allNamed, options): what snapfs rm TARGET does. */
static napi_value remove_target(napi_env env, napi_callback_info info)
{
        bool all = false;

        ARGS(4);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_string(env, argv[1], false, &j->text, "target") ||
            napi_get_value_bool(env, argv[2], &all) != napi_ok ||
            !arg_options(env, argv[3], &j->opts))
                FAIL();
        j->flags = all ? SNAPFS_REMOVE_ALL : 0;
        j->run = run_remove;
        j->done = done_remove;
        QUEUE("snapfs.remove");
}

/* ---- scopes ----------------------------------------------------------------------------- */

/* The grants of j->scope_out (j->grants, j->n) as snapfs_describe_view finds them: the main
 * mount's word on each digest, each binding checked in the view when it is mounted. */
static void describe_grants(struct job *j)
{
        bool mounted = !(j->scope_out.flags & SNAPFS_SCOPE_UNMOUNTED);
        struct snapfs_report why;

        if (!j->n)
                return;
        j->bindings = calloc(j->n, sizeof(*j->bindings));
        j->described = calloc(j->n, sizeof(*j->described));
        j->seen = calloc(j->n, sizeof(*j->seen));
        if (!j->bindings || !j->described || !j->seen)
                return;
        for (size_t i = 0; i < j->n; i++) {
                memcpy(j->bindings[i].sha256, j->grants[i].sha256, SNAPFS_DIGEST_LEN);
                j->bindings[i].size = j->grants[i].size;
                j->bindings[i].ino = j->grants[i].ino;
                j->bindings[i].dev = mounted ? j->scope_out.dev : 0;
        }
        j->seen_in_view = mounted;
        /* What could not be asked stays as the daemon's record says it. */
        if (snapfs_describe_view(j->mount, mounted ? j->scope_out.view : NULL, j->bindings, j->n,
                                 &j->opts, j->described, j->seen, &why) < 0) {
                for (size_t i = 0; i < j->n; i++) {
                        j->described[i].binding = j->bindings[i];
                        j->seen[i] = 0;
                }
        }
}

static napi_value make_grant(napi_env env, const struct snapfs_grant *g,
                             const struct snapfs_snapshot *s, unsigned seen)
{
        /* A view that is not mounted has no device: no binding to show (dev 0 is none). */
        bool has_dev = (seen & SNAPFS_SEEN_VIEW) || s->binding.dev != 0;
        napi_value o = make_snapshot(env, &s->binding, (seen & SNAPFS_SEEN_DAEMON) ? s : NULL,
                                     has_dev);

        set_property(env, o, "entry", make_string(env, g->entry[0] ? g->entry : NULL));
        set_property(env, o, "seenInView", make_bool(env, seen & SNAPFS_SEEN_VIEW));
        return o;
}

static napi_value make_grants(napi_env env, struct job *j)
{
        napi_value a;

        if (napi_create_array(env, &a) != napi_ok)
                return NULL;
        for (size_t i = 0; i < j->n; i++) {
                struct snapfs_snapshot plain;

                memset(&plain, 0, sizeof(plain));
                if (j->bindings)
                        plain.binding = j->bindings[i];
                if (!j->described) {
                        memcpy(plain.binding.sha256, j->grants[i].sha256, SNAPFS_DIGEST_LEN);
                        plain.binding.size = j->grants[i].size;
                        plain.binding.ino = j->grants[i].ino;
                }
                napi_set_element(env, a, (uint32_t)i,
                                 make_grant(env, &j->grants[i],
                                            j->described ? &j->described[i] : &plain,
                                            j->seen ? j->seen[i] : 0));
        }
        return a;
}

static int run_scope_create(struct job *j)
{
        return snapfs_scope_create(j->mount, &j->spec, &j->opts, &j->scope_out, &j->why);
}

static napi_value done_scope(napi_env env, struct job *j)
{
        return make_scope(env, &j->scope_out);
}

static bool spec_u64(napi_env env, napi_value obj, const char *key, uint64_t max,
                     uint64_t *out, bool *given)
{
        napi_value v;
        napi_valuetype t;

        *given = false;
        if (napi_get_named_property(env, obj, key, &v) != napi_ok ||
            napi_typeof(env, v, &t) != napi_ok)
                return false;
        if (t == napi_null || t == napi_undefined)
                return true;
        *given = true;
        return arg_u64(env, v, max, out, key);
}

/* scopeCreate(mount, { name, view, uids, gid, publish, untilPid, limits }, options) */
static napi_value scope_create(napi_env env, napi_callback_info info)
{
        napi_value v, uids, limits;
        uint32_t n = 0;
        uint64_t x;
        bool given, is_array = false, publish_flag = false;
        static const char *const limit_keys[] = { "maxSnapshots", "maxBytes", "maxStaging",
                                                  "maxStagingBytes", "minBytes" };
        uint64_t *limit_fields[5];

        ARGS(3);
        limit_fields[0] = &j->spec.limits.max_snapshots;
        limit_fields[1] = &j->spec.limits.max_bytes;
        limit_fields[2] = &j->spec.limits.max_staging;
        limit_fields[3] = &j->spec.limits.max_staging_bytes;
        limit_fields[4] = &j->spec.min_bytes;
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_options(env, argv[2], &j->opts) ||
            napi_get_named_property(env, argv[1], "name", &v) != napi_ok ||
            !arg_string(env, v, false, &j->scope, "name") ||
            napi_get_named_property(env, argv[1], "view", &v) != napi_ok ||
            !arg_string(env, v, false, &j->name, "view") ||
            napi_get_named_property(env, argv[1], "uids", &uids) != napi_ok ||
            napi_is_array(env, uids, &is_array) != napi_ok || !is_array ||
            napi_get_array_length(env, uids, &n) != napi_ok)
                FAIL();
        j->uids = calloc(n ? n : 1, sizeof(*j->uids));
        if (!j->uids) {
                napi_throw_error(env, "ENOMEM", "snapfs: out of memory");
                FAIL();
        }
        for (uint32_t i = 0; i < n; i++) {
                if (napi_get_element(env, uids, i, &v) != napi_ok ||
                    !arg_u64(env, v, UINT32_MAX - 1, &x, "uids[]"))
                        FAIL();
                j->uids[i] = (uint32_t)x;
        }
        j->spec.name = j->scope;
        j->spec.view = j->name;
        j->spec.uids = j->uids;
        j->spec.n_uids = n;
        if (!spec_u64(env, argv[1], "gid", UINT32_MAX - 1, &x, &given))
                FAIL();
        if (given) {
                j->spec.flags |= SNAPFS_SCOPE_GID;
                j->spec.gid = (uint32_t)x;
        }
        if (!spec_u64(env, argv[1], "untilPid", INT32_MAX, &x, &given))
                FAIL();
        if (given) {
                j->spec.flags |= SNAPFS_SCOPE_UNTIL_PID;
                j->spec.until_pid = (int32_t)x;
        }
        if (napi_get_named_property(env, argv[1], "publish", &v) != napi_ok ||
            napi_get_value_bool(env, v, &publish_flag) != napi_ok)
                FAIL();
        if (publish_flag)
                j->spec.flags |= SNAPFS_SCOPE_PUBLISH;
        if (napi_get_named_property(env, argv[1], "limits", &limits) != napi_ok)
                FAIL();
        for (size_t i = 0; i < 5; i++) {
                if (!spec_u64(env, limits, limit_keys[i], UINT64_MAX, limit_fields[i], &given))
                        FAIL();
        }
        j->run = run_scope_create;
        j->done = done_scope;
        QUEUE("snapfs.scopes.create");
}

static int run_scope_list(struct job *j)
{
        return snapfs_scope_list(j->mount, &j->opts, &j->scopes, &j->n, &j->why);
}

static napi_value done_scope_list(napi_env env, struct job *j)
{
        napi_value a;

        if (napi_create_array(env, &a) != napi_ok)
                return NULL;
        for (size_t i = 0; i < j->n; i++)
                napi_set_element(env, a, (uint32_t)i, make_scope(env, &j->scopes[i]));
        return a;
}

/* scopeList(mount, options) */
static napi_value scope_list(napi_env env, napi_callback_info info)
{
        ARGS(2);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_options(env, argv[1], &j->opts))
                FAIL();
        j->run = run_scope_list;
        j->done = done_scope_list;
        QUEUE("snapfs.scopes.list");
}

static int run_scope_show(struct job *j)
{
        int r = snapfs_scope_show(j->mount, j->scope, &j->opts, &j->scope_out, &j->grants, &j->n,
                                  &j->why);

        if (r >= 0)
                describe_grants(j);
        return r;
}

static napi_value done_scope_show(napi_env env, struct job *j)
{
        napi_value o;

        if (napi_create_object(env, &o) != napi_ok)
                return NULL;
        set_property(env, o, "scope", make_scope(env, &j->scope_out));
        set_property(env, o, "grants", make_grants(env, j));
        return o;
}

static int run_scope_remove(struct job *j)
{
        return snapfs_scope_remove(j->mount, j->scope, &j->opts, &j->why);
}

static int run_grant(struct job *j)
{
        int r = snapfs_grant(j->mount, j->scope, j->text, j->entry, &j->opts, &j->grant_out,
                             &j->why);
        struct snapfs_report why;

        if (r < 0)
                return r;
        /* The grant as the one snapshot object: the scope asked for again, for its view. */
        j->grants = malloc(sizeof(*j->grants));
        if (!j->grants)
                return 0;
        j->grants[0] = j->grant_out;
        j->n = 1;
        if (snapfs_scope_show(j->mount, j->scope, &j->opts, &j->scope_out, NULL, NULL, &why) < 0)
                j->scope_out.flags = SNAPFS_SCOPE_UNMOUNTED;
        describe_grants(j);
        return 0;
}

static napi_value done_grant(napi_env env, struct job *j)
{
        napi_value a, g = NULL;

        a = make_grants(env, j);
        if (a)
                napi_get_element(env, a, 0, &g);
        return g;
}

static int run_revoke(struct job *j)
{
        return snapfs_revoke(j->mount, j->scope, j->text, j->entry, &j->opts, &j->why);
}

/* grant(mount, scope, sha256, entry | null, options) / revoke(mount, scope, sha256 | null,
 * entry | null, options): which one, the function's data says (&yes: grant). */
static napi_value grant_or_revoke(napi_env env, napi_callback_info info)
{
        ARGS(5);
        const bool grant = *(const bool *)data;

        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_string(env, argv[1], false, &j->scope, "scope") ||
            !arg_string(env, argv[2], !grant, &j->text, "sha256") ||
            !arg_string(env, argv[3], true, &j->entry, "entry") ||
            !arg_options(env, argv[4], &j->opts))
                FAIL();
        j->run = grant ? run_grant : run_revoke;
        j->done = grant ? done_grant : done_verify;
        QUEUE(grant ? "snapfs.scopes.grant" : "snapfs.scopes.revoke");
}

static int run_scope_binding(struct job *j)
{
        return snapfs_scope_binding(j->mount, j->scope, &j->b, &j->opts, j->view, sizeof(j->view),
                                    &j->out_b, &j->why);
}

static napi_value done_scope_binding(napi_env env, struct job *j)
{
        napi_value o;

        if (napi_create_object(env, &o) != napi_ok)
                return NULL;
        set_property(env, o, "view", make_string(env, j->view));
        set_property(env, o, "snapshot", make_snapshot(env, &j->out_b, NULL, true));
        return o;
}

/* scopeBinding(mount, scope, binding, options) -> { view, snapshot }: where a sandbox of
 * the scope reads, judged and verified there. */
static napi_value scope_binding(napi_env env, napi_callback_info info)
{
        ARGS(4);
        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_string(env, argv[1], false, &j->scope, "scope") ||
            !arg_binding(env, argv[2], &j->b) || !arg_options(env, argv[3], &j->opts))
                FAIL();
        j->run = run_scope_binding;
        j->done = done_scope_binding;
        QUEUE("snapfs.publish");
}

/* ---- the control channel ------------------------------------------------------------------ */

static int run_control(struct job *j)
{
        return snapfs_control(j->mount, j->text, &j->opts, &j->reply, &j->why);
}

static napi_value done_control(napi_env env, struct job *j)
{
        return make_string(env, j->reply ? j->reply : "");
}

/* A call that takes (mount, a name, options): what it runs and answers, the job's field the
 * name goes to and its word in a TypeError, and its async resource's name. */
struct named_call {
        int (*run)(struct job *j);
        napi_value (*done)(napi_env env, struct job *j);
        size_t field; /* offsetof(struct job, a char *) */
        const char *key;
        const char *resource;
};

/* openEntry(view, entry, options) -> { fd, snapshot, mountId } */
static const struct named_call open_entry_call = {
        run_open_entry, done_open, offsetof(struct job, entry), "entry", "snapfs.openVerified"
};
/* scopeShow(mount, name, options), scopeRemove(mount, name, options) */
static const struct named_call scope_show_call = {
        run_scope_show, done_scope_show, offsetof(struct job, scope), "name", "snapfs.scopes.show"
};
static const struct named_call scope_remove_call = {
        run_scope_remove, done_verify, offsetof(struct job, scope), "name", "snapfs.scopes.remove"
};
/* control(mount, request JSON text, options) -> the reply's text. A refusal by the daemon
 * rejects with its errno; its reply is then in the rejection's "reply". */
static const struct named_call control_call = {
        run_control, done_control, offsetof(struct job, text), "request", "snapfs.control"
};

/* Each call of struct named_call, the function's data saying which. */
static napi_value named_call(napi_env env, napi_callback_info info)
{
        ARGS(3);
        const struct named_call *c = data;

        if (!arg_string(env, argv[0], false, &j->mount, "mount") ||
            !arg_string(env, argv[1], false, (char **)((char *)j + c->field), c->key) ||
            !arg_options(env, argv[2], &j->opts))
                FAIL();
        j->run = c->run;
        j->done = c->done;
        QUEUE(c->resource);
}

/* ---- synchronous helpers ------------------------------------------------------------------ */

/* parseBinding(text) -> the snapshot object of the binding alone; throws the refusal. */
static napi_value parse_binding(napi_env env, napi_callback_info info)
{
        size_t argc = 1;
        napi_value argv[1];
        struct snapfs_binding b;

        if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
                return NULL;
        if (!arg_binding(env, argc ? argv[0] : NULL, &b))
                return NULL;
        return make_snapshot(env, &b, NULL, true);
}

/* strerror(errno) -> what the library says it means. */
static napi_value str_error(napi_env env, napi_callback_info info)
{
        size_t argc = 1;
        napi_value argv[1];
        uint64_t e = 0;

        if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
                return NULL;
        if (!arg_u64(env, argc ? argv[0] : NULL, 4095, &e, "errno"))
                return NULL;
        return make_string(env, snapfs_strerror(-(int)e));
}

/* node_api.h's macro defines the module's entry points (the init, and in newer headers its
 * API version) without prototypes of their own: exported by design, not forgotten. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
NAPI_MODULE_INIT()
{
        static const bool yes = true, no = false;
        static const struct {
                const char *name;
                napi_callback fn;
                const void *data; /* what fn is asked to be, when it serves several */
        } fns[] = {
                { "publish", publish },         { "openBinding", open_binding },
                { "publishForScope", publish_for_scope },
                { "openEntry", named_call, &open_entry_call },
                { "waitEntry", wait_entry },    { "verifyReopened", verify_reopened },
                { "scopeCreate", scope_create }, { "scopeList", scope_list },
                { "scopeShow", named_call, &scope_show_call },
                { "scopeRemove", named_call, &scope_remove_call },
                { "grant", grant_or_revoke, &yes }, { "revoke", grant_or_revoke, &no },
                { "scopeBinding", scope_binding },
                { "control", named_call, &control_call },
                { "parseBinding", parse_binding },
                { "remove", remove_target },
                { "strerror", str_error },
        };
        const char *lib = snapfs_version();
        napi_value v;

        /* The structs this file fills are the ones of the snapfs.h it was compiled with: a
         * library of another version may lay them out otherwise. */
        if (strcmp(lib, SNAPFS_VERSION) != 0) {
                char msg[256];
                snprintf(msg, sizeof(msg),
                         "snapfs: the addon was built for libsnapfs %s but libsnapfs %s was "
                         "loaded: install the snapfs package that matches its library",
                         SNAPFS_VERSION, lib);
                napi_throw_error(env, "ELIBBAD", msg);
                return NULL;
        }
        for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
                if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn,
                                         (void *)fns[i].data, &v) != napi_ok ||
                    napi_set_named_property(env, exports, fns[i].name, v) != napi_ok)
                        return NULL;
        }
        set_property(env, exports, "version", make_string(env, SNAPFS_VERSION));
        set_property(env, exports, "libraryVersion", make_string(env, lib));
        set_property(env, exports, "napiVersion", make_number(env, NAPI_VERSION));
        return exports;
}
#pragma GCC diagnostic pop
