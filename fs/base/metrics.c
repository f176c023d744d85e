/* SPDX-License-Identifier: MIT */
/* The daemon's counters and their text (metrics.h). */
#include "fs/base/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strtable.h"

const uint64_t sfs_metrics_bounds_ns[SFS_METRICS_BUCKETS] = {
        10000,    25000,    50000,     100000,    250000,    500000,    1000000,   2500000,
        5000000,  10000000, 25000000,  50000000,  100000000, 250000000, 1000000000,
};

/* The same bounds as label values, in seconds. */
static const char *const bound_text[SFS_METRICS_BUCKETS + 1] = {
        "0.00001", "0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
        "0.005",   "0.01",     "0.025",   "0.05",   "0.1",     "0.25",   "1.0",   "+Inf",
};

static const char *const op_names[SFS_OP_COUNT] = {
        [SFS_OP_LOOKUP] = "lookup",       [SFS_OP_GETATTR] = "getattr",
        [SFS_OP_SETATTR] = "setattr",     [SFS_OP_ACCESS] = "access",
        [SFS_OP_OPEN] = "open",           [SFS_OP_CREATE] = "create",
        [SFS_OP_READ] = "read",           [SFS_OP_WRITE] = "write",
        [SFS_OP_FLUSH] = "flush",         [SFS_OP_RELEASE] = "release",
        [SFS_OP_UNLINK] = "unlink",       [SFS_OP_RENAME] = "rename",
        [SFS_OP_MKNOD] = "mknod",         [SFS_OP_MKDIR] = "mkdir",
        [SFS_OP_RMDIR] = "rmdir",         [SFS_OP_SYMLINK] = "symlink",
        [SFS_OP_LINK] = "link",           [SFS_OP_OPENDIR] = "opendir",
        [SFS_OP_READDIR] = "readdir",     [SFS_OP_READDIRPLUS] = "readdirplus",
        [SFS_OP_RELEASEDIR] = "releasedir", [SFS_OP_STATFS] = "statfs",
        [SFS_OP_GETXATTR] = "getxattr",   [SFS_OP_LISTXATTR] = "listxattr",
        [SFS_OP_SETXATTR] = "setxattr",   [SFS_OP_REMOVEXATTR] = "removexattr",
};

/* The audit events of docs/design.md's table; the last slot counts any other. The first is
 * publish (SFS_METRICS_EVENT_PUBLISH); the two named below are the refusals. */
enum { EV_PUBLISH_REFUSED = 2, EV_REFUSED = 3 };
static const char *const event_names[SFS_METRICS_EVENTS + 1] = {
        "publish",      "publish-exists", "publish-refused", "refused",
        "unlink",       "unlink-hold",    "staging-expired", "scope-create",
        "scope-remove", "grant",          "revoke",          "store-blob-corrupt",
        "other",
};

/* Every counter, added to with relaxed atomics: each is a count of its own, no reader needs
 * two of them to agree, and a lock here would serialize every request of every mount. */
static struct {
        uint64_t buckets[SFS_OP_COUNT][SFS_METRICS_BUCKETS + 1];
        uint64_t sum_ns[SFS_OP_COUNT];
        uint64_t bytes_read;
        uint64_t audit_lost;
        uint64_t events[SFS_METRICS_EVENTS + 1];
        uint64_t refusals[SFS_METRICS_ERRNO_MAX + 1];
        uint64_t generation;
} m;

static const char *read_mode = "read", *read_mode_why = "no connection yet";
static int64_t backing_files;

void sfs_metrics_set_read_mode(const char *mode, const char *why)
{
        __atomic_store_n(&read_mode_why, why, __ATOMIC_RELAXED);
        __atomic_store_n(&read_mode, mode, __ATOMIC_RELAXED);
}

const char *sfs_metrics_read_mode(const char **why)
{
        *why = __atomic_load_n(&read_mode_why, __ATOMIC_RELAXED);
        return __atomic_load_n(&read_mode, __ATOMIC_RELAXED);
}

void sfs_metrics_backing_files(int64_t delta)
{
        __atomic_add_fetch(&backing_files, delta, __ATOMIC_RELAXED);
}

uint64_t sfs_metrics_backing_files_now(void)
{
        int64_t n = __atomic_load_n(&backing_files, __ATOMIC_RELAXED);
        return n > 0 ? (uint64_t)n : 0;
}

