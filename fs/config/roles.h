/* SPDX-License-Identifier: MIT */
/* Roles: who may see, read, publish and remove, decided from the caller's uid and the tree's
 * configuration alone (no node, no lock). docs/design.md names the roles and their errnos. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "fs/config/options.h"

/* Who uses a scope's view: these uids, the members of gid (as the kernel stamps a request: the
 * caller's filesystem gid; FUSE carries no supplementary groups), and uid 0 always. */
struct sfs_scope_users {
        struct value_uid_list uids;
        bool has_gid;
        gid_t gid;
};

/* Who sent a request. */
struct sfs_caller {
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool read_view; /* the request came through the read-only view (no staging) */
};

/* Whether c is one of a scope's users. */
bool sfs_is_scope_user(const struct sfs_scope_users *u, const struct sfs_caller *c);

/* In a scope's view its users are its readers, and its publishers when it allows publishing
 * (cfg->read_only otherwise); every one of the functions below says so. */

/* Metadata (names, sizes, bindings) is visible to readers and publishers. */
bool sfs_may_see(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* Content: readers only. */
bool sfs_may_read(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* .staging/: publishers (by default the mount owner and root), never on a read-only tree or
 * through the read view. */
bool sfs_may_publish(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* Removing a published snapshot outright, every hold on it: the mount owner and root (in a
 * scope's view: nobody; a scope's own publishes go by sfs_may_unpublish). */
bool sfs_may_remove(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* Dropping one's own hold on a snapshot by unlinking it: with unlink_own, any caller (the
 * tree checks it holds the snapshot; a uid holding nothing gets EPERM). */
bool sfs_may_unhold(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* In a scope's view, taking back what the scope itself published: its publishers. */
bool sfs_may_unpublish(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* The control channel (MNT/.control): the mount owner and root, on the main mount only. */
bool sfs_may_control(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* Having the daemon re-hash its --store (costly: owner and root only). */
bool sfs_may_check_store(const struct sfs_tree_config *cfg, const struct sfs_caller *c);
/* How long the kernel may cache metadata: want, or 0 when not every uid may see it. */
double sfs_meta_timeout(const struct sfs_tree_config *cfg, double want);
