/* SPDX-License-Identifier: MIT */
/* Load driver: many concurrent clients against one snapfs mount.
 *
 *   load [--clients N] [--cycles N] [--unlinkers N] [--greedy N] [--max-size BYTES]
 *        [--uid-base UID] [--seed S] MOUNTPOINT
 *
 * Each client (a process of its own, with its own uid when run as root) repeats: publish
 * content (random size up to --max-size; one time in four from a pool of 16 contents that
 * every client shares), read the binding back from the snapshot's xattr, open it and verify
 * it against that binding (snap_verify_fd), read it all and compare with what was published,
 * and unlink its private snapshots. Unlinkers (root) remove shared snapshots while others
 * read them. Greedy clients stage as much as they can and hold it, to show that quotas stop
 * them while everyone else keeps succeeding.
 *
 * Expected refusals are counted apart, all on shared content: EEXIST (already published),
 * ENOENT (unlinked between steps), ESTALE (a binding read just before the snapshot was
 * unlinked and published anew), EAGAIN (unlinked while being verified: nlink changed). Anything else is an unexpected error. Exit 0
 * only with no mismatch and no unexpected error (and, with greedy clients, each of them
 * stopped by EDQUOT or ENOSPC). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "snapshot/binding.h"
#include "snapshot/digest.h"
#include "tests/load/loadlib.h"
#include "tests/load/loadutil.h"
#include "snapshot/verify.h"

#define SHARED_POOL 16
#define MAX_ERRNO 256

struct counters {
        atomic_ulong cycles;     /* completed publish+verify+read cycles */
        atomic_ulong bytes_read;
        atomic_ulong mismatches; /* verified, yet the bytes differ: must stay 0 */
        atomic_ulong expected[MAX_ERRNO];
        atomic_ulong unexpected[MAX_ERRNO];
        atomic_ulong greedy[MAX_ERRNO];
        atomic_ulong greedy_stopped; /* greedy clients stopped by EDQUOT or ENOSPC */
        atomic_int clients_done;
        char first_unexpected[256];
        atomic_flag first_set;
};

static struct counters *C;
static const char *mnt;
static size_t max_size = 256 * 1024;
static uint64_t seed = 1;

static void count_err(atomic_ulong *table, int err)
{
        atomic_fetch_add(&table[err > 0 && err < MAX_ERRNO ? err : 0], 1);
}

static void unexpected(const char *what, int err)
{
        count_err(C->unexpected, err);
        if (!atomic_flag_test_and_set(&C->first_set))
                snprintf(C->first_unexpected, sizeof(C->first_unexpected), "%s: %s", what,
                         strerror(err));
}

static void client(int id, unsigned cycles)
{
        uint8_t *buf = malloc(max_size), *scratch = malloc(max_size);
        char hex[SNAP_DIGEST_HEX_LEN + 1], name[32], path[4096];
        struct snap_hasher *h;
        uint64_t s = seed * 1000003 + (uint64_t)id;

        if (!buf || !scratch || snap_hasher_new(&h) < 0)
                _exit(3);
        snprintf(name, sizeof(name), "c%d", id);
        for (unsigned i = 0; i < cycles; i++) {
                bool shared = rnd(&s) % 4 == 0;
                size_t len;
                struct snap_digest d;
                int r;

                if (shared) {
                        uint64_t idx = rnd(&s) % SHARED_POOL;
                        len = (size_t)((idx * 7919 + 1) % max_size) + 1;
                        fill(buf, len, seed * 7 + idx);
                } else {
                        len = (size_t)(rnd(&s) % max_size) + 1;
                        fill(buf, len, rnd(&s));
                }
                snap_sha256(buf, len, &d);
                snap_digest_to_hex(&d, hex);
                r = load_publish_hex(mnt, name, buf, len, hex);
                if (r == -EEXIST)
                        count_err(C->expected, EEXIST);
                else if (r < 0) {
                        unexpected("publish", -r);
                        continue;
                }
                {
                        bool mismatch;
                        size_t nread;
                        r = verify_and_read(mnt, hex, buf, len, max_size, h, scratch,
                                            &mismatch, &nread);
                        if (mismatch)
                                atomic_fetch_add(&C->mismatches, 1);
                        atomic_fetch_add(&C->bytes_read, nread);
                }
                if (r == -ENOENT && shared)
                        count_err(C->expected, ENOENT);
                else if ((r == -ESTALE || r == -EAGAIN) && shared)
                        /* unlinked (and maybe republished) under the verification */
                        count_err(C->expected, -r);
                else if (r < 0) {
                        unexpected("verify", -r);
                        continue;
                }
                if (!shared) {
                        snprintf(path, sizeof(path), "%s/%s", mnt, hex);
                        if (unlink(path) < 0)
                                unexpected("unlink", errno);
                }
                atomic_fetch_add(&C->cycles, 1);
        }
        snap_hasher_free(h);
        free(buf);
        free(scratch);
}

