/* SPDX-License-Identifier: MIT */
/* Item 8 of scripts/bench.sh: scopes at scale, side by side in one run.
 *   - N scopes (default 1,000) in one daemon: the median time to create one (scope-create on
 *     MNT/.control: the view made, mounted, judged by the mount check, served), the last 100
 *     against the first 100 (the 1,000th as fast as the first), and the daemon's resident
 *     memory and threads per scope;
 *   - the sandbox-launch path: create a scope, grant it a published 4 KiB snapshot under an
 *     entry, and the first verified open in the new view (libsnapfs snapfs_open_entry: judge
 *     the view, open the entry, its digest, hash), against a sealed memfd created, written,
 *     sealed and verified, and against the start of a bare `bwrap --ro-bind / / true` (the
 *     step a launch always travels with); and the same launch with a bwrap start before each
 *     (untimed), since what a bwrap run leaves to tear down slows the next mount;
 *   - a verified open in a scope view (the view judged once, as item 2 does) against a memfd
 *     its holder has open: for a view of root alone (the kernel opens without asking the
 *     daemon) and for a view naming another uid (allow_other: the daemon answers OPEN);
 *   - the wait for an entry to move: a thread asleep in poll(2) on the entry's watch
 *     (libsnapfs snapfs_watch_entry) is woken by a rotation (a grant under the entry on
 *     MNT/.control); the time from the request's start to the wake-up, beside the request's
 *     own time to its reply (the daemon wakes the waiter before it replies).
 *
 *   bench_scopes --snapfs PATH [--csv FILE] [--scopes N] [--rounds N] */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "client/snapfs.h"
#include "tests/bench/benchutil.h"
#include "mountcheck/check.h"
#include "mountcheck/identity.h"
#include "mountcheck/policy.h"
#include "mountcheck/verdict.h"
#include "snapshot/binding.h"
#include "snapshot/digest.h"
#include "snapshot/verify.h"

#define CFG_SIZE 4096

struct cfg {
        const char *snapfs, *csv;
        unsigned scopes, rounds;
        char base[64], mnt[128], views[128];
        struct bench_daemon d;
        struct snap_hasher *h;
};

/* The daemon, stopped at any exit: a failed run must not leave it serving (and holding the
 * caller's output open) in the private namespace. */
static struct bench_daemon *running;

static void stop_running(void)
{
        if (running && running->pid > 0)
                bench_daemon_stop(running);
}

/* One request on MNT/.control; dies unless the reply says ok. */
static void control(const struct cfg *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void control(const struct cfg *c, const char *fmt, ...)
{
        char path[256], req[1024], reply[8192];
        size_t off = 0;
        ssize_t n;
        va_list ap;
        int fd, len;

        va_start(ap, fmt);
        len = vsnprintf(req, sizeof(req), fmt, ap);
        va_end(ap);
        snprintf(path, sizeof(path), "%s/.control", c->mnt);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || write(fd, req, (size_t)len) != len)
                bench_die("%s: %s", path, strerror(errno));
        while (off < sizeof(reply) - 1 &&
               (n = pread(fd, reply + off, sizeof(reply) - 1 - off, (off_t)off)) > 0)
                off += (size_t)n;
        reply[off] = 0;
        close(fd);
        if (!strstr(reply, "\"ok\": true") && !strstr(reply, "\"ok\":true"))
                bench_die("%s -> %s", req, reply);
}

