/* SPDX-License-Identifier: MIT */
/* Item 10's reader: reads FILE cold (its page cache dropped first, POSIX_FADV_DONTNEED) and
 * prints the nanoseconds it took. seq: the whole file in 1 MiB read() calls; rand: OPS preads
 * of 4 KiB at offsets from a fixed pseudo-random sequence (the same in every run), each on a
 * 4 KiB boundary. A C program, so the reader's own cost is a syscall's, as fio's would be.
 *
 *   bench_preader seq|rand FILE [OPS] */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int die(const char *what)
{
        fprintf(stderr, "bench_preader: %s: %s\n", what, strerror(errno));
        return 1;
}

int main(int argc, char **argv)
{
        static char buf[1 << 20];
        uint64_t x = 0x9e3779b97f4a7c15ULL, pages, total = 0;
        long ops = argc > 3 ? strtol(argv[3], NULL, 10) : 100000;
        long long t0;
        struct stat st;
        int fd;

        if (argc < 3 || (strcmp(argv[1], "seq") && strcmp(argv[1], "rand")) || ops <= 0) {
                fprintf(stderr, "usage: bench_preader seq|rand FILE [OPS]\n");
                return 2;
        }
        fd = open(argv[2], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0)
                return die(argv[2]);
        pages = (uint64_t)st.st_size / 4096;
        if (!pages || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
                return die("posix_fadvise");
        t0 = now_ns();
        if (argv[1][0] == 's') {
                ssize_t k;
                while ((k = read(fd, buf, sizeof(buf))) > 0)
                        total += (uint64_t)k;
                if (k < 0 || total != (uint64_t)st.st_size)
                        return die("read");
        } else {
                for (long i = 0; i < ops; i++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
                        if (pread(fd, buf, 4096, (off_t)((x % pages) * 4096)) != 4096)
                                return die("pread");
                }
        }
        printf("%lld\n", now_ns() - t0);
        return 0;
}
