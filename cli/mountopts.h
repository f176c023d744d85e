/* SPDX-License-Identifier: MIT */
/* mount(8)'s option strings for `snapfs mount`: "-o max_bytes=64M,allow_other" becomes
 * "--max-bytes=64M --allow-other", so every long option can be given as -o name=value (the
 * only form mount.fuse3 and fstab can pass). Pure: no I/O, unit-tested. */
#pragma once

#include <getopt.h>
#include <stddef.h>

/* Why an expansion was refused. */
enum cli_mountopts_refusal {
        CLI_MOUNTOPTS_EMPTY = 1,      /* an empty word, or -o without words */
        CLI_MOUNTOPTS_UNKNOWN,        /* a name that is no long option (exactly: no prefix) */
        CLI_MOUNTOPTS_NOT_UNDER_MOUNT, /* help, debug, foreground: cannot run under mount(8) */
};

struct cli_mountopts_error {
        enum cli_mountopts_refusal why;
        char word[128]; /* the word refused, as given (truncated) */
};

/* Expands every "-o WORDS" and "-oWORDS" of argv (before the first non-option or "--"; an
 * option's separate value is never taken for -o) into long options, keeping everything else
 * in order. "ro" becomes --read-only; rw, dev, suid, exec (and their no- forms), atime,
 * strictatime and their no- forms, diratime, lazytime, sync/async, defaults and auto/noauto
 * are dropped: snapfs imposes nosuid,nodev,noexec whatever it is given. A name's '_' is read
 * as '-' (max_bytes = max-bytes) and must then be exactly the name of one of longopts (never
 * an abbreviation: "-o fore" is not --foreground). help, debug and foreground are refused:
 * under mount(8) one prints and mounts nothing, the others never return. A word of digits
 * right after publishers= or readers= continues that uid list ("publishers=0,1000"). 0 and a
 * malloc'd, NULL-terminated *out (free with cli_mountopts_free) of *out_argc entries, or
 * -EINVAL with *err (may be NULL) saying which word and why, or -ENOMEM. */
int cli_mountopts_expand(int argc, char **argv, const struct option *longopts,
                         int *out_argc, char ***out, struct cli_mountopts_error *err);
void cli_mountopts_free(char **argv);
