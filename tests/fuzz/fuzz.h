/* SPDX-License-Identifier: MIT */
/* Helpers shared by the libFuzzer targets: a reader that turns fuzz bytes into typed values,
 * and a check that aborts (fuzz-judge.h has the checks of a mountcheck verdict).
 *
 * A broken invariant aborts with a message: libFuzzer reports the abort as a crash and saves
 * the input, exactly as it does for an ASan or UBSan report. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                        \
        do {                                                                                  \
                if (!(cond)) {                                                                \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, \
                                #cond);                                                       \
                        abort();                                                              \
                }                                                                             \
        } while (0)

/* Consumes bytes from the front; past the end every value is 0 and every string empty, so a
 * short input is still a valid (small) case. */
struct fz_reader {
        const uint8_t *p;
        size_t n;
};

static inline uint8_t fz_u8(struct fz_reader *r)
{
        uint8_t v = 0;

        if (r->n) {
                v = *r->p++;
                r->n--;
        }
        return v;
}

static inline uint32_t fz_u32(struct fz_reader *r)
{
        uint32_t v = 0;

        for (int i = 0; i < 4; i++)
                v = v << 8 | fz_u8(r);
        return v;
}

static inline uint64_t fz_u64(struct fz_reader *r)
{
        return (uint64_t)fz_u32(r) << 32 | fz_u32(r);
}

/* A NUL-terminated copy of the bytes up to the next NUL (consumed) or the end, at most max
 * bytes. The caller frees it. */
static inline char *fz_str(struct fz_reader *r, size_t max)
{
        size_t len = 0;
        char *s;

        while (len < r->n && len < max && r->p[len] != '\0')
                len++;
        s = malloc(len + 1);
        if (!s)
                abort();
        memcpy(s, r->p, len);
        s[len] = '\0';
        r->p += len;
        r->n -= len;
        if (r->n && *r->p == '\0') {
                r->p++;
                r->n--;
        }
        return s;
}

/* A NUL-terminated copy of all of data (an embedded NUL ends the C string early). */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);

        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

static inline const char *fz_s(const char *s)
{
        return s ? s : "";
}
