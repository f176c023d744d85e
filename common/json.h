/* SPDX-License-Identifier: MIT */
/* The one strict JSON parser of every JSON snapfs reads (OCI documents, signature envelopes,
 * control requests and replies, scope files), the typed fields its readers ask for, and a
 * cleanup attribute for json-c objects. Two readers of the same bytes must read the same
 * thing, so nothing here accepts what RFC 8259 does not. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/util.h"

/* Parses len bytes as one JSON object in strict mode (RFC 8259 only: no comments, single
 * quotes, bare words or raw control bytes in strings; valid UTF-8; no key twice in an
 * object; depth at most 32) with nothing after it but whitespace. 0 and *out, or -EFBIG (len
 * past max), -EINVAL (also for a NULL buf or an empty one), -ENOMEM. */
int json_parse_strict(const void *buf, size_t len, size_t max, json_object **out);

static inline void json_putp(json_object **o)
{
        if (*o)
                json_object_put(*o);
}
/* A json-c object put when its variable goes out of scope. */
#define _cleanup_json_ _cleanup_(json_putp)

/* Typed members of an object. Each returns 1 and *out when key is there, 0 when it is absent
 * or null (*out untouched), or -EINVAL when it is there but not what is asked, with the reason
 * naming the field ("\"gid\" is out of range") in why (n bytes; why may be NULL). */

/* A string without a NUL inside (one would make it another name to a C reader); *out is o's. */
int json_field_str(json_object *o, const char *key, const char **out, char *why, size_t n);
/* An integer in [min, max]. */
int json_field_int(json_object *o, const char *key, int64_t min, int64_t max, int64_t *out,
                   char *why, size_t n);
/* A non-negative integer up to max, all of uint64 included. */
int json_field_uint(json_object *o, const char *key, uint64_t max, uint64_t *out, char *why,
                    size_t n);
/* true or false. */
int json_field_bool(json_object *o, const char *key, bool *out, char *why, size_t n);
/* An object (json_type_object) or a list (json_type_array), as type says; *out is o's. */
int json_field_of(json_object *o, const char *key, json_type type, json_object **out, char *why,
                  size_t n);

/* Adds v to o under key: 0, or -ENOMEM when v is NULL (the json_object_new_* that made it
 * failed) or cannot be added (v put). */
int json_add(json_object *o, const char *key, json_object *v);
/* Adds key to o as null: 0 or -ENOMEM. */
int json_add_null(json_object *o, const char *key);
/* A list of the n elements of size bytes each at v, each made by fn: NULL when fn or the list
 * fails (no memory). */
json_object *json_list(const void *v, size_t n, size_t size, json_object *(*fn)(const void *e));
