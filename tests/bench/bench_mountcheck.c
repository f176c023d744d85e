/* SPDX-License-Identifier: MIT */
/* bench_mountcheck: latency of mc_check_path() on one compliant tmpfs while the namespace
 * holds N other mounts (100, 1,000, 10,000), statmount and mountinfo backends side by side
 * in the same run, medians and their ratio. Root, inside `unshare -m --propagation private`
 * (scripts/bench.sh does that): every mount made here dies with the namespace.
 *
 *   bench_mountcheck [--csv FILE] [N...]     default: 100 1000 10000
 *
 * With --csv, each size also becomes a row of scripts/bench.sh's summary table (item 6):
 * statmount (what snapfs clients use) against the mountinfo baseline. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/benchutil.h"
#include "mountcheck/mountcheck.h"

#define BUDGET_NS 1500000000LL /* per backend and size: enough runs for a stable median */
#define MIN_RUNS 21
#define MAX_RUNS 2001

static char base[] = "/tmp/mc-bench-XXXXXX";

static long long now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

static int mount_tmpfs(const char *path, unsigned long flags, const char *opts)
{
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return -1;
        return mount("tmpfs", path, "tmpfs", flags, opts);
}

/* Median latency in ns of n checks; -1 if a check fails or is not compliant. */
static long long median_check(const char *path, const struct mc_policy *pol,
                              enum mc_backend backend, int *runs)
{
        static long long t[MAX_RUNS];
        long long start = now_ns();
        int n = 0;

        for (int warm = 0; warm < 3; warm++) {
                struct mc_verdict v;
                if (mc_check_path(path, pol, backend, &v, NULL) < 0 || !v.compliant ||
                    v.backend != backend)
                        return -1;
        }
        while (n < MAX_RUNS && (n < MIN_RUNS || now_ns() - start < BUDGET_NS)) {
                struct mc_verdict v;
                long long t0 = now_ns();
                int r = mc_check_path(path, pol, backend, &v, NULL);
                t[n++] = now_ns() - t0;
                if (r < 0 || !v.compliant)
                        return -1;
        }
        qsort(t, (size_t)n, sizeof(t[0]), cmp_ll);
        *runs = n;
        return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static int count_mounts(void)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        int c, n = 0;
        if (!f)
                return -1;
        while ((c = getc(f)) != EOF)
                n += c == '\n';
        fclose(f);
        return n;
}

int main(int argc, char **argv)
{
        static const long defaults[] = { 100, 1000, 10000 };
        char target[64], many[64], p[96];
        struct mc_policy pol;
        long made = 0;
        int rc = 1, first = 1;

        if (argc > 2 && strcmp(argv[1], "--csv") == 0) {
                if (bench_csv_open(argv[2]) < 0) {
                        perror(argv[2]);
                        return 2;
                }
                first = 3;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "bench_mountcheck: run as root in a private mount namespace\n");
                return 2;
        }
        if (!mkdtemp(base) || mount_tmpfs(base, 0, "size=1m") < 0) {
                perror("bench_mountcheck: scratch tmpfs");
                return 2;
        }
        snprintf(target, sizeof(target), "%s/target", base);
        snprintf(many, sizeof(many), "%s/many", base);
        if (mount_tmpfs(target, MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=1777") < 0 ||
            mount_tmpfs(many, 0, "size=8m,nr_inodes=100000") < 0) {
                perror("bench_mountcheck: mount");
                goto out;
        }
        mc_policy_preset(&pol, "tmpfs");

        printf("%8s %8s %14s %6s %14s %6s %9s\n", "mounts", "in ns", "statmount ms", "runs",
               "mountinfo ms", "runs", "ratio");
        for (int i = 0; i < (argc > first ? argc - first : 3); i++) {
                long want = argc > first ? strtol(argv[i + first], NULL, 10) : defaults[i];
                char what[48];
                long long sm, mi;
                int sm_runs = 0, mi_runs = 0;

                /* N other mounts, each a small tmpfs under one tmpfs. */
                for (; made < want; made++) {
                        snprintf(p, sizeof(p), "%s/%ld", many, made);
                        if (mount_tmpfs(p, MS_NOSUID | MS_NODEV, "size=4k") < 0) {
                                perror("bench_mountcheck: mount");
                                goto out;
                        }
                }
                sm = median_check(target, &pol, MC_BACKEND_STATMOUNT, &sm_runs);
                mi = median_check(target, &pol, MC_BACKEND_MOUNTINFO, &mi_runs);
                if (sm < 0 || mi < 0) {
                        fprintf(stderr, "bench_mountcheck: the check failed or refused the target\n");
                        goto out;
                }
                printf("%8ld %8d %14.4f %6d %14.4f %6d %8.1fx\n", want, count_mounts(),
                       (double)sm / 1e6, sm_runs, (double)mi / 1e6, mi_runs, (double)mi / (double)sm);
                fflush(stdout);
                snprintf(what, sizeof(what), "mountcheck %ld mounts", want);
                bench_record(&(struct bench_row){
                        .item = "6",
                        .what = what,
                        .size = "-",
                        .placement = "-",
                        .snapfs = "statmount",
                        .baseline = "mountinfo",
                        .snapfs_value = (double)sm / 1e6,
                        .baseline_value = (double)mi / 1e6,
                        .unit = "ms",
                        .target = "",
                        .runs = sm_runs,
                        .note = "",
                });
        }
        rc = 0;
out:
        /* Lazily detaching the scratch tmpfs takes every mount below it along. */
        umount2(base, MNT_DETACH);
        rmdir(base);
        bench_csv_close();
        return rc;
}
