/* SPDX-License-Identifier: MIT */
/* The helpers every snapfs benchmark shares (clock, medians, pinning, a daemon per run,
 * the summary rows). */
#include "tests/bench/benchutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mountcheck/mountcheck.h"
#include "common/util.h"

void bench_die(const char *fmt, ...)
{
        va_list ap;

        fflush(stdout);
        fprintf(stderr, "bench: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n");
        exit(1);
}

long long bench_now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void bench_series_add(struct bench_series *s, double v)
{
        if (s->n == s->cap) {
                size_t ncap = s->cap ? 2 * s->cap : 64;
                double *nv = realloc(s->v, ncap * sizeof(*nv));
                if (!nv)
                        bench_die("out of memory");
                s->v = nv;
                s->cap = ncap;
        }
        s->v[s->n++] = v;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

double bench_series_median(const struct bench_series *s)
{
        double *c, m;

        if (s->n == 0)
                return NAN;
        c = malloc(s->n * sizeof(*c));
        if (!c)
                bench_die("out of memory");
        memcpy(c, s->v, s->n * sizeof(*c));
        qsort(c, s->n, sizeof(*c), cmp_double);
        m = s->n % 2 ? c[s->n / 2] : (c[s->n / 2 - 1] + c[s->n / 2]) / 2;
        free(c);
        return m;
}

void bench_series_free(struct bench_series *s)
{
        free(s->v);
        *s = (struct bench_series){ 0 };
}

int bench_pin(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        if (cpu < 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                for (long i = 0; i < n && i < CPU_SETSIZE; i++)
                        CPU_SET((int)i, &set);
        } else {
                CPU_SET(cpu, &set);
        }
        return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

const char *bench_placement_name(enum bench_placement p)
{
        switch (p) {
        case BENCH_SAME:
                return "same";
        case BENCH_SPLIT:
                return "split";
        default:
                return "free";
        }
}

int bench_placement_parse(const char *s, enum bench_placement *p)
{
        if (strcmp(s, "free") == 0)
                *p = BENCH_FREE;
        else if (strcmp(s, "same") == 0)
                *p = BENCH_SAME;
        else if (strcmp(s, "split") == 0)
                *p = BENCH_SPLIT;
        else
                return -EINVAL;
        return 0;
}

int bench_client_cpu(enum bench_placement p)
{
        return p == BENCH_FREE ? -1 : 0;
}

int bench_daemon_cpu(enum bench_placement p)
{
        if (p == BENCH_FREE)
                return -1;
        /* One CPU only: "split" cannot exist; fall back to sharing and say so in the row. */
        if (p == BENCH_SPLIT && sysconf(_SC_NPROCESSORS_ONLN) > 1)
                return 1;
        return 0;
}

/* ---- the daemon ---- */

int bench_daemon_start(struct bench_daemon *d, const char *snapfs, const char *mnt, int cpu,
                       const char *const *opts)
{
        const char *argv[32];
        struct mc_policy pol;
        struct mc_verdict v;
        struct stat st;
        char line[512];
        size_t argc = 0;
        int pfd[2], r;
        FILE *f;

        memset(d, 0, sizeof(*d));
        d->root = -1;
        snprintf(d->mnt, sizeof(d->mnt), "%s", mnt);
        if (mkdir(mnt, 0755) < 0 && errno != EEXIST)
                return -errno;
        argv[argc++] = snapfs;
        argv[argc++] = "mount";
        argv[argc++] = "-f";
        for (; opts && *opts && argc < ARRAY_SIZE(argv) - 2; opts++)
                argv[argc++] = *opts;
        argv[argc++] = mnt;
        argv[argc] = NULL;
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        d->pid = fork();
        if (d->pid < 0)
                return -errno;
        if (d->pid == 0) {
                if (bench_pin(cpu) < 0 || dup2(pfd[1], STDOUT_FILENO) < 0)
                        _exit(127);
                execv(snapfs, (char *const *)argv);
                _exit(127);
        }
        close(pfd[1]);
        f = fdopen(pfd[0], "r");
        if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "snapfs: serving", 15) != 0) {
                fprintf(stderr, "bench: %s mount %s did not start\n", snapfs, mnt);
                if (f)
                        fclose(f);
                waitpid(d->pid, NULL, 0);
                d->pid = 0;
                return -EIO;
        }
        fclose(f);

        mc_policy_preset(&pol, "snapfs");
        r = mc_check_path(mnt, &pol, MC_BACKEND_AUTO, &v, &d->root);
        if (r < 0 || !v.compliant) {
                fprintf(stderr, "bench: mountcheck refused %s (%s)\n", mnt,
                        r < 0 ? strerror(-r) : "not compliant");
                bench_daemon_stop(d);
                return r < 0 ? r : -EPERM;
        }
        d->mount_id = v.mount_id;
        if (fstat(d->root, &st) < 0)
                return -errno;
        d->dev = st.st_dev;
        return 0;
}

