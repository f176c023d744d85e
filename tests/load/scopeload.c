/* SPDX-License-Identifier: MIT */
/* Scope isolation driver: three scopes of one daemon, all used by the same uid. A floods its
 * own publishing scope with 8 processes while B publishes and verified-opens in scope B and C
 * reads in scope C; B's and C's latencies are measured three ways in one run.
 *
 *   scopeload [--seconds N] [--uid UID] [--daemon-pid PID] [--max-rss-growth MIB]
 *             [--dir-handles N] [--burners N] MOUNTPOINT VIEWS
 *
 * Run as root, the owner of the main mount MOUNTPOINT. It creates the scopes load-a (publish,
 * small limits), load-b (publish) and load-c (read-only, 16 granted 4 KiB snapshots under
 * entries) with their views in the directory VIEWS, all for UID (default 40000): the scopes,
 * not uids, separate them. Then three phases of --seconds each, B and C running side by side
 * in every one:
 *   - quiet: nothing else;
 *   - cpu: --burners processes (default 8) that only burn CPU, the floor this machine sets;
 *   - flood: A's 8 processes in A's view: two mkdir floods in its root, staging creates,
 *     --dir-handles directory handles held, 64 KiB publishes held open to the scope's limits,
 *     tiny publishes to its limits, xattr queries, staging files held open after unlink.
 * B's cycle: publish 4-16 KiB of fresh content in B's view, read the binding xattr, open and
 * verify it (snap_verify_fd), read it all and compare, unlink it. C's cycle: open one of its
 * entries, read it all, compare with the content granted.
 *
 * Prints, per phase, B's and C's cycles, p50/p99, errors by errno and wrong bytes; the flood's
 * p99 against the cpu phase's (the figure; target <= 1.5, reported, never judged); A's
 * operations and refusals by route; the daemon's RSS (after setup, peak, after the flood).
 * Exit 0 only when B and C saw no error and no wrong byte in any phase, each made progress in
 * each, no process crashed and the daemon's RSS grew less than --max-rss-growth. The scopes
 * are removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "snapshot/binding.h"
#include "snapshot/digest.h"
#include "tests/load/loadlib.h"
#include "tests/load/loadutil.h"
#include "snapshot/verify.h"

#define MAX_ERRNO 256
#define MAX_SAMPLES (1u << 20)
#define B_MAX 16384
#define C_FILES 16
#define C_SIZE 4096

enum route { R_MKDIR1, R_MKDIR2, R_CREATE, R_DIRS, R_HOLD, R_TINY, R_XATTR, R_STAGE, N_ROUTES };
static const char *route_name[N_ROUTES] = {
        "mkdir flood", "mkdir flood", "staging creates", "dir handles",
        "held 64K publishes", "tiny publishes", "xattr queries", "staging held open",
};

enum phase { P_QUIET, P_CPU, P_FLOOD, N_PHASES };
static const char *phase_name[N_PHASES] = { "quiet", "cpu", "flood" };

struct shared {
        atomic_bool stop;
        atomic_int ready;
        atomic_ulong a_ops[N_ROUTES];
        atomic_ulong a_err[N_ROUTES][MAX_ERRNO];
        atomic_ulong dir_handles;
};

/* One client's results in one phase (shared memory). */
struct result {
        unsigned long cycles, mismatches;
        unsigned long err[MAX_ERRNO];
        char first_err[64];
        size_t n;
        uint64_t lat[]; /* ns per cycle */
};

static struct shared *S;
static const char *mnt;
static char view_a[1024], view_b[1024], view_c[1024];
static uid_t uid = 40000;

