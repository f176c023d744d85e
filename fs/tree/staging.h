/* SPDX-License-Identifier: MIT */
/* Staging content: the bytes of one staging file, hashed as they arrive, and what they are
 * charged to (the tree's byte budget and the owner's staging bytes). No node, no handle, no
 * role: the tree's files decide who may write and when; this file keeps the bytes and the
 * quota right. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "snapshot/digest.h"
#include "snapshot/name.h"
#include "snapshot/store.h"

#define SFS_STAGING_NAME_MAX SNAP_NAME_MAX
#define SFS_HASH_BROKEN UINT64_MAX
/* Longest refusal text kept on a staging file (SFS_XATTR_REFUSAL), NUL included. */
#define SFS_REFUSAL_MAX 80

/* What staged bytes are charged to: one per tree. */
struct sfs_staging_budget {
        struct snap_store *store; /* the tree's byte limit (reserve/unreserve) */
        uint64_t max_size;        /* one file: the snapshot size limit */
        uint64_t max_uid_bytes;   /* all staging files of one uid together */
        struct snap_keep *keep;   /* a scope's minimum, counting the staged bytes; or NULL */
};

/* Fields below lock are read and changed with lock held. */
struct sfs_staging {
        pthread_mutex_t lock;
        char name[SFS_STAGING_NAME_MAX + 1];
        uid_t owner;
        gid_t group;
        const struct sfs_staging_budget *budget;
        uint64_t *uid_bytes;    /* the owner's staged bytes, shared by all its staging files
                                   (changed atomically: they are written in parallel) */
        uint8_t *buf;
        size_t len;             /* content length; exactly this many bytes are reserved */
        size_t cap;
        unsigned writers;       /* write handles not flushed since they last wrote */
        bool publishing;        /* a rename is hashing it: no writes, no truncation */
        struct snap_hasher *hasher;
        uint64_t hashed;        /* bytes fed to hasher in order, or SFS_HASH_BROKEN */
        bool digest_valid;
        struct snap_digest digest;
        struct timespec mtime;
        uint64_t last_active_ms; /* CLOCK_MONOTONIC of the owner's last create, open, write,
                                    truncate or close: what --staging-ttl measures */
        /* Why the daemon last refused a request on this file, when only it knows ("too-big
         * max-snapshot-size=262144", a --trust-key reason), "" when it never did: what the
         * owner's client reads after a refusal (SFS_XATTR_REFUSAL). */
        char refusal[SFS_REFUSAL_MAX];
        /* SFS_XATTR_FOR_SCOPE: the scope its publish is for ("" for none), and the entry */
        char for_scope[SFS_STAGING_NAME_MAX + 1];
        char for_entry[SFS_STAGING_NAME_MAX + 1];
};

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t sfs_now_ms(void);
/* 1-64 characters of [A-Za-z0-9._-], not starting with '.'. */
bool sfs_staging_name_valid(const char *name);
/* Whether the snapshot published from a staging file of this NAME keeps it as its name: a
 * valid NAME that does not start with '_'. A NAME starting with '_' is a scratch name (what
 * libsnapfs stages under when it was given none), so such a snapshot has no name. */
bool sfs_staging_name_kept(const char *name);

/* A new, empty staging file charged to budget and uid_bytes: 0 and *out, or -ENOMEM. */
int sfs_staging_new(const char *name, uid_t owner, gid_t group,
                    const struct sfs_staging_budget *budget, uint64_t *uid_bytes,
                    struct sfs_staging **out);
/* Gives its bytes back to the budget and frees it. NULL is fine. */
void sfs_staging_free(struct sfs_staging *stg);
/* Gives the bytes back and forgets them (nobody can reach them any more). Takes stg->lock. */
void sfs_staging_drop_content(struct sfs_staging *stg);

/* The functions below need stg->lock held. */

void sfs_staging_fill_attr(const struct sfs_staging *stg, struct stat *st);
/* The owner used it just now (what the staging TTL measures). */
void sfs_staging_touch_locked(struct sfs_staging *stg);
/* Writes size bytes at off (zero-filling a gap): -EFBIG past the snapshot size limit,
 * -EDQUOT past the owner's staging bytes, -ENOSPC past the tree's byte limit, -ENOMEM. */
int sfs_staging_write_locked(struct sfs_staging *stg, const void *buf, size_t size,
                             uint64_t off);
/* Truncates or zero-extends to len, with the same refusals as a write. */
int sfs_staging_resize_locked(struct sfs_staging *stg, uint64_t len);
/* Calls reply(ctx, data, len) exactly once with up to size bytes at off and returns its
 * result. */
int sfs_staging_read_locked(const struct sfs_staging *stg, size_t size, uint64_t off,
                            int (*reply)(void *ctx, const void *data, size_t len), void *ctx);
/* The SHA-256 of the content: from the running hash when the bytes came in order, else
 * computed over the buffer. 0, or a negative errno. */
int sfs_staging_digest(struct sfs_staging *stg, struct snap_digest *out);
/* Fits the buffer to the content, so a store taking it over holds no slack. */
void sfs_staging_fit_locked(struct sfs_staging *stg);
/* Records why a write or truncation was refused with err, in the words a client shows:
 * "too-big max-snapshot-size=N" (EFBIG), "staging-bytes max-staging-bytes=N" (EDQUOT),
 * "full" (ENOSPC: the tree's byte limit), "reserved kept=N" (ENOSPC while N bytes are kept
 * for other scopes' minimums); any other err records nothing. */
void sfs_staging_note_refusal_locked(struct sfs_staging *stg, int err);
/* The refusal of a publish that --store could not write: its filesystem is full (a disk, not
 * a limit of the daemon's). */
#define SFS_REFUSAL_STORE_FULL "store-full"
/* Records reason (a finding code, at most SFS_REFUSAL_MAX - 1 bytes) as the last refusal. */
void sfs_staging_set_refusal_locked(struct sfs_staging *stg, const char *reason);
/* The store took the buffer and its reservation: the owner's quota gets the bytes back and
 * the staging file holds none. */
void sfs_staging_handed_over_locked(struct sfs_staging *stg);
