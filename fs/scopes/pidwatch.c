/* SPDX-License-Identifier: MIT */
/* The until-pid watcher: an epoll set of pidfds and one eventfd that wakes the thread when
 * the set changes or it must stop. */
#include "fs/scopes/pidwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/base/worker.h"
#include "common/util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

struct watched {
        uint64_t cookie;
        int pidfd;
};

struct sfs_pidwatch {
        pthread_mutex_t lock;
        int epfd, wakefd;
        struct watched *v;
        size_t n, cap;
        void (*exited)(void *ctx, uint64_t cookie);
        void *ctx;
        pthread_t thread;
        bool running, stop;
};

int sfs_pidwatch_new(void (*exited)(void *ctx, uint64_t cookie), void *ctx,
                     struct sfs_pidwatch **out)
{
        struct sfs_pidwatch *w = calloc(1, sizeof(*w));
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = UINT64_MAX };

        if (!w)
                return -ENOMEM;
        w->exited = exited;
        w->ctx = ctx;
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->epfd < 0 || w->wakefd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev) < 0) {
                int r = negative_errno();
                safe_close(w->epfd);
                safe_close(w->wakefd);
                free(w);
                return r;
        }
        pthread_mutex_init(&w->lock, NULL);
        *out = w;
        return 0;
}

static void wake(void *arg)
{
        struct sfs_pidwatch *w = arg;
        uint64_t one = 1;

        if (write(w->wakefd, &one, sizeof(one)) < 0) {
                /* Full: a wake-up is pending already. */
        }
}

/* Takes the process watched under cookie out of the set: true when it was there. Lock
 * held. */
static bool take_ended(struct sfs_pidwatch *w, uint64_t cookie_hint, uint64_t *cookie)
{
        for (size_t i = 0; i < w->n; i++) {
                if (w->v[i].cookie != cookie_hint)
                        continue;
                epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->v[i].pidfd, NULL);
                safe_close(w->v[i].pidfd);
                *cookie = w->v[i].cookie;
                w->v[i] = w->v[--w->n];
                return true;
        }
        return false;
}

static void *watch_loop(void *arg)
{
        struct sfs_pidwatch *w = arg;

        for (;;) {
                struct epoll_event ev[16];
                int n = epoll_wait(w->epfd, ev, 16, -1);
                bool stop;

                if (n < 0 && errno != EINTR)
                        break;
                pthread_mutex_lock(&w->lock);
                stop = w->stop;
                pthread_mutex_unlock(&w->lock);
                if (stop)
                        break;
                for (int i = 0; i < n; i++) {
                        uint64_t cookie;
                        bool ended;

                        if (ev[i].data.u64 == UINT64_MAX) {
                                uint64_t count;
                                if (read(w->wakefd, &count, sizeof(count)) < 0) {
                                        /* Nothing pending. */
                                }
                                continue;
                        }
                        /* A pidfd is readable once its process has exited. */
                        pthread_mutex_lock(&w->lock);
                        ended = take_ended(w, ev[i].data.u64, &cookie);
                        pthread_mutex_unlock(&w->lock);
                        if (ended)
                                w->exited(w->ctx, cookie);
                }
        }
        return NULL;
}

int sfs_pidwatch_start(struct sfs_pidwatch *w)
{
        int r = pthread_create_quiet(&w->thread, watch_loop, w, 0);

        if (r)
                return -r;
        w->running = true;
        return 0;
}

int sfs_pidwatch_add(struct sfs_pidwatch *w, int pidfd, uint64_t cookie)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = cookie };
        int r = 0;

        if (cookie == UINT64_MAX) {
                safe_close(pidfd);
                return -EINVAL;
        }
        pthread_mutex_lock(&w->lock);
        if (w->n == w->cap) {
                size_t cap = w->cap ? 2 * w->cap : 16;
                struct watched *v = realloc(w->v, cap * sizeof(*v));
                if (!v)
                        r = -ENOMEM;
                else {
                        w->v = v;
                        w->cap = cap;
                }
        }
        if (r == 0 && epoll_ctl(w->epfd, EPOLL_CTL_ADD, pidfd, &ev) < 0)
                r = negative_errno();
        if (r == 0)
                w->v[w->n++] = (struct watched){ .cookie = cookie, .pidfd = pidfd };
        pthread_mutex_unlock(&w->lock);
        if (r < 0)
                safe_close(pidfd);
        return r;
}

void sfs_pidwatch_remove(struct sfs_pidwatch *w, uint64_t cookie)
{
        uint64_t ignored;

        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        take_ended(w, cookie, &ignored);
        pthread_mutex_unlock(&w->lock);
}

