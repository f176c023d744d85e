/* SPDX-License-Identifier: MIT */
/* A scope's file in --runtime-store (DIR/scopes/NAME.json, docs/design.md "Persistence"):
 * the one place that writes a scope's persisted state as JSON text and reads it back. The
 * registry (registry.c) fills and reads struct sfs_scopefile; the store (fs/store/ocistore.h)
 * keeps the bytes. The text is json-c's plain form, its keys in a fixed order, so a file
 * written by any version of the daemon since version 1 reads back. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/config/roles.h"
#include "fs/tree/scope.h"

/* json-c's object, declared, not included: the control channel's replies show a scope's
 * limits and uids as its file keeps them (sfs_scopefile_limits_json). */
struct json_object;

#define SFS_SCOPEFILE_VERSION 1

/* A scope's persisted state. */
struct sfs_scopefile {
        char name[SNAP_NAME_MAX + 1]; /* snap_name_valid */
        char *view;                   /* canonical (fs/scopes/viewpath.h); decoded: malloc'd */
        bool view_made;               /* the daemon created the view's directory */
        struct sfs_scope_users users;
        bool publish;
        struct sfs_scope_limits limits;
        pid_t until_pid;      /* 0: none */
        uint64_t until_start; /* its start time (/proc/PID/stat field 22) */
        char boot_id[40];     /* the boot it ran in */
        struct sfs_scope_grants grants;
};

/* The file's text: 0 and *text (malloc'd, NUL-terminated) and *len, or -ENOMEM. */
int sfs_scopefile_encode(const struct sfs_scopefile *f, char **text, size_t *len);

/* Reads len bytes of the file of scope name (the strict parser of common/json.h; at most
 * SFS_OCISTORE_SCOPE_MAX bytes): 0 and *out, or -EINVAL (-EFBIG: too large) with why naming
 * the field ("grants[2]: \"uid\" is out of range"), nothing in *out; -ENOMEM. Each field is
 * checked against its range here; what only the tree knows (a digest granted twice, two
 * grants under one number) is sfs_scope_restore's. */
int sfs_scopefile_decode(const char *name, const char *text, size_t len, struct sfs_scopefile *out,
                         char *why, size_t n);

/* Frees what sfs_scopefile_decode allocated in f (the view, the grants). */
void sfs_scopefile_free(struct sfs_scopefile *f);

/* A scope's limits, one row each, in the order the scope file and the control channel name
 * them: the key, where the value lives in struct sfs_scope_limits, the largest the file
 * takes, whether it is bytes (a size, "64M", on the control channel) or a count, and whether
 * it is the minimum (0 allowed: none; absent from an older file). The one list of them. */
struct sfs_limit_field {
        const char *key;
        size_t off;
        uint64_t max;
        bool size;
        bool minimum;
};
#define SFS_LIMIT_FIELDS 5
extern const struct sfs_limit_field sfs_limit_fields[SFS_LIMIT_FIELDS];
/* Row i's value in l. */
uint64_t *sfs_limit_at(struct sfs_scope_limits *l, size_t i);

/* The scope's limits and its uids as its file keeps them: a JSON object ("max_snapshots",
 * ...) and a list; the control channel's replies show them the same way. NULL: no memory. */
struct json_object *sfs_scopefile_limits_json(const struct sfs_scope_limits *l);
struct json_object *sfs_scopefile_uids_json(const struct value_uid_list *u);
