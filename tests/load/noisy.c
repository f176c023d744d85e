/* SPDX-License-Identifier: MIT */
/* Noisy-neighbour driver: one hostile uid (A) runs every resource route at once against a
 * snapfs mount while another uid (B) keeps publishing and verified-opening.
 *
 *   noisy [--seconds N] [--quiet-seconds N] [--snapshots N] [--dir-handles N]
 *         [--uid-a UID] [--uid-b UID] [--daemon-pid PID] [--audit-log PATH]
 *         [--max-rss-growth MIB] [--max-log MIB] [--without ROUTE,...]
 *         [--flood-at DIR] MOUNTPOINT
 *
 * Run as root (the mount owner). First it publishes --snapshots tiny snapshots, so listings
 * are long; then B runs alone for --quiet-seconds (its quiet latency), then A's routes start
 * and B runs again for --seconds beside them:
 *   - dir handles: --dir-handles directory handles on MNT, each having read one entry, held;
 *   - tiny publishes: publish 64-byte snapshots until refused, and keep trying;
 *   - hoard: publish 256 KiB snapshots, open, unlink (if allowed), keep the descriptors;
 *   - staging hoard: create staging files, write 4 KiB, unlink them while holding them open;
 *   - abandoned staging: create and close staging files, left for --staging-ttl to expire;
 *   - refusal flood: mkdir of long names, some with bytes >= 0x80, as fast as it can.
 * --without leaves routes out (dirs, tiny, hoard, stage, abandon, flood), to see what each one
 * costs B. --flood-at aims the refusal flood at another directory (the read view's root).
 * B's cycle: publish 4-16 KiB of fresh content, read the binding xattr, open and verify it
 * against the binding (snap_verify_fd), read it all and compare, unlink it.
 *
 * Prints B's cycles, errors by errno, wrong bytes and latency (p50/p99, quiet and noisy), A's
 * refusals by errno, the daemon's RSS (before, peak while noisy, after A let go) and the audit
 * log's growth (and how much of it is A's lines). Exit 0 only when B saw no error and no
 * wrong byte, the RSS grew less than --max-rss-growth and A's lines in the log stay under
 * --max-log. Latency is reported, never judged. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
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

enum route { R_DIRS, R_TINY, R_HOARD, R_STAGE, R_ABANDON, R_FLOOD, R_FLOOD2, N_ROUTES };
static const char *route_name[N_ROUTES] = {
        "dir handles", "tiny publishes", "hoard 256K", "staging hoard",
        "abandoned staging", "refusal flood", "refusal flood",
};
static const char *route_key[N_ROUTES] = {
        "dirs", "tiny", "hoard", "stage", "abandon", "flood", "flood",
};

struct shared {
        atomic_bool stop;           /* A's routes end */
        atomic_int ready;           /* A's routes that reached their steady state */
        atomic_ulong a_ops[N_ROUTES];
        atomic_ulong a_err[N_ROUTES][MAX_ERRNO];
        atomic_ulong dir_handles;
        atomic_bool refused[N_ROUTES]; /* the route met its first refusal */
};

static struct shared *S;
static const char *mnt, *flood_at;
static uid_t uid_a = 40000, uid_b = 40001;

static void a_count(enum route r, int err)
{
        if (err) {
                atomic_store(&S->refused[r], true);
                atomic_fetch_add(&S->a_err[r][err > 0 && err < MAX_ERRNO ? err : 0], 1);
        }
        else
                atomic_fetch_add(&S->a_ops[r], 1);
}

/* ---- A's routes ---- */

