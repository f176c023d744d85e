/* SPDX-License-Identifier: MIT */
/* Roles: the reader and publisher sets, who may remove a snapshot or drop a hold, and who may
 * have the store re-hashed. */
#include "fs/roles.h"

/* Without --publishers (an empty set, which no option spells) only the mount's owner and root
 * publish: a sandbox that reaches the mount must not fill the store, nor publish under its own
 * uid what it may then remove. */
static bool is_publisher(const struct sfs_tree_config *cfg, uid_t uid)
{
        if (!cfg->publishers.any && cfg->publishers.n == 0)
                return uid == cfg->owner_uid || uid == 0;
        return value_uid_list_has(&cfg->publishers, uid);
}

/* Metadata is visible to readers and publishers; content only to readers; staging only to
 * publishers. */
bool sfs_may_see(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return value_uid_list_has(&cfg->readers, c->uid) || is_publisher(cfg, c->uid);
}

bool sfs_may_read(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return value_uid_list_has(&cfg->readers, c->uid);
}

bool sfs_may_publish(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return !cfg->read_only && !c->read_view && is_publisher(cfg, c->uid);
}

/* The mount's owner (the runtime that runs the daemon) and root. */
static bool is_owner(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return c->uid == 0 || c->uid == cfg->owner_uid;
}

bool sfs_may_remove(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return is_owner(cfg, c);
}

bool sfs_may_unhold(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        (void)c; /* a hold is its holder's, whatever the roles are now */
        /* Only with --unlink-own: when the runtime publishes under the sandbox's uid, the
         * sandbox must not pull the config out from under it. */
        return cfg->unlink_own;
}

bool sfs_may_check_store(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        /* A re-hash reads every blob of the store: no uid but these may make the daemon
         * do that on demand. */
        return is_owner(cfg, c);
}

/* When metadata is not visible to every uid, nothing may be cached by the kernel: its caches
 * are per superblock, not per uid, so a cached entry would answer an excluded uid. */
double sfs_meta_timeout(const struct sfs_tree_config *cfg, double want)
{
        if (!cfg->readers.any && !cfg->publishers.any)
                return 0;
        return want;
}
