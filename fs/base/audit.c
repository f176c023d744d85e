/* SPDX-License-Identifier: MIT */
/* Audit events: the writer thread and its bounded queue, per-uid coalescing of refusals,
 * JSON lines in valid UTF-8, and the file, stderr and syslog sinks (audit.h). */
#include "fs/base/audit.h"
#include "fs/base/trustpath.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fs/base/audit-internal.h"
#include "fs/base/metrics.h"
#include "fs/base/worker.h"
#include "common/utf8.h"
#include "common/util.h"

#define N_BUCKETS 64      /* uids with a budget of their own; the rest share one */
#define N_COALESCED 128   /* (uid, op, errno) keys in one refused-coalesced event */
#define OP_MAX 24

struct line {
        struct line *next;
        size_t len;
        int priority; /* for syslog */
        char text[];  /* len bytes, ending in '\n' */
};

/* A uid's budget of refusals written one by one: a token bucket. */
struct bucket {
        uid_t uid;
        bool used;
        double tokens;
        uint64_t at_ms;
};

struct coalesced {
        uid_t uid;
        int err;
        char event[OP_MAX];
        char op[OP_MAX];
        uint64_t count;
};

struct sfs_audit {
        enum sfs_audit_sink sink;
        char *path;
        int fd;
        int efd; /* wakes the writer: new lines, a reopen, the stop */
        atomic_bool reopen;
        struct sfs_audit_limits lim;

        pthread_mutex_t lock; /* everything below */
        struct line *head, **tail;
        size_t queued;
        bool writer_waiting;
        bool stop;
        bool running;
        pthread_t thread;
        struct bucket buckets[N_BUCKETS + 1]; /* the last one is shared */
        struct coalesced co[N_COALESCED];
        size_t n_co;
        uint64_t co_other;   /* refusals whose key did not fit */
        uint64_t dropped;    /* other events that found the queue full */
        uint64_t co_from_ms; /* monotonic time of the first refusal counted */
        uint64_t lost_burst; /* lines lost since the sink last took one (the writer's) */
        struct timespec co_from, co_to; /* wall clock of the first and last */
};

static uint64_t mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void format_time(const struct timespec *ts, char out[96])
{
        struct tm tm;
        gmtime_r(&ts->tv_sec, &tm);
        snprintf(out, 96, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long)(ts->tv_nsec / 1000) % 1000000);
}

/* ---- UTF-8 ---- */

/* Adds key: v to o. json-c copies bytes >= 0x80 as they are, so a caller's name that is not
 * UTF-8 would make the line invalid JSON for strict readers: each invalid byte becomes U+FFFD
 * and the raw bytes go, in hex, in key_hex beside it. Out of memory, the field is left out. */
static void add_str(json_object *o, const char *key, const char *v)
{
        _cleanup_free_ char *fixed = NULL, *hex = NULL;
        char hkey[64];

        if (!v)
                return;
        switch (utf8_fix(v, &fixed, &hex)) {
        case 0:
                json_object_object_add(o, key, json_object_new_string(v));
                return;
        case 1:
                snprintf(hkey, sizeof(hkey), "%s_hex", key);
                json_object_object_add(o, key, json_object_new_string(fixed));
                json_object_object_add(o, hkey, json_object_new_string(hex));
                return;
        }
}

static struct line *line_of(json_object *o, int priority)
{
        const char *text;
        struct line *l;
        size_t len;

        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return NULL;
        len = strlen(text);
        l = malloc(sizeof(*l) + len + 1);
        if (!l)
                return NULL;
        memcpy(l->text, text, len);
        l->text[len] = '\n';
        l->len = len + 1;
        l->priority = priority;
        l->next = NULL;
        return l;
}

