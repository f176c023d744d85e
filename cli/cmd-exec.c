/* SPDX-License-Identifier: MIT */
/* snapfs exec: hand a verified snapshot to a program as an inherited descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clientopts.h"
#include "commands.h"
#include "util.h"

#define DEFAULT_FD 3
#define DEFAULT_ENV "SNAPFS_BINDING"
/* Highest --fd accepted; dup2 refuses anything past RLIMIT_NOFILE anyway. */
#define MAX_FD 65535

static void exec_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs exec [--mount MNT] [--owner UID] --binding BINDING [--fd N]\n"
                "                   [--env NAME] -- COMMAND [ARG...]\n"
                "\n"
                "Verified open of the snapshot BINDING names (as snapfs verify does it), then run\n"
                "COMMAND with that very descriptor at fd N: every ARG that is exactly {} becomes\n"
                "/proc/self/fd/N, and the environment variable NAME is set to the binding. No\n"
                "other descriptor of the caller above standard error reaches COMMAND. If the\n"
                "snapshot does not verify, COMMAND is never started.\n"
                "\n"
                "Options:\n"
                "  --mount MNT       " CLI_HELP_MOUNT "\n"
                "  --owner UID       trust a mount made by UID (default: your uid)\n"
                "  --binding BINDING the snapshot, as its binding text:\n"
                "                    \"sha256=<hex> size=<n> dev=<maj>:<min> ino=<n>\"\n"
                "  --fd N            the descriptor number COMMAND gets (default %d)\n"
                "  --env NAME        the variable that carries the binding (default %s)\n"
                "  -h, --help        show this help\n"
                "\n"
                "Exit status: COMMAND's own; 1 when the snapshot does not verify (every reason on\n"
                "standard error); 2 usage error; 126 COMMAND cannot run; 127 COMMAND not found.\n",
                DEFAULT_FD, DEFAULT_ENV);
}

static bool valid_env_name(const char *s)
{
        if (!*s || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
                      (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}

static int parse_fd(const char *s, int *out)
{
        char *end;
        long v;

        if (!*s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || v > MAX_FD)
                return -EINVAL;
        *out = (int)v;
        return 0;
}

/* Puts fd at target without close-on-exec, and marks every other descriptor above standard
 * error close-on-exec: the program sees its stdio and the snapshot, nothing the caller held
 * (an inherited write end or a secret file would otherwise leak into it). */
static int place_descriptor(int fd, int target)
{
        if (fd != target) {
                if (dup2(fd, target) < 0)
                        return negative_errno();
                safe_close(fd);
        } else if (fcntl(fd, F_SETFD, 0) < 0) {
                return negative_errno();
        }
        if (target > 3 && close_range(3, (unsigned)target - 1, CLOSE_RANGE_CLOEXEC) < 0)
                return negative_errno();
        if (close_range((unsigned)target + 1 > 3 ? (unsigned)target + 1 : 3, ~0U,
                        CLOSE_RANGE_CLOEXEC) < 0)
                return negative_errno();
        return 0;
}

int cli_cmd_exec(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "mount", required_argument, NULL, 'm' },
                { "owner", required_argument, NULL, 'o' },
                { "binding", required_argument, NULL, 'b' },
                { "fd", required_argument, NULL, 'f' },
                { "env", required_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        _cleanup_free_ char *mount = NULL;
        struct snapfs_options opts = { 0 };
        struct snapfs_report why;
        struct snapfs_binding b;
        char text[SNAPFS_BINDING_TEXT_MAX], fdpath[64];
        const char *mnt = NULL, *binding = NULL, *env = DEFAULT_ENV;
        char **cmd;
        int c, r, fd, target = DEFAULT_FD;

        optind = 1;
        /* "+": options end at COMMAND, whose own options are its business. */
        while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
                switch (c) {
                case 'm':
                        mnt = optarg;
                        break;
                case 'o':
                        if (cli_parse_owner(optarg, &opts) < 0) {
                                fprintf(stderr, "snapfs exec: --owner: invalid uid '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'b':
                        binding = optarg;
                        break;
                case 'f':
                        if (parse_fd(optarg, &target) < 0) {
                                fprintf(stderr, "snapfs exec: --fd: invalid descriptor '%s'\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'e':
                        if (!valid_env_name(optarg)) {
                                fprintf(stderr, "snapfs exec: --env: invalid name '%s'\n", optarg);
                                return 2;
                        }
                        env = optarg;
                        break;
                case 'h':
                        exec_usage(stdout);
                        return 0;
                default:
                        exec_usage(stderr);
                        return 2;
                }
        }
        if (!binding || optind >= argc) {
                fprintf(stderr, "snapfs exec: %s\n",
                        !binding ? "--binding is required" : "no COMMAND given");
                exec_usage(stderr);
                return 2;
        }
        if (snapfs_binding_parse(binding, &b) < 0) {
                fprintf(stderr, "snapfs exec: not a valid binding: '%s'\n", binding);
                return 2;
        }
        cmd = argv + optind;
        mount = path_make_absolute(mnt ?: cli_default_mount());
        if (!mount) {
                fprintf(stderr, "snapfs exec: %s\n", strerror(errno));
                return 2;
        }

        fd = snapfs_open_verified(mount, &b, &opts, &why);
        if (fd < 0) {
                fprintf(stderr, "snapfs exec: %s: not verified, not starting %s: %s\n", mount,
                        cmd[0], snapfs_strerror(fd));
                cli_print_reasons(stderr, &why);
                return 1;
        }

        r = place_descriptor(fd, target);
        if (r < 0) {
                fprintf(stderr, "snapfs exec: cannot place the snapshot at fd %d: %s\n", target,
                        strerror(-r));
                return 2;
        }
        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", target);
        for (char **a = cmd; *a; a++)
                if (strcmp(*a, "{}") == 0)
                        *a = fdpath;
        if (snapfs_binding_format(&b, text, sizeof(text)) < 0 || setenv(env, text, 1) < 0) {
                fprintf(stderr, "snapfs exec: cannot set %s\n", env);
                return 2;
        }
        fflush(NULL);
        execvp(cmd[0], cmd);
        r = errno;
        fprintf(stderr, "snapfs exec: %s: %s\n", cmd[0], strerror(r));
        return r == ENOENT ? 127 : 126;
}
