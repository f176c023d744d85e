/* SPDX-License-Identifier: MIT */
/* --store DIR: the published snapshots kept in an OCI image layout (snapshot/oci.h), so they
 * survive a restart and standard tools (skopeo, oras) can read and move them.
 *
 * DIR holds one artifact manifest, tagged SFS_OCISTORE_TAG in index.json, whose layers are
 * the snapshots: each titled with the staging name it was published under, annotated with the
 * uids holding it and the time of its first publish. A publish writes the blob, then a new
 * manifest, then index.json, each durably (temporary file, fsync, rename, directory fsync):
 * only then is the rename answered; every decision that could refuse it (the manifest's own
 * bounds included) is made before the first byte is written. A crash at any point leaves the
 * old manifest or the new one; a blob no manifest names is an unfinished publish and is
 * removed at the next start. A removal takes the blob away first, so it needs no room on a
 * full filesystem. Not thread-safe by itself: callers hold sfs_ocistore_lock around add,
 * set_holders and remove (and around the checks that decide them). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "digest.h"

#define SFS_OCISTORE_TAG "snapfs"
/* Blobs that do not hash to their name are moved here, never served, never deleted. */
#define SFS_OCISTORE_CORRUPT_DIR "corrupt"

struct sfs_ocistore;

/* What the store keeps about a snapshot besides its bytes. */
struct sfs_ocistore_meta {
        const char *title;        /* the staging NAME it was first published under, or NULL */
        const uint32_t *holders;  /* the uids holding it, in the order they took their holds;
                                     at a start, n_holders 0 means a store written before
                                     holders were kept (the caller decides) */
        size_t n_holders;
        struct timespec created;  /* its first publish (at a start, for an older store: the
                                     blob's modification time) */
};

/* Opens (creating, mode 0700) the layout at dir and takes it for this process: -EREMOTE when
 * dir is on a FUSE, network or cluster filesystem (*fstype names it; its fsync and rename
 * promise nothing here, and a FUSE store could be served by the very daemon that writes it),
 * -EPERM when dir or blobs/sha256 is not this uid's or is writable by group or others,
 * -EWOULDBLOCK when another process holds the store, or the errors of snap_oci_layout_open. */
int sfs_ocistore_open(const char *dir, struct sfs_ocistore **out, const char **fstype);
/* Lowers the store's limit below SNAP_OCI_ENTRIES_MAX (never above): a store that fills in a
 * few snapshots, for tests. */
void sfs_ocistore_set_max_entries(struct sfs_ocistore *s, size_t max);
void sfs_ocistore_close(struct sfs_ocistore *s);

struct sfs_ocistore_hooks {
        /* A snapshot to serve again: takes data (malloc'd, len bytes) on 0; any other return
         * keeps the snapshot in the store without serving it. */
        int (*restore)(void *ctx, const struct snap_digest *d, void *data, size_t len,
                       const struct sfs_ocistore_meta *meta);
        /* A blob set aside into DIR/corrupt/ (hex is its name; err why: -EBADMSG, -ELOOP...). */
        void (*corrupt)(void *ctx, const char *hex, int err);
        /* Anything else worth a line to the operator (a snapshot not served, a missing blob). */
        void (*warn)(void *ctx, const char *hex, const char *what, int err);
        void *ctx;
};

/* At start: removes temporary files, re-hashes every blob (setting aside each that does not
 * hash to its name), hands every intact snapshot of the manifest to hooks->restore (max_size
 * bytes at most; a larger one stays stored, unserved), removes blobs nothing names, and
 * rewrites the manifest when it named what is gone (a failure to is only warned about: the
 * next write does it). 0, or the errno of a step that leaves the store unusable. */
int sfs_ocistore_load(struct sfs_ocistore *s, uint64_t max_size,
                      const struct sfs_ocistore_hooks *hooks);

/* Stores a snapshot (its blob, then the manifest and index.json naming it): 0 once durable,
 * or a negative errno with the manifest unchanged: -ENOSPC when one manifest could not name
 * it (more than SNAP_OCI_ENTRIES_MAX snapshots, or a manifest past SNAP_OCI_DOC_MAX), decided
 * before anything is written, -EINVAL for more holders than a layer's annotation holds, or
 * the errno of a write. Already stored: 0, nothing written. */
int sfs_ocistore_add(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                     size_t len, const struct sfs_ocistore_meta *meta);
/* Rewrites the holders of a stored snapshot (n >= 1): 0 once durable, -ENOENT when not
 * stored, -EINVAL, or the errno of a write (-ENOSPC on a full filesystem) with the manifest
 * unchanged. */
int sfs_ocistore_set_holders(struct sfs_ocistore *s, const struct snap_digest *d,
                             const uint32_t *holders, size_t n);
/* Removes a snapshot: its blob first (durably), then the manifest naming it. 0 once the blob
 * is gone, even when the manifest could not be rewritten (a full filesystem: the next start
 * drops the entry whose blob is missing); -ENOENT when not stored; or the errno of removing
 * the blob, with nothing changed. */
int sfs_ocistore_remove(struct sfs_ocistore *s, const struct snap_digest *d);

void sfs_ocistore_lock(struct sfs_ocistore *s);
void sfs_ocistore_unlock(struct sfs_ocistore *s);

/* Blobs set aside at start. */
uint64_t sfs_ocistore_corrupt(const struct sfs_ocistore *s);
