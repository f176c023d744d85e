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
#include <strings.h>
#include <unistd.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "common/util.h"

#define DEFAULT_FD 3
#define DEFAULT_ENV "SNAPFS_BINDING"
/* The variable that carries /proc/self/fd/N, for a program that takes a path from its
 * environment rather than from its arguments. */
#define FD_PATH_ENV "SNAPFS_FD_PATH"
/* env(1)'s convention: 125 when snapfs exec itself fails (bad usage, the snapshot does not
 * verify), so that every other status is the program's own; 126/127 cannot run / not found. */
#define EXIT_OWN_FAILURE 125
/* Highest --fd accepted; dup2 refuses anything past RLIMIT_NOFILE anyway. */
#define MAX_FD 65535

enum {
        OPT_BINDING = CLI_OWN_OPTION,
        OPT_ENTRY,
        OPT_FD,
        OPT_ENV,
};

struct exec_args {
        const char *binding, *entry, *env;
        int target;
};

static const struct cli_option exec_options[] = {
        CLI_OPTIONS_CLIENT,
        CLI_OPTION_KIND(CLI_HELP_KIND),
        { "binding", 0, CLI_ARG_VALUE, "BINDING", NULL,
          "the snapshot, as its binding text:\n"
          "\"sha256=<hex> size=<n> dev=<maj>:<min> ino=<n>\"", OPT_BINDING,
          CLI_STORE(struct exec_args, binding) },
        { "entry", 0, CLI_ARG_VALUE, "ENTRY", NULL,
          "the snapshot an entry of the scope view MNT names: opened\n"
          "below MNT's root, its digest read from that descriptor,\n"
          "its content hashed against it (an entry moved meanwhile\n"
          "gives the old snapshot or the new one, whole, followed\n"
          "for up to $SNAPFS_ENTRY_TIMEOUT, 10s by default); NAME\n"
          "is set to its binding", OPT_ENTRY,
          CLI_STORE(struct exec_args, entry) },
        { "fd", 0, CLI_ARG_VALUE, "N", NULL,
          "the descriptor number COMMAND gets (default " CLI_STR(DEFAULT_FD) ")", OPT_FD },
        { "env", 0, CLI_ARG_VALUE, "NAME", NULL,
          "the variable that carries the binding (default\n"
          DEFAULT_ENV "); names the loader, libc, a shell, an\n"
          "interpreter or a common tool read to load code or run a\n"
          "command (PATH, LD_*, IFS, PYTHONPATH, NODE_OPTIONS,\n"
          "OPENSSL_*, GIT_*, EDITOR, *_COMMAND, ...; snapfs(1) lists\n"
          "them) are refused", OPT_ENV },
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_exec_help = {
        .head = "Usage: snapfs exec [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                   --binding BINDING|--entry ENTRY [--fd N]\n"
                "                   [--env NAME] [--kind KIND] -- COMMAND [ARG...]\n"
                "\n"
                "Verified open of the snapshot BINDING names (as snapfs verify does it), or of\n"
                "the one the entry ENTRY of the scope view MNT names now, then run\n"
                "COMMAND with that very descriptor at fd N: every ARG that is exactly {} becomes\n"
                "/proc/self/fd/N, the environment variable NAME is set to the binding and\n"
                FD_PATH_ENV " to /proc/self/fd/N. No other descriptor of the caller above\n"
                "standard error reaches COMMAND. If the snapshot does not verify, or is a\n"
                "signature envelope or a manifest rather than content, COMMAND is never\n"
                "started.\n"
                "\n",
        .options = exec_options,
        .tail = "\n"
                "Exit status: COMMAND's own; 125 when snapfs exec fails itself (the snapshot does\n"
                "not verify, every reason on standard error; a usage error); 126 COMMAND cannot\n"
                "run; 127 COMMAND not found.\n",
};

/* Names the dynamic loader, libc or a shell reads to decide what code runs or which files
 * it loads: setting one to the binding text would change how COMMAND runs (LD_PRELOAD, PATH)
 * or how its shell parses (IFS, ENV, BASH_ENV, SHELLOPTS, PS4 under xtrace). An attacker who
 * controls --env must not get that lever; the binding's own variable never needs it. */
static const char *const refused_env_names[] = {
        "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "CDPATH",
        "PROMPT_COMMAND", "GLOBIGNORE", "HOME", "GCONV_PATH", "NLSPATH", "LOCPATH",
        "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "TZ", "TZDIR", "GLIBC_TUNABLES",
        "MALLOC_CHECK_", "MALLOC_TRACE", "TMPDIR", "CLASSPATH", "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS", FD_PATH_ENV,
        /* Common tools and libraries that run a command, or load code or a configuration
         * that can name code, from a variable: OPENSSL_CONF makes the child's OpenSSL read a
         * config file named after the binding text in its working directory, which can load
         * an engine or a provider (a shared object). */
        "EDITOR", "VISUAL", "FCEDIT", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE",
        "SHELL", "ZDOTDIR", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "GNUPGHOME", "KRB5_CONFIG",
        "SASL_PATH", "VIMINIT", "EXINIT", "MYVIMRC", "EMACSLOADPATH", "WGETRC", "CURL_HOME",
        "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON", "R_ENVIRON_USER", "R_LIBS", "R_LIBS_USER",
};
/* The binding text splits on spaces into relative names ("size=176", "ino=3"): a search
 * path variable of an interpreter would then load code from files an attacker planted
 * under those names in the working directory (PYTHONPATH, NODE_PATH, PERL5LIB, RUBYLIB), and
 * whole families of variables choose code or commands: OpenSSL's (OPENSSL_CONF,
 * OPENSSL_MODULES, OPENSSL_ENGINES), git's (GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_SSH,
 * GIT_CONFIG_*), npm's configuration (npm_config_node_options), the toolkits' module paths
 * (GTK_MODULES, GIO_EXTRA_MODULES, GST_PLUGIN_PATH, QT_PLUGIN_PATH), .NET's startup hooks. */
static const char *const refused_env_prefixes[] = {
        "LD_",      "BASH_FUNC_", "MALLOC_", "PYTHON", "NODE_",  "NPM_CONFIG_", "PERL",
        "RUBY",     "GEM_",       "LUA_",    "PHP",    "TCL",    "JAVA_",       "JDK_",
        "OPENSSL_", "GIT_",       "GCONV_",  "GTK_",   "GIO_",   "GST_",        "QT_",
        "DOTNET_",  "CORECLR_",   "COMPLUS_",
};
/* Any name of a command, by its name: GIT_SSH_COMMAND, SSH_ASKPASS, SUDO_EDITOR,
 * SYSTEMD_PAGER, ... */
static const char *const refused_env_suffixes[] = { "_COMMAND", "_ASKPASS", "_EDITOR",
                                                    "_PAGER" };

/* Compared without regard to case: a name in another case is harmless to refuse, and some
 * tools read theirs in lower case (npm_config_*). */
static bool valid_env_name(const char *s)
{
        size_t n = strlen(s);

        for (size_t i = 0; i < ARRAY_SIZE(refused_env_names); i++)
                if (strcasecmp(s, refused_env_names[i]) == 0)
                        return false;
        for (size_t i = 0; i < ARRAY_SIZE(refused_env_prefixes); i++)
                if (strncasecmp(s, refused_env_prefixes[i], strlen(refused_env_prefixes[i])) == 0)
                        return false;
        for (size_t i = 0; i < ARRAY_SIZE(refused_env_suffixes); i++) {
                size_t k = strlen(refused_env_suffixes[i]);
                if (n >= k && strcasecmp(s + n - k, refused_env_suffixes[i]) == 0)
                        return false;
        }
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

/* --fd, --env: -1 to go on, or EXIT_OWN_FAILURE after printing why. */
static int take_option(void *arg, int val, const char *value, bool json)
{
        struct exec_args *a = arg;

        (void)json;
        switch (val) {
        case OPT_FD:
                if (parse_fd(value, &a->target) < 0) {
                        fprintf(stderr, "snapfs exec: --fd: invalid descriptor '%s'\n", value);
                        return EXIT_OWN_FAILURE;
                }
                return -1;
        default:
                if (!valid_env_name(value)) {
                        fprintf(stderr, "snapfs exec: --env: '%s' is not a name snapfs exec sets "
                                        "(invalid, or read by the loader, libc, a shell or a "
                                        "tool to load code or run a command; see snapfs(1))\n",
                                value);
                        return EXIT_OWN_FAILURE;
                }
                a->env = value;
                return -1;
        }
}

int cli_cmd_exec(int argc, char **argv)
{
        struct exec_args a = { .env = DEFAULT_ENV, .target = DEFAULT_FD };
        _cleanup_free_ char *mount = NULL;
        struct cli_common co;
        struct snapfs_report why;
        struct snapfs_binding b;
        char text[SNAPFS_BINDING_TEXT_MAX], fdpath[64];
        const char *binding, *entry, *env;
        char **cmd;
        int r, fd, target;

        /* Options end at COMMAND, whose own options are its business; no --json: standard
         * output is COMMAND's. Every failure of exec itself is 125, as env(1)'s. */
        r = cli_parse(&(struct cli_spec){ .cmd = "exec",
                                          .features = CLI_STOP_AT_OPERAND,
                                          .min_operands = 0, .max_operands = -1,
                                          .help = &cli_exec_help,
                                          .option = take_option, .arg = &a },
                      argc, argv, &co);
        if (r >= 0)
                return r == 0 ? 0 : EXIT_OWN_FAILURE;
        binding = a.binding;
        entry = a.entry;
        env = a.env;
        target = a.target;
        if (!binding == !entry || optind >= argc) {
                fprintf(stderr, "snapfs exec: %s\nRun 'snapfs exec --help' for its options.\n",
                        binding && entry ? "--binding and --entry: give one of them"
                        : !binding && !entry ? "--binding or --entry is required"
                                             : "no COMMAND given");
                return EXIT_OWN_FAILURE;
        }
        if (binding && snapfs_binding_parse(binding, &b) < 0) {
                fprintf(stderr, "snapfs exec: not a valid binding: '%s'\n", binding);
                return EXIT_OWN_FAILURE;
        }
        cmd = argv + optind;
        mount = cli_absolute_dir(co.mount_arg ?: cli_default_mount());
        if (!mount) {
                fprintf(stderr, "snapfs exec: %s\n", strerror(errno));
                return EXIT_OWN_FAILURE;
        }

        /* An entry resolves to whichever snapshot it names at the open; the descriptor then
         * holds that one, and b becomes its binding. */
        fd = entry ? snapfs_open_entry(mount, entry, &co.opts, &b, &why)
                   : snapfs_open_verified(mount, &b, &co.opts, &why);
        if (fd < 0) {
                fprintf(stderr, "snapfs exec: %s: not verified, not starting %s: %s\n", mount,
                        cmd[0], snapfs_strerror(fd));
                cli_print_reasons(stderr, &why);
                return EXIT_OWN_FAILURE;
        }

        r = place_descriptor(fd, target);
        if (r < 0) {
                fprintf(stderr, "snapfs exec: cannot place the snapshot at fd %d: %s\n", target,
                        strerror(-r));
                return EXIT_OWN_FAILURE;
        }
        snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", target);
        for (char **arg = cmd; *arg; arg++)
                if (strcmp(*arg, "{}") == 0)
                        *arg = fdpath;
        if (snapfs_binding_format(&b, text, sizeof(text)) < 0 || setenv(env, text, 1) < 0 ||
            setenv(FD_PATH_ENV, fdpath, 1) < 0) {
                fprintf(stderr, "snapfs exec: cannot set %s\n", env);
                return EXIT_OWN_FAILURE;
        }
        fflush(NULL);
        execvp(cmd[0], cmd);
        r = errno;
        fprintf(stderr, "snapfs exec: %s: %s\n", cmd[0], strerror(r));
        return r == ENOENT ? 127 : 126;
}
