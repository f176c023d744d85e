/* SPDX-License-Identifier: MIT */
/* The daemon's life: clear a stale mount if asked, open the audit log and --store, mount and
 * check, daemonize, serve the mount (and the read view) until a signal, sweeping expired
 * staging files meanwhile, then unmount. */
#include "fs/daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fs/base/audit.h"
#include "fs/config/conffile.h"
#include "mountcheck/mountcheck.h"
#include "fs/base/fdstore.h"
#include "fs/base/inostate.h"
#include "fs/base/notify.h"
#include "fs/base/trustpath.h"
#include "fs/base/worker.h"
#include "fs/store/ocistore.h"
#include "fs/fuse/conn.h"
#include "fs/fuse/passthrough.h"
#include "fs/fuse/ops.h"
#include "fs/control/protocol.h"
#include "fs/scopes/registry.h"
#include "fs/fuse/scopeview.h"
#include "fs/fuse/session.h"
#include "fs/control/status.h"
#include "fs/daemon/supervisor.h"
#include "common/util.h"
#include "snapshot/oci.h"
#include "snapshot/trust.h"
#include "fs/fuse/readview.h"


/* A FUSE daemon that died leaves its mount answering ENOTCONN. Mounting over it would stack
 * (and be refused); clearing it is allowed only on request and only for a snapfs mount. */
static int handle_stale(const struct sfs_daemon_config *cfg, const char *path)
{
        struct statx stx;
        int r;

        /* AT_STATX_FORCE_SYNC: a GETATTR that must reach the daemon. A plain stat() is
         * answered from attributes the kernel cached while the daemon lived, so a dead mount
         * whose root anyone had looked at passed for alive (and the new mount stacked). */
        if (statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC, STATX_TYPE | STATX_MODE, &stx) == 0)
                return 0;
        if (errno != ENOTCONN) {
                LOG("%s: %m\n", path);
                return SFS_EXIT_ERROR;
        }
        if (!cfg->replace_stale) {
                LOG("%s: a dead FUSE mount is in the way (transport endpoint is not connected).\n"
                    "Clear it with 'fusermount3 -u %s' (or 'umount -l %s'), or pass "
                    "--replace-stale to let snapfs clear a dead snapfs mount itself.\n",
                    path, path, path);
                return SFS_EXIT_REFUSED;
        }
        r = sfs_clear_dead_mount(path);
        if (r == -EPERM) {
                LOG("%s: the dead mount there is not a snapfs mount; not clearing it\n", path);
                return SFS_EXIT_REFUSED;
        }
        if (r < 0) {
                LOG("%s: could not clear the dead snapfs mount\n", path);
                return SFS_EXIT_ERROR;
        }
        LOG("%s: cleared a dead snapfs mount\n", path);
        return 0;
}

/* An SFS_EXIT_* code for what a session or view setup returned: 1 not compliant, < 0 error. */
static int exit_code(int r)
{
        return r > 0 ? SFS_EXIT_REFUSED : r < 0 ? SFS_EXIT_ERROR : SFS_EXIT_OK;
}

/* Removes staging files left behind by clients that died between write and rename, on the
 * main mount and in every scope's view. */
struct sweeper {
        struct sfs_tree *tree;
        struct sfs_registry *reg;
        uint64_t period_ms;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stop;
        bool running;
};

static void *sweep_loop(void *arg)
{
        struct sweeper *sw = arg;
        struct timespec deadline;

        pthread_mutex_lock(&sw->lock);
        while (!sw->stop) {
                clock_gettime(CLOCK_MONOTONIC, &deadline);
                deadline.tv_sec += (time_t)(sw->period_ms / 1000);
                deadline.tv_nsec += (long)(sw->period_ms % 1000) * 1000000;
                if (deadline.tv_nsec >= 1000000000) {
                        deadline.tv_sec++;
                        deadline.tv_nsec -= 1000000000;
                }
                pthread_cond_timedwait(&sw->cond, &sw->lock, &deadline);
                if (sw->stop)
                        break;
                pthread_mutex_unlock(&sw->lock);
                sfs_tree_expire_staging(sw->tree, sfs_now_ms());
                sfs_registry_expire_staging(sw->reg, sfs_now_ms());
                pthread_mutex_lock(&sw->lock);
        }
        pthread_mutex_unlock(&sw->lock);
        return NULL;
}

static void sweeper_start(struct sweeper *sw, struct sfs_tree *tree, struct sfs_registry *reg,
                          uint64_t ttl_ms)
{
        pthread_condattr_t ca;

        *sw = (struct sweeper){ .tree = tree, .reg = reg };
        if (!ttl_ms)
                return;
        /* A quarter of the TTL, between 50 ms and 10 s: an idle file goes at most 25% late. */
        sw->period_ms = ttl_ms / 4 < 50 ? 50 : ttl_ms / 4 > 10000 ? 10000 : ttl_ms / 4;
        pthread_mutex_init(&sw->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&sw->cond, &ca);
        pthread_condattr_destroy(&ca);
        if (pthread_create_quiet(&sw->thread, sweep_loop, sw, 0) == 0)
                sw->running = true;
        else
                LOG("cannot start the staging sweeper; --staging-ttl is not enforced\n");
}

static void sweeper_stop(struct sweeper *sw)
{
        if (!sw->running)
                return;
        pthread_mutex_lock(&sw->lock);
        sw->stop = true;
        pthread_cond_signal(&sw->cond);
        pthread_mutex_unlock(&sw->lock);
        pthread_join(sw->thread, NULL);
        pthread_cond_destroy(&sw->cond);
        pthread_mutex_destroy(&sw->lock);
}

/* ---- daemonizing: the caller returns once the mount serves ---- */

static int ready_fd = -1; /* the daemonized child's report to its waiting parent */

/* Forks. The parent waits for the child's one-byte report (its exit code: 0 once the mount
 * serves) and _exits with it (EOF, a child that died first: SFS_EXIT_ERROR), so `snapfs mount`
 * and mount(8) return when requests are answered, or fail with the daemon's own code. The
 * child starts a session of its own in /, and returns 0. -errno when pipe or fork fail. */
