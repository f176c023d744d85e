/* SPDX-License-Identifier: MIT */
/* A scope view's watches of its entries (docs/design.md, "Waiting for an entry to move"):
 * each bound to what one entry named when it was made, ready once that entry moved or went,
 * keeping the poll handles to wake then. A plain data structure, like grants.h: no lock (the
 * scope's tree lock guards it), no node (the tree gives each watch its node, and this file
 * keeps the node's pointer for it, never looking inside). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "snapshot/digest.h"

struct sfs_node;
struct sfs_watch;

/* How the tree hands back the poll handles it keeps (fs/tree knows no FUSE; tree.h). */
struct sfs_poll_ops;

struct sfs_watches {
        struct sfs_watch *head;
};

/* The watch of entry that has not moved yet, or NULL. */
struct sfs_watch *sfs_watches_find(const struct sfs_watches *ws, const char *entry);
/* A new watch of entry, bound to digest d, carried by node n: NULL without memory. */
struct sfs_watch *sfs_watches_add(struct sfs_watches *ws, const char *entry,
                                  const struct snap_digest *d, struct sfs_node *n);
/* Takes w out and frees it, its poll handles dropped (never woken). */
void sfs_watches_remove(struct sfs_watches *ws, struct sfs_watch *w);
/* entry moved to another snapshot, or was removed (gone): each of its watches not moved yet
 * is marked, to be announced by sfs_watches_announce. Returns whether any was. */
bool sfs_watches_moved(struct sfs_watches *ws, const char *entry, bool gone);
/* Every marked watch is moved from now on, and every poll handle it kept is woken (once).
 * Called once the kernel's cached entries of the moved names are invalidated: a waiter that
 * wakes then and opens the entry by name reaches what it names now, never the old node. */
void sfs_watches_announce(struct sfs_watches *ws);
/* Drops every poll handle that session owner gave (its session ends). */
void sfs_watches_forget_owner(struct sfs_watches *ws, const void *owner);

struct sfs_node *sfs_watch_node(const struct sfs_watch *w);
bool sfs_watch_moved(const struct sfs_watch *w);
/* A poll of w through handle fh (0: none) of session owner: POLLIN|POLLRDNORM|POLLPRI once
 * moved (and POLLHUP once gone), ph dropped; else 0 and ph (may be NULL) kept to be woken.
 * Takes ph in every case. */
unsigned sfs_watch_poll(struct sfs_watch *w, uint64_t fh, void *ph, const void *owner,
                        const struct sfs_poll_ops *ops);
/* Drops the poll handles handle fh gave (the handle is released). */
void sfs_watch_drop_handle(struct sfs_watch *w, uint64_t fh);
