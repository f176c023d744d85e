/* SPDX-License-Identifier: MIT */
/* A backend-neutral mount record and the set of records a backend gathers. Both backends fill
 * the same fields the same way (strings unescaped, options normalised) so one judge
 * (judge.h) decides for both. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mountcheck/policy.h"
#include "mountcheck/verdict.h"

enum {
        MC_PROP_SHARED = 1U << 0,     /* shared:N — mount events propagate both ways */
        MC_PROP_SLAVE = 1U << 1,      /* master:N — mount events propagate in */
        MC_PROP_UNBINDABLE = 1U << 2, /* harmless, recorded for completeness */
};

struct mc_mount {
        /* One id kind per set: unique ids from statmount, reusable ids from mountinfo. */
        uint64_t id;
        uint64_t parent_id;
        char *mount_point;  /* absolute, raw bytes (never escaped) */
        char *root;         /* path of the mount's root inside its filesystem, "/" if whole */
        char *fstype;       /* "tmpfs", or type.subtype: "fuse.snapfs" */
        char *source;       /* may be NULL */
        uint32_t options;   /* effective MC_OPT_* (RO if the mount or its superblock is ro) */
        uint32_t propagation; /* MC_PROP_* */
        bool idmapped;
        bool has_user_id;   /* superblock user_id= (FUSE: the uid that mounted) */
        uint32_t user_id;
        bool has_size;      /* superblock size= (tmpfs); 0 means unlimited */
        uint64_t size;
        bool user_id_bad;   /* malformed or contradictory: stays unknown */
        bool size_bad;
};

struct mc_mount_set {
        struct mc_mount *v;
        size_t n, cap;
};

/* Appends a zeroed record and returns it, or NULL on ENOMEM (set unchanged). */
struct mc_mount *mc_mount_set_push(struct mc_mount_set *set);
/* Drops the last record (a backend that failed half-way through filling it). */
void mc_mount_set_pop(struct mc_mount_set *set);
/* The record with this id, or NULL. */
const struct mc_mount *mc_mount_set_find(const struct mc_mount_set *set, uint64_t id);
void mc_mount_set_free(struct mc_mount_set *set);

/* Sets a string field to a copy of s (NULL stays NULL). 0 or -ENOMEM. */
int mc_mount_set_str(char **field, const char *s);

/* Applies one superblock option ("ro", "size=1024k", "user_id=0", ...) to m; options that do
 * not matter to any policy are ignored. A malformed value of an option that matters clears
 * what is known about it, so the policy check refuses rather than guesses. */
void mc_mount_apply_sb_option(struct mc_mount *m, const char *opt);
