/* SPDX-License-Identifier: MIT */
/* A tree to test fs/ with, built the way a client would: every helper asserts its own steps,
 * so a test states only what it is about. Linked into each fs unit test program. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "snapshot/digest.h"
#include "fs/tree/tree.h"

/* Two publishers of different uids, and root. */
extern const struct sfs_caller alice, bob, root;

/* Small limits (4 KiB a snapshot, 16 KiB in all, 8 snapshots, 3 staging files a uid), every
 * uid a reader and a publisher, a minute of cache. */
struct sfs_tree_config base_config(void);
struct sfs_tree *new_tree(const struct sfs_tree_config *cfg);
/* .staging as c looks it up. */
struct sfs_node *staging_dir(struct sfs_tree *t, const struct sfs_caller *c);
void hex_of(const void *buf, size_t len, char hex[SNAP_DIGEST_HEX_LEN + 1]);
/* Creates .staging/name with content and closes it; returns the node. */
struct sfs_node *stage(struct sfs_tree *t, const struct sfs_caller *c, const char *name,
                       const void *buf, size_t len);
/* setattr(size) as truncate(2) sends it. */
int truncate_to(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                off_t size);
/* Stages and renames to the digest: what the rename returned, *out the published node. */
int publish(struct sfs_tree *t, const struct sfs_caller *c, const char *name, const void *buf,
            size_t len, struct sfs_node **out);

/* Sets or clears "a rename is hashing this staging file", the state a rename holds its source
 * in while it hashes (between two requests no test can otherwise stop). */
void hold_publishing(struct sfs_node *staged, bool on);

/* Takes the publisher role away from every uid but the owner and root, as a configuration
 * that no longer names them would: what a guard against a caller who lost the role meets. */
void revoke_publishers(struct sfs_tree *t);

/* What the tree holds, read under its lock. */
struct tree_stats {
        uint64_t snapshots;     /* published */
        uint64_t bytes;         /* content bytes held, published or not */
        uint64_t reserved;      /* staging bytes */
        uint64_t staging_files;
        uint64_t nodes;         /* nodes alive (kernel-referenced or open) */
};
void get_stats(struct sfs_tree *t, struct tree_stats *st);

/* What a read replied. */
struct readback {
        char buf[8192];
        size_t len;
};
/* A read's reply callback filling a struct readback. */
int collect(void *ctx, const void *data, size_t len);
/* Opens n read-only as c and reads exactly want. */
void assert_reads(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                  const char *want);
/* Looks up the snapshot of content as c, expecting want (0: returns its node). */
struct sfs_node *lookup_digest(struct sfs_tree *t, const struct sfs_caller *c,
                               const char *content, int want);
