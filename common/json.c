/* SPDX-License-Identifier: MIT */
/* The one strict JSON parser (json.h): RFC 8259 and nothing else, read the same way by every
 * reader of the same bytes; and the typed fields every reader of an object asks for. */
#include "common/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

#define DEPTH_MAX 32

/* Duplicate keys. json-c keeps the last value of a key given twice, where another reader
 * keeps the first or refuses: {"op":"scope-list","op":"scope-remove"} would be two requests
 * to two readers. json-c says nothing, so the lexical pass counts the members of each object
 * (its ':' outside strings), in the order the objects open, and the parsed tree, walked in
 * the same order, must have as many keys in each: a duplicate is one key fewer in the first
 * object that holds one (every object before it in that order is parsed as written). */
struct members {
        uint32_t *count;   /* members of the n-th object to open */
        size_t n, cap;
        size_t stack[DEPTH_MAX + 1]; /* open containers: object index + 1, or 0 for an array */
        size_t depth;
};

static int members_see(struct members *m, unsigned char c)
{
        if (c == '{' || c == '[') {
                if (m->depth > DEPTH_MAX)
                        return -EINVAL; /* the parser refuses it too */
                if (c == '[') {
                        m->stack[m->depth++] = 0;
                        return 0;
                }
                if (ARRAY_GROW(m->count, m->cap, m->n + 1, 16) < 0)
                        return -ENOMEM;
                m->count[m->n] = 0;
                m->stack[m->depth++] = ++m->n;
        } else if (c == '}' || c == ']') {
                if (m->depth == 0)
                        return -EINVAL;
                m->depth--;
        } else if (m->depth && m->stack[m->depth - 1]) {
                m->count[m->stack[m->depth - 1] - 1]++;
        }
        return 0;
}

/* Walks o in the order its objects opened: false at the first object with fewer keys than
 * members written. */
static bool members_match(json_object *o, const struct members *m, size_t *next)
{
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        if (!members_match(json_object_array_get_idx(o, i), m, next))
                                return false;
                return true;
        }
        if (!json_object_is_type(o, json_type_object))
                return true;
        if (*next >= m->n || (size_t)json_object_object_length(o) != m->count[(*next)++])
                return false;
        json_object_object_foreach(o, key, val) {
                (void)key;
                if (!members_match(val, m, next))
                        return false;
        }
        return true;
}

/* What json-c's strict mode (0.16) still lets through: single-quoted strings, bare words such
 * as NaN or Infinity, and raw control bytes inside strings. Another reader of the same signed
 * bytes (skopeo, a registry) refuses them or reads them otherwise, and a document two readers
 * read differently can name different layers to each. So this pass refuses them first: 0,
 * or -EINVAL. Strings are skipped with their escapes; outside them, the only words are true,
 * false and null. */
static int rfc8259_lexically(const char *p, size_t len, struct members *m)
{
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)p[i];
                if (c == '{' || c == '[' || c == '}' || c == ']' || c == ':') {
                        if (members_see(m, c) < 0)
                                return -EINVAL;
                } else if (c == '"') {
                        for (i++; i < len && p[i] != '"'; i++) {
                                if ((unsigned char)p[i] < 0x20)
                                        return -EINVAL;
                                if (p[i] == '\\')
                                        i++;
                        }
                } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                        size_t n = 0;
                        while (i + n < len && ((p[i + n] >= 'a' && p[i + n] <= 'z') ||
                                               (p[i + n] >= 'A' && p[i + n] <= 'Z')))
                                n++;
                        /* An exponent's e/E belongs to a number: a digit came before it. */
                        if (n == 1 && (c == 'e' || c == 'E') && i > 0 && p[i - 1] >= '0' &&
                            p[i - 1] <= '9') {
                                continue;
                        }
                        if (!(n == 4 && memcmp(p + i, "true", 4) == 0) &&
                            !(n == 5 && memcmp(p + i, "false", 5) == 0) &&
                            !(n == 4 && memcmp(p + i, "null", 4) == 0))
                                return -EINVAL;
                        i += n - 1;
                } else if (c == '\'') {
                        return -EINVAL;
                }
        }
        return 0;
}

