/* SPDX-License-Identifier: MIT */
/* The read view's mount and its serving thread; the session itself is session.c's. */
#include "view.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "tree.h"
#include "util.h"

int sfs_view_mount(struct sfs_view *v, const char *path, const struct sfs_session_config *sc,
                   struct sfs_tree *tree)
{
        int r;

        *v = (struct sfs_view){ .ctx = { .tree = tree, .read_view = true }, .debug = sc->debug };
        v->path = path_make_absolute(path);
        if (!v->path) {
                r = negative_errno();
                LOG("--read-view %s: %s\n", path, strerror(-r));
                return r;
        }
        v->se = sfs_session_new(sc, &v->ctx);
        if (!v->se) {
                LOG("cannot create the read view's FUSE session\n");
                goto fail;
        }
        v->ctx.se = v->se;
        if (fuse_session_mount(v->se, v->path) != 0) {
                LOG("%s: mounting the read view failed\n", v->path);
                fuse_session_destroy(v->se);
                v->se = NULL;
                goto fail;
        }
        if (geteuid() == 0 && mount(NULL, v->path, NULL, MS_PRIVATE, NULL) < 0)
                LOG("%s: cannot make the read view private: %m\n", v->path);
        /* The view must really be read-only: that, not the daemon, is what refuses writes
         * there, since the daemon is never asked at open. */
        r = sfs_session_check(v->path, true, &v->dev);
        if (r) {
                sfs_view_stop(v);
                return r;
        }
        sfs_tree_set_dev(tree, v->dev, true);
        return 0;
fail:
        free(v->path);
        v->path = NULL;
        return -EIO;
}

static void *view_loop(void *arg)
{
        struct sfs_view *v = arg;

        if (sfs_session_init(v->se, &v->ctx, v->dev, v->debug) == 0)
                sfs_session_loop(v->se, v->max_threads);
        return NULL;
}

/* The view's loop waits in sem_wait/read; a signal without SA_RESTART is what wakes it to see
 * that the session has exited. */
static void wake(int sig)
{
        (void)sig;
}

int sfs_view_start(struct sfs_view *v, unsigned max_threads)
{
        struct sigaction sa = { .sa_handler = wake };
        int r;

        if (!v->se)
                return 0;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR2, &sa, NULL) < 0)
                return -errno;
        v->max_threads = max_threads;
        /* Only its wake-up: SIGTERM and SIGINT must reach the main loop's thread. */
        r = pthread_create_quiet(&v->thread, view_loop, v, SIGUSR2);
        if (r)
                return -r;
        v->running = true;
        return 0;
}

void sfs_view_stop(struct sfs_view *v)
{
        if (v->running) {
                fuse_session_exit(v->se);
                /* A wake-up sent just before the thread blocks would be lost: repeat it
                 * until the thread is gone. */
                for (;;) {
                        struct timespec until;
                        clock_gettime(CLOCK_REALTIME, &until);
                        until.tv_nsec += 50 * 1000 * 1000;
                        if (until.tv_nsec >= 1000000000) {
                                until.tv_sec++;
                                until.tv_nsec -= 1000000000;
                        }
                        pthread_kill(v->thread, SIGUSR2);
                        if (pthread_timedjoin_np(v->thread, NULL, &until) == 0)
                                break;
                }
                v->running = false;
        }
        if (v->se) {
                fuse_session_unmount(v->se);
                fuse_session_destroy(v->se);
                v->se = NULL;
        }
        free(v->path);
        v->path = NULL;
}
