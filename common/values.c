/* SPDX-License-Identifier: MIT */
/* The value grammars: uid, uid list, size, count, duration (common/values.h). */
#include "common/values.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* strtoull takes leading spaces, signs, "0x" and a locale's digits: a value here is plain
 * ASCII digits. Stops at the first other byte or at end (len bytes); -ERANGE past 2^64 - 1. */
static int digits(const char *s, size_t len, size_t *used, uint64_t *out)
{
        uint64_t v = 0;
        size_t i = 0;

        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
                unsigned d = (unsigned)(s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (i == 0)
                return -EINVAL;
        *used = i;
        *out = v;
        return 0;
}

int value_parse_uid_n(const char *s, size_t len, uint32_t *out)
{
        uint64_t v;
        size_t used;
        int r;

        if (!s || !out)
                return -EINVAL;
        r = digits(s, len, &used, &v);
        if (r == -EINVAL || (r == 0 && used != len))
                return -EINVAL;
        /* One spelling per uid: "007" would be 7 here and could be octal 7 to a reader. */
        if (len > 1 && s[0] == '0')
                return -EINVAL;
        if (r == -ERANGE || v > VALUE_UID_MAX)
                return -ERANGE;
        *out = (uint32_t)v;
        return 0;
}

int value_parse_uid(const char *s, uint32_t *out)
{
        if (!s)
                return -EINVAL;
        return value_parse_uid_n(s, strlen(s), out);
}

int value_parse_uid_list(const char *s, struct value_uid_list *out)
{
        struct value_uid_list list = { .any = false };

        if (!s || !out || !*s)
                return -EINVAL;
        if (strcmp(s, "any") == 0) {
                *out = (struct value_uid_list){ .any = true };
                return 0;
        }
        for (;;) {
                size_t len = strcspn(s, ",");
                uint32_t uid;
                int r = value_parse_uid_n(s, len, &uid);

                /* Every item is parsed before "too many": a bad item is the better reason. */
                if (r < 0)
                        return r;
                if (list.n == VALUE_UID_LIST_MAX)
                        return -E2BIG;
                list.uids[list.n++] = uid;
                if (s[len] == '\0')
                        break;
                s += len + 1; /* a trailing comma leaves "", which value_parse_uid_n refuses */
        }
        *out = list;
        return 0;
}

bool value_uid_list_has(const struct value_uid_list *list, uint32_t uid)
{
        if (list->any)
                return true;
        for (unsigned i = 0; i < list->n; i++)
                if (list->uids[i] == uid)
                        return true;
        return false;
}

struct unit {
        char suffix;
        uint64_t mult;
};

/* Digits, then at most one suffix from units (ended by suffix 0; none means plain), then
 * nothing. */
static int scaled(const char *s, const struct unit *units, uint64_t plain, uint64_t *out)
{
        uint64_t v, mult = plain;
        size_t used;
        int r;

        if (!s || !out)
                return -EINVAL;
        r = digits(s, strlen(s), &used, &v);
        if (r < 0)
                return r;
        s += used;
        if (*s != '\0') {
                const struct unit *u = units;
                while (u->suffix && u->suffix != *s)
                        u++;
                if (!u->suffix || s[1] != '\0')
                        return -EINVAL;
                mult = u->mult;
        }
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        *out = v * mult;
        return 0;
}

static const struct unit size_units[] = {
        { 'G', 1ULL << 30 }, { 'g', 1ULL << 30 }, { 'M', 1ULL << 20 },
        { 'm', 1ULL << 20 }, { 'K', 1ULL << 10 }, { 'k', 1ULL << 10 }, { 0, 0 },
};

static const struct unit duration_units[] = {
        /* Weeks and days too: the units people prune and expire by (journalctl --vacuum-time=2d,
         * systemd's time spans). A day is 24 h and a week 7 d: no calendar, no leap seconds. */
        { 'w', 7ULL * 24 * 3600 * 1000 }, { 'd', 24ULL * 3600 * 1000 },
        { 'h', 3600 * 1000 }, { 'm', 60 * 1000 }, { 's', 1000 }, { 0, 0 },
};

int value_parse_size(const char *s, uint64_t *out)
{
        return scaled(s, size_units, 1, out);
}

int value_parse_count(const char *s, uint64_t *out)
{
        static const struct unit none[] = { { 0, 0 } };
        return scaled(s, none, 1, out);
}

int value_parse_duration(const char *s, uint64_t *out_ms)
{
        return scaled(s, duration_units, 1000, out_ms);
}

int value_parse(enum value_type t, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
        uint64_t v;
        uint32_t uid;
        int r;

        switch (t) {
        case VALUE_UID:
                r = value_parse_uid(s, &uid);
                v = uid;
                break;
        case VALUE_SIZE:
                r = value_parse_size(s, &v);
                break;
        case VALUE_COUNT:
                r = value_parse_count(s, &v);
                break;
        case VALUE_DURATION:
                r = value_parse_duration(s, &v);
                break;
        default:
                return -EINVAL;
        }
        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;
        *out = v;
        return 0;
}

/* Each type's name and, for a refusal, the form its text takes: one row a type, so no type
 * has a name without a form. */
static const struct {
        const char *name, *form;
} types[VALUE_TYPE_COUNT] = {
        [VALUE_UID] = { "uid", "a decimal uid below 4294967295, without sign or leading zero" },
        [VALUE_UID_LIST] = { "uid list", "any, or decimal uids separated by commas (at most 64, "
                                         "each below 4294967295, without sign or leading "
                                         "zero)" },
        [VALUE_SIZE] = { "size", "digits with an optional K, M or G suffix (binary units: 4096, "
                                 "256K, 64M, 1G)" },
        [VALUE_COUNT] = { "count", "decimal digits, without sign or suffix" },
        [VALUE_DURATION] = { "duration", "digits with an optional s, m, h, d or w suffix (90, "
                                         "90s, 15m, 2h, 7d, 2w; seconds without one)" },
};

const char *value_type_name(enum value_type t)
{
        return (unsigned)t < VALUE_TYPE_COUNT ? types[t].name : NULL;
}

int value_format(enum value_type t, uint64_t v, char *buf, size_t n)
{
        const struct unit *u = t == VALUE_SIZE       ? size_units
                               : t == VALUE_DURATION ? duration_units
                                                     : NULL;

        for (; u && v && u->suffix; u++) {
                /* Upper case for sizes (the lower-case aliases are skipped): 64M, not 64m. */
                if (t == VALUE_SIZE && u->suffix >= 'a')
                        continue;
                if (v % u->mult == 0)
                        return snprintf(buf, n, "%llu%c", (unsigned long long)(v / u->mult),
                                        u->suffix);
        }
        return snprintf(buf, n, "%llu", (unsigned long long)(t == VALUE_DURATION ? v / 1000 : v));
}

/* input quoted for a message: control bytes and DEL as \xHH, cut after 64 bytes. */
static void quote(const char *input, char *out, size_t n)
{
        size_t used = 0, i = 0;

        for (; input[i] && i < 64 && used + 5 < n; i++) {
                unsigned char c = (unsigned char)input[i];
                if (c < 0x20 || c == 0x7f)
                        used += (size_t)snprintf(out + used, n - used, "\\x%02x", c);
                else
                        out[used++] = (char)c;
        }
        if (input[i] && used + 4 < n) {
                memcpy(out + used, "...", 3);
                used += 3;
        }
        out[used] = '\0';
}

int value_error(enum value_type t, const char *input, int err, uint64_t min, uint64_t max,
                char *buf, size_t n)
{
        char q[64 * 4 + 8], lo[32], hi[32];
        const char *name = value_type_name(t);

        if (!name)
                return snprintf(buf, n, "invalid value");
        quote(input ? input : "", q, sizeof(q));
        if (err == -E2BIG)
                return snprintf(buf, n, "invalid %s '%s': more than %d uids", name, q,
                                VALUE_UID_LIST_MAX);
        if (err != -ERANGE)
                return snprintf(buf, n, "invalid %s '%s': expected %s", name, q,
                                types[t].form);
        if (t == VALUE_UID || t == VALUE_UID_LIST)
                return snprintf(buf, n, "invalid %s '%s': out of range (a uid is at most "
                                        "4294967294)", name, q);
        value_format(t, min, lo, sizeof(lo));
        value_format(t, max, hi, sizeof(hi));
        if (max == UINT64_MAX) {
                uint64_t v;
                /* Unbounded above: either below min, or past what 64 bits hold. */
                if (value_parse(t, input, 0, UINT64_MAX, &v) == 0)
                        return snprintf(buf, n, "invalid %s '%s': out of range (at least %s)",
                                        name, q, lo);
                return snprintf(buf, n, "invalid %s '%s': out of range (too large)", name, q);
        }
        return snprintf(buf, n, "invalid %s '%s': out of range (%s to %s)", name, q, lo, hi);
}
