/* SPDX-License-Identifier: MIT */
/* Scope views: mounting, serving, detaching and reaping their sessions (scopeview.h). */
#include "fs/fuse/scopeview.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/fuse/conn.h"
#include "fs/fuse/ops.h"
#include "fs/config/options.h"
#include "fs/base/worker.h"
#include "fs/fuse/session.h"
#include "fs/tree/tree.h"
#include "common/util.h"

enum view_state {
        VIEW_LIVE,     /* mounted, its scope in the registry */
        VIEW_DETACHED, /* its scope deleted: serves what is open, frees tree when it ends */
        VIEW_ENDED,    /* its session ended while its scope lives (unmounted from outside) */
};

struct sfs_view {
        struct sfs_scopeviews *owner;
        struct sfs_ops_ctx ctx;
        struct fuse_session *se;
        struct sfs_serving serving;
        char *path;
        uint64_t dev;
        enum view_state state;
        struct sfs_tree *tree;   /* VIEW_DETACHED: the view's to free */
        bool handing_over;       /* VIEW_DETACHED: its workers are being stopped */
        bool lingering;          /* VIEW_DETACHED: answered by the reaper, no worker left */
        struct sfs_view *next;
};

struct sfs_scopeviews {
        pthread_mutex_t lock;    /* the list and every view's state */
        struct sfs_view *views;
        unsigned max_threads;
        bool debug;
        bool started;
        int reap[2];             /* a byte each time a view's loop ends; or a stop */
        int epfd;                /* the reaper waits here: reap[0] and every lingering view */
        pthread_t reaper;
        bool reaper_running, stop;
        struct sfs_view_ops ops;
        bool handover;           /* ending for a successor: nothing is unmounted */
};

/* ---- the list ---- */

static void unlink_view(struct sfs_scopeviews *v, struct sfs_view *view)
{
        for (struct sfs_view **pp = &v->views; *pp; pp = &(*pp)->next)
                if (*pp == view) {
                        *pp = view->next;
                        return;
                }
}

/* Ends view's session and frees what it holds (its tree when it owns it). Not in the list;
 * nothing else references it. */
static void view_free(struct sfs_view *view)
{
        sfs_serving_stop(&view->serving);
        /* A session the kernel ended has nothing to unmount (its descriptor polls POLLERR);
         * a live one is unmounted here, unless a successor takes it over. */
        sfs_session_end(view->se, &view->ctx, !view->owner->handover);
        if (view->state == VIEW_DETACHED)
                sfs_tree_free(view->tree);
        free(view->path);
        free(view);
}

static int start_serving(struct sfs_scopeviews *v, struct sfs_view *view)
{
        view->serving = (struct sfs_serving){
                .se = view->se,
                .ctx = &view->ctx,
                .dev = view->dev,
                .max_threads = v->max_threads,
                .debug = v->debug,
                .done_fd = v->reap[1],
                .name = SFS_VIEW_THREAD_NAME,
        };
        return sfs_serving_start(&view->serving);
}

/* ---- the reaper ---- */

/* A byte on the pipe: frees the detached views whose session the kernel ended, marks ended
 * the live ones unmounted from outside. -1 when asked to stop. */
static int reap_ended(struct sfs_scopeviews *v)
{
        struct sfs_view *dead = NULL;
        char c;
        ssize_t n = read(v->reap[0], &c, 1);

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        pthread_mutex_lock(&v->lock);
        if (v->stop || n <= 0) {
                pthread_mutex_unlock(&v->lock);
                return -1;
        }
        for (struct sfs_view *view = v->views, *next; view; view = next) {
                next = view->next;
                if (!view->serving.running || !sfs_serving_ended(&view->serving) ||
                    view->state == VIEW_ENDED || view->handing_over || view->lingering)
                        continue;
                if (view->state == VIEW_DETACHED) {
                        /* The kernel ended the session: the last descriptor of a deleted
                         * scope's view is closed. */
                        unlink_view(v, view);
                        view->next = dead;
                        dead = view;
                } else {
                        /* Unmounted from outside: the scope stays, unserved. */
                        sfs_serving_stop(&view->serving);
                        sfs_session_end(view->se, &view->ctx, true);
                        view->se = NULL;
                        view->ctx.se = NULL;
                        view->state = VIEW_ENDED;
                }
        }
        pthread_mutex_unlock(&v->lock);
        while (dead) {
                struct sfs_view *next = dead->next;
                view_free(dead);
                dead = next;
        }
        return 0;
}

/* One request of a lingering view, answered here; the view freed once the kernel ended its
 * session (its last descriptor closed: the read fails ENODEV, the poll says POLLERR). */
