/* SPDX-License-Identifier: MIT */
/* Items 3 and 4: bulk bytes.
 *
 * 3. Sequential read of a 256 MiB snapshot with 1 MiB read() calls: the first read right
 *    after publishing, and repeated reads (open, read all, close), vs the same file on tmpfs.
 *    How long publishing itself took is reported beside it (no target): a fast path that moves
 *    work from the first read into publishing shows up there. A cold read, after the
 *    snapshot's page cache is dropped (POSIX_FADV_DONTNEED), shows what every read request to
 *    the daemon costs (readahead size, reply path); on tmpfs the pages are the file itself, so
 *    its cold read is an ordinary read.
 * 4. snap_verify_fd (what `snapfs verify` calls: fstat checks, pread + SHA-256, fstat) on the
 *    published snapshot vs SHA-256 of the same bytes already in memory; and the whole
 *    `snapfs verify PATH` command (process start, mount check, verified open) against the same.
 * Rounds alternate which contender goes first. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/bench/bench_snapfs.h"
#include "snapshot/verify.h"

#define BIG (256u << 20)
#define CHUNK (1u << 20)
#define ROUNDS 5
#define REPEATS 3

struct rd {
        struct bench_env *env;
        struct bench_daemon d;
        uint8_t *buf;   /* the content */
        uint8_t *chunk; /* the reader's buffer */
        struct bench_series publish[2], first[2], again[2], cold[2], verify, command, raw;
};

enum { SNAPFS, TMPFS };

static double gbps(double ns)
{
        return (double)BIG / ns; /* bytes per ns = GB/s */
}

static long long read_all(int dirfd, const char *name, void *chunk)
{
        long long t0 = bench_now_ns();
        size_t total = 0;
        ssize_t k;
        int fd;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                bench_die("open %s: %s", name, strerror(errno));
        while ((k = read(fd, chunk, CHUNK)) > 0)
                total += (size_t)k;
        if (k < 0)
                bench_die("read: %s", strerror(errno));
        close(fd);
        if (total != BIG)
                bench_die("read %zu bytes of %u", total, BIG);
        return bench_now_ns() - t0;
}

static void drop_pages(int dirfd, const char *name)
{
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
                bench_die("dropping the page cache of %s failed", name);
        close(fd);
}

static void reads(struct rd *r, int c, int dirfd, const char *name)
{
        bench_series_add(&r->first[c], (double)read_all(dirfd, name, r->chunk));
        for (int i = 0; i < REPEATS; i++)
                bench_series_add(&r->again[c], (double)read_all(dirfd, name, r->chunk));
        for (int i = 0; i < REPEATS; i++) {
                drop_pages(dirfd, name);
                bench_series_add(&r->cold[c], (double)read_all(dirfd, name, r->chunk));
        }
}

