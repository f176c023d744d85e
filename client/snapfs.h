/* SPDX-License-Identifier: MIT */
/* libsnapfs: publish bytes to a snapfs mount, and open them again verified.
 *
 * A snapshot is named by the SHA-256 of its content and bound by (sha256, size, dev, ino):
 * the binding names one published snapshot in one mount instance, and no later snapshot of
 * that mount can satisfy it (after a remount one may again, only on exactly its bytes:
 * docs/design.md, "A binding after a remount"). Every function here judges the mount first
 * (fuse.snapfs, nosuid, nodev, noexec, private, exactly one mount at the path, mounted by the
 * trusted owner - root unless the options name another uid - and never by the caller's own
 * uid), by the mount id a pinned descriptor reaches, and opens files relative to that
 * descriptor only.
 *
 * Every function returns 0 (or a descriptor, or 1 where said) or a negative errno. A failed
 * call fills *why (when not NULL) with every reason, each a stable code and a one-line
 * message. All functions are thread-safe and never print, exit or abort.
 *
 *   struct snapfs_binding b;
 *   if (snapfs_publish("/run/snapfs", cfg, len, NULL, &b, NULL) < 0) ...
 *   int fd = snapfs_open_verified("/run/snapfs", &b, NULL, &why);  // hand fd to a child
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SNAPFS_DIGEST_LEN 32
/* Longest snapshot, scope or entry name, terminating NUL not included. */
#define SNAPFS_NAME_MAX 64
/* Longest binding text, terminating NUL included. */
#define SNAPFS_BINDING_TEXT_MAX 160
/* Largest snapshot accepted when the options set no max_size: the most a daemon can serve. */
#define SNAPFS_DEFAULT_MAX_SIZE (UINT64_C(1) << 30)

/* Room to grow (SNAPFS_RESERVED; docs/clients.md, "The ABI and its versions"): every struct
 * here ends in reserved words but snapfs_binding (its text form fixes its four fields) and
 * snapfs_reason (fixed text), so a later release adds a field there without moving another or
 * changing a struct's size; a new scope limit goes in the reserved words of snapfs_scope_spec
 * and snapfs_scope. Callers zero them ({0}, memset, or designated initializers, which zero
 * every field they do not name). The library refuses options and a scope spec whose reserved
 * words are not zero (-EINVAL, "invalid-argument"): a program that sets a field of a later
 * release fails against this one instead of being silently ignored. What the library fills
 * comes back with them zero. */

struct snapfs_binding {
        uint8_t sha256[SNAPFS_DIGEST_LEN];
        uint64_t size;
        uint64_t dev; /* st_dev of the snapshot: makedev(major, minor) of the mount */
        uint64_t ino;
};

enum {
        /* owner below is set: trust mounts made by that uid instead of root's. */
        SNAPFS_OPT_OWNER = 1u << 0,
        /* INSECURE: also trust a mount made by the caller's own (non-root) uid. Any process of
         * that uid can unmount it and mount its own FUSE server in its place, which may serve
         * the right bytes to the check and its own to every later read. Without this flag
         * such a mount is refused with the reason "owner-is-caller". */
        SNAPFS_OPT_INSECURE_OWN_MOUNT = 1u << 1,
        /* Accept a mount whose owner cannot be verified because of user namespaces: one
         * mounted inside another user namespace (where user_id=0 is whoever created it), or
         * any FUSE mount when the caller itself runs inside one. Refused by default with the
         * reason "user-namespace". */
        SNAPFS_OPT_TRUST_USER_NAMESPACE = 1u << 2,
        /* The kinds of snapshot a verified open hands over (docs/design.md, "Kinds of
         * snapshot"). With none of these flags, only content: a signature envelope or a
         * manifest, published so that a --trust-key daemon learns what it admits, is refused
         * with -ENOMSG (reason "kind"), since its bytes were never vetted as a configuration
         * and anyone may copy a genuine envelope into a mount. With one or more, exactly the
         * kinds named. */
        SNAPFS_OPT_KIND_CONTENT = 1u << 3,
        SNAPFS_OPT_KIND_SIGNATURE = 1u << 4,
        SNAPFS_OPT_KIND_MANIFEST = 1u << 5,
};

/* NULL, or all zero, means: trust mounts made by root (uid 0) in the initial user namespace,
 * refuse a mount of the caller's own uid; accept snapshots up to SNAPFS_DEFAULT_MAX_SIZE. */
