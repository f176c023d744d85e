/* SPDX-License-Identifier: MIT */
/* What the load drivers (load.c, noisy.c, scopeload.c) share: reproducible content from a seed, a write
 * that does not stop half way, and a client's verified read of a snapshot. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "snapshot/binding.h"
#include "snapshot/verify.h"

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

/* What a client does with a snapshot it published: the binding from the xattr of MNT/hex,
 * an open verified against it (snap_verify_fd, at most limit bytes), then all len bytes read
 * into scratch and compared with want. 0 or -errno; *mismatch set when the bytes differ,
 * *nread the bytes read. */
static inline int verify_and_read(const char *mnt, const char *hex, const uint8_t *want,
                                  size_t len, uint64_t limit, struct snap_hasher *h,
                                  uint8_t *scratch, bool *mismatch, size_t *nread)
{
        char path[4096], text[SNAP_BINDING_TEXT_MAX];
        struct snap_verify_result res;
        struct snap_binding b;
        size_t off = 0;
        ssize_t n;
        int fd, r;

        *mismatch = false;
        *nread = 0;
        snprintf(path, sizeof(path), "%s/%s", mnt, hex);
        n = getxattr(path, "user.snapfs.binding", text, sizeof(text) - 1);
        if (n < 0)
                return -errno;
        if (snap_binding_parse(text, (size_t)n, &b) < 0)
                return -EBADMSG;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = snap_verify_fd(fd, &b, limit, h, &res);
        while (r == 0 && off < len) {
                n = pread(fd, scratch + off, len - off, (off_t)off);
                if (n <= 0)
                        r = n < 0 ? -errno : -EIO;
                else
                        off += (size_t)n;
        }
        if (r == 0)
                *mismatch = memcmp(scratch, want, len) != 0;
        *nread = off;
        close(fd);
        return r;
}
