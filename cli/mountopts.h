/* SPDX-License-Identifier: MIT */
/* mount(8)'s option strings for `snapfs mount`: "-o max_bytes=64M,allow_other" becomes
 * "--max-bytes=64M --allow-other", so every long option can be given as -o name=value (the
 * only form mount.fuse3 and fstab can pass). Pure: no I/O, unit-tested. */
#pragma once

#include <getopt.h>
#include <stddef.h>

/* Expands every "-o WORDS" and "-oWORDS" of argv (before the first non-option or "--"; an
 * option's separate value is never taken for -o) into long options, keeping everything else
 * in order. "ro" becomes --read-only; rw, dev, suid, exec (and their no- forms), the atime
 * family, sync/async, defaults and auto/noauto are dropped: snapfs imposes nosuid,nodev,
 * noexec whatever it is given. A name's '_' is read as '-' (max_bytes = max-bytes). A word of
 * digits right after publishers= or readers= continues that uid list ("publishers=0,1000").
 * Names are not checked here: getopt_long refuses an unknown one. 0 and a malloc'd,
 * NULL-terminated *out (free with cli_mountopts_free) of *out_argc entries, or -EINVAL (an
 * empty word, "-o" without words) / -ENOMEM. */
int cli_mountopts_expand(int argc, char **argv, const struct option *longopts,
                         int *out_argc, char ***out);
void cli_mountopts_free(char **argv);
