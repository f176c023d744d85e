/* SPDX-License-Identifier: MIT */
/* A scope's tree: what one consumer (a sandbox, a pod, a service) sees through its own view
 * (docs/design.md, "Scopes"). Each scope's view is a tree of its own (fs/tree/tree.h: its own lock,
 * root, .staging/, node table and handles) over the daemon's one store, listing exactly the
 * scope's grants: digests, and entries that alias them. These functions change and report
 * the grants; the tree's requests (lookup, open, readdir, rename, unlink, xattrs, statfs) are
 * tree.h's, answering for the scope alone.
 *
 * A change is persisted before it is made (docs/design.md, "Persistence"): the registry
 * writes the scope's file with the change already in it (sfs_scope_get_grants), then applies
 * it (sfs_scope_apply). Every function returns 0 or a negative errno. Thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "snapshot/digest.h"
#include "fs/config/roles.h"
#include "fs/tree/tree.h"

struct sfs_scope_op;

/* A scope's own limits (docs/design.md, "Limits"): past them EDQUOT. */
struct sfs_scope_limits {
        uint64_t max_snapshots;     /* snapshots published in the scope */
        uint64_t max_bytes;         /* their bytes */
        uint64_t max_staging;       /* staging files in the scope */
        uint64_t max_staging_bytes; /* their bytes */
        /* Bytes guaranteed to the scope, at most max_bytes: what it does not use of them yet
         * (published, unlinked but open, staged) is kept from every other scope and the main
         * mount's uids but the owner. 0: none, the scope shares what is free. */
        uint64_t min_bytes;
};

/* How a scope's tree is made. */
struct sfs_scope_spec {
        const char *name;           /* snap_name_valid */
        struct sfs_scope_users users;
        bool publish;               /* its view has .staging/ */
        struct sfs_scope_limits limits; /* every one set (min_bytes may be 0) */
        bool restored;              /* brought back at a start: its minimum is kept again as
                                       it was, whatever is free now */
        /* Persists a change before it is made (NULL: nothing to persist): called without the
         * tree's lock, with the store's (fs/store/ocistore.h) held when there is one; 0, or an
         * errno that refuses the change. */
        int (*save)(void *ctx, const struct sfs_scope_op *op);
        void *save_ctx;
};

/* A change to a scope's grants. */
enum sfs_scope_op_kind {
        SFS_SCOPE_GRANT,     /* digest, by its digest or (entry) under a name */
        SFS_SCOPE_REVOKE,    /* digest (every grant of it, entries included) or entry */
        SFS_SCOPE_PUBLISH,   /* digest published in the view: a grant counted in its usage */
        SFS_SCOPE_UNPUBLISH, /* digest the view published taken back by its unlink */
};

struct sfs_scope_op {
        enum sfs_scope_op_kind kind;
        bool has_digest;
        struct snap_digest digest;
        const char *entry;          /* or NULL */
        /* SFS_SCOPE_PUBLISH: who published it, under which staging NAME, when, and the inode
         * number the kernel knows it by already (its staging file's). */
        uint32_t uid;
        const char *name;
        struct timespec created;
        uint64_t ino;
};

/* The defaults of a scope that names no limits: what one uid may hold on the main mount. */
void sfs_scope_default_limits(struct sfs_tree *main, struct sfs_scope_limits *out);

/* A new, empty scope tree over main's store: 0 and *out, or -EINVAL (a bad name, a zero
 * limit, min_bytes above max_bytes), -ENOSPC (a minimum the daemon cannot guarantee:
 * snap_store_keep_new), -ENOMEM. Free it with sfs_tree_free, once its session is gone and after
 * sfs_scope_revoke_all (what it still grants then is dropped without collecting). */
int sfs_tree_new_scope(struct sfs_tree *main, const struct sfs_scope_spec *spec,
                       struct sfs_tree **out);
/* A scope deleted: its view takes no more publishes (EACCES), nothing it does is persisted
 * any more and its minimum is kept no more, while its session serves what is open. */
void sfs_scope_disarm(struct sfs_tree *t);

/* The view's next inode number, taken (never handed out again): what a grant that adds a
 * digest is shown under, given before the scope's file is written with it. Takes the
 * tree's lock. */
uint64_t sfs_scope_alloc_ino(struct sfs_tree *t);

/* What a change did that its caller finishes with no tree lock held. */
struct sfs_scope_effects {
        /* Names whose entry in the view's kernel cache is stale now (a moved entry, a digest
         * or entry that left the view): the caller invalidates them. */
        char (*names)[SNAP_NAME_MAX + 1];
        size_t n_names;
        /* Inode numbers whose grant went: the kernel's cached attributes of them are stale
         * (nlink 0 now, for a descriptor still open). */
        uint64_t *inos;
        size_t n_inos;
        /* Objects nothing references any more: detached from the store; the caller removes
         * each from --store and then drops the reference held here (its publication's). */
        struct snap_object **gone;
        size_t n_gone;
        /* Watches of a moved or removed entry were marked: the caller announces them
         * (sfs_tree_announce_moves) once the names above are invalidated. */
        bool watches;
};
/* Drops the references of fx's gone objects, once the caller removed them from --store (or
 * there is none). */
