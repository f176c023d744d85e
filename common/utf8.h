/* SPDX-License-Identifier: MIT */
/* Text that is not UTF-8, made JSON that strict readers accept: each byte that starts no
 * well-formed UTF-8 sequence becomes U+FFFD, and the raw bytes are kept in hex beside it (the
 * rule of the audit log and of every --json; docs/design.md). Header-only, like util.h. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF), or 0 when the byte at s starts none. s is NUL-terminated: a
 * sequence cut short by the NUL is not well formed, and nothing past the NUL is read. */
static inline size_t utf8_seq(const unsigned char *s)
{
        unsigned char c = s[0];

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                return (s[1] & 0xc0) == 0x80 ? 2 : 0;
        if (c >= 0xe0 && c <= 0xef) {
                unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
                return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
        }
        if (c >= 0xf0 && c <= 0xf4) {
                unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
                return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
                                       (s[3] & 0xc0) == 0x80
                               ? 4
                               : 0;
        }
        return 0;
}

/* Whether s (NUL-terminated) is well-formed UTF-8 throughout. */
static inline bool utf8_valid(const char *s)
{
        const unsigned char *u = (const unsigned char *)s;

        for (size_t i = 0, k; u[i]; i += k)
                if (!(k = utf8_seq(u + i)))
                        return false;
        return true;
}

/* For s (NUL-terminated): 0 when it is UTF-8 already (nothing allocated); 1 and *fixed (each
 * invalid byte as U+FFFD) and *hex (every byte of s in lowercase hex), both malloc'd; or
 * -ENOMEM. */
static inline int utf8_fix(const char *s, char **fixed, char **hex)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t len = strlen(s), bad = 0, j = 0;

        for (size_t i = 0; i < len;) {
                size_t k = utf8_seq(u + i);
                bad += k == 0;
                i += k ? k : 1;
        }
        if (!bad)
                return 0;
        *fixed = malloc(len + 2 * bad + 1);
        *hex = malloc(2 * len + 1);
        if (!*fixed || !*hex) {
                free(*fixed);
                free(*hex);
                *fixed = *hex = NULL;
                return -ENOMEM;
        }
        for (size_t i = 0; i < len;) {
                size_t k = utf8_seq(u + i);
                if (k) {
                        memcpy(*fixed + j, u + i, k);
                        j += k;
                        i += k;
                } else {
                        memcpy(*fixed + j, "\xef\xbf\xbd", 3);
                        j += 3;
                        i++;
                }
        }
        (*fixed)[j] = '\0';
        hex_encode(u, len, *hex);
        return 1;
}
