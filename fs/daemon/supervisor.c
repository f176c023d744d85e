/* SPDX-License-Identifier: MIT */
/* The supervisor (supervisor.h). It never touches the daemon's memory after the fork: it
 * holds descriptors, waits, and starts processes. */
#include "fs/daemon/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "fs/base/fdstore.h"
#include "fs/base/worker.h"

#define HELD_MAX 4096
/* Successors that die before they serve, in a row, before the supervisor gives up (a
 * successor that cannot start, say a config file broken since: the connections go, and
 * every mount answers ENOTCONN, as it would without a supervisor). */
#define FAILED_STARTS_MAX 5

enum msg_kind { MSG_CONN = 1, MSG_STATE = 2, MSG_SERVING = 3 };

struct msg {
        uint32_t kind;
        uint32_t id;
};

struct held {
        unsigned id; /* 0: the inode-number state */
        int fd, rec;
};

struct sup {
        struct held held[HELD_MAX];
        size_t n;
        int sock;        /* to the serving process, or -1 */
        int sigfd;
        pid_t child;
        bool serving;    /* the current child said it serves */
        unsigned failed; /* successors in a row that died before serving */
        char exe[PATH_MAX];
        char **argv;
        char *cwd;       /* the daemon's start directory: its arguments may be relative */
};

static int send_fds(int sock, uint32_t kind, uint32_t id, const int *fds, unsigned n)
{
        struct msg m = { .kind = kind, .id = id };
        union {
                char buf[CMSG_SPACE(sizeof(int) * 2)];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (n) {
                memset(&u, 0, sizeof(u));
                sfs_msg_put_fds(&mh, u.buf, fds, n);
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? negative_errno() : 0;
}

int sfs_supervisor_keep(int sock, int fd, int rec, unsigned id)
{
        return send_fds(sock, MSG_CONN, id, (int[]){ fd, rec }, 2);
}

int sfs_supervisor_keep_state(int sock, int fd)
{
        return send_fds(sock, MSG_STATE, 0, &fd, 1);
}

int sfs_supervisor_serving(int sock)
{
        return send_fds(sock, MSG_SERVING, 0, NULL, 0);
}

/* ---- the supervisor's side ---- */

static void held_drop(struct sup *s, size_t i)
{
        safe_close(s->held[i].fd);
        safe_close(s->held[i].rec);
        s->held[i] = s->held[--s->n];
}

/* One message from the serving process: a pair to hold (replacing one of the same id). */
static void receive(struct sup *s)
{
        union {
                char buf[CMSG_SPACE(sizeof(int) * 2)];
                struct cmsghdr align;
        } u;
        struct msg m = { 0 };
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                             .msg_controllen = sizeof(u.buf) };
        int fds[2] = { -1, -1 }, nfds = 0;
        ssize_t n = recvmsg(s->sock, &mh, MSG_CMSG_CLOEXEC);

        if (n <= 0) {
                if (n == 0 || errno != EINTR)
                        s->sock = safe_close(s->sock); /* the serving process is gone */
                return;
        }
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                        nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)(nfds > 2 ? 2 : nfds));
                }
        if (m.kind == MSG_SERVING) {
                s->serving = true;
                s->failed = 0;
        } else if ((m.kind == MSG_CONN && nfds == 2) || (m.kind == MSG_STATE && nfds == 1)) {
                unsigned id = m.kind == MSG_STATE ? 0 : m.id;
                for (size_t i = 0; i < s->n; i++)
                        if (s->held[i].id == id) {
                                held_drop(s, i);
                                break;
                        }
                if (s->n < HELD_MAX && (m.kind == MSG_STATE || id)) {
                        s->held[s->n++] = (struct held){ .id = id, .fd = fds[0], .rec = fds[1] };
                        return;
                }
        }
        safe_close(fds[0]);
        safe_close(fds[1]);
}

/* The successor's LISTEN_FDS: the socket, the state, then every pair, from 3 on. */
static void exec_successor(struct sup *s, int sock)
{
        size_t n = 1 + 2 * s->n, k = 0;
        int *from = calloc(n, sizeof(int));
        char *names = calloc(n, 32), num[64];

        if (!from || !names)
                _exit(127);
        from[k++] = sock;
        strcat(names, "snapfs-supervisor");
        for (size_t i = 0; i < s->n; i++) {
                if (!s->held[i].id) {
                        from[k++] = s->held[i].fd;
                        strcat(names, ":snapfs-inodes");
                        continue;
                }
                from[k++] = s->held[i].fd;
                from[k++] = s->held[i].rec;
                snprintf(num, sizeof(num), ":snapfs-fuse-%u:snapfs-rec-%u", s->held[i].id,
                         s->held[i].id);
                strcat(names, num);
        }
        /* Out of the way first: a source may sit where another goes. */
        for (size_t i = 0; i < k; i++)
                from[i] = fcntl(from[i], F_DUPFD, (int)(3 + k));
        for (size_t i = 0; i < k; i++)
                if (from[i] < 0 || dup2(from[i], (int)(3 + i)) < 0)
                        _exit(127);
        close_range((unsigned)(3 + k), ~0U, 0);
        if (s->cwd && chdir(s->cwd) < 0)
                _exit(127);
        snprintf(num, sizeof(num), "%d", (int)getpid());
        setenv("LISTEN_PID", num, 1);
        snprintf(num, sizeof(num), "%zu", k);
        setenv("LISTEN_FDS", num, 1);
        setenv("LISTEN_FDNAMES", names, 1);
        execv(s->exe, s->argv);
        _exit(127);
}