static struct line *format_event(const struct sfs_audit_event *ev, const struct timespec *ts)
{
        char when[96];
        struct line *l;
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        format_time(ts, when);
        add_str(o, "time", when);
        add_str(o, "event", ev->event);
        add_str(o, "op", ev->op);
        json_object_object_add(o, "uid", json_object_new_int64(ev->uid));
        json_object_object_add(o, "pid", json_object_new_int64(ev->pid));
        /* Caller-supplied names may hold control characters (json-c escapes them, so a hostile
         * name cannot forge a second line) or invalid UTF-8 (add_str replaces it). */
        add_str(o, "digest", ev->digest);
        add_str(o, "name", ev->name);
        add_str(o, "target", ev->target);
        add_str(o, "reason", ev->reason);
        add_str(o, "scope", ev->scope);
        add_str(o, "entry", ev->entry);
        add_str(o, "view", ev->view);
        if (ev->size)
                json_object_object_add(o, "size", json_object_new_uint64(ev->size));
        json_object_object_add(o, "errno", json_object_new_int(ev->err));
        if (ev->err)
                add_str(o, "error", strerrorname_np(ev->err));
        l = line_of(o, ev->err ? LOG_NOTICE : LOG_INFO);
        json_object_put(o);
        return l;
}

/* ---- the sink ---- */

/* Makes the missing directory of the log as --store makes its own: one level (its parent
 * must exist), mode 0750 less the umask, owned by this uid. An fstab line names
 * /var/log/snapfs/audit.log on a fresh host, where nothing has made /var/log/snapfs yet.
 * mkdir never follows a symbolic link in the last component (EEXIST), and a directory that
 * exists is left as it is. 0, or a negative errno (-ENOENT: its parent is missing too). */
static int make_log_dir(const char *path)
{
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return -ENOENT; /* "." or "/": there, ENOENT was not the directory */
        *slash = '\0';
        if (mkdir(dir, 0750) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

static int open_log_path(const char *path)
{
        return open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                    0600);
}

/* Opens the log file, judged on the descriptor it got. O_NONBLOCK: opening a FIFO for writing
 * otherwise waits for a reader, and one that has a reader must still be refused: a FIFO
 * nobody drains blocks every write to it (the attack: pre-create the log path as a FIFO). */
static int open_log(const char *path)
{
        _cleanup_close_ int fd = -1;
        struct statfs sfs;
        struct stat st;

        fd = open_log_path(path);
        if (fd < 0 && errno == ENOENT) {
                int r = make_log_dir(path);
                if (r < 0)
                        return r;
                fd = open_log_path(path);
        }
        if (fd < 0) {
                /* ENXIO: a FIFO without a reader, or a socket; EISDIR: a directory. */
                if (errno == ENXIO || errno == EISDIR)
                        return -EINVAL;
                return negative_errno();
        }
        if (fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        /* A file of /proc or /sys is a setting: a line appended there does something (or
         * nothing, and every refusal would be lost). Refused as for --pid-file. */
        if (sfs_trustpath_kernel_fs(&sfs))
                return -EOPNOTSUPP;
        /* Whoever else may write the file can rewrite or erase what it says. */
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_uid != geteuid())
                return -EPERM;
        return TAKE_FD(fd);
}

/* "Every refusal is audited" must not turn false in silence (the attack: fill the log's
 * filesystem, then act unheard). A line the sink did not take is counted (snapfs status,
 * snapfs metrics), and the first of a burst is said once to syslog (the journal) and
 * standard error; the line that goes through again ends the burst, said with its count. */
static void line_lost(struct sfs_audit *a, int err)
{
        sfs_metrics_audit_lost(1);
        if (a->lost_burst++)
                return;
        syslog(LOG_DAEMON | LOG_ERR, "audit log %s cannot be written (%s): audit lines are lost "
               "until it can, and counted (snapfs status, snapfs metrics)",
               a->path ? a->path : "(standard error)", strerror(err));
        fprintf(stderr, "snapfs mount: audit log %s cannot be written (%s): audit lines are "
                "lost until it can, and counted (snapfs status, snapfs metrics)\n",
                a->path ? a->path : "(standard error)", strerror(err));
}

static void line_taken(struct sfs_audit *a)
{
        if (!a->lost_burst)
                return;
        syslog(LOG_DAEMON | LOG_NOTICE, "audit log %s written again; %llu lines were lost",
               a->path ? a->path : "(standard error)", (unsigned long long)a->lost_burst);
        a->lost_burst = 0;
}

static void write_line(struct sfs_audit *a, const struct line *l)
{
        const char *p = l->text;
        size_t left = l->len;

        if (a->sink == SFS_AUDIT_SYSLOG) {
                syslog(LOG_DAEMON | l->priority, "%.*s", (int)(l->len - 1), l->text);
                return;
        }
        while (left) {
                ssize_t n = write(a->fd, p, left);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        /* Lost (a part written stays: the next line starts on a line of its
                         * own only if the sink takes it whole); the next one tries again. */
                        line_lost(a, n < 0 ? errno : EIO);
                        return;
                }
                p += n;
                left -= (size_t)n;
        }
        line_taken(a);
}

