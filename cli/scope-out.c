/* SPDX-License-Identifier: MIT */
/* Scopes and grants as text and JSON (scope-out.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cli/scope-out.h"
#include "cli/show.h"
#include "common/hex.h"
#include "common/util.h"

void cli_grant_hex(const struct snapfs_grant *g, char *out)
{
        hex_encode(g->sha256, SNAPFS_DIGEST_LEN, out);
}

static json_object *limit(uint64_t v)
{
        return v ? json_object_new_uint64(v) : NULL;
}

json_object *cli_scope_json(const struct snapfs_scope *s)
{
        json_object *o = json_object_new_object(), *uids = json_object_new_array(),
                    *limits = json_object_new_object(), *usage = json_object_new_object();
        char dev[32];

        if (!o || !uids || !limits || !usage) {
                json_object_put(o);
                json_object_put(uids);
                json_object_put(limits);
                json_object_put(usage);
                return NULL;
        }
        snprintf(dev, sizeof(dev), "%u:%u", major(s->dev), minor(s->dev));
        for (size_t i = 0; i < s->n_uids; i++)
                json_object_array_add(uids, json_object_new_int64(s->uids[i]));
        json_object_object_add(limits, "max_snapshots", limit(s->limits.max_snapshots));
        json_object_object_add(limits, "max_bytes", limit(s->limits.max_bytes));
        json_object_object_add(limits, "max_staging", limit(s->limits.max_staging));
        json_object_object_add(limits, "max_staging_bytes", limit(s->limits.max_staging_bytes));
        json_object_object_add(limits, "min_bytes", limit(s->min_bytes));
        json_object_object_add(usage, "snapshots", json_object_new_uint64(s->usage.snapshots));
        json_object_object_add(usage, "bytes", json_object_new_uint64(s->usage.bytes));
        json_object_object_add(usage, "staging", json_object_new_uint64(s->usage.staging));
        json_object_object_add(usage, "staging_bytes",
                               json_object_new_uint64(s->usage.staging_bytes));
        json_object_object_add(o, "name", json_object_new_string(s->name));
        json_object_object_add(o, "view", json_object_new_string(s->view ? s->view : ""));
        /* null while the view is not mounted: the scope is there, unserved. */
        json_object_object_add(o, "dev", (s->flags & SNAPFS_SCOPE_UNMOUNTED)
                                                 ? NULL : json_object_new_string(dev));
        json_object_object_add(o, "uids", uids);
        json_object_object_add(o, "gid", (s->flags & SNAPFS_SCOPE_GID)
                                                 ? json_object_new_int64(s->gid) : NULL);
        json_object_object_add(o, "publish",
                               json_object_new_boolean(!!(s->flags & SNAPFS_SCOPE_PUBLISH)));
        json_object_object_add(o, "until_pid", (s->flags & SNAPFS_SCOPE_UNTIL_PID)
                                                       ? json_object_new_int(s->until_pid) : NULL);
        json_object_object_add(o, "limits", limits);
        json_object_object_add(o, "usage", usage);
        json_object_object_add(o, "grants", json_object_new_uint64(s->n_grants));
        return o;
}

json_object *cli_grant_json(const struct snapfs_grant *g, const struct snapfs_snapshot *s,
                            unsigned seen)
{
        json_object *o = cli_seen_json(s, seen);

        if (o)
                json_object_object_add(o, "entry",
                                       g->entry[0] ? json_object_new_string(g->entry) : NULL);
        return o;
}

void cli_grants_describe(const char *mount, const struct snapfs_scope *s,
                         const struct snapfs_grant *g, size_t n,
                         const struct snapfs_options *opts, struct snapfs_snapshot *out,
                         unsigned *seen)
{
        bool mounted = s && !(s->flags & SNAPFS_SCOPE_UNMOUNTED);
        _cleanup_free_ struct snapfs_binding *b = calloc(n ? n : 1, sizeof(*b));
        struct snapfs_report why;

        for (size_t i = 0; i < n; i++) {
                struct snapfs_binding r = { .size = g[i].size, .dev = mounted ? s->dev : 0,
                                            .ino = g[i].ino };
                memcpy(r.sha256, g[i].sha256, sizeof(r.sha256));
                if (b)
                        b[i] = r;
                out[i] = (struct snapfs_snapshot){ .binding = r, .kind = SNAPFS_KIND_UNKNOWN };
                seen[i] = 0;
        }
        /* The grant's own record when nothing more can be learnt (no memory, the main mount
         * gone since the control request). No grants: no mount to judge. */
        if (b && n && snapfs_describe_view(mount, mounted ? s->view : NULL, b, n, opts, out, seen,
                                      &why) < 0) {
                for (size_t i = 0; i < n; i++) {
                        out[i] = (struct snapfs_snapshot){ .binding = b[i],
                                                           .kind = SNAPFS_KIND_UNKNOWN };
                        seen[i] = 0;
                }
        }
}