static int count_threads(pid_t pid)
{
        char path[64];
        struct dirent *de;
        int n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        if (!(d = opendir(path)))
                return -1;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static double median_of(const double *v, size_t n)
{
        struct bench_series s = { 0 };
        double m;

        for (size_t i = 0; i < n; i++)
                bench_series_add(&s, v[i]);
        m = bench_series_median(&s);
        bench_series_free(&s);
        return m;
}

/* ---- N scopes in one daemon ---- */

static void scale(struct cfg *c)
{
        unsigned n = c->scopes, k = n < 100 ? n : 100;
        double *t = calloc(n, sizeof(double)), first, last, all;
        struct bench_series rm = { 0 };
        long long rss0, rss1;
        int th0, th1;
        char note[128];

        if (!t)
                bench_die("out of memory");
        rss0 = bench_rss_bytes(c->d.pid);
        th0 = count_threads(c->d.pid);
        for (unsigned i = 0; i < n; i++) {
                long long t0 = bench_now_ns();
                control(c, "{\"op\": \"scope-create\", \"name\": \"s%05u\", "
                           "\"view\": \"%s/s%05u\"}", i, c->views, i);
                t[i] = (double)(bench_now_ns() - t0) / 1e6;
        }
        rss1 = bench_rss_bytes(c->d.pid);
        th1 = count_threads(c->d.pid);
        printf("scope create, median of each 100 in ms:");
        for (unsigned i = 0; i + 100 <= n; i += 100)
                printf(" %.3g", median_of(t + i, 100));
        printf("\n");
        first = median_of(t, k);
        last = median_of(t + n - k, k);
        all = median_of(t, n);
        for (unsigned i = 0; i < n; i++) {
                long long t0 = bench_now_ns();
                control(c, "{\"op\": \"scope-remove\", \"name\": \"s%05u\"}", i);
                bench_series_add(&rm, (double)(bench_now_ns() - t0) / 1e6);
        }
        snprintf(note, sizeof(note), "%u scopes; remove one: median %.3g ms", n,
                 bench_series_median(&rm));
        bench_emit(&(struct bench_row){ "8", "scope create", "-", "-", "snapfs", NULL, all, 0,
                                        "ms", "", (int)n, note });
        snprintf(note, sizeof(note), "scopes #%u-%u vs #1-%u", n - k + 1, n, k);
        bench_emit(&(struct bench_row){ "8", "scope create: last vs first", "-", "-", "last",
                                        "first", last, first, "ms", "<=1.5", (int)k, note });
        snprintf(note, sizeof(note), "RSS %lld -> %lld KiB; threads %d -> %d (%.2f a scope)",
                 rss0 / 1024, rss1 / 1024, th0, th1, (double)(th1 - th0) / n);
        bench_emit(&(struct bench_row){ "8", "daemon memory per scope", "-", "-", "snapfs",
                                        NULL, (double)(rss1 - rss0) / n / 1024, 0, "KiB", "",
                                        (int)n, note });
        bench_series_free(&rm);
        free(t);
}

/* ---- the sandbox-launch path ---- */

/* Medians of the launch's steps, for the note: create, grant, first verified open. */
static struct bench_series step[3];

static long long launch_scope(struct cfg *c, unsigned i, const char *hex)
{
        long long t1, t2;
        struct snapfs_options o = { 0 };
        struct snapfs_report why;
        char view[256];
        long long t0, t;
        int fd;

        snprintf(view, sizeof(view), "%s/L%05u", c->views, i);
        t0 = bench_now_ns();
        control(c, "{\"op\": \"scope-create\", \"name\": \"L%05u\", \"view\": \"%s\"}", i, view);
        t1 = bench_now_ns();
        control(c, "{\"op\": \"grant\", \"scope\": \"L%05u\", \"sha256\": \"%s\", "
                   "\"entry\": \"config\"}", i, hex);
        t2 = bench_now_ns();
        fd = snapfs_open_entry(view, "config", &o, NULL, &why);
        if (fd < 0)
                bench_die("open_entry %s: %s", view, snapfs_strerror(fd));
        close(fd);
        t = bench_now_ns() - t0;
        bench_series_add(&step[0], (double)(t1 - t0) / 1e3);
        bench_series_add(&step[1], (double)(t2 - t1) / 1e3);
        bench_series_add(&step[2], (double)(t0 + t - t2) / 1e3);
        control(c, "{\"op\": \"scope-remove\", \"name\": \"L%05u\"}", i);
        return t;
}

static void seal_memfd(const uint8_t *buf, int *out, struct snap_binding *b)
{
        int fd, seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
        struct stat st;

        snap_sha256(buf, CFG_SIZE, &b->sha256);
        fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || write(fd, buf, CFG_SIZE) != CFG_SIZE || fchmod(fd, 0) < 0 ||
            fcntl(fd, F_ADD_SEALS, seals) < 0 || fstat(fd, &st) < 0)
                bench_die("memfd: %s", strerror(errno));
        b->size = CFG_SIZE;
        b->dev = st.st_dev;
        b->ino = st.st_ino;
        *out = fd;
}

