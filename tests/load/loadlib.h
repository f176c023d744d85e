/* SPDX-License-Identifier: MIT */
/* The driver pieces the load drivers (load.c, noisy.c, scopeload.c) share: the clock, a
 * worker's identity, publishing through .staging, latency quantiles and a process's RSS. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t load_now_ns(void);

/* In a forked worker: at most nofile descriptors (0: unchanged; within the hard limit, as
 * raising that needs CAP_SYS_RESOURCE, which a container may not grant), then, when root,
 * uid as every id with no supplementary groups. _exit(4) when either fails. */
void load_become(uid_t uid, rlim_t nofile);

/* Writes buf to DIR/.staging/NAME and renames it to DIR/HEX: 0 or -errno (-EEXIST when
 * already published). A failed publish never leaves its staging file behind. */
int load_publish_hex(const char *dir, const char *name, const uint8_t *buf, size_t len,
                     const char *hex);

/* As load_publish_hex, under buf's SHA-256 digest, which it writes to hex. */
int load_publish(const char *dir, const char *name, const uint8_t *buf, size_t len,
                 char hex[65]);

/* A staging file held past its name: DIR/.staging/sI created, len bytes written, its name
 * unlinked. 0 or the (positive) errno of the first step refused; *fd the descriptor, which
 * the caller keeps or closes, or -1 when the create was refused. */
int load_stage_held(const char *dir, uint64_t i, const uint8_t *buf, size_t len, int *fd);

/* qsort's comparison of two uint64_t. */
int load_cmp_u64(const void *a, const void *b);

/* The p-quantile (0 to 1) of n sorted figures, or 0 when there are none. */
uint64_t load_quantile(const uint64_t *sorted, size_t n, double p);

/* VmRSS of pid in KiB, or -1 (no pid, or no such process). */
long load_rss_kib(pid_t pid);
