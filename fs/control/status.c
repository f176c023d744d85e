/* SPDX-License-Identifier: MIT */
/* The daemon's health: status, metrics and the service manager's status line (status.h). */
#include "fs/control/status.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config.h"
#include "fs/base/notify.h"
#include "fs/store/ocistore.h"
#include "fs/scopes/registry.h"
#include "fs/scopes/scopejson.h"
#include "fs/tree/tree.h"
#include "common/util.h"

/* Set once at start, before any request can ask, and cleared after the last one. */
struct daemon_info {
        char *mount, *read_view, *store_dir;
        struct timespec started;   /* CLOCK_REALTIME */
        uint64_t started_ns;       /* CLOCK_MONOTONIC */
};
static struct daemon_info daemon_info;
/* Set before the first request (docs/design.md, "Taking over"). */
static pid_t supervisor_pid;
static unsigned takeovers;

void sfs_status_set_takeover(pid_t supervisor, unsigned count)
{
        supervisor_pid = supervisor;
        takeovers = count;
}

static int dup_or_null(const char *s, char **out)
{
        *out = s ? strdup(s) : NULL;
        return s && !*out ? -ENOMEM : 0;
}

int sfs_status_set_daemon(const char *mount, const char *read_view, const char *store_dir)
{
        sfs_status_clear_daemon();
        clock_gettime(CLOCK_REALTIME, &daemon_info.started);
        daemon_info.started_ns = sfs_metrics_now_ns();
        if (dup_or_null(mount, &daemon_info.mount) < 0 ||
            dup_or_null(read_view, &daemon_info.read_view) < 0 ||
            dup_or_null(store_dir, &daemon_info.store_dir) < 0) {
                sfs_status_clear_daemon();
                return -ENOMEM;
        }
        return 0;
}

void sfs_status_clear_daemon(void)
{
        free(daemon_info.mount);
        free(daemon_info.read_view);
        free(daemon_info.store_dir);
        daemon_info = (struct daemon_info){ 0 };
}

/* ---- what is read ---- */

struct state {
        struct sfs_tree_config cfg;
        struct sfs_tree_stats st;
        struct sfs_metrics_snapshot m;
        struct sfs_scope_info *scopes; /* the registry's list */
        size_t n_scopes;
        uint64_t views_served;
        uint64_t corrupt;
        bool store;
};

static int read_state(struct sfs_registry *r, struct state *s)
{
        struct sfs_tree *t = sfs_registry_main(r);
        struct sfs_ocistore *store = sfs_registry_store(r);
        int rr;

        *s = (struct state){ 0 };
        sfs_tree_get_config(t, &s->cfg);
        sfs_tree_get_stats(t, &s->st);
        sfs_metrics_read(&s->m);
        s->store = store != NULL;
        s->corrupt = store ? sfs_ocistore_corrupt(store) : 0;
        rr = sfs_registry_list(r, &s->scopes, &s->n_scopes);
        if (rr < 0)
                return rr;
        for (size_t i = 0; i < s->n_scopes; i++)
                s->views_served += s->scopes[i].mounted;
        s->views_served += 1 + (s->cfg.read_view_dev != 0);
        return 0;
}

static uint64_t uptime_s(void)
{
        return (sfs_metrics_now_ns() - daemon_info.started_ns) / 1000000000u;
}

/* ---- status ---- */

static json_object *u64(uint64_t v)
{
        return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static json_object *str_or_null(const char *s)
{
        return s ? json_object_new_string(s) : json_object_new_null();
}

static json_object *dev_json(uint64_t dev)
{
        char buf[32];

        if (!dev)
                return json_object_new_null();
        snprintf(buf, sizeof(buf), "%u:%u", major((dev_t)dev), minor((dev_t)dev));
        return json_object_new_string(buf);
}

static json_object *mount_json(const char *path, uint64_t dev, bool ro)
{
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "path", str_or_null(path));
        json_object_object_add(o, "dev", dev_json(dev));
        json_object_object_add(o, "read_only", json_object_new_boolean(ro));
        return o;
}

static json_object *limits_json(const struct sfs_tree_config *c)
{
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "max_snapshot_size", u64(c->max_snapshot_size));
        json_object_object_add(o, "max_bytes", u64(c->max_bytes));
        json_object_object_add(o, "max_snapshots", u64(c->max_snapshots));
        json_object_object_add(o, "max_staging", u64(c->max_staging));
        json_object_object_add(o, "max_staging_bytes", u64(c->max_staging_bytes));
        json_object_object_add(o, "max_uid_snapshots", u64(c->max_uid_snapshots));
        json_object_object_add(o, "max_uid_bytes", u64(c->max_uid_bytes));
        return o;
}

