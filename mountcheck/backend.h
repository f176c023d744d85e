/* SPDX-License-Identifier: MIT */
/* A mount-table backend: a small table of functions, so tests can swap in their own. A
 * backend only gathers records; mc_judge() alone decides. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mountcheck/record.h"
#include "mountcheck/verdict.h"

enum {
        MC_WANT_TARGET = 1U << 0,   /* the mount with id target_id */
        MC_WANT_PARENT = 1U << 1,   /* its parent */
        MC_WANT_CHILDREN = 1U << 2, /* its direct children */
        MC_WANT_AT_PATH = 1U << 3,  /* every mount whose mount point is path */
};

struct mc_query {
        const char *path;
        uint32_t want;      /* MC_WANT_* */
        bool has_target;
        uint64_t target_id; /* in the backend's id kind (see id_unique) */
};

struct mc_backend_ops {
        const char *name;
        enum mc_backend kind; /* what mc_verdict.backend reports */
        /* true: ids are the 64-bit unique ids (statx STATX_MNT_ID_UNIQUE); false: the
         * reusable ids /proc/self/mountinfo shows (STATX_MNT_ID). */
        bool id_unique;
        /* Appends to *set the records q asks for, skipping ids already in it. 0, or -ENOSYS /
         * -EOPNOTSUPP when this backend cannot work on this kernel (the caller may fall back),
         * or another -errno. Records in *set stay valid on error; the caller frees the set. */
        int (*collect)(const struct mc_query *q, struct mc_mount_set *set);
};

/* The record parsers behind the two backends, callable on bytes that did not come from the
 * kernel (the fuzz targets feed them arbitrary input). */

/* Fills *m from one statmount() reply of len bytes (at least the fixed struct); every string
 * offset is checked against len and against the reply's own size. 0, -EOPNOTSUPP when a field
 * the record needs is absent, -EIO for a malformed reply, -ENOMEM. */
int mc_statmount_record(const void *reply, size_t len, struct mc_mount *m);

/* mc_backend_mountinfo's collect, reading the mountinfo text in f instead of
 * /proc/self/mountinfo. Same contract; -EBADMSG when a line does not parse. */
int mc_mountinfo_collect_stream(const struct mc_query *q, FILE *f, struct mc_mount_set *set);

extern const struct mc_backend_ops mc_backend_statmount;
extern const struct mc_backend_ops mc_backend_mountinfo;

/* mc_check_path() with an explicit backend table (a test's, or a wrapper around a real one):
 * same contract, no fallback. */
int mc_check_path_with(const char *path, const struct mc_policy *pol,
                       const struct mc_backend_ops *ops, struct mc_verdict *out,
                       int *pinned_fd_out);
