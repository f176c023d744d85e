/* SPDX-License-Identifier: MIT */
/* snapfs mount: parse options, then hand over to the daemon (fs/daemon.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include <openssl/evp.h>

#include "cli/commands.h"
#include "cli/mountopts.h"
#include "common/util.h"
#include "fs/daemon.h"
#include "snapshot/oci.h"
#include "fs/options.h"
#include "snapshot/trust.h"

static void mount_usage(FILE *f)
{
        fprintf(f,
                "Usage: snapfs mount [OPTIONS] MOUNTPOINT\n"
                "       snapfs SOURCE MOUNTPOINT [-o OPTIONS]   (as mount.fuse3 runs it)\n"
                "\n"
                "Mount snapfs at MOUNTPOINT (nosuid,nodev,noexec, type fuse.snapfs), check the new\n"
                "mount with mountcheck and serve it. Returns once the mount is ready; the daemon\n"
                "keeps running until SIGTERM, SIGINT or umount, then unmounts; SIGHUP reopens the\n"
                "audit log.\n"
                "\n"
                "Options:\n"
                "  -o NAME[=VALUE][,...]      any long option below, as mount(8) and fstab pass\n"
                "                             them (max_bytes=64M or max-bytes=64M; allow_other;\n"
                "                             ro for --read-only; noatime, nodiratime, relatime,\n"
                "                             nosymfollow kept on the mount); rw, dev, suid, exec\n"
                "                             and the other generic flags are ignored: the mount\n"
                "                             is always nosuid,nodev,noexec. help, debug and\n"
                "                             foreground are refused: under mount(8) they would\n"
                "                             mount nothing or never return\n"
                "  -f, --foreground           stay in the foreground (print a line when serving)\n"
                "      --max-snapshot-size SIZE  largest snapshot (default 256K, at most 1G)\n"
                "      --max-bytes SIZE       snapshots and staging together (default 64M)\n"
                "      --max-snapshots N      published snapshots (default 4096)\n"
                "      --max-staging N        staging files per uid (default 16)\n"
                "      --max-staging-bytes SIZE  staging bytes per uid (default: a quarter of\n"
                "                             --max-bytes, at least --max-snapshot-size)\n"
                "      --max-uid-snapshots N  published snapshots per uid other than the owner,\n"
                "                             unlinked-but-open ones included (default: a\n"
                "                             quarter of --max-snapshots); EDQUOT past it\n"
                "      --max-uid-bytes SIZE   their bytes (default: a quarter of --max-bytes,\n"
                "                             at least --max-snapshot-size); EDQUOT past it\n"
                "      --publishers UID,...|any  uids that may publish (default: the mount's\n"
                "                             owner, the uid running snapfs, and root)\n"
                "      --unlink-own           let a publisher remove its own snapshots\n"
                "                             (default: only the mount's owner and root)\n"
                "      --readers UID,...|any  uids that may read content (default: any)\n"
                "      --read-only            no .staging/, mount read-only\n"
                "      --read-view PATH       also mount a read-only view of the snapshots at\n"
                "                             PATH, where opening one costs no round trip to\n"
                "                             the daemon (needs every uid to be a reader)\n"
                "      --allow-other          let other uids reach the mount (FUSE allow_other)\n"
                "      --noatime, --nodiratime, --relatime, --nosymfollow\n"
                "                             these per-mount flags on the mount and the read\n"
                "                             view too (root only: mount_setattr(2))\n"
                "      --audit-log FILE       append audit events (JSON lines) to FILE; SIGHUP\n"
                "                             reopens it (default: standard error with -f,\n"
                "                             else syslog)\n"
                "      --staging-ttl DURATION remove closed staging files idle this long\n"
                "                             (default 10m; 90, 90s, 15m, 2h; 0 never)\n"
                "      --store DIR            keep snapshots in DIR, an OCI image layout on a local\n"
                "                             filesystem, written before each publish is answered;\n"
                "                             at start every blob is re-hashed and served again\n"
                "                             (one that does not match is set aside in DIR/corrupt/)\n"
                "      --trust-key PUB        publish only what a manifest signed by the Ed25519\n"
                "                             public key in PUB (PEM) names, learned from the\n"
                "                             signatures and manifests published first\n"
                "                             (snapfs import does); others: EPERM (repeatable)\n"
                "      --pid-file FILE        write the daemon's pid to FILE once it serves (removed\n"
                "                             at exit): for kill -HUP after a log rotation\n"
                "      --replace-stale        clear a dead snapfs mount at MOUNTPOINT first\n"
                "      --threads N            at most N worker threads (default: libfuse's)\n"
                "      --scope-threads N      at most N worker threads for each scope's view\n"
                "                             (default 2): one scope's flood cannot take another's\n"
                "      --debug                print every FUSE request (implies -f)\n"
                "  -h, --help                 show this help\n"
                "\n"
                "SIZE takes a K, M or G suffix (binary units).\n"
                "Exit status: 0 served and unmounted cleanly, 1 refused (mount not compliant or\n"
                "a dead mount in the way), 2 usage or system error.\n");
}

enum {
        OPT_MAX_SNAPSHOT_SIZE = 256,
        OPT_MAX_BYTES,
        OPT_MAX_SNAPSHOTS,
        OPT_MAX_STAGING,
        OPT_MAX_STAGING_BYTES,
        OPT_MAX_UID_SNAPSHOTS,
        OPT_MAX_UID_BYTES,
        OPT_PUBLISHERS,
        OPT_UNLINK_OWN,
        OPT_READERS,
        OPT_READ_ONLY,
        OPT_READ_VIEW,
        OPT_ALLOW_OTHER,
        OPT_AUDIT_LOG,
        OPT_REPLACE_STALE,
        OPT_THREADS,
        OPT_SCOPE_THREADS,
        OPT_STAGING_TTL,
        OPT_DEBUG,
        OPT_STORE,
        OPT_TRUST_KEY,
        OPT_PID_FILE,
        OPT_NOATIME,
        OPT_NODIRATIME,
        OPT_RELATIME,
        OPT_NOSYMFOLLOW,
};

static int bad_value(const char *opt, const char *value, int err)
{
        fprintf(stderr, "snapfs mount: --%s: invalid value '%s' (%s)\n", opt, value,
                err == -ERANGE ? "out of range" : err == -E2BIG ? "too many uids" : "not valid");
        return 2;
}

/* --trust-key PUB: an Ed25519 public key (or a private key's public half) in PEM. 0, or the
 * exit code 2 after printing why. */
