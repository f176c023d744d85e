/* SPDX-License-Identifier: MIT */
/* The control channel's protocol (docs/design.md, "The control channel"): one request, a JSON
 * object with an "op", in; one reply, a JSON object {"ok", "error", "message", ...}, out.
 * Operations: scope-create, scope-list, scope-show, scope-remove, grant, revoke, status and
 * metrics (fs/control/status.h). */
#pragma once

#include <stddef.h>

#include "fs/config/roles.h"

struct sfs_registry;

/* The executor the main tree's .control calls (sfs_tree_set_control), ctx the registry: 0
 * and *reply (malloc'd, *reply_len bytes, one JSON object, "ok" false for a refusal), or
 * -EINVAL when req is not one well-formed JSON object (nothing executed), -ENOMEM. */
int sfs_protocol_exec(void *ctx, const struct sfs_caller *c, const char *req, size_t len,
                      char **reply, size_t *reply_len);