static json_object *counters_json(const struct sfs_metrics_snapshot *m)
{
        json_object *o = json_object_new_object(), *ev = json_object_new_object(),
                    *ref = json_object_new_object();
        uint64_t requests = 0;

        if (!o || !ev || !ref) {
                json_object_put(o);
                json_object_put(ev);
                json_object_put(ref);
                return NULL;
        }
        for (size_t i = 0; i <= SFS_METRICS_EVENTS; i++)
                if (m->events[i])
                        json_object_object_add(ev, sfs_metrics_event_name(i), u64(m->events[i]));
        for (size_t e = 0; e <= SFS_METRICS_ERRNO_MAX; e++) {
                const char *name = e ? strerrorname_np((int)e) : NULL;
                if (m->refusals[e])
                        json_object_object_add(ref, name ? name : "other", u64(m->refusals[e]));
        }
        for (size_t op = 0; op < SFS_OP_COUNT; op++)
                for (size_t b = 0; b <= SFS_METRICS_BUCKETS; b++)
                        requests += m->buckets[op][b];
        json_object_object_add(o, "publishes", u64(m->events[SFS_METRICS_EVENT_PUBLISH]));
        json_object_object_add(o, "refusals", u64(sfs_metrics_refusals_total(m)));
        json_object_object_add(o, "refusals_by_reason", ref);
        json_object_object_add(o, "events", ev);
        json_object_object_add(o, "requests", u64(requests));
        json_object_object_add(o, "bytes_read", u64(m->bytes_read));
        json_object_object_add(o, "audit_lines_lost", u64(m->audit_lost));
        return o;
}

int sfs_status_json(struct sfs_registry *r, json_object **out)
{
        char started[32];
        struct state s;
        struct tm tm;
        json_object *o, *mounts, *store, *usage;
        int rr = read_state(r, &s);

        if (rr < 0)
                return rr;
        o = json_object_new_object();
        mounts = json_object_new_object();
        store = json_object_new_object();
        usage = json_object_new_object();
        if (!o || !mounts || !store || !usage) {
                json_object_put(o);
                json_object_put(mounts);
                json_object_put(store);
                json_object_put(usage);
                sfs_scope_infos_free(s.scopes, s.n_scopes);
                return -ENOMEM;
        }
        gmtime_r(&daemon_info.started.tv_sec, &tm);
        strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_object_add(o, "pid", json_object_new_int(getpid()));
        json_object_object_add(o, "version", json_object_new_string(SNAPFS_VERSION));
        json_object_object_add(o, "started", json_object_new_string(started));
        json_object_object_add(o, "supervisor_pid",
                               supervisor_pid > 0 ? json_object_new_int(supervisor_pid) : NULL);
        json_object_object_add(o, "takeovers", u64(takeovers));
        {
                const char *why, *mode = sfs_metrics_read_mode(&why);
                json_object *reads = json_object_new_object();
                if (reads) {
                        json_object_object_add(reads, "mode", json_object_new_string(mode));
                        json_object_object_add(reads, "why", str_or_null(why));
                        json_object_object_add(reads, "backing_files",
                                               u64(sfs_metrics_backing_files_now()));
                }
                json_object_object_add(o, "reads", reads);
        }
        json_object_object_add(o, "uptime_s", u64(uptime_s()));

        json_object_object_add(mounts, "main",
                               mount_json(daemon_info.mount, s.cfg.dev, s.cfg.read_only));
        json_object_object_add(mounts, "read_view",
                               daemon_info.read_view ? mount_json(daemon_info.read_view,
                                                                  s.cfg.read_view_dev, true)
                                                     : json_object_new_null());
        json_object_object_add(mounts, "scopes", sfs_scope_infos_json(s.scopes, s.n_scopes));
        sfs_scope_infos_free(s.scopes, s.n_scopes);
        json_object_object_add(o, "mounts", mounts);

        json_object_object_add(store, "dir", str_or_null(daemon_info.store_dir));
        json_object_object_add(store, "blobs", u64(s.st.snapshots));
        json_object_object_add(store, "bytes", u64(s.st.bytes));
        json_object_object_add(store, "corrupt", u64(s.corrupt));
        json_object_object_add(o, "store", store);

        json_object_object_add(o, "limits", limits_json(&s.cfg));
        json_object_object_add(usage, "snapshots", u64(s.st.snapshots));
        json_object_object_add(usage, "bytes", u64(s.st.bytes + s.st.reserved));
        json_object_object_add(usage, "staging_files", u64(s.st.staging_files));
        json_object_object_add(usage, "staging_bytes", u64(s.st.reserved));
        json_object_object_add(o, "usage", usage);
        json_object_object_add(o, "counters", counters_json(&s.m));
        *out = o;
        return 0;
}

/* ---- metrics ---- */