/* One request on MNT/.control; 0 when the reply says ok, else -1 (the reply printed). */
static int control(const char *req)
{
        char path[4096], reply[65536];
        size_t len = strlen(req), off = 0;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "%s/.control", mnt);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || write(fd, req, len) != (ssize_t)len) {
                fprintf(stderr, "scopeload: %s: %s\n", path, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        while (off < sizeof(reply) - 1 &&
               (n = pread(fd, reply + off, sizeof(reply) - 1 - off, (off_t)off)) > 0)
                off += (size_t)n;
        reply[off] = 0;
        close(fd);
        if (strstr(reply, "\"ok\": true") || strstr(reply, "\"ok\":true"))
                return 0;
        fprintf(stderr, "scopeload: %s -> %s\n", req, reply);
        return -1;
}

/* ---- A's routes, in A's view ---- */

static void a_count(enum route r, int err)
{
        if (err)
                atomic_fetch_add(&S->a_err[r][err > 0 && err < MAX_ERRNO ? err : 0], 1);
        else
                atomic_fetch_add(&S->a_ops[r], 1);
}

static void route_mkdir(enum route r)
{
        char path[4096];
        uint64_t i = 0;

        atomic_fetch_add(&S->ready, 1);
        while (!atomic_load(&S->stop)) {
                snprintf(path, sizeof(path), "%s/%0200llu", view_a, (unsigned long long)i++);
                a_count(r, mkdir(path, 0700) < 0 ? errno : 0);
        }
}

static void route_create(void)
{
        static uint8_t buf[1024];
        char path[4096];
        uint64_t i = 0;

        atomic_fetch_add(&S->ready, 1);
        while (!atomic_load(&S->stop)) {
                int fd, e = 0;
                snprintf(path, sizeof(path), "%s/.staging/c%llu", view_a,
                         (unsigned long long)i++);
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0) {
                        e = errno;
                } else {
                        e = -write_all(fd, buf, sizeof(buf));
                        close(fd);
                        if (unlink(path) < 0 && !e)
                                e = errno;
                }
                a_count(R_CREATE, e);
                if (e)
                        usleep(1000);
        }
}

static void route_dirs(unsigned n)
{
        int *fds = calloc(n, sizeof(*fds));
        char buf[512];
        unsigned held = 0;

        for (unsigned i = 0; fds && i < n && !atomic_load(&S->stop); i++) {
                int fd = open(view_a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        a_count(R_DIRS, errno);
                        continue;
                }
                if (syscall(SYS_getdents64, fd, buf, 64) < 0)
                        a_count(R_DIRS, errno);
                fds[held++] = fd;
                a_count(R_DIRS, 0);
        }
        atomic_store(&S->dir_handles, held);
        atomic_fetch_add(&S->ready, 1);
        while (!atomic_load(&S->stop))
                usleep(10000);
        for (unsigned i = 0; i < held; i++)
                close(fds[i]);
        free(fds);
}

/* Publishes size-byte snapshots until the scope's limits refuse, holding each open. */
static void route_publish(enum route r, size_t size)
{
        enum { MAXFD = 4096 };
        uint8_t *buf = malloc(size);
        int *fds = calloc(MAXFD, sizeof(int));
        unsigned n = 0;
        bool said = false;
        uint64_t i = 0;

        while (buf && fds && !atomic_load(&S->stop)) {
                char hex[65], path[4096];
                int e, fd;

                fill(buf, size, ((uint64_t)getpid() << 32) + i++);
                e = load_publish(view_a, r == R_HOLD ? "hold" : "tiny", buf, size, hex);
                a_count(r, -e);
                if (e < 0) {
                        if (!said) {
                                said = true;
                                atomic_fetch_add(&S->ready, 1);
                        }
                        usleep(2000);
                        continue;
                }
                snprintf(path, sizeof(path), "%s/%s", view_a, hex);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 && n < MAXFD)
                        fds[n++] = fd;
                else if (fd >= 0)
                        close(fd);
        }
        if (!said)
                atomic_fetch_add(&S->ready, 1);
        for (unsigned k = 0; k < n; k++)
                close(fds[k]);
        free(fds);
        free(buf);
}

