/* SPDX-License-Identifier: MIT */
/* bench_snapfs: snapfs side by side with the kernel-only ways of handing over immutable bytes
 * (a sealed memfd, an O_TMPFILE reopened read-only, a tmpfs file renamed into place). One
 * section per part of the benchmark list in scripts/bench.sh; each prints its rows and
 * appends them to the CSV. Shared here: the scratch mounts and the "verified open" recipe. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tests/bench/benchutil.h"
#include "snapshot/binding.h"
#include "snapshot/digest.h"

struct bench_env {
        const char *snapfs;           /* the snapfs binary */
        char base[64];                /* scratch tmpfs: mount points, audit logs */
        char tmpfs[96];               /* the baseline tmpfs (nosuid,nodev,noexec) */
        int tmpfs_dir;                /* its root, O_DIRECTORY */
        uint64_t tmpfs_mount_id;
        enum bench_placement placement;
        struct snap_hasher *hasher;   /* reused, as a client library would */
        uint64_t counter;             /* every published content is new */
        unsigned scale;               /* snapshots for the large side of item 5 */
};

/* Starts snapfs at base/name with opts, pinned per env->placement. */
void bench_env_daemon(struct bench_env *env, struct bench_daemon *d, const char *name,
                      const char *const *opts);

/* SHA-256 of buf with the reused hasher. */
void bench_digest(struct bench_env *env, const void *buf, size_t len, struct snap_digest *out);

/* write() until done, or die. */
void bench_write_all(int fd, const void *buf, size_t len);

/* docs/design.md's verified open of dirfd/name: open O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC,
 * snap_verify_fd (fstat identity, pread + SHA-256, fstat again), the descriptor's mount id
 * against the judged one, close. Dies on any refusal. */
void bench_verified_open(struct bench_env *env, int dirfd, const char *name,
                         const struct snap_binding *b, uint64_t mount_id);
/* The same checks on a descriptor already held (a sealed memfd: no open, no mount). */
void bench_verify_held(struct bench_env *env, int fd, const struct snap_binding *b);

/* Sections. */
void bench_section_latency(struct bench_env *env);
void bench_section_read(struct bench_env *env);
void bench_section_scale(struct bench_env *env);
