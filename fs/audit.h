/* SPDX-License-Identifier: MIT */
/* Audit events: one JSON object per line, written with a single write() so lines from
 * concurrent threads never interleave (the log is opened O_APPEND). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct sfs_audit;

struct sfs_audit_event {
        const char *event;  /* "publish", "publish-refused", "unlink", "refused" */
        const char *op;     /* the request: "open", "rename", "setattr", ... (may be NULL) */
        uid_t uid;
        pid_t pid;
        const char *digest; /* snapshot digest in hex, or NULL */
        const char *name;   /* staging or other name as given by the caller, or NULL */
        const char *target; /* rename target as given by the caller, or NULL */
        uint64_t size;      /* content size for publish events, else 0 */
        int err;            /* positive errno of a refusal, 0 for success */
};

/* Opens path with O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|O_CLOEXEC (mode 0600); path NULL
 * means standard error. 0 and *out, or the negative errno of open/-ENOMEM. */
int sfs_audit_open(const char *path, struct sfs_audit **out);
void sfs_audit_close(struct sfs_audit *a);

/* Writes one line; a failing write is counted, never fatal (auditing must not stop the
 * daemon serving readers). a may be NULL (no auditing). */
void sfs_audit_emit(struct sfs_audit *a, const struct sfs_audit_event *ev);

/* Lines that could not be written so far. */
uint64_t sfs_audit_failures(const struct sfs_audit *a);
