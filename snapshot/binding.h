/* SPDX-License-Identifier: MIT */
/* A binding ties a name to one published snapshot in one mount: (sha256, size, dev, ino).
 *
 * Text form, one line, fields in this order and separated by one space:
 *   sha256=<64 lowercase hex> size=<decimal> dev=<major>:<minor> ino=<decimal>
 * The parser is strict: it refuses trailing or leading bytes, signs, leading zeros, overflow,
 * uppercase hex, missing, unknown or repeated fields and embedded NUL bytes. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot/digest.h"

struct snap_binding {
        struct snap_digest sha256;
        uint64_t size;
        uint64_t dev; /* as in st_dev: makedev(major, minor) */
        uint64_t ino;
};

/* Longest text form, including the terminating NUL. */
#define SNAP_BINDING_TEXT_MAX 160

/* Writes the text form into buf (at least SNAP_BINDING_TEXT_MAX bytes): 0, or -ENOBUFS with
 * buf holding the empty string (never a truncated text, which could parse as another binding). */
int snap_binding_format(const struct snap_binding *b, char *buf, size_t buflen);

/* Parses exactly len bytes of s (no trailing newline): 0 and *out, or -EINVAL. */
int snap_binding_parse(const char *s, size_t len, struct snap_binding *out);

static inline int snap_binding_equal(const struct snap_binding *a, const struct snap_binding *b)
{
        return snap_digest_equal(&a->sha256, &b->sha256) && a->size == b->size &&
               a->dev == b->dev && a->ino == b->ino;
}
