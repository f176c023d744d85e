/* SPDX-License-Identifier: MIT */
/* libsnapfs internals shared by its files and by the snapfs command (ls, audit). Not
 * installed and not exported from libsnapfs.so (libsnapfs.sym lists what is). Internal names
 * start with sfc_ (SFC_ for macros): snapfs_ and SNAPFS_ are the public ABI of snapfs.h only,
 * so a reader can tell at a glance whether a call is a promise to outside programs. */
#pragma once

#include <dirent.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot/binding.h"
#include "client/snapfs.h"

struct snap_hasher;

/* The xattrs a client reads (docs/design.md): the staging NAME a snapshot was first published
 * under, its kind, and on a staging file why the daemon last refused a request on it. */
#define SFC_XATTR_NAME "user.snapfs.name"
#define SFC_XATTR_KIND "user.snapfs.kind"
#define SFC_XATTR_REFUSAL "user.snapfs.refusal"

/* A judged snapfs mount: everything below is opened relative to fd, never by path again. */
struct sfc_mnt {
        int fd;            /* O_PATH|O_DIRECTORY root of the judged mount, or -1 */
        uint64_t mount_id; /* as mc_fd_mount_id() reports it */
        bool unique;
        uint64_t dev;      /* st_dev of the mount root */
};

#define SFC_MNT_INIT { .fd = -1 }

void sfc_mnt_close(struct sfc_mnt *m);

/* What sfc_mnt_open() falls back to where openat2 is missing: the same refusals (-EXDEV
 * for an absolute name, "." , ".." or another mount; -ELOOP for a symlink), by walking the
 * components. Returns the descriptor or a negative errno. */
int sfc_open_beneath_by_hand(int root, const char *name, int flags, mode_t mode);

/* Runs the mount check (preset snapfs; owner from opts, else root; the caller's own mount and
 * foreign user namespaces refused unless opts allow them) on mount. 0 and *m, or:
 * -EMEDIUMTYPE (not compliant; every finding in *why), -ENOTCONN (the daemon is gone), or the
 * errno that kept the check from running ("mount-check"). */
int sfc_mnt_check(const char *mount, const struct snapfs_options *opts, struct sfc_mnt *m,
                  struct snapfs_report *why);

/* Whether the n reserved words at r (SNAPFS_RESERVED) are all zero. */
bool sfc_reserved_zero(const uint64_t *r, size_t n);

/* What to do about a mount-check finding code (enum mc_code) on the snapfs mount at mount
 * (escaped): "; nothing is mounted there: run `snapfs mount MNT`" and the like, or "". */
void sfc_finding_hint(int code, const char *mount, char *buf, size_t n);

/* openat2 relative to the judged root without following a symlink, leaving the mount or
 * climbing out of it (O_CLOEXEC|O_NOFOLLOW added): a descriptor, or a negative errno. */
int sfc_mnt_open(const struct sfc_mnt *m, const char *name, int flags, mode_t mode);

/* The judged mount's root, opened for listing below its pinned descriptor (never through the
 * path again): 0 and *out (closedir it), or a negative errno. */
int sfc_mnt_opendir(const struct sfc_mnt *m, DIR **out);

/* 0 when fd lies on exactly the judged mount, -EXDEV when it does not, another errno when
 * the kernel will not say. */
int sfc_mnt_confirm(const struct sfc_mnt *m, int fd);

/* Why name (a digest, or an entry escaped) could not be opened below a judged mount (r, a
 * negative errno; ENOENT, which each caller words, aside), in why: r. */
int sfc_open_refused(struct snapfs_report *why, int r, const char *name);

/* Opens the snapshot hex on the judged mount and verifies it against *want, or, when want
 * is NULL, against its name and its own fstat (dev, ino, size). With kinds (a mask of
 * SFC_KIND_BIT), also classifies the bytes that hashed (snapshot/kind.h) and refuses a
 * kind not in the mask with -ENOMSG ("kind"); 0 classifies nothing. The descriptor
 * (O_CLOEXEC), with *got (may be NULL) the binding it satisfied; or a negative errno and why.
 * hasher may be NULL. */
int sfc_mnt_open_snapshot(const struct sfc_mnt *m, const char *hex,
                          const struct snap_binding *want, uint64_t limit, unsigned kinds,
                          struct snap_hasher *hasher, struct snap_binding *got,
                          struct snapfs_report *why);

/* snap_verify_fd of fd against want, then, with kinds, the kind check above; hex names the
 * snapshot in the reasons. 0 or a negative errno and why. */
int sfc_verify_kind(int fd, const char *hex, const struct snap_binding *want, uint64_t limit,
                    unsigned kinds, struct snap_hasher *hasher, struct snapfs_report *why);

