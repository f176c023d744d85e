/* SPDX-License-Identifier: MIT */
/* The one snapshot object, and the human columns of snapfs ls. */
#include "cli/show.h"

#include <assert.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/hex.h"
#include "snapshot/kind.h"

static_assert((int)SNAPFS_KIND_CONTENT == (int)SNAP_KIND_CONTENT &&
                      (int)SNAPFS_KIND_SIGNATURE == (int)SNAP_KIND_SIGNATURE &&
                      (int)SNAPFS_KIND_MANIFEST == (int)SNAP_KIND_MANIFEST,
              "the library's kinds are snapshot/kind.h's");

static json_object *object(const struct snapfs_binding *b, const struct snapfs_snapshot *s)
{
        char hex[2 * SNAPFS_DIGEST_LEN + 1], dev[32], when[32], text[SNAPFS_BINDING_TEXT_MAX];
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        hex_encode(b->sha256, SNAPFS_DIGEST_LEN, hex);
        snprintf(dev, sizeof(dev), "%u:%u", major(b->dev), minor(b->dev));
        if (snapfs_binding_format(b, text, sizeof(text)) < 0)
                text[0] = '\0';
        json_object_object_add(o, "sha256", json_object_new_string(hex));
        json_object_object_add(o, "size", json_object_new_uint64(b->size));
        json_object_object_add(o, "dev", json_object_new_string(dev));
        json_object_object_add(o, "ino", json_object_new_uint64(b->ino));
        json_object_object_add(o, "name",
                               s && s->name[0] ? json_object_new_string(s->name) : NULL);
        json_object_object_add(o, "published",
                               s ? json_object_new_string(cli_iso_time(s->published_sec, when,
                                                                       sizeof(when)))
                                 : NULL);
        json_object_object_add(o, "publisher", s ? json_object_new_uint64(s->publisher) : NULL);
        json_object_object_add(o, "binding", json_object_new_string(text));
        return o;
}

json_object *cli_snapshot_json(const struct snapfs_snapshot *s)
{
        return object(&s->binding, s);
}

json_object *cli_binding_json(const struct snapfs_binding *b)
{
        return object(b, NULL);
}

json_object *cli_seen_json(const struct snapfs_snapshot *s, unsigned seen)
{
        json_object *o = object(&s->binding, (seen & SNAPFS_SEEN_DAEMON) ? s : NULL);

        /* No device is 0:0: a view that is not mounted has no binding to show. */
        if (o && !(seen & SNAPFS_SEEN_VIEW) && s->binding.dev == 0) {
                json_object_object_add(o, "dev", NULL);
                json_object_object_add(o, "binding", NULL);
        }
        return o;
}

const char *cli_kind_name(int kind)
{
        /* The library's kinds are snapshot/kind.h's (snapfs.h says so): one table of names. */
        return snap_kind_name(kind);
}

const char *cli_human_size(uint64_t size, char *buf, size_t n)
{
        static const char suffix[] = "KMG";
        uint64_t unit = 1024;
        int k = 0;

        if (size < 1024) {
                snprintf(buf, n, "%" PRIu64, size);
                return buf;
        }
        while (k < 2 && size >= unit * 1024) {
                unit *= 1024;
                k++;
        }
        /* One decimal below ten units, as ls -h; always rounded up, so a size never looks
         * smaller than it is (a limit of 256K is not met by "256K" of 262145 bytes). */
        if (size < 10 * unit) {
                uint64_t tenths = (size * 10 + unit - 1) / unit;
                if (tenths < 100) {
                        snprintf(buf, n, "%" PRIu64 ".%" PRIu64 "%c", tenths / 10, tenths % 10,
                                 suffix[k]);
                        return buf;
                }
        }
        snprintf(buf, n, "%" PRIu64 "%c", (size + unit - 1) / unit, suffix[k]);
        return buf;
}

const char *cli_age(int64_t sec, time_t now, char *buf, size_t n)
{
        int64_t d = (int64_t)now - sec;

        if (d < 0)
                snprintf(buf, n, "-");
        else if (d < 60)
                snprintf(buf, n, "%" PRId64 "s", d);
        else if (d < 3600)
                snprintf(buf, n, "%" PRId64 "m", d / 60);
        else if (d < 86400)
                snprintf(buf, n, "%" PRId64 "h", d / 3600);
        else if (d < 14 * 86400)
                snprintf(buf, n, "%" PRId64 "d", d / 86400);
        else
                snprintf(buf, n, "%" PRId64 "w", d / (7 * 86400));
        return buf;
}

const char *cli_iso_time(int64_t sec, char *buf, size_t n)
{
        time_t t = (time_t)sec;
        struct tm tm;

        if (!gmtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                snprintf(buf, n, "%" PRId64, sec);
        return buf;
}

const char *cli_user_name(uint32_t uid, char *buf, size_t n)
{
        char pw_buf[1024];
        struct passwd pw, *res = NULL;

        if (getpwuid_r((uid_t)uid, &pw, pw_buf, sizeof(pw_buf), &res) == 0 && res &&
            res->pw_name && *res->pw_name)
                snprintf(buf, n, "%s", res->pw_name);
        else
                snprintf(buf, n, "%" PRIu32, uid);
        return buf;
}
