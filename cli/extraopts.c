/* SPDX-License-Identifier: MIT */
/* Options a command takes besides the shared ones, taken out of argv (extraopts.h). */
#include <string.h>

#include "cli/clientopts.h"
#include "cli/extraopts.h"

static const struct cli_extra *find(const struct cli_extra *extras, size_t n, const char *arg,
                                    size_t len)
{
        for (size_t i = 0; i < n; i++)
                if (strlen(extras[i].name) == len && strncmp(extras[i].name, arg, len) == 0)
                        return &extras[i];
        return NULL;
}

int cli_take_extras(const char *cmd, bool json, void (*usage)(FILE *f), int *argc, char **argv,
                    const struct cli_extra *extras, size_t n)
{
        bool seen[64] = { false };
        int in, out = 1;

        if (n > sizeof(seen) / sizeof(seen[0]))
                return cli_usage_error(cmd, json, NULL, "too many options");
        for (in = 1; in < *argc; in++) {
                const char *arg = argv[in], *eq;
                const struct cli_extra *e;

                if (strcmp(arg, "--") == 0)
                        break;
                if (strncmp(arg, "--", 2) != 0) {
                        argv[out++] = argv[in];
                        continue;
                }
                eq = strchr(arg + 2, '=');
                e = find(extras, n, arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
                if (!e) {
                        argv[out++] = argv[in];
                        continue;
                }
                if (seen[e - extras])
                        return cli_usage_error(cmd, json, usage, "--%s given twice", e->name);
                seen[e - extras] = true;
                if (e->given)
                        *e->given = true;
                if (!e->has_arg) {
                        if (eq)
                                return cli_usage_error(cmd, json, usage,
                                                       "option '--%s' takes no value", e->name);
                        continue;
                }
                if (eq) {
                        *e->value = eq + 1;
                } else if (in + 1 < *argc) {
                        *e->value = argv[++in];
                } else {
                        return cli_usage_error(cmd, json, usage, "option '--%s' needs a value",
                                               e->name);
                }
        }
        /* "--" and what follows it stay as they are. */
        for (; in < *argc; in++)
                argv[out++] = argv[in];
        argv[out] = NULL;
        *argc = out;
        return -1;
}
