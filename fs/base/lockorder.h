/* SPDX-License-Identifier: MIT */
/* The daemon's lock order, written once (docs/design.md, "Locks") and asserted where it costs
 * a thread-local bit: outermost first,
 *
 *   1. the registry's           (fs/scopes/registry.c)
 *   2. --store's                (sfs_ocistore_lock)
 *   3. one tree's               (the main tree's or one scope's: never two at once, so a
 *                                request in scope B never takes scope A's lock)
 *
 * then a staging file's, the id tables' and the store's own, which are leaves. Taking a lock
 * while one of its level or an inner one is held is a bug: the assertion names it where it
 * happens, before it can deadlock under load. */
#pragma once

#include <assert.h>
#include <pthread.h>

enum sfs_lock_level {
        SFS_LOCK_REGISTRY = 1,
        SFS_LOCK_OCISTORE = 2,
        SFS_LOCK_TREE = 3,
};

extern __thread unsigned sfs_locks_held;

static inline void sfs_lock_order(pthread_mutex_t *m, enum sfs_lock_level level)
{
        /* Nothing of this level or an inner one may be held already. */
        assert(!(sfs_locks_held & ~((1u << level) - 1u)) && "lock order (fs/base/lockorder.h)");
        pthread_mutex_lock(m);
        sfs_locks_held |= 1u << level;
}

static inline void sfs_unlock_order(pthread_mutex_t *m, enum sfs_lock_level level)
{
        sfs_locks_held &= ~(1u << level);
        pthread_mutex_unlock(m);
}

/* Whether no tree or store lock is held: what sending the kernel an invalidation needs. */
static inline int sfs_no_tree_lock_held(void)
{
        return !(sfs_locks_held & ((1u << SFS_LOCK_OCISTORE) | (1u << SFS_LOCK_TREE)));
}
