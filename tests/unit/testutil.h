/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests: a private temporary directory per test, removed after it
 * so that no test leaves a file behind. */
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tu_dir {
        char path[256]; /* short, so that path + "/" + a test's file name always fits PATH_MAX */
};

/* mkdtemp under $TMPDIR (or /tmp): 0, or -1. */
static inline int tu_dir_make(struct tu_dir *d)
{
        const char *tmp = getenv("TMPDIR");

        if (!tmp || !*tmp)
                tmp = "/tmp";
        if (snprintf(d->path, sizeof(d->path), "%s/snapfs-unit-XXXXXX", tmp) >=
            (int)sizeof(d->path))
                return -1;
        return mkdtemp(d->path) ? 0 : -1;
}

/* Removes the directory and whatever the test left in it (one level: tests make no subtrees
 * deeper than that). */
static inline void tu_dir_remove(struct tu_dir *d)
{
        DIR *dir = opendir(d->path);
        struct dirent *e;

        if (dir) {
                while ((e = readdir(dir))) {
                        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                                continue;
                        if (unlinkat(dirfd(dir), e->d_name, 0) < 0)
                                unlinkat(dirfd(dir), e->d_name, AT_REMOVEDIR);
                }
                closedir(dir);
        }
        rmdir(d->path);
}

/* d->path + "/" + name into out. */
static inline const char *tu_path(const struct tu_dir *d, const char *name, char out[PATH_MAX])
{
        if (snprintf(out, PATH_MAX, "%s/%s", d->path, name) >= PATH_MAX)
                abort();
        return out;
}

/* Creates name in d with content, mode 0600: an O_RDWR descriptor, or -1. */
static inline int tu_create(const struct tu_dir *d, const char *name, const void *data,
                            size_t len)
{
        char p[PATH_MAX];
        int fd = open(tu_path(d, name, p), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

        if (fd < 0)
                return -1;
        if (len && pwrite(fd, data, len, 0) != (ssize_t)len) {
                close(fd);
                return -1;
        }
        return fd;
}

/* len bytes of a pattern that differs from chunk to chunk, so a hash that skipped or repeated
 * a chunk would not match. Caller frees. */
static inline uint8_t *tu_pattern(size_t len, unsigned seed)
{
        uint8_t *p = malloc(len ? len : 1);

        if (!p)
                return NULL;
        for (size_t i = 0; i < len; i++)
                p[i] = (uint8_t)(i * 131 + (i >> 11) * 7 + seed);
        return p;
}