struct snapfs_options {
        unsigned flags;    /* SNAPFS_OPT_* */
        uint32_t owner;    /* with SNAPFS_OPT_OWNER: the uid that must have mounted snapfs */
        uint64_t max_size; /* largest snapshot to publish or read; 0: the default */
        uint64_t reserved[4]; /* zero (SNAPFS_RESERVED): -EINVAL otherwise */
};

#define SNAPFS_REASONS_MAX 40
#define SNAPFS_CODE_MAX 32
#define SNAPFS_MESSAGE_MAX 320

struct snapfs_reason {
        char code[SNAPFS_CODE_MAX];       /* stable: "stacked", "digest-mismatch", "open", ... */
        char message[SNAPFS_MESSAGE_MAX]; /* one line for a person; control bytes escaped */
};

/* Why a call failed. Codes: the mount check's finding codes (as `snapfs check` prints them),
 * "mount-check" (the check could not run), "open", "other-mount", the verification findings
 * ("not-regular", "mode", "too-big", "identity", "digest-mismatch", "changed", "io"), "kind"
 * (not a kind of snapshot asked for), and for publishing "read", "staging", "write",
 * "rename", "quota", "full", "staging-bytes" and a --trust-key daemon's own reason
 * ("not-in-signed-manifest", ...); "invalid-argument" for bad input. Each message says what
 * to do: the limit and the option that changes it, the command to run next (docs/design.md,
 * "Every refusal says what to do"). */
struct snapfs_report {
        int error;          /* what the call returned: 0 or a negative errno */
        unsigned n_reasons; /* stored in reasons[] */
        unsigned n_dropped; /* found but not stored: the array was full */
        struct snapfs_reason reasons[SNAPFS_REASONS_MAX];
        uint64_t reserved[4]; /* zero (SNAPFS_RESERVED) */
};

/* What a snapshot is (docs/design.md, "Kinds of snapshot"), as the daemon says it. */
enum snapfs_kind {
        SNAPFS_KIND_UNKNOWN = -1, /* the daemon did not say */
        SNAPFS_KIND_CONTENT = 0,
        SNAPFS_KIND_SIGNATURE = 1,
        SNAPFS_KIND_MANIFEST = 2,
};

/* One snapshot as every client shows it (docs/design.md, "One snapshot object"): its
 * binding, and what the daemon says of it. The name, publish time, publisher and kind are the
 * daemon's word, not verified: the binding is what a verified open checks. */
struct snapfs_snapshot {
        struct snapfs_binding binding;
        char name[SNAPFS_NAME_MAX + 1]; /* the staging NAME it was first published under
                                           (user.snapfs.name); "" when it has none */
        int64_t published_sec;          /* its first publish (st_mtime), seconds since the
                                           epoch; with published_nsec */
        uint32_t published_nsec;
        uint32_t publisher;             /* the uid that first published it (st_uid) */
        int kind;                       /* enum snapfs_kind (user.snapfs.kind) */
        uint64_t reserved[4];           /* zero (SNAPFS_RESERVED) */
};

/* The one-line text form "sha256=<hex> size=<n> dev=<major>:<minor> ino=<n>" into buf (at
 * least SNAPFS_BINDING_TEXT_MAX bytes): 0, -EINVAL for NULL, -ENOBUFS when buf is short. */
int snapfs_binding_format(const struct snapfs_binding *b, char *buf, size_t buflen);

/* Parses the text form (NUL-terminated; one spelling per binding: no trailing newline, no
 * leading zero, no uppercase): 0 and *out, or -EINVAL. */
int snapfs_binding_parse(const char *text, struct snapfs_binding *out);

/* Publishes len bytes (0 is allowed: the empty snapshot) to the snapfs mount at mount:
 * writes them to a staging file of its own, renames it to their SHA-256, then opens and
 * verifies the snapshot and fills *out with its binding (a publisher the mount does not let
 * read gets it from the snapshot's fstat: the daemon hashed the bytes). Returns 0 when published now, 1 when
 * the same content was already published (*out binds the existing snapshot), or: -EFBIG
 * (larger than max_size or the daemon's limit), -ENOSPC, -EDQUOT, -EACCES (not a publisher),
 * -EMEDIUMTYPE (not a compliant snapfs mount), -ENOTCONN (its daemon is gone), the errno of a
 * step. The staging file is removed in every outcome. */
