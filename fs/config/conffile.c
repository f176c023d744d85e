/* SPDX-License-Identifier: MIT */
/* The daemon's config file: read as an untrusted path, then applied line by line. */
#include "fs/config/conffile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static char *trim(char *s, char *end)
{
        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        *end = '\0';
        return s;
}

/* Keeps text (malloc'd) with the strings cfg will point into. */
static int own(struct sfs_daemon_config *cfg, char *text)
{
        char **v = realloc(cfg->owned, (cfg->n_owned + 1) * sizeof(*v));

        if (!v) {
                free(text);
                return -ENOMEM;
        }
        cfg->owned = v;
        cfg->owned[cfg->n_owned++] = text;
        return 0;
}

/* One KEY = VALUE line (NUL-terminated, blanks not yet dropped). */
static int apply_line(struct sfs_daemon_config *cfg, uint64_t command_line, char *s,
                      unsigned lineno, unsigned first[SFS_OPT_COUNT], char *why, size_t n)
{
        char *end = s + strlen(s), *eq = strchr(s, '='), *key, *value, reason[512];
        const struct sfs_option *o;
        int r;

        if (!eq) {
                snprintf(why, n, "expected KEY = VALUE");
                return -EINVAL;
        }
        key = trim(s, eq);
        value = trim(eq + 1, end);
        o = sfs_option_find(key, true);
        if (!o) {
                snprintf(why, n, "unknown key '%.64s'", key);
                return -EINVAL;
        }
        if (o->flags & (SFS_OPTF_COMMAND_LINE_ONLY | SFS_OPTF_NOT_IN_FILE)) {
                snprintf(why, n, "%s: not in a configuration file (%s)", o->name,
                         o->id == SFS_OPT_CONFIG ? "a file names no other file"
                                                 : "give it on the command line");
                return -EINVAL;
        }
        if (first[o->id] && !(o->flags & SFS_OPTF_REPEATABLE)) {
                snprintf(why, n, "%s: given twice (first on line %u)", o->name, first[o->id]);
                return -EINVAL;
        }
        if (!first[o->id])
                first[o->id] = lineno;
        if (command_line & (1ULL << o->id)) {
                /* The command line wins; the line must still be right. */
                struct sfs_daemon_config scratch;
                sfs_daemon_config_init(&scratch);
                r = sfs_option_set(&scratch, o, value, reason, sizeof(reason));
        } else {
                r = sfs_option_set(cfg, o, value, reason, sizeof(reason));
        }
        if (r < 0) {
                snprintf(why, n, "%s: %s", o->name, reason);
                return -EINVAL;
        }
        return 0;
}

int sfs_conffile_apply(struct sfs_daemon_config *cfg, char *text, size_t len, unsigned *line,
                       char *why, size_t n)
{
        const uint64_t command_line = cfg->given;
        unsigned first[SFS_OPT_COUNT] = { 0 }, lineno = 0;
        char *p = text, *end = text + len;
        int r;

        *line = 0;
        why[0] = '\0';
        r = own(cfg, text);
        if (r < 0) {
                snprintf(why, n, "%s", strerror(-r));
                return r;
        }
        while (p < end) {
                char *nl = memchr(p, '\n', (size_t)(end - p)), *s;

                if (!nl)
                        nl = end;
                *line = ++lineno;
                /* A NUL would end a value early, a carriage return or an escape sequence
                 * would hide what the line says: one line is what an operator reads. */
                for (char *c = p; c < nl; c++)
                        if ((*c >= 0 && *c < ' ' && *c != '\t') || *c == 0x7f) {
                                snprintf(why, n, "a control character (\\x%02x)",
                                         (unsigned char)*c);
                                return -EINVAL;
                        }
                *nl = '\0';
                s = p;
                p = nl + 1;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s == '\0' || *s == '#')
                        continue;
                r = apply_line(cfg, command_line, s, lineno, first, why, n);
                if (r < 0)
                        return r;
        }
        *line = 0;
        return 0;
}

int sfs_conffile_load(struct sfs_daemon_config *cfg, const char *path, unsigned *line,
                      char *why, size_t n)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct stat st;

        *line = 0;
        why[0] = '\0';
        /* O_NOFOLLOW: a symlink planted at the path must not make the daemon read another
         * file as its options; O_NONBLOCK: a FIFO there must not hang the start. */
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = negative_errno();
                snprintf(why, n, "%s", r == -ELOOP ? "refused: a symbolic link" : strerror(-r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                snprintf(why, n, "refused: not a regular file");
                return -EINVAL;
        }
        /* Whoever may write the file chooses the daemon's options (--publishers any, a
         * --store of theirs): only this uid or root, and no group or other write bit. */
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                snprintf(why, n, "refused: writable by group or others (they could choose the "
                                 "daemon's options)");
                return -EPERM;
        }
        if (st.st_uid != geteuid() && st.st_uid != 0) {
                snprintf(why, n, "refused: owned by uid %u, neither this uid nor root (it "
                                 "could choose the daemon's options)", (unsigned)st.st_uid);
                return -EPERM;
        }
        if (st.st_size > SFS_CONFFILE_MAX) {
                snprintf(why, n, "refused: larger than %u bytes", SFS_CONFFILE_MAX);
                return -EFBIG;
        }
        /* One byte more than allowed: a file that grew since fstat is refused too. */
        text = malloc(SFS_CONFFILE_MAX + 2);
        if (!text) {
                snprintf(why, n, "%s", strerror(ENOMEM));
                return -ENOMEM;
        }
        for (;;) {
                ssize_t k = read(fd, text + len, SFS_CONFFILE_MAX + 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = negative_errno();
                        snprintf(why, n, "%s", strerror(-r));
                        return r;
                }
                if (k == 0)
                        break;
                len += (size_t)k;
                if (len > SFS_CONFFILE_MAX) {
                        snprintf(why, n, "refused: larger than %u bytes", SFS_CONFFILE_MAX);
                        return -EFBIG;
                }
        }
        text[len] = '\0';
        return sfs_conffile_apply(cfg, TAKE_PTR(text), len, line, why, n);
}
