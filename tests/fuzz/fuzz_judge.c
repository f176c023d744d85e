/* SPDX-License-Identifier: MIT */
/* mc_judge() on records built from fuzz bytes: colliding and self-parented ids, NULL and
 * hostile strings (newlines, escapes), any option bits, superblock options applied through
 * mc_mount_apply_sb_option(), and any policy. The verdict must be well-formed, the same when
 * judged twice, and "compliant" only when every rule holds (fz_judge_and_check). */
#include <errno.h>

#include "tests/fuzz/fuzz-judge.h"
#include "mountcheck/judge.h"

#define PATH "/run/snap"

static const char *const paths[] = {
        PATH, "/run", "/", PATH "/sub", PATH "/", "run/snap", "/run//snap", "/run/./snap",
        "/run/../snap", PATH "\nstacked: forged", "",
};
static const char *const roots[] = { "/", "/sub", "", NULL, "/\n" };
static const char *const fstypes[] = { "fuse.snapfs", "tmpfs", "fuse", "fuse.snapfs\n", "", NULL };
static const char *const sb_options[] = {
        "ro", "rw", "user_id=0", "user_id=1000", "user_id=", "user_id=4294967296",
        "user_id=-1", "size=1m", "size=0", "size=2G", "size=18446744073709551616", "size=",
        "group_id=0", "mode=1777",
};
static const int open_errors[] = { 0, -ELOOP, -ENOENT, -ENOTDIR, -EACCES };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* One of the table's strings, or raw bytes from the input. The caller frees it. */
static char *pick(struct fz_reader *in, const char *const *table, size_t n, bool *is_null)
{
        uint8_t sel = fz_u8(in);

        *is_null = false;
        if (sel < n) {
                if (!table[sel]) {
                        *is_null = true;
                        return NULL;
                }
                return strdup(table[sel]);
        }
        return fz_str(in, 300);
}

static void set_field(char **field, char *value, bool is_null)
{
        FZ_CHECK(mc_mount_set_str(field, is_null ? NULL : value) == 0);
        free(value);
}

static void fill_record(struct fz_reader *in, struct mc_mount *m)
{
        bool null;
        char *s;
        unsigned n;

        m->id = fz_u8(in) % 10;
        m->parent_id = fz_u8(in) % 10;
        s = pick(in, paths, N(paths), &null);
        set_field(&m->mount_point, s, null);
        s = pick(in, roots, N(roots), &null);
        set_field(&m->root, s, null);
        s = pick(in, fstypes, N(fstypes), &null);
        set_field(&m->fstype, s, null);
        s = pick(in, fstypes, N(fstypes), &null);
        set_field(&m->source, s, null);
        m->options = fz_u32(in);
        m->propagation = fz_u8(in);
        m->idmapped = fz_u8(in) & 1;
        n = fz_u8(in) % 4;
        for (unsigned i = 0; i < n; i++) {
                s = pick(in, sb_options, N(sb_options), &null);
                mc_mount_apply_sb_option(m, s);
                free(s);
        }
}

static void fill_policy(struct fz_reader *in, struct mc_policy *pol)
{
        bool null;
        char *s;

        FZ_CHECK(mc_policy_preset(pol, fz_u8(in) & 1 ? "tmpfs" : "snapfs") == 0);
        if (fz_u8(in) & 1) {
                /* Any value, not only what mc_policy_set would accept: the judge must not
                 * depend on the parser for its safety. */
                s = pick(in, fstypes, N(fstypes), &null);
                snprintf(pol->fstype, sizeof(pol->fstype), "%s", null ? "" : s);
                free(s);
                pol->require = fz_u32(in);
                pol->forbid = fz_u32(in);
                pol->require_private = fz_u8(in) & 1;
                pol->check_owner = fz_u8(in) & 1;
                pol->owner = fz_u32(in);
                pol->check_mode = fz_u8(in) & 1;
                pol->mode = fz_u32(in);
                pol->check_size = fz_u8(in) & 1;
                pol->max_size = fz_u64(in);
                pol->insecure_own_mount = fz_u8(in) & 1;
                pol->trust_user_namespace = fz_u8(in) & 1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct fz_reader in = { data, size };
        struct mc_mount_set set = { 0 };
        struct mc_policy pol;
        struct mc_facts f = { 0 };
        char *path;
        bool null;
        unsigned n;

        fill_policy(&in, &pol);
        path = pick(&in, paths, N(paths), &null);
        f.path = path;
        f.open_error = open_errors[fz_u8(&in) % N(open_errors)];
        f.mount_id = fz_u8(&in) % 10;
        f.mount_root = fz_u8(&in) & 1;
        f.root_mode = fz_u32(&in);
        f.transport_dead = fz_u8(&in) & 1;
        f.changed = fz_u8(&in) & 1;
        f.caller_uid = fz_u32(&in);
        f.caller_initial_userns = fz_u8(&in) & 1;
        f.has_root_uid = fz_u8(&in) & 1;
        f.root_uid = fz_u32(&in);
        n = fz_u8(&in) % 12;
        for (unsigned i = 0; i < n; i++) {
                struct mc_mount *m = mc_mount_set_push(&set);
                FZ_CHECK(m != NULL);
                fill_record(&in, m);
        }
        /* Now and then a half-filled record is dropped, as a failing backend does. */
        if (set.n && fz_u8(&in) == 0xff)
                mc_mount_set_pop(&set);
        f.mounts = set.v;
        f.n_mounts = set.n;
        /* Read last, so the inputs of the corpus from before the fact existed mean what they
         * meant then. */
        f.caller_unmapped = fz_u8(&in) & 1;

        fz_judge_and_check(&f, &pol);

        mc_mount_set_free(&set);
        free(path);
        return 0;
}
