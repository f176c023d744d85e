/* SPDX-License-Identifier: MIT */
/* Scopes and grants as the control channel reports them (docs/design.md, "The control
 * channel"): what the registry hands out (registry.h) written as JSON, for the replies
 * (fs/control/protocol.c) and the daemon's status (fs/control/status.c). */
#pragma once

#include <stddef.h>

#include "fs/scopes/registry.h"

/* json-c's object, declared, not included: each function makes one. NULL: no memory. */
struct json_object;

struct json_object *sfs_scope_info_json(const struct sfs_scope_info *s);
/* A list of the n scopes at v. */
struct json_object *sfs_scope_infos_json(const struct sfs_scope_info *v, size_t n);
struct json_object *sfs_grant_info_json(const struct sfs_grant_info *g);
/* A list of the n grants at v. */
struct json_object *sfs_grant_infos_json(const struct sfs_grant_info *v, size_t n);
