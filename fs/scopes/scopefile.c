/* SPDX-License-Identifier: MIT */
/* A scope's file (scopefile.h): its persisted state to JSON text and back. Every field read is
 * checked against its range here, with the field named in the refusal: the file lives in a
 * directory of the daemon's, but a file that was edited, cut short or written by a daemon of
 * another version must come back as exactly what was written, or not at all. */
#include "fs/scopes/scopefile.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/scopes/viewpath.h"
#include "fs/store/ocistore.h"
#include "fs/tree/tree.h"
#include "snapshot/digest.h"
#include "snapshot/name.h"
#include "common/json.h"
#include "common/util.h"

/* The limits, one row each: their keys in the file and in the replies, and their ranges (a
 * staging count is an unsigned of the tree's; the rest leave room to add two). A maximum is
 * needed and at least 1 (a scope without one is no scope: sfs_tree_new_scope); a minimum may
 * be absent, from a file written before scopes had it: 0. */
const struct sfs_limit_field sfs_limit_fields[SFS_LIMIT_FIELDS] = {
        { "max_snapshots", offsetof(struct sfs_scope_limits, max_snapshots), UINT64_MAX >> 1 },
        { "max_bytes", offsetof(struct sfs_scope_limits, max_bytes), UINT64_MAX >> 1, true },
        { "max_staging", offsetof(struct sfs_scope_limits, max_staging), UINT32_MAX },
        { "max_staging_bytes", offsetof(struct sfs_scope_limits, max_staging_bytes),
          UINT64_MAX >> 1, true },
        { "min_bytes", offsetof(struct sfs_scope_limits, min_bytes), UINT64_MAX >> 1, true,
          true },
};

uint64_t *sfs_limit_at(struct sfs_scope_limits *l, size_t i)
{
        assert(i < SFS_LIMIT_FIELDS);
        return (uint64_t *)((char *)l + sfs_limit_fields[i].off);
}

static uint64_t limit_of(const struct sfs_scope_limits *l, size_t i)
{
        return *(const uint64_t *)((const char *)l + sfs_limit_fields[i].off);
}

/* ---- encoding ---- */

struct json_object *sfs_scopefile_limits_json(const struct sfs_scope_limits *l)
{
        json_object *o = json_object_new_object();

        for (size_t i = 0; o && i < SFS_LIMIT_FIELDS; i++)
                if (json_add(o, sfs_limit_fields[i].key,
                             json_object_new_uint64(limit_of(l, i))) < 0) {
                        json_object_put(o);
                        return NULL;
                }
        return o;
}

static json_object *uid_json(const void *e)
{
        return json_object_new_int64(*(const uint32_t *)e);
}

struct json_object *sfs_scopefile_uids_json(const struct value_uid_list *u)
{
        return json_list(u->uids, u->n, sizeof(*u->uids), uid_json);
}

