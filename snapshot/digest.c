/* SPDX-License-Identifier: MIT */
/* SHA-256 through OpenSSL EVP and the strict 64-character hex name. */
#include "snapshot/digest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/hex.h"

struct snap_hasher {
        EVP_MD_CTX *ctx;
};

int snap_hasher_new(struct snap_hasher **out)
{
        struct snap_hasher *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->ctx = EVP_MD_CTX_new();
        if (!h->ctx) {
                free(h);
                return -ENOMEM;
        }
        if (EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
                snap_hasher_free(h);
                return -EIO;
        }
        *out = h;
        return 0;
}

void snap_hasher_free(struct snap_hasher *h)
{
        if (!h)
                return;
        EVP_MD_CTX_free(h->ctx);
        free(h);
}

int snap_hasher_reset(struct snap_hasher *h)
{
        /* Re-initialising an existing context keeps OpenSSL's allocations: cheaper than a new
         * context per object. */
        return EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
}

int snap_hasher_update(struct snap_hasher *h, const void *buf, size_t len)
{
        if (len == 0)
                return 0;
        return EVP_DigestUpdate(h->ctx, buf, len) == 1 ? 0 : -EIO;
}

int snap_hasher_final(struct snap_hasher *h, struct snap_digest *out)
{
        unsigned int n = 0;
        if (EVP_DigestFinal_ex(h->ctx, out->bytes, &n) != 1 || n != SNAP_DIGEST_LEN)
                return -EIO;
        return 0;
}

int snap_sha256(const void *buf, size_t len, struct snap_digest *out)
{
        unsigned int n = 0;
        /* EVP_Digest keeps no state between calls; one call per buffer. */
        if (EVP_Digest(len ? buf : "", len, out->bytes, &n, EVP_sha256(), NULL) != 1 ||
            n != SNAP_DIGEST_LEN)
                return -EIO;
        return 0;
}

void snap_digest_to_hex(const struct snap_digest *d, char out[SNAP_DIGEST_HEX_LEN + 1])
{
        hex_encode(d->bytes, SNAP_DIGEST_LEN, out);
}

static int unhex(char c)
{
        /* Lowercase only: a name that differs from a digest in case is not that digest. */
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int snap_digest_from_hex(const char *s, size_t len, struct snap_digest *out)
{
        struct snap_digest d;

        if (!s || len != SNAP_DIGEST_HEX_LEN)
                return -EINVAL;
        for (size_t i = 0; i < SNAP_DIGEST_LEN; i++) {
                int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                d.bytes[i] = (uint8_t)(hi << 4 | lo);
        }
        *out = d;
        return 0;
}

bool snap_is_digest_name(const char *name)
{
        struct snap_digest d;
        return name && snap_digest_from_hex(name, strnlen(name, SNAP_DIGEST_HEX_LEN + 1), &d) == 0;
}
