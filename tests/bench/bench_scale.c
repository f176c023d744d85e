/* SPDX-License-Identifier: MIT */
/* Item 5: does a daemon holding 100,000 snapshots answer as fast as one holding 10, and what
 * does each snapshot cost it in memory?
 *
 * Two daemons run side by side, one with 10 snapshots and one with env->scale (100,000 by
 * default), and the measurements alternate between them:
 * - lookup + open, cold: the kernel's dentry cache is dropped (drop_caches=2) before each
 *   round, so every open sends a LOOKUP and an OPEN to the daemon; each large-side sample
 *   opens a snapshot not touched since the drop;
 * - open, warm: the entry is cached by the kernel, only the OPEN reaches the daemon;
 * - list + stat, cold: what `ls -l` or an audit does after the kernel dropped its entries:
 *   read the directory and fstatat every snapshot in it; per snapshot;
 * - memory: the large daemon's resident set (VmRSS) grown while publishing, minus the content
 *   bytes, per snapshot; the kernel still holds an entry for every snapshot then (publishing
 *   leaves the renamed dentry cached), so the daemon's per-entry node is included. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tests/bench/bench_snapfs.h"

#define SMALL 10
#define CONTENT 32          /* bytes per snapshot: a small config */
#define COLD_ROUNDS 40      /* drop_caches rounds, SMALL samples per side each */
#define WARM_SAMPLES 2000
#define LIST_ROUNDS 3       /* list + stat of every snapshot, per side */

typedef char name_t[SNAP_DIGEST_HEX_LEN + 1];

struct side {
        struct bench_daemon d;
        name_t *names;
        unsigned n;
};

