/* SPDX-License-Identifier: MIT */
/* A scope's grant table: three sorted arrays of pointers (by digest, by entry name, by listing
 * key). Lookups are binary searches; inserts and removals move pointers, which for the
 * thousands of grants a scope may hold costs microseconds, against the request around it. */
#include "fs/tree/grants.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

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


int sfs_grants_reserve(struct sfs_grants *g, size_t digests, size_t entries)
{
        if (ARRAY_GROW(g->digests, g->cap_digests, g->n_digests + digests, 16) < 0 ||
            ARRAY_GROW(g->entries, g->cap_entries, g->n_entries + entries, 16) < 0 ||
            ARRAY_GROW(g->listed, g->cap_listed, g->n_listed + digests + entries, 16) < 0)
                return -ENOMEM;
        return 0;
}

static int digest_cmp(const void *key, const void *element)
{
        const struct sfs_grant *const *gr = element;

        return memcmp(((const struct snap_digest *)key)->bytes, (*gr)->digest.bytes,
                      SNAP_DIGEST_LEN);
}

static int entry_cmp(const void *key, const void *element)
{
        const struct sfs_grant_entry *const *e = element;

        return strcmp(key, (*e)->name);
}

static int listed_cmp(const void *key, const void *element)
{
        uint64_t k = *(const uint64_t *)key, at = ((const struct sfs_listed *)element)->key;

        return (k > at) - (k < at);
}

/* Index of the first digest not below d. */
static size_t digest_lower(const struct sfs_grants *g, const struct snap_digest *d)
{
        return lower_bound(d, g->digests, g->n_digests, sizeof(*g->digests), digest_cmp);
}

static size_t entry_lower(const struct sfs_grants *g, const char *name)
{
        return lower_bound(name, g->entries, g->n_entries, sizeof(*g->entries), entry_cmp);
}

size_t sfs_grants_listed_from(const struct sfs_grants *g, uint64_t key)
{
        return lower_bound(&key, g->listed, g->n_listed, sizeof(*g->listed), listed_cmp);
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