static void add(uint64_t *p, uint64_t n)
{
        __atomic_fetch_add(p, n, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *p)
{
        return __atomic_load_n(p, __ATOMIC_RELAXED);
}

uint64_t sfs_metrics_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sfs_metrics_request(enum sfs_metrics_op op, uint64_t start_ns)
{
        uint64_t now = sfs_metrics_now_ns(), d = now > start_ns ? now - start_ns : 0;
        size_t b = 0;

        if ((unsigned)op >= SFS_OP_COUNT)
                return;
        while (b < SFS_METRICS_BUCKETS && d > sfs_metrics_bounds_ns[b])
                b++;
        add(&m.buckets[op][b], 1);
        add(&m.sum_ns[op], d);
}

void sfs_metrics_bytes_read(uint64_t n)
{
        add(&m.bytes_read, n);
}

void sfs_metrics_audit_lost(uint64_t n)
{
        add(&m.audit_lost, n);
        add(&m.generation, 1);
}

void sfs_metrics_event(const char *event, int err)
{
        /* An event of no name in the table counts in the last slot, "other". */
        int k = strtable_index(event_names, SFS_METRICS_EVENTS, event);
        size_t i = k < 0 ? SFS_METRICS_EVENTS : (size_t)k;

        add(&m.events[i], 1);
        /* A refusal is an event with an errno; an idempotent publish (EEXIST) is none, and a
         * corrupt blob is the store's state, not a request refused. */
        if (err > 0 && (i == EV_PUBLISH_REFUSED || i == EV_REFUSED))
                add(&m.refusals[err <= SFS_METRICS_ERRNO_MAX ? err : 0], 1);
        add(&m.generation, 1);
}

void sfs_metrics_read(struct sfs_metrics_snapshot *out)
{
        for (size_t o = 0; o < SFS_OP_COUNT; o++) {
                for (size_t b = 0; b <= SFS_METRICS_BUCKETS; b++)
                        out->buckets[o][b] = load(&m.buckets[o][b]);
                out->sum_ns[o] = load(&m.sum_ns[o]);
        }
        out->bytes_read = load(&m.bytes_read);
        out->audit_lost = load(&m.audit_lost);
        for (size_t i = 0; i <= SFS_METRICS_EVENTS; i++)
                out->events[i] = load(&m.events[i]);
        for (size_t i = 0; i <= SFS_METRICS_ERRNO_MAX; i++)
                out->refusals[i] = load(&m.refusals[i]);
        out->generation = load(&m.generation);
}

void sfs_metrics_reset(void)
{
        memset(&m, 0, sizeof(m));
}

const char *sfs_metrics_event_name(size_t i)
{
        return i < SFS_METRICS_EVENTS ? event_names[i] : "other";
}

uint64_t sfs_metrics_refusals_total(const struct sfs_metrics_snapshot *s)
{
        uint64_t n = 0;

        for (size_t i = 0; i <= SFS_METRICS_ERRNO_MAX; i++)
                n += s->refusals[i];
        return n;
}

/* ---- text ---- */

/* The metadata lines of one family. OpenMetrics names a counter family without its _total
 * (its sample adds it) and states units; Prometheus' format names the sample's family. */
static void family(FILE *f, enum sfs_metrics_format fmt, const char *name, const char *type,
                   const char *unit, const char *help)
{
        bool om = fmt == SFS_METRICS_OPENMETRICS;
        bool counter = strcmp(type, "counter") == 0;

        fprintf(f, "# HELP %s%s %s\n", name, counter && !om ? "_total" : "", help);
        fprintf(f, "# TYPE %s%s %s\n", name, counter && !om ? "_total" : "", type);
        if (om && unit)
                fprintf(f, "# UNIT %s %s\n", name, unit);
}

static void gauge(FILE *f, enum sfs_metrics_format fmt, const char *name, const char *unit,
                  const char *help, uint64_t v)
{
        family(f, fmt, name, "gauge", unit, help);
        fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

static void counter(FILE *f, enum sfs_metrics_format fmt, const char *name, const char *unit,
                    const char *help, uint64_t v)
{
        family(f, fmt, name, "counter", unit, help);
        fprintf(f, "%s_total %llu\n", name, (unsigned long long)v);
}

static double ratio(uint64_t used, uint64_t max)
{
        return max ? (double)used / (double)max : 0.0;
}

/* The daemon's state of the moment: its build, start, mounts, usage against its limits. */
static void render_gauges(FILE *f, enum sfs_metrics_format fmt, const struct sfs_metrics_gauges *g)
{
        family(f, fmt, "snapfs_build", "gauge", NULL, "The daemon's version, as a label.");
        fprintf(f, "snapfs_build{version=\"%s\"} 1\n", g->version);
        family(f, fmt, "snapfs_start_time_seconds", "gauge", "seconds",
               "When the daemon started, in seconds since the epoch.");
        fprintf(f, "snapfs_start_time_seconds %.3f\n", g->start_time);
        gauge(f, fmt, "snapfs_mounts", NULL,
              "Mounts served: the main mount, the read view, every scope's view.",
              g->views_mounted);
        gauge(f, fmt, "snapfs_scopes", NULL, "Scopes.", g->scopes);
        gauge(f, fmt, "snapfs_snapshots", NULL, "Snapshots published and held.", g->snapshots);
        gauge(f, fmt, "snapfs_snapshots_max", NULL, "The limit on snapshots (--max-snapshots).",
              g->max_snapshots);
        gauge(f, fmt, "snapfs_content_bytes", "bytes",
              "Content bytes held, published and staged together.", g->bytes);
        gauge(f, fmt, "snapfs_content_max_bytes", "bytes",
              "The limit on content bytes (--max-bytes).", g->max_bytes);
        gauge(f, fmt, "snapfs_staging_files", NULL, "Staging files.", g->staging_files);
        gauge(f, fmt, "snapfs_staging_bytes", "bytes", "Bytes staged, not yet published.",
              g->staging_bytes);
        family(f, fmt, "snapfs_quota_used_ratio", "gauge", "ratio",
               "The share of a limit in use: snapshots of --max-snapshots, bytes of "
               "--max-bytes.");
        fprintf(f, "snapfs_quota_used_ratio{limit=\"snapshots\"} %.6f\n",
                ratio(g->snapshots, g->max_snapshots));
        fprintf(f, "snapfs_quota_used_ratio{limit=\"bytes\"} %.6f\n",
                ratio(g->bytes, g->max_bytes));
        if (g->store)
                gauge(f, fmt, "snapfs_store_corrupt_blobs", NULL,
                      "Blobs of --store set aside at start: they did not hash to their name.",
                      g->store_corrupt);
        {
                const char *why, *mode = sfs_metrics_read_mode(&why);
                gauge(f, fmt, "snapfs_passthrough", NULL,
                      "1 when snapshot reads go from the kernel to a sealed backing file "
                      "(FUSE passthrough), never to the daemon; 0 when the daemon answers "
                      "each READ.",
                      strcmp(mode, "passthrough") == 0);
        }
        gauge(f, fmt, "snapfs_backing_files", NULL,
              "Backing files registered with the kernel: each snapshot opened once per "
              "connection.",
              sfs_metrics_backing_files_now());
}

/* What happened since the start: publishes, bytes read, audit events, refusals by errno. */
static void render_counters(FILE *f, enum sfs_metrics_format fmt,
                            const struct sfs_metrics_snapshot *s)
{
        counter(f, fmt, "snapfs_publishes", NULL, "Snapshots published.",
                s->events[SFS_METRICS_EVENT_PUBLISH]);
        counter(f, fmt, "snapfs_read_bytes", "bytes",
                "Bytes of snapshot content sent in answer to reads (cached pages are served "
                "by the kernel without asking).",
                s->bytes_read);
        counter(f, fmt, "snapfs_audit_lines_lost", NULL,
                "Audit lines the log did not take (a full filesystem, an I/O error): lost, "
                "and counted here.",
                s->audit_lost);

        family(f, fmt, "snapfs_events", "counter", NULL,
               "Audit events by kind (docs/design.md, \"Audit log\").");
        for (size_t i = 0; i <= SFS_METRICS_EVENTS; i++)
                if (s->events[i])
                        fprintf(f, "snapfs_events_total{event=\"%s\"} %llu\n",
                                sfs_metrics_event_name(i), (unsigned long long)s->events[i]);
        family(f, fmt, "snapfs_refusals", "counter", NULL,
               "Requests refused, by the errno the caller got.");
        for (size_t e = 1; e <= SFS_METRICS_ERRNO_MAX + 1; e++) {
                size_t i = e <= SFS_METRICS_ERRNO_MAX ? e : 0; /* "other" last */
                const char *name = i ? strerrorname_np((int)i) : NULL;
                if (s->refusals[i])
                        fprintf(f, "snapfs_refusals_total{reason=\"%s\"} %llu\n",
                                name ? name : "other", (unsigned long long)s->refusals[i]);
        }
}

/* The requests' time, a histogram by operation (an operation never asked has no series). */
static void render_durations(FILE *f, enum sfs_metrics_format fmt,
                             const struct sfs_metrics_snapshot *s)
{
        family(f, fmt, "snapfs_request_duration_seconds", "histogram", "seconds",
               "Time from a FUSE request's arrival to its answer, by operation.");
        for (size_t o = 0; o < SFS_OP_COUNT; o++) {
                uint64_t cum = 0;
                for (size_t b = 0; b <= SFS_METRICS_BUCKETS; b++)
                        cum += s->buckets[o][b];
                if (!cum)
                        continue; /* an operation never asked: no series */
                cum = 0;
                for (size_t b = 0; b <= SFS_METRICS_BUCKETS; b++) {
                        cum += s->buckets[o][b];
                        fprintf(f, "snapfs_request_duration_seconds_bucket{op=\"%s\",le=\"%s\"} "
                                   "%llu\n", op_names[o], bound_text[b], (unsigned long long)cum);
                }
                fprintf(f, "snapfs_request_duration_seconds_sum{op=\"%s\"} %llu.%09llu\n",
                        op_names[o], (unsigned long long)(s->sum_ns[o] / 1000000000u),
                        (unsigned long long)(s->sum_ns[o] % 1000000000u));
                fprintf(f, "snapfs_request_duration_seconds_count{op=\"%s\"} %llu\n",
                        op_names[o], (unsigned long long)cum);
        }
}

int sfs_metrics_render(const struct sfs_metrics_snapshot *s, const struct sfs_metrics_gauges *g,
                       enum sfs_metrics_format fmt, char **out, size_t *len)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        render_gauges(f, fmt, g);
        render_counters(f, fmt, s);
        render_durations(f, fmt, s);
        if (fmt == SFS_METRICS_OPENMETRICS)
                fputs("# EOF\n", f);
        if (ferror(f)) {
                fclose(f);
                free(buf);
                return -ENOMEM;
        }
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *out = buf;
        *len = size;
        return 0;
}