int snapfs_publish(const char *mount, const void *data, size_t len,
                   const struct snapfs_options *opts, struct snapfs_binding *out,
                   struct snapfs_report *why);

/* snapfs_publish of everything read from fd until end of file (a file, pipe or socket). */
int snapfs_publish_fd(const char *mount, int fd, const struct snapfs_options *opts,
                      struct snapfs_binding *out, struct snapfs_report *why);

/* snapfs_publish under a name: the staging NAME the daemon keeps as the snapshot's name
 * (user.snapfs.name; the layer title of an export), 1-64 of [A-Za-z0-9._-] starting with
 * neither '.' nor '_' (a NAME starting with '_' is a scratch name nobody keeps; NULL stages
 * under one, as snapfs_publish does). Content published before keeps its first name. Fills
 * *out with the binding and what the daemon says of the snapshot. Returns what
 * snapfs_publish returns, and -EINVAL for a name outside that grammar, -EBUSY when a staging
 * file of this NAME is the caller's uid's already (another publish under it runs, or one was
 * interrupted and goes after the daemon's --staging-ttl). */
int snapfs_publish_named(const char *mount, const char *name, const void *data, size_t len,
                         const struct snapfs_options *opts, struct snapfs_snapshot *out,
                         struct snapfs_report *why);

/* snapfs_publish_named of everything read from fd until end of file. */
int snapfs_publish_fd_named(const char *mount, const char *name, int fd,
                            const struct snapfs_options *opts, struct snapfs_snapshot *out,
                            struct snapfs_report *why);

/* snapfs_publish_named for a scope (docs/design.md, "Scopes"): the snapshot is the scope's
 * alone, granted to scope (under entry when not NULL: an entry that exists moves to it), held
 * by no uid (not listed on the main mount) and gone with its last grant; *out is its binding
 * on the main mount (the owner's and root's: snapfs_scope_binding gives the view's). For the
 * mount owner and root only: -EACCES otherwise; -ENOENT no such scope; -EINVAL a bad scope or
 * entry name; else what snapfs_publish_named returns (1: the content was published already,
 * and is granted now). */
int snapfs_publish_for_scope(const char *mount, const char *scope, const char *entry,
                             const char *name, const void *data, size_t len,
                             const struct snapfs_options *opts, struct snapfs_snapshot *out,
                             struct snapfs_report *why);
/* snapfs_publish_for_scope of everything read from fd until end of file. */
int snapfs_publish_fd_for_scope(const char *mount, const char *scope, const char *entry,
                                const char *name, int fd, const struct snapfs_options *opts,
                                struct snapfs_snapshot *out, struct snapfs_report *why);

/* What the daemon of the snapfs mount at mount says of the snapshot b binds: judges the
 * mount, looks the snapshot up below its pinned root without opening it (a uid the reader
 * policy leaves out may ask too), checks its identity (regular, mode 0000, dev, ino, size),
 * and fills *out. The content is not read: open it verified to trust its bytes. 0, or the
 * errors of snapfs_open_verified but -EBADMSG, -EAGAIN and -ENOMSG. */
int snapfs_describe(const char *mount, const struct snapfs_binding *b,
                    const struct snapfs_options *opts, struct snapfs_snapshot *out,
                    struct snapfs_report *why);

/* The same for a descriptor of the snapshot b binds, already opened (and verified) by the
 * caller: *out from its fstat and xattrs. 0, -EINVAL (no descriptor, b or out), -ESTALE
 * (the descriptor is not b's snapshot), or the errno of fstat. */
int snapfs_describe_fd(int fd, const struct snapfs_binding *b, struct snapfs_snapshot *out);

/* What snapfs_describe_view found of a snapshot (its seen[] flags). */
enum {
        SNAPFS_SEEN_DAEMON = 1u << 0, /* name, published, publisher, kind: the main mount's */
        SNAPFS_SEEN_VIEW = 1u << 1,   /* the binding: found in the view, as b names it */
};