static void do_reopen(struct sfs_audit *a)
{
        int fd;

        if (a->sink != SFS_AUDIT_FILE)
                return;
        fd = open_log(a->path);
        if (fd < 0)
                return; /* the old file stays in use */
        close(a->fd);
        a->fd = fd;
}

/* ---- queue and coalescing ---- */

int sfs_audit_open(enum sfs_audit_sink sink, const char *path, struct sfs_audit **out)
{
        struct sfs_audit *a;

        if (sink == SFS_AUDIT_FILE && !path)
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->sink = sink;
        a->fd = STDERR_FILENO;
        a->lim = (struct sfs_audit_limits){
                .queue_max = SFS_AUDIT_QUEUE_MAX,
                .burst = SFS_AUDIT_BURST,
                .per_sec = SFS_AUDIT_PER_SEC,
                .interval_ms = SFS_AUDIT_INTERVAL_MS,
                .now_ms = mono_ms,
        };
        a->tail = &a->head;
        pthread_mutex_init(&a->lock, NULL);
        a->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a->efd < 0) {
                int r = negative_errno();
                pthread_mutex_destroy(&a->lock);
                free(a);
                return r;
        }
        if (sink == SFS_AUDIT_FILE) {
                a->path = strdup(path);
                a->fd = a->path ? open_log(path) : -ENOMEM;
                if (a->fd < 0) {
                        int r = a->fd;
                        close(a->efd);
                        pthread_mutex_destroy(&a->lock);
                        free(a->path);
                        free(a);
                        return r;
                }
        }
        *out = a;
        return 0;
}

void sfs_audit_set_limits(struct sfs_audit *a, const struct sfs_audit_limits *lim)
{
        a->lim = *lim;
        if (!a->lim.now_ms)
                a->lim.now_ms = mono_ms;
}

/* Takes one token from uid's bucket: false when the uid has used up its budget. a->lock
 * held. */
static bool take_token(struct sfs_audit *a, uid_t uid, uint64_t now)
{
        struct bucket *b = NULL, *idle = NULL;

        for (size_t i = 0; i < N_BUCKETS; i++) {
                struct bucket *c = &a->buckets[i];
                if (c->used && c->uid == uid) {
                        b = c;
                        break;
                }
                if (!idle && !c->used)
                        idle = c;
        }
        if (!b) {
                /* A slot whose uid has been quiet long enough to be full again is as good as
                 * free. */
                for (size_t i = 0; !idle && i < N_BUCKETS; i++) {
                        struct bucket *c = &a->buckets[i];
                        uint64_t refill = (now - c->at_ms) * a->lim.per_sec / 1000;
                        if (c->tokens + (double)refill >= a->lim.burst)
                                idle = c;
                }
                b = idle ? idle : &a->buckets[N_BUCKETS];
                if (idle || !b->used)
                        *b = (struct bucket){ .uid = uid, .used = true,
                                              .tokens = a->lim.burst, .at_ms = now };
        }
        if (now > b->at_ms) {
                b->tokens += (double)(now - b->at_ms) * a->lim.per_sec / 1000.0;
                if (b->tokens > a->lim.burst)
                        b->tokens = a->lim.burst;
                b->at_ms = now;
        }
        if (b->tokens < 1)
                return false;
        b->tokens -= 1;
        return true;
}

