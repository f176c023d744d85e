/* SPDX-License-Identifier: MIT */
/* The daemon's options: the table, the defaults derived from other limits, one option set
 * from text, and the rules between options checked at start. */
#include "fs/config/options.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#define U64 UINT64_MAX
#define SIZE(name_, min_, max_, def_, help_, flags_)                                          \
        .name = name_, .arg = SFS_ARG_VALUE, .type = VALUE_SIZE, .metavar = "SIZE",           \
        .min = min_, .max = max_, .def = def_, .has_def = true, .help = help_, .flags = flags_
#define FLAG(name_, help_) .name = name_, .arg = SFS_ARG_FLAG, .help = help_

const struct sfs_option sfs_options[SFS_OPT_COUNT] = {
        [SFS_OPT_FOREGROUND] = { .id = SFS_OPT_FOREGROUND, FLAG("foreground", "stay in the foreground (print a line "
                                                    "when serving)"),
                                 .short_name = 'f', .flags = SFS_OPTF_COMMAND_LINE_ONLY },
        [SFS_OPT_CONFIG] = { .id = SFS_OPT_CONFIG, .name = "config", .arg = SFS_ARG_PATH, .metavar = "FILE",
                             .help = "read options from FILE, key = value lines named as the "
                                     "long options (the command line wins)",
                             .flags = SFS_OPTF_NOT_IN_FILE },
        [SFS_OPT_MAX_SNAPSHOT_SIZE] = { .id = SFS_OPT_MAX_SNAPSHOT_SIZE, SIZE("max-snapshot-size", 1, SFS_MAX_SNAPSHOT_SIZE_LIMIT,
                                             256ULL << 10, "largest snapshot; EFBIG past it",
                                             SFS_OPTF_LIMIT) },
        [SFS_OPT_MAX_BYTES] = { .id = SFS_OPT_MAX_BYTES, SIZE("max-bytes", 1, U64, 64ULL << 20,
                                     "snapshots and staging together; ENOSPC past it",
                                     SFS_OPTF_LIMIT) },
        [SFS_OPT_MAX_SNAPSHOTS] = { .id = SFS_OPT_MAX_SNAPSHOTS, .name = "max-snapshots", .arg = SFS_ARG_VALUE,
                                    .type = VALUE_COUNT, .metavar = "N", .min = 1,
                                    .max = 1ULL << 32, .def = 4096, .has_def = true,
                                    .help = "published snapshots; ENOSPC past it",
                                    .flags = SFS_OPTF_LIMIT },
        [SFS_OPT_MAX_STAGING] = { .id = SFS_OPT_MAX_STAGING, .name = "max-staging", .arg = SFS_ARG_VALUE,
                                  .type = VALUE_COUNT, .metavar = "N", .min = 1, .max = 65536,
                                  .def = 16, .has_def = true,
                                  .help = "staging files per uid; EDQUOT past it",
                                  .flags = SFS_OPTF_LIMIT },
        [SFS_OPT_MAX_STAGING_BYTES] = { .id = SFS_OPT_MAX_STAGING_BYTES, SIZE("max-staging-bytes", 1, U64, 0,
                                             "staging bytes per uid; EDQUOT past it",
                                             SFS_OPTF_LIMIT),
                                        .def_text = "a quarter of --max-bytes, at least "
                                                    "--max-snapshot-size" },
        [SFS_OPT_MAX_UID_SNAPSHOTS] = { .id = SFS_OPT_MAX_UID_SNAPSHOTS, .name = "max-uid-snapshots", .arg = SFS_ARG_VALUE,
                                        .type = VALUE_COUNT, .metavar = "N", .min = 1,
                                        .max = 1ULL << 32, .has_def = true,
                                        .def_text = "a quarter of --max-snapshots",
                                        .help = "snapshots a uid other than the mount owner "
                                                "holds, unlinked-but-open ones included; "
                                                "EDQUOT past it",
                                        .flags = SFS_OPTF_LIMIT },
        [SFS_OPT_MAX_UID_BYTES] = { .id = SFS_OPT_MAX_UID_BYTES, SIZE("max-uid-bytes", 1, U64, 0,
                                         "bytes of the snapshots a uid other than the mount "
                                         "owner holds; EDQUOT past it", SFS_OPTF_LIMIT),
                                    .def_text = "a quarter of --max-bytes, at least "
                                                "--max-snapshot-size" },
        [SFS_OPT_STAGING_TTL] = { .id = SFS_OPT_STAGING_TTL, .name = "staging-ttl", .arg = SFS_ARG_VALUE,
                                  .type = VALUE_DURATION, .metavar = "DURATION", .min = 0,
                                  .max = U64, .def = 10 * 60 * 1000, .has_def = true,
                                  .help = "remove closed staging files idle this long, 0 "
                                          "for never",
                                  .flags = SFS_OPTF_LIMIT },
        [SFS_OPT_PUBLISHERS] = { .id = SFS_OPT_PUBLISHERS, .name = "publishers", .arg = SFS_ARG_VALUE,
                                 .type = VALUE_UID_LIST, .metavar = "UID,...|any",
                                 .has_def = true,
                                 .def_text = "the mount's owner (the uid running snapfs) and "
                                             "root",
                                 .help = "uids that may publish" },
        [SFS_OPT_UNLINK_OWN] = { .id = SFS_OPT_UNLINK_OWN, FLAG("unlink-own", "let a publisher drop its own hold on a "
                                                    "snapshot (by default only the mount's "
                                                    "owner and root remove one)") },
        [SFS_OPT_READERS] = { .id = SFS_OPT_READERS, .name = "readers", .arg = SFS_ARG_VALUE, .type = VALUE_UID_LIST,
                              .metavar = "UID,...|any", .has_def = true,
                              .def_text = "the mount's owner (the uid running snapfs) and "
                                          "root",
                              .help = "uids that may read content beside the owner and root; any "
                                      "for every uid (a single-tenant host, --read-view)" },
        [SFS_OPT_READ_ONLY] = { .id = SFS_OPT_READ_ONLY, FLAG("read-only", "no .staging/, mount read-only"),
                                .o_alias = "ro" },
        [SFS_OPT_READ_VIEW] = { .id = SFS_OPT_READ_VIEW, .name = "read-view", .arg = SFS_ARG_PATH, .metavar = "PATH",
                                .help = "also mount a read-only view of the snapshots at PATH, "
                                        "where opening one costs no round trip to the daemon "
                                        "(needs every uid to be a reader)" },
        [SFS_OPT_ALLOW_OTHER] = { .id = SFS_OPT_ALLOW_OTHER, FLAG("allow-other", "let other uids reach the mount (FUSE "
                                                      "allow_other)") },
        [SFS_OPT_NOATIME] = { .id = SFS_OPT_NOATIME, FLAG("noatime", "no access times: this per-mount flag on the "
                                              "mount and the read view (root only: "
                                              "mount_setattr(2))") },
        [SFS_OPT_NODIRATIME] = { .id = SFS_OPT_NODIRATIME, FLAG("nodiratime", "no directory access times, as --noatime") },
        [SFS_OPT_RELATIME] = { .id = SFS_OPT_RELATIME, FLAG("relatime", "relative access times, as --noatime (not "
                                                "both)") },
        [SFS_OPT_NOSYMFOLLOW] = { .id = SFS_OPT_NOSYMFOLLOW, FLAG("nosymfollow", "follow no symbolic link on the mounts, as "
                                                      "--noatime") },
        [SFS_OPT_AUDIT_LOG] = { .id = SFS_OPT_AUDIT_LOG, .name = "audit-log", .arg = SFS_ARG_PATH, .metavar = "FILE",
                                .has_def = true,
                                .def_text = "standard error with -f, else syslog",
                                .help = "append audit events (JSON lines) to FILE; SIGHUP "
                                        "reopens it" },
        [SFS_OPT_STORE] = { .id = SFS_OPT_STORE, .name = "store", .arg = SFS_ARG_PATH, .metavar = "DIR",
                            .help = "keep snapshots in DIR, an OCI image layout on a local "
                                    "filesystem, written before each publish is answered; at "
                                    "start every blob is re-hashed and served again (one that "
                                    "does not match is set aside in DIR/corrupt/)" },
        [SFS_OPT_RUNTIME_STORE] = { .id = SFS_OPT_RUNTIME_STORE, .name = "runtime-store",
                                    .arg = SFS_ARG_PATH, .metavar = "DIR",
                                    .help = "keep the scopes (their grants, and the content "
                                            "published for them) in DIR, on a RAM filesystem "
                                            "(tmpfs, ramfs; any other is refused): it survives "
                                            "a restart of the daemon, not a reboot, and never "
                                            "reaches a disk; with --store, scopes need it" },
        [SFS_OPT_TRUST_KEY] = { .id = SFS_OPT_TRUST_KEY, .name = "trust-key", .arg = SFS_ARG_PATH, .metavar = "PUB",
                                .help = "publish only what a manifest signed by the Ed25519 "
                                        "public key in PUB (PEM) names, learned from the "
                                        "signatures and manifests published first (snapfs "
                                        "import does); others: EPERM (repeatable)",
                                .flags = SFS_OPTF_REPEATABLE },
        [SFS_OPT_PID_FILE] = { .id = SFS_OPT_PID_FILE, .name = "pid-file", .arg = SFS_ARG_PATH, .metavar = "FILE",
                               .help = "write the daemon's pid to FILE once it serves "
                                       "(removed at exit): for kill -HUP after a log "
                                       "rotation" },
        [SFS_OPT_REPLACE_STALE] = { .id = SFS_OPT_REPLACE_STALE, FLAG("replace-stale", "clear a dead snapfs mount at "
                                                          "MOUNTPOINT first") },
        [SFS_OPT_THREADS] = { .id = SFS_OPT_THREADS, .name = "threads", .arg = SFS_ARG_VALUE, .type = VALUE_COUNT,
                              .metavar = "N", .min = 1, .max = 1024, .has_def = true,
                              .def_text = "libfuse's",
                              .help = "at most N worker threads" },
        [SFS_OPT_SCOPE_THREADS] = { .id = SFS_OPT_SCOPE_THREADS, .name = "scope-threads", .arg = SFS_ARG_VALUE, .type = VALUE_COUNT,
                                    .metavar = "N", .min = 1, .max = 64, .has_def = true,
                                    .def = SFS_SCOPE_THREADS_DEFAULT,
                                    .help = "at most N worker threads for each scope's view: "
                                            "one scope's flood cannot take another's" },
        [SFS_OPT_MAX_SCOPES] = { .id = SFS_OPT_MAX_SCOPES, .name = "max-scopes", .arg = SFS_ARG_VALUE, .type = VALUE_COUNT,
                                 .metavar = "N", .min = 1, .max = SFS_MAX_SCOPES_LIMIT, .has_def = true,
                                 .def = SFS_MAX_SCOPES_LIMIT,
                                 .help = "scopes the daemon serves at most; ENOSPC past it",
                                 .flags = SFS_OPTF_LIMIT },
        [SFS_OPT_DEBUG] = { .id = SFS_OPT_DEBUG, FLAG("debug", "print every FUSE request (implies -f)"),
                            .flags = SFS_OPTF_COMMAND_LINE_ONLY },
        [SFS_OPT_HELP] = { .id = SFS_OPT_HELP, FLAG("help", "show this help"), .short_name = 'h',
                           .flags = SFS_OPTF_COMMAND_LINE_ONLY },
};

