/* SPDX-License-Identifier: MIT */
/* --store DIR: the published snapshots kept in an OCI image layout (snapshot/oci.h), so they
 * survive a restart and standard tools (skopeo, oras) can read and move them.
 *
 * DIR holds one artifact manifest, tagged SFS_OCISTORE_TAG in index.json (from the first
 * start on, empty until a publish), whose layers are the snapshots: each titled with the
 * staging name it was published under, annotated with the uids holding it and the time of its
 * first publish. A publish writes the blob, then a new manifest, then index.json, each durably
 * (temporary file, fsync, rename, directory fsync): only then is the rename answered; every
 * decision that could refuse it (the manifest's own bounds included) is made before the first
 * byte is written. A crash at any point leaves the old manifest or the new one; a blob no
 * manifest names is an unfinished publish and is removed at the next start. A removal takes
 * the blob away first, so it needs no room on a full filesystem. Everything the store makes
 * is this uid's alone (directories 0700, files 0600). Not thread-safe by itself: callers hold
 * sfs_ocistore_lock around add, set_holders and remove (and around the checks that decide
 * them). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "snapshot/digest.h"

#define SFS_OCISTORE_TAG "snapfs"
/* Blobs that do not hash to their name are moved here, never served, never deleted. */
#define SFS_OCISTORE_CORRUPT_DIR "corrupt"
/* The pid of the daemon that holds the store, for a second daemon's refusal to name it. */
#define SFS_OCISTORE_PID_FILE "snapfs.pid"
/* The scopes and their grants, one file each: DIR/scopes/NAME.json (fs/scopefile.c says what
 * is in it). */
#define SFS_OCISTORE_SCOPES_DIR "scopes"
/* The largest scope file a start reads back. */
#define SFS_OCISTORE_SCOPE_MAX (32u << 20)

struct sfs_ocistore;

/* What the store keeps about a snapshot besides its bytes. */
struct sfs_ocistore_meta {
        const char *title;        /* the staging NAME it was first published under, or NULL */
        const uint32_t *holders;  /* the uids holding it, in the order they took their holds;
                                     at a start, n_holders 0 means a store written before
                                     holders were kept (the caller decides) */
        size_t n_holders;
        bool unheld;              /* no uid holds it: grants to scopes keep it (n_holders 0;
                                     written as an empty holders annotation) */
        struct timespec created;  /* its first publish (at a start, for an older store: the
                                     blob's modification time) */
};

/* Why sfs_ocistore_open refused. */
struct sfs_ocistore_why {
        const char *fstype; /* -EREMOTE: the filesystem's name */
        pid_t holder;       /* -EWOULDBLOCK: the pid of the daemon holding the store, or 0 */
        const char *path;   /* -EPERM: the directory of the store refused ("blobs", ...), or
                               NULL for the store's own */
};

/* Opens (creating, private) the layout at dir and takes it for this process, waiting up to
 * wait_ms for another process that holds it (a daemon still exiting) to let it go: 0, or
 * -EREMOTE when dir is on a FUSE, network or cluster filesystem (its fsync and rename promise
 * nothing here, and a FUSE store could be served by the very daemon that writes it), -EPERM
 * when dir or a directory of it (blobs, blobs/sha256, corrupt) is not this uid's or is
 * writable by group or others, -EWOULDBLOCK when another process still holds the store, or
 * the errors of snap_oci_layout_open. why (may be NULL) says which, as above. */
int sfs_ocistore_open(const char *dir, unsigned wait_ms, struct sfs_ocistore **out,
                      struct sfs_ocistore_why *why);
/* --runtime-store: sfs_ocistore_open of dir, which must be on a RAM filesystem (tmpfs, ramfs):
 * -EMEDIUMTYPE otherwise (why->fstype "a disk"). With durable (--store), the two are paired:
 * one lock (either's sfs_ocistore_lock), a removal finds a snapshot in either, and content of
 * the runtime store a uid comes to hold (sfs_ocistore_set_holders on durable) moves to
 * durable. Close the runtime store first. */
int sfs_ocistore_open_runtime(const char *dir, struct sfs_ocistore *durable, unsigned wait_ms,
                              struct sfs_ocistore **out, struct sfs_ocistore_why *why);
/* Records pid as the store's holder (a daemonized child names itself): 0 or -errno. */
int sfs_ocistore_note_pid(struct sfs_ocistore *s, pid_t pid);
/* Lowers the store's limit below SNAP_OCI_ENTRIES_MAX (never above): a store that fills in a
 * few snapshots, for tests. */
void sfs_ocistore_set_max_entries(struct sfs_ocistore *s, size_t max);
/* Lets the store go (for a waiting daemon) and frees s. */
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

/* At start: removes temporary files, makes what the store holds private, re-hashes every
 * blob (setting aside each that does not hash to its name), hands every intact snapshot of
 * the manifest to hooks->restore (max_size bytes at most; a larger one stays stored,
 * unserved), removes blobs nothing names, rewrites the manifest when it named what is gone
 * (a failure to is only warned about: the next write does it), and tags an empty manifest in
 * a store that has none. 0, or the errno of a step that leaves the store unusable. */
