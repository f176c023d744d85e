/* SPDX-License-Identifier: MIT */
/* The snapfs tree: root, .staging/, published snapshots and staging files, and every decision
 * docs/design.md makes about them (publish protocol, refusals and their errnos, roles,
 * limits). No FUSE types here: fs/fuse/ops.c translates requests into these calls, and the unit
 * tests drive them without a mount. "Layout of fs/" in docs/design.md says which file
 * implements which part.
 *
 * Every function returns 0 or a negative errno. Refusals are audited. Thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#include "fs/base/audit.h"
#include "fs/config/options.h"
#include "fs/config/roles.h"
#include "fs/tree/staging.h"

#define SFS_ROOT_INO 1
#define SFS_STAGING_INO 2
#define SFS_STAGING_NAME ".staging"
/* The main mount's control channel (docs/design.md, "The control channel"). */
#define SFS_CONTROL_INO 3
#define SFS_CONTROL_NAME ".control"
/* The largest request the control channel takes (one write). */
#define SFS_CONTROL_REQUEST_MAX (64u << 10)
/* The first inode number a snapshot or staging file gets. */
#define SFS_FIRST_INO (SFS_CONTROL_INO + 1)
/* A scope view's watch of an entry (docs/design.md, "Waiting for an entry to move"):
 * VIEW/.watch.NAME, never listed, polls readable once NAME moves. Its inode numbers come from
 * the view's own counter, from SFS_WATCH_FIRST_INO, far above any snapshot's. */
#define SFS_WATCH_PREFIX ".watch."
#define SFS_WATCH_FIRST_INO (UINT64_C(1) << 62)

#define SFS_XATTR_SHA256 "user.snapfs.sha256"
#define SFS_XATTR_BINDING "user.snapfs.binding"
/* The staging NAME the snapshot was first published under (absent when it has none). */
#define SFS_XATTR_NAME "user.snapfs.name"
/* The snapshot's kind, "content", "signature" or "manifest" (snapshot/kind.h, decided from
 * its bytes by the one classifier every client uses): for callers the reader policy admits
 * (-EACCES for others: it is derived from the content). */
#define SFS_XATTR_KIND "user.snapfs.kind"
/* On a staging file, for its owner (the file is invisible to every other uid): why the daemon
 * last refused a request on it when the errno alone does not say ("too-big
 * max-snapshot-size=N", "staging-bytes max-staging-bytes=N", "full", a --trust-key reason
 * such as "not-in-signed-manifest"); -ENODATA when it refused none. */
#define SFS_XATTR_REFUSAL "user.snapfs.refusal"
/* On a main-mount snapshot, for the mount owner and root (-EACCES for others), not listed:
 * who else holds it, "uids=U,U scopes=N" (its holders, and how many scopes it is granted to),
 * what `snapfs put` says of content already there. */
#define SFS_XATTR_HOLDERS "user.snapfs.holders"
/* On the root with --store: how many blobs were set aside at start (decimal). */
#define SFS_XATTR_STORE_CORRUPT "user.snapfs.store-corrupt"
/* On the root with --store, for the mount owner and root (-EACCES for others), not listed:
 * the daemon re-hashes every blob of the store on disk as it is now and answers
 * "blobs=N intact=N corrupt=N missing=N set-aside=N", then one line "corrupt HEX" or
 * "missing HEX" per problem (at most SFS_OCISTORE_CHECK_NAMED), then "more=N" for the rest.
 * What `snapfs audit` reads. */
#define SFS_XATTR_STORE_CHECK "user.snapfs.store-check"
/* On the root: what each uid holds against its limits, for snapfs ls and audit. Text, one
 * line each: "limits uid-snapshots=N uid-bytes=N owner=UID reserve-snapshots=N
 * reserve-bytes=N", then "uid=U snapshots=N bytes=N staging=N staging-bytes=N" per uid
 * holding anything (largest first; "more=N" when they do not all fit). */
#define SFS_XATTR_USAGE "user.snapfs.usage"
#define SFS_USAGE_MAX 4000
/* On the main mount's root: the absolute path of its read view (--read-view), so a client can
 * find where a sandbox reads. A hint only: a client judges that path like any mount. */