/* Counts a refusal instead of queueing it. a->lock held. */
static void coalesce(struct sfs_audit *a, const struct sfs_audit_event *ev, uint64_t now,
                     const struct timespec *ts)
{
        assert(mutex_held(&a->lock));
        const char *op = ev->op ? ev->op : "", *event = ev->event ? ev->event : "";
        size_t i;

        if (a->n_co == 0 && a->co_other == 0) {
                a->co_from_ms = now;
                a->co_from = *ts;
        }
        a->co_to = *ts;
        for (i = 0; i < a->n_co; i++)
                if (a->co[i].uid == ev->uid && a->co[i].err == ev->err &&
                    strncmp(a->co[i].op, op, OP_MAX - 1) == 0 &&
                    strncmp(a->co[i].event, event, OP_MAX - 1) == 0)
                        break;
        if (i == a->n_co) {
                if (a->n_co == N_COALESCED) {
                        a->co_other++;
                        return;
                }
                a->co[i] = (struct coalesced){ .uid = ev->uid, .err = ev->err };
                snprintf(a->co[i].op, OP_MAX, "%s", op);
                snprintf(a->co[i].event, OP_MAX, "%s", event);
                a->n_co++;
        }
        a->co[i].count++;
}

static void wake(void *arg)
{
        struct sfs_audit *a = arg;
        uint64_t one = 1;
        ssize_t n = write(a->efd, &one, sizeof(one));
        (void)n; /* EAGAIN: the counter is already non-zero, the writer wakes anyway */
}

void sfs_audit_emit(struct sfs_audit *a, const struct sfs_audit_event *ev)
{
        struct timespec ts;
        struct line *l = NULL;
        /* Refusals, and idempotent publishes (as cheap to repeat, and changing nothing),
         * may be counted instead of written one by one. */
        bool refusal = ev->err != 0 || (ev->event && strcmp(ev->event, "publish-exists") == 0),
             queue, waiting = false;
        uint64_t now;

        /* Counted whether or not a log is kept, before any flood is coalesced: the metrics
         * count every event. */
        sfs_metrics_event(ev->event, ev->err);
        if (!a)
                return;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = a->lim.now_ms();
        pthread_mutex_lock(&a->lock);
        if (refusal)
                /* One uid's flood, or any flood that fills half the queue, is counted, not
                 * written line by line: the log's growth stays bounded and other uids'
                 * events keep their room. The budget is taken only for a line queued. */
                queue = a->queued < a->lim.queue_max / 2 && take_token(a, ev->uid, now);
        else
                queue = a->queued < a->lim.queue_max;
        if (!queue) {
                if (refusal)
                        coalesce(a, ev, now, &ts);
                else
                        a->dropped++;
                if (a->writer_waiting && a->n_co + a->co_other + a->dropped == 1) {
                        /* The writer sleeps without a deadline: it must learn of the
                         * interval that just began. */
                        a->writer_waiting = false;
                        waiting = true;
                }
                pthread_mutex_unlock(&a->lock);
                if (waiting)
                        wake(a);
                return;
        }
        pthread_mutex_unlock(&a->lock);

        /* Formatted outside the lock: requests of other threads do not wait for json-c. */
        l = format_event(ev, &ts);
        if (!l)
                return;
        pthread_mutex_lock(&a->lock);
        *a->tail = l;
        a->tail = &l->next;
        a->queued++;
        if (a->writer_waiting) {
                a->writer_waiting = false;
                waiting = true;
        }
        pthread_mutex_unlock(&a->lock);
        if (waiting)
                wake(a);
}

/* The refused-coalesced event for what was counted, and resets the count. a->lock held. */
static struct line *take_coalesced(struct sfs_audit *a)
{
        assert(mutex_held(&a->lock));
        char from[96], to[96];
        json_object *o, *arr;
        struct line *l;

