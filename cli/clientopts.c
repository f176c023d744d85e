/* SPDX-License-Identifier: MIT */
#include "clientopts.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_default_mount(void)
{
        const char *m = getenv("SNAPFS_MOUNT");

        return m && *m ? m : CLI_DEFAULT_MOUNT;
}

int cli_parse_owner(const char *s, struct snapfs_options *opts)
{
        uint64_t v = 0;

        /* One spelling per uid, like the binding text: "+0", "00" or " 0" are refused. */
        if (!s || !*s || (s[0] == '0' && s[1]))
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t)(*p - '0');
                /* (uid_t)-1 means "no uid" to the kernel: never an owner. */
                if (v >= UINT32_MAX)
                        return -EINVAL;
        }
        opts->flags |= SNAPFS_OPT_OWNER;
        opts->owner = (uint32_t)v;
        return 0;
}

char *cli_absolute_path(const char *path)
{
        char cwd[PATH_MAX];
        char *out;

        if (path[0] == '/')
                return strdup(path);
        if (!getcwd(cwd, sizeof(cwd)))
                return NULL;
        if (asprintf(&out, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path) < 0)
                return NULL;
        return out;
}

void cli_print_reasons(FILE *f, const struct snapfs_report *why)
{
        for (unsigned i = 0; i < why->n_reasons; i++)
                fprintf(f, "%s: %s\n", why->reasons[i].code, why->reasons[i].message);
        if (why->n_dropped)
                fprintf(f, "(and %u more reasons not listed)\n", why->n_dropped);
}

json_object *cli_reasons_json(const struct snapfs_report *why)
{
        json_object *list = json_object_new_array();

        for (unsigned i = 0; list && i < why->n_reasons; i++) {
                json_object *o = json_object_new_object();
                if (!o)
                        break;
                json_object_object_add(o, "code", json_object_new_string(why->reasons[i].code));
                json_object_object_add(o, "message",
                                       json_object_new_string(why->reasons[i].message));
                json_object_array_add(list, o);
        }
        return list;
}

json_object *cli_refusal_json(json_object *o, int err, const struct snapfs_report *why)
{
        if (!o)
                return NULL;
        json_object_object_add(o, "error", json_object_new_string(strerrorname_np(-err) ?: "?"));
        json_object_object_add(o, "message", json_object_new_string(snapfs_strerror(err)));
        json_object_object_add(o, "reasons", cli_reasons_json(why));
        return o;
}

int cli_print_json(json_object *o)
{
        const int flags = JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE;
        int r = 0;

        if (!o)
                return -ENOMEM;
        if (printf("%s\n", json_object_to_json_string_ext(o, flags)) < 0 || fflush(stdout) != 0)
                r = -EIO;
        json_object_put(o);
        return r;
}