/* "1000,1001 gid=100", "gid=100", or "root" (no uid, no gid: root only). */
static void print_users(FILE *f, const struct snapfs_scope *s)
{
        for (size_t i = 0; i < s->n_uids; i++)
                fprintf(f, "%s%" PRIu32, i ? "," : "", s->uids[i]);
        if (s->flags & SNAPFS_SCOPE_GID)
                fprintf(f, "%sgid=%" PRIu32, s->n_uids ? " " : "", s->gid);
        if (!s->n_uids && !(s->flags & SNAPFS_SCOPE_GID))
                fprintf(f, "root");
}

static void print_limit(FILE *f, const char *key, uint64_t v)
{
        if (v)
                fprintf(f, " %s=%" PRIu64, key, v);
        else
                fprintf(f, " %s=-", key);
}

void cli_scope_print(FILE *f, const struct snapfs_scope *s)
{
        fprintf(f, "name       %s\n", s->name);
        fprintf(f, "view       %s\n", s->view ? s->view : "");
        if (s->flags & SNAPFS_SCOPE_UNMOUNTED)
                fprintf(f, "dev        - (the view is not mounted)\n");
        else
                fprintf(f, "dev        %u:%u\n", major(s->dev), minor(s->dev));
        fprintf(f, "users      ");
        print_users(f, s);
        fprintf(f, "\npublish    %s\n", (s->flags & SNAPFS_SCOPE_PUBLISH) ? "yes" : "no");
        if (s->flags & SNAPFS_SCOPE_UNTIL_PID)
                fprintf(f, "until-pid  %" PRId32 "\n", s->until_pid);
        else
                fprintf(f, "until-pid  -\n");
        fprintf(f, "limits    ");
        print_limit(f, "snapshots", s->limits.max_snapshots);
        print_limit(f, "bytes", s->limits.max_bytes);
        print_limit(f, "staging", s->limits.max_staging);
        print_limit(f, "staging-bytes", s->limits.max_staging_bytes);
        print_limit(f, "min-bytes", s->min_bytes);
        fprintf(f, "\nusage      published=%" PRIu64 " published-bytes=%" PRIu64 " staging=%" PRIu64
                   " staging-bytes=%" PRIu64 " (in the view itself)\n",
                s->usage.snapshots, s->usage.bytes, s->usage.staging, s->usage.staging_bytes);
        fprintf(f, "grants     %" PRIu64 "\n", s->n_grants);
}

void cli_grant_print(FILE *f, const struct snapfs_grant *g)
{
        char hex[2 * SNAPFS_DIGEST_LEN + 1];

        cli_grant_hex(g, hex);
        fprintf(f, "sha256=%s size=%" PRIu64 " ino=%" PRIu64, hex, g->size, g->ino);
        if (g->entry[0])
                fprintf(f, " entry=%s", g->entry);
        fputc('\n', f);
}

void cli_scope_table(FILE *f, const struct snapfs_scope *v, size_t n)
{
        size_t wn = 4, wv = 4;

        for (size_t i = 0; i < n; i++) {
                size_t a = strlen(v[i].name), b = strlen(v[i].view ? v[i].view : "");
                wn = a > wn ? a : wn;
                wv = b > wv ? b : wv;
        }
        /* The three counts are of different things: every grant (by digest or entry), then
         * only the snapshots published in the view itself and their bytes (what the scope's
         * limits count): a scope granted one snapshot from the main mount shows 1, 0, 0. */
        fprintf(f, "%-*s  %-*s  %-9s  %-7s  %6s  %9s  %15s  USERS\n", (int)wn, "NAME", (int)wv,
                "VIEW", "DEV", "PUBLISH", "GRANTS", "PUBLISHED", "PUBLISHED-BYTES");
        for (size_t i = 0; i < n; i++) {
                char dev[32];
                if (v[i].flags & SNAPFS_SCOPE_UNMOUNTED)
                        snprintf(dev, sizeof(dev), "-");
                else
                        snprintf(dev, sizeof(dev), "%u:%u", major(v[i].dev), minor(v[i].dev));
                fprintf(f, "%-*s  %-*s  %-9s  %-7s  %6" PRIu64 "  %9" PRIu64 "  %15" PRIu64 "  ",
                        (int)wn, v[i].name, (int)wv, v[i].view ? v[i].view : "", dev,
                        (v[i].flags & SNAPFS_SCOPE_PUBLISH) ? "yes" : "no", v[i].n_grants,
                        v[i].usage.snapshots, v[i].usage.bytes);
                print_users(f, &v[i]);
                fputc('\n', f);
        }
}
