/* SPDX-License-Identifier: MIT */
/* One FUSE session: creation with the mount options snapfs imposes, the self-check of the
 * mount it made, INIT answered before any worker runs, and the serve loop in a thread of its
 * own. */
#include "fs/fuse/session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "mountcheck/mountcheck.h"
#include "fs/fuse/conn.h"
#include "fs/fuse/readahead.h"
#include "fs/fuse/timing.h"
#include "common/util.h"

struct fuse_session *sfs_session_new(const struct sfs_session_config *cfg,
                                     struct sfs_ops_ctx *ctx)
{
        char opts[256];
        char *argv[4] = { "snapfs", "-o", opts, NULL };
        struct fuse_lowlevel_ops ops;
        struct fuse_args args;
        struct fuse_session *se;

        /* nosuid,nodev,noexec: a snapshot is data, never a program or a device. No
         * default_permissions: the daemon decides every access, not the mode bits. */
        snprintf(opts, sizeof(opts), "fsname=snapfs,subtype=snapfs,nosuid,nodev,noexec%s%s",
                 cfg->allow_other ? ",allow_other" : "", cfg->ro || ctx->read_view ? ",ro" : "");
        args = (struct fuse_args)FUSE_ARGS_INIT(3, argv);
        if (cfg->debug) {
                static char *dargv[5] = { "snapfs", "-o", NULL, "-d", NULL };
                dargv[2] = opts;
                args = (struct fuse_args)FUSE_ARGS_INIT(4, dargv);
        }
        sfs_timed_ops(&ops);
        se = fuse_session_new(&args, &ops, sizeof(ops), ctx);
        fuse_opt_free_args(&args);
        return se;
}

int sfs_session_mount(struct fuse_session *se, struct sfs_ops_ctx *ctx, const char *path,
                      const struct sfs_session_config *cfg, int kind, uint64_t *dev)
{
        struct sfs_conn *c;
        int r;

        r = sfs_conn_adopt(se, ctx, path, (enum sfs_conn_kind)kind, &c);
        if (r == 1) {
                *dev = c->dev;
                return 1;
        }
        if (r < 0)
                return r;
        return sfs_conn_mount(se, ctx, path, (enum sfs_conn_kind)kind,
                              cfg->allow_other ? "allow_other" : "", cfg->ro || ctx->read_view,
                              &c);
}

void sfs_session_checked(struct sfs_ops_ctx *ctx, uint64_t dev)
{
        if (ctx->conn && !ctx->conn->adopted)
                sfs_conn_keep(ctx->conn, dev);
}

void sfs_session_end(struct fuse_session *se, struct sfs_ops_ctx *ctx, bool unmount)
{
        if (!se)
                return;
        if (unmount)
                sfs_conn_unmount(se, ctx->conn);
        fuse_session_destroy(se);
        sfs_conn_free(ctx->conn);
        ctx->conn = NULL;
}

static void print_findings(const char *path, const struct mc_verdict *v)
{
        LOG("%s: the new mount is not compliant; refusing to serve it:\n", path);
        for (size_t i = 0; i < v->n_findings; i++)
                fprintf(stderr, "%s: %s\n", mc_code_name(v->findings[i].code),
                        v->findings[i].message);
        if (v->n_dropped)
                fprintf(stderr, "(and %zu more findings)\n", v->n_dropped);
}

/* Runs before the session loop starts, so not one request is served from a non-compliant
 * mount. The probe is off: any FUSE request now would wait forever for INIT, which only the
 * loop answers. */
/* The mountcheck options a set of MOUNT_ATTR_* flags shows as. */
static uint32_t required_options(uint64_t attr_set, uint64_t attr_clr)
{
        uint32_t req = 0;

        if (attr_set & MOUNT_ATTR_NODIRATIME)
                req |= MC_OPT_NODIRATIME;
        if (attr_set & MOUNT_ATTR_NOSYMFOLLOW)
                req |= MC_OPT_NOSYMFOLLOW;
        /* relatime is what a mount has unless told otherwise, and no backend can tell it
         * from strictatime (mountcheck/policy.h): only noatime is checked. */
        if ((attr_clr & MOUNT_ATTR__ATIME) && (attr_set & MOUNT_ATTR__ATIME) == MOUNT_ATTR_NOATIME)
                req |= MC_OPT_NOATIME;
        return req;
}

