/* SPDX-License-Identifier: MIT */
/* Bytes as lowercase hex: the one encoder of digests, bindings and the audit log's raw bytes.
 * Header-only, like util.h. */
#pragma once

#include <stddef.h>

/* The n bytes at in as 2 * n lowercase hex digits and a NUL, in out (room for 2 * n + 1);
 * returns out. */
static inline char *hex_encode(const void *in, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";
        const unsigned char *u = in;

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[u[i] >> 4];
                out[2 * i + 1] = digits[u[i] & 15];
        }
        out[2 * n] = '\0';
        return out;
}