_Static_assert(SFS_OPT_COUNT <= 64, "the given mask has one bit per option");

const struct sfs_option *sfs_option_find(const char *name, bool underscores)
{
        size_t len;

        if (!name)
                return NULL;
        len = strlen(name);
        for (size_t i = 0; i < SFS_OPT_COUNT; i++) {
                const char *want = sfs_options[i].name;
                size_t k = 0;

                if (strlen(want) != len)
                        continue;
                while (k < len && (name[k] == want[k] ||
                                   (underscores && name[k] == '_' && want[k] == '-')))
                        k++;
                if (k == len)
                        return &sfs_options[i];
        }
        return NULL;
}

const char *sfs_option_default_text(const struct sfs_option *o, char *buf, size_t n)
{
        if (!o->has_def)
                snprintf(buf, n, "%s", "");
        else if (o->def_text)
                snprintf(buf, n, "%s", o->def_text);
        else
                value_format(o->type, o->def, buf, n);
        return buf;
}

void sfs_tree_config_derive(struct sfs_tree_config *cfg)
{
        /* One uid must not be able to fill the whole byte budget with staging files it never
         * publishes; it must still be able to stage one largest snapshot. */
        if (!cfg->max_staging_bytes) {
                cfg->max_staging_bytes = cfg->max_bytes / 4;
                if (cfg->max_staging_bytes < cfg->max_snapshot_size)
                        cfg->max_staging_bytes = cfg->max_snapshot_size;
        }
        /* One uid must not be able to take every snapshot or byte from the others: each gets
         * a quarter by default (and room for one largest snapshot). */
        if (!cfg->max_uid_snapshots)
                cfg->max_uid_snapshots = cfg->max_snapshots / 4 ? cfg->max_snapshots / 4 : 1;
        if (!cfg->max_uid_bytes) {
                cfg->max_uid_bytes = cfg->max_bytes / 4;
                if (cfg->max_uid_bytes < cfg->max_snapshot_size)
                        cfg->max_uid_bytes = cfg->max_snapshot_size;
        }
}