/* Starts a successor with what is held: 0, or -errno (nothing started). */
static int spawn(struct sup *s)
{
        int sv[2];
        pid_t pid;
        sigset_t none;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return negative_errno();
        pid = sfs_fork_with_pair(sv);
        if (pid < 0)
                return pid;
        if (pid == 0) {
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                exec_successor(s, sv[1]);
        }
        close(sv[1]);
        safe_close(s->sock);
        s->sock = sv[0];
        s->child = pid;
        s->serving = false;
        return 0;
}

/* The serving process ended with status: a successor, or the end. Returns -1 to go on, or
 * the supervisor's exit status. */
static int child_ended(struct sup *s, int status)
{
        bool again = WIFSIGNALED(status) ||
                     (WIFEXITED(status) && WEXITSTATUS(status) == SFS_EXIT_HANDOVER);

        if (!again)
                return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (!s->serving && ++s->failed >= FAILED_STARTS_MAX)
                return 1;
        if (spawn(s) < 0)
                return 1;
        return -1;
}

/* SIGCHLD, or a signal for the serving process. -1 to go on, or an exit status. */
static int on_signal(struct sup *s)
{
        struct signalfd_siginfo si;
        int status;

        if (read(s->sigfd, &si, sizeof(si)) != sizeof(si))
                return -1;
        if (si.ssi_signo != SIGCHLD) {
                if (s->child > 0)
                        kill(s->child, (int)si.ssi_signo);
                return -1;
        }
        while (s->child > 0) {
                pid_t p = waitpid(-1, &status, WNOHANG);
                if (p <= 0)
                        break;
                if (p == s->child) {
                        int r = child_ended(s, status);
                        if (r >= 0)
                                return r;
                }
        }
        return -1;
}

/* Closes what the kernel ended (a view unmounted, a deleted scope's last reader gone). */
static void drop_ended(struct sup *s, const struct pollfd *p, size_t np)
{
        for (size_t i = np; i-- > 2;)
                if (p[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
                        size_t h = i - 2;
                        if (h < s->n && s->held[h].fd == p[i].fd)
                                held_drop(s, h);
                }
}

static int supervise(struct sup *s)
{
        for (;;) {
                struct pollfd p[2 + HELD_MAX];
                size_t np = 2;
                int r;

                p[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
                p[1] = (struct pollfd){ .fd = s->sock, .events = POLLIN };
                for (size_t i = 0; i < s->n; i++)
                        p[np++] = (struct pollfd){ .fd = s->held[i].id ? s->held[i].fd : -1 };
                if (poll(p, np, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return 1;
                }
                if (p[1].revents)
                        receive(s);
                else
                        drop_ended(s, p, np);
                if (p[0].revents && (r = on_signal(s)) >= 0)
                        return r;
        }
}

/* The command line this process was started with, to start a successor the same way (it
 * reads the same config file, so a changed one takes effect). */
static char **read_cmdline(void)
{
        enum { MAX = 1 << 20 };
        char *buf = malloc(MAX), **argv;
        size_t len = 0, n = 0;
        FILE *f = fopen("/proc/self/cmdline", "re");

        if (f && buf)
                len = fread(buf, 1, MAX - 1, f);
        if (f)
                fclose(f);
        if (!len) {
                free(buf);
                return NULL;
        }
        buf[len] = '\0';
        for (size_t i = 0; i < len; i++)
                n += buf[i] == '\0';
        argv = calloc(n + 2, sizeof(*argv));
        if (!argv)
                return NULL;
        n = 0;
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
                argv[n++] = buf + i;
        return argv;
}

/* The supervisor's own setup: nothing of the daemon kept but the socket; signals read from
 * a descriptor. Never returns. */
static void become_supervisor(pid_t child, int sock, const char *cwd)
{
        static struct sup s;
        ssize_t n;
        sigset_t set;
        int null;

        s.child = child;
        s.cwd = cwd ? strdup(cwd) : NULL;
        s.argv = read_cmdline();
        /* The path, not /proc/self/exe: after a package upgrade the path names the new
         * program, which is what a successor must run. */
        n = readlink("/proc/self/exe", s.exe, sizeof(s.exe) - 1);
        if (n <= 0 || !s.argv)
                _exit(1);
        s.exe[n] = '\0';
        if (n > 10 && strcmp(s.exe + n - 10, " (deleted)") == 0)
                s.exe[n - 10] = '\0';
        /* Nothing of the daemon's but the socket: a --store lock or the audit log held
         * here would keep a successor out. */
        s.sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
        if (s.sock < 0 || (s.sock != 3 && dup2(s.sock, 3) < 0))
                _exit(1);
        s.sock = 3;
        close_range(4, ~0U, 0);
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
                close(null);
        }
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);
        signal(SIGPIPE, SIG_IGN);
        s.sigfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (s.sigfd < 0)
                _exit(1);
        _exit(supervise(&s));
}

int sfs_supervisor_start(int *sock, const char *cwd)
{
        int sv[2];
        pid_t pid;
        sigset_t set, old;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return negative_errno();
        /* Blocked across the fork: a SIGCHLD or a SIGTERM that lands before the supervisor
         * reads its signals from a descriptor is kept, not lost. */
        sigfillset(&set);
        sigprocmask(SIG_BLOCK, &set, &old);
        pid = fork();
        if (pid < 0) {
                int r = negative_errno();
                sigprocmask(SIG_SETMASK, &old, NULL);
                close(sv[0]);
                close(sv[1]);
                return r;
        }
        if (pid > 0) {
                close(sv[1]);
                become_supervisor(pid, sv[0], cwd);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(sv[0]);
        *sock = sv[1];
        return 0;
}