#define SFS_XATTR_READ_VIEW "user.snapfs.read-view"
/* On a scope view's root: the scope's name. */
#define SFS_XATTR_SCOPE "user.snapfs.scope"
/* Set on a staging file of the main mount by the mount owner or root: "SCOPE" or
 * "SCOPE/ENTRY". Its publish is then for that scope alone (docs/design.md, "Scopes"): held by
 * no uid, granted to SCOPE (under ENTRY: an entry that exists moves), gone with its last
 * grant. */
#define SFS_XATTR_FOR_SCOPE "user.snapfs.for-scope"

enum sfs_kind {
        SFS_KIND_ROOT,
        SFS_KIND_STAGING_DIR,
        SFS_KIND_SNAPSHOT,
        SFS_KIND_STAGING_FILE,
        SFS_KIND_CONTROL, /* MNT/.control */
        SFS_KIND_WATCH,   /* VIEW/.watch.NAME */
};

struct sfs_tree;
struct sfs_node;
struct snap_object;
struct sfs_handle;
struct sfs_dir;
struct sfs_ocistore;
struct snap_digest;
struct snap_store;

struct sfs_entry {
        struct sfs_node *node;
        struct stat st;
        double entry_timeout;
        double attr_timeout;
};

struct sfs_open_info {
        bool direct_io;  /* staging files: every write reaches the daemon before write returns */
        bool keep_cache; /* snapshots: immutable, the page cache stays valid */
        bool flush;      /* staging writes: close() must send a synchronous FLUSH */
};

/* Bits for sfs_tree_setattr (the same meaning as FUSE_SET_ATTR_*). */
enum {
        SFS_SET_MODE = 1 << 0,
        SFS_SET_UID = 1 << 1,
        SFS_SET_GID = 1 << 2,
        SFS_SET_SIZE = 1 << 3,
        SFS_SET_ATIME = 1 << 4,
        SFS_SET_MTIME = 1 << 5,
        SFS_SET_CTIME = 1 << 6,
        SFS_SET_OTHER = 1 << 7, /* anything else the kernel may ask for */
};

int sfs_tree_new(const struct sfs_tree_config *cfg, struct sfs_tree **out);
/* Frees everything, including content still referenced by nodes the kernel never forgot. */
void sfs_tree_free(struct sfs_tree *t);
/* A snapshot served again from --store at start: takes data (malloc'd, len bytes, trusted to
 * hash to d) on 0; 1 when already there; -EFBIG, -ENOSPC past the global limits, -ENOMEM.
 * Held by holders (n_holders distinct uids, charged to each whatever the per-uid limits are
 * now) or, when there are none (a store from before holders were kept), by the mount owner;
 * unheld: by nobody, its grants to scopes still to come back (what none comes back for is
 * collected); first published at created (NULL: now). */
int sfs_tree_restore(struct sfs_tree *t, const struct snap_digest *d, void *data, size_t len,
                     const char *name, const uint32_t *holders, size_t n_holders, bool unheld,
                     const struct timespec *created);
/* Installs the control channel's executor (MNT/.control, docs/design.md): exec runs one
 * request of the mount owner or root (req, len bytes: one JSON object) and answers *reply
 * (malloc'd, *reply_len bytes): 0, or -EINVAL for a request that is no JSON object (nothing
 * done). Without one, .control answers every request with an error. */
void sfs_tree_set_control(struct sfs_tree *t,
                          int (*exec)(void *ctx, const struct sfs_caller *c, const char *req,
                                      size_t len, char **reply, size_t *reply_len),
                          void *ctx);
/* Installs what is told of each snapshot newly published on the main mount (its digest),
 * once it is published and no lock is held (NULL: nothing). The registry brings back a
 * scope's grant whose bytes were missing at its start. */
void sfs_tree_set_published(struct sfs_tree *t,
                            void (*fn)(void *ctx, const struct snap_digest *d), void *ctx);