void sfs_daemon_config_init(struct sfs_daemon_config *cfg)
{
        *cfg = (struct sfs_daemon_config){
                .tree = {
                        .max_snapshot_size = sfs_options[SFS_OPT_MAX_SNAPSHOT_SIZE].def,
                        .max_bytes = sfs_options[SFS_OPT_MAX_BYTES].def,
                        .max_snapshots = sfs_options[SFS_OPT_MAX_SNAPSHOTS].def,
                        .max_staging = (unsigned)sfs_options[SFS_OPT_MAX_STAGING].def,
                        .staging_ttl_ms = sfs_options[SFS_OPT_STAGING_TTL].def,
                        /* Empty: the default readers and publishers, the mount's owner and
                         * root (roles.c). */
                        .readers = { .any = false },
                        .publishers = { .any = false },
                        .cache_timeout = SFS_DEFAULT_CACHE_TIMEOUT,
                },
                .scope_threads = (unsigned)sfs_options[SFS_OPT_SCOPE_THREADS].def,
                .max_scopes = (unsigned)sfs_options[SFS_OPT_MAX_SCOPES].def,
        };
}

void sfs_daemon_config_free(struct sfs_daemon_config *cfg)
{
        for (size_t i = 0; i < cfg->n_owned; i++)
                free(cfg->owned[i]);
        free(cfg->owned);
        cfg->owned = NULL;
        cfg->n_owned = 0;
}