static void route_dirs(unsigned n)
{
        int *fds = calloc(n, sizeof(*fds));
        char buf[512];
        unsigned held = 0;

        for (unsigned i = 0; i < n && !atomic_load(&S->stop); i++) {
                int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) {
                        a_count(R_DIRS, errno);
                        continue;
                }
                /* One entry's worth: the daemon has answered a READDIR on this handle. */
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

static void route_tiny(void)
{
        uint8_t buf[64];
        char hex[65];
        bool said = false;
        uint64_t i = 0;

        while (!atomic_load(&S->stop)) {
                int r;
                memset(buf, 0, sizeof(buf));
                snprintf((char *)buf, sizeof(buf), "tiny %d %llu", (int)getpid(),
                         (unsigned long long)i++);
                r = load_publish(mnt, "tiny", buf, sizeof(buf), hex);
                a_count(R_TINY, -r);
                if (r < 0 && !said) {
                        said = true;
                        atomic_fetch_add(&S->ready, 1);
                }
                if (r < 0)
                        usleep(2000);
        }
        if (!said)
                atomic_fetch_add(&S->ready, 1);
}

static void route_hoard(void)
{
        enum { MAXFD = 4096, SIZE = 256 << 10 };
        static uint8_t buf[SIZE];
        int *fds = calloc(MAXFD, sizeof(int));
        unsigned n = 0;
        bool said = false;
        uint64_t i = 0;

        while (!atomic_load(&S->stop)) {
                char hex[65], path[4096];
                int r, fd;

                fill(buf, SIZE, ((uint64_t)getpid() << 32) + i++);
                r = load_publish(mnt, "hoard", buf, SIZE, hex);
                a_count(R_HOARD, -r);
                if (r < 0) {
                        if (!said) {
                                said = true;
                                atomic_fetch_add(&S->ready, 1);
                        }
                        usleep(2000);
                        continue;
                }
                snprintf(path, sizeof(path), "%s/%s", mnt, hex);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 && n < MAXFD)
                        fds[n++] = fd;
                else if (fd >= 0)
                        close(fd);
                if (unlink(path) < 0)
                        a_count(R_HOARD, errno);
        }
        if (!said)
                atomic_fetch_add(&S->ready, 1);
        for (unsigned k = 0; k < n; k++)
                close(fds[k]);
        free(fds);
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
        /* Last to take A's staging slots: the publishing routes first run into their own
         * limits (snapshot count, snapshot bytes), not into this one. */
        for (int w = 0; w < 6000 && !atomic_load(&S->stop) &&
                        !(atomic_load(&S->refused[R_TINY]) && atomic_load(&S->refused[R_HOARD]));
             w++)
                usleep(10000);
        while (!atomic_load(&S->stop)) {
                int fd, r = load_stage_held(mnt, i++, buf, sizeof(buf), &fd);

                if (fd >= 0) {
                        if (n < MAXFD)
                                fds[n++] = fd;
                        else
                                close(fd);
                }
                a_count(R_STAGE, r);
                if (r) {
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

static void route_abandon(void)
{
        static uint8_t buf[1024];
        uint64_t i = 0;
        bool said = false;

        while (!atomic_load(&S->stop)) {
                char path[4096];
                int fd;

                snprintf(path, sizeof(path), "%s/.staging/a%llu", mnt, (unsigned long long)i++);
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0) {
                        a_count(R_ABANDON, errno);
                        if (!said) {
                                said = true;
                                atomic_fetch_add(&S->ready, 1);
                        }
                        usleep(20000);
                        continue;
                }
                write_all(fd, buf, sizeof(buf));
                close(fd);
                a_count(R_ABANDON, 0);
                /* A few a second: enough for every expiry sweep to remove several at once,
                 * not so many that A's own other routes never get a staging slot. */
                usleep(250000);
        }
        if (!said)
                atomic_fetch_add(&S->ready, 1);
}

static void route_flood(enum route r)
{
        char path[4096], name[256];
        uint64_t i = 0;

        atomic_fetch_add(&S->ready, 1);
        while (!atomic_load(&S->stop)) {
                /* 200 bytes; one in four with bytes that are not UTF-8. */
                memset(name, 'x', 200);
                snprintf(name + 200, 40, "%llu", (unsigned long long)i);
                if (i % 4 == 0)
                        name[10] = (char)0xff, name[11] = (char)0xe9;
                i++;
                snprintf(path, sizeof(path), "%s/%s", flood_at, name);
                a_count(r, mkdir(path, 0700) < 0 ? errno : 0);
        }
}

static pid_t spawn_route(enum route r, unsigned dirs)
{
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        load_become(uid_a, r == R_DIRS ? dirs + 64 : 16384);
        switch (r) {
        case R_DIRS: route_dirs(dirs); break;
        case R_TINY: route_tiny(); break;
        case R_HOARD: route_hoard(); break;
        case R_STAGE: route_stage(); break;
        case R_ABANDON: route_abandon(); break;
        case R_FLOOD:
        case R_FLOOD2: route_flood(r); break;
        default: break;
        }
        _exit(0);
}

/* ---- B ---- */

/* B's cycle in its steps: the publish (create, write, close, rename), the verified open and
 * read, the unlink. Each step's latency is kept too, so a tail can be put on a step. */
enum b_step { S_PUBLISH, S_VERIFY, S_UNLINK, N_STEPS };
static const char *step_name[N_STEPS] = { "publish", "verify+read", "unlink" };

struct b_result {
        unsigned long cycles, mismatches, unlink_refused;
        unsigned long err[MAX_ERRNO];
        char first_err[256];
        size_t n;
        uint64_t *step[N_STEPS]; /* ns per cycle and step, in the same mapping */
        uint64_t lat[]; /* ns per cycle */
};

/* B's cycles for secs seconds, in a child of uid B; results in *res (shared memory). */
static void run_b(double secs, uint64_t seed, struct b_result *res)
{
        uint8_t *buf = malloc(B_MAX), *scratch = malloc(B_MAX);
        struct snap_hasher *h;
        uint64_t s = seed, end;
        bool may_unlink = true;

        load_become(uid_b, 0);
        if (!buf || !scratch || snap_hasher_new(&h) < 0)
                _exit(3);
        end = load_now_ns() + (uint64_t)(secs * 1e9);
        while (load_now_ns() < end && res->n < MAX_SAMPLES) {
                size_t len = 4096 + (size_t)(rnd(&s) % (B_MAX - 4096 + 1));
                char hex[65], path[4096];
                uint64_t t0, t1, t2;
                int r;

                fill(buf, len, rnd(&s));
                t0 = load_now_ns();
                r = load_publish(mnt, "b", buf, len, hex);
                t1 = load_now_ns();
                if (r == 0)
                {
                        bool mismatch;
                        size_t nread;
                        r = verify_and_read(mnt, hex, buf, len, B_MAX, h, scratch, &mismatch,
                                            &nread);
                        res->mismatches += mismatch;
                }
                t2 = load_now_ns();
                if (r == 0 && may_unlink) {
                        snprintf(path, sizeof(path), "%s/%s", mnt, hex);
                        if (unlink(path) < 0) {
                                /* A mount where publishers may not remove their own: not
                                 * B's error, its snapshots just stay. */
                                if (errno == EPERM) {
                                        may_unlink = false;
                                        res->unlink_refused++;
                                } else {
                                        r = -errno;
                                }
                        }
                }
                if (r < 0) {
                        res->err[-r < MAX_ERRNO ? -r : 0]++;
                        if (!res->first_err[0])
                                snprintf(res->first_err, sizeof(res->first_err), "%s",
                                         strerrorname_np(-r));
                        continue;
                }
                res->step[S_PUBLISH][res->n] = t1 - t0;
                res->step[S_VERIFY][res->n] = t2 - t1;
                res->step[S_UNLINK][res->n] = load_now_ns() - t2;
                res->lat[res->n++] = load_now_ns() - t0;
                res->cycles++;
        }
        snap_hasher_free(h);
        _exit(0);
}

/* The p-quantile of a sorted array of n nanosecond figures, in ms. */
static double quantile(const uint64_t *v, size_t n, double p)
{
        return (double)load_quantile(v, n, p) / 1e6;
}

static double pct(struct b_result *r, double p)
{
        return quantile(r->lat, r->n, p);
}


/* Runs B for secs seconds; meanwhile samples the daemon's RSS into *peak (if daemon). */
static struct b_result *b_phase(double secs, uint64_t seed, pid_t daemon, long *peak)
{
        size_t size = sizeof(struct b_result) + (1 + N_STEPS) * MAX_SAMPLES * sizeof(uint64_t);
        struct b_result *res = mmap(NULL, size, PROT_READ | PROT_WRITE,
                                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        int status;
        pid_t pid, w;

        if (res == MAP_FAILED)
                exit(2);
        for (int i = 0; i < N_STEPS; i++)
                res->step[i] = res->lat + (size_t)(1 + i) * MAX_SAMPLES;
        pid = fork();
        if (pid == 0)
                run_b(secs, seed, res);
        if (pid < 0)
                exit(2);
        while ((w = waitpid(pid, &status, WNOHANG)) == 0) {
                if (daemon && peak) {
                        long r = load_rss_kib(daemon);
                        if (r > *peak)
                                *peak = r;
                }
                usleep(50000);
        }
        if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "noisy: uid B's process failed\n");
                exit(2);
        }
        qsort(res->lat, res->n, sizeof(uint64_t), load_cmp_u64);
        for (int i = 0; i < N_STEPS; i++)
                qsort(res->step[i], res->n, sizeof(uint64_t), load_cmp_u64);
        return res;
}

static unsigned long b_errors(const struct b_result *r)
{
        unsigned long n = 0;
        for (int e = 0; e < MAX_ERRNO; e++)
                n += r->err[e];
        return n;
}

/* ---- the daemon ---- */

static long long file_size(const char *path)
{
        struct stat st;
        return path && stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Bytes of the log's lines from offset from on that name uid (its own events, and the
 * coalesced counts of its refusals): what A cost the log, apart from B's own publishes. */
static long long log_bytes_of(const char *path, long long from, uid_t uid)
{
        char needle[32], *line = NULL;
        size_t cap = 0;
        long long n = 0;
        ssize_t len;
        FILE *f;

        if (!path || !(f = fopen(path, "r")))
                return -1;
        if (from > 0)
                fseeko(f, from, SEEK_SET);
        snprintf(needle, sizeof(needle), "\"uid\":%u,", (unsigned)uid);
        while ((len = getline(&line, &cap, f)) > 0)
                if (strstr(line, needle))
                        n += len;
        free(line);
        fclose(f);
        return n;
}

static void print_errs(const char *title, const unsigned long *e)
{
        print_errno_counts(title, 26, e, MAX_ERRNO);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "seconds", required_argument, NULL, 't' },
                { "quiet-seconds", required_argument, NULL, 'q' },
                { "snapshots", required_argument, NULL, 'n' },
                { "dir-handles", required_argument, NULL, 'd' },
                { "uid-a", required_argument, NULL, 'a' },
                { "uid-b", required_argument, NULL, 'b' },
                { "daemon-pid", required_argument, NULL, 'p' },
                { "audit-log", required_argument, NULL, 'l' },
                { "max-rss-growth", required_argument, NULL, 'r' },
                { "max-log", required_argument, NULL, 'L' },
                { "without", required_argument, NULL, 'w' },
                { "flood-at", required_argument, NULL, 'f' },
                { NULL, 0, NULL, 0 },
        };
        double secs = 10, quiet = 5;
        unsigned snapshots = 4096, dirs = 2000;
        long max_rss_mib = 64, max_log_mib = 4;
        const char *audit_log = NULL;
        pid_t daemon = 0, pids[N_ROUTES] = { 0 };
        bool skip[N_ROUTES] = { false };
        int n_routes = N_ROUTES;
        struct b_result *bq, *bn;
        long rss0, rss_peak, rss1;
        long long log0, log1, log_a;
        int c, status, failed = 0, ok;
        uint64_t t_end;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 't': secs = atof(optarg); break;
                case 'q': quiet = atof(optarg); break;
                case 'n': snapshots = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'd': dirs = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'a': uid_a = (uid_t)strtoul(optarg, NULL, 10); break;
                case 'b': uid_b = (uid_t)strtoul(optarg, NULL, 10); break;
                case 'p': daemon = (pid_t)strtol(optarg, NULL, 10); break;
                case 'l': audit_log = optarg; break;
                case 'r': max_rss_mib = strtol(optarg, NULL, 10); break;
                case 'L': max_log_mib = strtol(optarg, NULL, 10); break;
                case 'f': flood_at = optarg; break;
                case 'w':
                        for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                                bool known = false;
                                for (int r = 0; r < N_ROUTES; r++)
                                        if (strcmp(tok, route_key[r]) == 0)
                                                skip[r] = known = true;
                                if (!known) {
                                        fprintf(stderr, "noisy: no route named %s\n", tok);
                                        return 2;
                                }
                        }
                        break;
                default: return 2;
                }
        }
        if (optind != argc - 1 || secs <= 0) {
                fprintf(stderr, "usage: noisy [options] MOUNTPOINT\n");
                return 2;
        }
        mnt = argv[optind];
        if (!flood_at)
                flood_at = mnt;
        S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (S == MAP_FAILED)
                return 2;
        memset(S, 0, sizeof(*S));

        /* Long listings first, published by the caller (the owner). */
        for (unsigned i = 0; i < snapshots; i++) {
                char buf[64], hex[65];
                int r;
                snprintf(buf, sizeof(buf), "listed %u", i);
                r = load_publish(mnt, "listed", (const uint8_t *)buf, strlen(buf), hex);
                if (r < 0 && r != -EEXIST) {
                        fprintf(stderr, "noisy: publishing snapshot %u: %s\n", i, strerror(-r));
                        return 2;
                }
        }

        bq = b_phase(quiet, 1, 0, NULL);
        rss0 = load_rss_kib(daemon);
        log0 = file_size(audit_log);

        for (int r = 0; r < N_ROUTES; r++) {
                if (skip[r])
                        n_routes--;
                else
                        pids[r] = spawn_route((enum route)r, dirs);
        }
        /* B starts once every route is under way (dir handles held, limits reached). */
        t_end = load_now_ns() + 60 * 1000000000ull;
        while (atomic_load(&S->ready) < n_routes && load_now_ns() < t_end)
                usleep(10000);
        rss_peak = load_rss_kib(daemon);
        bn = b_phase(secs, 2, daemon, &rss_peak);
        atomic_store(&S->stop, true);
        for (int r = 0; r < N_ROUTES; r++)
                if (pids[r] && (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) ||
                                WEXITSTATUS(status) != 0))
                        failed++;
        rss1 = load_rss_kib(daemon);
        log1 = file_size(audit_log);
        log_a = log_bytes_of(audit_log, log0, uid_a);

        printf("listed snapshots           %u; uid A %u, uid B %u\n", snapshots, (unsigned)uid_a,
               (unsigned)uid_b);
        printf("B quiet                    %lu cycles in %.1f s, p50 %.3f ms, p99 %.3f ms\n",
               bq->cycles, quiet, pct(bq, 0.5), pct(bq, 0.99));
        printf("B noisy                    %lu cycles in %.1f s, p50 %.3f ms, p99 %.3f ms\n",
               bn->cycles, secs, pct(bn, 0.5), pct(bn, 0.99));
        printf("B p99 noisy / quiet        %.2f\n",
               pct(bq, 0.99) > 0 ? pct(bn, 0.99) / pct(bq, 0.99) : 0);
        for (int i = 0; i < N_STEPS; i++)
                printf("B step %-19s p99 quiet %.3f ms, noisy %.3f ms\n", step_name[i],
                       quantile(bq->step[i], bq->n, 0.99), quantile(bn->step[i], bn->n, 0.99));
        print_errs("B errors (quiet)", bq->err);
        print_errs("B errors (noisy)", bn->err);
        if (bq->first_err[0] || bn->first_err[0])
                printf("B first error              %s\n",
                       bq->first_err[0] ? bq->first_err : bn->first_err);
        printf("B wrong bytes              %lu\n", bq->mismatches + bn->mismatches);
        if (bq->unlink_refused || bn->unlink_refused)
                printf("B may not unlink its own   (its snapshots stay)\n");
        printf("A dir handles held         %lu\n", atomic_load(&S->dir_handles));
        for (int r = 0; r < N_ROUTES; r++) {
                unsigned long e[MAX_ERRNO];
                char title[64];
                for (int i = 0; i < MAX_ERRNO; i++)
                        e[i] = atomic_load(&S->a_err[r][i]);
                snprintf(title, sizeof(title), "A %s: %lu ok,", route_name[r],
                         atomic_load(&S->a_ops[r]));
                print_errs(title, e);
        }
        if (daemon)
                printf("daemon RSS                 before %ld KiB, peak %ld KiB (+%ld KiB), "
                       "after A %ld KiB\n",
                       rss0, rss_peak, rss_peak - rss0, rss1);
        if (audit_log)
                printf("audit log                  %lld bytes before, %lld after (+%lld, "
                       "%lld of them A's)\n",
                       log0, log1, log1 - log0, log_a);
        printf("crashed processes          %d\n", failed);

        ok = failed == 0 && b_errors(bq) == 0 && b_errors(bn) == 0 && bq->mismatches == 0 &&
             bn->mismatches == 0 && bn->cycles > 0;
        if (daemon && (rss0 < 0 || rss_peak - rss0 >= max_rss_mib * 1024)) {
                printf("FAIL: daemon RSS grew by %ld KiB (bound %ld MiB)\n", rss_peak - rss0,
                       max_rss_mib);
                ok = 0;
        }
        if (audit_log && (log_a < 0 || log_a >= max_log_mib * (1ll << 20))) {
                printf("FAIL: A's lines in the audit log: %lld bytes (bound %ld MiB)\n", log_a,
                       max_log_mib);
                ok = 0;
        }
        printf("%s\n", ok ? "noisy: B unharmed" : "noisy: FAILED");
        return ok ? 0 : 1;
}