/* The hook a publish for a scope (SFS_XATTR_FOR_SCOPE) grants its snapshot through, as the
 * control channel's grant does: 0 or its refusal (-ENOENT no such scope, ...). Called with no
 * tree or store lock held. Without one, such a publish is refused (-ENOENT). */
void sfs_tree_set_scope_grant(struct sfs_tree *t,
                              int (*grant)(void *ctx, const struct sfs_caller *c,
                                           const char *scope, const struct snap_digest *d,
                                           const char *entry),
                              void *ctx);
/* Sets the mount's device number once it is known (after mounting); view: of the read-only
 * view instead. */
void sfs_tree_set_dev(struct sfs_tree *t, uint64_t dev, bool view);
/* A copy of the tree's configuration (its device numbers are known once mounted). */
void sfs_tree_get_config(struct sfs_tree *t, struct sfs_tree_config *out);
/* The daemon's one store, which every tree shares (the main tree owns it). */
struct snap_store *sfs_tree_store(struct sfs_tree *t);
/* Records the read view's absolute path for SFS_XATTR_READ_VIEW: 0 or -ENOMEM. */
int sfs_tree_set_view_path(struct sfs_tree *t, const char *path);

struct sfs_node *sfs_tree_root(struct sfs_tree *t);
/* For a request: the node the kernel knows by this node id (its inode number; FUSE_ROOT_ID is
 * the root's), made again in a successor for a number a predecessor handed out (it takes
 * t->lock: never call it with a tree lock held; the tree's own files use sfs_node_find),
 * the open file or the open directory it knows by this handle id: NULL for an id the tree
 * never handed out or took back. The kernel names only what it holds, so what it names stays
 * alive while its request runs. */
struct sfs_node *sfs_tree_node(struct sfs_tree *t, uint64_t ino);
struct sfs_handle *sfs_tree_handle(struct sfs_tree *t, uint64_t id);
/* Whether a handle or directory id was handed out by a predecessor of this daemon (taken
 * over: docs/design.md, "Taking over"), which this tree cannot know. */
bool sfs_tree_id_foreign(struct sfs_tree *t, uint64_t id);
struct sfs_dir *sfs_tree_dir(struct sfs_tree *t, uint64_t id);
/* How many files and directories the kernel has open in the tree (OPEN and OPENDIR not yet
 * released): the descriptors the daemon can count (a view that declines OPEN sees none). */
size_t sfs_tree_open_handles(struct sfs_tree *t);
uint64_t sfs_handle_id(const struct sfs_handle *h);
uint64_t sfs_dir_id(const struct sfs_dir *d);
enum sfs_kind sfs_node_kind(const struct sfs_node *n);
uint64_t sfs_node_ino(const struct sfs_node *n);

/* Looks name up in parent; on success the node's lookup count is raised by one (the kernel
 * will send a matching forget). -ENOENT when absent or not visible to the caller, -EACCES
 * outside the policy, -ENOTDIR when parent is a file. */
int sfs_tree_lookup(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, struct sfs_entry *e);
void sfs_tree_forget(struct sfs_tree *t, struct sfs_node *n, uint64_t nlookup);

int sfs_tree_getattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct stat *st, double *timeout);
/* Snapshots and directories: -EROFS for every change. Staging files (owner only): SFS_SET_SIZE
 * truncates or extends, times are accepted and ignored, mode/owner changes get -EPERM. */
int sfs_tree_setattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     const struct stat *attr, int to_set, struct stat *st, double *timeout);
int sfs_tree_access(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                    int mask);

/* Opens a file. Snapshots: read-only (-EROFS for write access, O_TRUNC or O_APPEND), readers
 * only (-EACCES). Staging files: owner only (-ENOENT for others), no O_APPEND/O_DIRECT
 * (-EINVAL); O_TRUNC truncates. */
int sfs_tree_open(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n, int flags,
                  struct sfs_handle **h, struct sfs_open_info *oi);
/* Creates name in .staging/ and opens it: -EPERM outside .staging/, -EACCES for a uid outside
 * the publisher policy, -EINVAL for a bad name, -EEXIST if the caller has it already,
 * -EDQUOT past the per-uid staging limit. */
