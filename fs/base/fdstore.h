/* SPDX-License-Identifier: MIT */
/* Descriptors that outlive the daemon's process: those handed to it at start (LISTEN_FDS,
 * LISTEN_FDNAMES and LISTEN_PID, as systemd and the daemon's own supervisor pass them), and
 * storing one in systemd's file-descriptor store (FDSTORE=1, FDNAME=). */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

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
/* Stores fd with the service manager under name (FDSTORE=1, FDNAME=name): 0, also without
 * $NOTIFY_SOCKET (nothing is sent), or -errno. systemd keeps it across a restart and a
 * crash of the unit (FileDescriptorStoreMax=), drops it once it polls POLLERR or POLLHUP,
 * and flushes the store when the unit stops. */
int sfs_fdstore_store(const char *name, int fd);

/* Puts the n descriptors fds (n > 0) in mh as one SCM_RIGHTS message, its control data in
 * buf: CMSG_SPACE(sizeof(int) * n) zeroed bytes at least, aligned for a struct cmsghdr. */
void sfs_msg_put_fds(struct msghdr *mh, void *buf, const int *fds, unsigned n);