static void route_xattr(void)
{
        char buf[4096], path[4096];

        atomic_fetch_add(&S->ready, 1);
        while (!atomic_load(&S->stop)) {
                DIR *d;
                struct dirent *de;

                a_count(R_XATTR, getxattr(view_a, "user.snapfs.usage", buf, sizeof(buf)) < 0 ?
                                         errno : 0);
                a_count(R_XATTR, listxattr(view_a, buf, sizeof(buf)) < 0 ? errno : 0);
                d = opendir(view_a);
                if (!d) {
                        a_count(R_XATTR, errno);
                        continue;
                }
                for (int k = 0; k < 8 && (de = readdir(d)); k++) {
                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", view_a, de->d_name);
                        a_count(R_XATTR, getxattr(path, "user.snapfs.binding", buf,
                                                  sizeof(buf)) < 0 ? errno : 0);
                }
                closedir(d);
        }
}

static void route_stage(void)
{
        enum { MAXFD = 16000 };
        static uint8_t buf[4096];
        int *fds = calloc(MAXFD, sizeof(int));
        unsigned n = 0;
        bool said = false;
        uint64_t i = 0;

        memset(buf, 0xa5, sizeof(buf));
        while (fds && !atomic_load(&S->stop)) {
                int fd, e = load_stage_held(view_a, i++, buf, sizeof(buf), &fd);

                if (fd >= 0) {
                        if (n < MAXFD)
                                fds[n++] = fd;
                        else
                                close(fd);
                }
                a_count(R_STAGE, e);
                if (e) {
                        if (!said) {
                                said = true;
                                atomic_fetch_add(&S->ready, 1);
                        }
                        usleep(2000);
                }
        }
        if (!said)
                atomic_fetch_add(&S->ready, 1);
        for (unsigned k = 0; k < n; k++)
                close(fds[k]);
        free(fds);
}

static pid_t spawn_route(enum route r, unsigned dirs)
{
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        load_become(uid, r == R_DIRS ? dirs + 64 : 16384);
        switch (r) {
        case R_MKDIR1:
        case R_MKDIR2: route_mkdir(r); break;
        case R_CREATE: route_create(); break;
        case R_DIRS: route_dirs(dirs); break;
        case R_HOLD: route_publish(r, 64 << 10); break;
        case R_TINY: route_publish(r, 64); break;
        case R_XATTR: route_xattr(); break;
        case R_STAGE: route_stage(); break;
        default: break;
        }
        _exit(0);
}

static pid_t spawn_burner(void)
{
        pid_t pid = fork();
        volatile uint64_t x = 0;

        if (pid != 0)
                return pid;
        load_become(uid, 0);
        while (!atomic_load(&S->stop))
                for (int i = 0; i < 100000; i++)
                        x = x + (uint64_t)i; /* volatile: the loop is the point */
        _exit(0);
}

/* ---- B and C ---- */

static void record(struct result *res, int r, uint64_t t0)
{
        if (r < 0) {
                res->err[-r < MAX_ERRNO ? -r : 0]++;
                if (!res->first_err[0])
                        snprintf(res->first_err, sizeof(res->first_err), "%s",
                                 strerrorname_np(-r));
                return;
        }
        res->lat[res->n++] = load_now_ns() - t0;
        res->cycles++;
}

