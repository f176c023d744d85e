/* SPDX-License-Identifier: MIT */
/* Options a client command takes besides the ones every client shares: taken out of argv
 * before the rest goes to the one parser of the shared options (cli_parse_common), so --mount,
 * the trust options, --json and their environment mean the same in every command. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

struct cli_extra {
        const char *name;   /* the long option without "--" ("view") */
        bool has_arg;       /* --name VALUE or --name=VALUE; else a flag */
        const char **value; /* has_arg: where the value goes (untouched when not given) */
        bool *given;        /* set when the option is given (may be NULL with has_arg) */
};

/* Takes every extra option out of argv[1..*argc-1], in place, keeping the other arguments in
 * their order (and everything after "--" as it is); *argc becomes their count. Returns -1 to
 * go on, else 2 after a usage error already reported (as JSON too when json): a value missing,
 * a value given to a flag, an option given twice. */
int cli_take_extras(const char *cmd, bool json, void (*usage)(FILE *f), int *argc, char **argv,
                    const struct cli_extra *extras, size_t n);
