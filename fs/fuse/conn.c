/* SPDX-License-Identifier: MIT */
/* Kernel FUSE connections that outlive the process (conn.h). */
#include "fs/fuse/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/util.h"
#include "fs/base/fdstore.h"
#include "fs/base/log.h"
#include "fs/fuse/passthrough.h"

/* The kernel's numbers that Debian 12's headers (6.1) lack (uapi fuse.h, 6.9). */
#define SFS_FUSE_NOTIFY_RESEND 7
/* /dev/fuse: misc major 10, minor 229. */
#define SFS_FUSE_DEV makedev(10, 229)

#define REC_MAGIC "SNAPFSC1"
#define REC_INIT_MAX 4096

/* The record's head; the path follows it, then the INIT request. */
struct rec_head {
        char magic[8];
        uint32_t kind;
        uint32_t path_len;
        uint64_t dev;
        uint32_t init_len; /* 0 until INIT was read */
        uint32_t reserved;
};

static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static int (*keeper)(void *arg, int fd, int rec, unsigned id);
static void *keeper_arg;
static unsigned next_id = 1;
static unsigned n_adopted;

/* Connections checked before there was a keeper (the daemon mounts before it forks its
 * supervisor): handed over when one is set. */
struct pending {
        struct sfs_conn *c;
        struct pending *next;
};
static struct pending *pending;

static void hand(struct sfs_conn *c)
{
        int r = keeper(keeper_arg, c->fd, c->rec, c->id);

        if (r < 0)
                LOG("%s: cannot hand the connection to its keeper: %s; a successor cannot "
                    "take it over\n", c->path, strerror(-r));
}

void sfs_conn_set_keeper(int (*keep)(void *arg, int fd, int rec, unsigned id), void *arg)
{
        pthread_mutex_lock(&keep_lock);
        keeper = keep;
        keeper_arg = arg;
        while (keeper && pending) {
                struct pending *p = pending;
                pending = p->next;
                hand(p->c);
                free(p);
        }
        pthread_mutex_unlock(&keep_lock);
}

static void unpend(struct sfs_conn *c)
{
        pthread_mutex_lock(&keep_lock);
        for (struct pending **pp = &pending; *pp; pp = &(*pp)->next)
                if ((*pp)->c == c) {
                        struct pending *p = *pp;
                        *pp = p->next;
                        free(p);
                        break;
                }
        pthread_mutex_unlock(&keep_lock);
}

/* ---- the recording I/O ---- */

static struct sfs_conn *conn_of(void *userdata)
{
        return ((struct sfs_ops_ctx *)userdata)->conn;
}

/* The INIT request goes into the record, once, before libfuse sees it: a successor replays
 * exactly what this connection negotiated. Sealed then, so the keeper's copy cannot change. */
