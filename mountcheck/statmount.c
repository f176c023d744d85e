/* SPDX-License-Identifier: MIT */
/* The fast backend: statmount()/listmount() (Linux 6.8+) by unique mount id. Cost does not
 * grow with the mount table except in listmount(), which the kernel answers by walking it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mountcheck/backend.h"
#include "mountcheck/kernel-calls.h"
#include "common/util.h"

/* Everything a record needs. FS_SUBTYPE, MNT_OPTS and OPT_ARRAY are only reported when the
 * mount has a subtype or options, so SUPPORTED_MASK tells "none" from "kernel too old". */
#define SM_RECORD_MASK                                                                     \
        (MC_STATMOUNT_SB_BASIC | MC_STATMOUNT_MNT_BASIC | MC_STATMOUNT_MNT_ROOT |          \
         MC_STATMOUNT_MNT_POINT | MC_STATMOUNT_FS_TYPE | MC_STATMOUNT_MNT_OPTS |           \
         MC_STATMOUNT_FS_SUBTYPE | MC_STATMOUNT_SB_SOURCE | MC_STATMOUNT_OPT_ARRAY |       \
         MC_STATMOUNT_SUPPORTED_MASK)
#define SM_BUF_MIN 4096
#define SM_BUF_MAX (16U << 20)
#define LM_BATCH 512

struct smbuf {
        struct mc_kstatmount *sm;
        size_t cap;
};

static void smbuf_free(struct smbuf *b)
{
        free(b->sm);
        b->sm = NULL;
        b->cap = 0;
}

/* 0, or -errno: -ENOENT when the mount is gone, -ENOSYS on a kernel without statmount. */
static int sm_stat(struct smbuf *b, uint64_t id, uint64_t mask)
{
        struct mc_kmnt_id_req req = {
                .size = MC_MNT_ID_REQ_SIZE_VER0,
                .mnt_id = id,
                .param = mask,
        };

        for (;;) {
                if (!b->sm) {
                        b->sm = malloc(SM_BUF_MIN);
                        if (!b->sm)
                                return -ENOMEM;
                        b->cap = SM_BUF_MIN;
                }
                if (mc_kernel()->statmount(&req, b->sm, b->cap, 0) == 0)
                        return 0;
                if (errno != EOVERFLOW)
                        return negative_errno();
                /* The strings did not fit (a long mount point, many options): grow. */
                if (b->cap >= SM_BUF_MAX)
                        return -EOVERFLOW;
                free(b->sm);
                b->cap *= 4;
                b->sm = malloc(b->cap);
                if (!b->sm)
                        return -ENOMEM;
        }
}

/* A [str] field, or NULL if the offset or its terminator falls outside what the kernel
 * wrote: never trust an offset to stay inside the buffer. */
static const char *sm_string(const struct smbuf *b, uint32_t off)
{
        size_t end = b->sm->size < b->cap ? b->sm->size : b->cap;
        size_t base = offsetof(struct mc_kstatmount, str);

        if (end <= base || off >= end - base)
                return NULL;
        if (!memchr(b->sm->str + off, '\0', end - base - off))
                return NULL;
        return b->sm->str + off;
}

static bool sm_has(const struct mc_kstatmount *sm, uint64_t bit)
{
        return sm->mask & bit;
}

/* The kernel can report this field even if this mount has none of it. */
static bool sm_supported(const struct mc_kstatmount *sm, uint64_t bit)
{
        return sm_has(sm, bit) ||
               (sm_has(sm, MC_STATMOUNT_SUPPORTED_MASK) && (sm->supported_mask & bit));
}

/* The mount attributes that are one option each. */
static const struct bit_map attr_options[] = {
        { MC_MOUNT_ATTR_NOSUID, MC_OPT_NOSUID },
        { MC_MOUNT_ATTR_NODEV, MC_OPT_NODEV },
        { MC_MOUNT_ATTR_NOEXEC, MC_OPT_NOEXEC },
        { MC_MOUNT_ATTR_NODIRATIME, MC_OPT_NODIRATIME },
        { MC_MOUNT_ATTR_NOSYMFOLLOW, MC_OPT_NOSYMFOLLOW },
};

static uint32_t attr_to_options(uint64_t attr)
{
        uint32_t o = (uint32_t)BIT_MAP(attr, attr_options);

        o |= attr & MC_MOUNT_ATTR_RDONLY ? MC_OPT_RO : MC_OPT_RW;
        /* atime is a field of three values, not a bit. */
        if ((attr & MC_MOUNT_ATTR__ATIME) == MC_MOUNT_ATTR_NOATIME)
                o |= MC_OPT_NOATIME;
        return o;
}

