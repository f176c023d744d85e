/* SPDX-License-Identifier: MIT */
/* Small helpers shared by every component: cleanup attributes and a few macros.
 * Header-only on purpose, so snapshot/ and mountcheck/ stay independent libraries. */
#pragma once

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _unused_ __attribute__((unused))
#define _must_check_ __attribute__((warn_unused_result))

/* close() that never clobbers errno, so an early return keeps the reason it fails with. */
static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

static inline void freep(void *p)
{
        int saved = errno;
        free(*(void **)p);
        errno = saved;
}

static inline void closep(int *fd)
{
        safe_close(*fd);
}

static inline void fclosep(FILE **f)
{
        if (*f) {
                int saved = errno;
                fclose(*f);
                errno = saved;
        }
}

#define _cleanup_(x) __attribute__((cleanup(x)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand ownership out of a cleanup variable: returns the value and disarms the cleanup. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

/* Frees content bytes (a snapshot's, a staging file's) after zeroing them: a freed heap
 * chunk keeps what it held until reused, and a secret collected from the store must not be
 * readable later in the daemon's memory (a core dump, /proc/PID/mem, a swapped-out page). */
static inline void free_zeroed(void *p, size_t len)
{
        if (p) {
                explicit_bzero(p, len);
                free(p);
        }
}

/* realloc() that leaves no copy behind: the old block is zeroed before it is freed (plain
 * realloc may move the bytes and free the old block as it was). len: the bytes of p in use,
 * kept; cap: p's allocated size, zeroed. NULL (p untouched) without memory. */
static inline void *realloc_zeroed(void *p, size_t len, size_t cap, size_t newcap)
{
        void *n = malloc(newcap ? newcap : 1);

        if (!n)
                return NULL;
        if (p) {
                memcpy(n, p, len < newcap ? len : newcap);
                free_zeroed(p, cap);
        }
        return n;
}

/* Negative errno of the last failed libc call, never 0 (a library bug must not look like
 * success). */
static inline int negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}

/* Writes the len bytes of buf to fd whole: again after EINTR and after a short write. 0, or
 * a negative errno (-EIO when write takes nothing). */
static inline int loop_write(int fd, const void *buf, size_t len)
{
        const unsigned char *p = buf;

        while (len > 0) {
                ssize_t k = write(fd, p, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EIO;
                p += k;
                len -= (size_t)k;
        }
        return 0;
}

/* path made absolute against the working directory, resolving nothing (a mount check must
 * see the path as the user named it). malloc'd, or NULL with errno set. */
static inline char *path_make_absolute(const char *path)
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

/* Whether m is locked, by any thread: for assert(mutex_held(&t->lock)) where a function's
 * contract says "t->lock held". It cannot tell this thread from another, so it catches a
 * call made without the lock only when no other thread holds it, which is every unit test
 * and most calls; it is cheap (a trylock that fails at once when the lock is held), and
 * compiled out with the assert under NDEBUG. */
static inline bool mutex_held(const pthread_mutex_t *m)
{
        pthread_mutex_t *lock = (pthread_mutex_t *)m; /* trylock changes nothing it keeps */
        int r = pthread_mutex_trylock(lock);

        if (r == 0) {
                pthread_mutex_unlock(lock);
                return false;
        }
        return r == EBUSY;
}

/* One row of a translation from one set of flags to another: any bit of from in the input sets
 * to in the output. */
struct bit_map {
        uint64_t from;
        uint64_t to;
};

/* What in translates to by table (n rows): the to of every row whose from shares a bit with
 * in; BIT_MAP for a table declared as an array. */
static inline uint64_t bit_map(uint64_t in, const struct bit_map *table, size_t n)
{
        uint64_t out = 0;

        for (size_t i = 0; i < n; i++)
                if (in & table[i].from)
                        out |= table[i].to;
        return out;
}
#define BIT_MAP(in, table) bit_map((in), (table), ARRAY_SIZE(table))

/* pthread_create with every signal blocked in the new thread except keep (0 for none), so
 * process-directed signals (SIGTERM, SIGINT) reach the threads that expect them: libfuse
 * stops its loop only when the signal interrupts the thread waiting in it. */
static inline int pthread_create_quiet(pthread_t *t, void *(*fn)(void *), void *arg, int keep)
{
        sigset_t all, old;
        int r;

        sigfillset(&all);
        if (keep)
                sigdelset(&all, keep);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(t, NULL, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}
