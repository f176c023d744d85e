/* SPDX-License-Identifier: MIT */
/* otherversion.so: snapfs_version() of a libsnapfs of another version, for LD_PRELOAD. The
 * Node.js addon lays out libsnapfs's structs as its own snapfs.h says; loaded into a process
 * whose libsnapfs is of another version, it must refuse to load rather than read fields at
 * offsets that library does not use (tests/integration/test_node_client.py). */
#include "client/snapfs.h"

const char *snapfs_version(void)
{
        return "0.0.0-other";
}