void sfs_pidwatch_free(struct sfs_pidwatch *w)
{
        if (!w)
                return;
        if (w->running)
                sfs_worker_stop(w->thread, &w->lock, &w->stop, wake, w);
        for (size_t i = 0; i < w->n; i++)
                safe_close(w->v[i].pidfd);
        free(w->v);
        safe_close(w->epfd);
        safe_close(w->wakefd);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

/* ---- processes ---- */

/* Reads /proc/PID/FILE into buf (at most size - 1 bytes, NUL-terminated): 0, -ESRCH when the
 * process is gone, -EIO when the file is empty, or another negative errno. */
static int proc_read(pid_t pid, const char *file, char *buf, size_t size)
{
        char path[64];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        n = read(fd, buf, size - 1);
        if (n <= 0)
                return n < 0 ? negative_errno() : -EIO;
        buf[n] = '\0';
        return 0;
}

int sfs_proc_stat_start_time(const char *stat, uint64_t *out)
{
        const char *p;
        char *end;
        unsigned long long v;

        p = strrchr(stat, ')');
        if (!p)
                return -EIO;
        /* After ") ": field 3 (state) is the first; field 22 is the 20th from it. */
        p++;
        for (int field = 3; field < 22; field++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EIO;
        }
        errno = 0;
        v = strtoull(p + 1, &end, 10);
        if (errno || end == p + 1)
                return -EIO;
        *out = v;
        return 0;
}

int sfs_proc_status_fields(const char *status, pid_t *tgid, char *state)
{
        const char *p;
        long v;

        if (state) {
                p = strstr(status, "\nState:");
                if (!p)
                        return -EIO;
                p += 7;
                p += strspn(p, " \t");
                *state = *p;
        }
        p = strstr(status, "\nTgid:");
        if (!p)
                return -EIO;
        v = strtol(p + 6, NULL, 10);
        if (v <= 0)
                return -EIO;
        *tgid = (pid_t)v;
        return 0;
}

/* Field 22 of /proc/PID/stat: its start time, in clock ticks since boot. */
static int start_time(pid_t pid, uint64_t *out)
{
        char buf[1024];
        int r = proc_read(pid, "stat", buf, sizeof(buf));

        return r < 0 ? r : sfs_proc_stat_start_time(buf, out);
}

/* /proc/PID/status: the thread group pid belongs to and its state letter ('Z' a zombie). */
static int proc_status(pid_t pid, pid_t *tgid, char *state)
{
        char buf[4096];
        int r = proc_read(pid, "status", buf, sizeof(buf));

        return r < 0 ? r : sfs_proc_status_fields(buf, tgid, state);
}

/* Whether pid is a live process, not a thread of one and not a zombie: 0, or -ESRCH with why.
 * A thread id is refused, not read as its process: the thread may end while its process
 * runs on. A zombie has exited: a scope tied to it would be gone the moment it is made. */
static int live_process(pid_t pid, const char **why)
{
        pid_t tgid;
        char state;
        int r = proc_status(pid, &tgid, &state);

        if (r == -ESRCH)
                *why = "no such process";
        else if (r < 0)
                return r;
        else if (tgid != pid)
                *why = "a thread, not a process: name its process (Tgid in /proc/PID/status)";
        else if (state == 'Z' || state == 'X')
                *why = "a zombie: the process has exited and waits to be reaped";
        else
                return 0;
        return -ESRCH;
}

int sfs_pid_tie(pid_t pid, int *pidfd, uint64_t *start, const char **why)
{
        const char *unused;
        int fd, r;

        if (!why)
                why = &unused;
        *why = "no such process";
        if (pid <= 0)
                return -ESRCH;
        fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0) {
                r = negative_errno();
                /* pidfd_open refuses a thread id (EINVAL, ENOENT): say what it is. */
                if (r == -EINVAL || r == -ENOENT || r == -ESRCH)
                        return live_process(pid, why) < 0 ? -ESRCH : r;
                return r;
        }
        /* Judged while the pidfd holds the number: it names this process, not a successor. */
        r = live_process(pid, why);
        if (r == 0)
                r = start_time(pid, start);
        /* Alive after the read: while the pidfd holds it, its number cannot be reused, so the
         * start time read is this process's. */
        if (r == 0 && syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) < 0)
                r = errno == ESRCH ? -ESRCH : negative_errno();
        if (r < 0) {
                close(fd);
                return r;
        }
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
                r = negative_errno();
                close(fd);
                return r;
        }
        *pidfd = fd;
        return 0;
}

bool sfs_pid_same(pid_t pid, uint64_t start)
{
        uint64_t now;

        return pid > 0 && start_time(pid, &now) == 0 && now == start;
}

int sfs_boot_id(char out[40])
{
        _cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return negative_errno();
        n = read(fd, out, 39);
        if (n < 0)
                return negative_errno();
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
                n--;
        out[n] = '\0';
        return n > 0 ? 0 : -EIO;
}

pid_t sfs_tgid_of(pid_t tid)
{
        pid_t tgid;
        int r = proc_status(tid, &tgid, NULL);

        return r < 0 ? r : tgid;
}