static int daemonize(void)
{
        unsigned char code = SFS_EXIT_ERROR;
        int p[2];
        pid_t pid;
        ssize_t n;

        if (pipe2(p, O_CLOEXEC) < 0)
                return negative_errno();
        pid = sfs_fork_with_pair(p);
        if (pid < 0)
                return pid;
        if (pid > 0) {
                close(p[1]);
                do
                        n = read(p[0], &code, 1);
                while (n < 0 && errno == EINTR);
                /* _exit: the mount and its session belong to the child now. */
                _exit(n == 1 ? code : SFS_EXIT_ERROR);
        }
        close(p[0]);
        ready_fd = p[1];
        if (setsid() < 0 || chdir("/") < 0)
                LOG("cannot detach: %m\n");
        return 0;
}

/* Gives the waiting parent its exit code (once), then detaches standard input, output and
 * error: from here on a daemon speaks only through its audit sink. */
static void report_to_parent(int code)
{
        unsigned char c = (unsigned char)code;
        int null;

        if (ready_fd < 0)
                return;
        if (write(ready_fd, &c, 1) != 1)
                LOG("cannot report to the waiting parent: %m\n");
        ready_fd = safe_close(ready_fd);
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0)
                return;
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
                close(null);
}

/* SIGTERM and SIGINT end the daemon. Their handler only writes a byte to a pipe the main
 * thread waits on, and so does the serving thread when the kernel ends the session (an
 * unmount): the byte stays there until read, so no stop is lost however it falls. libfuse's
 * own handlers set a flag its loop checks before it waits, and a signal landing between the
 * check and the wait was lost: the daemon then never stopped. */
static int stop_pipe[2] = { -1, -1 };
/* SIGUSR1 asks for a hand-over instead (docs/deployment.md, "Upgrading"): the loops end, the
 * mounts stay, and a successor takes them over. */
static const int stop_signals[] = { SIGTERM, SIGINT, SIGUSR1 };
#define STOP_HANDOVER 'H'

static void on_stop_signal(int sig)
{
        int saved = errno;
        char c = sig == SIGUSR1 ? STOP_HANDOVER : 0;

        if (write(stop_pipe[1], &c, 1) < 0) {
                /* Full: a stop is already waiting to be read. */
        }
        errno = saved;
}

/* 0, or -errno. */
static int stop_signals_install(void)
{
        struct sigaction sa = { .sa_handler = on_stop_signal };

        if (pipe2(stop_pipe, O_CLOEXEC) < 0)
                return negative_errno();
        /* The handler must never block: a full pipe already holds a stop. */
        if (fcntl(stop_pipe[1], F_SETFL, O_NONBLOCK) < 0)
                return negative_errno();
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
                if (sigaction(stop_signals[i], &sa, NULL) < 0)
                        return negative_errno();
        /* A client gone mid-reply must not kill the daemon. */
        signal(SIGPIPE, SIG_IGN);
        return 0;
}