static void unlinker(int id, int clients)
{
        uint8_t *buf = malloc(max_size);
        char hex[SNAP_DIGEST_HEX_LEN + 1], path[4096];
        uint64_t s = seed * 31 + (uint64_t)id;
        struct snap_digest d;

        if (!buf)
                _exit(3);
        while (atomic_load(&C->clients_done) < clients) {
                uint64_t idx = rnd(&s) % SHARED_POOL;
                size_t len = (size_t)((idx * 7919 + 1) % max_size) + 1;
                fill(buf, len, seed * 7 + idx);
                snap_sha256(buf, len, &d);
                snap_digest_to_hex(&d, hex);
                snprintf(path, sizeof(path), "%s/%s", mnt, hex);
                if (unlink(path) < 0 && errno != ENOENT)
                        unexpected("unlinker", errno);
                usleep(200);
        }
        free(buf);
}

/* Stages as much as it can and holds it, until every client is done. */
static void greedy(int id, int clients)
{
        enum { FILES = 64 };
        static uint8_t block[64 << 10];
        int fds[FILES], nfd = 0;
        bool stopped = false;
        char path[4096];

        memset(block, 0x5a, sizeof(block));
        while (atomic_load(&C->clients_done) < clients) {
                if (nfd < FILES) {
                        snprintf(path, sizeof(path), "%s/.staging/g%d-%d", mnt, id, nfd);
                        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                        if (fd < 0) {
                                count_err(C->greedy, errno);
                                stopped |= errno == EDQUOT || errno == ENOSPC;
                        } else {
                                fds[nfd++] = fd;
                        }
                }
                for (int i = 0; i < nfd; i++) {
                        if (write(fds[i], block, sizeof(block)) < 0) {
                                count_err(C->greedy, errno);
                                stopped |= errno == EDQUOT || errno == ENOSPC;
                        }
                }
                usleep(1000);
        }
        for (int i = 0; i < nfd; i++)
                close(fds[i]);
        for (int i = 0; i < nfd; i++) {
                snprintf(path, sizeof(path), "%s/.staging/g%d-%d", mnt, id, i);
                unlink(path);
        }
        if (stopped)
                atomic_fetch_add(&C->greedy_stopped, 1);
}

static pid_t spawn(void (*fn)(int, unsigned), int id, unsigned arg, uid_t uid)
{
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        if (geteuid() == 0 && uid != 0) {
                if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                    setresuid(uid, uid, uid) < 0)
                        _exit(4);
        }
        fn(id, arg);
        _exit(0);
}

static void run_unlinker(int id, unsigned clients)
{
        unlinker(id, (int)clients);
}

static void run_greedy(int id, unsigned clients)
{
        greedy(id, (int)clients);
}