/* A flag's value: NULL on the command line (set), "yes" or "no" in a file. */
static int flag_value(const char *value, bool *on, char *why, size_t n)
{
        if (!value || strcmp(value, "yes") == 0)
                *on = true;
        else if (strcmp(value, "no") == 0)
                *on = false;
        else {
                snprintf(why, n, "invalid flag '%.64s': expected yes or no", value);
                return -EINVAL;
        }
        return 0;
}

static int set_flag(struct sfs_daemon_config *cfg, const struct sfs_option *o, bool on)
{
        switch (o->id) {
        case SFS_OPT_FOREGROUND: cfg->foreground = on; break;
        case SFS_OPT_DEBUG: cfg->debug = on; break;
        case SFS_OPT_HELP: cfg->help = on; break;
        case SFS_OPT_UNLINK_OWN: cfg->tree.unlink_own = on; break;
        case SFS_OPT_READ_ONLY: cfg->tree.read_only = on; break;
        case SFS_OPT_ALLOW_OTHER: cfg->allow_other = on; break;
        case SFS_OPT_REPLACE_STALE: cfg->replace_stale = on; break;
        case SFS_OPT_NOATIME: cfg->noatime = on; break;
        case SFS_OPT_NODIRATIME: cfg->nodiratime = on; break;
        case SFS_OPT_RELATIME: cfg->relatime = on; break;
        case SFS_OPT_NOSYMFOLLOW: cfg->nosymfollow = on; break;
        default:
                assert(!"a row of the table whose arg is a flag and whose id is none");
                return -EINVAL;
        }
        return 0;
}