int json_parse_strict(const void *buf, size_t len, size_t max, json_object **out)
{
        struct members m = { 0 };
        json_tokener *tok;
        json_object *root;
        const char *p = buf;
        size_t end, next = 0;
        int r;

        if (!buf)
                return -EINVAL;
        if (len > max || len > INT32_MAX)
                return -EFBIG;
        if (len == 0)
                return -EINVAL;
        r = rfc8259_lexically(p, len, &m);
        if (r < 0) {
                free(m.count);
                return r;
        }
        tok = json_tokener_new_ex(DEPTH_MAX);
        if (!tok) {
                free(m.count);
                return -ENOMEM;
        }
        /* Strict: no comments or trailing commas that another reader of the same bytes
         * (skopeo, a registry) would refuse or read otherwise; invalid UTF-8 refused. What
         * strict mode misses, rfc8259_lexically refused above. */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        root = json_tokener_parse_ex(tok, p, (int)len);
        end = root ? json_tokener_get_parse_end(tok) : 0;
        json_tokener_free(tok);
        if (!root) {
                free(m.count);
                return -EINVAL;
        }
        /* Trailing bytes: a second document behind the first is ambiguous. */
        for (; end < len; end++)
                if (p[end] != ' ' && p[end] != '\n' && p[end] != '\r' && p[end] != '\t') {
                        json_object_put(root);
                        free(m.count);
                        return -EINVAL;
                }
        if (!json_object_is_type(root, json_type_object) || !members_match(root, &m, &next) ||
            next != m.n) {
                json_object_put(root);
                free(m.count);
                return -EINVAL;
        }
        free(m.count);
        *out = root;
        return 0;
}


/* ---- typed fields ---- */

__attribute__((format(printf, 3, 4)))
static int bad_field(char *why, size_t n, const char *fmt, ...)
{
        va_list ap;

        if (why && n) {
                va_start(ap, fmt);
                vsnprintf(why, n, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

/* The member, NULL when absent or null (json-c holds null as NULL). */
static json_object *member(json_object *o, const char *key)
{
        json_object *v = NULL;

        return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

int json_field_str(json_object *o, const char *key, const char **out, char *why, size_t n)
{
        json_object *v = member(o, key);
        const char *s;

        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return bad_field(why, n, "\"%s\" is not a string", key);
        s = json_object_get_string(v);
        if (strlen(s) != (size_t)json_object_get_string_len(v))
                return bad_field(why, n, "\"%s\" holds a NUL byte", key);
        *out = s;
        return 1;
}

int json_field_int(json_object *o, const char *key, int64_t min, int64_t max, int64_t *out,
                   char *why, size_t n)
{
        json_object *v = member(o, key);
        int64_t x;

        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return bad_field(why, n, "\"%s\" is not an integer", key);
        errno = 0;
        x = json_object_get_int64(v);
        if (errno || x < min || x > max)
                return bad_field(why, n, "\"%s\" is out of range", key);
        *out = x;
        return 1;
}

int json_field_uint(json_object *o, const char *key, uint64_t max, uint64_t *out, char *why,
                    size_t n)
{
        json_object *v = member(o, key);
        uint64_t u;
        int64_t i;

        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return bad_field(why, n, "\"%s\" is not an integer", key);
        /* json-c keeps what does not fit in int64 as uint64: ask it which. */
        i = json_object_get_int64(v);
        if (i < 0)
                return bad_field(why, n, "\"%s\" is out of range", key);
        u = i == INT64_MAX ? json_object_get_uint64(v) : (uint64_t)i;
        if (u > max)
                return bad_field(why, n, "\"%s\" is out of range", key);
        *out = u;
        return 1;
}

int json_field_bool(json_object *o, const char *key, bool *out, char *why, size_t n)
{
        json_object *v = member(o, key);

        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return bad_field(why, n, "\"%s\" is not a boolean", key);
        *out = json_object_get_boolean(v);
        return 1;
}

int json_field_of(json_object *o, const char *key, json_type type, json_object **out, char *why,
                  size_t n)
{
        json_object *v = member(o, key);

        if (!v)
                return 0;
        if (!json_object_is_type(v, type))
                return bad_field(why, n, "\"%s\" is not %s", key,
                                 type == json_type_array ? "a list" : "an object");
        *out = v;
        return 1;
}

int json_add(json_object *o, const char *key, json_object *v)
{
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_add_null(json_object *o, const char *key)
{
        return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
}

json_object *json_list(const void *v, size_t n, size_t size, json_object *(*fn)(const void *e))
{
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++) {
                json_object *e = fn((const char *)v + i * size);
                if (!e || json_object_array_add(a, e) < 0) {
                        json_object_put(e);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}
