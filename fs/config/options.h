/* SPDX-License-Identifier: MIT */
/* The daemon's configuration and the one table of its options (docs/design.md, "The daemon's
 * options"): name, -o word, value grammar, default, range and help of each. `snapfs mount`'s
 * command line and --help, mount(8)'s -o words (cli/mountopts.c), the config file
 * (fs/config/conffile.c), the man page and docs/design.md's limits (checked by tests against this
 * table) all come from it; the rules between options and the defaults derived from others
 * are here too, checked when the daemon starts whoever starts it. Values are parsed by
 * common/values.h. Pure: no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/values.h"

/* Published snapshots never change: the kernel may cache their entries and attributes a day
 * (not an option). */
#define SFS_DEFAULT_CACHE_TIMEOUT 86400.0
/* The largest --max-snapshot-size: what a client accepts by default (SNAPFS_DEFAULT_MAX_SIZE
 * in snapfs.h; tests/unit/test_options.c keeps the two equal). */
#define SFS_MAX_SNAPSHOT_SIZE_LIMIT (1ULL << 30)
/* Worker threads of each scope's view unless --scope-threads says otherwise. */
#define SFS_SCOPE_THREADS_DEFAULT 2
/* The most scopes one daemon serves (--max-scopes, its default too). Each view is a FUSE
 * session, and libfuse 3.14 takes a thread-specific key for every session: glibc gives a
 * process 1,024 (PTHREAD_KEYS_MAX), and past them a view could not be made at all (EIO). This
 * bound keeps the refusal an ENOSPC that says so, with room left for the main mount, the read
 * view and the libraries' own keys. */
#define SFS_MAX_SCOPES_LIMIT 1000
/* --trust-key may be given this many times. */
#define SFS_TRUST_KEYS_MAX 16

struct sfs_audit;
struct sfs_inostate;
struct sfs_ocistore;
struct snap_trust;
struct sfs_scope_users;

/* What a tree is built with: limits, roles, caching, and the mount it serves. */
struct sfs_tree_config {
        uint64_t max_snapshot_size;
        uint64_t max_bytes;        /* snapshots + staging together */
        uint64_t max_snapshots;
        unsigned max_staging;      /* staging files per uid */
        uint64_t max_staging_bytes; /* staging bytes per uid; 0: a quarter of max_bytes, but
                                       at least max_snapshot_size */
        uint64_t max_uid_snapshots; /* published snapshots per uid other than the owner,
                                       unlinked-but-open ones included; 0: a quarter of
                                       max_snapshots */
        uint64_t max_uid_bytes;    /* their bytes; 0: a quarter of max_bytes, but at least
                                       max_snapshot_size */
        struct value_uid_list readers;    /* empty (not any, no uid): the mount owner and
                                             root (roles.c) */
        struct value_uid_list publishers; /* the same */
        bool single_uid;           /* no allow_other: the kernel lets only the owner in */
        bool read_only;            /* no .staging/ */
        bool unlink_own;           /* a publisher may remove its own snapshots */
        uid_t owner_uid;           /* owner shown on the directories */
        gid_t owner_gid;
        uint64_t dev;              /* st_dev of the mount, for the binding xattr (0 if unknown) */
        uint64_t read_view_dev;    /* st_dev of the read-only view, if there is one */
        double cache_timeout;      /* seconds the kernel may cache immutable entries/attrs */
        uint64_t staging_ttl_ms;   /* closed staging files idle this long are removed; 0 never */
        struct sfs_audit *audit;   /* may be NULL */
        struct sfs_ocistore *ocistore; /* --store: snapshots written there first; or NULL */
        struct sfs_ocistore *runtime;  /* --runtime-store: what is published for a scope is
                                          written there instead; or NULL */
        struct snap_trust *trust;  /* --trust-key: publish only what signed manifests name */
        struct sfs_inostate *inostate; /* the inode numbers kept for a successor, or NULL */
        /* A scope's view (docs/design.md, "Scopes"): its users read it, and publish when it
         * allows that, instead of readers and publishers. NULL on the main mount. */
        const struct sfs_scope_users *scope_users;
};

