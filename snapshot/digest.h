/* SPDX-License-Identifier: MIT */
/* SHA-256 through OpenSSL EVP, and the strict hex form that names a snapshot. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAP_DIGEST_LEN 32
#define SNAP_DIGEST_HEX_LEN 64

struct snap_digest {
        uint8_t bytes[SNAP_DIGEST_LEN];
};

/* Streaming hasher. One context can be reused with snap_hasher_reset() (cheaper than a new one
 * for every object). */
struct snap_hasher;

/* 0 and a new hasher in *out, or -ENOMEM. */
int snap_hasher_new(struct snap_hasher **out);
void snap_hasher_free(struct snap_hasher *h);
/* Start a new digest: 0, or -EIO if OpenSSL refuses. */
int snap_hasher_reset(struct snap_hasher *h);
/* Feed bytes: 0, or -EIO. */
int snap_hasher_update(struct snap_hasher *h, const void *buf, size_t len);
/* Finish into *out: 0, or -EIO. The hasher must be reset before it is fed again. */
int snap_hasher_final(struct snap_hasher *h, struct snap_digest *out);

/* One-shot SHA-256 of buf: 0, or -ENOMEM/-EIO. */
int snap_sha256(const void *buf, size_t len, struct snap_digest *out);

/* Lowercase hex, NUL-terminated: out needs SNAP_DIGEST_HEX_LEN + 1 bytes. */
void snap_digest_to_hex(const struct snap_digest *d, char out[SNAP_DIGEST_HEX_LEN + 1]);

/* Strict decode: exactly 64 characters of [0-9a-f] (no uppercase, prefix, space or NUL).
 * 0 and *out, or -EINVAL. len is the length of s; an embedded NUL is refused. */
int snap_digest_from_hex(const char *s, size_t len, struct snap_digest *out);

/* True when name (NUL-terminated) is a valid snapshot name: exactly 64 lowercase hex. */
bool snap_is_digest_name(const char *name);

static inline bool snap_digest_equal(const struct snap_digest *a, const struct snap_digest *b)
{
        /* Not a secret comparison: digests are public names. */
        for (size_t i = 0; i < SNAP_DIGEST_LEN; i++)
                if (a->bytes[i] != b->bytes[i])
                        return false;
        return true;
}