static int set_path(struct sfs_daemon_config *cfg, const struct sfs_option *o,
                    const char *value, char *why, size_t n)
{
        if (!value || !*value) {
                snprintf(why, n, "invalid path '': expected a path");
                return -EINVAL;
        }
        switch (o->id) {
        case SFS_OPT_CONFIG: cfg->config = value; break;
        case SFS_OPT_READ_VIEW: cfg->read_view = value; break;
        case SFS_OPT_AUDIT_LOG: cfg->audit_log = value; break;
        case SFS_OPT_STORE: cfg->store = value; break;
        case SFS_OPT_RUNTIME_STORE: cfg->runtime_store = value; break;
        case SFS_OPT_PID_FILE: cfg->pid_file = value; break;
        case SFS_OPT_TRUST_KEY:
                if (cfg->n_trust_keys == SFS_TRUST_KEYS_MAX) {
                        snprintf(why, n, "more than %d keys", SFS_TRUST_KEYS_MAX);
                        return -E2BIG;
                }
                cfg->trust_keys[cfg->n_trust_keys++] = value;
                break;
        default:
                assert(!"a row of the table whose arg is a path and whose id is none");
                return -EINVAL;
        }
        return 0;
}

static int set_value(struct sfs_daemon_config *cfg, const struct sfs_option *o,
                     const char *value, char *why, size_t n)
{
        struct sfs_tree_config *t = &cfg->tree;
        uint64_t v;
        int r;

        if (o->type == VALUE_UID_LIST) {
                struct value_uid_list list;
                r = value_parse_uid_list(value, &list);
                if (r < 0) {
                        value_error(o->type, value, r, 0, U64, why, n);
                        return r;
                }
                if (o->id == SFS_OPT_READERS)
                        t->readers = list;
                else
                        t->publishers = list;
                return 0;
        }
        r = value_parse(o->type, value, o->min, o->max, &v);
        if (r < 0) {
                value_error(o->type, value, r, o->min, o->max, why, n);
                return r;
        }
        switch (o->id) {
        case SFS_OPT_MAX_SNAPSHOT_SIZE: t->max_snapshot_size = v; break;
        case SFS_OPT_MAX_BYTES: t->max_bytes = v; break;
        case SFS_OPT_MAX_SNAPSHOTS: t->max_snapshots = v; break;
        case SFS_OPT_MAX_STAGING: t->max_staging = (unsigned)v; break;
        case SFS_OPT_MAX_STAGING_BYTES: t->max_staging_bytes = v; break;
        case SFS_OPT_MAX_UID_SNAPSHOTS: t->max_uid_snapshots = v; break;
        case SFS_OPT_MAX_UID_BYTES: t->max_uid_bytes = v; break;
        case SFS_OPT_STAGING_TTL: t->staging_ttl_ms = v; break;
        case SFS_OPT_THREADS: cfg->max_threads = (unsigned)v; break;
        case SFS_OPT_SCOPE_THREADS: cfg->scope_threads = (unsigned)v; break;
        case SFS_OPT_MAX_SCOPES: cfg->max_scopes = (unsigned)v; break;
        default:
                assert(!"a row of the table whose arg is a value and whose id is none");
                return -EINVAL;
        }
        return 0;
}

