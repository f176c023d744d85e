/* SPDX-License-Identifier: MIT */
/* A map from 64-bit ids to the objects that carry them: what a tree hands the kernel (node ids,
 * which are inode numbers, and file handle ids) and finds again when a request names them. The
 * link lives inside the object (struct sfs_idlink), so adding never allocates per entry and a
 * lookup is one multiplication and a short chain. Ids are chosen by the tree (inode numbers and
 * counters, never by a client), each at most once in a map.
 *
 * No lock of its own: the caller serializes every call on one map. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct sfs_idlink {
        uint64_t id;
        struct sfs_idlink *next;
};

struct sfs_idmap {
        struct sfs_idlink **buckets;
        unsigned bits;
        size_t n;
};

/* An empty map: 0, or -ENOMEM. */
int sfs_idmap_init(struct sfs_idmap *m);
/* Frees the buckets, not the objects linked in. */
void sfs_idmap_free(struct sfs_idmap *m);
/* Links l under l->id (an id not in the map). Never fails: a table that cannot grow keeps
 * longer chains. */
void sfs_idmap_add(struct sfs_idmap *m, struct sfs_idlink *l);
/* The link with this id, or NULL. */
struct sfs_idlink *sfs_idmap_find(const struct sfs_idmap *m, uint64_t id);
/* Unlinks l (nothing when it is not linked). */
void sfs_idmap_del(struct sfs_idmap *m, struct sfs_idlink *l);
