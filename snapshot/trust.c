/* SPDX-License-Identifier: MIT */
/* What a --trust-key daemon admits: keys, and the table of digests that signed envelopes
 * and manifests admitted (trust.h). */
#include "snapshot/trust.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "snapshot/oci.h"
#include "common/util.h"

enum { KIND_MANIFEST = 1, KIND_LAYER = 2 };

struct entry {
        struct snap_digest d;
        uint64_t size;
        uint8_t kinds; /* KIND_*: admitted as what; 0 for a free slot */
};

struct snap_trust {
        pthread_mutex_t lock;
        EVP_PKEY **keys;
        size_t n_keys;
        struct entry *tab; /* open addressing; cap a power of two, at most half full */
        size_t cap, used;
        size_t max_entries; /* SNAP_TRUST_MAX_ENTRIES, or less (snap_trust_set_max_entries) */
};

int snap_trust_new(struct snap_trust **out)
{
        struct snap_trust *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        pthread_mutex_init(&t->lock, NULL);
        t->max_entries = SNAP_TRUST_MAX_ENTRIES;
        *out = t;
        return 0;
}

void snap_trust_set_max_entries(struct snap_trust *t, size_t max)
{
        pthread_mutex_lock(&t->lock);
        t->max_entries = max < SNAP_TRUST_MAX_ENTRIES ? max : SNAP_TRUST_MAX_ENTRIES;
        pthread_mutex_unlock(&t->lock);
}

void snap_trust_free(struct snap_trust *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->n_keys; i++)
                EVP_PKEY_free(t->keys[i]);
        free(t->keys);
        free(t->tab);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