static int sm_fill(const struct smbuf *b, struct mc_mount *m)
{
        const struct mc_kstatmount *sm = b->sm;
        const uint64_t need = MC_STATMOUNT_SB_BASIC | MC_STATMOUNT_MNT_BASIC | MC_STATMOUNT_FS_TYPE;
        const char *type, *sub = NULL, *s;
        int r;

        if ((sm->mask & need) != need || !sm_supported(sm, MC_STATMOUNT_FS_SUBTYPE) ||
            !sm_supported(sm, MC_STATMOUNT_MNT_OPTS))
                return -EOPNOTSUPP;

        m->id = sm->mnt_id;
        m->parent_id = sm->mnt_parent_id;
        /* Raw strings: unlike mountinfo nothing is escaped, a newline is a newline. A mount
         * outside our root has no mount point we could name: it stays "". */
        s = sm_has(sm, MC_STATMOUNT_MNT_POINT) ? sm_string(b, sm->mnt_point) : "";
        if (!s || (r = mc_mount_set_str(&m->mount_point, s)) < 0)
                return s ? r : -EIO;
        s = sm_has(sm, MC_STATMOUNT_MNT_ROOT) ? sm_string(b, sm->mnt_root) : "";
        if (!s || (r = mc_mount_set_str(&m->root, s)) < 0)
                return s ? r : -EIO;
        if (sm_has(sm, MC_STATMOUNT_SB_SOURCE)) {
                s = sm_string(b, sm->sb_source);
                if (!s || (r = mc_mount_set_str(&m->source, s)) < 0)
                        return s ? r : -EIO;
        }

        /* mountinfo spells a FUSE type "fuse.<subtype>": build the same text. */
        type = sm_string(b, sm->fs_type);
        if (!type)
                return -EIO;
        if (sm_has(sm, MC_STATMOUNT_FS_SUBTYPE)) {
                sub = sm_string(b, sm->fs_subtype);
                if (!sub)
                        return -EIO;
        }
        if (sub && *sub) {
                char *t;
                if (asprintf(&t, "%s.%s", type, sub) < 0)
                        return -ENOMEM;
                free(m->fstype);
                m->fstype = t;
        } else if ((r = mc_mount_set_str(&m->fstype, type)) < 0)
                return r;

        m->options = attr_to_options(sm->mnt_attr);
        m->idmapped = sm->mnt_attr & MC_MOUNT_ATTR_IDMAP;
        if (sm->sb_flags & MC_SB_RDONLY)
                mc_mount_apply_sb_option(m, "ro");
        if (sm->mnt_propagation & MC_MS_SHARED)
                m->propagation |= MC_PROP_SHARED;
        if (sm->mnt_propagation & MC_MS_SLAVE)
                m->propagation |= MC_PROP_SLAVE;
        if (sm->mnt_propagation & MC_MS_UNBINDABLE)
                m->propagation |= MC_PROP_UNBINDABLE;

        /* Superblock options: the unescaped array where the kernel has it, else the
         * comma-separated string (values we read are numbers, escaping cannot matter). */
        if (sm_has(sm, MC_STATMOUNT_OPT_ARRAY)) {
                uint32_t off = sm->opt_array;
                for (uint32_t i = 0; i < sm->opt_num; i++) {
                        s = sm_string(b, off);
                        if (!s)
                                return -EIO;
                        mc_mount_apply_sb_option(m, s);
                        off += (uint32_t)strlen(s) + 1;
                }
        } else if (sm_has(sm, MC_STATMOUNT_MNT_OPTS)) {
                _cleanup_free_ char *copy = NULL;
                char *save = NULL;
                s = sm_string(b, sm->mnt_opts);
                if (!s)
                        return -EIO;
                copy = strdup(s);
                if (!copy)
                        return -ENOMEM;
                for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save))
                        mc_mount_apply_sb_option(m, o);
        }
        return 0;
}

int mc_statmount_record(const void *reply, size_t len, struct mc_mount *m)
{
        /* sm_fill only reads through the buffer; smbuf's pointer is not const because
         * sm_stat reallocates it. */
        const struct smbuf b = { .sm = (struct mc_kstatmount *)reply, .cap = len };

        if (!reply || !m || len < sizeof(struct mc_kstatmount))
                return -EIO;
        return sm_fill(&b, m);
}

