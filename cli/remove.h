/* SPDX-License-Identifier: MIT */
/* What snapfs rm and snapfs prune share: removing chosen snapshots through the mount, one at a
 * time, and saying what became of each (text, or one JSON object). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "client/client-internal.h"

struct cli_remover {
        const char *cmd;   /* "rm", "prune" */
        const char *mount;
        bool json, dry_run;
        json_object *list; /* the snapshots, each with its outcome */
        size_t removed, kept, failed;
        struct snapfs_report why; /* every refusal's reason */
        int first_err;     /* the first refusal's errno, or 0 */
        struct sfc_mnt m;  /* the mount checked, open until the outcome is printed */
        struct sfc_entry *items; /* its catalog */
        size_t n;
};

/* Starts the outcome of cmd on mount: checks the mount with opts and reads its catalog into
 * rm->items and rm->n (why reset, then the reasons). -1 to go on, else the exit code, printed:
 * 2 out of memory, or cli_remover_refuse_mount's when the mount is refused (rm freed). */
int cli_remover_start(struct cli_remover *rm, const char *cmd, const char *mount, bool json,
                      bool dry_run, const struct snapfs_options *opts, struct snapfs_report *why);

/* Removes e (or, dry, says it would), printing its line unless json. */
void cli_remover_one(struct cli_remover *rm, const struct sfc_entry *e);

/* Prints the summary (or the JSON object) and frees what rm holds (the mount closed): the exit
 * code, 0 when every removal went through, 1 when one was refused, 2 when the output failed. */
int cli_remover_finish(struct cli_remover *rm);

/* A refusal before any removal (a target that names nothing, ...): err and why as the
 * outcome, nothing removed. Prints, frees rm and returns the exit code (1, or 2 for -EINVAL:
 * a usage error). */
int cli_remover_refuse(struct cli_remover *rm, int err, const struct snapfs_report *why);

/* The mount check (or reading the mount) refused: as cli_remover_refuse, the text as every
 * client command prints a refused mount (the mount, then every reason as "code: message"). */
int cli_remover_refuse_mount(struct cli_remover *rm, int err, const struct snapfs_report *why);
