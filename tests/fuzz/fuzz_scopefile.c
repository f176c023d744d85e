/* SPDX-License-Identifier: MIT */
/* A scope's file in --store (DIR/scopes/NAME.json) on arbitrary bytes: its decoder
 * (fs/scopes/scopefile.c) alone, whatever it reads written again and read back the same; then
 * the file read back at a start (sfs_registry_restore) beside one snapshot of the main mount
 * ("hello\n"):
 *   the start never fails for a bad file (it is reported and left as it is), never crashes;
 *   a file the daemon's one strict parser (oci_json_parse) refuses brings no scope back;
 *   whatever came back lists as strict JSON.
 * Nothing reaches the filesystem outside the scratch store: the main mount's device is made
 * the one of "/", so no view is mounted or made, and a file's "view_made" is cleared before
 * the start (a scope removed at start would otherwise remove the directory it names). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "fs/scopes/registry.h"
#include "fs/scopes/scopefile.h"
#include "fs/scopes/scopejson.h"
#include "fs/store/ocistore.h"
#include "fs/tree/tree.h"
#include "snapshot/digest.h"
#include "snapshot/oci-json.h"

#include "tests/fuzz/fake-views.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static void warn(void *ctx, const char *msg)
{
        (void)msg;
        (*(unsigned *)ctx)++;
}

/* The bytes to write: the input, or the same object with "view_made" false. */
static char *file_text(const uint8_t *data, size_t size, size_t *len, bool *parses)
{
        json_object *o = NULL, *v;
        const char *t;
        char *out;

        *parses = oci_json_parse(data, size, &o) == 0;
        if (*parses && json_object_object_get_ex(o, "view_made", &v) &&
            json_object_get_boolean(v)) {
                json_object_object_add(o, "view_made", json_object_new_boolean(false));
                t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                out = strdup(t);
                *len = strlen(t);
        } else {
                out = malloc(size + 1);
                if (out)
                        memcpy(out, data, size);
                *len = size;
        }
        json_object_put(o);
        if (!out)
                abort();
        return out;
}

static void start(struct sfs_tree **main, struct sfs_ocistore **store,
                  struct sfs_ocistore **runtime, struct sfs_registry **reg, unsigned *warned)
{
        static const char hello[] = "hello\n";
        struct sfs_tree_config cfg = {
                .max_snapshot_size = 4096, .max_bytes = 1 << 16, .max_snapshots = 16,
                .max_staging = 4, .readers = { .any = true }, .publishers = { .any = true },
                .cache_timeout = 60,
        };
        struct snap_digest d;
        struct stat st;
        void *data = malloc(sizeof(hello) - 1);

        if (!data)
                abort();
        memcpy(data, hello, sizeof(hello) - 1);
        cfg.ocistore = *store;
        cfg.runtime = *runtime;
        FZ_CHECK(sfs_tree_new(&cfg, main) == 0);
        FZ_CHECK(stat("/", &st) == 0);
        sfs_tree_set_dev(*main, (uint64_t)st.st_dev, false);
        FZ_CHECK(snap_sha256(hello, sizeof(hello) - 1, &d) == 0);
        FZ_CHECK(sfs_tree_restore(*main, &d, data, sizeof(hello) - 1, "hello", NULL, 0, false,
                                  NULL) == 0);
        FZ_CHECK(sfs_registry_new(&(struct sfs_registry_config){ .main = *main, .store = *store,
                                                                 .scope_store = *runtime,
                                                                 .views = &ops,
                                                                 .uid = getuid(),
                                                                 .gid = getgid() },
                                  reg) == 0);
        FZ_CHECK(sfs_registry_restore(*reg, warn, warned) == 0);
}

/* What the decoder reads is what its encoder writes: decoded, encoded, decoded again and
 * encoded again, the two texts are one. */
static void round_trip(const uint8_t *data, size_t size)
{
        struct sfs_scopefile f, g;
        char *text, *again;
        size_t len, len2;

        if (sfs_scopefile_decode("s", (const char *)data, size, &f, NULL, 0) < 0)
                return;
        FZ_CHECK(sfs_scopefile_encode(&f, &text, &len) == 0);
        FZ_CHECK(sfs_scopefile_decode("s", text, len, &g, NULL, 0) == 0);
        FZ_CHECK(sfs_scopefile_encode(&g, &again, &len2) == 0);
        FZ_CHECK(len == len2 && memcmp(text, again, len) == 0);
        free(text);
        free(again);
        sfs_scopefile_free(&f);
        sfs_scopefile_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* On /dev/shm (a tmpfs): a scope's files live in the runtime store, which must be
         * on a RAM filesystem. */
        char dir[64] = "/dev/shm/snapfs-fuzz-scopefile-XXXXXX", path[128], *text;
        struct sfs_ocistore *store = NULL, *runtime = NULL;
        struct sfs_registry *reg = NULL;
        struct sfs_tree *main = NULL;
        struct sfs_scope_info *scopes = NULL;
        json_object *list;
        size_t n_scopes = 0;
        unsigned warned = 0;
        bool parses;
        size_t len;
        int fd;

        if (size > (1u << 16))
                return 0;
        round_trip(data, size);
        if (!mkdtemp(dir))
                return 0;
        snprintf(path, sizeof(path), "%s/store", dir);
        FZ_CHECK(sfs_ocistore_open(path, 0, &store, NULL) == 0);
        snprintf(path, sizeof(path), "%s/runtime", dir);
        FZ_CHECK(sfs_ocistore_open_runtime(path, store, 0, &runtime, NULL) == 0);
        text = file_text(data, size, &len, &parses);
        snprintf(path, sizeof(path), "%s/runtime/scopes/s.json", dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        FZ_CHECK(fd >= 0);
        FZ_CHECK(write(fd, text, len) == (ssize_t)len);
        close(fd);
        free(text);
        start(&main, &store, &runtime, &reg, &warned);
        FZ_CHECK(sfs_registry_list(reg, &scopes, &n_scopes) == 0);
        /* A file the strict parser refuses brings nothing back, and is reported. */
        if (!parses)
                FZ_CHECK(n_scopes == 0 && warned > 0);
        list = sfs_scope_infos_json(scopes, n_scopes);
        FZ_CHECK(list != NULL);
        sfs_scope_infos_free(scopes, n_scopes);
        {
                const char *t = json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN);
                json_object *again = NULL;
                char *doc = malloc(strlen(t) + 16);
                if (!doc)
                        abort();
                sprintf(doc, "{\"scopes\":%s}", t);
                FZ_CHECK(oci_json_parse(doc, strlen(doc), &again) == 0);
                json_object_put(again);
                free(doc);
        }
        json_object_put(list);
        sfs_registry_free(reg);
        sfs_ocistore_close(runtime);
        sfs_ocistore_close(store);
        sfs_tree_free(main);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}
