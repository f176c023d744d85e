/* SPDX-License-Identifier: MIT */
/* The daemon's config file (snapfs mount --config FILE, -o config=FILE): key = value lines
 * named as the long options and -o words of fs/config/options.h's table, # comments, the command
 * line winning over the file. The file is an untrusted path: it is read with bounds and
 * refused unless it is a regular file of this uid or root that no one else may write. */
#pragma once

#include <stddef.h>

#include "fs/config/options.h"

/* The largest config file read. */
#define SFS_CONFFILE_MAX (64u << 10)

/* Applies the lines of text (NUL-terminated, len bytes before the NUL; malloc'd, and owned
 * by cfg from this call on, whatever it returns) to cfg. Blank lines and lines starting with
 * '#' (after blanks) are skipped; every other line is KEY = VALUE, blanks around both
 * dropped, KEY a long option or its -o spelling (max_bytes), VALUE its value (yes or no for
 * a flag). Every line is checked, but an option cfg->given holds on entry (given on the
 * command line) keeps its value. 0, or -EINVAL with *line (1-based) and why: a control
 * byte, no '=', an unknown key, one that belongs on the command line (foreground, debug,
 * help, config), a key given twice that is not repeatable, or a bad value (its message). */
int sfs_conffile_apply(struct sfs_daemon_config *cfg, char *text, size_t len, unsigned *line,
                       char *why, size_t n);

/* Reads path (O_NOFOLLOW|O_NONBLOCK, fstat on the descriptor, at most SFS_CONFFILE_MAX
 * bytes) and applies it. 0, or: -ELOOP (a symbolic link), -EINVAL (not a regular file, or a
 * line refused: *line and why say which), -EPERM (owned by a uid other than this one and
 * root, or writable by group or others: they could change the daemon's options), -EFBIG,
 * or the errno of open or read; *line is 0 when no line is to blame. */
int sfs_conffile_load(struct sfs_daemon_config *cfg, const char *path, unsigned *line,
                      char *why, size_t n);