/* A snapshot of another mount of the same daemon (a scope's view, the read view) as the one
 * snapshot object shows it (docs/design.md, "One snapshot object"): for each of the n
 * bindings b[i] (what the daemon's record says of the snapshot there: a grant's sha256, size
 * and ino with the scope's dev), out[i] takes the name, first publish, publisher and kind the
 * daemon of the main mount at mount says of that digest (looked up below its judged root,
 * not opened: SNAPFS_SEEN_DAEMON in seen[i]) and the binding b[i], checked in view when view
 * is not NULL (view judged like any mount under opts, the snapshot looked up there by digest:
 * regular, mode 0000, its dev, ino and size b[i]'s: SNAPFS_SEEN_VIEW). What was not found
 * stays as b[i] says, name "" and published, publisher 0, kind SNAPFS_KIND_UNKNOWN; the view's
 * reasons, when it could not be judged, are in *why. Reads no content. 0, or -EINVAL (no b,
 * out or seen with n), or the errors of the main mount's check. */
int snapfs_describe_view(const char *mount, const char *view, const struct snapfs_binding *b,
                         size_t n, const struct snapfs_options *opts,
                         struct snapfs_snapshot *out, unsigned *seen,
                         struct snapfs_report *why);

/* Verified open, docs/design.md "Reading and verifying": judges the mount, opens the snapshot
 * relative to the pinned mount root (O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, no symlink,
 * no mount crossing), confirms the descriptor lies on the judged mount, checks fstat against
 * the binding, reads and hashes the whole content and fstats again. Returns that descriptor
 * (O_CLOEXEC; the caller closes it), or: -EMEDIUMTYPE / -ENOTCONN (the mount), -ENOENT (no
 * such snapshot), -ELOOP (a symlink), -EXDEV (another mount), -EINVAL (not a regular file, or
 * a bad argument), -EPERM (mode not 0000), -EFBIG, -ESTALE (dev, ino or size differ),
 * -EBADMSG (content does not hash to the binding), -EAGAIN (changed while verifying), -ENOMSG
 * (a signature envelope or a manifest, unless opts ask for that kind: see SNAPFS_OPT_KIND_*). */
int snapfs_open_verified(const char *mount, const struct snapfs_binding *b,
                         const struct snapfs_options *opts, struct snapfs_report *why);

/* Verified open of the snapshot named hex (64 lowercase hex) when only its digest is known:
 * every step of snapfs_open_verified except the identity comparison, whose dev, ino and size
 * are taken from the descriptor and returned in *out. Same errors. */
int snapfs_open_digest(const char *mount, const char *hex, const struct snapfs_options *opts,
                       struct snapfs_binding *out, struct snapfs_report *why);

/* Re-verifies a held descriptor against b before each use: fstat (regular, mode 0000,
 * dev/ino/size), the whole content hashed, fstat again, its kind. 0, or the errors of the
 * fstat, hash and kind steps above. The mount was judged when the descriptor was opened. */
int snapfs_verify_fd(int fd, const struct snapfs_binding *b, const struct snapfs_options *opts,
                     struct snapfs_report *why);

/* Where a sandbox reads: the binding of b's snapshot as seen through the read view that the
 * daemon of the snapfs mount at mount serves beside it (snapfs mount --read-view). Judges
 * mount, asks its root for the view's path (the xattr user.snapfs.read-view), then treats that
 * path like any mount: the mount check under opts, a verified open of the snapshot there by
 * its digest. Fills view (viewlen bytes; PATH_MAX is always enough) with the view's path and
 * *out with the binding there (the same sha256, size and ino; the view's dev). Returns 0, or:
 * -ENODATA (the mount has no read view), -EBADMSG (the daemon named an unusable path), the
 * errors of snapfs_open_digest for either mount (of any kind: a binding is not a delivery),
 * -ESTALE (the view serves another snapshot). */
int snapfs_view_binding(const char *mount, const struct snapfs_binding *b,
                        const struct snapfs_options *opts, char *view, size_t viewlen,
                        struct snapfs_binding *out, struct snapfs_report *why);

