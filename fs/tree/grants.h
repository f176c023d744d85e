/* SPDX-License-Identifier: MIT */
/* A scope's grants: the digests its view shows and the entries (names) that alias them, kept
 * sorted for lookups by digest and by name, and in one listing order that never repeats or
 * skips a name across changes (each name gets a key, larger than every key before it, and a
 * moved entry keeps its own). A plain data structure: no lock (the scope's tree lock guards
 * it), no store call (fs/tree/scope.c takes and drops the references a grant holds). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "snapshot/digest.h"
#include "snapshot/name.h"
#include "snapshot/store.h"

/* One digest a scope's view shows: granted by digest (plain), named by entries, or both. */
struct sfs_grant {
        struct snap_digest digest;
        struct snap_object *obj;   /* a store reference and a store grant, the scope's */
        uint64_t ino;              /* the inode number its view shows it under */
        uint64_t key;              /* its place in the view's listing */
        bool plain;                /* granted by digest, not only through entries */
        bool published;            /* published in this scope: counted in the scope's usage */
        uint32_t uid;              /* who published it here; else the mount owner */
        char *name;                /* the staging NAME it was published under here, or NULL */
        struct timespec created;   /* when it was granted or published here */
        uint32_t entries;          /* entries naming it */
};

/* A name that aliases a granted digest: an entry. */
struct sfs_grant_entry {
        char name[SNAP_NAME_MAX + 1];
        uint64_t key;
        struct sfs_grant *target;
};

/* One name of the listing: a digest (grant) or an entry. */
struct sfs_listed {
        uint64_t key;
        struct sfs_grant *grant;
        struct sfs_grant_entry *entry;
};

struct sfs_grants {
        struct sfs_grant **digests;          /* by digest */
        size_t n_digests, cap_digests;
        struct sfs_grant_entry **entries;    /* by name */
        size_t n_entries, cap_entries;
        struct sfs_listed *listed;           /* by key */
        size_t n_listed, cap_listed;
        uint64_t next_key;
};

/* An empty table whose keys start at first_key. */
void sfs_grants_init(struct sfs_grants *g, uint64_t first_key);
/* Frees the table's arrays and every grant and entry still in it; the store references the
 * grants hold are the caller's to drop first. */
void sfs_grants_free(struct sfs_grants *g);
/* Room for this many more digests and entries, so the inserts after it cannot fail: 0 or
 * -ENOMEM. */
int sfs_grants_reserve(struct sfs_grants *g, size_t digests, size_t entries);

struct sfs_grant *sfs_grants_find(const struct sfs_grants *g, const struct snap_digest *d);
struct sfs_grant_entry *sfs_grants_entry(const struct sfs_grants *g, const char *name);

/* Inserts gr (malloc'd, its digest not in the table; the table owns it now) with the next key.
 * Room reserved first. */
void sfs_grants_insert(struct sfs_grants *g, struct sfs_grant *gr);
/* Inserts e (malloc'd, its name not in the table, e->target in it) with the next key. */
void sfs_grants_insert_entry(struct sfs_grants *g, struct sfs_grant_entry *e);
/* Points e at target; e keeps its key. */
void sfs_grants_retarget(struct sfs_grants *g, struct sfs_grant_entry *e,
                         struct sfs_grant *target);
/* Takes gr out (no entry names it any more); the caller frees it. */
void sfs_grants_remove(struct sfs_grants *g, struct sfs_grant *gr);
/* Takes e out; the caller frees it. */
void sfs_grants_remove_entry(struct sfs_grants *g, struct sfs_grant_entry *e);

/* The index in g->listed of the first name whose key is at least key. */
size_t sfs_grants_listed_from(const struct sfs_grants *g, uint64_t key);
