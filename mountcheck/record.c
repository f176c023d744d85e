/* SPDX-License-Identifier: MIT */
/* Mount records: the set a backend fills, and the superblock options that matter read into a
 * record. The judge that decides on them is judge.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mountcheck/record.h"

#include "common/array.h"
#include "common/values.h"

struct mc_mount *mc_mount_set_push(struct mc_mount_set *set)
{
        if (ARRAY_GROW(set->v, set->cap, set->n + 1, 8) < 0)
                return NULL;
        memset(&set->v[set->n], 0, sizeof(set->v[0]));
        return &set->v[set->n++];
}

static void mount_free(struct mc_mount *m)
{
        free(m->mount_point);
        free(m->root);
        free(m->fstype);
        free(m->source);
        memset(m, 0, sizeof(*m));
}

void mc_mount_set_pop(struct mc_mount_set *set)
{
        if (set->n > 0)
                mount_free(&set->v[--set->n]);
}

const struct mc_mount *mc_mount_set_find(const struct mc_mount_set *set, uint64_t id)
{
        for (size_t i = 0; i < set->n; i++)
                if (set->v[i].id == id)
                        return &set->v[i];
        return NULL;
}

void mc_mount_set_free(struct mc_mount_set *set)
{
        for (size_t i = 0; i < set->n; i++)
                mount_free(&set->v[i]);
        free(set->v);
        *set = (struct mc_mount_set){ 0 };
}

int mc_mount_set_str(char **field, const char *s)
{
        char *c = NULL;

        if (s) {
                c = strdup(s);
                if (!c)
                        return -ENOMEM;
        }
        free(*field);
        *field = c;
        return 0;
}

static bool parse_u32(const char *s, uint32_t *out)
{
        uint64_t v = 0;

        if (*s == '\0')
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (uint64_t)(*s - '0');
                if (v > UINT32_MAX)
                        return false;
        }
        *out = (uint32_t)v;
        return true;
}

void mc_mount_apply_sb_option(struct mc_mount *m, const char *opt)
{
        if (!m || !opt)
                return;
        if (strcmp(opt, "ro") == 0) {
                /* A read-only superblock makes every mount of it read-only, whatever the
                 * per-mount flag says. */
                m->options = (m->options & ~(uint32_t)MC_OPT_RW) | MC_OPT_RO;
        } else if (strncmp(opt, "user_id=", 8) == 0) {
                uint32_t uid;
                /* Two different answers to "who mounted this" are no answer. */
                if (m->user_id_bad)
                        return;
                if (!parse_u32(opt + 8, &uid) || (m->has_user_id && m->user_id != uid)) {
                        m->has_user_id = false;
                        m->user_id_bad = true;
                        return;
                }
                m->has_user_id = true;
                m->user_id = uid;
        } else if (strncmp(opt, "size=", 5) == 0) {
                uint64_t bytes;
                if (m->size_bad)
                        return;
                if (value_parse_size(opt + 5, &bytes) < 0 || (m->has_size && m->size != bytes)) {
                        m->has_size = false;
                        m->size_bad = true;
                        return;
                }
                m->has_size = true;
                m->size = bytes;
        }
}