/* Fills the limits left 0 in cfg from the others, as docs/design.md ("Limits") says: staging
 * bytes per uid and bytes per uid a quarter of max_bytes but at least max_snapshot_size, and
 * snapshots per uid a quarter of max_snapshots (at least 1). */
void sfs_tree_config_derive(struct sfs_tree_config *cfg);

/* ---- the daemon's options ---- */

/* One per option, in the order of --help. */
enum sfs_opt_id {
        SFS_OPT_FOREGROUND,
        SFS_OPT_CONFIG,
        SFS_OPT_MAX_SNAPSHOT_SIZE,
        SFS_OPT_MAX_BYTES,
        SFS_OPT_MAX_SNAPSHOTS,
        SFS_OPT_MAX_STAGING,
        SFS_OPT_MAX_STAGING_BYTES,
        SFS_OPT_MAX_UID_SNAPSHOTS,
        SFS_OPT_MAX_UID_BYTES,
        SFS_OPT_STAGING_TTL,
        SFS_OPT_PUBLISHERS,
        SFS_OPT_UNLINK_OWN,
        SFS_OPT_READERS,
        SFS_OPT_READ_ONLY,
        SFS_OPT_READ_VIEW,
        SFS_OPT_ALLOW_OTHER,
        SFS_OPT_NOATIME,
        SFS_OPT_NODIRATIME,
        SFS_OPT_RELATIME,
        SFS_OPT_NOSYMFOLLOW,
        SFS_OPT_AUDIT_LOG,
        SFS_OPT_STORE,
        SFS_OPT_RUNTIME_STORE,
        SFS_OPT_TRUST_KEY,
        SFS_OPT_PID_FILE,
        SFS_OPT_REPLACE_STALE,
        SFS_OPT_THREADS,
        SFS_OPT_SCOPE_THREADS,
        SFS_OPT_MAX_SCOPES,
        SFS_OPT_DEBUG,
        SFS_OPT_HELP,
        SFS_OPT_COUNT,
};

/* What an option takes. */
enum sfs_opt_arg {
        SFS_ARG_FLAG,  /* nothing on the command line and in -o; yes or no in a file */
        SFS_ARG_VALUE, /* a value of a common/values.h type */
        SFS_ARG_PATH,  /* a path, taken as given */
};

/* Where an option may be given besides `snapfs mount`'s command line. */
enum {
        /* Not through -o (mount(8) and fstab) nor in a config file: help prints and mounts
         * nothing, debug and foreground never return, and mount(8) waits for this command. */
        SFS_OPTF_COMMAND_LINE_ONLY = 1u << 0,
        /* Not in a config file (a file naming another file). */
        SFS_OPTF_NOT_IN_FILE = 1u << 1,
        /* May be given more than once; each adds one. */
        SFS_OPTF_REPEATABLE = 1u << 2,
        /* A limit: a row of docs/design.md's "Limits" table. */
        SFS_OPTF_LIMIT = 1u << 3,
};

struct sfs_option {
        enum sfs_opt_id id;
        const char *name;       /* the long option; in -o and a file also with '_' for '-' */
        char short_name;        /* 'f' for --foreground, or 0 */
        const char *o_alias;    /* another -o word for it ("ro"), or NULL */
        enum sfs_opt_arg arg;
        enum value_type type;   /* with SFS_ARG_VALUE */
        const char *metavar;    /* "SIZE", "DIR"; NULL for a flag */
        uint64_t min, max;      /* the range of a SIZE, N or DURATION */
        uint64_t def;           /* its default, when def_text is NULL and has_def */
        bool has_def;
        const char *def_text;   /* the default in words when it is not one value, or NULL */
        const char *help;       /* one sentence, without the default */
        unsigned flags;         /* SFS_OPTF_* */
};

