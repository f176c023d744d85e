/* SPDX-License-Identifier: MIT */
/* Items 1 and 2: what a runtime pays to hand over vetted bytes.
 *
 * 1. publish + first verified open, 256 B to 1 MiB: snapfs (stage, rename to the digest,
 *    stat for the binding, verified open) vs a sealed memfd (create, write, seal, verify the
 *    held descriptor) vs O_TMPFILE (write, fchmod 0, reopen read-only through /proc/self/fd,
 *    verify) vs a tmpfs file (write, rename to the digest, verified open). Every contender
 *    hashes the bytes once to name or bind them and once more to verify them. One more row:
 *    snapfs publishing without hashing the bytes itself (the digest from the closed staging
 *    file's xattr, as docs/design.md allows) against the memfd.
 * 2. verified open of a 4 KiB snapshot published earlier: snapfs and tmpfs open by name;
 *    the memfd's holder verifies the descriptor it holds.
 * Contenders take turns within each round (the order rotates), so a noisy neighbour slows
 * them alike; medians of the rounds are reported. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/bench/bench_snapfs.h"
#include "mountcheck/mountcheck.h"
#include "common/util.h"

#define WARMUP_ROUNDS 20 /* the daemon starts its worker threads on demand */
#define WATCH_ROUNDS 32 /* extra snapfs rounds, untimed, that sample where the daemon ran */
#define STAGING_NAME ".staging/bench"

enum { C_SNAPFS, C_MEMFD, C_TMPFILE, C_TMPFS, C_SNAPFS_XATTR, N_CONTENDERS };
static const char *const contender_names[N_CONTENDERS] = { "snapfs", "memfd", "O_TMPFILE",
                                                            "tmpfs", "snapfs-xattr" };

struct lat {
        struct bench_env *env;
        struct bench_daemon d;
        uint8_t *buf;
        int view_root;          /* the read view (--read-view), judged like the mount */
        uint64_t view_mount_id;
};

static void binding_from(const struct stat *st, const struct snap_digest *d, size_t len,
                         struct snap_binding *b)
{
        b->sha256 = *d;
        b->size = len;
        b->dev = st->st_dev;
        b->ino = st->st_ino;
}

/* ---- item 1: publish + first verified open ---- */

/* The publisher names the bytes by hashing them itself, or (digest_from_xattr) reads the
 * digest the daemon computed while the bytes arrived, from the closed staging file's
 * user.snapfs.sha256: one GETXATTR round trip instead of a pass over the bytes. */
