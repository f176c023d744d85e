/* SPDX-License-Identifier: MIT */
/* The per-uid usage table of a mount, as snapfs ls and snapfs audit show it. */
#pragma once

#include <stdio.h>

#include <json-c/json.h>

#include "client/client-internal.h"

/* "UID SNAPSHOTS BYTES STAGING STAGING-BYTES" rows, then the limits line. */
void cli_print_usage(FILE *f, const struct sfc_usage *u);
/* {"uid_snapshots", "uid_bytes", "owner", "reserve_snapshots", "reserve_bytes",
 *  "uids": [{"uid", "snapshots", "bytes", "staging", "staging_bytes"}], "more"}, or NULL. */
json_object *cli_json_usage(const struct sfc_usage *u);