void sfs_scope_effects_release(struct sfs_tree *t, struct sfs_scope_effects *fx);
void sfs_scope_effects_free(struct sfs_scope_effects *fx);

/* One grant as the control channel reports it: a digest granted plainly, or an entry. */
struct sfs_grant_info {
        struct snap_digest digest;
        uint64_t size;
        uint64_t ino;
        char entry[SNAP_NAME_MAX + 1]; /* "" for a plain grant */
        bool published;
};

/* One grant as the scope's file keeps it (fs/scopes/scopefile.h writes and reads the file). */
struct sfs_grant_record {
        struct snap_digest digest;
        uint64_t ino;                  /* its number in the view; 0: none recorded (a file
                                          written before views numbered their own) */
        bool plain, published;         /* granted by digest; published in the view */
        uint32_t uid;                  /* who published it; the owner for a grant */
        char name[SNAP_NAME_MAX + 1];  /* the staging NAME it was published under, or "" */
        struct timespec created;
};

/* One entry as the scope's file keeps it: a name for a granted digest. */
struct sfs_entry_record {
        char name[SNAP_NAME_MAX + 1];
        struct snap_digest digest;
};

/* A scope's grants and entries as its file keeps them, in listing order, and the view's next
 * inode number. Arrays malloc'd: sfs_scope_grants_free. */
struct sfs_scope_grants {
        struct sfs_grant_record *grants;
        size_t n_grants;
        struct sfs_entry_record *entries;
        size_t n_entries;
        uint64_t next_ino;
};
void sfs_scope_grants_free(struct sfs_scope_grants *g);

/* The scope's grants and entries (each grant with its inode number in the view), with op
 * applied when not NULL: 0 and *out (next_ino past every number given, the one op's grant
 * takes included), or what applying op would fail with (-ENOENT: no such snapshot, grant or
 * entry; -EINVAL: a bad entry name; -ENOSPC: past the grants a scope holds), -ENOMEM. Takes
 * the tree's lock. */
int sfs_scope_get_grants(struct sfs_tree *t, const struct sfs_scope_op *op,
                         struct sfs_scope_grants *out);
/* Applies op: SFS_SCOPE_GRANT of a published snapshot (-ENOENT otherwise; an entry that
 * exists moves to it; granting what is granted already changes nothing), SFS_SCOPE_REVOKE
 * (-ENOENT when not granted). *info (may be NULL) is the grant made. Effects in *fx. */
int sfs_scope_apply(struct sfs_tree *t, const struct sfs_scope_op *op, struct sfs_grant_info *info,
                    struct sfs_scope_effects *fx);
/* Revokes every grant (a scope deleted): effects in *fx. */
int sfs_scope_revoke_all(struct sfs_tree *t, struct sfs_scope_effects *fx);

/* Calls fn for each grant (plain digests, then entries, in listing order) until it returns
 * non-zero; returns that, else 0. fn runs under the tree's lock and must not call the tree. */
int sfs_scope_foreach_grant(struct sfs_tree *t,
                            int (*fn)(const struct sfs_grant_info *g, void *ctx), void *ctx);

/* What a scope uses against its limits. */
struct sfs_scope_usage {
        uint64_t snapshots, bytes, staging, staging_bytes;
        uint64_t grants; /* plain grants and entries */
};
void sfs_scope_get_usage(struct sfs_tree *t, struct sfs_scope_usage *u);

/* What a new scope's minimum is measured against: the daemon's --max-bytes, the owner's
 * reserve, the scopes' minimums together, and what is free now for anyone but the owner
 * (less the reserve and what is kept for minimums). */
struct sfs_scope_room {
        uint64_t max_bytes, reserve_bytes, minimums, free;
};
void sfs_scope_get_room(struct sfs_tree *main, struct sfs_scope_room *out);

/* Brings back a scope's grants from its file at start (what sfs_scope_get_grants gave, each
 * grant under the inode number it had, the view's counter past g->next_ino and every one):
 * each digest whose snapshot is published, each entry whose digest came back; what is gone is
 * reported through warn (hex or entry name, why) and left out (a digest only entries named
 * that did not come back goes too: in *fx). 0; -EINVAL for grants this daemon did not write
 * (more than SFS_SCOPE_GRANTS_MAX, a digest or entry twice, two grants under one number);
 * -ENOMEM. */
int sfs_scope_restore(struct sfs_tree *t, const struct sfs_scope_grants *g,
                      void (*warn)(void *ctx, const char *what, const char *why), void *ctx,
                      struct sfs_scope_effects *fx);

/* A scope holds at most this many grants (plain and entries together): -ENOSPC past it. */
#define SFS_SCOPE_GRANTS_MAX 65536
/* Lowers a scope's maximum (never above SFS_SCOPE_GRANTS_MAX): a scope that fills in a few
 * grants, for tests. */
void sfs_scope_set_max_grants(struct sfs_tree *t, size_t max);
