/* SPDX-License-Identifier: MIT */
/* The supervisor of a daemon that no service manager keeps (`snapfs mount` daemonized,
 * mount(8), fstab): a process as small as it can be that holds every kernel FUSE connection
 * of the daemon, starts the serving process, and when it dies (kill -9, a crash, the OOM
 * killer, or a hand-over asked with SIGUSR1) starts a successor with the connections, which
 * takes them over (docs/design.md, "Taking over"). It forwards SIGTERM, SIGINT, SIGHUP and
 * SIGUSR1 to the serving process and exits with its status once it stopped for good. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* A serving process that exits with this status hands its mounts over (SIGUSR1): its
 * supervisor starts a successor. */
#define SFS_EXIT_HANDOVER 75

/* Forks the supervisor: returns in the child (the serving process) with 0 and *sock, the
 * socket its connections go to; the parent never returns (it supervises, then exits with
 * the serving process's status). A successor starts in cwd (the directory the daemon was
 * started in: its arguments may be relative to it; NULL: /). -errno when socketpair or fork
 * fail (nothing forked). */
int sfs_supervisor_start(int *sock, const char *cwd);
/* Sends the pair of connection id (the /dev/fuse descriptor and its record) to the
 * supervisor at sock: 0 or -errno. */
int sfs_supervisor_keep(int sock, int fd, int rec, unsigned id);
/* Sends the daemon's inode-number state (fs/base/inostate.h): 0 or -errno. */
int sfs_supervisor_keep_state(int sock, int fd);
/* Tells the supervisor the serving process serves (a successor that dies before it says so
 * counts towards giving up): 0 or -errno. */
int sfs_supervisor_serving(int sock);
