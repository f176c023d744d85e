/* SPDX-License-Identifier: MIT */
/* The audit of a judged snapfs mount (what `snapfs audit` reports): every entry of its root
 * is a snapshot name (or .staging, .control, or in a scope's view an entry naming a snapshot
 * listed beside it, with its inode), and every snapshot opens on that mount, is a regular file
 * with one link and mode 0000 on the mount's device, has an inode of its own, xattrs that
 * agree with its name and fstat, and content that hashes to its name; a --store daemon's
 * blobs on disk, re-hashed by the daemon when the caller may ask for it (the mount owner and
 * root), are intact, and it set none aside at start. Internal to libsnapfs and the snapfs
 * command: not exported. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "client/client-internal.h"

enum sfc_audit_check {
        SFC_AUDIT_MOUNT,
        SFC_AUDIT_NAME,
        SFC_AUDIT_OPEN,
        SFC_AUDIT_REGULAR,
        SFC_AUDIT_MODE,
        SFC_AUDIT_DEV,
        SFC_AUDIT_INODE,
        SFC_AUDIT_XATTRS,
        SFC_AUDIT_CONTENT,
        SFC_AUDIT_STORE,
        SFC_AUDIT_ENTRIES, /* a scope view's entries: each names a snapshot listed there */
        SFC_AUDIT_SIGNED, /* only with --verify-key (sfc_audit_signed): content */
        SFC_AUDIT_SIGNATURES, /* the same: signature envelopes and manifests */
        SFC_AUDIT_CHECKS,
};

/* What each check is called in the report ("mode 0000", ...). */
extern const char *const sfc_audit_check_names[SFC_AUDIT_CHECKS];

struct sfc_audit_problem {
        char entry[256];   /* the entry's name, escaped: one line */
        char code[32];     /* "digest-mismatch", "mode", ... */
        char message[320];
};

/* What the audit learnt of the daemon's --store. */
enum sfc_audit_store_state {
        SFC_AUDIT_STORE_NONE,         /* no --store (or a daemon that says nothing of one) */
        SFC_AUDIT_STORE_REHASHED,     /* the daemon re-hashed every blob on disk just now */
        SFC_AUDIT_STORE_NOT_REHASHED, /* not re-hashed: only the start's count is known
                                            (note says why) */
};

struct sfc_audit_store {
        enum sfc_audit_store_state state;
        uint64_t blobs, intact, corrupt, missing; /* REHASHED */
        uint64_t repaired;                        /* REHASHED: rewritten from the daemon's
                                                     copy (counted intact) */
        uint64_t set_aside;                       /* set aside at the daemon's start */
        char note[160];                           /* NOT_REHASHED: why */
};

/* The outcome: counts per check and every problem found. Zero it before use; free it with
 * sfc_audit_free. A check that did not run (no --store, no --verify-key, a mount that is
 * not compliant) has ran false: its zero counts say nothing. */
struct sfc_audit {
        unsigned passed[SFC_AUDIT_CHECKS], failed[SFC_AUDIT_CHECKS];
        bool ran[SFC_AUDIT_CHECKS];
        struct sfc_audit_problem *problems;
        size_t n_problems, cap_problems;
        uint64_t snapshots, bytes;
        struct sfc_audit_store store;
};

/* Counts one check as passed or failed (without a problem: the caller says why); the check
 * ran. */
void sfc_audit_count(struct sfc_audit *a, enum sfc_audit_check c, bool ok);

/* Counts c as failed for entry and records the problem: 0, or -ENOMEM. */
__attribute__((format(printf, 5, 6)))
int sfc_audit_problem(struct sfc_audit *a, enum sfc_audit_check c, const char *entry,
                      const char *code, const char *fmt, ...);

struct evp_pkey_st;

/* The provenance check of `snapfs audit --verify-key` (client/provenance.c): every served
 * snapshot of content must be a layer of a manifest signed by one of keys (counted under
 * SFC_AUDIT_SIGNED), every signature envelope one of keys verifies and every manifest one
 * such an envelope signs (SFC_AUDIT_SIGNATURES: never counted as signed content;
 * docs/distribution.md); each other one is a problem "unsigned-snapshot". 0 when the check
 * ran, or a negative errno with why. */
int sfc_audit_signed(const struct sfc_mnt *m, struct evp_pkey_st *const *keys,
                     size_t n_keys, uint64_t limit, struct sfc_audit *a,
                     struct snapfs_report *why);

/* How far an audit got: bytes re-hashed of the bytes the snapshots hold (what takes the
 * time), and entries. */
struct sfc_audit_progress {
        uint64_t bytes, total_bytes;
        size_t entries, total_entries;
};

/* Audits every entry of the judged mount m into *a, calling progress (may be NULL) every few
 * entries or megabytes with how far it got, and once more when done (bytes == total_bytes).
 * 0 when the audit ran (its problems are in *a), or a negative errno that kept it from running
 * to the end (-ENOMEM, or the errno of reading the root). */
int sfc_audit_mount(const struct sfc_mnt *m, struct sfc_audit *a,
                       void (*progress)(const struct sfc_audit_progress *p, void *ctx),
                       void *ctx);

void sfc_audit_free(struct sfc_audit *a);
