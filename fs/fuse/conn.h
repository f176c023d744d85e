/* SPDX-License-Identifier: MIT */
/* The kernel FUSE connections of the daemon, made so that they outlive the process
 * (docs/design.md, "Taking over"): each session is mounted with mount(2) on a /dev/fuse
 * descriptor the daemon opened itself and served through fuse_session_custom_io(), which
 * records the kernel's INIT request in a memory file beside it. A keeper (the daemon's
 * supervisor, or systemd's file-descriptor store) is handed both descriptors as soon as the
 * mount is checked; a successor that receives them adopts the connection instead of mounting
 * again: it replays the recorded INIT to libfuse (the reply is not written: the kernel has
 * it), asks the kernel to resend what was in flight (FUSE_NOTIFY_RESEND) and serves on. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fuse/ops.h"

enum sfs_conn_kind {
        SFS_CONN_MAIN = 1,  /* the publishing mount */
        SFS_CONN_READ_VIEW, /* --read-view */
        SFS_CONN_SCOPE,     /* a scope's view */
};

/* One kernel connection and its record. */
struct sfs_conn {
        int fd;                  /* /dev/fuse (the session's: closed by fuse_session_destroy) */
        int rec;                 /* memfd: kind, device, path, then the INIT request */
        unsigned id;             /* names the pair for the keeper: snapfs-fuse-ID, snapfs-rec-ID */
        enum sfs_conn_kind kind;
        uint64_t dev;            /* the mount's device number (0 until checked) */
        char *path;
        bool libfuse_mounted;    /* mounted by fusermount3 (no privilege): libfuse unmounts */
        bool adopted;            /* a predecessor's: INIT is replayed, not read */
        bool recorded;           /* INIT is in rec (atomic) */
        void *init;              /* adopted: the recorded INIT request */
        size_t init_len;
        uint64_t swallow;        /* the unique of the replayed INIT, whose reply is not sent */
        uint64_t init_unique;    /* the INIT whose reply is still to be written, or 0 */
        bool pt_offered;         /* that INIT offers FUSE passthrough (passthrough.h) */
        bool passthrough;        /* its reply asked for it (atomic): OPEN may name backing files */
};

/* Where connections are handed as they are made: keep(arg, fuse_fd, rec_fd, id) sends
 * copies of both descriptors to a process that outlives this one (0 or -errno; a failure
 * is said, and the mount serves on without a successor). NULL: nobody keeps them. */
void sfs_conn_set_keeper(int (*keep)(void *arg, int fd, int rec, unsigned id), void *arg);

/* Mounts se at path as a new connection of kind: mount(2) on a /dev/fuse the daemon opened
 * (root), or fusermount3 (no privilege), and serves it through the recording I/O. 0 and
 * *out, or a negative errno (said). */
int sfs_conn_mount(struct fuse_session *se, struct sfs_ops_ctx *ctx, const char *path,
                   enum sfs_conn_kind kind, const char *opts, bool ro, struct sfs_conn **out);
/* The connection a predecessor left mounted at path, adopted by se: 1 and *out (its device
 * in (*out)->dev); 0 when none was handed over for path; a negative errno. */
int sfs_conn_adopt(struct fuse_session *se, struct sfs_ops_ctx *ctx, const char *path,
                   enum sfs_conn_kind kind, struct sfs_conn **out);
/* The mount was checked: its device goes into the record, and the pair to the keeper. */
void sfs_conn_keep(struct sfs_conn *c, uint64_t dev);
/* Before the serve loop of ctx's connection: when it was adopted with its INIT recorded,
 * replays that INIT (libfuse negotiates as before; the reply is not sent) and asks the kernel
 * to resend what was in flight: 0. 1 when there is nothing to replay (a new connection, or
 * one whose INIT the kernel still has to send); -EPROTO when libfuse refused the INIT. */
int sfs_conn_resume(struct fuse_session *se, const struct sfs_ops_ctx *ctx);
/* Asks the kernel to put back on fd's queue every request a server read but has not answered
 * (FUSE_NOTIFY_RESEND, 6.9): 0, or -errno (an older kernel refuses it). */
int sfs_conn_resend(int fd);
/* A planned stop: unmounts (lazily) what c mounted, if it is still there. */
void sfs_conn_unmount(struct fuse_session *se, struct sfs_conn *c);
/* Frees c (after fuse_session_destroy, which closed c->fd). NULL is fine. */
void sfs_conn_free(struct sfs_conn *c);

/* Reads the descriptors handed to this process (LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID, as
 * systemd and the supervisor pass them): every snapfs-fuse-N/snapfs-rec-N pair that is a
 * /dev/fuse descriptor and a valid record is kept for sfs_conn_adopt; anything else is
 * closed. The number of connections kept, or a negative errno. */
int sfs_conn_inherit(void);
/* Whether an inherited connection of kind waits at path for sfs_conn_adopt. */
bool sfs_conn_handed_over(const char *path, enum sfs_conn_kind kind);
/* Ends every inherited connection nobody adopted (a scope deleted since, a mount gone, or a
 * start that failed): unmounted lazily where it is still mounted, then closed. The number
 * ended. */
unsigned sfs_conn_drop_unadopted(void);
/* How many connections were adopted in this process. */
unsigned sfs_conn_adopted_count(void);
