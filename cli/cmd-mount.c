/* SPDX-License-Identifier: MIT */
/* snapfs mount: the command line (and mount(8)'s -o words) into the daemon's configuration,
 * by the daemon's table of options (fs/config/options.h), then the daemon (fs/daemon/daemon.c), which
 * reads --config and checks the rules between options when it starts. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/mountopts.h"
#include "common/util.h"
#include "fs/daemon/daemon.h"
#include "fs/config/options.h"

#define HELP_COLUMN 29
#define HELP_WIDTH 80

/* text from column col on, wrapped at HELP_WIDTH, continuation lines at HELP_COLUMN. */
static void print_wrapped(FILE *f, const char *text, size_t col)
{
        const char *p = text;

        while (*p) {
                size_t room = HELP_WIDTH - col, len = strlen(p), cut = len;

                if (len > room) {
                        cut = room;
                        while (cut > 0 && p[cut] != ' ')
                                cut--;
                        if (cut == 0) /* one word longer than the line */
                                cut = strcspn(p, " ");
                }
                fprintf(f, "%.*s\n", (int)cut, p);
                p += cut;
                while (*p == ' ')
                        p++;
                if (*p)
                        fprintf(f, "%*s", HELP_COLUMN, "");
                col = HELP_COLUMN;
        }
}

/* One option of the table, as --help shows it: "      --max-bytes SIZE  help (default: 64M)". */
static void print_option(FILE *f, const struct sfs_option *o)
{
        char left[64], def[128], most[32], text[640];
        int n;

        if (o->short_name)
                n = snprintf(left, sizeof(left), "  -%c, --%s", o->short_name, o->name);
        else
                n = snprintf(left, sizeof(left), "      --%s", o->name);
        if (o->metavar)
                n += snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->metavar);
        sfs_option_default_text(o, def, sizeof(def));
        most[0] = '\0';
        if (o->arg == SFS_ARG_VALUE && o->type != VALUE_UID_LIST && o->max != UINT64_MAX)
                value_format(o->type, o->max, most, sizeof(most));
        snprintf(text, sizeof(text), "%s%s%s%s%s%s%s", o->help, def[0] || most[0] ? " (" : "",
                 def[0] ? "default: " : "", def, def[0] && most[0] ? "; " : "",
                 most[0] ? "at most " : "", most);
        if (def[0] || most[0])
                strcat(text, ")");
        if ((size_t)n < HELP_COLUMN - 1) {
                fprintf(f, "%-*s", HELP_COLUMN, left);
        } else {
                fprintf(f, "%s\n%*s", left, HELP_COLUMN, "");
        }
        print_wrapped(f, text, HELP_COLUMN);
}

static void mount_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs mount [OPTIONS] MOUNTPOINT\n"
                "       snapfs SOURCE MOUNTPOINT [-o OPTIONS]   (as mount.fuse3 runs it)\n"
                "\n"
                "Mount snapfs at MOUNTPOINT (nosuid,nodev,noexec, type fuse.snapfs), check the new\n"
                "mount with mountcheck and serve it. Returns once the mount is ready; the daemon\n"
                "keeps running until SIGTERM, SIGINT or umount, then unmounts; SIGHUP reopens the\n"
                "audit log.\n"
                "\n"
                "Options:\n"
                "  -o NAME[=VALUE][,...]      any long option below but -f, --debug and --help,\n"
                "                             as mount(8) and fstab pass them (max_bytes=64M or\n"
                "                             max-bytes=64M; allow_other; ro for --read-only;\n"
                "                             config=FILE); rw, dev, suid, exec and the other\n"
                "                             generic flags are ignored: the mount is always\n"
                "                             nosuid,nodev,noexec. help, debug and foreground\n"
                "                             are refused: under mount(8) they would mount\n"
                "                             nothing or never return\n");
        for (size_t i = 0; i < SFS_OPT_COUNT; i++)
                print_option(f, &sfs_options[i]);
        fprintf(f,
                "\n"
                "SIZE takes a K, M or G suffix (binary units); DURATION an s, m, h, d or w\n"
                "suffix (seconds without one). A config file (--config) holds KEY = VALUE\n"
                "lines, the keys named as the long options (max-bytes or max_bytes), yes or no\n"
                "for a flag, # for a comment; every option given on the command line wins over\n"
                "the file.\n"
                "Exit status: 0 served and unmounted cleanly, 1 refused (mount not compliant, a\n"
                "dead mount in the way, an unsafe path), 2 usage or system error.\n");
}

