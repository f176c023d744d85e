/* SPDX-License-Identifier: MIT */
/* The control channel (fs/control/protocol.c) on one arbitrary request, against a registry
 * holding one scope "s" (view under a scratch directory, a fake backend) and one snapshot of
 * the main mount ("hello\n"):
 *   the request is refused with -EINVAL (nothing done) exactly when the daemon's one strict
 *   parser (oci_json_parse: UTF-8, depth, no trailing bytes, no key twice) refuses it;
 *   otherwise the reply is one object that same parser reads (valid UTF-8 whatever the
 *   request held), with "ok" a boolean, and "error" and "message" null exactly when ok.
 * No request reaches the filesystem: the main mount's device is made the one of "/", so every
 * view path lies "on one of the daemon's own mounts" and no directory is made. */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "fs/control/protocol.h"
#include "fs/scopes/registry.h"
#include "fs/tree/tree.h"
#include "snapshot/digest.h"
#include "snapshot/oci-json.h"

#include "tests/fuzz/fake-views.h"

static char scratch[64];

static void scratch_remove(void)
{
        rmdir(scratch);
}

/* The fixture, made again for each input: a run depends on its input alone. */
static struct sfs_registry *fixture(struct sfs_tree **main)
{
        static const char hello[] = "hello\n";
        const struct sfs_caller root = { .uid = 0, .gid = 0, .pid = getpid() };
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 4096, .max_bytes = 1 << 16, .max_snapshots = 16,
                .max_staging = 4, .readers = { .any = true }, .publishers = { .any = true },
                .cache_timeout = 60,
        };
        struct sfs_registry *reg = NULL;
        struct snap_digest d;
        char req[256], *reply = NULL;
        struct stat st;
        size_t len;
        void *data;

        if (!scratch[0]) {
                snprintf(scratch, sizeof(scratch), "/tmp/snapfs-fuzz-control-XXXXXX");
                if (!mkdtemp(scratch))
                        abort();
                atexit(scratch_remove);
        }
        FZ_CHECK(sfs_tree_new(&cfg, main) == 0);
        data = malloc(sizeof(hello) - 1);
        if (!data)
                abort();
        memcpy(data, hello, sizeof(hello) - 1);
        FZ_CHECK(snap_sha256(hello, sizeof(hello) - 1, &d) == 0);
        FZ_CHECK(sfs_tree_restore(*main, &d, data, sizeof(hello) - 1, "hello", NULL, 0, false,
                                  NULL) == 0);
        FZ_CHECK(sfs_registry_new(&(struct sfs_registry_config){ .main = *main, .views = &ops,
                                                                 .uid = getuid(),
                                                                 .gid = getgid() },
                                  &reg) == 0);
        snprintf(req, sizeof(req),
                 "{\"op\":\"scope-create\",\"name\":\"s\",\"view\":\"%s/s\",\"publish\":true}",
                 scratch);
        FZ_CHECK(sfs_protocol_exec(reg, &root, req, strlen(req), &reply, &len) == 0);
        FZ_CHECK(strncmp(reply, "{\"ok\":true", 10) == 0);
        free(reply);
        FZ_CHECK(stat("/", &st) == 0);
        sfs_tree_set_dev(*main, (uint64_t)st.st_dev, false);
        return reg;
}

static void check_reply(const char *reply, size_t len)
{
        json_object *o, *ok, *err, *message;

        FZ_CHECK(strlen(reply) == len);
        FZ_CHECK(oci_json_parse(reply, len, &o) == 0);
        FZ_CHECK(json_object_object_get_ex(o, "ok", &ok) &&
                 json_object_is_type(ok, json_type_boolean));
        FZ_CHECK(json_object_object_get_ex(o, "error", &err) &&
                 json_object_object_get_ex(o, "message", &message));
        if (json_object_get_boolean(ok))
                FZ_CHECK(json_object_is_type(err, json_type_null) &&
                         json_object_is_type(message, json_type_null));
        else
                FZ_CHECK(json_object_is_type(err, json_type_string) &&
                         json_object_is_type(message, json_type_string));
        json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const struct sfs_caller root = { .uid = 0, .gid = 0, .pid = getpid() };
        struct sfs_tree *main = NULL;
        struct sfs_registry *reg;
        json_object *parsed = NULL;
        char *reply = NULL, view[96];
        size_t len = 0;
        int r, want;

        if (size > SFS_CONTROL_REQUEST_MAX)
                return 0;
        reg = fixture(&main);
        want = memchr(data, '\0', size) || oci_json_parse(data, size, &parsed) < 0 ? -EINVAL : 0;
        json_object_put(parsed);
        r = sfs_protocol_exec(reg, &root, (const char *)data, size, &reply, &len);
        FZ_CHECK(r == want);
        if (r == 0)
                check_reply(reply, len);
        free(reply);
        sfs_registry_free(reg);
        sfs_tree_free(main);
        snprintf(view, sizeof(view), "%s/s", scratch);
        rmdir(view);
        return 0;
}
