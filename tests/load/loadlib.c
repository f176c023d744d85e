/* SPDX-License-Identifier: MIT */
/* The driver pieces the load drivers share (loadlib.h). */
#include "tests/load/loadlib.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "snapshot/digest.h"
#include "tests/load/loadutil.h"

uint64_t load_now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void load_become(uid_t uid, rlim_t nofile)
{
        struct rlimit rl;

        if (nofile && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = nofile < rl.rlim_max ? nofile : rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(4);
        }
        if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                               setresuid(uid, uid, uid) < 0))
                _exit(4);
}

int load_publish_hex(const char *dir, const char *name, const uint8_t *buf, size_t len,
                     const char *hex)
{
        char spath[4096], dpath[4096];
        int fd, r;

        snprintf(spath, sizeof(spath), "%s/.staging/%s", dir, name);
        snprintf(dpath, sizeof(dpath), "%s/%s", dir, hex);
        fd = open(spath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, buf, len);
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(spath, dpath) < 0)
                r = -errno;
        if (r < 0)
                unlink(spath);
        return r;
}

int load_publish(const char *dir, const char *name, const uint8_t *buf, size_t len,
                 char hex[65])
{
        struct snap_digest d;

        snap_sha256(buf, len, &d);
        snap_digest_to_hex(&d, hex);
        return load_publish_hex(dir, name, buf, len, hex);
}

int load_stage_held(const char *dir, uint64_t i, const uint8_t *buf, size_t len, int *fd)
{
        char path[4096];
        int e;

        snprintf(path, sizeof(path), "%s/.staging/s%llu", dir, (unsigned long long)i);
        *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (*fd < 0)
                return errno;
        e = -write_all(*fd, buf, len);
        if (unlink(path) < 0 && !e)
                e = errno;
        return e;
}

int load_cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

uint64_t load_quantile(const uint64_t *sorted, size_t n, double p)
{
        return n ? sorted[(size_t)(p * (double)(n - 1))] : 0;
}

long load_rss_kib(pid_t pid)
{
        char path[64], line[256];
        long v = -1;
        FILE *f;

        if (!pid)
                return -1;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "r");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld", &v) == 1)
                        break;
        fclose(f);
        return v;
}
