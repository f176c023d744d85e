/* SPDX-License-Identifier: MIT */
/* The checks every mountcheck verdict must pass, whatever records produced it: shared by the
 * targets that end in mc_judge(). */
#pragma once

#include "tests/fuzz/fuzz.h"
#include "mountcheck/judge.h"

/* The first record with this id: the judge's own rule, restated here. */
static inline const struct mc_mount *fz_find(const struct mc_facts *f, uint64_t id)
{
        for (size_t i = 0; i < f->n_mounts; i++)
                if (f->mounts[i].id == id)
                        return &f->mounts[i];
        return NULL;
}

/* Judges f under pol and checks the verdict: well-formed findings, the same verdict when
 * judged twice, and fail-closed: "compliant" only when every rule of docs/design.md holds on the
 * records, restated independently of record.c. Returns the verdict's compliance. */
static inline bool fz_judge_and_check(const struct mc_facts *f, const struct mc_policy *pol)
{
        struct mc_verdict v, again;
        const struct mc_mount *t, *p;

        mc_verdict_init(&v);
        mc_judge(f, pol, &v);
        mc_verdict_init(&again);
        mc_judge(f, pol, &again);
        FZ_CHECK(memcmp(&v, &again, sizeof(v)) == 0);

        FZ_CHECK(v.n_findings <= MC_FINDINGS_MAX);
        FZ_CHECK(v.compliant == (v.n_findings == 0 && v.n_dropped == 0));
        for (size_t i = 0; i < v.n_findings; i++) {
                const char *m = v.findings[i].message;
                size_t len = strnlen(m, MC_MESSAGE_MAX);

                FZ_CHECK(mc_code_name(v.findings[i].code) != NULL);
                FZ_CHECK(len < MC_MESSAGE_MAX);
                /* One line each: a mount point with a newline must not forge a finding. */
                for (size_t j = 0; j < len; j++)
                        FZ_CHECK((unsigned char)m[j] >= 0x20 && m[j] != 0x7f);
        }
        if (!v.compliant)
                return false;

        FZ_CHECK(f->path && mc_path_is_canonical(f->path));
        FZ_CHECK(f->open_error == 0 && f->mount_root && !f->transport_dead && !f->changed &&
                 !f->caller_unmapped);
        t = fz_find(f, f->mount_id);
        FZ_CHECK(t != NULL);
        FZ_CHECK(strcmp(fz_s(t->mount_point), f->path) == 0);
        FZ_CHECK(strcmp(fz_s(t->root), "/") == 0);
        p = t->parent_id != t->id ? fz_find(f, t->parent_id) : NULL;
        FZ_CHECK(!p || p == t || strcmp(fz_s(p->mount_point), f->path) != 0);
        for (size_t i = 0; i < f->n_mounts; i++) {
                const struct mc_mount *m = &f->mounts[i];
                /* Nothing on top, no submount: no other mount has ours as its parent. */
                FZ_CHECK(m->id == t->id || m->parent_id != t->id);
        }
        FZ_CHECK(!pol->fstype[0] || strcmp(fz_s(t->fstype), pol->fstype) == 0);
        FZ_CHECK((t->options & pol->require & MC_OPT_ALL) == (pol->require & MC_OPT_ALL));
        FZ_CHECK((t->options & pol->forbid & MC_OPT_ALL) == 0);
        FZ_CHECK(!pol->require_private || !(t->propagation & (MC_PROP_SHARED | MC_PROP_SLAVE)));
        FZ_CHECK(!t->idmapped);
        FZ_CHECK(!pol->check_owner || (t->has_user_id && t->user_id == pol->owner));
        FZ_CHECK(!pol->check_mode || (f->root_mode & 07777) == (pol->mode & 07777));
        FZ_CHECK(!pol->check_size || (t->has_size && t->size && t->size <= pol->max_size));
        return true;
}

/* Judges the mount id at path among mounts under both presets, checking every verdict. */
static inline void fz_judge_both_presets(const char *path, uint64_t id,
                                         const struct mc_mount *mounts, size_t n)
{
        struct mc_facts f = {
                .path = path,
                .mount_id = id,
                .mount_root = true,
                .root_mode = 0555,
                .mounts = mounts,
                .n_mounts = n,
        };
        struct mc_policy pol;

        FZ_CHECK(mc_policy_preset(&pol, "snapfs") == 0);
        pol.owner = 0;
        fz_judge_and_check(&f, &pol);
        FZ_CHECK(mc_policy_preset(&pol, "tmpfs") == 0);
        fz_judge_and_check(&f, &pol);
}
