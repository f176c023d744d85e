/* SPDX-License-Identifier: MIT */
/* Text form of a binding. One spelling per binding: a parser that accepted two spellings of the
 * same binding (a leading zero, a '+', uppercase hex) would let two strings that compare
 * different name the same snapshot, and a check done on the text could be fooled by that.
 *
 * Bounds: size and ino are uint64; dev is written as major:minor, each a 32-bit unsigned value
 * as glibc's major()/minor()/makedev() use them (12+20 bits of major, 8+24 bits of minor
 * cover all 64 bits of dev_t, so every dev value has exactly one text form). */
#include "snapshot/binding.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

int snap_binding_format(const struct snap_binding *b, char *buf, size_t buflen)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        int n;

        snap_digest_to_hex(&b->sha256, hex);
        n = snprintf(buf, buflen, "sha256=%s size=%" PRIu64 " dev=%u:%u ino=%" PRIu64, hex,
                     b->size, major(b->dev), minor(b->dev), b->ino);
        if (n < 0 || (size_t)n >= buflen) {
                /* snprintf leaves a truncated prefix, and a prefix of a binding can be another
                 * valid binding ("ino=123" cut to "ino=12"): leave no text at all. */
                if (buflen > 0)
                        buf[0] = '\0';
                return -ENOBUFS;
        }
        return 0;
}

/* A cursor over exactly len bytes: nothing past end is ever looked at, so a NUL inside the
 * string is just another byte that no rule accepts. */
struct cursor {
        const char *p;
        const char *end;
};

static bool take_literal(struct cursor *c, const char *lit)
{
        size_t n = strlen(lit);

        if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
                return false;
        c->p += n;
        return true;
}

/* Decimal without sign or leading zero ("0" itself is fine), at most max. */
static bool take_decimal(struct cursor *c, uint64_t max, uint64_t *out)
{
        const char *start = c->p;
        uint64_t v = 0;

        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                unsigned d = (unsigned)(*c->p - '0');
                if (v > (max - d) / 10)
                        return false; /* overflow */
                v = v * 10 + d;
                c->p++;
        }
        if (c->p == start)
                return false;            /* no digit: empty, or a sign */
        if (*start == '0' && c->p - start > 1)
                return false;            /* leading zero: a second spelling of the same value */
        *out = v;
        return true;
}

int snap_binding_parse(const char *s, size_t len, struct snap_binding *out)
{
        struct cursor c;
        struct snap_binding b;
        uint64_t maj, min;

        /* Checked before s + len is formed: pointer arithmetic on NULL is undefined. */
        if (!s || !out)
                return -EINVAL;
        c = (struct cursor){ s, s + len };

        /* Fixed order: a missing, repeated, reordered or unknown field fails the next literal. */
        if (!take_literal(&c, "sha256=") || c.end - c.p < SNAP_DIGEST_HEX_LEN ||
            snap_digest_from_hex(c.p, SNAP_DIGEST_HEX_LEN, &b.sha256) < 0)
                return -EINVAL;
        c.p += SNAP_DIGEST_HEX_LEN;

        if (!take_literal(&c, " size=") || !take_decimal(&c, UINT64_MAX, &b.size) ||
            !take_literal(&c, " dev=") || !take_decimal(&c, UINT32_MAX, &maj) ||
            !take_literal(&c, ":") || !take_decimal(&c, UINT32_MAX, &min) ||
            !take_literal(&c, " ino=") || !take_decimal(&c, UINT64_MAX, &b.ino))
                return -EINVAL;

        /* Nothing may follow, not even a newline. */
        if (c.p != c.end)
                return -EINVAL;

        b.dev = makedev((unsigned)maj, (unsigned)min);
        *out = b;
        return 0;
}