int sfs_option_set(struct sfs_daemon_config *cfg, const struct sfs_option *o,
                   const char *value, char *why, size_t n)
{
        bool on;
        int r;

        why[0] = '\0';
        switch (o->arg) {
        case SFS_ARG_FLAG:
                r = flag_value(value, &on, why, n);
                if (r == 0)
                        r = set_flag(cfg, o, on);
                break;
        case SFS_ARG_PATH:
                r = set_path(cfg, o, value, why, n);
                break;
        default:
                r = set_value(cfg, o, value, why, n);
                break;
        }
        if (r == 0)
                cfg->given |= 1ULL << o->id;
        else if (!why[0])
                snprintf(why, n, "not an option of this kind");
        return r;
}

static bool given(const struct sfs_daemon_config *cfg, enum sfs_opt_id id)
{
        return cfg->given & (1ULL << id);
}

/* "--max-bytes 1K", or "--max-bytes (64M by default)" for one not given. */
static void said(const struct sfs_daemon_config *cfg, enum sfs_opt_id id, uint64_t v,
                 char *out, size_t n)
{
        char text[32];

        value_format(VALUE_SIZE, v, text, sizeof(text));
        if (given(cfg, id))
                snprintf(out, n, "--%s %s", sfs_options[id].name, text);
        else
                snprintf(out, n, "--%s (%s by default)", sfs_options[id].name, text);
}

int sfs_daemon_config_finish(struct sfs_daemon_config *cfg, char *why, size_t n)
{
        char a[96], b[96];

        if (cfg->debug)
                cfg->foreground = true;
        if (cfg->noatime && cfg->relatime) {
                /* One atime mode: the kernel would keep one of them, silently. */
                snprintf(why, n, "--noatime and --relatime cannot both hold");
                return -EINVAL;
        }
        if (cfg->read_view && !cfg->tree.readers.any) {
                /* The view never asks the daemon at open: a reader policy could not apply. */
                snprintf(why, n, "--read-view needs every uid to be a reader (--readers any)");
                return -EINVAL;
        }
        if (cfg->store && cfg->runtime_store && strcmp(cfg->store, cfg->runtime_store) == 0) {
                /* One is on a disk, the other in RAM: one directory cannot be both. */
                snprintf(why, n, "--store and --runtime-store must be two directories");
                return -EINVAL;
        }
        if (cfg->tree.max_snapshot_size > cfg->tree.max_bytes) {
                /* Accepted, it would refuse every snapshot between the two with ENOSPC and
                 * look like a full mount: name both options instead. */
                said(cfg, SFS_OPT_MAX_SNAPSHOT_SIZE, cfg->tree.max_snapshot_size, a, sizeof(a));
                said(cfg, SFS_OPT_MAX_BYTES, cfg->tree.max_bytes, b, sizeof(b));
                snprintf(why, n, "%s is larger than %s: they cannot both hold", a, b);
                return -EINVAL;
        }
        cfg->mount_attr_set = (cfg->nodiratime ? MOUNT_ATTR_NODIRATIME : 0) |
                              (cfg->nosymfollow ? MOUNT_ATTR_NOSYMFOLLOW : 0);
        cfg->mount_attr_clr = 0;
        if (cfg->noatime || cfg->relatime) {
                /* An atime mode replaces the mount's (MOUNT_ATTR_RELATIME is 0). */
                cfg->mount_attr_clr = MOUNT_ATTR__ATIME;
                cfg->mount_attr_set |= cfg->noatime ? MOUNT_ATTR_NOATIME : MOUNT_ATTR_RELATIME;
        }
        sfs_tree_config_derive(&cfg->tree);
        return 0;
}