static void record_init(struct sfs_conn *c, const void *buf, size_t len)
{
        struct rec_head h;

        if (len > REC_INIT_MAX || pread(c->rec, &h, sizeof(h), 0) != sizeof(h))
                return;
        if (pwrite(c->rec, buf, len, (off_t)(sizeof(h) + h.path_len)) != (ssize_t)len)
                return;
        h.init_len = (uint32_t)len;
        if (pwrite(c->rec, &h, sizeof(h), 0) != sizeof(h))
                return;
        fcntl(c->rec, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
        __atomic_store_n(&c->recorded, true, __ATOMIC_RELEASE);
}

static void note_init(struct sfs_conn *c, const void *buf, size_t len)
{
        const struct fuse_in_header *in = buf;

        c->init_unique = in->unique;
        c->pt_offered = sfs_pt_init_offered((const char *)buf + sizeof(*in), len - sizeof(*in));
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
        struct sfs_conn *c = conn_of(userdata);
        ssize_t n = read(fd, buf, len);
        const struct fuse_in_header *in = buf;

        if (n >= (ssize_t)sizeof(*in) && in->opcode == FUSE_INIT) {
                int saved = errno;
                if (!__atomic_load_n(&c->recorded, __ATOMIC_ACQUIRE))
                        record_init(c, buf, (size_t)n);
                note_init(c, buf, (size_t)n);
                errno = saved;
        }
        return n;
}

/* The INIT reply asks for passthrough when the kernel offers it and the daemon may use it;
 * an adopted connection's replayed INIT decides the same way, so the successor knows what its
 * predecessor's reply asked for. */
static void answer_init(struct sfs_conn *c, struct iovec *iov, int count)
{
        c->init_unique = 0;
        if (count >= 2 && c->pt_offered && sfs_pt_wanted() &&
            sfs_pt_patch_init(iov[1].iov_base, iov[1].iov_len)) {
                __atomic_store_n(&c->passthrough, true, __ATOMIC_RELEASE);
                sfs_pt_conn_on(c);
        } else {
                sfs_pt_conn_off();
        }
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
        struct sfs_conn *c = conn_of(userdata);
        const struct fuse_out_header *out = iov[0].iov_base;

        if (c->init_unique && iov[0].iov_len >= sizeof(*out) && out->unique == c->init_unique &&
            out->error == 0)
                answer_init(c, iov, count);
        else if (count == 2)
                sfs_pt_patch_open(iov[1].iov_base, iov[1].iov_len);
        /* The replayed INIT's reply: the kernel applied the first server's long ago, and a
         * second one for the same unique would be refused (ENOENT) at best. */
        if (c->swallow && iov[0].iov_len >= sizeof(*out) && out->unique == c->swallow) {
                ssize_t total = 0;
                for (int i = 0; i < count; i++)
                        total += (ssize_t)iov[i].iov_len;
                c->swallow = 0;
                return total;
        }
        return writev(fd, iov, count);
}

static const struct fuse_custom_io recording_io = {
        .read = io_read,
        .writev = io_writev,
};

/* ---- making one ---- */

static struct sfs_conn *conn_new(const char *path, enum sfs_conn_kind kind)
{
        struct sfs_conn *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->fd = c->rec = -1;
        c->kind = kind;
        c->path = strdup(path);
        if (!c->path) {
                free(c);
                return NULL;
        }
        return c;
}

void sfs_conn_free(struct sfs_conn *c)
{
        if (!c)
                return;
        unpend(c);
        safe_close(c->rec);
        free(c->init);
        free(c->path);
        free(c);
}

/* mount(2) on our own /dev/fuse: what fuse_session_mount() does as root, but the
 * descriptor is ours to hand over. */
static int mount_own(struct sfs_conn *c, const char *opts, bool ro)
{
        char data[512];
        unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (ro ? MS_RDONLY : 0);

        c->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (c->fd < 0)
                return negative_errno();
        snprintf(data, sizeof(data), "fd=%d,rootmode=40000,user_id=%u,group_id=%u%s%s", c->fd,
                 (unsigned)getuid(), (unsigned)getgid(), *opts ? "," : "", opts);
        if (mount("snapfs", c->path, "fuse.snapfs", flags, data) < 0) {
                int r = negative_errno();
                c->fd = safe_close(c->fd);
                return r;
        }
        return 0;
}

int sfs_conn_mount(struct fuse_session *se, struct sfs_ops_ctx *ctx, const char *path,
                   enum sfs_conn_kind kind, const char *opts, bool ro, struct sfs_conn **out)
{
        struct sfs_conn *c = conn_new(path, kind);
        int r;

        if (!c)
                return -ENOMEM;
        c->rec = memfd_create("snapfs-conn", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (c->rec < 0) {
                r = negative_errno();
                sfs_conn_free(c);
                return r;
        }
        if (geteuid() == 0) {
                r = mount_own(c, opts, ro);
        } else {
                /* fusermount3 mounts for an unprivileged daemon; the descriptor it passes
                 * back is as much ours to hand over. */
                r = fuse_session_mount(se, path) == 0 ? 0 : -EIO;
                if (r == 0) {
                        c->fd = fuse_session_fd(se);
                        c->libfuse_mounted = true;
                }
        }
        if (r == 0 && (r = fuse_session_custom_io(se, &recording_io, c->fd)) < 0)
                sfs_conn_unmount(se, c);
        if (r < 0) {
                if (!c->libfuse_mounted)
                        safe_close(c->fd);
                LOG("%s: mount failed: %s\n", path, strerror(-r));
                sfs_conn_free(c);
                return r;
        }
        c->id = next_id++;
        ctx->conn = c;
        *out = c;
        return 0;
}

void sfs_conn_keep(struct sfs_conn *c, uint64_t dev)
{
        struct rec_head h = { .magic = REC_MAGIC, .kind = c->kind, .dev = dev };
        size_t plen = strlen(c->path);

        c->dev = dev;
        h.path_len = (uint32_t)plen;
        if (pwrite(c->rec, &h, sizeof(h), 0) != sizeof(h) ||
            pwrite(c->rec, c->path, plen, sizeof(h)) != (ssize_t)plen) {
                LOG("%s: cannot record the connection: %m; a successor cannot take it over\n",
                    c->path);
                return;
        }
        pthread_mutex_lock(&keep_lock);
        if (keeper) {
                hand(c);
        } else {
                struct pending *p = malloc(sizeof(*p));
                if (p) {
                        *p = (struct pending){ .c = c, .next = pending };
                        pending = p;
                }
        }
        pthread_mutex_unlock(&keep_lock);
}

void sfs_conn_unmount(struct fuse_session *se, struct sfs_conn *c)
{
        struct pollfd p = { .fd = c ? c->fd : -1 };
        struct statx stx;

        if (!c)
                return;
        if (c->libfuse_mounted) {
                fuse_session_unmount(se);
                return;
        }
        /* A connection the kernel ended (unmounted from outside, aborted) polls POLLERR:
         * nothing to unmount, and whatever is at path now is not ours. */
        if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
                return;
        /* Only our own mount: never one stacked on it or put there since. */
        if (statx(AT_FDCWD, c->path, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE,
                  &stx) < 0 ||
            (c->dev && makedev(stx.stx_dev_major, stx.stx_dev_minor) != c->dev))
                return;
        if (umount2(c->path, MNT_DETACH) < 0)
                LOG("%s: cannot unmount: %m\n", c->path);
}

/* ---- taking one over ---- */

struct inherited {
        struct sfs_conn *c;
        struct inherited *next;
};
static struct inherited *inherited;

/* The record in rec, judged: magic, kind, a path, an INIT that is an INIT. 0, or -EBADMSG. */
static int rec_read(struct sfs_conn *c)
{
        struct rec_head h;
        const struct fuse_in_header *in;

        if (pread(c->rec, &h, sizeof(h), 0) != sizeof(h) || memcmp(h.magic, REC_MAGIC, 8) ||
            h.kind < SFS_CONN_MAIN || h.kind > SFS_CONN_SCOPE || !h.path_len ||
            h.path_len > 4096 || h.init_len > REC_INIT_MAX)
                return -EBADMSG;
        c->kind = h.kind;
        c->dev = h.dev;
        c->path = calloc(1, h.path_len + 1);
        if (!c->path || pread(c->rec, c->path, h.path_len, sizeof(h)) != h.path_len ||
            c->path[0] != '/' || strlen(c->path) != h.path_len)
                return -EBADMSG;
        if (!h.init_len)
                return 0; /* mounted, INIT never read: the kernel still has it */
        c->init = malloc(h.init_len);
        if (!c->init || pread(c->rec, c->init, h.init_len, (off_t)(sizeof(h) + h.path_len)) !=
                                h.init_len)
                return -EBADMSG;
        in = c->init;
        if (h.init_len < sizeof(*in) || in->len != h.init_len || in->opcode != FUSE_INIT)
                return -EBADMSG;
        c->init_len = h.init_len;
        c->recorded = true;
        return 0;
}

/* The pair snapfs-fuse-ID, snapfs-rec-ID, judged: a /dev/fuse descriptor and a record
 * (a memory file) that parses. Anything else is closed. */
static struct sfs_conn *inherit_one(unsigned id, int fd, int rec)
{
        struct stat st, rst;
        struct sfs_conn *c;

        /* The attack: a descriptor that is not a FUSE connection (a file, a socket) made to
         * look like one; its "record" would then steer what the successor mounts where. */
        if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != SFS_FUSE_DEV ||
            fstat(rec, &rst) < 0 || !S_ISREG(rst.st_mode) || fcntl(rec, F_GET_SEALS) < 0) {
                safe_close(fd);
                safe_close(rec);
                return NULL;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                safe_close(fd);
                safe_close(rec);
                return NULL;
        }
        c->fd = fd;
        c->rec = rec;
        c->id = id;
        if (rec_read(c) < 0) {
                LOG("a handed-over connection's record is not valid; closing it\n");
                safe_close(c->fd);
                sfs_conn_free(c);
                return NULL;
        }
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        fcntl(rec, F_SETFD, FD_CLOEXEC);
        return c;
}

int sfs_conn_inherit(void)
{
        char name[64];
        int n = 0;

        for (unsigned id = 1; id < 1u << 20; id++) {
                snprintf(name, sizeof(name), "snapfs-fuse-%u", id);
                int fd = sfs_fdstore_take(name);
                snprintf(name, sizeof(name), "snapfs-rec-%u", id);
                int rec = sfs_fdstore_take(name);
                struct inherited *e;
                struct sfs_conn *c;

                if (fd < 0 && rec < 0 && !sfs_fdstore_left("snapfs-"))
                        break;
                if (fd < 0 || rec < 0) {
                        safe_close(fd);
                        safe_close(rec);
                        continue;
                }
                c = inherit_one(id, fd, rec);
                if (!c)
                        continue;
                e = calloc(1, sizeof(*e));
                if (!e) {
                        safe_close(c->fd);
                        sfs_conn_free(c);
                        return -ENOMEM;
                }
                *e = (struct inherited){ .c = c, .next = inherited };
                inherited = e;
                if (id >= next_id)
                        next_id = id + 1;
                n++;
        }
        return n;
}

/* Whether the connection at c->path is still the mount it was: the same device, a mount
 * root. AT_STATX_DONT_SYNC: nothing may reach the connection before INIT is replayed (a
 * request would wait for a server that is this very process). */
static bool still_mounted(const struct sfs_conn *c)
{
        struct pollfd p = { .fd = c->fd };
        struct statx stx;

        if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
                return false;
        return statx(AT_FDCWD, c->path, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE,
                     &stx) == 0 &&
               (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) &&
               makedev(stx.stx_dev_major, stx.stx_dev_minor) == c->dev;
}

bool sfs_conn_handed_over(const char *path, enum sfs_conn_kind kind)
{
        for (struct inherited *e = inherited; e; e = e->next)
                if (e->c->kind == kind && strcmp(e->c->path, path) == 0)
                        return true;
        return false;
}

int sfs_conn_adopt(struct fuse_session *se, struct sfs_ops_ctx *ctx, const char *path,
                   enum sfs_conn_kind kind, struct sfs_conn **out)
{
        struct inherited **pp, *e;
        struct sfs_conn *c;
        int r;

        for (pp = &inherited; *pp; pp = &(*pp)->next)
                if ((*pp)->c->kind == kind && strcmp((*pp)->c->path, path) == 0)
                        break;
        if (!*pp)
                return 0;
        e = *pp;
        *pp = e->next;
        c = e->c;
        free(e);
        if (!still_mounted(c)) {
                LOG("%s: the handed-over connection is no longer mounted there; mounting "
                    "anew\n", path);
                safe_close(c->fd);
                sfs_conn_free(c);
                return 0;
        }
        r = fuse_session_custom_io(se, &recording_io, c->fd);
        if (r < 0) {
                safe_close(c->fd);
                sfs_conn_free(c);
                return r;
        }
        c->adopted = true;
        ctx->conn = c;
        n_adopted++;
        *out = c;
        return 1;
}

int sfs_conn_resend(int fd)
{
        const struct fuse_out_header resend = {
                .len = sizeof(resend),
                .error = SFS_FUSE_NOTIFY_RESEND,
        };

        return write(fd, &resend, sizeof(resend)) == sizeof(resend) ? 0 : negative_errno();
}

int sfs_conn_resume(struct fuse_session *se, const struct sfs_ops_ctx *ctx)
{
        struct sfs_conn *c = ctx->conn;
        struct fuse_buf buf;

        if (!c || !c->adopted || !c->init)
                return 1; /* INIT is still the kernel's to send: read it as usual */
        buf = (struct fuse_buf){ .mem = c->init, .size = c->init_len };
        c->swallow = ((const struct fuse_in_header *)c->init)->unique;
        note_init(c, c->init, c->init_len);
        fuse_session_process_buf(se, &buf);
        if (!ctx->initialized)
                return -EPROTO;
        /* Requests the dead server had read but not answered go back on the queue (6.9);
         * an older kernel refuses the notice, and its in-flight requests stay unanswered
         * until their callers give up (docs/design.md, "Taking over"). */
        if (sfs_conn_resend(c->fd) < 0)
                LOG("%s: the kernel cannot resend what was in flight (%m)\n", c->path);
        return 0;
}

/* Ends the connection in the kernel (fusectl's abort): the keeper holds a copy of its
 * descriptor, so closing ours would leave what is still open in it (a removed scope's view a
 * sandbox holds, detached) waiting forever for an answer; aborted, it fails ENOTCONN. */
static void abort_conn(const struct sfs_conn *c)
{
        char path[64];
        int fd;

        if (major(c->dev) != 0)
                return;
        snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", minor(c->dev));
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;
        if (write(fd, "1", 1) != 1)
                LOG("%s: cannot end the connection: %m\n", c->path);
        close(fd);
}

unsigned sfs_conn_drop_unadopted(void)
{
        unsigned n = 0;

        while (inherited) {
                struct inherited *e = inherited;
                inherited = e->next;
                /* Nobody will ever serve it: unmounted (lazily, only where it is still the
                 * mount it was), not left answering ENOTCONN. */
                if (still_mounted(e->c) && umount2(e->c->path, MNT_DETACH) < 0)
                        LOG("%s: cannot unmount: %m\n", e->c->path);
                abort_conn(e->c);
                safe_close(e->c->fd);
                sfs_conn_free(e->c);
                free(e);
                n++;
        }
        return n;
}

unsigned sfs_conn_adopted_count(void)
{
        return n_adopted;
}