static void publish(struct bench_env *env, struct side *s, uint32_t tag)
{
        uint8_t buf[CONTENT];
        struct snap_digest d;
        int fd;

        bench_fill(buf, sizeof(buf), tag, env->counter++);
        bench_digest(env, buf, sizeof(buf), &d);
        snap_digest_to_hex(&d, s->names[s->n]);
        fd = openat(s->d.root, ".staging/s", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                bench_die("create (%u published): %s", s->n, strerror(errno));
        bench_write_all(fd, buf, sizeof(buf));
        close(fd);
        if (renameat(s->d.root, ".staging/s", s->d.root, s->names[s->n]) < 0)
                bench_die("publish (%u published): %s", s->n, strerror(errno));
        s->n++;
}

static void drop_dentries(void)
{
        int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

        if (fd < 0 || write(fd, "2\n", 2) != 2)
                bench_die("drop_caches: %s", strerror(errno));
        close(fd);
        /* Evicted inodes reach the daemons as FORGETs, asynchronously: let them land before
         * timing, so they do not compete with the samples. */
        usleep(200 * 1000);
}

static long long open_close(struct side *s, unsigned i)
{
        long long t0 = bench_now_ns();
        int fd = openat(s->d.root, s->names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

        if (fd < 0)
                bench_die("open: %s", strerror(errno));
        close(fd);
        return bench_now_ns() - t0;
}

/* Reads the whole root directory and fstatat()s every snapshot in it: ns per snapshot. */
static double list_stat(struct side *s)
{
        long long t0 = bench_now_ns();
        unsigned seen = 0;
        struct dirent *e;
        struct stat st;
        DIR *dir;
        int fd;

        fd = openat(s->d.root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(dir = fdopendir(fd)))
                bench_die("opendir: %s", strerror(errno));
        while ((e = readdir(dir))) {
                if (strlen(e->d_name) != SNAP_DIGEST_HEX_LEN)
                        continue;
                if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        bench_die("stat: %s", strerror(errno));
                seen++;
        }
        closedir(dir);
        if (seen != s->n)
                bench_die("listed %u snapshots of %u", seen, s->n);
        return (double)(bench_now_ns() - t0) / seen;
}

static void emit(const char *what, const char *large, struct bench_series *l,
                 struct bench_series *s, const char *target, const char *placement)
{
        bench_emit(&(struct bench_row){
                .item = "5",
                .what = what,
                .size = "32B",
                .placement = placement,
                .snapfs = large,
                .baseline = "10 snapshots",
                .snapfs_value = bench_series_median(l) / 1e3,
                .baseline_value = bench_series_median(s) / 1e3,
                .unit = "us",
                .target = target,
                .runs = (int)l->n,
                .note = "",
        });
}

void bench_section_scale(struct bench_env *env)
{
        char audit_s[128], audit_l[128], large_name[32], note[96];
        const char *const opts_s[] = { "--audit-log", audit_s, NULL };
        const char *const opts_l[] = { "--max-snapshots", "1000000", "--max-bytes", "1G",
                                       "--audit-log", audit_l, NULL };
        const char *placement = bench_placement_name(env->placement);
        struct bench_series cold_s = { 0 }, cold_l = { 0 }, warm_s = { 0 }, warm_l = { 0 };
        struct bench_series list_s = { 0 }, list_l = { 0 };
        struct side small = { 0 }, large = { 0 };
        long long rss0, rss1, t0;
        struct statvfs sv;
        unsigned k = 0;
        double per;

        snprintf(audit_s, sizeof(audit_s), "%s/small.audit", env->base);
        snprintf(audit_l, sizeof(audit_l), "%s/large.audit", env->base);
        small.names = calloc(SMALL, sizeof(name_t));
        large.names = calloc(env->scale, sizeof(name_t));
        if (!small.names || !large.names)
                bench_die("out of memory");
        bench_env_daemon(env, &small.d, "small", opts_s);
        bench_env_daemon(env, &large.d, "large", opts_l);

        for (unsigned i = 0; i < SMALL; i++) {
                publish(env, &small, 50);
                publish(env, &large, 51);
        }
        rss0 = bench_rss_bytes(large.d.pid);
        t0 = bench_now_ns();
        while (large.n < env->scale)
                publish(env, &large, 51);
        t0 = bench_now_ns() - t0;
        rss1 = bench_rss_bytes(large.d.pid);
        if (rss0 < 0 || rss1 < 0)
                bench_die("cannot read the daemon's VmRSS");
        if (fstatvfs(large.d.root, &sv) < 0 || sv.f_files - sv.f_ffree != large.n)
                bench_die("the large daemon does not hold %u snapshots", large.n);
        per = ((double)(rss1 - rss0) - (double)(large.n - SMALL) * CONTENT) /
              (double)(large.n - SMALL);
        snprintf(note, sizeof(note), "VmRSS %.1f -> %.1f MiB; published %u in %.1f s",
                 (double)rss0 / (1 << 20), (double)rss1 / (1 << 20), large.n - SMALL,
                 (double)t0 / 1e9);
        snprintf(large_name, sizeof(large_name), "%u snapshots", large.n);
        bench_emit(&(struct bench_row){
                .item = "5",
                .what = "daemon memory per snapshot",
                .size = "32B",
                .placement = placement,
                .snapfs = large_name,
                .baseline = NULL,
                .snapfs_value = per,
                .unit = "B",
                .target = "<=256",
                .runs = 1,
                .note = note,
        });

        for (unsigned r = 0; r < COLD_ROUNDS; r++) {
                drop_dentries();
                for (unsigned i = 0; i < SMALL; i++) {
                        /* A stride coprime to n visits distinct snapshots, never one twice. */
                        unsigned li = (unsigned)(((unsigned long long)k++ * 7919 + 13) % large.n);
                        unsigned si = (i + r) % SMALL;
                        if ((i + r) % 2) {
                                bench_series_add(&cold_s, (double)open_close(&small, si));
                                bench_series_add(&cold_l, (double)open_close(&large, li));
                        } else {
                                bench_series_add(&cold_l, (double)open_close(&large, li));
                                bench_series_add(&cold_s, (double)open_close(&small, si));
                        }
                }
        }
        for (unsigned i = 0; i < WARM_SAMPLES; i++) {
                unsigned li = (unsigned)(((unsigned long long)(k - 1 - i % SMALL) * 7919 + 13) %
                                         large.n);
                bench_series_add(&warm_l, (double)open_close(&large, li));
                bench_series_add(&warm_s, (double)open_close(&small, i % SMALL));
        }
        for (unsigned r = 0; r < LIST_ROUNDS; r++) {
                drop_dentries();
                bench_series_add(&list_l, list_stat(&large));
                for (unsigned i = 0; i < COLD_ROUNDS / LIST_ROUNDS; i++) {
                        drop_dentries();
                        bench_series_add(&list_s, list_stat(&small));
                }
        }
        emit("lookup+open (cold)", large_name, &cold_l, &cold_s, "<=1.2", placement);
        emit("open (entry cached)", large_name, &warm_l, &warm_s, "<=1.2", placement);
        emit("list+stat (cold) per entry", large_name, &list_l, &list_s, "", placement);

        if (bench_daemon_stop(&small.d) < 0 || bench_daemon_stop(&large.d) < 0)
                bench_die("snapfs did not exit cleanly");
        bench_series_free(&cold_s);
        bench_series_free(&cold_l);
        bench_series_free(&warm_s);
        bench_series_free(&warm_l);
        bench_series_free(&list_s);
        bench_series_free(&list_l);
        free(small.names);
        free(large.names);
}