static void round_tmpfs(struct rd *r)
{
        struct bench_env *env = r->env;
        long long t0;
        int fd;

        bench_fill(r->buf, BIG, 30, env->counter++);
        t0 = bench_now_ns();
        fd = openat(env->tmpfs_dir, "big.tmp", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        if (fd < 0)
                bench_die("create: %s", strerror(errno));
        bench_write_all(fd, r->buf, BIG);
        close(fd);
        if (renameat(env->tmpfs_dir, "big.tmp", env->tmpfs_dir, "big") < 0)
                bench_die("rename: %s", strerror(errno));
        bench_series_add(&r->publish[TMPFS], (double)(bench_now_ns() - t0));
        reads(r, TMPFS, env->tmpfs_dir, "big");
        unlinkat(env->tmpfs_dir, "big", 0);
}

/* `snapfs verify --owner 0 MNT/<hex>`: 0 when it exits 0 (verified). */
static long long verify_command(struct rd *r, const char *hex)
{
        char path[sizeof(r->d.mnt) + SNAP_DIGEST_HEX_LEN + 2];
        long long t0 = bench_now_ns();
        int status;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/%s", r->d.mnt, hex);
        pid = fork();
        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
                        _exit(127);
                execl(r->env->snapfs, r->env->snapfs, "verify", "--owner", "0", path,
                      (char *)NULL);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                bench_die("snapfs verify %s did not verify", path);
        return bench_now_ns() - t0;
}

static void round_snapfs(struct rd *r)
{
        struct bench_env *env = r->env;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_verify_result res;
        struct snap_binding b;
        struct snap_digest d;
        struct stat st;
        long long t0;
        int fd;

        bench_fill(r->buf, BIG, 31, env->counter++);
        bench_digest(env, r->buf, BIG, &b.sha256);
        snap_digest_to_hex(&b.sha256, hex);
        t0 = bench_now_ns();
        fd = openat(r->d.root, ".staging/big", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                bench_die("create: %s", strerror(errno));
        bench_write_all(fd, r->buf, BIG);
        close(fd);
        if (renameat(r->d.root, ".staging/big", r->d.root, hex) < 0)
                bench_die("publish: %s", strerror(errno));
        bench_series_add(&r->publish[SNAPFS], (double)(bench_now_ns() - t0));
        reads(r, SNAPFS, r->d.root, hex);

        /* Item 4, on the same snapshot; the two take turns. */
        fd = openat(r->d.root, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                bench_die("open: %s", strerror(errno));
        b.size = BIG;
        b.dev = st.st_dev;
        b.ino = st.st_ino;
        for (int i = 0; i < 2; i++) {
                t0 = bench_now_ns();
                if (snap_verify_fd(fd, &b, BIG, env->hasher, &res) < 0)
                        bench_die("verify: %s", res.message);
                bench_series_add(&r->verify, (double)(bench_now_ns() - t0));
                t0 = bench_now_ns();
                bench_digest(env, r->buf, BIG, &d);
                bench_series_add(&r->raw, (double)(bench_now_ns() - t0));
                if (!snap_digest_equal(&d, &b.sha256))
                        bench_die("digest changed");
                bench_series_add(&r->command, (double)verify_command(r, hex));
        }
        close(fd);
        if (unlinkat(r->d.root, hex, 0) < 0)
                bench_die("unlink: %s", strerror(errno));
}

static void row(const char *item, const char *what, struct bench_series *s, const char *base,
                struct bench_series *bs, const char *unit, bool throughput, const char *target,
                const char *placement)
{
        double a = bench_series_median(s), b = bench_series_median(bs);

        bench_emit(&(struct bench_row){
                .item = item,
                .what = what,
                .size = "256MiB",
                .placement = placement,
                .snapfs = "snapfs",
                .baseline = base,
                .snapfs_value = throughput ? gbps(a) : a / 1e6,
                .baseline_value = throughput ? gbps(b) : b / 1e6,
                .unit = unit,
                .target = target,
                .runs = (int)s->n,
                .note = "",
        });
}

void bench_section_read(struct bench_env *env)
{
        char audit[128];
        const char *const opts[] = { "--max-snapshot-size", "512M", "--max-bytes", "1G",
                                     "--audit-log", audit, NULL };
        const char *placement = bench_placement_name(env->placement);
        struct rd r = { .env = env };

        snprintf(audit, sizeof(audit), "%s/read.audit", env->base);
        r.buf = malloc(BIG);
        r.chunk = aligned_alloc(4096, CHUNK);
        if (!r.buf || !r.chunk)
                bench_die("out of memory");
        bench_env_daemon(env, &r.d, "read", opts);
        for (int i = 0; i < ROUNDS; i++) {
                if (i % 2) {
                        round_snapfs(&r);
                        round_tmpfs(&r);
                } else {
                        round_tmpfs(&r);
                        round_snapfs(&r);
                }
        }
        row("3", "publish (write+rename)", &r.publish[SNAPFS], "tmpfs", &r.publish[TMPFS], "ms",
            false, "", placement);
        row("3", "first read after publish", &r.first[SNAPFS], "tmpfs", &r.first[TMPFS], "GB/s",
            true, ">=0.4", placement);
        row("3", "repeated read", &r.again[SNAPFS], "tmpfs", &r.again[TMPFS], "GB/s", true,
            ">=1.0", placement);
        row("3", "cold read (pages dropped)", &r.cold[SNAPFS], "tmpfs", &r.cold[TMPFS], "GB/s",
            true, "", placement);
        row("4", "verify throughput", &r.verify, "SHA-256 in memory", &r.raw, "GB/s", true,
            ">=0.9", placement);
        row("4", "snapfs verify (command)", &r.command, "SHA-256 in memory", &r.raw, "GB/s",
            true, "", placement);
        if (bench_daemon_stop(&r.d) < 0)
                bench_die("snapfs did not exit cleanly");
        for (int c = 0; c < 2; c++) {
                bench_series_free(&r.publish[c]);
                bench_series_free(&r.first[c]);
                bench_series_free(&r.again[c]);
                bench_series_free(&r.cold[c]);
        }
        bench_series_free(&r.verify);
        bench_series_free(&r.command);
        bench_series_free(&r.raw);
        free(r.buf);
        free(r.chunk);
}