static void print_table(const char *title, atomic_ulong *t)
{
        unsigned long v[MAX_ERRNO];

        for (int e = 0; e < MAX_ERRNO; e++)
                v[e] = atomic_load(&t[e]);
        print_errno_counts(title, 22, v, MAX_ERRNO);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "clients", required_argument, NULL, 'c' },
                { "cycles", required_argument, NULL, 'n' },
                { "unlinkers", required_argument, NULL, 'u' },
                { "greedy", required_argument, NULL, 'g' },
                { "max-size", required_argument, NULL, 'm' },
                { "uid-base", required_argument, NULL, 'b' },
                { "seed", required_argument, NULL, 's' },
                { NULL, 0, NULL, 0 },
        };
        int clients = 32, unlinkers = 4, greedies = 0, c, status, failed = 0;
        unsigned cycles = 1000;
        uid_t uid_base = 20000;
        pid_t *pids, *helpers;
        struct timespec t0, t1;
        double secs;
        unsigned long unexp = 0;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'c': clients = atoi(optarg); break;
                case 'n': cycles = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'u': unlinkers = atoi(optarg); break;
                case 'g': greedies = atoi(optarg); break;
                case 'm': max_size = strtoull(optarg, NULL, 10); break;
                case 'b': uid_base = (uid_t)strtoul(optarg, NULL, 10); break;
                case 's': seed = strtoull(optarg, NULL, 10); break;
                default: return 2;
                }
        }
        if (optind != argc - 1 || clients < 1 || max_size < 1) {
                fprintf(stderr, "usage: load [options] MOUNTPOINT\n");
                return 2;
        }
        mnt = argv[optind];
        C = mmap(NULL, sizeof(*C), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (C == MAP_FAILED)
                return 2;
        memset(C, 0, sizeof(*C));
        pids = calloc((size_t)clients, sizeof(*pids));
        helpers = calloc((size_t)(unlinkers + greedies + 1), sizeof(*helpers));
        if (!pids || !helpers)
                return 2;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < clients; i++)
                pids[i] = spawn(client, i, cycles, uid_base + (uid_t)i);
        for (int i = 0; i < unlinkers; i++)
                helpers[i] = spawn(run_unlinker, i, (unsigned)clients, 0);
        for (int i = 0; i < greedies; i++)
                helpers[unlinkers + i] =
                        spawn(run_greedy, i, (unsigned)clients, uid_base + 10000 + (uid_t)i);
        for (int i = 0; i < clients; i++) {
                if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
                    WEXITSTATUS(status) != 0)
                        failed++;
                atomic_fetch_add(&C->clients_done, 1);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        for (int i = 0; i < unlinkers + greedies; i++)
                if (waitpid(helpers[i], &status, 0) < 0 || !WIFEXITED(status) ||
                    WEXITSTATUS(status) != 0)
                        failed++;
        secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

        for (int e = 0; e < MAX_ERRNO; e++)
                unexp += atomic_load(&C->unexpected[e]);
        printf("clients %d x %u cycles, %d unlinkers, %d greedy, max size %zu\n", clients,
               cycles, unlinkers, greedies, max_size);
        printf("%-22s %lu in %.2f s = %.0f cycles/s, %.1f MiB/s verified and read\n",
               "cycles", atomic_load(&C->cycles), secs, (double)atomic_load(&C->cycles) / secs,
               (double)atomic_load(&C->bytes_read) / secs / (1 << 20));
        print_table("expected refusals", C->expected);
        print_table("unexpected errors", C->unexpected);
        if (unexp)
                printf("%-22s %s\n", "first unexpected", C->first_unexpected);
        printf("%-22s %lu\n", "byte mismatches", atomic_load(&C->mismatches));
        if (greedies) {
                print_table("greedy refusals", C->greedy);
                printf("%-22s %lu of %d\n", "greedy stopped", atomic_load(&C->greedy_stopped),
                       greedies);
        }
        printf("%-22s %d\n", "crashed processes", failed);
        free(pids);
        free(helpers);
        return atomic_load(&C->mismatches) == 0 && unexp == 0 && failed == 0 &&
                               (int)atomic_load(&C->greedy_stopped) == greedies
                       ? 0
                       : 1;
}
