/* SPDX-License-Identifier: MIT */
/* What every snapfs benchmark shares: a clock, sample series and their medians, CPU pinning,
 * a snapfs daemon started and stopped around a run, the daemon's resident memory, and the
 * rows of the summary table (printed, and appended to a CSV that scripts/bench.sh turns into
 * one table and one chart). Never used by a test: no timing is ever asserted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

long long bench_now_ns(void);

/* A growing list of samples (ns, or bytes per second); the median is the reported figure. */
struct bench_series {
        double *v;
        size_t n, cap;
};

void bench_series_add(struct bench_series *s, double v); /* aborts when out of memory */
double bench_series_median(const struct bench_series *s);
void bench_series_free(struct bench_series *s);

/* Pins the calling thread (and what it forks later) to one CPU, or to every CPU for -1.
 * 0, or a negative errno. */
int bench_pin(int cpu);

/* Where client and daemon ran: the daemon pinned beside the client ("same"), on another CPU
 * ("split"), or left to the scheduler ("free"). */
enum bench_placement {
        BENCH_FREE,
        BENCH_SAME,
        BENCH_SPLIT,
};

const char *bench_placement_name(enum bench_placement p);
int bench_placement_parse(const char *s, enum bench_placement *p);
/* The CPU for the client and for the daemon under p (-1: not pinned). */
int bench_client_cpu(enum bench_placement p);
int bench_daemon_cpu(enum bench_placement p);

struct bench_daemon {
        pid_t pid;
        char mnt[256];
        int root;          /* O_PATH descriptor of the judged mount root */
        uint64_t mount_id; /* the judged mount (unique id where the kernel has one) */
        uint64_t dev;      /* st_dev of the mount */
};

/* Mounts snapfs at mnt (created if missing) with `snapfs mount -f` plus opts (NULL-ended),
 * pinned to cpu (-1: not pinned), waits until it serves, then runs mountcheck (preset snapfs)
 * on it and keeps the pinned root. 0, or a negative errno after printing why. */
int bench_daemon_start(struct bench_daemon *d, const char *snapfs, const char *mnt, int cpu,
                       const char *const *opts);
/* SIGTERM, wait; 0 when it exited 0 and left no mount. */
int bench_daemon_stop(struct bench_daemon *d);

/* Resident set of a process in bytes (VmRSS), or -1. */
long long bench_rss_bytes(pid_t pid);

/* Samples whether the daemon's threads ran on the client's CPU: call before and after one
 * operation (outside the timed region); the report says how often they shared it. */
struct bench_cpu_watch {
        pid_t daemon;
        unsigned long long runtime[64];
        pid_t tid[64];
        size_t ntid;
        unsigned long samples; /* daemon threads seen running during an operation */
        unsigned long shared;  /* ... whose last CPU was the client's */
};

void bench_cpu_watch_begin(struct bench_cpu_watch *w);
void bench_cpu_watch_end(struct bench_cpu_watch *w);
/* "daemon ran on the client's CPU 93%", or "placement not sampled". */
const char *bench_cpu_watch_describe(const struct bench_cpu_watch *w, char *buf, size_t len);

/* One row of the summary table: a snapfs figure beside one baseline figure. The ratio is
 * always snapfs / baseline of the quantity in unit, so for times lower is better and for
 * throughputs higher is better; target says which ("<=1.5", ">=0.4") or is "" for none.
 * With baseline NULL the row has no ratio and target applies to the value itself. */
struct bench_row {
        const char *item;      /* "1".."6": the benchmark list in scripts/bench.sh */
        const char *what;      /* "publish+verified open" */
        const char *size;      /* "4KiB", "-" */
        const char *placement; /* "free", "same", "split", "-" */
        const char *snapfs;    /* the measured contender ("snapfs", "statmount") */
        const char *baseline;  /* "memfd", "tmpfs", ... or NULL */
        double snapfs_value;
        double baseline_value;
        const char *unit;      /* "us", "ms", "GB/s", "B" */
        const char *target;
        int runs;
        const char *note;      /* placement observed, or "" */
};

/* Appends rows to path from now on; bench_emit also prints each row, bench_record does not. */
int bench_csv_open(const char *path);
void bench_emit(const struct bench_row *r);
void bench_record(const struct bench_row *r);
void bench_csv_close(void);

/* Fills buf with bytes unique to (tag, n): every published snapshot has new content. */
void bench_fill(void *buf, size_t len, uint32_t tag, uint64_t n);

/* perror-style failure: prints and exits 1. */
__attribute__((noreturn, format(printf, 1, 2))) void bench_die(const char *fmt, ...);
