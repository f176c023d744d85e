/* SPDX-License-Identifier: MIT */
/* A staging NAME: what a client stages a snapshot under and the name the snapshot keeps
 * (xattr user.snapfs.name, an OCI layer's title). Shared by the daemon, which refuses other
 * names, and by the clients that choose them: its own file, so a client links this check and
 * not the daemon's store. */
#pragma once

#include <stdbool.h>

/* 1-64 of [A-Za-z0-9._-], not starting with '.' (".", ".." and hidden names are never
 * names). */
#define SNAP_NAME_MAX 64
bool snap_name_valid(const char *name);
