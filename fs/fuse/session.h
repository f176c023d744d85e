/* SPDX-License-Identifier: MIT */
/* One FUSE session of the daemon, the publishing mount's or the read view's: creating it,
 * checking the mount it made, answering INIT, and the multi-threaded serve loop, run by a
 * thread of its own and stopped without a lost wake-up. daemon.c and view.c both build on
 * these; neither calls into the other. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fs/fuse/ops.h"

#define LOG(...) fprintf(stderr, "snapfs mount: " __VA_ARGS__)

/* How a session is mounted. */
struct sfs_session_config {
        bool allow_other;
        bool ro;     /* a read-only tree, or the read view */
        bool debug;  /* libfuse's -d, and say why the readahead could not be raised */
        /* Per-mount flags set on the new mount before it is checked (mount_setattr(2)):
         * MOUNT_ATTR_NOATIME, _NODIRATIME, _NOSYMFOLLOW, an atime mode; 0 and 0: none. */
        uint64_t attr_set, attr_clr;
};

/* A FUSE session for ctx: nosuid,nodev,noexec, type fuse.snapfs, ro when asked. NULL when
 * libfuse refuses it. */
struct fuse_session *sfs_session_new(const struct sfs_session_config *cfg,
                                     struct sfs_ops_ctx *ctx);
/* Mounts se (whose userdata is ctx) at path as a connection of kind (conn.h's
 * sfs_conn_kind), or adopts the one a predecessor left mounted there: 0 for a new mount (to be
 * checked, then sfs_session_checked), 1 for an adopted one (*dev its device: nothing to
 * check, the first server checked it), or a negative errno (said). */
int sfs_session_mount(struct fuse_session *se, struct sfs_ops_ctx *ctx, const char *path,
                      const struct sfs_session_config *cfg, int kind, uint64_t *dev);
/* A new mount passed its check: its connection goes to the keeper (conn.h). */
void sfs_session_checked(struct sfs_ops_ctx *ctx, uint64_t dev);
/* Unmounts se's mount when asked (a planned stop; never on a handover), destroys se and
 * frees its connection. NULL is fine. */
void sfs_session_end(struct fuse_session *se, struct sfs_ops_ctx *ctx, bool unmount);
/* Sets cfg's per-mount flags on the new mount at path, then runs mountcheck (preset snapfs, no
 * FUSE round trip; ro required when ro, and each flag set required too) on it: 0 and *dev
 * (its superblock's device); 1 when it is not compliant, after printing every finding; or a
 * negative errno (a flag that could not be set: -EPERM without privilege), after saying
 * why. */
int sfs_session_check(const char *path, const struct sfs_session_config *cfg, bool ro,
                      uint64_t *dev);
/* A session served by a thread of its own: INIT, then ready(arg) when set, then the loop. */
struct sfs_serving {
        struct fuse_session *se;
        const struct sfs_ops_ctx *ctx;
        uint64_t dev;              /* the mount's, for its readahead */
        unsigned max_threads;      /* 0: libfuse's default */
        bool debug;
        void (*ready)(void *arg);  /* INIT is answered: the mount serves (may be NULL) */
        void *arg;
        int done_fd;               /* one byte is written here when the loop ends, or -1 */
        const char *name;          /* the loop's threads' name (/proc/PID/task/T/comm), or
                                      NULL: the creator's */
        int result;                /* 0, or the negative errno the session ended with */
        pthread_t thread;
        bool running;
        bool ended;                /* the loop ended (atomic): set before done_fd is written */
};

/* Starts serving s (all signals blocked in its threads but the wake-up, SIGUSR2): 0, or a
 * negative errno. */
int sfs_serving_start(struct sfs_serving *s);
/* Ends the session and waits for its thread: s->result. Safe when never started. */
int sfs_serving_stop(struct sfs_serving *s);
/* Whether s's loop has ended (the kernel ended the session, or it was stopped). */
bool sfs_serving_ended(const struct sfs_serving *s);

/* Clears a dead snapfs mount at path (a killed daemon's, answering ENOTCONN): detached lazily
 * (umount2(MNT_DETACH), or fusermount3 -u -z without privilege): 0 when one was cleared,
 * 1 when nothing dead is there, -EPERM when the dead mount there is not a snapfs mount (left
 * alone), or -errno. */
int sfs_clear_dead_mount(const char *path);