/* Publishes len bytes on the judged mount m, staged under name (a valid staging NAME, kept
 * by the daemon as the snapshot's name; NULL or taken: a scratch one, so the snapshot has
 * none): 0 published now, 1 already there, *out the snapshot; the errors of snapfs_publish. */
int sfc_mnt_publish(const struct sfc_mnt *m, const void *data, size_t len,
                    const char *name, const struct snapfs_options *opts,
                    struct snapfs_snapshot *out, struct snapfs_report *why);

/* What the daemon says of the snapshot the descriptor fd holds (a descriptor of any kind,
 * O_PATH included), its binding being b: *out. Reads no content. 0, or the errno of fstat. */
int sfc_fd_describe(int fd, const struct snap_binding *b, struct snapfs_snapshot *out);

/* Looks up hex below the judged root without opening it (O_PATH), confirms its mount, checks
 * it is a regular file of mode 0000 on the mount's device (and, with want, dev, ino and size
 * equal to want's: -ESTALE otherwise), and fills *out. 0, or a negative errno and why. */
int sfc_mnt_describe(const struct sfc_mnt *m, const char *hex,
                     const struct snap_binding *want, struct snapfs_snapshot *out,
                     struct snapfs_report *why);

/* The staging NAME grammar of a name a caller gives (docs/design.md, "Publishing"): 1-64 of
 * [A-Za-z0-9._-], starting with neither '.' nor '_' (a scratch name, which nobody keeps). */
bool sfc_name_ok(const char *name);

/* The size limit the options ask for. */
uint64_t sfc_opt_limit(const struct snapfs_options *opts);

/* The bit of a SNAP_KIND_* in a kinds mask. */
#define SFC_KIND_BIT(k) (1u << (k))
/* Every kind: what an internal open that delivers nothing (an audit, a binding) asks for. */
#define SFC_KINDS_ANY 0u
/* The kinds the options let a verified open hand over: their SNAPFS_OPT_KIND_* flags, or
 * content alone when they name none. */
unsigned sfc_opt_kinds(const struct snapfs_options *opts);

void sfc_binding_to_snap(const struct snapfs_binding *in, struct snap_binding *out);
void sfc_binding_from_snap(const struct snap_binding *in, struct snapfs_binding *out);

/* Report helpers. reset: no error, no reason. add: one reason (message printf-style, one
 * line, truncated; past SNAPFS_REASONS_MAX only counted). fail: add, record err as the
 * call's error and return it, so a caller can `return sfc_report_fail(...)`. All accept
 * a NULL report. */
void sfc_report_reset(struct snapfs_report *why);
void sfc_report_add(struct snapfs_report *why, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
int sfc_report_fail(struct snapfs_report *why, int err, const char *code, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));
/* Records err as the call's error without adding a reason (the reasons are in already). */
int sfc_report_error(struct snapfs_report *why, int err);

/* What each uid holds against its limits, from the daemon of a judged mount. */
struct sfc_uid_usage {
        uint32_t uid;
        uint64_t snapshots, bytes;       /* published, unlinked-but-open included */
        uint64_t staging, staging_bytes; /* staging files (unlinked-but-open included) */
};

struct sfc_usage {
        uint64_t uid_snapshots, uid_bytes;         /* each uid's limits (not the owner's) */
        uint32_t owner;
        uint64_t reserve_snapshots, reserve_bytes; /* kept for the owner */
        size_t n;
        struct sfc_uid_usage *uids;             /* largest first */
        uint64_t more;                             /* uids the daemon left out */
};

/* Reads the root's user.snapfs.usage on the judged mount: 0 and *out (sfc_usage_free),
 * -ENODATA from a daemon that does not report it, -EBADMSG for text that is not its form. */
int sfc_mnt_usage(const struct sfc_mnt *m, struct sfc_usage *out);
int sfc_usage_parse(const char *text, struct sfc_usage *out);
/* The xattr's value as read: n bytes in buf, which has room for one more (the terminating
 * NUL written here). -EBADMSG when a NUL is among them; else sfc_usage_parse. */
int sfc_usage_parse_value(char *buf, size_t n, struct sfc_usage *out);
void sfc_usage_free(struct sfc_usage *u);

/* ---- the control channel (control.c) and scopes (scopes.c) ---- */

/* The largest request the daemon takes, and the largest reply read back. */
#define SFC_CONTROL_REQUEST_MAX (64u * 1024)
#define SFC_CONTROL_REPLY_MAX (16u * 1024 * 1024)

/* The errno named name ("ENOENT", as strerrorname_np spells it), or 0 for none. */
int sfc_errno_from_name(const char *name);

