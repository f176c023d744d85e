/* SPDX-License-Identifier: MIT */
/* The fallback backend: /proc/self/mountinfo parsed by libmount, which unescapes \040 and
 * friends. Stacking is still decided by mount ids and parent ids, never by line order: on
 * current kernels lines come out in mount-id order, so a detached mount created early and
 * moved on top is listed before the mount it covers, and mnt_table_find_target() can return
 * either one. */
#include <assert.h>
#include <errno.h>
#include <libmount.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "mountcheck/backend.h"
#include "mountcheck/kernel-calls.h"
#include "common/util.h"

#define MOUNTINFO "/proc/self/mountinfo"

static void tablep(struct libmnt_table **tb)
{
        if (*tb) {
                int saved = errno;
                mnt_unref_table(*tb);
                errno = saved;
        }
}

static void iterp(struct libmnt_iter **it)
{
        if (*it)
                mnt_free_iter(*it);
}

/* libmount skips a line it cannot parse by default; a skipped line could be the mount on top
 * of ours, so refuse the whole table instead. */
static int parse_error(struct libmnt_table *tb _unused_, const char *file _unused_, int line _unused_)
{
        return -EBADMSG;
}

/* Calls fn(name, value) for each option of a libmount option string. */
static int for_each_option(const char *optstr, struct mc_mount *m,
                           void (*fn)(struct mc_mount *m, const char *opt))
{
        _cleanup_free_ char *copy = NULL;
        char *p, *name, *value;
        size_t namesz, valuesz;
        int r;

        if (!optstr)
                return 0;
        copy = strdup(optstr);
        if (!copy)
                return -ENOMEM;
        p = copy;
        while ((r = mnt_optstr_next_option(&p, &name, &namesz, &value, &valuesz)) == 0) {
                _cleanup_free_ char *opt = NULL;
                if (value) {
                        if (asprintf(&opt, "%.*s=%.*s", (int)namesz, name, (int)valuesz, value) < 0)
                                return -ENOMEM;
                } else {
                        opt = strndup(name, namesz);
                        if (!opt)
                                return -ENOMEM;
                }
                fn(m, opt);
        }
        return r < 0 ? -EBADMSG : 0;
}

/* Field 6, the per-mount options: the same flags statmount reports as mnt_attr. */
static void apply_vfs_option(struct mc_mount *m, const char *opt)
{
        static const struct {
                const char *name;
                uint32_t bit;
        } map[] = {
                { "ro", MC_OPT_RO },         { "rw", MC_OPT_RW },
                { "nosuid", MC_OPT_NOSUID }, { "nodev", MC_OPT_NODEV },
                { "noexec", MC_OPT_NOEXEC }, { "noatime", MC_OPT_NOATIME },
                { "nodiratime", MC_OPT_NODIRATIME }, { "nosymfollow", MC_OPT_NOSYMFOLLOW },
        };

        if (strcmp(opt, "idmapped") == 0) {
                m->idmapped = true;
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(map); i++)
                if (strcmp(opt, map[i].name) == 0)
                        m->options |= map[i].bit;
}

static int mi_fill(struct libmnt_fs *fs, struct mc_mount *m)
{
        unsigned long prop = 0;
        int id = mnt_fs_get_id(fs), parent = mnt_fs_get_parent_id(fs);
        int r;

        assert(id >= 0); /* mi_collect_from() skips a line with a negative id */
        /* libmount reads the ids with strtol: "-1" parses, but no mount has it. */
        if (parent < 0)
                return -EBADMSG;
        m->id = (uint64_t)id;
        m->parent_id = (uint64_t)parent;
        /* libmount has already unescaped \040 \011 \012 \134: these are raw paths. */
        if ((r = mc_mount_set_str(&m->mount_point, mnt_fs_get_target(fs))) < 0 ||
            (r = mc_mount_set_str(&m->root, mnt_fs_get_root(fs))) < 0 ||
            (r = mc_mount_set_str(&m->fstype, mnt_fs_get_fstype(fs))) < 0 ||
            (r = mc_mount_set_str(&m->source, mnt_fs_get_source(fs))) < 0)
                return r;
        /* libmount fails a mountinfo line that lacks any of them, but it guesses a table's
         * format from its first line: text that starts like fstab is read as fstab, which has
         * no root. The kernel's mountinfo never does; text a caller hands in may. */
        if (!m->mount_point || !m->root || !m->fstype)
                return -EBADMSG;

        r = for_each_option(mnt_fs_get_vfs_options(fs), m, apply_vfs_option);
        if (r < 0)
                return r;
        /* Exactly one of ro/rw, as statmount reports it; then the superblock may add ro. */
        if (m->options & MC_OPT_RO)
                m->options &= ~(uint32_t)MC_OPT_RW;
        else
                m->options |= MC_OPT_RW;
        r = for_each_option(mnt_fs_get_fs_options(fs), m, mc_mount_apply_sb_option);
        if (r < 0)
                return r;

        /* It fails only for a NULL argument; an unknown optional field is no propagation. */
        r = mnt_fs_get_propagation(fs, &prop);
        assert(r == 0);
        if (prop & MS_SHARED)
                m->propagation |= MC_PROP_SHARED;
        if (prop & MS_SLAVE)
                m->propagation |= MC_PROP_SLAVE;
        if (prop & MS_UNBINDABLE)
                m->propagation |= MC_PROP_UNBINDABLE;
        return 0;
}

