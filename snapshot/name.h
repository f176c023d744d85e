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

/* An entry name of a scope's view (docs/design.md, "Entry names"), the one grammar the daemon
 * and every client hold: a staging NAME (so ASCII, a subset of UTF-8) that does not start
 * with '-' (an option to whatever tool meets it: "-rf", "--") and is not 64 hexadecimal
 * characters in any case (a digest's shape: an uppercase one passed for the digest it spells,
 * and could then be moved to other content). */
bool snap_entry_name_valid(const char *name);
/* The rule, as a refusal states it. */
#define SNAP_ENTRY_NAME_RULE                                                                  \
        "1-64 of [A-Za-z0-9._-], starting with neither '.' nor '-', and not 64 hexadecimal "  \
        "characters in any case (a digest's shape)"