static void serve_lingering(struct sfs_scopeviews *v, struct sfs_view *view)
{
        struct fuse_buf buf = { .mem = NULL };
        int r = fuse_session_receive_buf(view->se, &buf);

        if (r > 0)
                fuse_session_process_buf(view->se, &buf);
        free(buf.mem);
        if ((r < 0 && r != -EAGAIN && r != -EINTR) || fuse_session_exited(view->se)) {
                pthread_mutex_lock(&v->lock);
                epoll_ctl(v->epfd, EPOLL_CTL_DEL, fuse_session_fd(view->se), NULL);
                unlink_view(v, view);
                pthread_mutex_unlock(&v->lock);
                view_free(view);
        }
}

/* The reaper: the one thread that frees what ended, and that answers every view of a removed
 * scope still held open. */
static void *reap_loop(void *arg)
{
        struct sfs_scopeviews *v = arg;
        struct epoll_event ev[16];

        for (;;) {
                int n = epoll_wait(v->epfd, ev, (int)ARRAY_SIZE(ev), -1);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        LOG("scope views: the reaper stops: %m\n");
                        return NULL;
                }
                for (int i = 0; i < n; i++) {
                        if (!ev[i].data.ptr) {
                                if (reap_ended(v) < 0)
                                        return NULL;
                        } else {
                                serve_lingering(v, ev[i].data.ptr);
                        }
                }
        }
}

/* Hands a detached view's session to the reaper, its workers stopped: 0; 1 when the kernel
 * ended the session already (nothing held it open: the lazy unmount released it before
 * umount2 returned), to be freed now; or -errno (it keeps workers then). v->lock held. */
static int linger(struct sfs_scopeviews *v, struct sfs_view *view)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = view };
        int fd = fuse_session_fd(view->se);
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int flags = fcntl(fd, F_GETFL);

        /* Freed at once, not by the reaper later: a create right after a remove must find
         * its place free, not still counted (--max-scopes counts views held open). */
        if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
                return 1;

        /* The reaper must never block in a read: a request another reader took, or none. */
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
            epoll_ctl(v->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return negative_errno();
        fuse_session_reset(view->se);
        view->lingering = true;
        /* A worker stopped just after it read a request drops it (libfuse discards what it
         * reads once its session exited): without this, a poll or open of the removed view
         * in that window waited for an answer forever. The kernel queues it again, for the
         * reaper. */
        if (sfs_conn_resend(fd) < 0)
                LOG("%s: the kernel cannot resend what the view's workers left (%m)\n",
                    view->path);
        return 0;
}

/* ---- the backend ---- */

/* A new view's mount made private and judged like the main mount before one request is
 * served from it: 0, 1 not compliant, or -errno. */
static int check_new(struct sfs_view *view, const struct sfs_session_config *sc, bool ro)
{
        int r;

        /* Private: a mount on a shared parent would join its peer group. */
        if (geteuid() == 0 && mount(NULL, view->path, NULL, MS_PRIVATE, NULL) < 0)
                LOG("%s: cannot make the view private: %m\n", view->path);
        r = sfs_session_check(view->path, sc, ro, &view->dev);
        if (r == 0)
                sfs_session_checked(&view->ctx, view->dev);
        return r;
}

static int op_mount(void *ctx, const struct sfs_view_request *req, struct sfs_tree *tree,
                    struct sfs_view **out, uint64_t *dev, char *msg, size_t msgsize)
{
        struct sfs_scopeviews *v = ctx;
        struct sfs_session_config sc = {
                .allow_other = req->allow_other,
                .ro = req->ro,
                .debug = v->debug,
        };
        struct sfs_view *view = calloc(1, sizeof(*view));
        int r;

        if (!view || !(view->path = strdup(req->path))) {
                free(view);
                snprintf(msg, msgsize, "out of memory");
                return -ENOMEM;
        }
        view->owner = v;
        view->ctx = (struct sfs_ops_ctx){ .tree = tree, .no_open = req->no_open };
        view->se = sfs_session_new(&sc, &view->ctx);
        if (!view->se) {
                free(view->path);
                free(view);
                snprintf(msg, msgsize, "cannot create the view's FUSE session");
                return -EIO;
        }
        view->ctx.se = view->se;
        r = sfs_session_mount(view->se, &view->ctx, view->path, &sc, SFS_CONN_SCOPE, &view->dev);
        if (r < 0) {
                sfs_session_end(view->se, &view->ctx, false);
                free(view->path);
                free(view);
                snprintf(msg, msgsize, "%s: mounting the view failed%s", req->path,
                         req->allow_other && geteuid() != 0
                                 ? " (other uids need user_allow_other in /etc/fuse.conf)"
                                 : "");
                return -EIO;
        }
        r = r == 0 ? check_new(view, &sc, req->ro) : 0;
        if (r) {
                sfs_session_end(view->se, &view->ctx, true);
                free(view->path);
                free(view);
                snprintf(msg, msgsize, "%s: the new view is not a compliant mount%s", req->path,
                         r > 0 ? " (its findings are in the daemon's log)" : "");
                return r > 0 ? -EBUSY : r;
        }
        pthread_mutex_lock(&v->lock);
        r = v->started ? start_serving(v, view) : 0;
        if (r == 0) {
                view->next = v->views;
                v->views = view;
        }
        pthread_mutex_unlock(&v->lock);
        if (r < 0) {
                sfs_session_end(view->se, &view->ctx, true);
                free(view->path);
                free(view);
                snprintf(msg, msgsize, "cannot serve the view: %s", strerror(-r));
                return r;
        }
        *dev = view->dev;
        *out = view;
        return 0;
}