static void run_b(double secs, uint64_t seed, struct result *res)
{
        uint8_t *buf = malloc(B_MAX), *scratch = malloc(B_MAX);
        struct snap_hasher *h;
        uint64_t s = seed, end;

        load_become(uid, 0);
        if (!buf || !scratch || snap_hasher_new(&h) < 0)
                _exit(3);
        end = load_now_ns() + (uint64_t)(secs * 1e9);
        while (load_now_ns() < end && res->n < MAX_SAMPLES) {
                size_t len = 4096 + (size_t)(rnd(&s) % (B_MAX - 4096 + 1)), nread;
                char hex[65], path[4096];
                bool mismatch = false;
                uint64_t t0;
                int r;

                fill(buf, len, rnd(&s));
                t0 = load_now_ns();
                r = load_publish(view_b, "b", buf, len, hex);
                if (r == 0) {
                        r = verify_and_read(view_b, hex, buf, len, B_MAX, h, scratch,
                                            &mismatch, &nread);
                        res->mismatches += mismatch;
                }
                if (r == 0) {
                        snprintf(path, sizeof(path), "%s/%s", view_b, hex);
                        if (unlink(path) < 0)
                                r = -errno;
                }
                record(res, r, t0);
        }
        snap_hasher_free(h);
        _exit(0);
}

static void run_c(double secs, uint64_t seed, struct result *res)
{
        uint8_t want[C_FILES][C_SIZE], got[C_SIZE + 1];
        uint64_t s = seed, end;

        load_become(uid, 0);
        for (int i = 0; i < C_FILES; i++)
                fill(want[i], C_SIZE, 0xC0000 + (uint64_t)i);
        end = load_now_ns() + (uint64_t)(secs * 1e9);
        while (load_now_ns() < end && res->n < MAX_SAMPLES) {
                int i = (int)(rnd(&s) % C_FILES), fd, r = 0;
                char path[4096];
                size_t off = 0;
                uint64_t t0 = load_now_ns();

                snprintf(path, sizeof(path), "%s/c%d", view_c, i);
                fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        record(res, -errno, t0);
                        continue;
                }
                while (off < sizeof(got)) {
                        ssize_t n = pread(fd, got + off, sizeof(got) - off, (off_t)off);
                        if (n < 0) {
                                r = -errno;
                                break;
                        }
                        if (n == 0)
                                break;
                        off += (size_t)n;
                }
                close(fd);
                if (r == 0 && (off != C_SIZE || memcmp(got, want[i], C_SIZE) != 0))
                        res->mismatches++;
                record(res, r, t0);
        }
        _exit(0);
}

static struct result *new_result(void)
{
        size_t size = sizeof(struct result) + MAX_SAMPLES * sizeof(uint64_t);
        struct result *res = mmap(NULL, size, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (res == MAP_FAILED)
                exit(2);
        return res;
}

static double pct(const struct result *r, double p)
{
        return (double)load_quantile(r->lat, r->n, p) / 1e3;
}

static unsigned long errors(const struct result *r)
{
        unsigned long n = 0;
        for (int e = 0; e < MAX_ERRNO; e++)
                n += r->err[e];
        return n;
}

/* B and C side by side for secs seconds; the daemon's RSS sampled into *peak meanwhile.
 * Returns the number of B/C processes that did not exit 0. */
static int measure(double secs, uint64_t seed, pid_t daemon, long *peak, struct result *b,
                   struct result *c)
{
        pid_t pb, pc;
        int status, bad = 0, left = 2;

