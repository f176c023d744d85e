/* SPDX-License-Identifier: MIT */
/* Roles: who may see, read, publish and remove, decided from the caller's uid and the tree's
 * configuration alone (no node, no lock). docs/design.md names the roles and their errnos. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "options.h"

/* Who sent a request. */
struct sfs_caller {
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool read_view; /* the request came through the read-only view (no staging) */
};

/* Metadata (names, sizes, bindings) is visible to readers and publishers. */
bool sfs_may_see(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* Content: readers only. */
bool sfs_may_read(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* .staging/: publishers (by default the mount owner and root), never on a read-only tree or
 * through the read view. */
bool sfs_may_publish(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* Removing a published snapshot: the mount owner and root; its publisher too with
 * unlink_own. */
bool sfs_may_unlink(const struct sfs_tree_config *cfg, const struct sfs_caller *c,
                    uid_t publisher_uid);
/* How long the kernel may cache metadata: want, or 0 when not every uid may see it. */
double sfs_meta_timeout(const struct sfs_tree_config *cfg, double want);