/* Unmounts path lazily if the mount there is view's: never another mount stacked or put there
 * since. */
static void detach_mount(const struct sfs_view *view)
{
        struct statx stx;
        pid_t pid;
        int status;

        if (statx(AT_FDCWD, view->path, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE,
                  &stx) < 0 ||
            makedev(stx.stx_dev_major, stx.stx_dev_minor) != view->dev ||
            !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
                LOG("%s: the view is no longer mounted there; nothing to detach\n", view->path);
                return;
        }
        /* MNT_DETACH, not the session's descriptor closed: what is open reads on. */
        if (umount2(view->path, MNT_DETACH) == 0)
                return;
        pid = fork();
        if (pid == 0) {
                execlp("fusermount3", "fusermount3", "-u", "-z", "--", view->path, (char *)NULL);
                _exit(127);
        }
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
                LOG("%s: could not detach the view\n", view->path);
}

static void op_detach(void *ctx, struct sfs_view *view, struct sfs_tree *tree)
{
        struct sfs_scopeviews *v = ctx;
        bool ended;
        int r;

        pthread_mutex_lock(&v->lock);
        ended = view->state == VIEW_ENDED || !view->serving.running;
        view->state = VIEW_DETACHED;
        view->tree = tree;
        if (ended) {
                /* Nothing serves it: freed now. */
                unlink_view(v, view);
                pthread_mutex_unlock(&v->lock);
                view_free(view);
                return;
        }
        detach_mount(view);
        view->handing_over = true;
        pthread_mutex_unlock(&v->lock);
        /* Its workers go: a removed scope's view held open keeps no thread of its own (the
         * attack: 1,023 views of removed scopes held open, 3,084 idle threads). What is open
         * in it is answered by the reaper, one request at a time. */
        sfs_serving_stop(&view->serving);
        pthread_mutex_lock(&v->lock);
        view->handing_over = false;
        r = linger(v, view);
        if (r == 1) {
                unlink_view(v, view);
                pthread_mutex_unlock(&v->lock);
                view_free(view);
                return;
        }
        if (r < 0) {
                LOG("%s: the removed scope's view keeps its workers: %s\n", view->path,
                    strerror(-r));
                fuse_session_reset(view->se);
                if (start_serving(v, view) < 0)
                        LOG("%s: the removed scope's view is not served any more\n",
                            view->path);
        }
        pthread_mutex_unlock(&v->lock);
}

static void op_invalidate(void *ctx, struct sfs_view *view, const char *name)
{
        struct sfs_scopeviews *v = ctx;

        /* Under the list's lock, which no request of a view takes: the kernel may hold the
         * root's lock for a request a worker is answering, and the notice waits for it. */
        pthread_mutex_lock(&v->lock);
        if (view->state == VIEW_LIVE && view->se && view->serving.running)
                fuse_lowlevel_notify_inval_entry(view->se, FUSE_ROOT_ID, name, strlen(name));
        pthread_mutex_unlock(&v->lock);
}

static void op_invalidate_inode(void *ctx, struct sfs_view *view, uint64_t ino)
{
        struct sfs_scopeviews *v = ctx;

        /* Attributes only (offset -1): no page lock is taken, nothing waits on a read. */
        pthread_mutex_lock(&v->lock);
        if (view->state == VIEW_LIVE && view->se && view->serving.running)
                fuse_lowlevel_notify_inval_inode(view->se, ino, -1, 0);
        pthread_mutex_unlock(&v->lock);
}

static bool op_alive(void *ctx, struct sfs_view *view)
{
        struct sfs_scopeviews *v = ctx;
        bool alive;

        pthread_mutex_lock(&v->lock);
        alive = view->state == VIEW_LIVE &&
                !(view->serving.running && sfs_serving_ended(&view->serving));
        pthread_mutex_unlock(&v->lock);
        return alive;
}