int snap_trust_add_key(struct snap_trust *t, EVP_PKEY *key)
{
        EVP_PKEY **k;

        if (!t || !key || EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
                return -EINVAL;
        k = reallocarray(t->keys, t->n_keys + 1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        t->keys = k;
        if (EVP_PKEY_up_ref(key) != 1)
                return -EIO;
        t->keys[t->n_keys++] = key;
        return 0;
}

size_t snap_trust_n_keys(const struct snap_trust *t)
{
        return t ? t->n_keys : 0;
}

/* Digests are SHA-256 outputs: their first bytes are already a uniform hash. */
static size_t slot_of(const struct snap_digest *d, size_t cap)
{
        uint64_t h;

        memcpy(&h, d->bytes, sizeof(h));
        return (size_t)h & (cap - 1);
}

static struct entry *find(struct snap_trust *t, const struct snap_digest *d)
{
        if (!t->cap)
                return NULL;
        for (size_t i = slot_of(d, t->cap);; i = (i + 1) & (t->cap - 1)) {
                if (!t->tab[i].kinds)
                        return NULL;
                if (snap_digest_equal(&t->tab[i].d, d))
                        return &t->tab[i];
        }
}

static int grow(struct snap_trust *t)
{
        size_t ncap = t->cap ? 2 * t->cap : 64;
        struct entry *n = calloc(ncap, sizeof(*n));

        if (!n)
                return -ENOMEM;
        for (size_t i = 0; i < t->cap; i++) {
                size_t j;
                if (!t->tab[i].kinds)
                        continue;
                for (j = slot_of(&t->tab[i].d, ncap); n[j].kinds; j = (j + 1) & (ncap - 1))
                        ;
                n[j] = t->tab[i];
        }
        free(t->tab);
        t->tab = n;
        t->cap = ncap;
        return 0;
}

/* Remembers d (of size bytes) as admitted as kind. t->lock held. */
static int learn(struct snap_trust *t, const struct snap_digest *d, uint64_t size, uint8_t kind)
{
        assert(mutex_held(&t->lock));
        struct entry *e = find(t, d);
        size_t i;
        int r;

        if (e && e->size == size) {
                e->kinds |= kind;
                return 0;
        }
        /* One digest, two sizes: both cannot be true; the first one signed stands, and the
         * other never matches a published object anyway. */
        if (e)
                return 0;
        if (t->used >= t->max_entries)
                return -ENOSPC;
        if (2 * (t->used + 1) > t->cap && (r = grow(t)) < 0)
                return r;
        for (i = slot_of(d, t->cap); t->tab[i].kinds; i = (i + 1) & (t->cap - 1))
                ;
        t->tab[i] = (struct entry){ .d = *d, .size = size, .kinds = kind };
        t->used++;
        return 0;
}

/* An envelope that verifies with a trusted key: 0 and the manifest it admits; 1 when data is
 * no envelope at all; -EPERM with the reason otherwise. */
static int check_envelope(struct snap_trust *t, const void *data, size_t len,
                          struct snap_oci_envelope *e, const char **reason)
{
        int r = -EKEYREJECTED;

        if (len > SNAP_OCI_ENVELOPE_MAX || snap_oci_envelope_parse(data, len, e) < 0)
                return 1;
        for (size_t i = 0; i < t->n_keys && r != 0; i++) {
                int k = snap_oci_envelope_verify(e, t->keys[i]);
                if (k == 0 || k == -EBADMSG)
                        r = k;
        }
        if (r == 0)
                return 0;
        *reason = r == -EBADMSG ? SNAP_TRUST_BAD_SIGNATURE : SNAP_TRUST_UNTRUSTED_KEY;
        return -EPERM;
}

static int learn_layers(struct snap_trust *t, const void *data, size_t len, const char **reason)
{
        struct snap_oci_manifest *m = NULL;
        int r;

        if (snap_oci_manifest_parse(data, len, &m) < 0) {
                *reason = SNAP_TRUST_BAD_MANIFEST;
                return -EPERM;
        }
        r = 0;
        for (size_t i = 0; i < m->n_layers && r == 0; i++)
                r = learn(t, &m->layers[i].digest, m->layers[i].size, KIND_LAYER);
        snap_oci_manifest_free(m);
        if (r < 0)
                *reason = SNAP_TRUST_FULL;
        return r;
}

int snap_trust_admit(struct snap_trust *t, const struct snap_digest *d, const void *data,
                     size_t len, const char **reason)
{
        struct snap_oci_envelope e;
        struct entry *ent;
        uint8_t kinds = 0;
        int r;

        *reason = SNAP_TRUST_NOT_ADMITTED;
        if (!t || !d || (!data && len))
                return -EINVAL;
        pthread_mutex_lock(&t->lock);
        ent = find(t, d);
        if (ent && ent->size == len)
                kinds = ent->kinds;
        if (kinds & KIND_MANIFEST)
                /* A manifest admits its layers once it is published; it is published only
                 * when it parses (and so names what it admits). */
                r = learn_layers(t, data, len, reason);
        else if (kinds & KIND_LAYER)
                r = 0;
        else {
                r = check_envelope(t, data, len, &e, reason);
                if (r == 0 && (r = learn(t, &e.manifest, e.manifest_size, KIND_MANIFEST)) < 0)
                        *reason = SNAP_TRUST_FULL;
                else if (r == 1)
                        r = -EPERM; /* neither admitted nor an envelope */
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

/* The kinds d of size bytes is admitted as (0: none). */
static uint8_t admitted_as(struct snap_trust *t, const struct snap_digest *d, uint64_t size)
{
        struct entry *e;
        uint8_t kinds = 0;

        if (!t || !d)
                return 0;
        pthread_mutex_lock(&t->lock);
        e = find(t, d);
        if (e && e->size == size)
                kinds = e->kinds;
        pthread_mutex_unlock(&t->lock);
        return kinds;
}

bool snap_trust_admits(struct snap_trust *t, const struct snap_digest *d, uint64_t size)
{
        return admitted_as(t, d, size) != 0;
}

bool snap_trust_admits_manifest(struct snap_trust *t, const struct snap_digest *d, uint64_t size)
{
        return admitted_as(t, d, size) & KIND_MANIFEST;
}

bool snap_trust_admits_layer(struct snap_trust *t, const struct snap_digest *d, uint64_t size)
{
        return admitted_as(t, d, size) & KIND_LAYER;
}
