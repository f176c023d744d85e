/* SPDX-License-Identifier: MIT */
/* The snapfs daemon: mount, self-check, serve, and a clean exit. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fs/tree.h"

struct sfs_daemon_config {
        const char *mountpoint;
        struct sfs_tree_config tree;  /* limits and policy; audit/owner/dev are filled in */
        const char *audit_log;        /* NULL: standard error in the foreground, else syslog */
        const char *read_view;        /* also mount a read-only view here, or NULL */
        const char *store;            /* --store: an OCI image layout to keep snapshots in */
        const char *pid_file;         /* --pid-file: the serving pid, written once it serves */
        bool foreground;
        bool allow_other;
        bool replace_stale;
        bool debug;
        unsigned max_threads;         /* 0: libfuse's default */
        unsigned scope_threads;       /* worker threads of each scope's view (0: the default) */
        /* Per-mount flags that tighten both mounts (MOUNT_ATTR_NOATIME, _NODIRATIME,
         * _NOSYMFOLLOW, an atime mode with MOUNT_ATTR__ATIME cleared), set once mounted. */
        uint64_t mount_attr_set, mount_attr_clr;
};

/* How long a start waits for the daemon that still holds its --store (one exiting). */
#define SFS_STORE_WAIT_MS 5000u

/* Exit codes of sfs_daemon_run. */
enum {
        SFS_EXIT_OK = 0,
        SFS_EXIT_REFUSED = 1, /* the mount is not compliant, or a stale mount is in the way */
        SFS_EXIT_ERROR = 2,   /* usage or system error */
};

/* Mounts snapfs at cfg->mountpoint, checks the mount it made (refusing to serve a non-compliant
 * one: it unmounts and returns SFS_EXIT_REFUSED, printing every finding to standard error),
 * daemonizes unless cfg->foreground (the caller's process returns only once the mount is
 * ready), and serves until SIGTERM, SIGINT or umount(8), then unmounts (SIGHUP reopens the
 * audit log, and never ends the daemon, from the start of this call on). Returns an exit
 * code. */
int sfs_daemon_run(const struct sfs_daemon_config *cfg);