static int op_clear_stale(void *ctx, const char *path)
{
        int r = sfs_clear_dead_mount(path);

        (void)ctx;
        if (r == 0)
                LOG("%s: cleared a dead snapfs view\n", path);
        return r < 0 ? r : 0;
}

static bool op_handed_over(void *ctx, const char *path)
{
        (void)ctx;
        return sfs_conn_handed_over(path, SFS_CONN_SCOPE);
}

static unsigned op_lingering(void *ctx, char *text, size_t size)
{
        struct sfs_scopeviews *v = ctx;
        unsigned n = 0;
        size_t o = 0;

        if (text && size)
                text[0] = '\0';
        pthread_mutex_lock(&v->lock);
        for (struct sfs_view *view = v->views; view; view = view->next) {
                if (view->state != VIEW_DETACHED)
                        continue;
                if (text && o < size) {
                        /* A view that declines OPEN never hears of its descriptors. */
                        char count[32] = "held";
                        int k;
                        if (!view->ctx.no_open)
                                snprintf(count, sizeof(count), "%zu open",
                                         sfs_tree_open_handles(view->tree));
                        k = snprintf(text + o, size - o, "%s%s (%s)", n ? ", " : "",
                                     view->path, count);
                        o = k < 0 ? size : o + (size_t)k;
                }
                n++;
        }
        pthread_mutex_unlock(&v->lock);
        /* Cut: say so, in the last bytes. */
        if (text && size > 4 && o >= size)
                memcpy(text + size - 4, "...", 4);
        return n;
}

static void op_shutdown(void *ctx, struct sfs_view *view)
{
        struct sfs_scopeviews *v = ctx;

        pthread_mutex_lock(&v->lock);
        unlink_view(v, view);
        pthread_mutex_unlock(&v->lock);
        view->state = VIEW_LIVE; /* the tree is the registry's */
        view_free(view);
}

/* ---- lifecycle ---- */

int sfs_scopeviews_new(unsigned max_threads, bool debug, struct sfs_scopeviews **out)
{
        struct sfs_scopeviews *v = calloc(1, sizeof(*v));
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

        if (!v)
                return -ENOMEM;
        if (pipe2(v->reap, O_CLOEXEC) < 0) {
                int r = negative_errno();
                free(v);
                return r;
        }
        v->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (v->epfd < 0 || epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->reap[0], &ev) < 0) {
                int r = negative_errno();
                safe_close(v->epfd);
                safe_close(v->reap[0]);
                safe_close(v->reap[1]);
                free(v);
                return r;
        }
        pthread_mutex_init(&v->lock, NULL);
        v->max_threads = max_threads ? max_threads : SFS_SCOPE_THREADS_DEFAULT;
        v->debug = debug;
        v->ops = (struct sfs_view_ops){
                .mount = op_mount,
                .detach = op_detach,
                .invalidate = op_invalidate,
                .invalidate_inode = op_invalidate_inode,
                .alive = op_alive,
                .clear_stale = op_clear_stale,
                .shutdown = op_shutdown,
                .handed_over = op_handed_over,
                .lingering = op_lingering,
                .ctx = v,
        };
        *out = v;
        return 0;
}

const struct sfs_view_ops *sfs_scopeviews_ops(struct sfs_scopeviews *v)
{
        return &v->ops;
}

int sfs_scopeviews_start(struct sfs_scopeviews *v)
{
        int r = 0;

        pthread_mutex_lock(&v->lock);
        v->started = true;
        for (struct sfs_view *view = v->views; view && r == 0; view = view->next)
                if (view->state == VIEW_LIVE)
                        r = start_serving(v, view);
        if (r == 0) {
                r = -pthread_create_quiet(&v->reaper, reap_loop, v, 0);
                v->reaper_running = r == 0;
        }
        pthread_mutex_unlock(&v->lock);
        return r;
}

void sfs_scopeviews_handover(struct sfs_scopeviews *v)
{
        if (v)
                v->handover = true;
}

static void wake_reaper(void *arg)
{
        struct sfs_scopeviews *v = arg;

        if (write(v->reap[1], "", 1) < 0) {
                /* The pipe holds bytes already: the reaper wakes anyway. */
        }
}

void sfs_scopeviews_free(struct sfs_scopeviews *v)
{
        if (!v)
                return;
        if (v->reaper_running)
                sfs_worker_stop(v->reaper, &v->lock, &v->stop, wake_reaper, v);
        while (v->views) {
                struct sfs_view *view = v->views;
                v->views = view->next;
                view_free(view);
        }
        safe_close(v->epfd);
        safe_close(v->reap[0]);
        safe_close(v->reap[1]);
        pthread_mutex_destroy(&v->lock);
        free(v);
}
