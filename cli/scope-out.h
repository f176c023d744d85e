/* SPDX-License-Identifier: MIT */
/* Scopes and grants as the snapfs command prints them: text and JSON (the same fields the
 * daemon reports, docs/design.md "The control channel"). */
#pragma once

#include <json-c/json.h>
#include <stdio.h>

#include "client/snapfs.h"

/* {name, view, dev "maj:min", uids [..], gid|null, publish, until_pid|null,
 *  limits {max_snapshots, max_bytes, max_staging, max_staging_bytes} (null: not set),
 *  usage {snapshots, bytes, staging, staging_bytes}, grants N}, or NULL. */
json_object *cli_scope_json(const struct snapfs_scope *s);

/* {sha256, size, ino, entry|null}, or NULL. */
json_object *cli_grant_json(const struct snapfs_grant *g);

/* One "key value" line per field of s. */
void cli_scope_print(FILE *f, const struct snapfs_scope *s);

/* "sha256=<hex> size=<n> ino=<n>", then " entry=<name>" for an entry. */
void cli_grant_print(FILE *f, const struct snapfs_grant *g);

/* The table of snapfs scope ls: a header, then one row a scope. */
void cli_scope_table(FILE *f, const struct snapfs_scope *v, size_t n);

/* The digest of g in hex (out: 65 bytes). */
void cli_grant_hex(const struct snapfs_grant *g, char *out);
