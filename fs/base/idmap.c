/* SPDX-License-Identifier: MIT */
/* The id map: chained buckets, doubled once they hold as many ids as buckets. */
#include "fs/base/idmap.h"

#include <errno.h>
#include <stdlib.h>

#define START_BITS 6

/* Fibonacci hashing: ids are mostly consecutive numbers, which this spreads evenly. */
static size_t bucket_of(const struct sfs_idmap *m, uint64_t id)
{
        return (size_t)((id * 0x9e3779b97f4a7c15ull) >> (64 - m->bits));
}

int sfs_idmap_init(struct sfs_idmap *m)
{
        *m = (struct sfs_idmap){ .bits = START_BITS };
        m->buckets = calloc((size_t)1 << m->bits, sizeof(*m->buckets));
        return m->buckets ? 0 : -ENOMEM;
}

void sfs_idmap_free(struct sfs_idmap *m)
{
        free(m->buckets);
        *m = (struct sfs_idmap){ 0 };
}

static void grow(struct sfs_idmap *m)
{
        size_t n = (size_t)1 << m->bits;
        struct sfs_idlink **nb;

        if (m->n <= n || m->bits >= 40)
                return;
        nb = calloc(2 * n, sizeof(*nb));
        if (!nb)
                return;
        m->bits++;
        for (size_t i = 0; i < n; i++) {
                struct sfs_idlink *l = m->buckets[i];
                while (l) {
                        struct sfs_idlink *next = l->next;
                        size_t b = bucket_of(m, l->id);
                        l->next = nb[b];
                        nb[b] = l;
                        l = next;
                }
        }
        free(m->buckets);
        m->buckets = nb;
}

void sfs_idmap_add(struct sfs_idmap *m, struct sfs_idlink *l)
{
        size_t b = bucket_of(m, l->id);

        l->next = m->buckets[b];
        m->buckets[b] = l;
        m->n++;
        grow(m);
}

struct sfs_idlink *sfs_idmap_find(const struct sfs_idmap *m, uint64_t id)
{
        for (struct sfs_idlink *l = m->buckets[bucket_of(m, id)]; l; l = l->next)
                if (l->id == id)
                        return l;
        return NULL;
}

void sfs_idmap_del(struct sfs_idmap *m, struct sfs_idlink *l)
{
        for (struct sfs_idlink **pp = &m->buckets[bucket_of(m, l->id)]; *pp; pp = &(*pp)->next) {
                if (*pp == l) {
                        *pp = l->next;
                        l->next = NULL;
                        m->n--;
                        return;
                }
        }
}