static void verify_held(struct cfg *c, int fd, const struct snap_binding *b)
{
        struct snap_verify_result res;

        if (snap_verify_fd(fd, b, UINT64_MAX, c->h, &res) < 0)
                bench_die("verification refused: %s", res.message);
}

static long long launch_memfd(struct cfg *c, const uint8_t *buf)
{
        struct snap_binding b;
        long long t0 = bench_now_ns(), t;
        int fd;

        seal_memfd(buf, &fd, &b);
        verify_held(c, fd, &b);
        t = bench_now_ns() - t0;
        close(fd);
        return t;
}

static long long launch_bwrap(void)
{
        long long t0 = bench_now_ns();
        int status;
        pid_t pid = fork();

        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                execlp("bwrap", "bwrap", "--ro-bind", "/", "/", "true", (char *)NULL);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                bench_die("bwrap --ro-bind / / true failed");
        return bench_now_ns() - t0;
}

/* Each contender in a loop of its own: a bwrap run leaves a copy of the whole mount table to
 * tear down, and the next mount and unmount of a view wait for that (measured separately, as
 * the last row: the launch with a bwrap start between two, outside the timed region). */
static void launch(struct cfg *c, const uint8_t *cfg_bytes, const char *hex)
{
        struct bench_series s = { 0 }, m = { 0 }, w = { 0 }, sw = { 0 };
        char note[160];

        for (unsigned i = 0; i < c->rounds; i++)
                bench_series_add(&s, (double)launch_scope(c, i, hex) / 1e3);
        snprintf(note, sizeof(note), "memfd created/written/sealed/verified; snapfs: "
                 "create %.0f + grant %.0f + open %.0f us", bench_series_median(&step[0]),
                 bench_series_median(&step[1]), bench_series_median(&step[2]));
        for (int k = 0; k < 3; k++)
                bench_series_free(&step[k]);
        for (unsigned i = 0; i < c->rounds; i++)
                bench_series_add(&m, (double)launch_memfd(c, cfg_bytes) / 1e3);
        for (unsigned i = 0; i < c->rounds; i++)
                bench_series_add(&w, (double)launch_bwrap() / 1e3);
        for (unsigned i = 0; i < c->rounds; i++) {
                launch_bwrap();
                bench_series_add(&sw, (double)launch_scope(c, c->rounds + i, hex) / 1e3);
        }
        bench_emit(&(struct bench_row){ "8", "launch: scope+grant+open", "4KiB", "free",
                                        "snapfs", "memfd", bench_series_median(&s),
                                        bench_series_median(&m), "us", "", (int)c->rounds,
                                        note });
        bench_emit(&(struct bench_row){ "8", "launch: scope+grant+open", "4KiB", "free",
                                        "snapfs", "bwrap", bench_series_median(&s),
                                        bench_series_median(&w), "us", "", (int)c->rounds,
                                        "bwrap --ro-bind / / true: fork to exit" });
        snprintf(note, sizeof(note), "a bwrap start before each (untimed); create %.0f + "
                 "grant %.0f + open %.0f us", bench_series_median(&step[0]),
                 bench_series_median(&step[1]), bench_series_median(&step[2]));
        bench_emit(&(struct bench_row){ "8", "launch after a bwrap run", "4KiB", "free",
                                        "snapfs", "bwrap", bench_series_median(&sw),
                                        bench_series_median(&w), "us", "", (int)c->rounds,
                                        note });
        for (int k = 0; k < 3; k++)
                bench_series_free(&step[k]);
        bench_series_free(&s);
        bench_series_free(&m);
        bench_series_free(&w);
        bench_series_free(&sw);
}

/* ---- verified open in a view, against a held memfd ---- */

