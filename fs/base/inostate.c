/* SPDX-License-Identifier: MIT */
/* Inode numbers kept across a takeover (inostate.h). */
#include "fs/base/inostate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/util.h"

#define MAGIC "SNAPFSI1"
#define RECORDS_MAX (64u << 20) / sizeof(struct rec)

struct head {
        char magic[8];
        uint64_t next;        /* one past the highest number handed out */
        uint32_t generation;  /* takeovers seen */
        uint32_t reserved;
};

struct rec {
        uint8_t digest[32];
        uint64_t ino;
        uint32_t space;
        uint32_t reserved;
};

/* Records of backing files (sfs_inostate_note_backing) are in spaces of their own, with the
 * backing id in ino and BACKING_DROPPED once it was closed; read in file order. */
#define BACKING_SPACE 0x80000000u
#define BACKING_DROPPED (1ULL << 32)

struct sfs_inostate {
        pthread_mutex_t lock;
        int fd;
        struct head head;
        struct rec *backing; /* a predecessor's backing records, in file order */
        size_t n_backing;
        struct rec *old; /* a predecessor's records, sorted by (space, ino) */
        struct rec *by_digest; /* the same, sorted by (space, digest, ino) */
        size_t n_old;
        size_t n;        /* records in the file */
        unsigned failed; /* writes that did not land */
};