int sfs_tree_create(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, int flags, struct sfs_entry *e, struct sfs_handle **h,
                    struct sfs_open_info *oi);

/* Calls reply(ctx, data, len) exactly once with up to size bytes at off (fewer at the end of
 * the file) and returns its result; or returns a negative errno without calling it. For a
 * snapshot the data points into immutable content: no copy. */
int sfs_tree_read(struct sfs_tree *t, struct sfs_handle *h, size_t size, off_t off,
                  int (*reply)(void *ctx, const void *data, size_t len), void *ctx);
/* A published snapshot's content, to pre-fill the kernel's page cache with: 0 with *data and
 * *size and one store reference in *ref (sfs_tree_put_content drops it), -EINVAL when n is
 * not a snapshot, -EBUSY while a handle is open on it (a page fault through a mapping of that
 * handle could hold a page lock while it waits for this daemon). The bytes never change. */
int sfs_tree_get_content(struct sfs_tree *t, struct sfs_node *n, struct snap_object **ref,
                         const void **data, uint64_t *size);
void sfs_tree_put_content(struct sfs_tree *t, struct snap_object *ref);
/* The same for a request that carries no handle: reads through the read-only view, whose
 * opens the kernel makes without asking the daemon. Snapshots only (-EBADF otherwise); the
 * kernel holds the inode, and with it the node, while it reads. */
int sfs_tree_read_node(struct sfs_tree *t, struct sfs_node *n, size_t size, off_t off,
                       int (*reply)(void *ctx, const void *data, size_t len), void *ctx);
/* The flags a WRITE request carries are its descriptor's at that moment, and fcntl(F_SETFL)
 * can add O_APPEND or O_DIRECT after an open that refused them without asking the daemon:
 * -EINVAL (audited) for those, as the open gives; 0 otherwise. Called before sfs_tree_write. */
int sfs_tree_write_flags(struct sfs_tree *t, const struct sfs_caller *c, int flags);
/* Writes to a staging file opened for writing: -EBADF otherwise, -EFBIG past the snapshot
 * size limit, -ENOSPC past the byte limit, -EBUSY while it is being published. */
int sfs_tree_write(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_handle *h,
                   const void *buf, size_t size, off_t off);
/* close() of a descriptor: a staging write handle stops counting as a writer (until it
 * writes again). The kernel sends RELEASE only later and asynchronously, so this is what
 * lets "close, then rename" publish without a spurious EBUSY. */
void sfs_tree_flush(struct sfs_tree *t, struct sfs_handle *h);
void sfs_tree_release(struct sfs_tree *t, struct sfs_handle *h);

/* Snapshot: the mount owner and root remove it; with unlink_own a holder drops its own hold
 * (the snapshot goes with its last reference); -EPERM for every other caller. Content stays
 * readable through open descriptors. Staging file: owner only (-ENOENT for others). */
int sfs_tree_unlink(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name);
/* Publishes .staging/name as root/newname: -EPERM for a snapshot source, -EINVAL for a target
 * that is not 64 lowercase hex in the root, -EBUSY while open for writing, -EBADMSG when the
 * bytes do not hash to newname, -EEXIST when already published (the caller becomes one of its
 * holders; nothing else changes), -EDQUOT past the caller's own limits (for a new snapshot or
 * a new hold), -ENOSPC at the snapshot-count or byte limit. Every such decision is made
 * before --store is written. On success *published is the node now at newname (the same
 * node as before: the kernel moves the source dentry onto the target). */
int sfs_tree_rename(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *parent,
                    const char *name, struct sfs_node *newparent, const char *newname,
                    unsigned flags, struct sfs_node **published);

/* link, symlink, mknod, mkdir, rmdir: always refused (-EPERM), audited under op. */
int sfs_tree_refuse(struct sfs_tree *t, const struct sfs_caller *c, const char *op,
                    const char *name, int err);

