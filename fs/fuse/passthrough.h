/* SPDX-License-Identifier: MIT */
/* FUSE passthrough (docs/design.md, "Reads without the daemon"): a snapshot's reads go from
 * the kernel straight to a backing file, with no READ request to the daemon. The backing file
 * is a sealed memory file (F_SEAL_WRITE, _GROW, _SHRINK, _SEAL: nobody, root included, can
 * change it) holding the snapshot's content, made at its first open, registered with each
 * connection once (FUSE_DEV_IOC_BACKING_OPEN) and closed (FUSE_DEV_IOC_BACKING_CLOSE) when the
 * snapshot is collected. libfuse 3.14 knows none of it: conn.c's I/O patches the INIT reply
 * (FUSE_PASSTHROUGH, max_stack_depth) and each OPEN reply (FOPEN_PASSTHROUGH, backing_id). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sfs_conn;
struct sfs_inostate;
struct snap_object;

/* Whether passthrough is wanted: false for --no-passthrough. Before any mount. Also checks
 * the privilege (CAP_SYS_ADMIN in the initial user namespace, which the kernel demands to
 * register a backing file) and says why in sfs_pt_mode(). st is where each connection's
 * backing ids are noted for a successor (inostate.h), or NULL. max: snapshots with a backing
 * file at once (--max-backing-files; each is a descriptor of the daemon): past it, a
 * snapshot opened for the first time is read through the daemon, for good. */
void sfs_pt_configure(bool wanted, struct sfs_inostate *st, unsigned max);
/* Whether an INIT whose request offers passthrough (flags2) gets it. */
bool sfs_pt_wanted(void);
/* The INIT request's fields (after its header): whether the kernel offers FUSE_PASSTHROUGH.
 * Remembered for sfs_pt_mode() when it does not. */
bool sfs_pt_init_offered(const void *init_in, size_t len);
/* Patches the INIT reply out (fuse_init_out, len bytes) to ask for passthrough: FUSE_INIT_EXT,
 * FUSE_PASSTHROUGH in flags2, no FUSE_WRITEBACK_CACHE, max_stack_depth 1. false when len is too
 * short (nothing changed). */
bool sfs_pt_patch_init(void *init_out, size_t len);
/* The connection c serves by passthrough (its INIT reply asked for it), or one INIT was
 * answered without it: the mode for status and metrics, said once in the log. */
void sfs_pt_conn_on(struct sfs_conn *c);
void sfs_pt_conn_off(void);

/* The backing id of obj's content on connection c, registered at its first open there: 0 and
 * *id; -ENOSPC past the bound, -EPERM (no privilege), or another negative errno: the
 * snapshot is then read through the daemon, on c, for good (the kernel refuses an inode mixing
 * both: EINVAL, ETXTBSY). */
int sfs_pt_backing(struct sfs_conn *c, const struct snap_object *obj, uint32_t *id);
/* The store's adopt hook (snapshot/store.h): obj's content copied into its sealed memory file,
 * mapped read-only, for the store to keep instead of its heap copy, so the content lives once
 * (the kernel's passthrough reads and the daemon's own read the same pages). NULL without
 * passthrough wanted, past the bound, or on any failure (the heap copy serves). */
const uint8_t *sfs_pt_adopt(const struct snap_object *obj);
/* obj is collected: its backing file is closed on every connection, its memory file too (and
 * its mapping, when adopted). */
void sfs_pt_forget(const struct snap_object *obj);
/* Connection c ends: its backing ids are forgotten; closed first when close is true (an
 * unmount; a hand-over leaves them to the successor). */
void sfs_pt_conn_gone(struct sfs_conn *c, bool close);

/* Sets the OPEN reply the current thread sends next to passthrough with backing id (0: none);
 * conn.c's writev applies it to a struct fuse_open_out. */
void sfs_pt_next_open(uint32_t id);
/* Applies (and clears) what sfs_pt_next_open set to an OPEN reply (fuse_open_out, len). */
void sfs_pt_patch_open(void *open_out, size_t len);

/* "passthrough", or "read" with why in *why (a static string). */
const char *sfs_pt_mode(const char **why);