static long long publish_snapfs_how(struct lat *l, size_t len, bool digest_from_xattr)
{
        struct bench_env *env = l->env;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_binding b;
        struct snap_digest d;
        struct stat st;
        long long t0, t;
        int fd;

        bench_fill(l->buf, len, digest_from_xattr ? C_SNAPFS_XATTR : C_SNAPFS, env->counter++);
        t0 = bench_now_ns();
        if (!digest_from_xattr) {
                bench_digest(env, l->buf, len, &d);
                snap_digest_to_hex(&d, hex);
        }
        fd = openat(l->d.root, STAGING_NAME, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                bench_die("create %s: %s", STAGING_NAME, strerror(errno));
        bench_write_all(fd, l->buf, len);
        close(fd);
        if (digest_from_xattr) {
                char path[sizeof(l->d.mnt) + sizeof(STAGING_NAME) + 1];
                snprintf(path, sizeof(path), "%s/%s", l->d.mnt, STAGING_NAME);
                if (getxattr(path, "user.snapfs.sha256", hex, SNAP_DIGEST_HEX_LEN) !=
                            SNAP_DIGEST_HEX_LEN ||
                    snap_digest_from_hex(hex, SNAP_DIGEST_HEX_LEN, &d) < 0)
                        bench_die("user.snapfs.sha256: %s", strerror(errno));
                hex[SNAP_DIGEST_HEX_LEN] = '\0';
        }
        if (renameat(l->d.root, STAGING_NAME, l->d.root, hex) < 0)
                bench_die("publish: %s", strerror(errno));
        /* The publisher learns the binding (dev, ino) from the published name. */
        if (fstatat(l->d.root, hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                bench_die("stat: %s", strerror(errno));
        binding_from(&st, &d, len, &b);
        bench_verified_open(env, l->d.root, hex, &b, l->d.mount_id);
        t = bench_now_ns() - t0;
        if (unlinkat(l->d.root, hex, 0) < 0)
                bench_die("unlink: %s", strerror(errno));
        return t;
}

static long long publish_snapfs(struct lat *l, size_t len)
{
        return publish_snapfs_how(l, len, false);
}

static long long publish_snapfs_xattr(struct lat *l, size_t len)
{
        return publish_snapfs_how(l, len, true);
}

static long long publish_memfd(struct lat *l, size_t len)
{
        struct bench_env *env = l->env;
        struct snap_binding b;
        struct snap_digest d;
        struct stat st;
        long long t0, t;
        int fd, seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

        bench_fill(l->buf, len, C_MEMFD, env->counter++);
        t0 = bench_now_ns();
        bench_digest(env, l->buf, len, &d);
        fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                bench_die("memfd_create: %s", strerror(errno));
        bench_write_all(fd, l->buf, len);
        /* Mode 0000 like every other contender, so all of them pass the same
         * snap_verify_fd; the seals are what make a memfd immutable. */
        if (fchmod(fd, 0) < 0 || fcntl(fd, F_ADD_SEALS, seals) < 0 || fstat(fd, &st) < 0)
                bench_die("seal: %s", strerror(errno));
        binding_from(&st, &d, len, &b);
        if ((fcntl(fd, F_GET_SEALS) & seals) != seals)
                bench_die("memfd not sealed");
        bench_verify_held(env, fd, &b);
        close(fd);
        t = bench_now_ns() - t0;
        return t;
}

static long long publish_tmpfile(struct lat *l, size_t len)
{
        struct bench_env *env = l->env;
        struct snap_binding b;
        struct snap_digest d;
        char proc[64];
        struct stat st;
        long long t0, t;
        uint64_t id;
        bool unique;
        int fd, rfd;

        bench_fill(l->buf, len, C_TMPFILE, env->counter++);
        t0 = bench_now_ns();
        bench_digest(env, l->buf, len, &d);
        fd = openat(env->tmpfs_dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                bench_die("O_TMPFILE: %s", strerror(errno));
        bench_write_all(fd, l->buf, len);
        if (fchmod(fd, 0) < 0)
                bench_die("fchmod: %s", strerror(errno));
        /* Reopening a mode-0000 file through /proc works for root only (others get EACCES). */
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        rfd = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (rfd < 0)
                bench_die("reopen: %s", strerror(errno));
        close(fd);
        if (fstat(rfd, &st) < 0)
                bench_die("fstat: %s", strerror(errno));
        binding_from(&st, &d, len, &b);
        bench_verify_held(env, rfd, &b);
        if (mc_fd_mount_id(rfd, &id, &unique) < 0 || id != env->tmpfs_mount_id)
                bench_die("O_TMPFILE not on the baseline tmpfs");
        close(rfd);
        t = bench_now_ns() - t0;
        return t;
}

static long long publish_tmpfs(struct lat *l, size_t len)
{
        struct bench_env *env = l->env;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_binding b;
        struct snap_digest d;
        struct stat st;
        long long t0, t;
        int fd;

        bench_fill(l->buf, len, C_TMPFS, env->counter++);
        t0 = bench_now_ns();
        bench_digest(env, l->buf, len, &d);
        snap_digest_to_hex(&d, hex);
        fd = openat(env->tmpfs_dir, "bench.tmp", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (fd < 0)
                bench_die("create bench.tmp: %s", strerror(errno));
        bench_write_all(fd, l->buf, len);
        close(fd);
        if (renameat(env->tmpfs_dir, "bench.tmp", env->tmpfs_dir, hex) < 0 ||
            fstatat(env->tmpfs_dir, hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                bench_die("rename: %s", strerror(errno));
        binding_from(&st, &d, len, &b);
        bench_verified_open(env, env->tmpfs_dir, hex, &b, env->tmpfs_mount_id);
        t = bench_now_ns() - t0;
        if (unlinkat(env->tmpfs_dir, hex, 0) < 0)
                bench_die("unlink: %s", strerror(errno));
        return t;
}

static long long (*const publish_fn[N_CONTENDERS])(struct lat *, size_t) = {
        publish_snapfs, publish_memfd, publish_tmpfile, publish_tmpfs, publish_snapfs_xattr,
};

static const char *size_label(size_t len, char *buf, size_t n)
{
        if (len >= (1u << 20))
                snprintf(buf, n, "%zuMiB", len >> 20);
        else if (len >= 1024)
                snprintf(buf, n, "%zuKiB", len >> 10);
        else
                snprintf(buf, n, "%zuB", len);
        return buf;
}

static void watch(struct lat *l, long long (*op)(struct lat *, size_t), size_t len,
                  char *note, size_t n)
{
        struct bench_cpu_watch w = { .daemon = l->d.pid };

        for (int i = 0; i < WATCH_ROUNDS; i++) {
                bench_cpu_watch_begin(&w);
                op(l, len);
                bench_cpu_watch_end(&w);
        }
        bench_cpu_watch_describe(&w, note, n);
}

static void publish_item(struct lat *l, size_t len, int rounds)
{
        struct bench_series s[N_CONTENDERS] = { 0 };
        const char *placement = bench_placement_name(l->env->placement);
        char size[32], note[64];

        size_label(len, size, sizeof(size));
        for (int r = -WARMUP_ROUNDS; r < rounds; r++)
                for (int k = 0; k < N_CONTENDERS; k++) {
                        int c = (k + (r < 0 ? 0 : r)) % N_CONTENDERS;
                        long long t = publish_fn[c](l, len);
                        if (r >= 0)
                                bench_series_add(&s[c], (double)t);
                }
        watch(l, publish_snapfs, len, note, sizeof(note));
        /* snapfs against each baseline; then snapfs naming its bytes from the xattr against
         * the memfd only. */
        for (int c = C_MEMFD; c <= C_SNAPFS_XATTR; c++) {
                int me = c == C_SNAPFS_XATTR ? C_SNAPFS_XATTR : C_SNAPFS;
                int base = c == C_SNAPFS_XATTR ? C_MEMFD : c;
                bench_emit(&(struct bench_row){
                        .item = "1",
                        .what = "publish+verified open",
                        .size = size,
                        .placement = placement,
                        .snapfs = contender_names[me],
                        .baseline = contender_names[base],
                        .snapfs_value = bench_series_median(&s[me]) / 1e3,
                        .baseline_value = bench_series_median(&s[base]) / 1e3,
                        .unit = "us",
                        /* The targets: against the sealed memfd, at 4 KiB and 1 MiB. */
                        .target = base != C_MEMFD         ? ""
                                  : len == 4096           ? "<=5"
                                  : len == (1u << 20)     ? "<=1.2"
                                                          : "",
                        .runs = rounds,
                        .note = me == C_SNAPFS ? note : "",
                });
        }
        for (int c = 0; c < N_CONTENDERS; c++)
                bench_series_free(&s[c]);
}

/* ---- item 2: verified open of a snapshot published earlier ---- */

struct published {
        struct snap_binding b;
        struct snap_binding view; /* the same snapshot through the read view */
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        int memfd;
};

static long long open_snapfs(struct lat *l, struct published *p)
{
        long long t0 = bench_now_ns();
        bench_verified_open(l->env, l->d.root, p->hex, &p->b, l->d.mount_id);
        return bench_now_ns() - t0;
}

static long long open_view(struct lat *l, struct published *p)
{
        long long t0 = bench_now_ns();
        bench_verified_open(l->env, l->view_root, p->hex, &p->view, l->view_mount_id);
        return bench_now_ns() - t0;
}

static long long open_memfd(struct lat *l, struct published *p)
{
        int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
        long long t0 = bench_now_ns();

        if ((fcntl(p->memfd, F_GET_SEALS) & seals) != seals)
                bench_die("memfd not sealed");
        bench_verify_held(l->env, p->memfd, &p->b);
        return bench_now_ns() - t0;
}

static long long open_tmpfs(struct lat *l, struct published *p)
{
        long long t0 = bench_now_ns();
        bench_verified_open(l->env, l->env->tmpfs_dir, p->hex, &p->b, l->env->tmpfs_mount_id);
        return bench_now_ns() - t0;
}

static void open_item(struct lat *l, int rounds)
{
        struct bench_env *env = l->env;
        struct published sp = { .memfd = -1 }, tp = { .memfd = -1 }, mp = { .memfd = -1 };
        struct bench_series s[4] = { 0 };
        const size_t len = 4096;
        struct stat st;
        char note[64];
        int fd, seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

        /* snapfs */
        bench_fill(l->buf, len, 10, env->counter++);
        bench_digest(env, l->buf, len, &sp.b.sha256);
        snap_digest_to_hex(&sp.b.sha256, sp.hex);
        fd = openat(l->d.root, STAGING_NAME, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                bench_die("create: %s", strerror(errno));
        bench_write_all(fd, l->buf, len);
        close(fd);
        if (renameat(l->d.root, STAGING_NAME, l->d.root, sp.hex) < 0 ||
            fstatat(l->d.root, sp.hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                bench_die("publish: %s", strerror(errno));
        binding_from(&st, &sp.b.sha256, len, &sp.b);
        if (fstatat(l->view_root, sp.hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                bench_die("stat in the read view: %s", strerror(errno));
        binding_from(&st, &sp.b.sha256, len, &sp.view);

        /* tmpfs */
        bench_fill(l->buf, len, 11, env->counter++);
        bench_digest(env, l->buf, len, &tp.b.sha256);
        snap_digest_to_hex(&tp.b.sha256, tp.hex);
        fd = openat(env->tmpfs_dir, tp.hex, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (fd < 0)
                bench_die("create: %s", strerror(errno));
        bench_write_all(fd, l->buf, len);
        close(fd);
        if (fstatat(env->tmpfs_dir, tp.hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                bench_die("stat: %s", strerror(errno));
        binding_from(&st, &tp.b.sha256, len, &tp.b);

        /* memfd */
        bench_fill(l->buf, len, 12, env->counter++);
        bench_digest(env, l->buf, len, &mp.b.sha256);
        mp.memfd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mp.memfd < 0)
                bench_die("memfd_create: %s", strerror(errno));
        bench_write_all(mp.memfd, l->buf, len);
        if (fchmod(mp.memfd, 0) < 0 || fcntl(mp.memfd, F_ADD_SEALS, seals) < 0 ||
            fstat(mp.memfd, &st) < 0)
                bench_die("seal: %s", strerror(errno));
        binding_from(&st, &mp.b.sha256, len, &mp.b);

        for (int r = -WARMUP_ROUNDS; r < rounds; r++)
                for (int k = 0; k < 4; k++) {
                        int c = (k + (r < 0 ? 0 : r)) % 4;
                        long long t = c == 0   ? open_snapfs(l, &sp)
                                      : c == 1 ? open_memfd(l, &mp)
                                      : c == 2 ? open_tmpfs(l, &tp)
                                               : open_view(l, &sp);
                        if (r >= 0)
                                bench_series_add(&s[c], (double)t);
                }
        {
                struct bench_cpu_watch w = { .daemon = l->d.pid };
                for (int i = 0; i < WATCH_ROUNDS; i++) {
                        bench_cpu_watch_begin(&w);
                        open_snapfs(l, &sp);
                        bench_cpu_watch_end(&w);
                }
                bench_cpu_watch_describe(&w, note, sizeof(note));
        }
        for (int v = 0; v < 2; v++)
                for (int c = 1; c < 3; c++)
                        bench_emit(&(struct bench_row){
                                .item = "2",
                                .what = v ? "verified open (read view)"
                                          : "verified open (published)",
                                .size = "4KiB",
                                .placement = bench_placement_name(env->placement),
                                .snapfs = v ? "snapfs-view" : "snapfs",
                                .baseline = c == 1 ? "memfd" : "tmpfs",
                                .snapfs_value = bench_series_median(&s[v ? 3 : 0]) / 1e3,
                                .baseline_value = bench_series_median(&s[c]) / 1e3,
                                .unit = "us",
                                .target = c == 1 ? "<=1.5" : "",
                                .runs = rounds,
                                .note = v ? "" : note,
                        });
        close(mp.memfd);
        unlinkat(l->d.root, sp.hex, 0);
        unlinkat(env->tmpfs_dir, tp.hex, 0);
        for (int c = 0; c < 4; c++)
                bench_series_free(&s[c]);
}

void bench_section_latency(struct bench_env *env)
{
        static const struct {
                size_t len;
                int rounds;
        } sizes[] = {
                { 256, 400 },
                { 4096, 400 },
                { 65536, 300 },
                { 1u << 20, 100 },
        };
        char audit[128], view[128];
        const char *const opts[] = { "--max-snapshot-size", "2M", "--max-bytes", "256M",
                                     "--audit-log", audit, "--readers", "any",
                                     "--read-view", view, NULL };
        struct lat l = { .env = env, .view_root = -1 };
        struct mc_policy pol;
        struct mc_verdict v;

        snprintf(audit, sizeof(audit), "%s/latency.audit", env->base);
        snprintf(view, sizeof(view), "%s/latency-view", env->base);
        if (mkdir(view, 0755) < 0 && errno != EEXIST)
                bench_die("mkdir %s: %s", view, strerror(errno));
        l.buf = malloc(1u << 20);
        if (!l.buf)
                bench_die("out of memory");
        bench_env_daemon(env, &l.d, "latency", opts);
        /* The view is judged like the mount, read-only required. */
        mc_policy_preset(&pol, "snapfs");
        mc_policy_set(&pol, "ro", "");
        if (mc_check_path(view, &pol, MC_BACKEND_AUTO, &v, &l.view_root) < 0 || !v.compliant)
                bench_die("mountcheck refused the read view %s", view);
        l.view_mount_id = v.mount_id;
        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
                publish_item(&l, sizes[i].len, sizes[i].rounds);
        open_item(&l, 2000);
        close(l.view_root);
        if (bench_daemon_stop(&l.d) < 0)
                bench_die("snapfs did not exit cleanly");
        free(l.buf);
}