static int add_trust_key(struct snap_trust **trust, const char *path)
{
        EVP_PKEY *key = NULL;
        int r;

        r = snap_oci_key_load(path, false, &key);
        if (r == 0 && !*trust)
                r = snap_trust_new(trust);
        if (r == 0)
                r = snap_trust_add_key(*trust, key);
        EVP_PKEY_free(key);
        if (r < 0) {
                fprintf(stderr, "snapfs mount: --trust-key %s: %s\n", path,
                        r == -EINVAL ? "not an Ed25519 key (PEM)" : strerror(-r));
                return 2;
        }
        return 0;
}

static const struct option longopts[] = {
        { "foreground", no_argument, NULL, 'f' },
        { "max-snapshot-size", required_argument, NULL, OPT_MAX_SNAPSHOT_SIZE },
        { "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
        { "max-snapshots", required_argument, NULL, OPT_MAX_SNAPSHOTS },
        { "max-staging", required_argument, NULL, OPT_MAX_STAGING },
        { "max-staging-bytes", required_argument, NULL, OPT_MAX_STAGING_BYTES },
        { "max-uid-snapshots", required_argument, NULL, OPT_MAX_UID_SNAPSHOTS },
        { "max-uid-bytes", required_argument, NULL, OPT_MAX_UID_BYTES },
        { "publishers", required_argument, NULL, OPT_PUBLISHERS },
        { "unlink-own", no_argument, NULL, OPT_UNLINK_OWN },
        { "readers", required_argument, NULL, OPT_READERS },
        { "read-only", no_argument, NULL, OPT_READ_ONLY },
        { "read-view", required_argument, NULL, OPT_READ_VIEW },
        { "allow-other", no_argument, NULL, OPT_ALLOW_OTHER },
        { "audit-log", required_argument, NULL, OPT_AUDIT_LOG },
        { "replace-stale", no_argument, NULL, OPT_REPLACE_STALE },
        { "threads", required_argument, NULL, OPT_THREADS },
        { "scope-threads", required_argument, NULL, OPT_SCOPE_THREADS },
        { "staging-ttl", required_argument, NULL, OPT_STAGING_TTL },
        { "debug", no_argument, NULL, OPT_DEBUG },
        { "store", required_argument, NULL, OPT_STORE },
        { "pid-file", required_argument, NULL, OPT_PID_FILE },
        { "trust-key", required_argument, NULL, OPT_TRUST_KEY },
        { "noatime", no_argument, NULL, OPT_NOATIME },
        { "nodiratime", no_argument, NULL, OPT_NODIRATIME },
        { "relatime", no_argument, NULL, OPT_RELATIME },
        { "nosymfollow", no_argument, NULL, OPT_NOSYMFOLLOW },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

/* Parses into *cfg (the caller frees cfg->tree.trust) and runs the daemon. */
static int mount_parsed(int argc, char **argv, struct sfs_daemon_config *cfg)
{
        const char *size_arg = NULL, *bytes_arg = NULL, *atime_arg = NULL;
        uint64_t v;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "+fh", longopts, NULL)) != -1) {
                switch (c) {
                case 'f':
                        cfg->foreground = true;
                        break;
                case 'h':
                        mount_usage(stdout);
                        return 0;
                case OPT_MAX_SNAPSHOT_SIZE:
                        r = sfs_parse_size(optarg, &v);
                        if (r == 0 && (v == 0 || v > SFS_MAX_SNAPSHOT_SIZE_LIMIT))
                                r = -ERANGE;
                        if (r < 0)
                                return bad_value("max-snapshot-size", optarg, r);
                        cfg->tree.max_snapshot_size = v;
                        size_arg = optarg;
                        break;
                case OPT_MAX_BYTES:
                        r = sfs_parse_size(optarg, &v);
                        if (r == 0 && v == 0)
                                r = -ERANGE;
                        if (r < 0)
                                return bad_value("max-bytes", optarg, r);
                        cfg->tree.max_bytes = v;
                        bytes_arg = optarg;
                        break;
                case OPT_MAX_SNAPSHOTS:
                        r = sfs_parse_count(optarg, 1ULL << 32, &v);
                        if (r < 0)
                                return bad_value("max-snapshots", optarg, r);
                        cfg->tree.max_snapshots = v;
                        break;
                case OPT_MAX_STAGING:
                        r = sfs_parse_count(optarg, 65536, &v);
                        if (r < 0)
                                return bad_value("max-staging", optarg, r);
                        cfg->tree.max_staging = (unsigned)v;
                        break;
                case OPT_MAX_STAGING_BYTES:
                        r = sfs_parse_size(optarg, &v);
                        if (r == 0 && v == 0)
                                r = -ERANGE;
                        if (r < 0)
                                return bad_value("max-staging-bytes", optarg, r);
                        cfg->tree.max_staging_bytes = v;
                        break;
                case OPT_MAX_UID_SNAPSHOTS:
                        r = sfs_parse_count(optarg, 1ULL << 32, &v);
                        if (r < 0)
                                return bad_value("max-uid-snapshots", optarg, r);
                        cfg->tree.max_uid_snapshots = v;
                        break;
                case OPT_MAX_UID_BYTES:
                        r = sfs_parse_size(optarg, &v);
                        if (r == 0 && v == 0)
                                r = -ERANGE;
                        if (r < 0)
                                return bad_value("max-uid-bytes", optarg, r);
                        cfg->tree.max_uid_bytes = v;
                        break;
                case OPT_PUBLISHERS:
                        r = sfs_parse_uidset(optarg, &cfg->tree.publishers);
                        if (r < 0)
                                return bad_value("publishers", optarg, r);
                        break;
                case OPT_UNLINK_OWN:
                        cfg->tree.unlink_own = true;
                        break;
                case OPT_READERS:
                        r = sfs_parse_uidset(optarg, &cfg->tree.readers);
                        if (r < 0)
                                return bad_value("readers", optarg, r);
                        break;
                case OPT_READ_ONLY:
                        cfg->tree.read_only = true;
                        break;
                case OPT_READ_VIEW:
                        cfg->read_view = optarg;
                        break;
                case OPT_ALLOW_OTHER:
                        cfg->allow_other = true;
                        break;
                case OPT_AUDIT_LOG:
                        cfg->audit_log = optarg;
                        break;
                case OPT_REPLACE_STALE:
                        cfg->replace_stale = true;
                        break;
                case OPT_THREADS:
                        r = sfs_parse_count(optarg, 1024, &v);
                        if (r < 0)
                                return bad_value("threads", optarg, r);
                        cfg->max_threads = (unsigned)v;
                        break;
                case OPT_SCOPE_THREADS:
                        r = sfs_parse_count(optarg, 64, &v);
                        if (r < 0)
                                return bad_value("scope-threads", optarg, r);
                        cfg->scope_threads = (unsigned)v;
                        break;
                case OPT_STAGING_TTL:
                        r = sfs_parse_duration(optarg, &v);
                        if (r < 0)
                                return bad_value("staging-ttl", optarg, r);
                        cfg->tree.staging_ttl_ms = v;
                        break;
                case OPT_STORE:
                        cfg->store = optarg;
                        break;
                case OPT_PID_FILE:
                        cfg->pid_file = optarg;
                        break;
                case OPT_TRUST_KEY:
                        r = add_trust_key(&cfg->tree.trust, optarg);
                        if (r != 0)
                                return r;
                        break;
                case OPT_DEBUG:
                        cfg->debug = true;
                        cfg->foreground = true;
                        break;
                case OPT_NOATIME:
                case OPT_RELATIME: {
                        const char *mode = c == OPT_NOATIME ? "noatime" : "relatime";
                        /* One atime mode: the kernel would keep the last one, silently. */
                        if (atime_arg && strcmp(atime_arg, mode) != 0) {
                                fprintf(stderr, "snapfs mount: --%s and --%s cannot both hold\n",
                                        atime_arg, mode);
                                return 2;
                        }
                        atime_arg = mode;
                        cfg->mount_attr_clr |= MOUNT_ATTR__ATIME;
                        cfg->mount_attr_set |= c == OPT_NOATIME ? MOUNT_ATTR_NOATIME
                                                                : MOUNT_ATTR_RELATIME;
                        break;
                }
                case OPT_NODIRATIME:
                        cfg->mount_attr_set |= MOUNT_ATTR_NODIRATIME;
                        break;
                case OPT_NOSYMFOLLOW:
                        cfg->mount_attr_set |= MOUNT_ATTR_NOSYMFOLLOW;
                        break;
                default:
                        mount_usage(stderr);
                        return 2;
                }
        }
        if (optind != argc - 1) {
                fprintf(stderr, "snapfs mount: expected exactly one MOUNTPOINT\n");
                mount_usage(stderr);
                return 2;
        }
        cfg->mountpoint = argv[optind];
        if (cfg->read_view && !cfg->tree.readers.any) {
                /* The view never asks the daemon at open: a reader policy could not apply. */
                fprintf(stderr, "snapfs mount: --read-view needs every uid to be a reader "
                                "(drop --readers)\n");
                return 2;
        }
        if (cfg->tree.max_snapshot_size > cfg->tree.max_bytes) {
                /* Accepted, it would refuse every snapshot between the two with ENOSPC and
                 * look like a full mount: name both options instead. */
                fprintf(stderr, "snapfs mount: --max-snapshot-size %s is larger than "
                                "--max-bytes %s: they cannot both hold\n",
                        size_arg ?: "(256K by default)", bytes_arg ?: "(64M by default)");
                return 2;
        }
        return sfs_daemon_run(cfg);
}