/* ---- Scopes (docs/design.md, "Scopes", "Scope views and the clients") ----------------
 *
 * A scope is what one consumer (a sandbox, a pod, a service) may see: a FUSE mount of its
 * own, the scope's view, that lists and opens only the snapshots granted to it. The mount
 * owner and root control scopes through the main mount: each function below judges the main
 * mount as every function here does, opens its .control file relative to the pinned root,
 * writes one request, reads the daemon's reply and closes it. A request the daemon refuses
 * returns its errno, with the daemon's message as the reason "refused": -ENOENT (no such
 * scope, snapshot or grant), -EEXIST (the scope's name or view is taken), -EINVAL (a bad
 * name, path or field), -EACCES (not the mount owner or root), -EDQUOT / -ENOSPC (a limit),
 * -EBUSY. The channel itself ("control"): -EOPNOTSUPP (the mount has no .control for this
 * caller: a daemon without scopes, or a uid that may not see it), -E2BIG (a request past
 * 64 KiB), -EPROTO (a reply that is not the protocol's: reason "reply"), or the errno of the
 * open, write or read. Nothing here is cached: every call is one request. */

/* A scope or entry name: 1-SNAPFS_NAME_MAX of [A-Za-z0-9._-], not starting with '.'. */

/* A scope's limits (snapshots published in its view, their bytes, its staging files and their
 * bytes; past them the daemon refuses with -EDQUOT). 0: not set (the daemon's default). */
struct snapfs_scope_limits {
        uint64_t max_snapshots;
        uint64_t max_bytes;
        uint64_t max_staging;
        uint64_t max_staging_bytes;
};

/* What a scope uses against those limits. */
struct snapfs_scope_usage {
        uint64_t snapshots;
        uint64_t bytes;
        uint64_t staging;
        uint64_t staging_bytes;
};

enum {
        SNAPFS_SCOPE_GID = 1u << 0,       /* gid is set: members of that group are users */
        SNAPFS_SCOPE_PUBLISH = 1u << 1,   /* processes in the scope may publish in its view */
        SNAPFS_SCOPE_UNTIL_PID = 1u << 2, /* until_pid is set: the scope goes when it exits */
        SNAPFS_SCOPE_UNMOUNTED = 1u << 3, /* reported only: its view is not mounted now (dev 0) */
};

/* What snapfs_scope_create asks for. */
struct snapfs_scope_spec {
        const char *name;     /* the scope's name */
        const char *view;     /* absolute path of its view in the daemon's mount namespace; the
                               * daemon creates the directory when absent (parents must exist) */
        const uint32_t *uids; /* n_uids uids that may use the view; with none and no gid: the
                               * daemon's own default (root only). uid 0 always may. */
        size_t n_uids;
        unsigned flags;       /* SNAPFS_SCOPE_* */
        uint32_t gid;         /* with SNAPFS_SCOPE_GID */
        int32_t until_pid;    /* with SNAPFS_SCOPE_UNTIL_PID: a pid of the caller's own pid
                               * namespace, which must be the daemon's (-EINVAL otherwise) */
        struct snapfs_scope_limits limits;
        /* Bytes guaranteed to the scope (at most its max_bytes): the daemon keeps what it does
         * not use of them from every other scope and the main mount's uids but the owner, and
         * refuses the create with -ENOSPC when it cannot. 0: none, the scope shares what is
         * free. A word that was reserved: the struct's size and offsets are unchanged. */
        uint64_t min_bytes;
        uint64_t reserved[3]; /* zero (SNAPFS_RESERVED): -EINVAL otherwise */
};

/* A scope as the daemon reports it. view and uids are allocated: snapfs_scope_free. */
struct snapfs_scope {
        char name[SNAPFS_NAME_MAX + 1];
        char *view;       /* the view's path, as the daemon has it */
        uint64_t dev;     /* the view's device, makedev(major, minor): the dev of its bindings;
                           * 0 with SNAPFS_SCOPE_UNMOUNTED (a view unmounted from outside) */
        uint32_t *uids;
        size_t n_uids;
        unsigned flags;   /* SNAPFS_SCOPE_* */
        uint32_t gid;
        int32_t until_pid;
        struct snapfs_scope_limits limits;
        struct snapfs_scope_usage usage;
        uint64_t n_grants;
        uint64_t min_bytes;   /* its guaranteed minimum (0: none); a word that was reserved */
        uint64_t reserved[3]; /* zero (SNAPFS_RESERVED) */
};

/* A snapshot granted to a scope: by its digest alone, or under an entry name (an alias in the
 * view that a later grant can move to another digest). */
struct snapfs_grant {
        uint8_t sha256[SNAPFS_DIGEST_LEN];
        uint64_t size;
        uint64_t ino;                     /* in the view: with the scope's dev, the binding there */
        char entry[SNAPFS_NAME_MAX + 1];  /* "" for a grant by digest */
        uint64_t reserved[4];             /* zero (SNAPFS_RESERVED) */
};

