/* SPDX-License-Identifier: MIT */
/* Parsers of the daemon's option values: plain digits with an optional suffix, uid lists. */
#include "fs/options.h"

#include <errno.h>
#include <string.h>

/* strtoull accepts leading spaces, signs and "0x"; option values must be plain digits. */
static int parse_digits(const char **p, uint64_t *out)
{
        const char *s = *p;
        uint64_t v = 0;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                unsigned d = (unsigned)(*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *p = s;
        *out = v;
        return 0;
}

struct unit {
        char suffix;
        uint64_t mult;
};

/* Digits, then at most one suffix from units (a table ended by suffix 0), then nothing. */
static int parse_scaled(const char *s, const struct unit *units, uint64_t plain,
                        uint64_t *out)
{
        uint64_t v, mult = plain;
        int r;

        if (!s)
                return -EINVAL;
        r = parse_digits(&s, &v);
        if (r < 0)
                return r;
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

int sfs_parse_size(const char *s, uint64_t *out)
{
        static const struct unit units[] = {
                { 'K', 1ULL << 10 }, { 'k', 1ULL << 10 }, { 'M', 1ULL << 20 },
                { 'm', 1ULL << 20 }, { 'G', 1ULL << 30 }, { 'g', 1ULL << 30 }, { 0, 0 },
        };
        return parse_scaled(s, units, 1, out);
}

int sfs_parse_count(const char *s, uint64_t max, uint64_t *out)
{
        uint64_t v;
        int r;

        if (!s)
                return -EINVAL;
        r = parse_digits(&s, &v);
        if (r < 0)
                return r;
        if (*s != '\0')
                return -EINVAL;
        if (v == 0 || v > max)
                return -ERANGE;
        *out = v;
        return 0;
}

int sfs_parse_duration(const char *s, uint64_t *out_ms)
{
        static const struct unit units[] = {
                { 's', 1000 }, { 'm', 60 * 1000 }, { 'h', 3600 * 1000 }, { 0, 0 },
        };
        return parse_scaled(s, units, 1000, out_ms);
}

int sfs_parse_uidset(const char *s, struct sfs_uidset *out)
{
        struct sfs_uidset set = { .any = false };
        int r;

        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "any") == 0) {
                *out = (struct sfs_uidset){ .any = true };
                return 0;
        }
        for (;;) {
                uint64_t v;
                r = parse_digits(&s, &v);
                if (r < 0)
                        return r;
                if (v >= UINT32_MAX) /* (uid_t)-1 means "no uid" to the kernel */
                        return -ERANGE;
                if (set.n == SFS_UIDSET_MAX)
                        return -E2BIG;
                set.uids[set.n++] = (uid_t)v;
                if (*s == '\0')
                        break;
                if (*s != ',' || s[1] == '\0')
                        return -EINVAL;
                s++;
        }
        *out = set;
        return 0;
}

bool sfs_uidset_contains(const struct sfs_uidset *set, uid_t uid)
{
        if (set->any)
                return true;
        for (unsigned i = 0; i < set->n; i++)
                if (set->uids[i] == uid)
                        return true;
        return false;
}
