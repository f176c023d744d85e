/* SPDX-License-Identifier: MIT */
/* mount(8)'s -o words turned into `snapfs mount` long options. */
#include "cli/mountopts.h"

#include "fs/config/options.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/util.h"

/* Generic flags that mount(8), mount.fuse3 or an fstab line add on their own. dev and suid
 * come from mount.fuse3 itself on every mount that does not say nodev,nosuid, so refusing
 * them would refuse every mount; snapfs mounts nosuid,nodev,noexec whatever it is given. */
static const char *const ignored[] = {
        "rw",        "dev",          "nodev",    "suid",        "nosuid",     "exec",
        "noexec",    "atime",        "norelatime", "strictatime", "nostrictatime", "diratime",
        "lazytime",  "nolazytime",   "sync",     "async",       "dirsync",    "defaults",
        "auto",      "noauto",       "nofail",   "_netdev",     "user",       "nouser",
        "users",     "silent",       "loud",
};
/* The generic flags that tighten a mount (noatime, nodiratime, relatime, nosymfollow) are
 * not here: they are long options of their own, kept on the mount. */

struct vec {
        char **v;
        int n;
        size_t cap;
};

static int vec_push(struct vec *vec, char *s)
{
        if (!s)
                return -ENOMEM;
        /* Room for s and the NULL after it. */
        if (ARRAY_GROW(vec->v, vec->cap, (size_t)vec->n + 2, 16) < 0) {
                free(s);
                return -ENOMEM;
        }
        vec->v[vec->n++] = s;
        vec->v[vec->n] = NULL;
        return 0;
}

static bool all_digits(const char *s, size_t len)
{
        if (!len)
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

static bool is_ignored(const char *name, bool has_value)
{
        /* x-systemd.requires=..., comment=...: meant for other readers of fstab. */
        if (strncmp(name, "x-", 2) == 0 || strcmp(name, "comment") == 0)
                return true;
        for (size_t i = 0; i < ARRAY_SIZE(ignored) && !has_value; i++)
                if (strcmp(name, ignored[i]) == 0)
                        return true;
        return false;
}

static int refuse(struct cli_mountopts_error *err, enum cli_mountopts_refusal why,
                  const char *word, size_t len)
{
        if (err) {
                err->why = why;
                snprintf(err->word, sizeof(err->word), "%.*s", (int)len, word);
        }
        return -EINVAL;
}

/* The option an -o word without a value names by its alias ("ro"), or NULL. */
static const struct sfs_option *alias_option(const char *word)
{
        for (size_t i = 0; i < SFS_OPT_COUNT; i++)
                if (sfs_options[i].o_alias && strcmp(sfs_options[i].o_alias, word) == 0)
                        return &sfs_options[i];
        return NULL;
}

/* One -o argument: words separated by commas. */
static int expand_words(struct vec *out, const char *words, struct cli_mountopts_error *err)
{
        bool in_uid_list = false;
        const char *p = words;

        if (!*words)
                return refuse(err, CLI_MOUNTOPTS_EMPTY, "", 0);
        for (;;) {
                size_t len = strcspn(p, ",");
                const char *eq = memchr(p, '=', len);
                size_t nlen = eq ? (size_t)(eq - p) : len;
                _cleanup_free_ char *name = strndup(p, nlen);
                char *arg;

                if (!name)
                        return -ENOMEM;
                if (!len)
                        return refuse(err, CLI_MOUNTOPTS_EMPTY, "", 0);
                if (in_uid_list && all_digits(p, len)) {
                        char **last = &out->v[out->n - 1];
                        if (asprintf(&arg, "%s,%.*s", *last, (int)len, p) < 0)
                                return -ENOMEM;
                        free(*last);
                        *last = arg;
                } else if (!nlen) {
                        return refuse(err, CLI_MOUNTOPTS_EMPTY, p, len);
                } else if (!eq && alias_option(name)) {
                        in_uid_list = false;
                        if (asprintf(&arg, "--%s", alias_option(name)->name) < 0)
                                return -ENOMEM;
                        if (vec_push(out, arg) < 0)
                                return -ENOMEM;
                } else if (is_ignored(name, eq != NULL)) {
                        in_uid_list = false;
                } else {
                        const struct sfs_option *o = sfs_option_find(name, true);

                        if (!o)
                                return refuse(err, CLI_MOUNTOPTS_UNKNOWN, p, len);
                        if (o->flags & SFS_OPTF_COMMAND_LINE_ONLY)
                                return refuse(err, CLI_MOUNTOPTS_NOT_UNDER_MOUNT, p, len);
                        in_uid_list = eq && o->arg == SFS_ARG_VALUE &&
                                      o->type == VALUE_UID_LIST;
                        if (asprintf(&arg, "--%s%s%.*s", o->name, eq ? "=" : "",
                                     eq ? (int)(len - nlen - 1) : 0, eq ? eq + 1 : "") < 0)
                                return -ENOMEM;
                        if (vec_push(out, arg) < 0)
                                return -ENOMEM;
                }
                if (!p[len])
                        return 0;
                p += len + 1;
        }
}

/* Does the long option named by arg ("--name", no '=') take its value from the next word? */
static bool takes_separate_value(const char *arg)
{
        const struct sfs_option *o;

        if (strchr(arg, '='))
                return false;
        o = sfs_option_find(arg + 2, false);
        return o && o->arg != SFS_ARG_FLAG;
}

int cli_mountopts_expand(int argc, char **argv, int *out_argc, char ***out,
                         struct cli_mountopts_error *err)
{
        struct vec vec = { 0 };
        bool options = true;
        int r = 0;

        for (int i = 0; i < argc && r == 0; i++) {
                const char *a = argv[i];

                if (i == 0 || !options || a[0] != '-' || a[1] == '\0') {
                        /* getopt_long with "+" stops at the first operand. */
                        if (i > 0 && (a[0] != '-' || a[1] == '\0'))
                                options = false;
                        r = vec_push(&vec, strdup(a));
                } else if (strcmp(a, "--") == 0) {
                        options = false;
                        r = vec_push(&vec, strdup(a));
                } else if (strcmp(a, "-o") == 0) {
                        r = i + 1 < argc ? expand_words(&vec, argv[++i], err)
                                         : refuse(err, CLI_MOUNTOPTS_EMPTY, "", 0);
                } else if (strncmp(a, "-o", 2) == 0) {
                        r = expand_words(&vec, a + 2, err);
                } else {
                        r = vec_push(&vec, strdup(a));
                        if (r == 0 && a[1] == '-' && i + 1 < argc &&
                            takes_separate_value(a))
                                r = vec_push(&vec, strdup(argv[++i]));
                }
        }
        if (r == 0 && !vec.v)
                r = refuse(err, CLI_MOUNTOPTS_EMPTY, "", 0);
        if (r < 0) {
                cli_mountopts_free(vec.v);
                return r;
        }
        *out_argc = vec.n;
        *out = vec.v;
        return 0;
}

void cli_mountopts_free(char **argv)
{
        if (!argv)
                return;
        for (char **p = argv; *p; p++)
                free(*p);
        free(argv);
}
