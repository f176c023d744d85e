/* SPDX-License-Identifier: MIT */
/* Descriptors that outlive the daemon's process: those handed to it at start (LISTEN_FDS,
 * LISTEN_FDNAMES and LISTEN_PID, as systemd's file-descriptor store and the daemon's own
 * supervisor pass them), and storing one with systemd (FDSTORE=1, FDNAME=). */
#pragma once

#include <stdbool.h>

/* Reads LISTEN_* once and unsets them (a child must not take them for its own): the number
 * of named descriptors kept, 0 when none were passed or LISTEN_PID names another process
 * (they are not ours: nothing is kept), or -EINVAL for a malformed list. */
int sfs_fdstore_load(void);
/* The descriptor passed under name, taken (the caller owns it), or -1. */
int sfs_fdstore_take(const char *name);
/* Whether a passed descriptor whose name starts with prefix is still untaken. */
bool sfs_fdstore_left(const char *prefix);
/* Closes every descriptor nobody took. */
void sfs_fdstore_close_rest(void);
/* Stores fds (n of them, at most 16) with the service manager under name (FDSTORE=1,
 * FDNAME=name): 0, also without $NOTIFY_SOCKET (nothing is sent: 0 is not a promise), or
 * -errno. */
int sfs_fdstore_store(const char *name, const int *fds, unsigned n);
/* Removes what was stored under name (FDSTOREREMOVE=1): 0 or -errno. */
int sfs_fdstore_remove(const char *name);
