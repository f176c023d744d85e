/* SPDX-License-Identifier: MIT */
/* The outcome of a check: every finding as data (a stable code and a one-line message). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mc_backend {
        MC_BACKEND_AUTO,      /* statmount, falling back to mountinfo where the kernel lacks it */
        MC_BACKEND_STATMOUNT, /* statx + statmount()/listmount(), Linux 6.8+ */
        MC_BACKEND_MOUNTINFO, /* /proc/self/mountinfo through libmount */
};

/* Stable codes: scripts and tests match on their names (mc_code_name), so never renumber
 * meaningfully or rename. */
enum mc_code {
        MC_NON_CANONICAL_PATH,
        MC_SYMLINK_IN_PATH,
        MC_NOT_A_MOUNT_POINT,
        MC_ANCESTOR_OVERMOUNTED,
        MC_BIND_OF_SUBDIRECTORY,
        MC_STACKED,
        MC_SUBMOUNT,
        MC_FSTYPE,
        MC_MISSING_OPTION,
        MC_FORBIDDEN_OPTION,
        MC_PROPAGATION,
        MC_IDMAPPED,
        MC_OWNER,
        MC_MODE,
        MC_SIZE,
        MC_TRANSPORT_NOT_CONNECTED,
        MC_CHANGED_DURING_CHECK,
        MC_OWNER_IS_CALLER,
        MC_USER_NAMESPACE,
        MC_SCOPE_WRITABLE,
        MC_CODE_COUNT
};

#define MC_FINDINGS_MAX 32
#define MC_MESSAGE_MAX 256
/* A scope's name: 1-64 of [A-Za-z0-9._-]. Room for what a daemon says, escaped. */
#define MC_SCOPE_NAME_MAX 64
#define MC_SCOPE_TEXT_MAX (4 * MC_SCOPE_NAME_MAX + 1)

struct mc_finding {
        enum mc_code code;
        char message[MC_MESSAGE_MAX]; /* one line: control bytes are escaped as \ooo */
};

struct mc_verdict {
        bool compliant;          /* true only with no finding at all (stored or dropped) */
        enum mc_backend backend; /* the backend that actually ran */
        bool has_mount_id;       /* the path reached a mount */
        bool mount_id_unique;    /* mount_id is the 64-bit unique id, not the reusable one */
        uint64_t mount_id;       /* the judged mount, same kind as mc_fd_mount_id() returns */
        /* The mount is a snapfs scope view (the policy asked, the root named a scope): its
         * name as the daemon gave it, escaped like a message ("" when it named none
         * readable), and whether the scope allows publishing. */
        bool is_scope;
        bool scope_publishes;
        char scope[MC_SCOPE_TEXT_MAX];
        size_t n_findings;       /* stored in findings[] */
        size_t n_dropped;        /* found but not stored: the array was full */
        struct mc_finding findings[MC_FINDINGS_MAX];
};

/* Resets *v to "no check ran yet": not compliant, no findings. */
void mc_verdict_init(struct mc_verdict *v);

/* Appends a finding (printf-style message, truncated to one line); past MC_FINDINGS_MAX it
 * only counts it in n_dropped. Always marks the verdict not compliant. */
void mc_verdict_add(struct mc_verdict *v, enum mc_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* True if a finding with this code is stored. */
bool mc_verdict_has(const struct mc_verdict *v, enum mc_code code);

/* "stacked", "missing-option", ...; NULL for an out-of-range code. */
const char *mc_code_name(enum mc_code code);

/* "auto", "statmount", "mountinfo"; NULL for an out-of-range value. */
const char *mc_backend_name(enum mc_backend b);

/* Parses a backend name. -EINVAL for anything else. */
int mc_backend_from_name(const char *name, enum mc_backend *out);

/* Copies s into out (size n, always NUL-terminated) escaping control bytes and backslash as
 * \ooo, as mountinfo does, so a path with a newline cannot forge a second finding line.
 * Returns out. */
char *mc_escape(const char *s, char *out, size_t n);