static json_object *grant_json(const void *e)
{
        const struct sfs_grant_record *g = e;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        json_object *o = json_object_new_object();

        snap_digest_to_hex(&g->digest, hex);
        if (!o || json_add(o, "sha256", json_object_new_string(hex)) < 0 ||
            (g->ino && json_add(o, "ino", json_object_new_uint64(g->ino)) < 0) ||
            json_add(o, "plain", json_object_new_boolean(g->plain)) < 0 ||
            json_add(o, "published", json_object_new_boolean(g->published)) < 0 ||
            json_add(o, "uid", json_object_new_int64(g->uid)) < 0 ||
            (g->name[0] && json_add(o, "name", json_object_new_string(g->name)) < 0) ||
            json_add(o, "created_sec", json_object_new_int64(g->created.tv_sec)) < 0 ||
            json_add(o, "created_nsec", json_object_new_int64(g->created.tv_nsec)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *entry_json(const void *rec)
{
        const struct sfs_entry_record *e = rec;
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        json_object *o = json_object_new_object();

        snap_digest_to_hex(&e->digest, hex);
        if (!o || json_add(o, "name", json_object_new_string(e->name)) < 0 ||
            json_add(o, "sha256", json_object_new_string(hex)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static int add_until(json_object *doc, const struct sfs_scopefile *f)
{
        json_object *until;

        if (!f->until_pid)
                return 0;
        until = json_object_new_object();
        if (!until || json_add(until, "pid", json_object_new_int64(f->until_pid)) < 0 ||
            json_add(until, "start", json_object_new_uint64(f->until_start)) < 0 ||
            json_add(until, "boot_id", json_object_new_string(f->boot_id)) < 0) {
                json_object_put(until);
                return -ENOMEM;
        }
        return json_add(doc, "until", until);
}

/* The document, its keys in the order every version wrote them. */
static json_object *file_json(const struct sfs_scopefile *f)
{
        const struct sfs_scope_users *u = &f->users;
        json_object *doc = json_object_new_object();

        if (!doc || add_until(doc, f) < 0 ||
            json_add(doc, "version", json_object_new_int(SFS_SCOPEFILE_VERSION)) < 0 ||
            json_add(doc, "name", json_object_new_string(f->name)) < 0 ||
            json_add(doc, "view", json_object_new_string(f->view)) < 0 ||
            json_add(doc, "view_made", json_object_new_boolean(f->view_made)) < 0 ||
            json_add(doc, "uids", sfs_scopefile_uids_json(&u->uids)) < 0 ||
            (u->has_gid ? json_add(doc, "gid", json_object_new_int64(u->gid))
                        : json_add_null(doc, "gid")) < 0 ||
            json_add(doc, "publish", json_object_new_boolean(f->publish)) < 0 ||
            json_add(doc, "limits", sfs_scopefile_limits_json(&f->limits)) < 0 ||
            json_add(doc, "next_ino", json_object_new_uint64(f->grants.next_ino)) < 0 ||
            json_add(doc, "grants",
                     json_list(f->grants.grants, f->grants.n_grants, sizeof(*f->grants.grants),
                               grant_json)) < 0 ||
            json_add(doc, "entries",
                     json_list(f->grants.entries, f->grants.n_entries, sizeof(*f->grants.entries),
                               entry_json)) < 0) {
                json_object_put(doc);
                return NULL;
        }
        return doc;
}

int sfs_scopefile_encode(const struct sfs_scopefile *f, char **text, size_t *len)
{
        _cleanup_json_ json_object *doc = file_json(f);
        const char *t;

        t = doc ? json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE)
                : NULL;
        *text = t ? strdup(t) : NULL;
        if (!*text)
                return -ENOMEM;
        *len = strlen(t);
        return 0;
}

/* ---- decoding ---- */

/* A json_field_* result for a field that must be there: 0, or -EINVAL naming it. */
static int required(int r, const char *key, char *why, size_t n)
{
        if (r == 0) {
                snprintf(why, n, "\"%s\" is missing", key);
                return -EINVAL;
        }
        return r < 0 ? r : 0;
}

/* ... and for one that may be absent: 0 or -EINVAL. */
static int optional(int r)
{
        return r < 0 ? r : 0;
}

/* A member's refusal given its place in the list where: "where[i]: why". */
static void within(char *why, size_t n, const char *where, size_t i)
{
        char inner[160];

        snprintf(inner, sizeof(inner), "%s", why);
        snprintf(why, n, "%s[%zu]: %s", where, i, inner);
}

/* Why key is refused: "\"key\" what". */
static void say(char *why, size_t n, const char *key, const char *what)
{
        snprintf(why, n, "\"%s\" %s", key, what);
}

/* A digest field ("sha256"): 64 hex characters. */
static int digest_field(json_object *o, struct snap_digest *d, char *why, size_t n)
{
        const char *hex = NULL;
        int r = required(json_field_str(o, "sha256", &hex, why, n), "sha256", why, n);

        if (r == 0 && snap_digest_from_hex(hex, strlen(hex), d) < 0) {
                say(why, n, "sha256", "is not a digest");
                return -EINVAL;
        }
        return r;
}

/* A name field of the grammar (snapshot/name.h) into out; absent leaves out "" unless
 * needed. */
static int name_field(json_object *o, const char *key, bool needed, char out[SNAP_NAME_MAX + 1],
                      char *why, size_t n)
{
        const char *s = NULL;
        int r = json_field_str(o, key, &s, why, n);

        r = needed ? required(r, key, why, n) : optional(r);
        if (r < 0 || !s)
                return r;
        if (!snap_name_valid(s)) {
                say(why, n, key, "is not a name (1-64 of [A-Za-z0-9._-], not starting with '.')");
                return -EINVAL;
        }
        snprintf(out, SNAP_NAME_MAX + 1, "%s", s);
        return 0;
}

static int decode_grant(json_object *o, void *rec, char *why, size_t n)
{
        struct sfs_grant_record *g = rec;
        int64_t uid = 0, sec = 0, nsec = 0, ino = 0;
        int r;

        /* A file written before views numbered their own has no "ino": one is given after
         * every recorded one is back (sfs_scope_restore). */
        if ((r = digest_field(o, &g->digest, why, n)) < 0 ||
            (r = optional(json_field_int(o, "ino", SFS_FIRST_INO, INT64_MAX, &ino, why, n))) < 0 ||
            (r = required(json_field_int(o, "uid", 0, UINT32_MAX - 1, &uid, why, n), "uid", why,
                          n)) < 0 ||
            (r = required(json_field_int(o, "created_sec", 0, INT64_MAX, &sec, why, n),
                          "created_sec", why, n)) < 0 ||
            (r = required(json_field_int(o, "created_nsec", 0, 999999999, &nsec, why, n),
                          "created_nsec", why, n)) < 0 ||
            (r = optional(json_field_bool(o, "plain", &g->plain, why, n))) < 0 ||
            (r = optional(json_field_bool(o, "published", &g->published, why, n))) < 0 ||
            (r = name_field(o, "name", false, g->name, why, n)) < 0)
                return r;
        g->ino = (uint64_t)ino;
        g->uid = (uint32_t)uid;
        g->created = (struct timespec){ .tv_sec = (time_t)sec, .tv_nsec = (long)nsec };
        return 0;
}

static int decode_entry(json_object *o, void *rec, char *why, size_t n)
{
        struct sfs_entry_record *e = rec;
        int r = name_field(o, "name", true, e->name, why, n);

        return r < 0 ? r : digest_field(o, &e->digest, why, n);
}

/* The list under key, each member an object decoded by fn into the i-th of size bytes at
 * *out (calloc'd), *count of them: 0 or -EINVAL naming the member, -ENOMEM. */
static int decode_list(json_object *doc, const char *key, size_t size, void **out, size_t *count,
                       int (*fn)(json_object *o, void *rec, char *why, size_t n), char *why,
                       size_t n)
{
        json_object *a = NULL;
        size_t len;
        int r = required(json_field_of(doc, key, json_type_array, &a, why, n), key, why, n);

        if (r < 0)
                return r;
        len = json_object_array_length(a);
        if (len > SFS_SCOPE_GRANTS_MAX) {
                say(why, n, key, "holds more than a scope may");
                return -EINVAL;
        }
        *out = calloc(len ? len : 1, size);
        if (!*out)
                return -ENOMEM;
        for (*count = 0; *count < len; (*count)++) {
                json_object *o = json_object_array_get_idx(a, *count);
                if (!json_object_is_type(o, json_type_object)) {
                        snprintf(why, n, "not an object");
                        within(why, n, key, *count);
                        return -EINVAL;
                }
                r = fn(o, (char *)*out + *count * size, why, n);
                if (r < 0) {
                        within(why, n, key, *count);
                        return r;
                }
        }
        return 0;
}

/* "limits": each within its range; each maximum there and at least 1. */
static int decode_limits(json_object *doc, struct sfs_scope_limits *l, char *why, size_t n)
{
        json_object *o = NULL;
        int r = required(json_field_of(doc, "limits", json_type_object, &o, why, n), "limits", why,
                         n);

        for (size_t i = 0; r == 0 && i < SFS_LIMIT_FIELDS; i++) {
                const char *key = sfs_limit_fields[i].key;
                r = json_field_uint(o, key, sfs_limit_fields[i].max, sfs_limit_at(l, i), why, n);
                r = sfs_limit_fields[i].minimum ? optional(r) : required(r, key, why, n);
                if (r == 0 && !sfs_limit_fields[i].minimum && *sfs_limit_at(l, i) == 0) {
                        say(why, n, key, "is out of range");
                        return -EINVAL;
                }
        }
        return r;
}

/* "uids" (a list, at most VALUE_UID_LIST_MAX, each a uid but (uid_t)-1) and "gid" (null or a
 * gid but (gid_t)-1). */
static int decode_users(json_object *doc, struct sfs_scope_users *u, char *why, size_t n)
{
        json_object *a = NULL;
        uint64_t gid = 0;
        int r = required(json_field_of(doc, "uids", json_type_array, &a, why, n), "uids", why, n);

        if (r < 0)
                return r;
        if (json_object_array_length(a) > VALUE_UID_LIST_MAX) {
                say(why, n, "uids", "holds more than a scope may");
                return -EINVAL;
        }
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *v = json_object_array_get_idx(a, i);
                int64_t uid = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
                if (uid < 0 || uid >= UINT32_MAX) {
                        snprintf(why, n, "not a uid");
                        within(why, n, "uids", i);
                        return -EINVAL;
                }
                u->uids.uids[u->uids.n++] = (uid_t)uid;
        }
        r = json_field_uint(doc, "gid", UINT32_MAX - 1, &gid, why, n);
        u->has_gid = r == 1;
        u->gid = (gid_t)gid;
        return optional(r);
}

/* "until" (null or absent: none): its pid, its start time and its boot, each needed. */
static int decode_until(json_object *doc, struct sfs_scopefile *f, char *why, size_t n)
{
        json_object *o = NULL;
        const char *boot = NULL;
        int64_t pid = 0;
        int r = json_field_of(doc, "until", json_type_object, &o, why, n);

        if (r <= 0)
                return r;
        if ((r = required(json_field_int(o, "pid", 1, INT32_MAX, &pid, why, n), "pid", why, n)) <
                    0 ||
            (r = required(json_field_uint(o, "start", UINT64_MAX >> 1, &f->until_start, why, n),
                          "start", why, n)) < 0 ||
            (r = required(json_field_str(o, "boot_id", &boot, why, n), "boot_id", why, n)) < 0)
                return r;
        if (strlen(boot) >= sizeof(f->boot_id)) {
                say(why, n, "boot_id", "is too long");
                return -EINVAL;
        }
        f->until_pid = (pid_t)pid;
        snprintf(f->boot_id, sizeof(f->boot_id), "%s", boot);
        return 0;
}

/* The version, the name (the file's own), the view and the flags. */
static int decode_head(json_object *doc, const char *name, struct sfs_scopefile *f, char *why,
                       size_t n)
{
        const char *view = NULL;
        int64_t version = 0;
        int r;

        if ((r = required(json_field_int(doc, "version", SFS_SCOPEFILE_VERSION,
                                         SFS_SCOPEFILE_VERSION, &version, why, n),
                          "version", why, n)) < 0 ||
            (r = name_field(doc, "name", true, f->name, why, n)) < 0)
                return r;
        if (strcmp(f->name, name) != 0) {
                say(why, n, "name", "is not the file's");
                return -EINVAL;
        }
        if ((r = required(json_field_str(doc, "view", &view, why, n), "view", why, n)) < 0)
                return r;
        if (!sfs_view_path_canonical(view)) {
                say(why, n, "view", "is not an absolute, canonical path");
                return -EINVAL;
        }
        if ((r = optional(json_field_bool(doc, "view_made", &f->view_made, why, n))) < 0 ||
            (r = optional(json_field_bool(doc, "publish", &f->publish, why, n))) < 0)
                return r;
        /* The view's counter as it was: a file written before views numbered their own has
         * none (0). */
        r = optional(json_field_uint(doc, "next_ino", INT64_MAX, &f->grants.next_ino, why, n));
        if (r == 0 && !(f->view = strdup(view)))
                r = -ENOMEM;
        return r;
}

static int decode_doc(json_object *doc, const char *name, struct sfs_scopefile *f, char *why,
                      size_t n)
{
        struct sfs_scope_grants *g = &f->grants;
        int r;

        if ((r = decode_head(doc, name, f, why, n)) < 0 ||
            (r = decode_limits(doc, &f->limits, why, n)) < 0 ||
            (r = decode_users(doc, &f->users, why, n)) < 0 ||
            (r = decode_until(doc, f, why, n)) < 0 ||
            (r = decode_list(doc, "grants", sizeof(*g->grants), (void **)&g->grants, &g->n_grants,
                             decode_grant, why, n)) < 0 ||
            (r = decode_list(doc, "entries", sizeof(*g->entries), (void **)&g->entries,
                             &g->n_entries, decode_entry, why, n)) < 0)
                return r;
        if (g->n_grants + g->n_entries > SFS_SCOPE_GRANTS_MAX) {
                say(why, n, "grants", "and \"entries\" hold more than a scope may");
                return -EINVAL;
        }
        return 0;
}

int sfs_scopefile_decode(const char *name, const char *text, size_t len, struct sfs_scopefile *out,
                         char *why, size_t n)
{
        _cleanup_json_ json_object *doc = NULL;
        char local[1];
        int r;

        if (!why || !n) {
                why = local;
                n = sizeof(local);
        }
        why[0] = '\0';
        *out = (struct sfs_scopefile){ 0 };
        /* The daemon's one strict parser: a file with a key twice is two files to two
         * readers (common/json.h). */
        r = json_parse_strict(text, len, SFS_OCISTORE_SCOPE_MAX, &doc);
        if (r < 0) {
                snprintf(why, n, "%s",
                         r == -ENOMEM  ? "out of memory"
                         : r == -EFBIG ? "larger than a scope's file may be"
                                       : "not one JSON object");
                return r;
        }
        r = decode_doc(doc, name, out, why, n);
        if (r < 0)
                sfs_scopefile_free(out);
        return r;
}

void sfs_scopefile_free(struct sfs_scopefile *f)
{
        free(f->view);
        sfs_scope_grants_free(&f->grants);
        *f = (struct sfs_scopefile){ 0 };
}
