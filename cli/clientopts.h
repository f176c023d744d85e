/* SPDX-License-Identifier: MIT */
/* What put, verify, exec, ls and audit share: the mount to use, the owner to trust, and how
 * a refusal's reasons are printed. */
#pragma once

#include <json-c/json.h>
#include <stdio.h>

#include "snapfs.h"

/* The mount when --mount is not given: $SNAPFS_MOUNT, else /run/snapfs. */
#define CLI_DEFAULT_MOUNT "/run/snapfs"
const char *cli_default_mount(void);
/* The --mount line of every --help. */
#define CLI_HELP_MOUNT "the snapfs mount (default: $SNAPFS_MOUNT, else " CLI_DEFAULT_MOUNT ")"


/* --owner UID: a decimal uid (no sign, no leading zero, < 2^32 - 1). 0, or -EINVAL. */
int cli_parse_owner(const char *s, struct snapfs_options *opts);

/* path made absolute against the working directory, without resolving anything (the mount
 * check must see the path as named). malloc'd, or NULL with errno set. */
char *cli_absolute_path(const char *path);

/* One "code: message" line per reason, then a line counting dropped ones. */
void cli_print_reasons(FILE *f, const struct snapfs_report *why);

/* [{"code": ..., "message": ...}, ...] */
json_object *cli_reasons_json(const struct snapfs_report *why);

/* Adds error (the errno's name), message (snapfs_strerror) and reasons to o; returns o. */
json_object *cli_refusal_json(json_object *o, int err, const struct snapfs_report *why);

/* Prints a JSON object (pretty, no slash escaping) and a newline to stdout, and frees it:
 * 0, or -EIO when stdout cannot take it. */
int cli_print_json(json_object *o);
