/* SPDX-License-Identifier: MIT */
/* How the snapfs command shows a snapshot: the one snapshot object of every --json output
 * (docs/design.md, "One snapshot object") and the human columns of snapfs ls. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "client/snapfs.h"

/* {"sha256", "size", "dev" ("major:minor"), "ino", "name" (null when none), "published"
 * (RFC 3339 UTC, seconds), "publisher" (uid), "binding" (its text)}: the object every command
 * prints for a snapshot; a command adds its own fields beside these. NULL without memory. */
json_object *cli_snapshot_json(const struct snapfs_snapshot *s);

/* The same object for a snapshot known only by its binding: name, published and publisher
 * null. */
json_object *cli_binding_json(const struct snapfs_binding *b);

/* The same object for a snapshot of a scope's view or the read view as snapfs_describe_view
 * found it (seen: its SNAPFS_SEEN_* flags): name, published and publisher null without
 * SNAPFS_SEEN_DAEMON; dev and binding null when neither the view nor the daemon's record
 * gives a device (a view not mounted). */
json_object *cli_seen_json(const struct snapfs_snapshot *s, unsigned seen);

/* "content", "signature", "manifest", or NULL for SNAPFS_KIND_UNKNOWN. */
const char *cli_kind_name(int kind);

/* size for a person, in the size grammar's units: "176", "1.5K", "293K", "64M", "1.0G"
 * (binary, rounded up, as ls -h does). */
const char *cli_human_size(uint64_t size, char *buf, size_t n);

/* How long ago sec (seconds since the epoch) was at now: "12s", "5m", "3h", "2d", "6w";
 * "-" for a time in the future. */
const char *cli_age(int64_t sec, time_t now, char *buf, size_t n);

/* sec as RFC 3339 in UTC, to the second: "2026-12-01T13:12:51Z". */
const char *cli_iso_time(int64_t sec, char *buf, size_t n);

/* The user name of uid, or its number when it has none. */
const char *cli_user_name(uint32_t uid, char *buf, size_t n);
