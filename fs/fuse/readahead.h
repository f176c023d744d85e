/* SPDX-License-Identifier: MIT */
/* The mount's readahead: how large the READ requests of a sequential reader are. */
#pragma once

#include <stdint.h>

/* The largest READ request libfuse negotiates (max_pages 256 of 4 KiB): one readahead window
 * is then one request. */
#define SFS_READ_AHEAD_KB 1024

/* Sets read_ahead_kb of the backing device info of the filesystem whose st_dev is dev
 * (/sys/class/bdi/<major>:<minor>/read_ahead_kb). Root only. 0, or a negative errno
 * (-EACCES/-EROFS unprivileged or with a read-only /sys, -ENOENT no such bdi). */
int sfs_set_read_ahead(uint64_t dev, unsigned kb);