static void stop_signals_remove(void)
{
        for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
                signal(stop_signals[i], SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        for (int i = 0; i < 2; i++)
                stop_pipe[i] = safe_close(stop_pipe[i]);
}

/* Whether the stop read is a hand-over. */
static bool wait_for_stop(void)
{
        char c = 0;

        while (read(stop_pipe[0], &c, 1) < 0 && errno == EINTR)
                ;
        return c == STOP_HANDOVER;
}

/* ---- --pid-file ---- */

static int pid_fd = -1;
static char *pid_path; /* absolute: the daemon's working directory becomes / */
static bool pid_written;

/* Opens --pid-file before anything is mounted, so a bad path fails the mount: O_NOFOLLOW and
 * a regular file only (a symlink planted there must not make us truncate another file), on
 * no kernel interface, and written once as it will be written (then emptied until the
 * serving pid is known): a file that opens for writing yet takes no write
 * (/proc/self/status, a full disk) fails here, not after the mount was made. 0, or an
 * SFS_EXIT_* code (printed). */
static int pidfile_open(const char *file)
{
        char line[32];
        struct statfs sfs;
        struct stat st;
        int n;

        pid_path = path_make_absolute(file);
        if (!pid_path) {
                LOG("--pid-file %s: %m\n", file);
                return SFS_EXIT_ERROR;
        }
        pid_fd = open(pid_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        if (pid_fd < 0 || fstat(pid_fd, &st) < 0 || fstatfs(pid_fd, &sfs) < 0) {
                LOG("--pid-file %s: %m; nothing mounted\n", file);
                return errno == ELOOP ? SFS_EXIT_REFUSED : SFS_EXIT_ERROR;
        }
        if (!S_ISREG(st.st_mode) || sfs_trustpath_kernel_fs(&sfs)) {
                LOG("--pid-file %s: refused: %s; nothing mounted\n", file,
                    S_ISREG(st.st_mode) ? "a kernel interface, not a file"
                                        : "not a regular file");
                return SFS_EXIT_REFUSED;
        }
        /* Another uid's file, planted in a sticky directory after the path was judged: its
         * owner chose what the daemon truncates and writes. */
        if (st.st_uid != geteuid()) {
                LOG("--pid-file %s: refused: owned by uid %u, not this uid (%u): remove it, "
                    "or give a path in a directory of root or this uid alone; nothing "
                    "mounted\n", file, (unsigned)st.st_uid, (unsigned)geteuid());
                return SFS_EXIT_REFUSED;
        }
        n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
        if (ftruncate(pid_fd, 0) < 0 || pwrite(pid_fd, line, (size_t)n, 0) != n ||
            ftruncate(pid_fd, 0) < 0) {
                LOG("--pid-file %s: cannot be written: %m; nothing mounted\n", file);
                return SFS_EXIT_ERROR;
        }
        return 0;
}

/* Once the mount serves: the pid of the process that stays for the mounts' life, the
 * supervisor's when there is one (it forwards every signal to the serving process), else
 * the serving process's. */
static void pidfile_write(pid_t pid)
{
        char line[32];
        int n = snprintf(line, sizeof(line), "%d\n", (int)pid);

        if (pid_fd < 0)
                return;
        if (ftruncate(pid_fd, 0) < 0 || pwrite(pid_fd, line, (size_t)n, 0) != n)
                LOG("--pid-file %s: %m\n", pid_path);
        pid_written = true;
}

/* At exit: the file goes, unless it never held our pid (the mount failed before). */
static void pidfile_remove(void)
{
        if (pid_fd >= 0 && pid_written)
                unlink(pid_path);
        pid_fd = safe_close(pid_fd);
        free(pid_path);
        pid_path = NULL;
}

/* Everything one run of the daemon holds, from its preparation to its tear-down. */
struct daemon {
        struct sfs_daemon_config conf; /* owns what a config file gave */
        const struct sfs_daemon_config *cfg;
        char *path;
        struct sfs_tree_config tc;
        struct sfs_session_config sc;
        struct sfs_ops_ctx ctx;
        struct sfs_view view;
        struct sfs_audit *audit;
        struct sfs_ocistore *store, *runtime;
        struct snap_trust *trust;
        struct sfs_inostate *inostate;
        struct fuse_session *se;
        struct sfs_scopeviews *views;
        struct sfs_registry *reg;
        uint64_t dev;
        int supervisor;        /* the socket to this process's supervisor, or -1 */
        bool keeper;           /* a supervisor or systemd keeps the connections */
        char *cwd;             /* the start directory, where a successor starts too */
        unsigned handed;       /* connections handed to this process */
        bool handover;         /* ending for a successor: nothing is unmounted */
        bool signals;          /* the stop signals are installed */
};

/* INIT is answered and the self-check passed before it: the mount serves. READY=1 for a
 * service manager (a daemonized process names the process that stays, its supervisor, since
 * its manager watched the parent), and a daemonized child's waiting parent may return; a
 * supervisor learns that its child serves. */
static void announce_ready(void *arg)
{
        const struct daemon *d = arg;
        pid_t main_pid = d->supervisor >= 0 ? getppid() : getpid();
        char state[64] = "READY=1";
        int r;

        if (!d->cfg->foreground)
                snprintf(state, sizeof(state), "MAINPID=%d\nREADY=1", (int)main_pid);
        pidfile_write(main_pid);
        r = sfs_notify(state);
        if (r < 0)
                LOG("$NOTIFY_SOCKET: %s\n", strerror(-r));
        if (d->supervisor >= 0 && sfs_supervisor_serving(d->supervisor) < 0)
                LOG("cannot tell the supervisor that this process serves: %m\n");
        report_to_parent(SFS_EXIT_OK);
}

/* ---- the service manager's watchdog ---- */

/* WATCHDOG=1 is sent only while the main mount's loop answers: each ping follows a request
 * only that loop answers (a GETATTR of the root, AT_STATX_FORCE_SYNC). A stuck daemon (a
 * deadlock, a stopped process, a disk that never returns) stops pinging, systemd kills it
 * (WatchdogSec=), and a successor takes the mounts over and answers what waited; no kernel
 * request timeout, which would abort the connection and every sandbox's bind with it. */
struct watchdog {
        const char *path;
        long period_ms;
        int stop[2];
        pthread_t thread;
        bool running;
};

static void *watchdog_loop(void *arg)
{
        struct watchdog *w = arg;
        struct pollfd p = { .fd = w->stop[0], .events = POLLIN };
        struct statx stx;

        for (;;) {
                int r = poll(&p, 1, (int)w->period_ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r != 0)
                        break;
                statx(AT_FDCWD, w->path, AT_STATX_FORCE_SYNC, STATX_TYPE, &stx);
                sfs_notify("WATCHDOG=1");
        }
        return NULL;
}

/* Starts pinging when the service manager asked for it ($WATCHDOG_USEC, for this process
 * when $WATCHDOG_PID says). */
static void watchdog_start(struct watchdog *w, const char *path)
{
        const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
        unsigned long long us = usec ? strtoull(usec, NULL, 10) : 0;

        *w = (struct watchdog){ .path = path, .stop = { -1, -1 } };
        if (!us || (pid && strtol(pid, NULL, 10) != (long)getpid()))
                return;
        /* Half the interval, as sd_watchdog_enabled(3) advises. */
        w->period_ms = us / 2000 ? (long)(us / 2000) : 1;
        if (pipe2(w->stop, O_CLOEXEC) < 0 ||
            pthread_create_quiet(&w->thread, watchdog_loop, w, 0) != 0) {
                LOG("cannot start the watchdog pings: %m; the service manager will kill the "
                    "daemon\n");
                return;
        }
        w->running = true;
}

/* Before the main loop stops: a ping's request in flight is still answered. */
static void watchdog_stop(struct watchdog *w)
{
        if (w->running) {
                if (write(w->stop[1], "", 1) < 0) {
                        /* The thread polls for POLLHUP too once the pipe closes below. */
                }
                pthread_join(w->thread, NULL);
        }
        safe_close(w->stop[0]);
        safe_close(w->stop[1]);
        w->running = false;
}

/* Serves the main mount from a thread of its own until SIGTERM or SIGINT (or SIGUSR1, a
 * hand-over, when a supervisor keeps the connections), or until the kernel ends the
 * session. An SFS_EXIT_* code. */
static int serve(struct daemon *d)
{
        struct sfs_serving main_mount = {
                .se = d->se,
                .ctx = &d->ctx,
                .dev = d->dev,
                .max_threads = d->cfg->max_threads,
                .debug = d->cfg->debug,
                .ready = announce_ready,
                .arg = d,
                .done_fd = stop_pipe[1],
        };
        int r;

        struct watchdog wd;

        r = sfs_serving_start(&main_mount);
        if (r < 0) {
                LOG("cannot serve: %s\n", strerror(-r));
                return SFS_EXIT_ERROR;
        }
        watchdog_start(&wd, d->path);
        for (;;) {
                bool handover = wait_for_stop();
                /* Without a keeper a hand-over would leave the mounts with nobody to serve
                 * them: SIGUSR1 is ignored then. */
                if (!handover || d->keeper) {
                        d->handover = handover && !sfs_serving_ended(&main_mount);
                        break;
                }
                LOG("SIGUSR1: nothing keeps the mounts for a successor; not handing them "
                    "over\n");
        }
        watchdog_stop(&wd);
        r = sfs_serving_stop(&main_mount);
        if (!d->handover)
                sfs_notify("STOPPING=1");
        if (d->handover)
                return SFS_EXIT_HANDOVER;
        return r < 0 ? SFS_EXIT_ERROR : SFS_EXIT_OK;
}

/* Why the audit log was not opened, said so an operator can fix it; nothing is mounted. */
static int audit_refused(const char *path, int r)
{
        switch (r) {
        case -EINVAL:
                LOG("--audit-log %s: refused: not a regular file (a FIFO or device could block "
                    "the log writer); nothing mounted\n", path);
                return SFS_EXIT_REFUSED;
        case -EPERM:
                LOG("--audit-log %s: refused: writable by group or others, or not owned by "
                    "this uid (they could rewrite the log); nothing mounted\n", path);
                return SFS_EXIT_REFUSED;
        case -ELOOP:
                LOG("--audit-log %s: refused: a symbolic link; nothing mounted\n", path);
                return SFS_EXIT_REFUSED;
        case -EOPNOTSUPP:
                LOG("--audit-log %s: refused: a kernel interface (/proc, /sys), not a file; "
                    "nothing mounted\n", path);
                return SFS_EXIT_REFUSED;
        default:
                LOG("--audit-log %s: %s; nothing mounted\n", path ? path : "(stderr)",
                    strerror(-r));
                return SFS_EXIT_ERROR;
        }
}

/* ---- --store: what the start finds ---- */

struct store_ctx {
        struct sfs_tree *tree;
        struct sfs_audit *audit;
        const char *dir;
};

static void store_corrupt(void *ctx, const char *hex, int err)
{
        struct store_ctx *sc = ctx;

        LOG("--store %s: blob %s does not hash to its name (%s); set aside in %s/%s/, "
            "not served\n", sc->dir, hex, strerror(-err), sc->dir, SFS_OCISTORE_CORRUPT_DIR);
        sfs_audit_emit(sc->audit, &(struct sfs_audit_event){
                                          .event = "store-blob-corrupt",
                                          .uid = getuid(),
                                          .pid = getpid(),
                                          .digest = hex,
                                          .err = -err,
                                  });
}

static void store_warn(void *ctx, const char *hex, const char *what, int err)
{
        struct store_ctx *sc = ctx;
        LOG("--store %s: %s: %s (%s)\n", sc->dir, hex, what, strerror(-err));
}

static int store_restore_tree(void *ctx, const struct snap_digest *d, void *data, size_t len,
                              const struct sfs_ocistore_meta *meta)
{
        return sfs_tree_restore(((struct store_ctx *)ctx)->tree, d, data, len, meta->title,
                                meta->holders, meta->n_holders, meta->unheld,
                                &meta->created);
}

/* Opens --store (or --runtime-store, dir) and serves its snapshots again: 0, or an SFS_EXIT_*
 * code (printed). */
static int store_start(const struct sfs_daemon_config *cfg, const char *dir,
                       struct sfs_ocistore *store, struct sfs_tree *tree,
                       struct sfs_audit *audit)
{
        struct store_ctx sc = { .tree = tree, .audit = audit, .dir = dir };
        struct sfs_ocistore_hooks hooks = {
                .restore = store_restore_tree,
                .corrupt = store_corrupt,
                .warn = store_warn,
                .ctx = &sc,
        };
        int r = sfs_ocistore_load(store, cfg->tree.max_snapshot_size, &hooks);

        if (r < 0) {
                LOG("%s: %s\n", dir, strerror(-r));
                return SFS_EXIT_ERROR;
        }
        return 0;
}

static void scope_warn(void *ctx, const char *msg)
{
        const char *dir = ctx;
        LOG("%s: %s\n", dir, msg);
}

/* The scope registry and its views, their scopes back from --store: 0, or an SFS_EXIT_* code
 * (printed). */
static int scopes_start(const struct sfs_daemon_config *cfg, const char *mountpoint,
                        const char *read_view, struct sfs_tree *tree,
                        struct sfs_ocistore *store, struct sfs_ocistore *runtime,
                        struct sfs_audit *audit, struct sfs_scopeviews **views,
                        struct sfs_registry **reg)
{
        _cleanup_free_ char *store_dir = cfg->store ? path_make_absolute(cfg->store) : NULL;
        _cleanup_free_ char *runtime_dir =
                cfg->runtime_store ? path_make_absolute(cfg->runtime_store) : NULL;
        int r = sfs_scopeviews_new(cfg->scope_threads, cfg->debug, views);

        if (r == 0)
                r = sfs_registry_new(&(struct sfs_registry_config){
                                             .main = tree,
                                             .store = store,
                                             .scope_store = runtime,
                                             .audit = audit,
                                             .views = sfs_scopeviews_ops(*views),
                                             .uid = getuid(),
                                             .gid = getgid(),
                                             .max_scopes = cfg->max_scopes,
                                             .mountpoint = mountpoint,
                                             .read_view = read_view,
                                             .store_dir = store_dir,
                                             .runtime_dir = runtime_dir,
                                     },
                                     reg);
        if (r == 0)
                r = sfs_registry_restore(*reg, scope_warn,
                                         (void *)(cfg->runtime_store ? cfg->runtime_store
                                                                     : cfg->store));
        if (r < 0) {
                LOG("scopes: %s\n", strerror(-r));
                return SFS_EXIT_ERROR;
        }
        /* The control channel: MNT/.control executes requests from here on. */
        sfs_tree_set_control(tree, sfs_protocol_exec, *reg);
        sfs_tree_set_scope_grant(tree, sfs_registry_grant_hook, *reg);
        return 0;
}

/* Writes "(pid N)" for a known holder, else nothing. */
static const char *holder_text(pid_t pid, char *buf, size_t size)
{
        if (pid > 0)
                snprintf(buf, size, " (pid %d)", (int)pid);
        else
                buf[0] = '\0';
        return buf;
}

static int store_open(const struct sfs_daemon_config *cfg, struct sfs_ocistore **out)
{
        struct sfs_ocistore_why why;
        char pid[32];
        int r = sfs_ocistore_open(cfg->store, 0, out, &why);

        if (r == -EWOULDBLOCK) {
                /* A daemon unmounted a moment ago may still be freeing what it served
                 * (seconds for a large store): wait for it, a bounded time. */
                LOG("--store %s: another snapfs daemon%s holds this store; waiting up to %u s "
                    "for it to exit\n", cfg->store, holder_text(why.holder, pid, sizeof(pid)),
                    SFS_STORE_WAIT_MS / 1000);
                r = sfs_ocistore_open(cfg->store, SFS_STORE_WAIT_MS, out, &why);
        }
        if (r == -EREMOTE) {
                LOG("--store %s: refused: on a %s filesystem; a store must be on a local "
                    "filesystem, whose fsync and rename this host can rely on\n",
                    cfg->store, why.fstype);
                return SFS_EXIT_REFUSED;
        }
        if (r == -EWOULDBLOCK) {
                LOG("--store %s: refused: another snapfs daemon%s uses this store\n", cfg->store,
                    holder_text(why.holder, pid, sizeof(pid)));
                return SFS_EXIT_REFUSED;
        }
        if (r == -EPERM) {
                LOG("--store %s: refused: %s%s%s is not owned by this uid, or is writable by "
                    "group or others (they could plant snapshots served at the next start, or "
                    "move blobs away)\n", cfg->store, cfg->store, why.path ? "/" : "",
                    why.path ? why.path : "");
                return SFS_EXIT_REFUSED;
        }
        if (r < 0) {
                LOG("--store %s: %s\n", cfg->store, strerror(-r));
                return SFS_EXIT_ERROR;
        }
        return 0;
}

/* --runtime-store: on a RAM filesystem, paired with --store. 0, or an SFS_EXIT_* code
 * (printed). */
static int runtime_open(const struct sfs_daemon_config *cfg, struct sfs_ocistore *store,
                        struct sfs_ocistore **out)
{
        struct sfs_ocistore_why why;
        char pid[32];
        int r = sfs_ocistore_open_runtime(cfg->runtime_store, store, SFS_STORE_WAIT_MS, out,
                                          &why);

        if (r == -EMEDIUMTYPE) {
                LOG("--runtime-store %s: refused: not on a RAM filesystem (tmpfs, ramfs): a "
                    "scope's content must never reach a disk\n", cfg->runtime_store);
                return SFS_EXIT_REFUSED;
        }
        if (r == -EWOULDBLOCK) {
                LOG("--runtime-store %s: refused: another snapfs daemon%s uses it\n",
                    cfg->runtime_store, holder_text(why.holder, pid, sizeof(pid)));
                return SFS_EXIT_REFUSED;
        }
        if (r == -EPERM || r == -EREMOTE) {
                LOG("--runtime-store %s: refused: %s\n", cfg->runtime_store,
                    r == -EPERM ? "not owned by this uid, or writable by group or others"
                                : "on a remote filesystem");
                return SFS_EXIT_REFUSED;
        }
        if (r < 0) {
                LOG("--runtime-store %s: %s\n", cfg->runtime_store, strerror(-r));
                return SFS_EXIT_ERROR;
        }
        return 0;
}

/* ---- SIGHUP: reopen the audit log ---- */

static struct sfs_audit *hup_audit;

static void on_hup(int sig)
{
        (void)sig;
        /* Before the log is open there is nothing to reopen: it is opened afterwards anyway. */
        sfs_audit_request_reopen(__atomic_load_n(&hup_audit, __ATOMIC_ACQUIRE)); /* signal-safe */
}

/* SIGHUP must not end the daemon as SIGTERM does: logrotate's postrotate would stop the
 * service. SIGHUP reopens the audit log instead (after a rotation the old file keeps its
 * lines, the new one gets the next); only SIGTERM, SIGINT and umount stop the daemon. The
 * handler is the first thing the daemon sets up (the attack: `snapfs mount -f M & kill -HUP
 * $!` killed it by default action while it loaded its store), and a daemonized parent that
 * waits for its child keeps it. audit is what it reopens from then on (NULL: nothing yet).
 * With done, SIGHUP is ignored from then on (the audit is about to be freed). 0 or -errno. */
static int reopen_on_hup(struct sfs_audit *audit, bool done)
{
        /* No SA_RESTART: with it, a SIGTERM delivered together with a SIGHUP had a futex
         * wait restarted rather than interrupted. Every wait here retries on EINTR. */
        struct sigaction sa = { .sa_flags = 0 };

        sigemptyset(&sa.sa_mask);
        sa.sa_handler = done ? SIG_IGN : on_hup;
        __atomic_store_n(&hup_audit, done ? NULL : audit, __ATOMIC_RELEASE);
        if (sigaction(SIGHUP, &sa, NULL) < 0)
                return negative_errno();
        return 0;
}

/* ---- the configuration the daemon starts with ---- */

/* cfg->trust_keys into *out (NULL without keys): 0, or an SFS_EXIT_* code (printed). */
static int trust_load(const struct sfs_daemon_config *cfg, struct snap_trust **out)
{
        *out = NULL;
        for (unsigned i = 0; i < cfg->n_trust_keys; i++) {
                EVP_PKEY *key = NULL;
                int r = snap_oci_key_load(cfg->trust_keys[i], false, &key);

                if (r == 0 && !*out)
                        r = snap_trust_new(out);
                if (r == 0)
                        r = snap_trust_add_key(*out, key);
                EVP_PKEY_free(key);
                if (r == -EKEYREJECTED) {
                        /* A private key where the public one belongs: say which file to give
                         * instead, not the kernel's words for EKEYREJECTED. */
                        const char *k = cfg->trust_keys[i];
                        LOG("--trust-key: %s is a private key; give its public key instead "
                            "(snapfs keygen wrote it to %s.pub; `openssl pkey -in %s -pubout` "
                            "prints it)\n", k, k, k);
                        snap_trust_free(*out);
                        *out = NULL;
                        return SFS_EXIT_ERROR;
                }
                if (r < 0) {
                        LOG("--trust-key %s: %s; nothing mounted\n", cfg->trust_keys[i],
                            r == -EINVAL ? "not an Ed25519 key (PEM)" : strerror(-r));
                        snap_trust_free(*out);
                        *out = NULL;
                        return SFS_EXIT_ERROR;
                }
        }
        return 0;
}

/* --OPT path judged along its whole path (fs/base/trustpath.h) before the daemon reads or
 * writes it: 0 (a missing file is left to the option's own open, which reports or makes it),
 * or an SFS_EXIT_* code (printed). */
static int path_trusted(const char *opt, const char *path, unsigned flags)
{
        _cleanup_free_ char *abs = path_make_absolute(path);
        struct sfs_trustpath_why why;
        int r;

        if (!abs) {
                LOG("--%s %s: %m; nothing mounted\n", opt, path);
                return SFS_EXIT_ERROR;
        }
        r = sfs_trustpath_judge(abs, geteuid(), flags, &why);
        if (r == 0 || r == -ENOENT)
                return 0;
        LOG("--%s %s: refused: %s; nothing mounted\n", opt, path, why.message);
        return r == -EPERM || r == -ELOOP || r == -ENOTDIR || r == -EINVAL ? SFS_EXIT_REFUSED
                                                                           : SFS_EXIT_ERROR;
}

/* Every other path the daemon trusts, once the config file has named them. */
static int paths_trusted(const struct sfs_daemon_config *c)
{
        int r = 0;

        if (c->store)
                r = path_trusted("store", c->store, SFS_TRUSTPATH_MAY_BE_ABSENT);
        /* Every scope's content and state: swapped for a directory of another uid's, it would
         * hand that uid the secrets (or plant scopes and grants). */
        if (!r && c->runtime_store)
                r = path_trusted("runtime-store", c->runtime_store, SFS_TRUSTPATH_MAY_BE_ABSENT);
        if (!r && c->audit_log)
                r = path_trusted("audit-log", c->audit_log, SFS_TRUSTPATH_MAY_BE_ABSENT);
        if (!r && c->pid_file)
                r = path_trusted("pid-file", c->pid_file, SFS_TRUSTPATH_MAY_BE_ABSENT);
        for (unsigned i = 0; !r && i < c->n_trust_keys; i++)
                r = path_trusted("trust-key", c->trust_keys[i], 0);
        return r;
}

/* The config file, the rules between options and the derived defaults, into *c (a copy of
 * what the caller built): 0, or an SFS_EXIT_* code (printed). */
static int config_start(struct sfs_daemon_config *c)
{
        char why[640];
        unsigned line;
        int r;

        if (c->config && (r = path_trusted("config", c->config, 0)) != 0)
                return r;
        if (c->config) {
                r = sfs_conffile_load(c, c->config, &line, why, sizeof(why));
                if (r < 0 && line) {
                        LOG("%s:%u: %s; nothing mounted\n", c->config, line, why);
                        return SFS_EXIT_ERROR;
                }
                if (r < 0) {
                        LOG("--config %s: %s; nothing mounted\n", c->config, why);
                        return r == -ELOOP || r == -EPERM || r == -EINVAL ? SFS_EXIT_REFUSED
                                                                          : SFS_EXIT_ERROR;
                }
        }
        r = paths_trusted(c);
        if (r)
                return r;
        if (sfs_daemon_config_finish(c, why, sizeof(why)) < 0) {
                LOG("%s; nothing mounted\n", why);
                return SFS_EXIT_ERROR;
        }
        return 0;
}

/* ---- taking over (docs/design.md, "Taking over") ---- */

static int daemon_prepare_tree(struct daemon *d);

static int keep_supervisor(void *arg, int fd, int rec, unsigned id)
{
        const struct daemon *d = arg;
        return sfs_supervisor_keep(d->supervisor, fd, rec, id);
}

/* Under systemd: the unit's file-descriptor store keeps the pair, under the names a
 * successor finds in LISTEN_FDNAMES. */
static int keep_fdstore(void *arg, int fd, int rec, unsigned id)
{
        char name[64];
        int r;

        (void)arg;
        snprintf(name, sizeof(name), "snapfs-fuse-%u", id);
        r = sfs_fdstore_store(name, fd);
        snprintf(name, sizeof(name), "snapfs-rec-%u", id);
        return r < 0 ? r : sfs_fdstore_store(name, rec);
}

/* Whether a service manager keeps descriptors for this process: $FDSTORE, the store's size,
 * as systemd sets it from 254 on (the shipped unit sets it for 252), with $NOTIFY_SOCKET. */
static bool fdstore_offered(void)
{
        const char *n = getenv("FDSTORE"), *sock = getenv("NOTIFY_SOCKET");

        return n && sock && *sock && strtoul(n, NULL, 10) > 0;
}

/* What a supervisor handed this process: its socket, the inode numbers, the connections.
 * Only from a supervisor (LISTEN_PID names this very process, and only a process that holds
 * the connections could pass them); anything that is not what it claims is closed. 0, or an
 * SFS_EXIT_* code (printed). */
static int inherit(struct daemon *d)
{
        int r = sfs_fdstore_load(), fd;

        if (r < 0) {
                LOG("LISTEN_FDS: %s\n", strerror(-r));
                return SFS_EXIT_ERROR;
        }
        if (r == 0)
                return 0;
        d->supervisor = sfs_fdstore_take("snapfs-supervisor");
        fd = sfs_fdstore_take("snapfs-inodes");
        if (fd >= 0 && (r = sfs_inostate_open(fd, &d->inostate)) < 0)
                LOG("the inode numbers handed over are not valid (%s); serving with new "
                    "ones\n", strerror(-r));
        r = sfs_conn_inherit();
        if (r > 0)
                d->handed = (unsigned)r;
        sfs_fdstore_close_rest();
        return 0;
}

/* The audit line and the log line of a takeover, once every connection was adopted. */
static void takeover_report(struct daemon *d)
{
        char why[128];
        unsigned n = sfs_conn_adopted_count(), dropped = sfs_conn_drop_unadopted();

        if (!n)
                return;
        snprintf(why, sizeof(why), "%u connections taken over, takeover %u%s", n,
                 sfs_inostate_generation(d->inostate), dropped ? ", some ended since" : "");
        LOG("%s\n", why);
        sfs_audit_emit(d->audit, &(struct sfs_audit_event){
                                         .event = "takeover",
                                         .uid = getuid(),
                                         .pid = getpid(),
                                         .reason = why,
                                 });
}

/* ---- the daemon's life: prepare, mount, serve, tear down ---- */

/* Configuration, the stale mount, the pid file, the audit log, --store and the tree: 0, or an
 * SFS_EXIT_* code (printed). Nothing is mounted yet. */
static int daemon_prepare(struct daemon *d)
{
        const struct sfs_daemon_config *cfg = d->cfg;
        int r;

        r = config_start(&d->conf);
        if (r == 0)
                r = trust_load(cfg, &d->trust);
        if (r == 0)
                r = inherit(d);
        if (r)
                return r;
        d->tc = cfg->tree;
        d->tc.trust = d->trust;
        d->tc.single_uid = !cfg->allow_other;
        d->sc = (struct sfs_session_config){
                .allow_other = cfg->allow_other,
                .ro = cfg->tree.read_only,
                .debug = cfg->debug,
                .attr_set = cfg->mount_attr_set,
                .attr_clr = cfg->mount_attr_clr,
        };
        d->cwd = get_current_dir_name(); /* before daemonizing: a successor's arguments */
        d->path = path_make_absolute(cfg->mountpoint);
        if (!d->path) {
                LOG("%s: %m\n", cfg->mountpoint);
                return SFS_EXIT_ERROR;
        }
        /* A connection handed over is alive, not stale: a look at it would wait for this
         * very process. */
        if (!sfs_conn_handed_over(d->path, SFS_CONN_MAIN) && (r = handle_stale(cfg, d->path)))
                return r;
        if (cfg->pid_file && (r = pidfile_open(cfg->pid_file)))
                return r;
        /* Open the log before daemonizing: a relative path means the caller's directory.
         * A daemon's standard error is /dev/null: without a file, its events go to syslog
         * (the journal, where there is one). */
        r = sfs_audit_open(cfg->audit_log ? SFS_AUDIT_FILE
                           : cfg->foreground ? SFS_AUDIT_STDERR : SFS_AUDIT_SYSLOG,
                           cfg->audit_log, &d->audit);
        if (r < 0)
                return audit_refused(cfg->audit_log, r);
        reopen_on_hup(d->audit, false); /* cannot fail: the same handler, set above */
        return daemon_prepare_tree(d);
}

/* Content buffers (a staging file's, a put's, the store's copy before passthrough adopts it
 * into a memory file) are mapped by malloc and unmapped when freed, whatever their size:
 * glibc otherwise raises its mmap threshold to each mapped block freed (up to 32 MiB), so
 * after the first publish every later buffer comes from the heap, and freed (zeroed, so
 * touched) it stays in the daemon's RSS: 75 MiB after five 10 MiB publishes whose content
 * lives in memory files. A fixed threshold keeps the dynamic one off, and so the trim
 * threshold at its default too. A build whose allocator is not glibc's (ASan) ignores it. */
static void content_buffers_mapped(void)
{
        (void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

/* The inode numbers, the tree and what --store serves again: 0, or an SFS_EXIT_* code. */
static int daemon_prepare_tree(struct daemon *d)
{
        int r;

        content_buffers_mapped();

        if (!d->inostate && (r = sfs_inostate_open(-1, &d->inostate)) < 0) {
                LOG("%s\n", strerror(-r));
                return SFS_EXIT_ERROR;
        }
        d->tc.audit = d->audit;
        d->tc.inostate = d->inostate;
        d->tc.owner_uid = getuid();
        d->tc.owner_gid = getgid();
        if (d->cfg->store) {
                r = store_open(d->cfg, &d->store);
                if (r)
                        return r;
                d->tc.ocistore = d->store;
        }
        if (d->cfg->runtime_store) {
                r = runtime_open(d->cfg, d->store, &d->runtime);
                if (r)
                        return r;
                d->tc.runtime = d->runtime;
        }
        /* Before any content exists: with passthrough, each snapshot's content lives once, in
         * the sealed memory file the kernel reads, mapped read-only for the daemon's own
         * reads; closed when the store frees it. */
        sfs_pt_configure(!d->cfg->no_passthrough, d->inostate,
                         d->cfg->max_backing_files);
        sfs_tree_set_content_hooks(sfs_pt_adopt, sfs_pt_forget);
        r = sfs_tree_new(&d->tc, &d->ctx.tree);
        if (r < 0) {
                LOG("%s\n", strerror(-r));
                return SFS_EXIT_ERROR;
        }
        if (d->store)
                r = store_start(d->cfg, d->cfg->store, d->store, d->ctx.tree, d->audit);
        if (r == 0 && d->runtime)
                r = store_start(d->cfg, d->cfg->runtime_store, d->runtime, d->ctx.tree,
                                d->audit);
        return r;
}

/* The main mount (made and checked, or taken over), the read view, the scopes: 0, or an
 * SFS_EXIT_* code (printed). */
static int daemon_mount(struct daemon *d)
{
        int r;

        d->se = sfs_session_new(&d->sc, &d->ctx);
        if (!d->se) {
                LOG("cannot create the FUSE session\n");
                return SFS_EXIT_ERROR;
        }
        d->ctx.se = d->se;
        /* Before anything can announce the mount: a SIGTERM that arrives early must end the
         * loop (and unmount) like any other, not kill the process by default action. */
        if (stop_signals_install() < 0) {
                LOG("cannot install signal handlers: %m\n");
                return SFS_EXIT_ERROR;
        }
        d->signals = true;
        r = sfs_session_mount(d->se, &d->ctx, d->path, &d->sc, SFS_CONN_MAIN, &d->dev);
        if (r < 0)
                return SFS_EXIT_ERROR;
        if (r == 0) {
                /* A mount on a shared parent joins its peer group: events elsewhere could
                 * then propagate in. Make ours private when we may (mountcheck refuses it
                 * otherwise). */
                if (geteuid() == 0 && mount(NULL, d->path, NULL, MS_PRIVATE, NULL) < 0)
                        LOG("%s: cannot make the mount private: %m\n", d->path);
                r = sfs_session_check(d->path, &d->sc, false, &d->dev);
                if (r)
                        return exit_code(r);
                sfs_session_checked(&d->ctx, d->dev);
        }
        sfs_tree_set_dev(d->ctx.tree, d->dev, false);
        if (d->cfg->read_view) {
                r = sfs_view_mount(&d->view, d->cfg->read_view, &d->sc, d->ctx.tree);
                if (r)
                        return exit_code(r);
                d->ctx.view_se = d->view.se;
        }
        if (sfs_status_set_daemon(d->path, d->view.path, d->cfg->store) < 0)
                LOG("snapfs status: out of memory; it names no paths\n");
        /* Scopes after every mount of this daemon, so no view lands on one of them. */
        return scopes_start(d->cfg, d->path, d->view.path, d->ctx.tree, d->store, d->runtime,
                            d->audit, &d->views, &d->reg);
}

/* Daemonized: the supervisor that keeps the connections, forked here (after the mounts, so
 * `snapfs mount` returns once they serve; before any thread). A successor has one already.
 * Its failure is said, and the daemon serves without. */
static void daemon_supervise(struct daemon *d)
{
        int r;

        if (d->supervisor < 0 && d->cfg->foreground && fdstore_offered()) {
                r = sfs_fdstore_store("snapfs-inodes", sfs_inostate_fd(d->inostate));
                if (r < 0)
                        LOG("cannot store the inode numbers with the service manager: %s\n",
                            strerror(-r));
                sfs_conn_set_keeper(keep_fdstore, d);
                d->keeper = true;
                sfs_status_set_takeover(0, sfs_inostate_generation(d->inostate));
                return;
        }
        if (d->supervisor < 0 && !d->cfg->foreground) {
                r = sfs_supervisor_start(&d->supervisor, d->cwd);
                if (r < 0)
                        LOG("cannot start the supervisor: %s; a crash will end the mounts\n",
                            strerror(-r));
        }
        if (d->supervisor < 0)
                return;
        if (sfs_supervisor_keep_state(d->supervisor, sfs_inostate_fd(d->inostate)) < 0)
                LOG("cannot hand the inode numbers to the supervisor: %m\n");
        sfs_conn_set_keeper(keep_supervisor, d);
        d->keeper = true;
        sfs_status_set_takeover(getppid(), sfs_inostate_generation(d->inostate));
}

/* Daemonizes, starts what runs beside the requests and serves: an SFS_EXIT_* code. */
static int daemon_serve(struct daemon *d)
{
        const struct sfs_daemon_config *cfg = d->cfg;
        /* Threads only after the fork: a fork keeps just one. */
        struct sweeper sw;
        int r, ret = SFS_EXIT_ERROR;

        /* A successor is its supervisor's child already: it neither forks nor prints. */
        if (d->supervisor < 0 && !cfg->foreground && (r = daemonize()) < 0) {
                LOG("cannot daemonize: %s\n", strerror(-r));
                return SFS_EXIT_ERROR;
        }
        daemon_supervise(d);
        takeover_report(d);
        if (d->store && !cfg->foreground)
                sfs_ocistore_note_pid(d->store, getpid()); /* the serving pid, named */
        if (sfs_audit_start(d->audit) < 0)
                LOG("cannot start the audit writer; events are written at exit\n");
        sweeper_start(&sw, d->ctx.tree, d->reg, cfg->tree.staging_ttl_ms);
        r = sfs_view_start(&d->view, cfg->max_threads);
        if (r == 0 && (r = sfs_scopeviews_start(d->views)) < 0)
                LOG("cannot serve the scopes' views: %s\n", strerror(-r));
        if (r == 0 && (r = sfs_registry_start(d->reg)) < 0)
                LOG("cannot watch the scopes' until-pids: %s\n", strerror(-r));
        /* STATUS= for a service manager: a summary it shows, kept up to date. */
        if (r == 0 && sfs_status_notifier_start(d->reg) < 0)
                LOG("cannot start the STATUS= notifier: %m\n");
        if (r < 0) {
                LOG("cannot serve the read view: %s\n", strerror(-r));
        } else {
                if (cfg->foreground && d->view.path)
                        printf("snapfs: serving %s, read view %s (pid %d)\n", d->path,
                               d->view.path, (int)getpid());
                else if (cfg->foreground)
                        printf("snapfs: serving %s (pid %d)\n", d->path, (int)getpid());
                fflush(stdout);
                ret = serve(d);
        }
        sfs_status_notifier_stop();
        sweeper_stop(&sw);
        return ret;
}

/* Unmounts (unless handing over) and frees everything, in the order the loops need: the
 * scopes' views first (their scopes stay in --store), then the read view, then the main
 * mount; their loops must be gone before the trees they read are freed. */
static void daemon_teardown(struct daemon *d, int ret)
{
        bool unmount = !d->handover;

        if (d->ctx.tree) {
                sfs_tree_set_control(d->ctx.tree, NULL, NULL);
                sfs_tree_set_scope_grant(d->ctx.tree, NULL, NULL);
        }
        if (d->handover)
                sfs_scopeviews_handover(d->views);
        sfs_registry_free(d->reg);
        sfs_scopeviews_free(d->views);
        d->ctx.view_se = NULL;
        sfs_view_end(&d->view, unmount);
        if (d->signals)
                stop_signals_remove();
        sfs_session_end(d->se, &d->ctx, unmount);
        /* A successor that failed to start: what it was handed has nobody to serve it. */
        sfs_conn_drop_unadopted();
        /* A daemonized child that never served tells its parent why it stops. */
        report_to_parent(ret == SFS_EXIT_OK ? SFS_EXIT_ERROR : ret);
        /* A successor writes its own pid there. */
        if (!d->handover)
                pidfile_remove();
        reopen_on_hup(NULL, true);
        /* The store first: nothing serves any more, and a daemon started on it at once
         * must not wait while this one frees what it served (seconds for a large store). */
        sfs_ocistore_close(d->runtime); /* first: it may use --store's lock */
        sfs_ocistore_close(d->store);
        /* Everything the snapshots held is freed before exit. */
        sfs_tree_free(d->ctx.tree);
        sfs_inostate_free(d->inostate);
        sfs_audit_close(d->audit);
        snap_trust_free(d->trust);
        sfs_daemon_config_free(&d->conf);
        sfs_status_clear_daemon();
        safe_close(d->supervisor);
        free(d->path);
        free(d->cwd);
}

int sfs_daemon_run(const struct sfs_daemon_config *given)
{
        struct daemon d = { .conf = *given, .supervisor = -1 };
        int r;

        d.cfg = &d.conf;
        /* First of all: a SIGHUP at any moment of the start must not end it. */
        if (reopen_on_hup(NULL, false) < 0) {
                LOG("cannot install signal handlers: %m\n");
                return SFS_EXIT_ERROR;
        }
        /* Then the configuration, whoever built it: nothing is touched before it holds. The
         * caller's cfg owns nothing; conf owns what a config file gave. */
        d.conf.owned = NULL;
        d.conf.n_owned = 0;
        r = daemon_prepare(&d);
        if (r == 0)
                r = daemon_mount(&d);
        if (r == 0)
                r = daemon_serve(&d);
        daemon_teardown(&d, r);
        return r;
}