/* Generic flags asked for with -o (mount(8), fstab) are kept on the mount, not dropped: a
 * mount said to be nosymfollow that follows symlinks would be a promise broken in silence.
 * libfuse 3.14 knows none but noatime, so they are set once the mount exists. */
static int set_mount_flags(const char *path, const struct sfs_session_config *cfg)
{
        struct mount_attr attr = { .attr_set = cfg->attr_set, .attr_clr = cfg->attr_clr };

        if (!cfg->attr_set && !cfg->attr_clr)
                return 0;
        if (mount_setattr(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &attr, sizeof(attr)) < 0) {
                int r = negative_errno();
                LOG("%s: cannot set the per-mount flags asked for (noatime, nodiratime, "
                    "relatime, nosymfollow): %s%s\n", path, strerror(-r),
                    r == -EPERM ? " (setting them needs root)" : "");
                return r;
        }
        return 0;
}

int sfs_session_check(const char *path, const struct sfs_session_config *cfg, bool ro,
                      uint64_t *dev)
{
        _cleanup_close_ int pinned = -1;
        struct mc_policy pol;
        struct mc_verdict v;
        struct statx stx;
        int r;

        r = set_mount_flags(path, cfg);
        if (r < 0)
                return r;
        mc_policy_preset(&pol, "snapfs");
        pol.require |= required_options(cfg->attr_set, cfg->attr_clr);
        pol.owner = (uint32_t)getuid();
        /* Our own mount, judged for its flags and its place: whether a client may trust a
         * mount of this uid, or of this user namespace, is the client's decision. */
        pol.insecure_own_mount = true;
        pol.trust_user_namespace = true;
        pol.probe_transport = false;
        if (ro)
                mc_policy_set(&pol, "ro", "");
        r = mc_check_path(path, &pol, MC_BACKEND_AUTO, &v, &pinned);
        if (r < 0) {
                LOG("%s: cannot check the new mount: %s\n", path, strerror(-r));
                return r;
        }
        if (!v.compliant) {
                print_findings(path, &v);
                return 1;
        }
        /* The binding's dev is the superblock's, read from the mount that was judged.
         * AT_STATX_DONT_SYNC: answered by the VFS, no GETATTR. */
        if (statx(pinned, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0) {
                r = negative_errno();
                LOG("%s: statx: %s\n", path, strerror(-r));
                return r;
        }
        *dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        return 0;
}

/* Reads and answers the kernel's first request, INIT, before any worker thread runs. Once it
 * returns, the kernel has applied INIT's reply: the one point where raising the readahead
 * sticks (the reply's max_readahead would clamp anything set earlier back to 128 KiB).
 * 0, or a negative errno; 0 also when a signal ended the session first. */
static int answer_init(struct fuse_session *se)
{
        struct fuse_buf buf = { .mem = NULL };
        int r;

        do
                r = fuse_session_receive_buf(se, &buf);
        while (r == -EINTR && !fuse_session_exited(se));
        if (r > 0)
                fuse_session_process_buf(se, &buf);
        free(buf.mem);
        return r < 0 && r != -EINTR ? r : 0;
}

/* Answers INIT, then raises the readahead of the mount dev (root only). 0, also when the
 * session was ended first; or a negative errno, said. */
static int session_init(struct fuse_session *se, const struct sfs_ops_ctx *ctx, uint64_t dev,
                        bool debug)
{
        int r;

        /* A connection taken over: its INIT is replayed, and the kernel applied the
         * readahead the first server set long ago. */
        r = sfs_conn_resume(se, ctx);
        if (r <= 0) {
                if (r < 0)
                        LOG("the INIT of the connection taken over was refused: %s\n",
                            strerror(-r));
                return r;
        }
        r = answer_init(se);
        if (r < 0) {
                LOG("no INIT from the kernel: %s\n", strerror(-r));
                return r;
        }
        /* A sequential reader's READ requests are as large as the readahead window: 128 KiB
         * by default, 1 MiB here, a quarter of the round trips for a cold read. Only root
         * may; anyone else keeps the default. */
        if (ctx->initialized && geteuid() == 0) {
                r = sfs_set_read_ahead(dev, SFS_READ_AHEAD_KB);
                if (r < 0 && debug)
                        LOG("cannot raise the readahead: %s\n", strerror(-r));
        }
        return 0;
}

/* Serves with up to max_threads workers (0: libfuse's default) until the session exits: 0,
 * or a negative errno. */
static int session_loop(struct fuse_session *se, unsigned max_threads)
{
        struct fuse_loop_config *lc;
        int r;

        /* Asked to stop before it started (the read view, stopped during INIT). */
        if (fuse_session_exited(se))
                return 0;
        lc = fuse_loop_cfg_create();
        if (!lc)
                return -ENOMEM;
        /* Every worker reads the connection's own descriptor, which the keeper holds too
         * (conn.h): a request read but not answered when the process dies stays on that
         * descriptor's processing queue, and FUSE_NOTIFY_RESEND gives it to the successor.
         * A cloned descriptor (FUSE_DEV_IOC_CLONE) is this process's alone: at its death the
         * kernel ends what it had read with ECONNABORTED. */
        fuse_loop_cfg_set_clone_fd(lc, 0);
        if (max_threads)
                fuse_loop_cfg_set_max_threads(lc, max_threads);
        r = fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
        /* The loop ends with 0 on a clean exit and with the signal number for SIGTERM/INT. */
        return r < 0 ? r : 0;
}

static void *serving_thread(void *arg)
{
        struct sfs_serving *s = arg;

        /* Named before libfuse starts its workers from this thread: they inherit it, so the
         * threads of a session can be counted from outside. */
        if (s->name)
                pthread_setname_np(pthread_self(), s->name);
        s->result = session_init(s->se, s->ctx, s->dev, s->debug);
        if (s->result == 0) {
                if (s->ready)
                        s->ready(s->arg);
                s->result = session_loop(s->se, s->max_threads);
        }
        __atomic_store_n(&s->ended, true, __ATOMIC_RELEASE);
        if (s->done_fd >= 0 && write(s->done_fd, "", 1) < 0)
                LOG("cannot report the end of the loop: %m\n");
        return NULL;
}

/* libfuse's loop waits in sem_wait or read; a signal without SA_RESTART is what wakes it to
 * see that the session has exited. */
static void wake(int sig)
{
        (void)sig;
}

int sfs_serving_start(struct sfs_serving *s)
{
        struct sigaction sa = { .sa_handler = wake };
        int r;

        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR2, &sa, NULL) < 0)
                return -errno;
        /* Only its wake-up: SIGTERM, SIGINT and SIGHUP are the main thread's. */
        r = pthread_create_quiet(&s->thread, serving_thread, s, SIGUSR2);
        if (r)
                return -r;
        /* Named here too: by the time this returns (the view answered as made). */
        if (s->name)
                pthread_setname_np(s->thread, s->name);
        s->running = true;
        return 0;
}

