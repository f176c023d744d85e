/* SPDX-License-Identifier: MIT */
/* Audit events: one JSON object per line, valid UTF-8, written by a thread of their own so a
 * request never waits for the log (a slow disk, a full syslog socket).
 *
 * A request only formats its line and queues it. The queue is bounded; when it is half full,
 * or when one uid is refused faster than its budget allows (a burst, then a steady rate),
 * refusals (and idempotent publishes, "publish-exists") are no longer queued one by one but
 * counted per (uid, event, op, errno) and written once a second as one "refused-coalesced"
 * event with the interval they cover. Other events (publish,
 * unlink, expiry) are queued until the queue is full, then counted as "dropped" in that event.
 *
 * Strings that are not valid UTF-8 are written with U+FFFD in place of each invalid byte and,
 * beside them, a "<field>_hex" field with the raw bytes in hex: the line stays valid UTF-8 and
 * two different raw names never read the same. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct sfs_audit;

struct sfs_audit_event {
        const char *event;  /* "publish", "publish-refused", "unlink", "refused", ... */
        const char *op;     /* the request: "open", "rename", "setattr", ... (may be NULL) */
        uid_t uid;
        pid_t pid;
        const char *digest; /* snapshot digest in hex, or NULL */
        const char *name;   /* staging or other name as given by the caller, or NULL */
        const char *target; /* rename target as given by the caller, or NULL */
        uint64_t size;      /* content size for publish events, else 0 */
        int err;            /* positive errno of a refusal, 0 for success */
        const char *reason; /* why a publish was refused, when the errno alone does not say */
        const char *scope;  /* the scope whose view or grants the event is about, or NULL */
        const char *entry;  /* a grant's entry name, or NULL */
        const char *view;   /* a scope's view, or NULL */
};

enum sfs_audit_sink {
        SFS_AUDIT_STDERR,
        SFS_AUDIT_FILE,   /* path */
        SFS_AUDIT_SYSLOG, /* LOG_DAEMON, one JSON line a message */
};

/* Opens the sink. A file is opened O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC
 * (mode 0600), its directory made first when that is missing (one level, 0750 less the umask;
 * -ENOENT when its parent is missing too), and judged on the descriptor: -ELOOP for a
 * symlink, -EINVAL for anything but a
 * regular file (a FIFO nobody reads would block the writer), -EOPNOTSUPP for a file of a
 * kernel interface (/proc, /sys: sfs_trustpath_kernel_fs), -EPERM for a file writable by
 * group or others or owned by another uid (they could rewrite the log); other open errors as
 * they are. No thread runs until sfs_audit_start. 0 and *out, or a negative errno. */
int sfs_audit_open(enum sfs_audit_sink sink, const char *path, struct sfs_audit **out);
/* Starts the writer thread (after any fork: a fork keeps one thread). Before it runs, events
 * wait in the queue. 0 or a negative errno (events then are written at close). */
int sfs_audit_start(struct sfs_audit *a);
/* Writes what is queued, stops the writer and frees a. a may be NULL. */
void sfs_audit_close(struct sfs_audit *a);

/* Queues one event; never blocks on the sink. a may be NULL (no auditing). */
void sfs_audit_emit(struct sfs_audit *a, const struct sfs_audit_event *ev);

/* Asks the writer to reopen the file by its path, with the same checks (log rotation). Only
 * an atomic store and a write() to an eventfd: safe in a signal handler. A reopen that fails
 * keeps the old descriptor and counts a failure. No effect on other sinks. a may be NULL. */
void sfs_audit_request_reopen(struct sfs_audit *a);

