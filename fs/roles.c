/* SPDX-License-Identifier: MIT */
/* Roles: the reader and publisher sets, and who may remove a snapshot. */
#include "roles.h"

/* An empty set admits every uid. Metadata is visible to readers and publishers; content only
 * to readers; staging only to publishers. */
bool sfs_may_see(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return sfs_uidset_contains(&cfg->readers, c->uid) ||
               sfs_uidset_contains(&cfg->publishers, c->uid);
}

bool sfs_may_read(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return sfs_uidset_contains(&cfg->readers, c->uid);
}

bool sfs_may_publish(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return !cfg->read_only && !c->read_view &&
               sfs_uidset_contains(&cfg->publishers, c->uid);
}

bool sfs_may_unlink(const struct sfs_tree_config *cfg, const struct sfs_caller *c,
                    uid_t publisher_uid)
{
        (void)cfg;
        /* Only the publisher (or root) may withdraw a snapshot: another sandboxed process
         * running as a different uid must not be able to pull a config out from under the
         * runtime that published it. */
        return c->uid == publisher_uid || c->uid == 0;
}

/* When metadata is not visible to every uid, nothing may be cached by the kernel: its caches
 * are per superblock, not per uid, so a cached entry would answer an excluded uid. */
double sfs_meta_timeout(const struct sfs_tree_config *cfg, double want)
{
        if (!cfg->readers.any && !cfg->publishers.any)
                return 0;
        return want;
}
