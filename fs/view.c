/* SPDX-License-Identifier: MIT */
#include "view.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "daemon-internal.h"
#include "readahead.h"
#include "tree.h"
#include "util.h"

static unsigned view_max_threads;

int sfs_view_mount(struct sfs_view *v, const struct sfs_daemon_config *cfg,
                   struct sfs_tree *tree)
{
        int r;

        *v = (struct sfs_view){ .ctx = { .tree = tree, .read_view = true } };
        v->path = path_make_absolute(cfg->read_view);
        if (!v->path) {
                LOG("--read-view %s: %m\n", cfg->read_view);
                return SFS_EXIT_ERROR;
        }
        v->se = sfs_new_session(cfg, &v->ctx);
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
        r = sfs_self_check(v->path, true, &v->dev);
        if (r) {
                sfs_view_stop(v);
                return r;
        }
        sfs_tree_set_dev(tree, v->dev, true);
        return 0;
fail:
        free(v->path);
        v->path = NULL;
        return SFS_EXIT_ERROR;
}

static void *view_loop(void *arg)
{
        struct sfs_view *v = arg;
        struct fuse_loop_config *lc;

        if (sfs_answer_init(v->se) < 0 || fuse_session_exited(v->se))
                return NULL;
        if (v->ctx.initialized && geteuid() == 0)
                sfs_set_read_ahead(v->dev, SFS_READ_AHEAD_KB);
        lc = fuse_loop_cfg_create();
        if (!lc)
                return NULL;
        fuse_loop_cfg_set_clone_fd(lc, 1);
        if (view_max_threads)
                fuse_loop_cfg_set_max_threads(lc, view_max_threads);
        fuse_session_loop_mt(v->se, lc);
        fuse_loop_cfg_destroy(lc);
        return NULL;
}

/* The view's loop waits in sem_wait/read; a signal without SA_RESTART is what wakes it to see
 * that the session has exited. */
static void wake(int sig)
{
        (void)sig;
}

int sfs_view_start(struct sfs_view *v, const struct sfs_daemon_config *cfg)
{
        struct sigaction sa = { .sa_handler = wake };
        int r;

        if (!v->se)
                return 0;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR2, &sa, NULL) < 0)
                return -errno;
        view_max_threads = cfg->max_threads;
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
