/* SPDX-License-Identifier: MIT */
/* snap_binding_parse() on arbitrary bytes, and format∘parse both ways: a binding has exactly
 * one text form, so any text the parser accepts is the text the formatter writes for it, and
 * every binding formats to a text that parses back to the same binding. */
#include <errno.h>

#include "snapshot/binding.h"
#include "tests/fuzz/fuzz.h"

static void check_parsed(const uint8_t *data, size_t size)
{
        char text[SNAP_BINDING_TEXT_MAX];
        struct snap_binding b, again;
        int r;

        memset(&b, 0xa5, sizeof(b));
        r = snap_binding_parse((const char *)data, size, &b);
        FZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                return;
        FZ_CHECK(snap_binding_format(&b, text, sizeof(text)) == 0);
        /* One spelling per binding: a second accepted spelling would be a leading zero, an
         * uppercase digit or a sign that two string compares would tell apart. */
        FZ_CHECK(strlen(text) == size && memcmp(text, data, size) == 0);
        FZ_CHECK(snap_binding_parse(text, strlen(text), &again) == 0);
        FZ_CHECK(snap_binding_equal(&b, &again));
}

static void check_formatted(const uint8_t *data, size_t size)
{
        struct fz_reader in = { data, size };
        char text[SNAP_BINDING_TEXT_MAX], small[SNAP_BINDING_TEXT_MAX];
        struct snap_binding b, again;
        size_t len, cut;

        for (size_t i = 0; i < SNAP_DIGEST_LEN; i++)
                b.sha256.bytes[i] = fz_u8(&in);
        b.size = fz_u64(&in);
        b.dev = fz_u64(&in); /* every 64-bit dev has a major:minor spelling */
        b.ino = fz_u64(&in);
        FZ_CHECK(snap_binding_format(&b, text, sizeof(text)) == 0);
        len = strlen(text);
        FZ_CHECK(snap_binding_parse(text, len, &again) == 0);
        FZ_CHECK(snap_binding_equal(&b, &again));

        /* A buffer one byte too short is refused, never silently truncated into a text that
         * parses as another binding. */
        cut = fz_u8(&in) % (len + 2);
        if (cut == 0)
                return;
        memset(small, 'x', sizeof(small));
        if (cut <= len) {
                FZ_CHECK(snap_binding_format(&b, small, cut) == -ENOBUFS);
                FZ_CHECK(snap_binding_parse(small, strnlen(small, cut), &again) == -EINVAL);
        } else
                FZ_CHECK(snap_binding_format(&b, small, cut) == 0 && strcmp(small, text) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        check_parsed(data, size);
        check_formatted(data, size);
        return 0;
}
