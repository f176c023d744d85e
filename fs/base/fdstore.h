/* SPDX-License-Identifier: MIT */
/* Descriptors handed to the daemon at start, as systemd passes them and the daemon's own
 * supervisor does (LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID). */
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
