/* SPDX-License-Identifier: MIT */
/* Scopes and grants as the control channel reports them (scopejson.h). A scope's limits and
 * uids are written as its file keeps them (scopefile.h). */
#include "fs/scopes/scopejson.h"

#include <stdio.h>
#include <sys/sysmacros.h>

#include "fs/scopes/scopefile.h"
#include "snapshot/digest.h"
#include "common/json.h"

/* JSON null is json-c's NULL: v, or null when !present (v then NULL too). */
static int add_opt(json_object *o, const char *key, bool present, json_object *v)
{
        return present ? json_add(o, key, v) : json_add_null(o, key);
}

static json_object *usage_json(const struct sfs_scope_usage *u)
{
        json_object *o = json_object_new_object();

        if (!o || json_add(o, "snapshots", json_object_new_uint64(u->snapshots)) < 0 ||
            json_add(o, "bytes", json_object_new_uint64(u->bytes)) < 0 ||
            json_add(o, "staging", json_object_new_uint64(u->staging)) < 0 ||
            json_add(o, "staging_bytes", json_object_new_uint64(u->staging_bytes)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

struct json_object *sfs_scope_info_json(const struct sfs_scope_info *s)
{
        json_object *o = json_object_new_object();
        char dev[32];

        snprintf(dev, sizeof(dev), "%u:%u", major(s->dev), minor(s->dev));
        if (!o || json_add(o, "name", json_object_new_string(s->name)) < 0 ||
            json_add(o, "view", json_object_new_string(s->view)) < 0 ||
            add_opt(o, "dev", s->mounted, s->mounted ? json_object_new_string(dev) : NULL) < 0 ||
            json_add(o, "uids", sfs_scopefile_uids_json(&s->users.uids)) < 0 ||
            add_opt(o, "gid", s->users.has_gid,
                    s->users.has_gid ? json_object_new_int64(s->users.gid) : NULL) < 0 ||
            json_add(o, "publish", json_object_new_boolean(s->publish)) < 0 ||
            add_opt(o, "until_pid", s->until_pid != 0,
                    s->until_pid ? json_object_new_int64(s->until_pid) : NULL) < 0 ||
            json_add(o, "limits", sfs_scopefile_limits_json(&s->limits)) < 0 ||
            json_add(o, "usage", usage_json(&s->usage)) < 0 ||
            json_add(o, "grants", json_object_new_uint64(s->usage.grants)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *scope_at(const void *e)
{
        return sfs_scope_info_json(e);
}

struct json_object *sfs_scope_infos_json(const struct sfs_scope_info *v, size_t n)
{
        return json_list(v, n, sizeof(*v), scope_at);
}

struct json_object *sfs_grant_info_json(const struct sfs_grant_info *g)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        json_object *o = json_object_new_object();

        snap_digest_to_hex(&g->digest, hex);
        if (!o || json_add(o, "sha256", json_object_new_string(hex)) < 0 ||
            json_add(o, "size", json_object_new_uint64(g->size)) < 0 ||
            json_add(o, "ino", json_object_new_uint64(g->ino)) < 0 ||
            add_opt(o, "entry", g->entry[0] != 0,
                    g->entry[0] ? json_object_new_string(g->entry) : NULL) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static json_object *grant_at(const void *e)
{
        return sfs_grant_info_json(e);
}

struct json_object *sfs_grant_infos_json(const struct sfs_grant_info *v, size_t n)
{
        return json_list(v, n, sizeof(*v), grant_at);
}