static void open_in_view(struct cfg *c, const char *name, const char *fields,
                         const uint8_t *cfg_bytes, const char *hex, const char *what)
{
        struct bench_series s = { 0 }, m = { 0 };
        struct snap_binding b, mb;
        struct mc_policy pol;
        struct mc_verdict v;
        char view[256], text[SNAP_BINDING_TEXT_MAX];
        int root, memfd;
        ssize_t len;

        snprintf(view, sizeof(view), "%s/%s", c->views, name);
        control(c, "{\"op\": \"scope-create\", \"name\": \"%s\", \"view\": \"%s\"%s}", name,
                view, fields);
        control(c, "{\"op\": \"grant\", \"scope\": \"%s\", \"sha256\": \"%s\"}", name, hex);
        mc_policy_preset(&pol, "snapfs");
        if (mc_check_path(view, &pol, MC_BACKEND_AUTO, &v, &root) < 0 || !v.compliant)
                bench_die("mountcheck refused %s", view);
        memfd = openat(root, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        len = memfd < 0 ? -1 : fgetxattr(memfd, "user.snapfs.binding", text, sizeof(text) - 1);
        if (len < 0 || snap_binding_parse(text, (size_t)len, &b) < 0)
                bench_die("binding of %s in %s", hex, view);
        close(memfd);
        seal_memfd(cfg_bytes, &memfd, &mb);
        for (unsigned i = 0; i < 20 * c->rounds; i++) {
                long long t0 = bench_now_ns();
                uint64_t id;
                bool unique;
                int fd = openat(root, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

                if (fd < 0)
                        bench_die("open %s: %s", hex, strerror(errno));
                verify_held(c, fd, &b);
                if (mc_fd_mount_id(fd, &id, &unique) < 0 || id != v.mount_id)
                        bench_die("%s is not on the judged view", hex);
                close(fd);
                bench_series_add(&s, (double)(bench_now_ns() - t0) / 1e3);
                t0 = bench_now_ns();
                verify_held(c, memfd, &mb);
                bench_series_add(&m, (double)(bench_now_ns() - t0) / 1e3);
        }
        bench_emit(&(struct bench_row){ "8", what, "4KiB", "free", "snapfs", "memfd held",
                                        bench_series_median(&s), bench_series_median(&m), "us",
                                        "", (int)(20 * c->rounds), "view judged once" });
        close(memfd);
        close(root);
        control(c, "{\"op\": \"scope-remove\", \"name\": \"%s\"}", name);
        bench_series_free(&s);
        bench_series_free(&m);
}

/* ---- woken by a rotation ---- */

struct waiter {
        int fd;
        long long woken;
};

static void *wait_once(void *arg)
{
        struct waiter *w = arg;
        struct pollfd p = { .fd = w->fd, .events = POLLIN | POLLPRI };

        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
        w->woken = bench_now_ns();
        return NULL;
}

static void wake_on_rotation(struct cfg *c, const char *hex)
{
        struct bench_series s = { 0 }, g = { 0 };
        struct snapfs_options o = { 0 };
        struct snapfs_binding b;
        struct snapfs_report why;
        uint8_t other[CFG_SIZE];
        char view[256], ohex[65], note[128];
        struct snap_digest d;
        unsigned before = 0;

        bench_fill(other, CFG_SIZE, 0x5c1, 1);
        if (snapfs_publish(c->mnt, other, CFG_SIZE, &o, &b, &why) < 0)
                bench_die("publish the second snapshot");
        snap_sha256(other, CFG_SIZE, &d);
        snap_digest_to_hex(&d, ohex);
        snprintf(view, sizeof(view), "%s/waiting", c->views);
        control(c, "{\"op\": \"scope-create\", \"name\": \"waiting\", \"view\": \"%s\"}",
                view);
        control(c, "{\"op\": \"grant\", \"scope\": \"waiting\", \"sha256\": \"%s\", "
                   "\"entry\": \"cfg\"}", hex);
        for (unsigned i = 0; i < c->rounds; i++) {
                struct waiter w = { .fd = snapfs_watch_entry(view, "cfg", &o, &why) };
                pthread_t t;
                long long t0, t1;

                if (w.fd < 0 || pthread_create(&t, NULL, wait_once, &w) != 0)
                        bench_die("watch cfg in %s: %s", view, snapfs_strerror(w.fd));
                /* Untimed: the waiter asleep in poll, its handle with the daemon. */
                usleep(5000);
                t0 = bench_now_ns();
                control(c, "{\"op\": \"grant\", \"scope\": \"waiting\", \"sha256\": "
                           "\"%s\", \"entry\": \"cfg\"}", i % 2 ? hex : ohex);
                t1 = bench_now_ns();
                pthread_join(t, NULL);
                close(w.fd);
                before += w.woken < t1;
                bench_series_add(&s, (double)(w.woken - t0) / 1e3);
                bench_series_add(&g, (double)(t1 - t0) / 1e3);
        }
        snprintf(note, sizeof(note), "woken before the grant's reply in %u of %u runs", before,
                 c->rounds);
        bench_emit(&(struct bench_row){ "8", "wait: woken by a rotation", "4KiB", "free",
                                        "snapfs", "grant reply", bench_series_median(&s),
                                        bench_series_median(&g), "us", "", (int)c->rounds,
                                        note });
        control(c, "{\"op\": \"scope-remove\", \"name\": \"waiting\"}");
        bench_series_free(&s);
        bench_series_free(&g);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "snapfs", required_argument, NULL, 's' },
                { "csv", required_argument, NULL, 'c' },
                { "scopes", required_argument, NULL, 'n' },
                { "rounds", required_argument, NULL, 'r' },
                { NULL, 0, NULL, 0 },
        };
        struct cfg c = { .scopes = 1000, .rounds = 50 };
        char audit[128];
        const char *const dopts[] = { "--allow-other", "--max-snapshots", "100000",
                                      "--audit-log", audit, NULL };
        struct snapfs_options o = { 0 };
        struct snapfs_binding pb;
        struct snapfs_report why;
        struct snap_digest d;
        uint8_t cfg_bytes[CFG_SIZE];
        char hex[65];
        int ch, r;

        while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (ch) {
                case 's': c.snapfs = optarg; break;
                case 'c': c.csv = optarg; break;
                case 'n': c.scopes = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'r': c.rounds = (unsigned)strtoul(optarg, NULL, 10); break;
                default: return 2;
                }
        }
        if (!c.snapfs || !c.scopes || !c.rounds) {
                fprintf(stderr, "usage: bench_scopes --snapfs PATH [--csv FILE] [--scopes N] "
                                "[--rounds N]\n");
                return 2;
        }
        if (c.csv && bench_csv_open(c.csv) < 0)
                bench_die("%s: %s", c.csv, strerror(errno));
        snprintf(c.base, sizeof(c.base), "/tmp/snapfs-bench-scopes.XXXXXX");
        if (!mkdtemp(c.base) || chmod(c.base, 0755) < 0)
                bench_die("mkdtemp: %s", strerror(errno));
        snprintf(c.mnt, sizeof(c.mnt), "%s/mnt", c.base);
        snprintf(c.views, sizeof(c.views), "%s/views", c.base);
        snprintf(audit, sizeof(audit), "%s/audit.log", c.base);
        if (mkdir(c.views, 0755) < 0 || snap_hasher_new(&c.h) < 0)
                bench_die("setup: %s", strerror(errno));
        if (bench_daemon_start(&c.d, c.snapfs, c.mnt, -1, dopts) < 0)
                bench_die("snapfs did not start");
        running = &c.d;
        atexit(stop_running);

        bench_fill(cfg_bytes, CFG_SIZE, 0x5c0, 1);
        r = snapfs_publish(c.mnt, cfg_bytes, CFG_SIZE, &o, &pb, &why);
        if (r < 0)
                bench_die("publish: %s", snapfs_strerror(r));
        snap_sha256(cfg_bytes, CFG_SIZE, &d);
        snap_digest_to_hex(&d, hex);

        scale(&c);
        launch(&c, cfg_bytes, hex);
        open_in_view(&c, "root-only", "", cfg_bytes, hex, "verified open: view of root");
        open_in_view(&c, "uid-1000", ", \"uids\": [1000]", cfg_bytes, hex,
                     "verified open: view of a uid");
        wake_on_rotation(&c, hex);

        snap_hasher_free(c.h);
        running = NULL;
        if (bench_daemon_stop(&c.d) < 0)
                bench_die("snapfs did not stop cleanly");
        unlink(audit);
        rmdir(c.views);
        rmdir(c.mnt);
        rmdir(c.base);
        bench_csv_close();
        return 0;
}
