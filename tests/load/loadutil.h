/* SPDX-License-Identifier: MIT */
/* What the load drivers (load.c, noisy.c) share: reproducible content from a seed, and a
 * write that does not stop half way. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* xorshift64*: deterministic content from a seed, so any process can regenerate it. */
static inline uint64_t rnd(uint64_t *s)
{
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return *s * 2685821657736338717ULL;
}

static inline void fill(uint8_t *buf, size_t len, uint64_t s)
{
        s = s * 0x9E3779B97F4A7C15ULL + 1;
        for (size_t i = 0; i < len; i += 8) {
                uint64_t v = rnd(&s);
                memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
        }
}

/* All len bytes, in writes of at most 64 KiB: 0 or -errno. */
static inline int write_all(int fd, const uint8_t *buf, size_t len)
{
        while (len) {
                ssize_t n = write(fd, buf, len > 65536 ? 65536 : len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* "TITLE E1=n E2=n ..." for every errno with a count (0 is "other"), or "TITLE none". */
static inline void print_errno_counts(const char *title, int width, const unsigned long *counts,
                                      int n)
{
        bool any = false;

        printf("%-*s", width, title);
        for (int e = 0; e < n; e++)
                if (counts[e]) {
                        printf(" %s=%lu", e ? strerrorname_np(e) : "other", counts[e]);
                        any = true;
                }
        printf("%s\n", any ? "" : " none");
}