int sfs_status_metrics(struct sfs_registry *r, enum sfs_metrics_format format, char **out,
                       size_t *len)
{
        struct state s;
        struct sfs_metrics_gauges g;
        int rr = read_state(r, &s);

        if (rr < 0)
                return rr;
        sfs_scope_infos_free(s.scopes, s.n_scopes);
        g = (struct sfs_metrics_gauges){
                .version = SNAPFS_VERSION,
                .start_time = (double)daemon_info.started.tv_sec +
                              (double)daemon_info.started.tv_nsec / 1e9,
                .snapshots = s.st.snapshots,
                .max_snapshots = s.cfg.max_snapshots,
                .bytes = s.st.bytes + s.st.reserved,
                .max_bytes = s.cfg.max_bytes,
                .staging_files = s.st.staging_files,
                .staging_bytes = s.st.reserved,
                .scopes = s.n_scopes,
                .views_mounted = s.views_served,
                .store = s.store,
                .store_corrupt = s.corrupt,
        };
        return sfs_metrics_render(&s.m, &g, format, out, len);
}

/* ---- STATUS= ---- */

static void human(uint64_t v, char *buf, size_t size)
{
        static const char units[] = "KMGT";
        double d = (double)v;
        int u = -1;

        while (d >= 1024 && u < 3) {
                d /= 1024;
                u++;
        }
        if (u < 0)
                snprintf(buf, size, "%llu B", (unsigned long long)v);
        else
                snprintf(buf, size, "%.1f %ciB", d, units[u]);
}

void sfs_status_line(struct sfs_registry *r, char *buf, size_t size)
{
        char used[32], max[32];
        struct state s;

        if (read_state(r, &s) < 0) {
                snprintf(buf, size, "serving %s", daemon_info.mount ? daemon_info.mount : "");
                return;
        }
        sfs_scope_infos_free(s.scopes, s.n_scopes);
        human(s.st.bytes + s.st.reserved, used, sizeof(used));
        human(s.cfg.max_bytes, max, sizeof(max));
        snprintf(buf, size,
                 "serving %s: %llu snapshots (%s of %s), %llu scopes, %llu published, "
                 "%llu refused",
                 daemon_info.mount ? daemon_info.mount : "", (unsigned long long)s.st.snapshots,
                 used, max, (unsigned long long)s.n_scopes,
                 (unsigned long long)s.m.events[SFS_METRICS_EVENT_PUBLISH],
                 (unsigned long long)sfs_metrics_refusals_total(&s.m));
}

/* The notifier: a thread that wakes once a second and, when an event happened since its last
 * look, builds the line and sends it if it changed. Requests never wait for it or for the
 * service manager. */
static struct {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool running, stop;
} notifier = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void send_status(struct sfs_registry *r, char *last, size_t size)
{
        char line[512], msg[520];

        sfs_status_line(r, line, sizeof(line));
        if (strcmp(line, last) == 0)
                return;
        snprintf(msg, sizeof(msg), "STATUS=%s", line);
        if (sfs_notify(msg) == 0)
                snprintf(last, size, "%s", line);
}

static void *notify_loop(void *arg)
{
        struct sfs_registry *r = arg;
        char last[512] = "";
        uint64_t seen = UINT64_MAX;
        struct timespec deadline;

        pthread_mutex_lock(&notifier.lock);
        while (!notifier.stop) {
                struct sfs_metrics_snapshot m;
                sfs_metrics_read(&m);
                if (m.generation != seen) {
                        seen = m.generation;
                        pthread_mutex_unlock(&notifier.lock);
                        send_status(r, last, sizeof(last));
                        pthread_mutex_lock(&notifier.lock);
                }
                clock_gettime(CLOCK_MONOTONIC, &deadline);
                deadline.tv_sec += 1;
                while (!notifier.stop &&
                       pthread_cond_timedwait(&notifier.cond, &notifier.lock, &deadline) == 0)
                        ;
        }
        pthread_mutex_unlock(&notifier.lock);
        return NULL;
}

int sfs_status_notifier_start(struct sfs_registry *r)
{
        const char *e = getenv("NOTIFY_SOCKET");
        pthread_condattr_t ca;
        int rr;

        if (!e || !*e || notifier.running)
                return 0;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&notifier.cond, &ca);
        pthread_condattr_destroy(&ca);
        notifier.stop = false;
        rr = pthread_create_quiet(&notifier.thread, notify_loop, r, 0);
        if (rr != 0) {
                pthread_cond_destroy(&notifier.cond);
                return -rr;
        }
        notifier.running = true;
        return 0;
}

void sfs_status_notifier_stop(void)
{
        if (!notifier.running)
                return;
        pthread_mutex_lock(&notifier.lock);
        notifier.stop = true;
        pthread_cond_signal(&notifier.cond);
        pthread_mutex_unlock(&notifier.lock);
        pthread_join(notifier.thread, NULL);
        pthread_cond_destroy(&notifier.cond);
        notifier.running = false;
}
