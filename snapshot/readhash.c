/* SPDX-License-Identifier: MIT */
/* Hashing a descriptor's content with pread: in this thread, or with a reader thread beside
 * it for large content. */
#include "snapshot/readhash.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* Serial reads: enough for SHA-NI at full speed, below malloc's mmap threshold. */
#define SERIAL_CHUNK (64u * 1024)
/* Parallel reads: 4 x 256 KiB, measured here to let the hasher never wait. */
#define RING_SLOTS 4
#define RING_CHUNK (256u * 1024)

/* Where the bytes read are copied as they are hashed (copy_len bytes from offset 0). */
struct copy {
        uint8_t *buf;
        size_t len;
};

/* Hashes what a read returned, counting but never hashing bytes past size; copies what falls
 * below c->len. */
static int consume(struct snap_hasher *h, const uint8_t *buf, uint64_t k, uint64_t off,
                   uint64_t size, const struct copy *c)
{
        uint64_t n;

        if (off >= size)
                return 0;
        n = k < size - off ? k : size - off;
        if (c && off < c->len)
                memcpy(c->buf + off, buf, (size_t)(n < c->len - off ? n : c->len - off));
        return snap_hasher_update(h, buf, (size_t)n);
}

static ssize_t pread_retry(int fd, void *buf, size_t n, uint64_t off)
{
        ssize_t k;

        do
                k = pread(fd, buf, n, (off_t)off);
        while (k < 0 && errno == EINTR);
        return k < 0 ? negative_errno() : k;
}

static int hash_serial(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got,
                       const struct copy *c)
{
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t want = size + 1, off = 0;
        size_t bufsize = want < SERIAL_CHUNK ? (size_t)want : SERIAL_CHUNK;
        int r;

        buf = malloc(bufsize);
        if (!buf)
                return -ENOMEM;
        while (off < want) {
                size_t n = want - off < bufsize ? (size_t)(want - off) : bufsize;
                ssize_t k = pread_retry(fd, buf, n, off);

                if (k < 0)
                        return (int)k;
                if (k == 0)
                        break; /* EOF */
                r = consume(h, buf, (uint64_t)k, off, size, c);
                if (r < 0)
                        return r;
                off += (uint64_t)k;
        }
        *got = off;
        return 0;
}

struct slot {
        uint8_t *buf;
        ssize_t len; /* bytes read, 0 at EOF, or a negative errno */
        bool full;
};

struct ring {
        int fd;
        uint64_t want;
        pthread_mutex_t lock;
        pthread_cond_t changed;
        bool stop; /* the hasher gave up: the reader must not read on */
        struct slot slot[RING_SLOTS];
};

/* The reader: fills slots in order until end of file, an error, want bytes, or stop. */
static void *reader(void *arg)
{
        struct ring *r = arg;
        uint64_t off = 0;

        for (unsigned i = 0;; i = (i + 1) % RING_SLOTS) {
                struct slot *s = &r->slot[i];
                size_t n = r->want - off < RING_CHUNK ? (size_t)(r->want - off) : RING_CHUNK;
                ssize_t k;

                pthread_mutex_lock(&r->lock);
                while (s->full && !r->stop)
                        pthread_cond_wait(&r->changed, &r->lock);
                if (r->stop) {
                        pthread_mutex_unlock(&r->lock);
                        return NULL;
                }
                pthread_mutex_unlock(&r->lock);

                k = off < r->want ? pread_retry(r->fd, s->buf, n, off) : 0;
                pthread_mutex_lock(&r->lock);
                s->len = k;
                s->full = true;
                pthread_cond_broadcast(&r->changed);
                pthread_mutex_unlock(&r->lock);
                if (k <= 0)
                        return NULL;
                off += (uint64_t)k;
        }
}

static int hash_parallel(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got,
                         const struct copy *c)
{
        struct ring r = { .fd = fd, .want = size + 1 };
        uint64_t off = 0;
        pthread_t thread;
        int ret = 0;

        for (unsigned i = 0; i < RING_SLOTS; i++) {
                r.slot[i].buf = malloc(RING_CHUNK);
                if (!r.slot[i].buf) {
                        for (unsigned j = 0; j < i; j++)
                                free(r.slot[j].buf);
                        return hash_serial(fd, size, h, got, c);
                }
        }
        pthread_mutex_init(&r.lock, NULL);
        pthread_cond_init(&r.changed, NULL);
        /* A library thread must not take the application's signals. */
        if (pthread_create_quiet(&thread, reader, &r, 0) != 0) {
                ret = hash_serial(fd, size, h, got, c);
                goto out;
        }
        for (unsigned i = 0;; i = (i + 1) % RING_SLOTS) {
                struct slot *s = &r.slot[i];
                ssize_t k;

                pthread_mutex_lock(&r.lock);
                while (!s->full)
                        pthread_cond_wait(&r.changed, &r.lock);
                k = s->len;
                pthread_mutex_unlock(&r.lock);
                if (k <= 0) {
                        ret = (int)k; /* 0 at EOF */
                        break;
                }
                ret = consume(h, s->buf, (uint64_t)k, off, size, c);
                if (ret < 0)
                        break;
                off += (uint64_t)k;
                pthread_mutex_lock(&r.lock);
                s->full = false;
                pthread_cond_broadcast(&r.changed);
                pthread_mutex_unlock(&r.lock);
        }
        pthread_mutex_lock(&r.lock);
        r.stop = true;
        pthread_cond_broadcast(&r.changed);
        pthread_mutex_unlock(&r.lock);
        pthread_join(thread, NULL);
        if (ret == 0)
                *got = off;
out:
        pthread_cond_destroy(&r.changed);
        pthread_mutex_destroy(&r.lock);
        for (unsigned i = 0; i < RING_SLOTS; i++)
                free(r.slot[i].buf);
        return ret;
}

int snap_hash_fd_serial(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got)
{
        return hash_serial(fd, size, h, got, NULL);
}

int snap_hash_fd_parallel(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got)
{
        return hash_parallel(fd, size, h, got, NULL);
}

int snap_hash_fd_copy(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got, void *copy,
                      size_t copy_len)
{
        const struct copy c = { .buf = copy, .len = copy ? copy_len : 0 };

        if (size >= SNAP_PARALLEL_HASH_MIN)
                return hash_parallel(fd, size, h, got, &c);
        return hash_serial(fd, size, h, got, &c);
}

int snap_hash_fd(int fd, uint64_t size, struct snap_hasher *h, uint64_t *got)
{
        return snap_hash_fd_copy(fd, size, h, got, NULL, 0);
}