/* Judges a reply of len bytes: 0 and *out (json_object_put it) when it is one JSON object
 * with "ok": true; a refusal's negative errno (its "error" by name) with its "message" as the
 * reason "refused", and *out the reply; -EPROTO ("reply", *out NULL) for anything else. */
int sfc_control_parse_reply(const char *text, size_t len, json_object **out,
                            struct snapfs_report *why);

/* One request of len bytes through the .control file of the judged main mount m: 0 and
 * *reply (malloc'd, NUL-terminated, *reply_len bytes), or the channel's errors (snapfs.h). */
int sfc_mnt_control_text(const struct sfc_mnt *m, const char *request, size_t len,
                         char **reply, size_t *reply_len, struct snapfs_report *why);

/* sfc_mnt_control_text of request serialized, its reply judged by
 * sfc_control_parse_reply. */
int sfc_mnt_control(const struct sfc_mnt *m, json_object *request, json_object **reply,
                    struct snapfs_report *why);

/* A scope and a grant from the daemon's JSON (docs/design.md, "The control channel"): 0, or
 * -EPROTO (a field missing or of the wrong type; *out left freed) or -ENOMEM. */
int sfc_scope_from_json(json_object *o, struct snapfs_scope *out);
int sfc_grant_from_json(json_object *o, struct snapfs_grant *out);

/* The request object of scope-create for spec: 0 and *out, -EINVAL (a bad spec, with its
 * reason), -ENOMEM. client_pid is the id the kernel will stamp on the request's write. */
int sfc_scope_create_request(const struct snapfs_scope_spec *spec, int32_t client_pid,
                             json_object **out, struct snapfs_report *why);

/* ---- what to do about a refusal (client/explain.c) ---- */

/* v in the size grammar's spelling when a suffix divides it ("256K", "1G"), else "N bytes":
 * buf (n bytes), returned. */
char *sfc_size_text(uint64_t v, char *buf, size_t n);

/* The daemon's refusal text ("too-big max-snapshot-size=262144", "not-in-signed-manifest"):
 * its code ([a-z-]+) into code (n bytes) and the number after '=' into *value (0 without
 * one). 0, or -EBADMSG for anything else. */
int sfc_refusal_parse(const char *text, char *code, size_t n, uint64_t *value);
/* The same, read from the staging file fd holds (SFC_XATTR_REFUSAL; an O_PATH descriptor
 * too): 0, -ENODATA (the daemon refused nothing there), or a negative errno. */
int sfc_refusal_read(int fd, char *code, size_t n, uint64_t *value);

/* Adds the reason "too-big" for content of size bytes (only a lower bound unless exact) over
 * limit, the daemon's or the client's own, naming the option that changes it; returns err. */
int sfc_explain_too_big(struct snapfs_report *why, int err, uint64_t size, bool exact,
                           uint64_t limit, bool daemon);
/* Adds the reason the daemon named (code, value: sfc_refusal_parse's) in words that say
 * what to do; returns err. */
int sfc_explain_daemon(struct snapfs_report *why, int err, const char *code, uint64_t value);
/* Adds the reason of a publish step ("staging", "write", "rename") refused with err that the
 * daemon did not explain: who may publish, which per-uid limit (read from the mount's usage),
 * the mount full; what names what was refused. Returns err. */
int sfc_explain_publish(const struct sfc_mnt *m, struct snapfs_report *why, int err,
                           const char *step, const char *what);

/* ---- the snapshots of a mount, as a person asks about them (client/catalog.c) ---- */

struct sfc_entry {
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snapfs_snapshot snap;
};

/* Every snapshot of the judged mount, described (sfc_mnt_describe), in publishing order:
 * 0 and *out (free it), *n; or a negative errno with the reason. */
int sfc_mnt_catalog(const struct sfc_mnt *m, struct sfc_entry **out, size_t *n,
                       struct snapfs_report *why);

/* Which of items (n) target names: a binding (exactly its snapshot: -ESTALE when the digest
 * is there at another inode), a name (every snapshot of it, all of them only when all), else
 * a digest or its first 12 or more hex characters. 0 and the indexes in match (room for max),
 * *n_match; -ENOENT (none), -ENOTUNIQ (a name of several without all, an ambiguous prefix),
 * -EINVAL (a binding that does not parse); each with its reason. */
int sfc_catalog_match(const struct sfc_entry *items, size_t n, const char *target,
                         bool all, size_t *match, size_t max, size_t *n_match,
                         struct snapfs_report *why);

/* Removes e through the mount (unlink): 0, *kept true when the snapshot stays for its other
 * holders (the caller's hold went: --unlink-own); or the errno with a reason that says who may
 * (EPERM), EACCES, ENOENT. */
int sfc_mnt_remove(const struct sfc_mnt *m, const struct sfc_entry *e, bool *kept,
                      struct snapfs_report *why);