int sfs_serving_stop(struct sfs_serving *s)
{
        if (!s->running)
                return 0;
        fuse_session_exit(s->se);
        /* The loop checks whether the session has exited, then waits: a wake-up that lands
         * between the two is lost, and so is one sent before the thread blocks. Repeat it
         * until the thread is gone. */
        for (;;) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 50 * 1000 * 1000;
                if (until.tv_nsec >= 1000000000) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000;
                }
                pthread_kill(s->thread, SIGUSR2);
                if (pthread_timedjoin_np(s->thread, NULL, &until) == 0)
                        break;
        }
        s->running = false;
        return s->result;
}

bool sfs_serving_ended(const struct sfs_serving *s)
{
        return __atomic_load_n(&s->ended, __ATOMIC_ACQUIRE);
}

int sfs_clear_dead_mount(const char *path)
{
        struct mc_policy pol;
        struct mc_verdict v;
        struct statx stx;
        pid_t pid;
        int r, status;

        /* AT_STATX_FORCE_SYNC: a GETATTR that must reach the daemon. A plain stat() is
         * answered from attributes the kernel cached while the daemon lived. */
        if (statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC, STATX_TYPE | STATX_MODE, &stx) == 0)
                return 1;
        if (errno != ENOTCONN)
                return negative_errno();
        mc_policy_preset(&pol, "snapfs");
        pol.check_owner = false;
        r = mc_check_path(path, &pol, MC_BACKEND_AUTO, &v, NULL);
        if (r < 0 || !mc_verdict_has(&v, MC_TRANSPORT_NOT_CONNECTED) ||
            mc_verdict_has(&v, MC_FSTYPE))
                return -EPERM;
        if (umount2(path, MNT_DETACH) == 0)
                return 0;
        /* Unprivileged: fusermount3 may unmount what this uid mounted. */
        pid = fork();
        if (pid == 0) {
                execlp("fusermount3", "fusermount3", "-u", "-z", "--", path, (char *)NULL);
                _exit(127);
        }
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
                return -EIO;
        return 0;
}
