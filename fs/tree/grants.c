/* SPDX-License-Identifier: MIT */
/* A scope's grant table: three sorted arrays of pointers (by digest, by entry name, by listing
 * key). Lookups are binary searches; inserts and removals move pointers, which for the
 * thousands of grants a scope may hold costs microseconds, against the request around it. */
#include "fs/tree/grants.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sfs_grants_init(struct sfs_grants *g, uint64_t first_key)
{
        *g = (struct sfs_grants){ .next_key = first_key };
}

void sfs_grants_free(struct sfs_grants *g)
{
        for (size_t i = 0; i < g->n_digests; i++) {
                free(g->digests[i]->name);
                free(g->digests[i]);
        }
        for (size_t i = 0; i < g->n_entries; i++)
                free(g->entries[i]);
        free(g->digests);
        free(g->entries);
        free(g->listed);
        *g = (struct sfs_grants){ 0 };
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
        size_t ncap;
        void *nv;

        if (need <= *cap)
                return 0;
        ncap = *cap ? *cap : 16;
        while (ncap < need)
                ncap *= 2;
        nv = realloc(*v, ncap * size);
        if (!nv)
                return -ENOMEM;
        *v = nv;
        *cap = ncap;
        return 0;
}

int sfs_grants_reserve(struct sfs_grants *g, size_t digests, size_t entries)
{
        if (grow((void **)&g->digests, &g->cap_digests, g->n_digests + digests,
                 sizeof(*g->digests)) < 0 ||
            grow((void **)&g->entries, &g->cap_entries, g->n_entries + entries,
                 sizeof(*g->entries)) < 0 ||
            grow((void **)&g->listed, &g->cap_listed, g->n_listed + digests + entries,
                 sizeof(*g->listed)) < 0)
                return -ENOMEM;
        return 0;
}

/* Index of the first digest not below d. */
static size_t digest_lower(const struct sfs_grants *g, const struct snap_digest *d)
{
        size_t lo = 0, hi = g->n_digests;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (memcmp(g->digests[mid]->digest.bytes, d->bytes, SNAP_DIGEST_LEN) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static size_t entry_lower(const struct sfs_grants *g, const char *name)
{
        size_t lo = 0, hi = g->n_entries;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(g->entries[mid]->name, name) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

size_t sfs_grants_listed_from(const struct sfs_grants *g, uint64_t key)
{
        size_t lo = 0, hi = g->n_listed;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (g->listed[mid].key < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

struct sfs_grant *sfs_grants_find(const struct sfs_grants *g, const struct snap_digest *d)
{
        size_t i = digest_lower(g, d);

        if (i < g->n_digests && snap_digest_equal(&g->digests[i]->digest, d))
                return g->digests[i];
        return NULL;
}

struct sfs_grant_entry *sfs_grants_entry(const struct sfs_grants *g, const char *name)
{
        size_t i = entry_lower(g, name);

        if (i < g->n_entries && strcmp(g->entries[i]->name, name) == 0)
                return g->entries[i];
        return NULL;
}

/* Keys only grow: a new name always goes last in the listing. */
static void list_append(struct sfs_grants *g, uint64_t key, struct sfs_grant *gr,
                        struct sfs_grant_entry *e)
{
        g->listed[g->n_listed++] = (struct sfs_listed){ .key = key, .grant = gr, .entry = e };
}

static void list_remove(struct sfs_grants *g, uint64_t key)
{
        size_t i = sfs_grants_listed_from(g, key);

        if (i == g->n_listed || g->listed[i].key != key)
                return;
        memmove(&g->listed[i], &g->listed[i + 1], (g->n_listed - i - 1) * sizeof(g->listed[0]));
        g->n_listed--;
}

void sfs_grants_insert(struct sfs_grants *g, struct sfs_grant *gr)
{
        size_t i = digest_lower(g, &gr->digest);

        gr->key = g->next_key++;
        memmove(&g->digests[i + 1], &g->digests[i], (g->n_digests - i) * sizeof(g->digests[0]));
        g->digests[i] = gr;
        g->n_digests++;
        list_append(g, gr->key, gr, NULL);
}

void sfs_grants_insert_entry(struct sfs_grants *g, struct sfs_grant_entry *e)
{
        size_t i = entry_lower(g, e->name);

        e->key = g->next_key++;
        memmove(&g->entries[i + 1], &g->entries[i], (g->n_entries - i) * sizeof(g->entries[0]));
        g->entries[i] = e;
        g->n_entries++;
        e->target->entries++;
        list_append(g, e->key, NULL, e);
}

void sfs_grants_retarget(struct sfs_grants *g, struct sfs_grant_entry *e,
                         struct sfs_grant *target)
{
        (void)g;
        e->target->entries--;
        e->target = target;
        target->entries++;
}

void sfs_grants_remove(struct sfs_grants *g, struct sfs_grant *gr)
{
        size_t i = digest_lower(g, &gr->digest);

        if (i == g->n_digests || g->digests[i] != gr)
                return;
        memmove(&g->digests[i], &g->digests[i + 1], (g->n_digests - i - 1) * sizeof(g->digests[0]));
        g->n_digests--;
        list_remove(g, gr->key);
}

void sfs_grants_remove_entry(struct sfs_grants *g, struct sfs_grant_entry *e)
{
        size_t i = entry_lower(g, e->name);

        if (i == g->n_entries || g->entries[i] != e)
                return;
        memmove(&g->entries[i], &g->entries[i + 1], (g->n_entries - i - 1) * sizeof(g->entries[0]));
        g->n_entries--;
        e->target->entries--;
        list_remove(g, e->key);
}
