/* SPDX-License-Identifier: MIT */
#include "clientopts.h"
#include "client-internal.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

int cli_parse_common(const char *cmd, int argc, char **argv, bool with_mount, int operands,
                     const char *what, void (*usage)(FILE *f), struct cli_common *c)
{
        static const struct option longopts[] = {
                { "mount", required_argument, NULL, 'm' },
                { "owner", required_argument, NULL, 'o' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int ch;

        *c = (struct cli_common){ 0 };
        optind = 1;
        /* Commands without --mount take the mount as an operand: skip the option entry. */
        while ((ch = getopt_long(argc, argv, "h", longopts + !with_mount, NULL)) != -1) {
                switch (ch) {
                case 'm':
                        c->mount_arg = optarg;
                        break;
                case 'o':
                        if (cli_parse_owner(optarg, &c->opts) < 0) {
                                fprintf(stderr, "snapfs %s: --owner: invalid uid '%s'\n", cmd,
                                        optarg);
                                return 2;
                        }
                        break;
                case 'j':
                        c->json = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (argc - optind != operands) {
                if (operands == 0)
                        fprintf(stderr, "snapfs %s: unexpected argument '%s'%s\n", cmd,
                                argv[optind], with_mount ? " (use --mount)" : "");
                else
                        fprintf(stderr, "snapfs %s: expected %s\n", cmd, what);
                usage(stderr);
                return 2;
        }
        return -1;
}

char *cli_mount_path(const char *cmd, const struct cli_common *c)
{
        char *mount = path_make_absolute(c->mount_arg ? c->mount_arg : cli_default_mount());

        if (!mount)
                fprintf(stderr, "snapfs %s: %s\n", cmd, strerror(errno));
        return mount;
}

int cli_open_root_dir(const struct snapfs_mnt *m, DIR **out)
{
        int fd = snapfs_mnt_open(m, ".", O_RDONLY | O_DIRECTORY, 0);

        if (fd < 0)
                return fd;
        *out = fdopendir(fd);
        if (!*out) {
                int r = negative_errno();
                safe_close(fd);
                return r;
        }
        return 0;
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
