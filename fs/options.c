/* SPDX-License-Identifier: MIT */
/* The tree's configuration: the limits derived from other limits. */
#include "fs/options.h"

void sfs_tree_config_derive(struct sfs_tree_config *cfg)
{
        /* One uid must not be able to fill the whole byte budget with staging files it never
         * publishes; it must still be able to stage one largest snapshot. */
        if (!cfg->max_staging_bytes) {
                cfg->max_staging_bytes = cfg->max_bytes / 4;
                if (cfg->max_staging_bytes < cfg->max_snapshot_size)
                        cfg->max_staging_bytes = cfg->max_snapshot_size;
        }
        /* One uid must not be able to take every snapshot or byte from the others: each gets
         * a quarter by default (and room for one largest snapshot). */
        if (!cfg->max_uid_snapshots)
                cfg->max_uid_snapshots = cfg->max_snapshots / 4 ? cfg->max_snapshots / 4 : 1;
        if (!cfg->max_uid_bytes) {
                cfg->max_uid_bytes = cfg->max_bytes / 4;
                if (cfg->max_uid_bytes < cfg->max_snapshot_size)
                        cfg->max_uid_bytes = cfg->max_snapshot_size;
        }
}