        if ((pb = fork()) == 0)
                run_b(secs, seed, b);
        if ((pc = fork()) == 0)
                run_c(secs, seed + 1, c);
        if (pb < 0 || pc < 0)
                exit(2);
        while (left) {
                pid_t w = waitpid(-1, &status, WNOHANG);
                if (w == pb || w == pc) {
                        left--;
                        bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
                } else if (w < 0) {
                        break;
                } else {
                        long r = load_rss_kib(daemon);
                        if (r > *peak)
                                *peak = r;
                        usleep(50000);
                }
        }
        qsort(b->lat, b->n, sizeof(uint64_t), load_cmp_u64);
        qsort(c->lat, c->n, sizeof(uint64_t), load_cmp_u64);
        return bad;
}

static int setup(const char *views)
{
        char req[1024], hex[65];
        uint8_t buf[C_SIZE];
        const char *scopes[3][2] = {
                { "load-a", "\"publish\": true, \"limits\": {\"max_snapshots\": 64, "
                            "\"max_bytes\": \"4M\", \"max_staging\": 16, "
                            "\"max_staging_bytes\": \"2M\"}" },
                { "load-b", "\"publish\": true" },
                { "load-c", "\"publish\": false" },
        };
        char *paths[3] = { view_a, view_b, view_c };

        for (int i = 0; i < 3; i++) {
                snprintf(paths[i], sizeof(view_a), "%s/%s", views, scopes[i][0]);
                snprintf(req, sizeof(req),
                         "{\"op\": \"scope-create\", \"name\": \"%s\", \"view\": \"%s\", "
                         "\"uids\": [%u], %s}", scopes[i][0], paths[i], (unsigned)uid,
                         scopes[i][1]);
                if (control(req) < 0)
                        return -1;
        }
        for (int i = 0; i < C_FILES; i++) {
                int r;
                fill(buf, C_SIZE, 0xC0000 + (uint64_t)i);
                r = load_publish(mnt, "c", buf, C_SIZE, hex);
                if (r < 0 && r != -EEXIST) {
                        fprintf(stderr, "scopeload: publishing C's %d: %s\n", i, strerror(-r));
                        return -1;
                }
                snprintf(req, sizeof(req),
                         "{\"op\": \"grant\", \"scope\": \"load-c\", \"sha256\": \"%s\", "
                         "\"entry\": \"c%d\"}", hex, i);
                if (control(req) < 0)
                        return -1;
        }
        return 0;
}

static void teardown(void)
{
        const char *names[] = { "load-a", "load-b", "load-c" };
        char req[256];

        for (int i = 0; i < 3; i++) {
                snprintf(req, sizeof(req), "{\"op\": \"scope-remove\", \"name\": \"%s\"}",
                         names[i]);
                control(req);
        }
}

static void print_client(const char *who, const char *phase, const struct result *r)
{
        char title[64];

        printf("%s %-6s %8lu cycles, p50 %8.1f us, p99 %8.1f us, wrong bytes %lu\n", who, phase,
               r->cycles, pct(r, 0.5), pct(r, 0.99), r->mismatches);
        snprintf(title, sizeof(title), "%s %s errors", who, phase);
        print_errno_counts(title, 22, r->err, MAX_ERRNO);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "seconds", required_argument, NULL, 't' },
                { "uid", required_argument, NULL, 'u' },
                { "daemon-pid", required_argument, NULL, 'p' },
                { "max-rss-growth", required_argument, NULL, 'r' },
                { "dir-handles", required_argument, NULL, 'd' },
                { "burners", required_argument, NULL, 'n' },
                { NULL, 0, NULL, 0 },
        };
        double secs = 10;
        unsigned dirs = 2000, burners = 8;
        long max_rss_mib = 64, rss0, rss_peak, rss1;
        pid_t daemon = 0, pids[64];
        struct result *b[N_PHASES], *c[N_PHASES];
        int ch, status, crashed = 0, ok = 1;

        while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (ch) {
                case 't': secs = atof(optarg); break;
                case 'u': uid = (uid_t)strtoul(optarg, NULL, 10); break;
                case 'p': daemon = (pid_t)strtol(optarg, NULL, 10); break;
                case 'r': max_rss_mib = strtol(optarg, NULL, 10); break;
                case 'd': dirs = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'n': burners = (unsigned)strtoul(optarg, NULL, 10); break;
                default: return 2;
                }
        }
        if (optind != argc - 2 || secs <= 0 || burners > 32) {
                fprintf(stderr, "usage: scopeload [options] MOUNTPOINT VIEWS\n");
                return 2;
        }
        mnt = argv[optind];
        S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (S == MAP_FAILED)
                return 2;
        if (setup(argv[optind + 1]) < 0) {
                teardown();
                return 2;
        }
        rss0 = rss_peak = load_rss_kib(daemon);

        for (int p = 0; p < N_PHASES; p++) {
                int n = 0;
                uint64_t deadline;

                memset(S, 0, sizeof(*S));
                if (p == P_CPU)
                        for (unsigned i = 0; i < burners; i++)
                                pids[n++] = spawn_burner();
                if (p == P_FLOOD) {
                        for (int r = 0; r < N_ROUTES; r++)
                                pids[n++] = spawn_route((enum route)r, dirs);
                        /* B and C start once every route is under way (handles held,
                         * limits reached), or after 60 s whatever the routes did. */
                        deadline = load_now_ns() + 60 * 1000000000ull;
                        while (atomic_load(&S->ready) < N_ROUTES && load_now_ns() < deadline)
                                usleep(10000);
                }
                b[p] = new_result();
                c[p] = new_result();
                crashed += measure(secs, 1 + 2 * (uint64_t)p, daemon, &rss_peak, b[p], c[p]);
                atomic_store(&S->stop, true);
                for (int i = 0; i < n; i++)
                        if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
                            WEXITSTATUS(status) != 0)
                                crashed++;
                if (p == P_FLOOD) {
                        printf("A dir handles held        %lu\n",
                               atomic_load(&S->dir_handles));
                        for (int r = 0; r < N_ROUTES; r++) {
                                unsigned long e[MAX_ERRNO];
                                char title[64];
                                for (int i = 0; i < MAX_ERRNO; i++)
                                        e[i] = atomic_load(&S->a_err[r][i]);
                                snprintf(title, sizeof(title), "A %s: %lu ok,", route_name[r],
                                         atomic_load(&S->a_ops[r]));
                                print_errno_counts(title, 34, e, MAX_ERRNO);
                        }
                }
        }
        rss1 = load_rss_kib(daemon);
        teardown();

        printf("scopes                    load-a (A, 8 processes), load-b (B), load-c (C); "
               "all uid %u; %.1f s a phase, %u CPU burners\n", (unsigned)uid, secs, burners);
        for (int p = 0; p < N_PHASES; p++) {
                print_client("B", phase_name[p], b[p]);
                print_client("C", phase_name[p], c[p]);
                if (errors(b[p]) || errors(c[p]) || b[p]->mismatches || c[p]->mismatches ||
                    !b[p]->cycles || !c[p]->cycles)
                        ok = 0;
        }
        for (int w = 0; w < 2; w++) {
                struct result **r = w ? c : b;
                double cpu = pct(r[P_CPU], 0.99), flood = pct(r[P_FLOOD], 0.99);
                double quiet = pct(r[P_QUIET], 0.99), q50 = pct(r[P_QUIET], 0.5);
                printf("%s p99 flood / cpu-only   %.2f (target <= 1.5: %s); cpu-only / quiet "
                       "%.2f; flood / quiet %.2f (p50 %.2f)\n", w ? "C" : "B",
                       cpu > 0 ? flood / cpu : 0,
                       cpu > 0 && flood / cpu <= 1.5 ? "met" : "missed",
                       quiet > 0 ? cpu / quiet : 0, quiet > 0 ? flood / quiet : 0,
                       q50 > 0 ? pct(r[P_FLOOD], 0.5) / q50 : 0);
        }
        if (daemon)
                printf("daemon RSS                after setup %ld KiB, peak %ld KiB (+%ld KiB), "
                       "after the flood %ld KiB\n", rss0, rss_peak, rss_peak - rss0, rss1);
        printf("crashed processes         %d\n", crashed);
        if (crashed)
                ok = 0;
        if (daemon && (rss0 < 0 || rss_peak - rss0 >= max_rss_mib * 1024)) {
                printf("FAIL: daemon RSS grew by %ld KiB (bound %ld MiB)\n", rss_peak - rss0,
                       max_rss_mib);
                ok = 0;
        }
        printf("%s\n", ok ? "scopeload: B and C unharmed" : "scopeload: FAILED");
        return ok ? 0 : 1;
}