int sfs_tree_opendir(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct sfs_dir **d);
/* Calls fill(ctx, name, ino, mode, next_off) for entries from off on until it returns
 * non-zero (buffer full): -EBADF without a handle, -EINVAL for a negative offset. .staging's
 * listing is taken at opendir; the root's is streamed in inode order with the inode number as
 * the offset, so a snapshot published or removed meanwhile neither tears nor repeats an entry
 * and a held handle costs no copy of the listing. */
int sfs_tree_readdir(struct sfs_tree *t, struct sfs_dir *d, off_t off,
                     int (*fill)(void *ctx, const char *name, uint64_t ino, mode_t mode,
                                 off_t next_off),
                     void *ctx);
void sfs_tree_releasedir(struct sfs_tree *t, struct sfs_dir *d);

/* Value of an xattr: with bufsize 0 only *len is set; -ERANGE when bufsize < *len, -ENODATA
 * when absent, -EBUSY for a staging file still open for writing. */
int sfs_tree_getxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *name, char *buf, size_t bufsize, size_t *len);
int sfs_tree_listxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                       char *buf, size_t bufsize, size_t *len);
/* setxattr (value, size) and removexattr (value NULL): SFS_XATTR_FOR_SCOPE on the caller's
 * own staging file of the main mount, by the mount owner or root (-EACCES otherwise, -EINVAL
 * for a value that is no scope and entry name, -EBUSY while it is published); everything else
 * -EROFS, audited. */
int sfs_tree_setxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *op, const char *name, const char *value, size_t size);

/* The mount's limits and what is free, as the caller may use them: f_blocks/f_files are the
 * global limits, f_bfree the bytes free of them, f_bavail and f_ffree/f_favail what this
 * caller may still publish (its own per-uid limits, less the owner's reserve for other
 * uids; Linux's statfs carries no f_favail, so f_ffree is the caller's too). 0, or -EACCES
 * (audited) for a uid outside the reader and publisher policies. */
int sfs_tree_statfs(struct sfs_tree *t, const struct sfs_caller *c, struct statvfs *sv);

/* Removes every staging file that no handle holds open, that is not being published and
 * whose owner has not touched it for staging_ttl_ms before now_ms (CLOCK_MONOTONIC, as
 * sfs_now_ms() gives). Returns how many were removed; 0 when the TTL is 0. Audited. */
unsigned sfs_tree_expire_staging(struct sfs_tree *t, uint64_t now_ms);


/* What the tree holds now, for snapfs status and the metrics (fs/control/status.c). */
struct sfs_tree_stats {
        uint64_t snapshots;     /* published */
        uint64_t bytes;         /* content bytes of live snapshots (unlinked-but-open too) */
        uint64_t reserved;      /* staging bytes */
        uint64_t staging_files;
};
void sfs_tree_get_stats(struct sfs_tree *t, struct sfs_tree_stats *st);

/* ---- waiting for an entry to move (watch.c) ---- */

/* How the tree hands back the poll handles it keeps (the FUSE layer's: fs/tree knows no
 * FUSE). wake tells the poller to poll again and frees the handle; drop only frees it. */
struct sfs_poll_ops {
        void (*wake)(void *ph);
        void (*drop)(void *ph);
};

/* A poll of n by c through handle fh (0: none, a view whose opens the kernel makes alone),
 * on behalf of session owner. *revents: for a watch, POLLIN|POLLRDNORM|POLLPRI once its entry
 * moved (with POLLHUP when the entry was removed), else 0, and ph (may be NULL) is kept to be
 * woken when it moves; for any other node, every file's default mask. The tree owns ph from
 * here on, whatever it returns. Returns 0, -EACCES (c may not see the view), -ENOMEM. */
int sfs_tree_poll(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                  uint64_t fh, void *ph, const void *owner, const struct sfs_poll_ops *ops,
                  unsigned *revents);
/* Drops every poll handle session owner left (its session ends: never woken after). */
void sfs_tree_poll_forget(struct sfs_tree *t, const void *owner);
/* Announces the moves a scope change marked (its effects' watches): their watches are ready
 * and their pollers woken. Called after the kernel's entries of the moved names were
 * invalidated, so a woken waiter opens the entry's new snapshot by its name. */
void sfs_tree_announce_moves(struct sfs_tree *t);