        if (!a->n_co && !a->co_other && !a->dropped)
                return NULL;
        o = json_object_new_object();
        arr = json_object_new_array();
        if (!o || !arr) {
                json_object_put(o);
                json_object_put(arr);
                return NULL;
        }
        if (!a->n_co && !a->co_other)
                clock_gettime(CLOCK_REALTIME, &a->co_from), a->co_to = a->co_from;
        format_time(&a->co_from, from);
        format_time(&a->co_to, to);
        add_str(o, "time", to);
        add_str(o, "event", "refused-coalesced");
        add_str(o, "from", from);
        add_str(o, "to", to);
        for (size_t i = 0; i < a->n_co; i++) {
                json_object *c = json_object_new_object();
                if (!c)
                        continue;
                json_object_object_add(c, "uid", json_object_new_int64(a->co[i].uid));
                add_str(c, "event", a->co[i].event);
                add_str(c, "op", a->co[i].op);
                json_object_object_add(c, "errno", json_object_new_int(a->co[i].err));
                if (a->co[i].err)
                        add_str(c, "error", strerrorname_np(a->co[i].err));
                json_object_object_add(c, "count", json_object_new_uint64(a->co[i].count));
                json_object_array_add(arr, c);
        }
        json_object_object_add(o, "refusals", arr);
        json_object_object_add(o, "other", json_object_new_uint64(a->co_other));
        json_object_object_add(o, "dropped", json_object_new_uint64(a->dropped));
        l = line_of(o, LOG_NOTICE);
        json_object_put(o);
        a->n_co = 0;
        a->co_other = 0;
        a->dropped = 0;
        return l;
}

/* Writes everything queued, then the coalesced counts if due (or if final). */
static void drain(struct sfs_audit *a, bool final)
{
        struct line *batch, *co = NULL;

        pthread_mutex_lock(&a->lock);
        batch = a->head;
        a->head = NULL;
        a->tail = &a->head;
        a->queued = 0;
        if (final || (a->n_co + a->co_other + a->dropped &&
                      a->lim.now_ms() - a->co_from_ms >= a->lim.interval_ms))
                co = take_coalesced(a);
        pthread_mutex_unlock(&a->lock);
        /* The queue's room is given back before the writes, so a slow sink delays lines,
         * never requests. */
        while (batch) {
                struct line *next = batch->next;
                write_line(a, batch);
                free(batch);
                batch = next;
        }
        if (co) {
                write_line(a, co);
                free(co);
        }
}

static void *writer(void *arg)
{
        struct sfs_audit *a = arg;

        for (;;) {
                struct pollfd p = { .fd = a->efd, .events = POLLIN };
                uint64_t v;
                int timeout = -1;
                bool stop, busy;

                if (atomic_exchange(&a->reopen, false))
                        do_reopen(a);
                drain(a, false);
                pthread_mutex_lock(&a->lock);
                stop = a->stop;
                busy = a->head != NULL;
                if (!stop && !busy) {
                        a->writer_waiting = true;
                        if (a->n_co + a->co_other + a->dropped) {
                                uint64_t since = a->lim.now_ms() - a->co_from_ms;
                                timeout = since >= a->lim.interval_ms
                                                  ? 0
                                                  : (int)(a->lim.interval_ms - since);
                        }
                }
                pthread_mutex_unlock(&a->lock);
                if (stop)
                        break;
                if (busy)
                        continue;
                if (poll(&p, 1, timeout) > 0) {
                        ssize_t n = read(a->efd, &v, sizeof(v));
                        (void)n;
                }
                pthread_mutex_lock(&a->lock);
                a->writer_waiting = false;
                pthread_mutex_unlock(&a->lock);
        }
        drain(a, true);
        return NULL;
}

int sfs_audit_start(struct sfs_audit *a)
{
        int r;

        if (!a || a->running)
                return 0;
        if (a->sink == SFS_AUDIT_SYSLOG)
                openlog("snapfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
        r = pthread_create_quiet(&a->thread, writer, a, 0);
        if (r)
                return -r;
        a->running = true;
        return 0;
}

void sfs_audit_request_reopen(struct sfs_audit *a)
{
        int saved = errno; /* a signal handler must leave errno as it found it */

        if (!a)
                return;
        atomic_store(&a->reopen, true);
        wake(a);
        errno = saved;
}

void sfs_audit_close(struct sfs_audit *a)
{
        if (!a)
                return;
        if (a->running)
                sfs_worker_stop(a->thread, &a->lock, &a->stop, wake, a);
        else
                drain(a, true);
        if (a->sink == SFS_AUDIT_SYSLOG)
                closelog();
        if (a->sink == SFS_AUDIT_FILE)
                close(a->fd);
        close(a->efd);
        pthread_mutex_destroy(&a->lock);
        free(a->path);
        free(a);
}