static int mount_main(int argc, char **argv)
{
        struct sfs_daemon_config cfg = {
                .tree = {
                        .max_snapshot_size = SFS_DEFAULT_MAX_SNAPSHOT_SIZE,
                        .max_bytes = SFS_DEFAULT_MAX_BYTES,
                        .max_snapshots = SFS_DEFAULT_MAX_SNAPSHOTS,
                        .max_staging = SFS_DEFAULT_MAX_STAGING,
                        .readers = { .any = true },
                        /* Empty: the default publishers, the mount's owner and root. */
                        .publishers = { .any = false },
                        .cache_timeout = SFS_DEFAULT_CACHE_TIMEOUT,
                        .staging_ttl_ms = SFS_DEFAULT_STAGING_TTL_MS,
                },
        };
        int r = mount_parsed(argc, argv, &cfg);

        snap_trust_free(cfg.tree.trust);
        return r;
}

/* mount(8) can only pass "-o WORDS": they become long options first (mountopts.c). */
int cli_cmd_mount(int argc, char **argv)
{
        struct cli_mountopts_error err = { 0 };
        char **args = NULL;
        int n, r;

        r = cli_mountopts_expand(argc, argv, longopts, &n, &args, &err);
        if (r == -ENOMEM) {
                fprintf(stderr, "snapfs mount: -o: %s\n", strerror(ENOMEM));
                return 2;
        }
        if (r < 0) {
                /* mount(8) shows the helper's standard error and returns its status: the
                 * word, and why, is all an fstab author gets. */
                if (err.why == CLI_MOUNTOPTS_NOT_UNDER_MOUNT)
                        fprintf(stderr, "snapfs mount: -o %s: refused: mount(8) and fstab "
                                        "cannot run it (help prints and mounts nothing; debug "
                                        "and foreground never return); use 'snapfs mount "
                                        "--%s MOUNTPOINT' instead; nothing mounted\n",
                                err.word, err.word);
                else if (err.why == CLI_MOUNTOPTS_UNKNOWN)
                        fprintf(stderr, "snapfs mount: -o %s: unrecognized option; nothing "
                                        "mounted\n", err.word);
                else
                        fprintf(stderr, "snapfs mount: -o: an empty option or no options; "
                                        "nothing mounted\n");
                return 2;
        }
        r = mount_main(n, args);
        cli_mountopts_free(args);
        return r;
}