void cli_mount_option_list(FILE *f)
{
        for (size_t i = 0; i < SFS_OPT_COUNT; i++)
                fprintf(f, "--%s %s\n", sfs_options[i].name,
                        sfs_options[i].arg == SFS_ARG_FLAG ? "flag" : "value");
}

/* The table as getopt_long's options; val is 0x100 + the option's id. */
static void long_options(struct option out[SFS_OPT_COUNT + 1])
{
        for (size_t i = 0; i < SFS_OPT_COUNT; i++)
                out[i] = (struct option){
                        .name = sfs_options[i].name,
                        .has_arg = sfs_options[i].arg == SFS_ARG_FLAG ? no_argument
                                                                      : required_argument,
                        .val = 0x100 + (int)i,
                };
        out[SFS_OPT_COUNT] = (struct option){ 0 };
}

static const struct sfs_option *option_of(int c)
{
        if (c >= 0x100 && c < 0x100 + SFS_OPT_COUNT)
                return &sfs_options[c - 0x100];
        for (size_t i = 0; i < SFS_OPT_COUNT; i++)
                if (sfs_options[i].short_name && sfs_options[i].short_name == c)
                        return &sfs_options[i];
        return NULL;
}

/* Parses the command line into *cfg and runs the daemon: an exit code. */
static int mount_main(int argc, char **argv)
{
        struct option longopts[SFS_OPT_COUNT + 1];
        struct sfs_daemon_config cfg;
        const struct sfs_option *o;
        char why[640];
        int c;

        long_options(longopts);
        sfs_daemon_config_init(&cfg);
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:fh", longopts, NULL)) != -1) {
                o = option_of(c);
                if (!o)
                        return cli_getopt_error("mount", false, true, argv, c);
                if (o->id == SFS_OPT_HELP) {
                        mount_usage(stdout);
                        return 0;
                }
                if (sfs_option_set(&cfg, o, optarg, why, sizeof(why)) < 0) {
                        fprintf(stderr, "snapfs mount: --%s: %s\n", o->name, why);
                        return 2;
                }
        }
        /* Options end at MOUNTPOINT (what mount(8) hands over after it is not ours): one
         * written after it is named, with where it goes. */
        if (optind < argc - 1 && argv[optind + 1][0] == '-')
                return cli_usage_error("mount", false, true,
                                       "'%s' after the MOUNTPOINT: options go before it "
                                       "(snapfs mount [OPTIONS] MOUNTPOINT)", argv[optind + 1]);
        if (optind != argc - 1)
                return cli_usage_error("mount", false, true,
                                       "expected exactly one MOUNTPOINT");
        cfg.mountpoint = argv[optind];
        return sfs_daemon_run(&cfg);
}

/* mount(8) can only pass "-o WORDS": they become long options first (mountopts.c). */
int cli_cmd_mount(int argc, char **argv)
{
        struct cli_mountopts_error err = { 0 };
        char **args = NULL;
        int n, r;

        r = cli_mountopts_expand(argc, argv, &n, &args, &err);
        if (r == -ENOMEM) {
                fprintf(stderr, "snapfs mount: -o: %s\n", strerror(ENOMEM));
                return 2;
        }
        if (r < 0) {
                /* mount(8) shows the helper's standard error and returns its status: the
                 * word, and why, is all an fstab author gets. */
                if (err.why == CLI_MOUNTOPTS_NOT_UNDER_MOUNT)
                        fprintf(stderr, "snapfs mount: -o %s: refused: mount(8) and fstab "
                                        "cannot run it (help prints and mounts nothing; debug "
                                        "and foreground never return); use 'snapfs mount "
                                        "--%s MOUNTPOINT' instead; nothing mounted\n",
                                err.word, err.word);
                else if (err.why == CLI_MOUNTOPTS_UNKNOWN)
                        /* The word as the fstab line or -o spelled it, on one line: mount(8)
                         * shows the helper's standard error as it is. */
                        fprintf(stderr, "snapfs: unknown mount option '%s'\n", err.word);
                else
                        fprintf(stderr, "snapfs mount: -o: an empty option or no options; "
                                        "nothing mounted\n");
                return 2;
        }
        r = mount_main(n, args);
        cli_mountopts_free(args);
        return r;
}