/* Frees what *s holds (view, uids) and zeroes it; not s itself. NULL is fine. */
void snapfs_scope_free(struct snapfs_scope *s);

/* Frees an array of n scopes (snapfs_scope_list) and what each holds. */
void snapfs_scopes_free(struct snapfs_scope *v, size_t n);

/* Frees what a function here allocated for the caller (a reply, a grant list). */
void snapfs_free(void *p);

/* One request on the control file of the main mount at mount: request is one JSON object
 * (see docs/design.md, "The control channel"). Fills *reply (malloc'd, NUL-terminated; free
 * it with snapfs_free) with the daemon's reply, one JSON object, when it has one: on success,
 * and on a refusal by the daemon. Returns 0 when the reply says ok, else the errors above. */
int snapfs_control(const char *mount, const char *request, const struct snapfs_options *opts,
                   char **reply, struct snapfs_report *why);

/* Creates a scope and mounts its view (docs/design.md, "Scopes"): 0 and *out (may be NULL;
 * snapfs_scope_free it) as the daemon reports the new scope. -EINVAL for a spec that is not
 * one (no name, a name outside the grammar, a relative view), else the errors above. */
int snapfs_scope_create(const char *mount, const struct snapfs_scope_spec *spec,
                        const struct snapfs_options *opts, struct snapfs_scope *out,
                        struct snapfs_report *why);

/* Every scope of the daemon: 0, *out (an array of *n; snapfs_scopes_free it) and *n. */
int snapfs_scope_list(const char *mount, const struct snapfs_options *opts,
                      struct snapfs_scope **out, size_t *n, struct snapfs_report *why);

/* One scope and its grants: 0, *out (snapfs_scope_free it) and, when grants is not NULL,
 * *grants (an array of *n_grants; snapfs_free it). -ENOENT for no such scope. */
int snapfs_scope_show(const char *mount, const char *name, const struct snapfs_options *opts,
                      struct snapfs_scope *out, struct snapfs_grant **grants, size_t *n_grants,
                      struct snapfs_report *why);

/* Removes a scope: its grants go (a snapshot nothing else references is collected), its
 * view is detached lazily (descriptors already open keep reading). -ENOENT for no such
 * scope. */
int snapfs_scope_remove(const char *mount, const char *name, const struct snapfs_options *opts,
                        struct snapfs_report *why);

/* Grants the published snapshot sha256 (64 lowercase hex) to the scope, under entry when not
 * NULL: an entry that exists is moved to sha256 atomically (a reader of the name gets the old
 * snapshot or the new one, never an error). 0 and *out (may be NULL) the grant. -ENOENT for
 * no such scope or snapshot. */
int snapfs_grant(const char *mount, const char *scope, const char *sha256, const char *entry,
                 const struct snapfs_options *opts, struct snapfs_grant *out,
                 struct snapfs_report *why);

/* Revokes from the scope either every grant of sha256 (its entries included) or, with
 * sha256 NULL, the one entry: new lookups in the view get ENOENT, open descriptors keep
 * reading. Exactly one of sha256 and entry (-EINVAL otherwise). -ENOENT for no such grant. */
int snapfs_revoke(const char *mount, const char *scope, const char *sha256, const char *entry,
                  const struct snapfs_options *opts, struct snapfs_report *why);

/* Where a sandbox of the scope reads: the binding of b's snapshot as seen through the scope's
 * view. Judges mount, asks the daemon for the scope (its view's path), then treats that path
 * like any mount: the mount check under opts, a verified open of the snapshot there by its
 * digest (of any kind). Fills view (viewlen bytes; PATH_MAX is always enough) and *out (the
 * same sha256 and size; the view's dev and its own inode number, the grant's there). Returns 0, or: the errors above, -ENOENT (not
 * granted to the scope), the errors of snapfs_open_digest in the view, -ESTALE (the view
 * serves another snapshot). */
int snapfs_scope_binding(const char *mount, const char *scope, const struct snapfs_binding *b,
                         const struct snapfs_options *opts, char *view, size_t viewlen,
                         struct snapfs_binding *out, struct snapfs_report *why);

