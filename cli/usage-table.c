/* SPDX-License-Identifier: MIT */
/* The per-uid usage table: text for snapfs ls and snapfs audit, and its JSON. */
#include "cli/usage-table.h"

#include <inttypes.h>

#include "cli/show.h"
#include "common/values.h"

void cli_print_usage(FILE *f, const struct sfc_usage *u)
{
        char bytes[16], staging[16], limit[32], reserve[32];

        fprintf(f, "%-10s %10s %12s %8s %14s\n", "UID", "SNAPSHOTS", "BYTES", "STAGING",
                "STAGING-BYTES");
        /* Bytes in the units of snapfs ls (rounded up); the limits exactly, as the size
         * grammar spells them, so they can be typed back into the option that sets them. */
        for (size_t i = 0; i < u->n; i++)
                fprintf(f, "%-10" PRIu32 " %10" PRIu64 " %12s %8" PRIu64 " %14s\n",
                        u->uids[i].uid, u->uids[i].snapshots,
                        cli_human_size(u->uids[i].bytes, bytes, sizeof(bytes)),
                        u->uids[i].staging,
                        cli_human_size(u->uids[i].staging_bytes, staging, sizeof(staging)));
        if (u->more)
                fprintf(f, "(and %" PRIu64 " more uids)\n", u->more);
        value_format(VALUE_SIZE, u->uid_bytes, limit, sizeof(limit));
        value_format(VALUE_SIZE, u->reserve_bytes, reserve, sizeof(reserve));
        fprintf(f,
                "limits per uid: %" PRIu64 " snapshots, %s bytes; the owner (uid %" PRIu32
                ") keeps %" PRIu64 " snapshots and %s bytes of its own\n",
                u->uid_snapshots, limit, u->owner, u->reserve_snapshots, reserve);
}

json_object *cli_json_usage(const struct sfc_usage *u)
{
        json_object *o = json_object_new_object(), *arr = json_object_new_array();

        if (!o || !arr) {
                json_object_put(o);
                json_object_put(arr);
                return NULL;
        }
        json_object_object_add(o, "uid_snapshots", json_object_new_uint64(u->uid_snapshots));
        json_object_object_add(o, "uid_bytes", json_object_new_uint64(u->uid_bytes));
        json_object_object_add(o, "owner", json_object_new_uint64(u->owner));
        json_object_object_add(o, "reserve_snapshots",
                               json_object_new_uint64(u->reserve_snapshots));
        json_object_object_add(o, "reserve_bytes", json_object_new_uint64(u->reserve_bytes));
        for (size_t i = 0; i < u->n; i++) {
                json_object *e = json_object_new_object();
                if (!e)
                        continue;
                json_object_object_add(e, "uid", json_object_new_uint64(u->uids[i].uid));
                json_object_object_add(e, "snapshots",
                                       json_object_new_uint64(u->uids[i].snapshots));
                json_object_object_add(e, "bytes", json_object_new_uint64(u->uids[i].bytes));
                json_object_object_add(e, "staging", json_object_new_uint64(u->uids[i].staging));
                json_object_object_add(e, "staging_bytes",
                                       json_object_new_uint64(u->uids[i].staging_bytes));
                json_object_array_add(arr, e);
        }
        json_object_object_add(o, "uids", arr);
        json_object_object_add(o, "more", json_object_new_uint64(u->more));
        return o;
}
