/* SPDX-License-Identifier: MIT */
/* --store DIR: the published snapshots kept in an OCI image layout (snapshot/oci.h), so they
 * survive a restart and standard tools (skopeo, oras) can read and move them.
 *
 * DIR holds one artifact manifest, tagged SFS_OCISTORE_TAG in index.json, whose layers are the
 * snapshots (each titled with the staging name it was published under). A publish writes the
 * blob, then a new manifest, then index.json, each durably (temporary file, fsync, rename,
 * directory fsync): only then is the rename answered. A crash at any point leaves the old
 * manifest or the new one; a blob no manifest names is an unfinished publish and is removed
 * at the next start. Not thread-safe by itself: callers hold sfs_ocistore_lock around add and
 * remove (and around the checks that decide them). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "digest.h"

#define SFS_OCISTORE_TAG "snapfs"
/* Blobs that do not hash to their name are moved here, never served, never deleted. */
#define SFS_OCISTORE_CORRUPT_DIR "corrupt"

struct sfs_ocistore;

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
                       const char *title);
        /* A blob set aside into DIR/corrupt/ (hex is its name; err why: -EBADMSG, -ELOOP...). */
        void (*corrupt)(void *ctx, const char *hex, int err);
        /* Anything else worth a line to the operator (a snapshot not served, a missing blob). */
        void (*warn)(void *ctx, const char *hex, const char *what, int err);
        void *ctx;
};

/* At start: removes temporary files, re-hashes every blob (setting aside each that does not
 * hash to its name), hands every intact snapshot of the manifest to hooks->restore (max_size
 * bytes at most; a larger one stays stored, unserved), removes blobs nothing names, and
 * rewrites the manifest when it named what is gone. 0, or the errno of a step that leaves the
 * store unusable. */
int sfs_ocistore_load(struct sfs_ocistore *s, uint64_t max_size,
                      const struct sfs_ocistore_hooks *hooks);

/* Stores a snapshot (its blob, then the manifest and index.json naming it): 0 once durable,
 * or a negative errno with the manifest unchanged (-ENOSPC past SNAP_OCI_ENTRIES_MAX
 * snapshots, what one manifest may name). Already stored: 0, nothing written. */
int sfs_ocistore_add(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                     size_t len, const char *title);
/* Drops a snapshot from the manifest (durably), then removes its blob: 0, -ENOENT when not
 * stored, or a negative errno with the manifest unchanged. */
int sfs_ocistore_remove(struct sfs_ocistore *s, const struct snap_digest *d);

void sfs_ocistore_lock(struct sfs_ocistore *s);
void sfs_ocistore_unlock(struct sfs_ocistore *s);

/* Blobs set aside at start. */
uint64_t sfs_ocistore_corrupt(const struct sfs_ocistore *s);
