/* SPDX-License-Identifier: MIT */
/* mount(8)'s option strings for `snapfs mount`: "-o max_bytes=64M,allow_other" becomes
 * "--max-bytes=64M --allow-other", so every option of the daemon's table (fs/config/options.h) can
 * be given as -o name=value (the only form mount.fuse3 and fstab can pass). Pure: no I/O,
 * unit-tested. */
#pragma once

#include <stddef.h>

/* Why an expansion was refused. */
enum cli_mountopts_refusal {
        CLI_MOUNTOPTS_EMPTY = 1,      /* an empty word, or -o without words */
        CLI_MOUNTOPTS_UNKNOWN,        /* a name that is no option (exactly: no prefix) */
        CLI_MOUNTOPTS_NOT_UNDER_MOUNT, /* help, debug, foreground: cannot run under mount(8)
                                          (SFS_OPTF_COMMAND_LINE_ONLY) */
};

struct cli_mountopts_error {
        enum cli_mountopts_refusal why;
        char word[128]; /* the word refused, as given (truncated) */
};

/* Expands every "-o WORDS" and "-oWORDS" of argv (before the first non-option or "--"; an
 * option's separate value is never taken for -o) into long options, keeping everything else
 * in order. A word that is an option's o_alias ("ro") becomes that option (--read-only); rw,
 * dev, suid, exec (and their no- forms), atime, strictatime and their no- forms, diratime,
 * lazytime, sync/async, defaults and auto/noauto are dropped: snapfs imposes
 * nosuid,nodev,noexec whatever it is given. A name's '_' is read as '-' (max_bytes =
 * max-bytes) and must then be exactly the name of an option of fs/config/options.h's table (never an
 * abbreviation: "-o fore" is not --foreground). The options that cannot run under mount(8)
 * (help prints and mounts nothing, debug and foreground never return) are refused. A word of
 * digits right after an option taking a uid list ("publishers=0,1000") continues that list.
 * 0 and a malloc'd, NULL-terminated *out (free with cli_mountopts_free) of *out_argc
 * entries, or -EINVAL with *err (may be NULL) saying which word and why, or -ENOMEM. */
int cli_mountopts_expand(int argc, char **argv, int *out_argc, char ***out,
                         struct cli_mountopts_error *err);
void cli_mountopts_free(char **argv);
