/* SPDX-License-Identifier: MIT */
/* Scopes and grants as the snapfs command prints them: text and JSON (the same fields the
 * daemon reports, docs/design.md "The control channel"). */
#pragma once

#include <json-c/json.h>
#include <stdio.h>

#include "client/snapfs.h"

/* {name, view, dev "maj:min", uids [..], gid|null, publish, until_pid|null,
 *  limits {max_snapshots, max_bytes, max_staging, max_staging_bytes, min_bytes} (null: not
 *  set),
 *  usage {snapshots, bytes, staging, staging_bytes}, grants N}, or NULL. */
json_object *cli_scope_json(const struct snapfs_scope *s);

/* A grant as the one snapshot object (cli_seen_json of s, what snapfs_describe_view found of
 * g's snapshot in the scope's view), its entry (null for a grant by digest) beside it; or
 * NULL. */
json_object *cli_grant_json(const struct snapfs_grant *g, const struct snapfs_snapshot *s,
                            unsigned seen);

/* The snapshots of the n grants g of scope s as snapfs_describe_view finds them below the
 * main mount and in the scope's view (none there while it is not mounted): out and seen (n
 * each). What could not be looked up stays the daemon's record, unseen. */
void cli_grants_describe(const char *mount, const struct snapfs_scope *s,
                         const struct snapfs_grant *g, size_t n,
                         const struct snapfs_options *opts, struct snapfs_snapshot *out,
                         unsigned *seen);

/* One "key value" line per field of s. */
void cli_scope_print(FILE *f, const struct snapfs_scope *s);

/* "sha256=<hex> size=<n> ino=<n>", then " entry=<name>" for an entry. */
void cli_grant_print(FILE *f, const struct snapfs_grant *g);

/* The table of snapfs scope ls: a header, then one row a scope. */
void cli_scope_table(FILE *f, const struct snapfs_scope *v, size_t n);

/* The digest of g in hex (out: 65 bytes). */
void cli_grant_hex(const struct snapfs_grant *g, char *out);