static int by_digest_cmp(const void *a, const void *b)
{
        const struct rec *x = a, *y = b;
        int c;

        if (x->space != y->space)
                return x->space < y->space ? -1 : 1;
        c = memcmp(x->digest, y->digest, 32);
        if (c)
                return c;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int by_ino(const void *a, const void *b)
{
        const struct rec *x = a, *y = b;

        if (x->space != y->space)
                return x->space < y->space ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* A predecessor's file: a head, whole records, no number named twice. */
static int write_head(struct sfs_inostate *st)
{
        unsigned char buf[sizeof(struct head)];

        memcpy(buf, &st->head, sizeof(buf));
        return pwrite(st->fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) ? 0 : negative_errno();
}

/* Moves the backing records out of st->old (n records) into st->backing, in file order: the
 * number of records left, or SIZE_MAX without memory. */
static size_t split_backing(struct sfs_inostate *st, size_t n)
{
        size_t k = 0, b = 0;

        for (size_t i = 0; i < n; i++)
                b += (st->old[i].space & BACKING_SPACE) != 0;
        if (!b)
                return n;
        st->backing = calloc(b, sizeof(*st->backing));
        if (!st->backing)
                return SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
                if (st->old[i].space & BACKING_SPACE)
                        st->backing[st->n_backing++] = st->old[i];
                else
                        st->old[k++] = st->old[i];
        }
        return k;
}

static int load(struct sfs_inostate *st)
{
        unsigned char buf[sizeof(struct head)];
        struct stat s;
        size_t n;

        if (fstat(st->fd, &s) < 0)
                return negative_errno();
        if (!S_ISREG(s.st_mode) || (size_t)s.st_size < sizeof(st->head) ||
            ((size_t)s.st_size - sizeof(st->head)) % sizeof(struct rec) ||
            pread(st->fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
                return -EBADMSG;
        memcpy(&st->head, buf, sizeof(buf));
        if (memcmp(st->head.magic, MAGIC, 8))
                return -EBADMSG;
        n = ((size_t)s.st_size - sizeof(st->head)) / sizeof(struct rec);
        if (n > RECORDS_MAX)
                return -EBADMSG;
        st->old = n ? calloc(n, sizeof(*st->old)) : NULL;
        if (n && !st->old)
                return -ENOMEM;
        if (n && pread(st->fd, st->old, n * sizeof(*st->old), sizeof(st->head)) !=
                         (ssize_t)(n * sizeof(*st->old)))
                return -EBADMSG;
        st->n = n;
        n = split_backing(st, n);
        if (n == SIZE_MAX)
                return -ENOMEM;
        if (n) /* qsort's array may not be NULL, even empty */
                qsort(st->old, n, sizeof(*st->old), by_ino);
        /* One number, one digest: a number named twice for two contents is refused. */
        for (size_t i = 0; i < n; i++)
                if ((i && by_ino(&st->old[i - 1], &st->old[i]) == 0 &&
                     memcmp(st->old[i - 1].digest, st->old[i].digest, 32)) ||
                    !st->old[i].ino || st->old[i].ino >= st->head.next)
                        return -EBADMSG;
        st->by_digest = n ? malloc(n * sizeof(*st->by_digest)) : NULL;
        if (n && !st->by_digest)
                return -ENOMEM;
        if (n) {
                memcpy(st->by_digest, st->old, n * sizeof(*st->old));
                qsort(st->by_digest, n, sizeof(*st->by_digest), by_digest_cmp);
        }
        st->n_old = n;
        st->head.generation++;
        return write_head(st);
}

int sfs_inostate_open(int fd, struct sfs_inostate **out)
{
        struct sfs_inostate *st = calloc(1, sizeof(*st));
        int r;

        if (!st) {
                safe_close(fd);
                return -ENOMEM;
        }
        pthread_mutex_init(&st->lock, NULL);
        memcpy(st->head.magic, MAGIC, 8);
        st->fd = fd >= 0 ? fd : memfd_create("snapfs-inodes", MFD_CLOEXEC);
        if (st->fd < 0) {
                r = negative_errno();
        } else if (fd >= 0) {
                r = load(st);
        } else {
                r = write_head(st);
        }
        if (r < 0) {
                sfs_inostate_free(st);
                return r;
        }
        *out = st;
        return 0;
}

void sfs_inostate_note(struct sfs_inostate *st, const uint8_t *digest, uint64_t ino,
                       uint32_t space)
{
        static const uint8_t none[32];

        if (!st || !ino)
                return;
        /* A number of a space of its own (a scope view's), named or not, is kept as a record:
         * the successor finds that space's highest. */
        if (!digest && space)
                digest = none;
        pthread_mutex_lock(&st->lock);
        /* A successor serving again what a predecessor noted: nothing new to write. */
        if (digest && st->n_old) {
                struct rec key = { .ino = ino, .space = space }, *r;
                r = bsearch(&key, st->old, st->n_old, sizeof(key), by_ino);
                if (r && memcmp(r->digest, digest, 32) == 0)
                        digest = NULL;
        }
        if (digest && st->n < RECORDS_MAX) {
                struct rec r = { .ino = ino, .space = space };
                memcpy(r.digest, digest, 32);
                if (pwrite(st->fd, &r, sizeof(r),
                           (off_t)(sizeof(st->head) + st->n * sizeof(r))) == sizeof(r))
                        st->n++;
                else
                        st->failed++;
        }
        if (ino >= st->head.next) {
                st->head.next = ino + 1;
                if (pwrite(st->fd, &st->head.next, sizeof(st->head.next),
                           offsetof(struct head, next)) != sizeof(st->head.next))
                        st->failed++;
        }
        pthread_mutex_unlock(&st->lock);
}

uint64_t sfs_inostate_ino(struct sfs_inostate *st, const uint8_t *digest, uint32_t space)
{
        struct rec key = { .space = space, .ino = UINT64_MAX };
        size_t lo;

        if (!st || !st->n_old)
                return 0;
        memcpy(key.digest, digest, 32);
        /* The last number a digest had wins (republished content got a new one): the last
         * record below (space, digest, UINT64_MAX). */
        lo = upper_bound(&key, st->by_digest, st->n_old, sizeof(key), by_digest_cmp);
        if (lo == 0)
                return 0;
        key = st->by_digest[lo - 1];
        return key.space == space && memcmp(key.digest, digest, 32) == 0 ? key.ino : 0;
}

int sfs_inostate_digest(struct sfs_inostate *st, uint64_t ino, uint32_t space, uint8_t out[32])
{
        struct rec key = { .ino = ino, .space = space }, *r;

        if (!st || !st->n_old)
                return -ENOENT;
        r = bsearch(&key, st->old, st->n_old, sizeof(key), by_ino);
        if (!r)
                return -ENOENT;
        memcpy(out, r->digest, 32);
        return 0;
}

uint64_t sfs_inostate_space_next(struct sfs_inostate *st, uint32_t space)
{
        struct rec key = { .ino = UINT64_MAX, .space = space };
        size_t lo;

        if (!st || !st->n_old)
                return 0;
        /* The last record at or below (space, UINT64_MAX) in (space, ino) order. */
        lo = upper_bound(&key, st->old, st->n_old, sizeof(key), by_ino);
        return lo && st->old[lo - 1].space == space ? st->old[lo - 1].ino + 1 : 0;
}

uint64_t sfs_inostate_next(struct sfs_inostate *st)
{
        return st ? st->head.next : 0;
}

uint32_t sfs_inostate_generation(struct sfs_inostate *st)
{
        return st ? st->head.generation : 0;
}

int sfs_inostate_fd(const struct sfs_inostate *st)
{
        return st->fd;
}

/* Appends r: 0, or counted as failed. Under st->lock. */
static void append(struct sfs_inostate *st, const struct rec *r)
{
        if (st->n >= RECORDS_MAX)
                return;
        if (pwrite(st->fd, r, sizeof(*r), (off_t)(sizeof(st->head) + st->n * sizeof(*r))) ==
            sizeof(*r))
                st->n++;
        else
                st->failed++;
}

void sfs_inostate_note_backing(struct sfs_inostate *st, const uint8_t *digest, uint32_t conn,
                               uint32_t id, bool dropped)
{
        struct rec r = { .ino = id | (dropped ? BACKING_DROPPED : 0),
                         .space = BACKING_SPACE | conn };

        if (!st || !id)
                return;
        memcpy(r.digest, digest, 32);
        pthread_mutex_lock(&st->lock);
        append(st, &r);
        pthread_mutex_unlock(&st->lock);
}

uint32_t sfs_inostate_backing(struct sfs_inostate *st, const uint8_t *digest, uint32_t conn)
{
        uint64_t id = 0;

        if (!st)
                return 0;
        /* The last word on digest wins: registered, then perhaps closed, then registered
         * again under another id. */
        for (size_t i = 0; i < st->n_backing; i++)
                if (st->backing[i].space == (BACKING_SPACE | conn) &&
                    memcmp(st->backing[i].digest, digest, 32) == 0)
                        id = st->backing[i].ino;
        return id & BACKING_DROPPED || id > UINT32_MAX ? 0 : (uint32_t)id;
}

void sfs_inostate_free(struct sfs_inostate *st)
{
        if (!st)
                return;
        safe_close(st->fd);
        free(st->backing);
        free(st->old);
        free(st->by_digest);
        pthread_mutex_destroy(&st->lock);
        free(st);
}
