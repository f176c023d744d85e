/* SPDX-License-Identifier: MIT */
/* Scope views (docs/design.md, "Scopes"): each scope's tree mounted at its path as a FUSE
 * session of its own (its own superblock, device number, root inode, kernel locks and request
 * queue), served by a bounded set of worker threads of its own, so one scope's flood can take
 * neither another's locks nor its workers. A deleted scope's view is detached lazily and its
 * workers stopped: the daemon's one reaper thread answers the descriptors still open, one
 * request at a time, until the kernel ends the session, and frees it then. Such views count
 * against --max-scopes (registry.h, lingering). Implements registry.h's view backend. */
#pragma once

#include <stdbool.h>

#include "fs/scopes/registry.h"

struct sfs_scopeviews;

/* The name of every thread that serves a live view (/proc/PID/task/T/comm). */
#define SFS_VIEW_THREAD_NAME "snapfs-view"

/* Views served by at most max_threads workers each (0: SFS_SCOPE_THREADS_DEFAULT, fs/config/options.h): 0 and *out, or -errno. */
int sfs_scopeviews_new(unsigned max_threads, bool debug, struct sfs_scopeviews **out);
/* The backend's table, for the registry. */
const struct sfs_view_ops *sfs_scopeviews_ops(struct sfs_scopeviews *v);
/* Starts serving every view mounted so far, and every later one at once (after any fork):
 * 0 or -errno. */
int sfs_scopeviews_start(struct sfs_scopeviews *v);
/* From here on, views are ended without being unmounted: the daemon hands its connections
 * over to a successor. */
void sfs_scopeviews_handover(struct sfs_scopeviews *v);
/* Frees what is left (views detached and still serving: their sessions end now); the
 * registry shut its views down first. NULL is fine. */
void sfs_scopeviews_free(struct sfs_scopeviews *v);
