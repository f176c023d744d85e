/* SPDX-License-Identifier: MIT */
/* The library's version, for the clients that mirror its structs (the Python client, the
 * Node.js addon): they refuse to run against a library of another version, whose layouts
 * they cannot know. */
#include "client/snapfs.h"
#include "config.h"

const char *snapfs_version(void)
{
        return SNAPFS_VERSION;
}
