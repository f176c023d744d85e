/* SPDX-License-Identifier: MIT */
/* bench_snapfs: see bench_snapfs.h. Root, inside `unshare -m --propagation private`
 * (scripts/bench.sh does that): every mount made here dies with the namespace.
 *
 *   bench_snapfs --snapfs PATH [--csv FILE] [--placement free|same|split] [--scale N] SECTION
 *
 * SECTION: latency (items 1 and 2), read (items 3 and 4), scale (item 5). */
#include "tests/bench/bench_snapfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountcheck/mountcheck.h"
#include "snapshot/verify.h"

void bench_env_daemon(struct bench_env *env, struct bench_daemon *d, const char *name,
                      const char *const *opts)
{
        char mnt[160];
        int r;

        snprintf(mnt, sizeof(mnt), "%s/%s", env->base, name);
        r = bench_daemon_start(d, env->snapfs, mnt, bench_daemon_cpu(env->placement), opts);
        if (r < 0)
                bench_die("cannot start snapfs at %s: %s", mnt, strerror(-r));
}

void bench_digest(struct bench_env *env, const void *buf, size_t len, struct snap_digest *out)
{
        if (snap_hasher_reset(env->hasher) < 0 || snap_hasher_update(env->hasher, buf, len) < 0 ||
            snap_hasher_final(env->hasher, out) < 0)
                bench_die("SHA-256 failed");
}

void bench_write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;

        while (len) {
                ssize_t k = write(fd, p, len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        bench_die("write: %s", k < 0 ? strerror(errno) : "short");
                p += k;
                len -= (size_t)k;
        }
}

void bench_verify_held(struct bench_env *env, int fd, const struct snap_binding *b)
{
        struct snap_verify_result res;

        if (snap_verify_fd(fd, b, UINT64_MAX, env->hasher, &res) < 0)
                bench_die("verification refused: %s", res.message);
}

void bench_verified_open(struct bench_env *env, int dirfd, const char *name,
                         const struct snap_binding *b, uint64_t mount_id)
{
        uint64_t id;
        bool unique;
        int fd;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                bench_die("open %s: %s", name, strerror(errno));
        bench_verify_held(env, fd, b);
        if (mc_fd_mount_id(fd, &id, &unique) < 0 || id != mount_id)
                bench_die("%s is not on the judged mount", name);
        close(fd);
}

static void usage(void)
{
        fprintf(stderr, "usage: bench_snapfs --snapfs PATH [--csv FILE] "
                        "[--placement free|same|split] [--scale N] latency|read|scale\n");
        exit(2);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "snapfs", required_argument, NULL, 's' },
                { "csv", required_argument, NULL, 'c' },
                { "placement", required_argument, NULL, 'p' },
                { "scale", required_argument, NULL, 'n' },
                { NULL, 0, NULL, 0 },
        };
        struct bench_env env = { .tmpfs_dir = -1, .scale = 100000 };
        const char *section;
        bool unique;
        int c, rc = 0;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 's':
                        env.snapfs = optarg;
                        break;
                case 'c':
                        if (bench_csv_open(optarg) < 0)
                                bench_die("%s: %s", optarg, strerror(errno));
                        break;
                case 'p':
                        if (bench_placement_parse(optarg, &env.placement) < 0)
                                usage();
                        break;
                case 'n':
                        env.scale = (unsigned)strtoul(optarg, NULL, 10);
                        if (env.scale < 20)
                                usage();
                        break;
                default:
                        usage();
                }
        }
        if (!env.snapfs || optind != argc - 1)
                usage();
        section = argv[optind];
        if (geteuid() != 0)
                bench_die("run as root in a private mount namespace (scripts/bench.sh does)");
        if (snap_hasher_new(&env.hasher) < 0)
                bench_die("no hasher");
        if (bench_pin(bench_client_cpu(env.placement)) < 0)
                bench_die("cannot pin to a CPU");

        /* Scratch space on its own tmpfs: mount points and audit logs never touch the disk. */
        snprintf(env.base, sizeof(env.base), "/tmp/snapfs-bench-XXXXXX");
        if (!mkdtemp(env.base) || mount("tmpfs", env.base, "tmpfs", 0, "size=64m") < 0)
                bench_die("scratch tmpfs: %s", strerror(errno));
        /* The baseline tmpfs: flags a compliant snapshot directory would have. */
        snprintf(env.tmpfs, sizeof(env.tmpfs), "%s/tmpfs", env.base);
        if (mkdir(env.tmpfs, 0755) < 0 ||
            mount("tmpfs", env.tmpfs, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=1g,mode=1777") < 0)
                bench_die("baseline tmpfs: %s", strerror(errno));
        env.tmpfs_dir = open(env.tmpfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (env.tmpfs_dir < 0 || mc_fd_mount_id(env.tmpfs_dir, &env.tmpfs_mount_id, &unique) < 0)
                bench_die("baseline tmpfs: no mount id");

        if (strcmp(section, "latency") == 0)
                bench_section_latency(&env);
        else if (strcmp(section, "read") == 0)
                bench_section_read(&env);
        else if (strcmp(section, "scale") == 0)
                bench_section_scale(&env);
        else
                rc = 2;

        close(env.tmpfs_dir);
        umount2(env.base, MNT_DETACH); /* takes the baseline tmpfs along */
        rmdir(env.base);
        snap_hasher_free(env.hasher);
        bench_csv_close();
        if (rc == 2)
                usage();
        return rc;
}