static int mi_push(struct libmnt_fs *fs, struct mc_mount_set *set)
{
        struct mc_mount *m = mc_mount_set_push(set);
        int r;

        if (!m)
                return -ENOMEM;
        r = mi_fill(fs, m);
        if (r < 0)
                mc_mount_set_pop(set);
        return r;
}

/* Collects from the table in f, or from /proc/self/mountinfo when f is NULL. */
static int mi_collect_from(const struct mc_query *q, FILE *f, struct mc_mount_set *set)
{
        _cleanup_(tablep) struct libmnt_table *tb = NULL;
        _cleanup_(iterp) struct libmnt_iter *it = NULL;
        struct libmnt_fs *fs;
        bool have_target = false;
        uint64_t parent = 0;
        int r;

        if (!q || !set || ((q->want & ~MC_WANT_AT_PATH) && !q->has_target))
                return -EINVAL;
        tb = mnt_new_table();
        it = mnt_new_iter(MNT_ITER_FORWARD);
        if (!tb || !it)
                return -ENOMEM;
        mnt_table_set_parser_errcb(tb, parse_error);
        /* The stream is named as the real file, so libmount parses both alike. */
        r = f ? mnt_table_parse_stream(tb, f, MOUNTINFO) : mc_kernel()->parse_mountinfo(tb);
        if (r < 0)
                return r == -1 ? -EBADMSG : r;

        /* First pass: our entry, wherever it is listed, to learn its parent id. */
        while (q->has_target && mnt_table_next_fs(tb, it, &fs) == 0)
                if (mnt_fs_get_id(fs) >= 0 && (uint64_t)mnt_fs_get_id(fs) == q->target_id) {
                        have_target = true;
                        parent = (uint64_t)mnt_fs_get_parent_id(fs);
                        break;
                }

        mnt_reset_iter(it, MNT_ITER_FORWARD);
        while (mnt_table_next_fs(tb, it, &fs) == 0) {
                int id = mnt_fs_get_id(fs), pid = mnt_fs_get_parent_id(fs);
                const char *target = mnt_fs_get_target(fs);
                bool want = false;

                if (id < 0 || mc_mount_set_find(set, (uint64_t)id))
                        continue;
                if (q->has_target && (uint64_t)id == q->target_id)
                        want = q->want & MC_WANT_TARGET;
                else if (have_target && (uint64_t)id == parent)
                        want = q->want & MC_WANT_PARENT;
                if (q->has_target && pid >= 0 && (uint64_t)pid == q->target_id &&
                    (uint64_t)id != q->target_id)
                        want |= q->want & MC_WANT_CHILDREN;
                if ((q->want & MC_WANT_AT_PATH) && q->path && target && strcmp(target, q->path) == 0)
                        want = true;
                if (!want)
                        continue;
                r = mi_push(fs, set);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int mi_collect(const struct mc_query *q, struct mc_mount_set *set)
{
        return mi_collect_from(q, NULL, set);
}

int mc_mountinfo_collect_stream(const struct mc_query *q, FILE *f, struct mc_mount_set *set)
{
        if (!f)
                return -EINVAL;
        return mi_collect_from(q, f, set);
}

const struct mc_backend_ops mc_backend_mountinfo = {
        .name = "mountinfo",
        .kind = MC_BACKEND_MOUNTINFO,
        .id_unique = false,
        .collect = mi_collect,
};
