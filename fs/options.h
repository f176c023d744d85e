/* SPDX-License-Identifier: MIT */
/* Parsing of the daemon's option values: sizes with K/M/G suffixes and uid lists. Pure
 * functions (no I/O), so they can be unit-tested and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "4096", "256K", "64M", "1G" (binary units; a trailing "iB"/"B" is not accepted). Refuses
 * empty strings, signs, spaces, overflow and unknown suffixes: 0 and *out, or -EINVAL/-ERANGE. */
int sfs_parse_size(const char *s, uint64_t *out);

/* Decimal count without suffix, 1..max: 0 and *out, or -EINVAL/-ERANGE. */
int sfs_parse_count(const char *s, uint64_t max, uint64_t *out);

/* "90", "90s", "15m", "2h": a duration in milliseconds; "0" means zero. Refuses signs,
 * spaces, other suffixes and overflow: 0 and *out_ms, or -EINVAL/-ERANGE. */
int sfs_parse_duration(const char *s, uint64_t *out_ms);

#define SFS_UIDSET_MAX 64

/* A set of uids; an empty set (any == true) admits every uid. */
struct sfs_uidset {
        bool any;
        unsigned n;
        uid_t uids[SFS_UIDSET_MAX];
};

/* "1000,1001": decimal uids separated by commas, no spaces, at most SFS_UIDSET_MAX, each
 * below 4294967295 (the kernel's "no uid"). 0 and *out, or -EINVAL/-ERANGE/-E2BIG. */
int sfs_parse_uidset(const char *s, struct sfs_uidset *out);

bool sfs_uidset_contains(const struct sfs_uidset *set, uid_t uid);
