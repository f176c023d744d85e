/* SPDX-License-Identifier: MIT */
/* The daemon's workers, each started or ended one way: a thread's end (the audit writer, the
 * pid watcher, the scope views' reaper), a child's fork (the daemonized child, the
 * supervisor's successor). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/util.h"

/* Ends a worker that reads *stop under lock each time wake(arg) wakes it: *stop is set under
 * lock, so the worker cannot miss it between its check and its wait; then the wake, then the
 * join. */
static inline void sfs_worker_stop(pthread_t thread, pthread_mutex_t *lock, bool *stop,
                                   void (*wake)(void *), void *arg)
{
        pthread_mutex_lock(lock);
        *stop = true;
        pthread_mutex_unlock(lock);
        wake(arg);
        pthread_join(thread, NULL);
}

/* fork(2) for a child given one end of pair (a pipe or socket pair made for it): the pid (0 in
 * the child), or -errno with both ends closed, so a failed start leaks no descriptor. */
static inline pid_t sfs_fork_with_pair(int pair[2])
{
        pid_t pid = fork();

        if (pid < 0) {
                int r = negative_errno();
                close(pair[0]);
                close(pair[1]);
                return r;
        }
        return pid;
}