int sfs_ocistore_load(struct sfs_ocistore *s, uint64_t max_size,
                      const struct sfs_ocistore_hooks *hooks);

/* Stores a snapshot (its blob, then the manifest and index.json naming it): 0 once durable,
 * or a negative errno with the manifest unchanged: -ENOSPC when one manifest could not name
 * it (more than SNAP_OCI_ENTRIES_MAX snapshots, or a manifest past SNAP_OCI_DOC_MAX), decided
 * before anything is written, -EINVAL for more holders than a layer's annotation holds, or
 * the errno of a write. Already stored: 0, nothing written. */
int sfs_ocistore_add(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                     size_t len, const struct sfs_ocistore_meta *meta);
/* Whether the last sfs_ocistore_add or sfs_ocistore_set_holders failed because the store's
 * filesystem is full (a write's ENOSPC, or EDQUOT from a disk quota), not because of the
 * manifest's own bounds: the caller says which (the attack on the operator's attention: a
 * full disk reported as --max-bytes sends them raising a limit that is not the cause). */
bool sfs_ocistore_full(const struct sfs_ocistore *s);
/* Rewrites the holders of a stored snapshot (n 0: no uid holds it any more, its grants to
 * scopes keep it): 0 once durable, -ENOENT when not stored, -EINVAL, or the errno of a write
 * (-ENOSPC on a full filesystem) with the manifest unchanged. */
int sfs_ocistore_set_holders(struct sfs_ocistore *s, const struct snap_digest *d,
                             const uint32_t *holders, size_t n);
/* The same, and title (when not NULL) becomes the snapshot's title: content a scope published
 * untitled that the main mount's first publisher names. */
int sfs_ocistore_set_holders_title(struct sfs_ocistore *s, const struct snap_digest *d,
                                   const uint32_t *holders, size_t n, const char *title);
/* Removes a snapshot: its blob first (durably), then the manifest naming it. 0 once the blob
 * is gone, even when the manifest could not be rewritten (a full filesystem: the next start
 * drops the entry whose blob is missing); -ENOENT when not stored; or the errno of removing
 * the blob, with nothing changed. */
int sfs_ocistore_remove(struct sfs_ocistore *s, const struct snap_digest *d);

/* Writes DIR/scopes/NAME.json (NAME a staging-name: snap_name_valid) durably and privately
 * (temporary file, fsync, rename, directory fsync; 0600): 0, -EINVAL, or the errno of a
 * write, the file as it was before. */
int sfs_ocistore_put_scope(struct sfs_ocistore *s, const char *name, const void *data,
                           size_t len);
/* Removes DIR/scopes/NAME.json durably: 0, -ENOENT when there is none, -EINVAL, or an errno. */
int sfs_ocistore_drop_scope(struct sfs_ocistore *s, const char *name);
/* Calls fn for each DIR/scopes/NAME.json (in name order; at most SFS_OCISTORE_SCOPE_MAX bytes,
 * a regular file, never followed through a link); a file that cannot be read is handed over as
 * text NULL and err its errno (else err is 0). Stops at fn's first non-zero
 * return and returns it; 0, or the errno of reading the directory. */
int sfs_ocistore_load_scopes(struct sfs_ocistore *s,
                             int (*fn)(void *ctx, const char *name, const char *text, size_t len,
                                       int err),
                             void *ctx);

void sfs_ocistore_lock(struct sfs_ocistore *s);
void sfs_ocistore_unlock(struct sfs_ocistore *s);

/* Blobs set aside at start. */
uint64_t sfs_ocistore_corrupt(const struct sfs_ocistore *s);

/* How many problems sfs_ocistore_check names one by one. */
#define SFS_OCISTORE_CHECK_NAMED 48

/* What re-hashing the store's blobs on disk found, now. */
struct sfs_ocistore_check {
        uint64_t blobs;    /* checked: every snapshot's, the tagged manifest's and its config */
        uint64_t intact;
        uint64_t corrupt;  /* other bytes, another size, or not a regular file */
        uint64_t missing;
        size_t n_named;    /* the first problems, in bad[] */
        struct {
                struct snap_digest digest;
                int err;   /* -ENOENT missing; -EBADMSG, -ELOOP, -EINVAL... corrupt */
        } bad[SFS_OCISTORE_CHECK_NAMED];
};

/* Re-hashes every blob the tagged manifest needs, as it is on disk now (a blob changed while
 * the daemon runs is found here, not only at the next start), without holding the store's
 * lock while it reads: a blob removed meanwhile is not counted. Takes the lock itself: call
 * it without. 0 and *out, or -ENOMEM / the errno of a read that is no verdict on a blob. */
int sfs_ocistore_check(struct sfs_ocistore *s, struct sfs_ocistore_check *out);
/* Rewrites the blob of stored snapshot d from data (len bytes: the daemon's own copy, which
 * must hash to d), durably, when the one on disk is corrupt or missing: 0 once it is intact
 * (nothing written when it was), -ENOENT when d is not stored, -EBADMSG when data does not
 * hash to d, or the errno of the write. Takes the lock itself: call it without. */
int sfs_ocistore_repair(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                        size_t len);
