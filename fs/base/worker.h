/* SPDX-License-Identifier: MIT */
/* A worker thread's end, one way for each of the daemon's (the audit writer, the pid watcher,
 * the scope views' reaper). */
#pragma once

#include <pthread.h>
#include <stdbool.h>

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