/* Every option, indexed by enum sfs_opt_id. */
extern const struct sfs_option sfs_options[SFS_OPT_COUNT];

/* The option named name: its long name exactly, or that name with '_' for '-' when
 * underscores is true (-o words and config keys: max_bytes). Never an abbreviation. NULL when
 * there is none. */
const struct sfs_option *sfs_option_find(const char *name, bool underscores);

/* The option's default as --help, the man page, the example config file and
 * docs/design.md say it ("64M", "a quarter of --max-bytes, ..."), or "" when it has none.
 * Returns buf. */
const char *sfs_option_default_text(const struct sfs_option *o, char *buf, size_t n);

/* What the daemon is started with: the mount point, the tree's configuration and how the
 * daemon runs. sfs_daemon_config_init fills the defaults; sfs_option_set one option;
 * sfs_daemon_config_finish applies the rules between options at start. */
struct sfs_daemon_config {
        const char *mountpoint;
        struct sfs_tree_config tree;  /* limits and policy; audit/owner/dev/trust filled in */
        const char *config;           /* --config: a file of further options, or NULL */
        const char *audit_log;        /* NULL: standard error in the foreground, else syslog */
        const char *read_view;        /* also mount a read-only view here, or NULL */
        const char *store;            /* --store: an OCI image layout to keep snapshots in */
        const char *runtime_store;    /* --runtime-store: the scopes' content and state, on a
                                         RAM filesystem */
        const char *pid_file;         /* --pid-file: the serving pid, written once it serves */
        const char *trust_keys[SFS_TRUST_KEYS_MAX]; /* --trust-key PUB..., loaded at start */
        unsigned n_trust_keys;
        bool foreground;
        bool allow_other;
        bool replace_stale;
        bool debug;
        bool help;                    /* --help: print the help, do nothing else */
        unsigned max_threads;         /* 0: libfuse's default */
        unsigned scope_threads;       /* worker threads of each scope's view (0: the default) */
        unsigned max_scopes;          /* scopes the daemon serves at most */
        bool noatime, nodiratime, relatime, nosymfollow; /* per-mount flags asked for */
        /* What sfs_daemon_config_finish makes of those: the flags that tighten both mounts
         * (MOUNT_ATTR_NOATIME, _NODIRATIME, _NOSYMFOLLOW, an atime mode with
         * MOUNT_ATTR__ATIME cleared), set once mounted. */
        uint64_t mount_attr_set, mount_attr_clr;
        uint64_t given;               /* 1 << id of each option set by sfs_option_set */
        char **owned;                 /* strings the config holds (from a file), freed by */
        size_t n_owned;               /* sfs_daemon_config_free */
};

/* Every default of the table into *cfg (nothing given, nothing owned). */
void sfs_daemon_config_init(struct sfs_daemon_config *cfg);

/* Frees what cfg owns (the strings a config file gave); cfg is then unusable. */
void sfs_daemon_config_free(struct sfs_daemon_config *cfg);

/* Sets option o from value (NULL for a flag on the command line; "yes" or "no" for a flag
 * in a file), keeping the pointer of a path (the caller keeps it alive). 0, or -EINVAL,
 * -ERANGE, -E2BIG (too many --trust-key) with why filled ("invalid size '12Q': expected
 * ..."), cfg untouched. */
int sfs_option_set(struct sfs_daemon_config *cfg, const struct sfs_option *o,
                   const char *value, char *why, size_t n);

/* At start, whoever built cfg (the command line, mount(8), a config file, a test): the
 * defaults derived from other options (--debug means --foreground; the per-uid limits of
 * sfs_tree_config_derive), then the rules between options: --max-snapshot-size at most
 * --max-bytes, --read-view only with every uid a reader, one atime mode. 0, or -EINVAL with
 * why naming both options. */
int sfs_daemon_config_finish(struct sfs_daemon_config *cfg, char *why, size_t n);
