/* SPDX-License-Identifier: MIT */
/* The one parser of each value grammar snapfs reads from a person: a uid, a list of uids, a
 * size, a count, a duration. The daemon's options (fs/), the mount check's policy
 * (mountcheck/), the client options (cli/) and the store's holders annotation all parse
 * through here, so the same text gets the same answer, and the same error naming the accepted
 * forms, everywhere; the Python client shares the test vectors (tests/vectors/values.json).
 * Pure functions: no I/O, no allocation. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum value_type {
        VALUE_UID,      /* "1000" */
        VALUE_UID_LIST, /* "0,1000" or "any" */
        VALUE_SIZE,     /* "4096", "256K", "64M", "1G" */
        VALUE_COUNT,    /* "16" */
        VALUE_DURATION, /* "90", "90s", "15m", "2h", "7d", "2w": milliseconds */
        VALUE_TYPE_COUNT,
};

/* (uid_t)-1 means "no uid" to the kernel (chown's "leave it"): never a uid here. */
#define VALUE_UID_MAX UINT32_C(4294967294)
#define VALUE_UID_LIST_MAX 64

struct value_uid_list {
        bool any;   /* "any": every uid */
        unsigned n; /* else these */
        uint32_t uids[VALUE_UID_LIST_MAX];
};

/* A uid: decimal digits with no sign, space or leading zero ("0" is root; "007" and "+7"
 * are refused, so a uid has one spelling, as in a binding), at most VALUE_UID_MAX.
 * 0 and *out, -EINVAL (not that form), -ERANGE (too large). */
int value_parse_uid(const char *s, uint32_t *out);

/* The first len bytes of s as a uid (an item of a list). Same answers. */
int value_parse_uid_n(const char *s, size_t len, uint32_t *out);

/* "any", or uids (value_parse_uid's) separated by single commas, at most VALUE_UID_LIST_MAX:
 * 0 and *out, -EINVAL, -ERANGE (a uid too large), -E2BIG (too many). */
int value_parse_uid_list(const char *s, struct value_uid_list *out);

/* Whether list admits uid: "any" admits everyone. */
bool value_uid_list_has(const struct value_uid_list *list, uint32_t uid);

/* Decimal digits and at most one of the binary suffixes K, M, G (either case): bytes.
 * 0 and *out, -EINVAL, -ERANGE (past 2^64 - 1). */
int value_parse_size(const char *s, uint64_t *out);

/* Decimal digits, nothing else. 0 and *out, -EINVAL, -ERANGE (past 2^64 - 1). */
int value_parse_count(const char *s, uint64_t *out);

/* Decimal digits and at most one suffix s, m, h, d (24 h) or w (7 d); seconds without one:
 * milliseconds.
 * 0 and *out_ms, -EINVAL, -ERANGE (past 2^64 - 1 ms). */
int value_parse_duration(const char *s, uint64_t *out_ms);

/* The scalar types (not VALUE_UID_LIST) by type: the parse above, then min <= v <= max
 * (-ERANGE outside). -EINVAL for a list type. */
int value_parse(enum value_type t, const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* "uid", "uid list", "size", "count", "duration"; NULL for anything else. */
const char *value_type_name(enum value_type t);

/* v as the type's shortest text: a size as "64M" or "1000" (the largest suffix that divides
 * it), a duration (whole seconds, as parsed) as "1w", "10m" or "90s" (or "0"), anything else in
 * decimal. Writes at
 * most n bytes (NUL included); returns what snprintf returns. */
int value_format(enum value_type t, uint64_t v, char *buf, size_t n);

/* Why input was refused with err (what a parse above returned), as the one message every
 * caller prints: "invalid size '12Q': expected digits with ...", "invalid count '0': out of
 * range (1 to 4096)". min and max are the range the value had to meet (0 and UINT64_MAX for
 * none). The input is quoted with control bytes as \xHH and cut after 64 bytes. Writes at most
 * n bytes; returns what snprintf returns. */
int value_error(enum value_type t, const char *input, int err, uint64_t min, uint64_t max,
                char *buf, size_t n);
