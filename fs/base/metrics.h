/* SPDX-License-Identifier: MIT */
/* The daemon's counters (docs/design.md, "Health and metrics"): requests answered and how long
 * each took, per FUSE operation, as a histogram; bytes served; audit events by kind; refusals
 * by errno. One set per process, shared by the main mount, the read view and every scope's
 * view. A request only adds to relaxed atomics (no lock, no allocation): the hot path pays
 * two clock reads and two atomic adds. Readers take a copy that may be a few requests behind,
 * never a torn counter.
 *
 * The renderer writes the counters, with the gauges the caller read (fs/control/status.c), as
 * OpenMetrics 1.0 text or as Prometheus' text format 0.0.4 (what node_exporter's textfile
 * collector reads). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The FUSE operations timed, in the order they are rendered. */
enum sfs_metrics_op {
        SFS_OP_LOOKUP,
        SFS_OP_GETATTR,
        SFS_OP_SETATTR,
        SFS_OP_ACCESS,
        SFS_OP_OPEN,
        SFS_OP_CREATE,
        SFS_OP_READ,
        SFS_OP_WRITE,
        SFS_OP_FLUSH,
        SFS_OP_RELEASE,
        SFS_OP_UNLINK,
        SFS_OP_RENAME,
        SFS_OP_MKNOD,
        SFS_OP_MKDIR,
        SFS_OP_RMDIR,
        SFS_OP_SYMLINK,
        SFS_OP_LINK,
        SFS_OP_OPENDIR,
        SFS_OP_READDIR,
        SFS_OP_READDIRPLUS,
        SFS_OP_RELEASEDIR,
        SFS_OP_STATFS,
        SFS_OP_GETXATTR,
        SFS_OP_LISTXATTR,
        SFS_OP_SETXATTR,
        SFS_OP_REMOVEXATTR,
        SFS_OP_COUNT
};

/* The histogram's upper bounds, in nanoseconds (a last bucket, +Inf, takes the rest): from
 * 10 us (a request answered from memory on one CPU) to 1 s (a publish of a large snapshot
 * into --store). */
#define SFS_METRICS_BUCKETS 15
extern const uint64_t sfs_metrics_bounds_ns[SFS_METRICS_BUCKETS];

/* Errnos counted one by one; a larger one is counted as 0 ("other"). */
#define SFS_METRICS_ERRNO_MAX 134

/* The audit events counted, by their names (fs/base/audit.h); any other is "other". */
#define SFS_METRICS_EVENTS 12
/* The index of "publish" among them. */
#define SFS_METRICS_EVENT_PUBLISH 0

/* CLOCK_MONOTONIC in nanoseconds: a request's start. */
uint64_t sfs_metrics_now_ns(void);
/* A request of operation op answered: start_ns as sfs_metrics_now_ns gave it then. */
void sfs_metrics_request(enum sfs_metrics_op op, uint64_t start_ns);
/* Bytes of snapshot content sent in answer to a READ (pages the kernel caches, repeats and
 * what the daemon stored in its cache at publish, are served without asking). */
void sfs_metrics_bytes_read(uint64_t n);
/* An audit event (what sfs_audit_emit queues): event its name, err its errno (0: none). */
void sfs_metrics_event(const char *event, int err);
/* n audit lines the sink did not take (a full filesystem, an I/O error): lost, and counted. */
void sfs_metrics_audit_lost(uint64_t n);

/* How snapshot reads are served (fs/fuse/passthrough.h): mode "passthrough" or "read", and why
 * not passthrough (NULL when it is); both static strings. */
void sfs_metrics_set_read_mode(const char *mode, const char *why);
const char *sfs_metrics_read_mode(const char **why);
/* Backing files registered with the kernel: delta added to the gauge. */
void sfs_metrics_backing_files(int64_t delta);
uint64_t sfs_metrics_backing_files_now(void);

/* A copy of every counter. */
struct sfs_metrics_snapshot {
        uint64_t buckets[SFS_OP_COUNT][SFS_METRICS_BUCKETS + 1]; /* not cumulative */
        uint64_t sum_ns[SFS_OP_COUNT];
        uint64_t bytes_read;
        uint64_t audit_lost;                          /* audit lines not written */
        uint64_t events[SFS_METRICS_EVENTS + 1];     /* by sfs_metrics_event_name(i) */
        uint64_t refusals[SFS_METRICS_ERRNO_MAX + 1]; /* by errno; [0] any other */
        uint64_t generation; /* grows with every event: a change to report */
};
void sfs_metrics_read(struct sfs_metrics_snapshot *out);
/* Zeroes every counter (for tests). */
void sfs_metrics_reset(void);

/* The name of event index i ("publish"; "other" for the last). */
const char *sfs_metrics_event_name(size_t i);
/* Refusals of every errno together. */
uint64_t sfs_metrics_refusals_total(const struct sfs_metrics_snapshot *s);

/* What the counters do not hold: the state at the moment of asking (fs/control/status.c reads it). */
struct sfs_metrics_gauges {
        const char *version;
        double start_time;       /* seconds since the epoch */
        uint64_t snapshots, max_snapshots;
        uint64_t bytes, max_bytes; /* content bytes held (published and staged), the limit */
        uint64_t staging_files, staging_bytes;
        uint64_t scopes;
        uint64_t views_mounted;  /* the main mount, the read view, every scope's view served */
        bool store;              /* --store: the next one means something */
        uint64_t store_corrupt;  /* blobs set aside at start */
};

enum sfs_metrics_format {
        SFS_METRICS_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
        SFS_METRICS_PROMETHEUS,  /* text/plain; version=0.0.4 */
};

/* Renders s and g in format: 0 and *out (malloc'd, NUL-terminated, *len bytes), or -ENOMEM. */
int sfs_metrics_render(const struct sfs_metrics_snapshot *s, const struct sfs_metrics_gauges *g,
                       enum sfs_metrics_format format, char **out, size_t *len);