/* Verified open through an entry of a scope's view: judges view (a snapfs mount like any
 * other), opens entry relative to its pinned root (O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC,
 * no mount crossing), reads the digest of that very descriptor (its xattr
 * user.snapfs.sha256), then every step of the verified open on it, the content hashed
 * against that digest. The entry may be moved to another snapshot at any moment: the
 * descriptor holds the one it resolved to, and *out (may be NULL) its binding. Returns the
 * descriptor, or: -EINVAL (entry outside the name grammar), -EBADMSG (a digest that is not
 * one, or content that does not hash to it), the errors of snapfs_open_digest. */
int snapfs_open_entry(const char *view, const char *entry, const struct snapfs_options *opts,
                      struct snapfs_binding *out, struct snapfs_report *why);

/* A descriptor that polls readable (POLLIN and POLLPRI; POLLHUP too when the entry was
 * removed) once entry of the scope's view moves from the snapshot it names now: rotated to
 * another (snapfs grant --as), or removed. Judges view like snapfs_open_entry, then opens
 * the daemon's watch of the entry, VIEW/.watch.ENTRY, below the pinned root; the daemon wakes
 * the poll when the entry moves (FUSE poll notices, no timer). Make the watch before reading
 * the entry: a move in between is then never missed. Close it with close(2). Returns the
 * descriptor, or: -EINVAL (entry outside the name grammar, or a digest: a digest never
 * moves), -ENOENT (no such entry in the view), the errors of the mount check. */
int snapfs_watch_entry(const char *view, const char *entry, const struct snapfs_options *opts,
                       struct snapfs_report *why);

/* Sleeps until the watch fd (snapfs_watch_entry) is readable, at most timeout_ms
 * milliseconds (-1: no limit; a signal does not end the wait). Returns 0 (the entry moved),
 * -ETIMEDOUT, -EIO (the view's daemon is gone), -EBADF. */
int snapfs_watch_wait(int fd, int timeout_ms);

/* Waits for entry of the scope's view to move (a watch, then snapfs_watch_wait) and opens
 * what it names then like snapfs_open_entry: the verified descriptor, and *out (may be NULL)
 * its binding. Returns -ETIMEDOUT (the entry did not move in timeout_ms), -ENOENT (it was
 * removed; the reason's code is "removed"), the errors of snapfs_watch_entry and of
 * snapfs_open_entry. */
int snapfs_wait_entry(const char *view, const char *entry, int timeout_ms,
                      const struct snapfs_options *opts, struct snapfs_binding *out,
                      struct snapfs_report *why);

/* snapfs_remove's flags. */
enum {
        /* Every snapshot a name names (without it a name of several is -ENOTUNIQ). */
        SNAPFS_REMOVE_ALL = 1u << 0,
};

/* What `snapfs rm TARGET` does: judges mount, then removes through it (unlink) every snapshot
 * target names: a binding (exactly its snapshot: -ESTALE when the digest is there at another
 * inode), a name (as `snapfs ls` shows it), else a digest or its first 12 or more hex
 * characters. The target is resolved before anything is removed. *removed and *kept (each
 * may be NULL): snapshots gone, and snapshots that stay for their other holders (the
 * caller's hold went: a daemon with --unlink-own). Returns 0, or: -ENOENT (names nothing),
 * -ENOTUNIQ (a name of several without SNAPFS_REMOVE_ALL, an ambiguous prefix), -EINVAL,
 * -EPERM (only the mount's owner and root remove snapshots), -EACCES, the errors above. */
int snapfs_remove(const char *mount, const char *target, unsigned flags,
                  const struct snapfs_options *opts, size_t *removed, size_t *kept,
                  struct snapfs_report *why);

/* What `snapfs ls --all` lists: every snapshot of the judged mount, described by the daemon,
 * in publishing order. 0, *out (an array of *n; snapfs_free it) and *n. */
int snapfs_list(const char *mount, const struct snapfs_options *opts,
                struct snapfs_snapshot **out, size_t *n, struct snapfs_report *why);

/* The library's version, "MAJOR.MINOR.PATCH" (a static string): a client that mirrors the
 * structs above (the Python client, the Node.js addon) compares it with the version it was
 * made for and refuses to run against another. */
const char *snapfs_version(void);

/* What a negative errno from this library means, in words ("not a compliant snapfs mount");
 * a static string, never NULL. */
const char *snapfs_strerror(int err);

#ifdef __cplusplus
}
#endif