/* Appends the record of mount id; -ENOENT if it is gone. */
static int sm_fetch(struct smbuf *b, uint64_t id, struct mc_mount_set *set)
{
        struct mc_mount *m;
        int r;

        r = sm_stat(b, id, SM_RECORD_MASK);
        if (r < 0)
                return r;
        m = mc_mount_set_push(set);
        if (!m)
                return -ENOMEM;
        r = sm_fill(b, m);
        if (r < 0) {
                mc_mount_set_pop(set);
                return r;
        }
        return 0;
}

/* Calls fn for every mount listmount() returns below parent, in batches. On this kernel
 * listmount() lists all descendants, not only children: callers filter by parent id. */
static int sm_list(uint64_t parent, int (*fn)(uint64_t id, void *ud), void *ud)
{
        uint64_t ids[LM_BATCH];
        struct mc_kmnt_id_req req = {
                .size = MC_MNT_ID_REQ_SIZE_VER0,
                .mnt_id = parent,
                .param = 0,
        };

        for (;;) {
                long n = mc_kernel()->listmount(&req, ids, LM_BATCH, 0);
                if (n < 0)
                        return negative_errno();
                for (long i = 0; i < n; i++) {
                        int r = fn(ids[i], ud);
                        if (r < 0)
                                return r;
                }
                if (n < LM_BATCH)
                        return 0;
                req.param = ids[n - 1]; /* continue after the last id listed */
        }
}

struct walk {
        struct smbuf *b;
        struct mc_mount_set *set;
        const struct mc_query *q;
};

static int sm_child(uint64_t id, void *ud)
{
        struct walk *w = ud;
        int r;

        if (mc_mount_set_find(w->set, id))
                return 0;
        r = sm_stat(w->b, id, MC_STATMOUNT_MNT_BASIC);
        if (r == -ENOENT)
                return 0; /* unmounted since it was listed */
        if (r < 0)
                return r;
        if (w->b->sm->mnt_parent_id != w->q->target_id)
                return 0; /* a grandchild: its own parent answers for it */
        r = sm_fetch(w->b, id, w->set);
        return r == -ENOENT ? 0 : r;
}

static int sm_at_path(uint64_t id, void *ud)
{
        struct walk *w = ud;
        const char *mp;
        int r;

        if (mc_mount_set_find(w->set, id))
                return 0;
        r = sm_stat(w->b, id, MC_STATMOUNT_MNT_POINT);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!sm_has(w->b->sm, MC_STATMOUNT_MNT_POINT))
                return 0;
        mp = sm_string(w->b, w->b->sm->mnt_point);
        if (!mp || strcmp(mp, w->q->path) != 0)
                return 0;
        r = sm_fetch(w->b, id, w->set);
        return r == -ENOENT ? 0 : r;
}

static int sm_collect(const struct mc_query *q, struct mc_mount_set *set)
{
        struct smbuf b _cleanup_(smbuf_free) = { 0 };
        struct walk w = { .b = &b, .set = set, .q = q };
        const struct mc_mount *t;
        int r;

        if (!q || !set || ((q->want & ~MC_WANT_AT_PATH) && !q->has_target))
                return -EINVAL;

        if ((q->want & MC_WANT_TARGET) && !mc_mount_set_find(set, q->target_id)) {
                r = sm_fetch(&b, q->target_id, set);
                if (r < 0 && r != -ENOENT) /* gone: the judge reports the change */
                        return r;
        }
        t = q->has_target ? mc_mount_set_find(set, q->target_id) : NULL;
        if ((q->want & MC_WANT_PARENT) && t && t->parent_id != t->id &&
            !mc_mount_set_find(set, t->parent_id)) {
                r = sm_fetch(&b, t->parent_id, set);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if ((q->want & MC_WANT_CHILDREN) && q->has_target) {
                r = sm_list(q->target_id, sm_child, &w);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if ((q->want & MC_WANT_AT_PATH) && q->path) {
                /* Only on the refusal path: this statmounts every mount in the namespace. */
                r = sm_list(MC_LSMT_ROOT, sm_at_path, &w);
                if (r < 0)
                        return r;
        }
        return 0;
}

const struct mc_backend_ops mc_backend_statmount = {
        .name = "statmount",
        .kind = MC_BACKEND_STATMOUNT,
        .id_unique = true,
        .collect = sm_collect,
};