int bench_daemon_stop(struct bench_daemon *d)
{
        int status = 0;

        if (d->root >= 0)
                close(d->root);
        d->root = -1;
        if (d->pid <= 0)
                return 0;
        kill(d->pid, SIGTERM);
        if (waitpid(d->pid, &status, 0) < 0)
                return -errno;
        d->pid = 0;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

long long bench_rss_bytes(pid_t pid)
{
        char path[64], line[256];
        long long kb = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
                        break;
        fclose(f);
        return kb < 0 ? -1 : kb * 1024;
}

/* ---- where the daemon ran ---- */

static bool task_sample(pid_t pid, pid_t tid, unsigned long long *runtime, int *cpu)
{
        char path[96], buf[1024], *p;
        FILE *f;
        int n;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
        f = fopen(path, "re");
        if (!f)
                return false;
        n = fscanf(f, "%llu", runtime);
        fclose(f);
        if (n != 1)
                return false;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
        f = fopen(path, "re");
        if (!f)
                return false;
        p = fgets(buf, sizeof(buf), f);
        fclose(f);
        if (!p || !(p = strrchr(buf, ')')))
                return false;
        /* Field 39 (processor) counted from field 3, the first after the command name. */
        p += 2;
        for (int field = 3; field < 39 && p; field++) {
                p = strchr(p, ' ');
                if (p)
                        p++;
        }
        return p && sscanf(p, "%d", cpu) == 1;
}

void bench_cpu_watch_begin(struct bench_cpu_watch *w)
{
        char path[64];
        struct dirent *e;
        DIR *dir;
        int cpu;

        w->ntid = 0;
        snprintf(path, sizeof(path), "/proc/%d/task", (int)w->daemon);
        dir = opendir(path);
        if (!dir)
                return;
        while ((e = readdir(dir)) && w->ntid < ARRAY_SIZE(w->tid)) {
                pid_t tid = (pid_t)atoi(e->d_name);
                if (tid > 0 && task_sample(w->daemon, tid, &w->runtime[w->ntid], &cpu))
                        w->tid[w->ntid++] = tid;
        }
        closedir(dir);
}

void bench_cpu_watch_end(struct bench_cpu_watch *w)
{
        int me = sched_getcpu(), cpu;
        unsigned long long rt;

        for (size_t i = 0; i < w->ntid; i++) {
                if (!task_sample(w->daemon, w->tid[i], &rt, &cpu) || rt == w->runtime[i])
                        continue;
                /* A thread that ran during the operation, and the CPU it ran on last. */
                w->samples++;
                if (cpu == me)
                        w->shared++;
        }
}

const char *bench_cpu_watch_describe(const struct bench_cpu_watch *w, char *buf, size_t len)
{
        if (!w->samples)
                snprintf(buf, len, "placement not sampled");
        else
                snprintf(buf, len, "daemon ran on the client's CPU %lu%%",
                         100 * w->shared / w->samples);
        return buf;
}

/* ---- rows ---- */

static FILE *csv;

int bench_csv_open(const char *path)
{
        bool fresh;
        struct stat st;

        fresh = stat(path, &st) < 0 || st.st_size == 0;
        csv = fopen(path, "ae");
        if (!csv)
                return -errno;
        if (fresh)
                fprintf(csv, "item,what,size,placement,snapfs,baseline,snapfs_value,"
                             "baseline_value,unit,ratio,target,met,runs,note\n");
        return 0;
}

void bench_csv_close(void)
{
        if (csv)
                fclose(csv);
        csv = NULL;
}

/* "<=1.5" or ">=0.4" applied to x: "yes", "no", or "-" without a target. */
static const char *met(const char *target, double x)
{
        double t;

        if (!target || !*target || isnan(x))
                return "-";
        t = strtod(target + 2, NULL);
        if (strncmp(target, "<=", 2) == 0)
                return x <= t ? "yes" : "no";
        if (strncmp(target, ">=", 2) == 0)
                return x >= t ? "yes" : "no";
        return "-";
}

static void row_strings(const struct bench_row *r, double *ratio, const char **m, char *rs,
                        char *bs, size_t n)
{
        *ratio = r->baseline ? r->snapfs_value / r->baseline_value : NAN;
        *m = met(r->target, r->baseline ? *ratio : r->snapfs_value);
        snprintf(rs, n, "-");
        snprintf(bs, n, "-");
        if (r->baseline) {
                snprintf(rs, n, "%.3f", *ratio);
                snprintf(bs, n, "%.4g", r->baseline_value);
        }
}

void bench_record(const struct bench_row *r)
{
        char rs[32], bs[32];
        const char *m;
        double ratio;

        if (!csv)
                return;
        row_strings(r, &ratio, &m, rs, bs, sizeof(rs));
        fprintf(csv, "%s,%s,%s,%s,%s,%s,%.6g,%s,%s,%s,%s,%s,%d,%s\n", r->item, r->what, r->size,
                r->placement, r->snapfs, r->baseline ? r->baseline : "-", r->snapfs_value, bs,
                r->unit, rs, r->target && *r->target ? r->target : "-", m, r->runs,
                r->note ? r->note : "");
        fflush(csv);
}

void bench_emit(const struct bench_row *r)
{
        char rs[32], bs[32];
        const char *m;
        double ratio;

        row_strings(r, &ratio, &m, rs, bs, sizeof(rs));
        printf("  %-28s %-6s %-5s %-16s %9.4g  %-17s %9s %-4s  ratio %7s  target %-6s %-3s%s%s\n",
               r->what, r->size, r->placement, r->snapfs, r->snapfs_value,
               r->baseline ? r->baseline : "-", bs, r->unit, rs,
               r->target && *r->target ? r->target : "-", m, r->note && *r->note ? "  " : "",
               r->note ? r->note : "");
        fflush(stdout);
        bench_record(r);
}

void bench_fill(void *buf, size_t len, uint32_t tag, uint64_t n)
{
        uint64_t x = ((uint64_t)tag << 40) ^ (n * 0x9e3779b97f4a7c15ull) ^ len;
        uint8_t *p = buf;
        size_t i = 0;

        /* xorshift64*: cheap, and no two (tag, n) give the same bytes. */
        for (; i + 8 <= len; i += 8) {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                uint64_t y = x * 0x2545f4914f6cdd1dull;
                memcpy(p + i, &y, 8);
        }
        for (; i < len; i++)
                p[i] = (uint8_t)(x >> (8 * (i & 7)));
        /* The identity goes in the first bytes verbatim: a collision would need equal tags. */
        if (len >= 16) {
                memcpy(p, &n, 8);
                memcpy(p + 8, &tag, 4);
        }
}
