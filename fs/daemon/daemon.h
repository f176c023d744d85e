/* SPDX-License-Identifier: MIT */
/* The snapfs daemon: mount, self-check, serve, and a clean exit. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fs/tree/tree.h"

/* How long a start waits for the daemon that still holds its --store (one exiting). */
#define SFS_STORE_WAIT_MS 5000u

/* Exit codes of sfs_daemon_run. */
enum {
        SFS_EXIT_OK = 0,
        SFS_EXIT_REFUSED = 1, /* the mount is not compliant, or a stale mount is in the way */
        SFS_EXIT_ERROR = 2,   /* usage or system error */
};

/* Starts with what it was given, whoever built cfg: cfg->config's options (fs/config/conffile.h;
 * the ones cfg->given holds win), the rules between options and the derived defaults
 * (sfs_daemon_config_finish), cfg->trust_keys loaded. Any of them refused is printed and
 * nothing is mounted: SFS_EXIT_ERROR, or SFS_EXIT_REFUSED for a config file that is not a
 * regular file of this uid or root that nobody else may write. Then mounts snapfs at
 * cfg->mountpoint, checks the mount it made (refusing to serve a non-compliant one: it
 * unmounts and returns SFS_EXIT_REFUSED, printing every finding to standard error),
 * daemonizes unless cfg->foreground (the caller's process returns only once the mount is
 * ready), and serves until SIGTERM, SIGINT or umount(8), then unmounts (SIGHUP reopens the
 * audit log, and never ends the daemon, from the start of this call on). Returns an exit
 * code. */
int sfs_daemon_run(const struct sfs_daemon_config *cfg);
