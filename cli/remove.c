/* SPDX-License-Identifier: MIT */
/* Removing snapshots through the mount and saying what became of each. */
#include "cli/remove.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clientopts.h"
#include "cli/show.h"

int cli_remover_start(struct cli_remover *rm, const char *cmd, const char *mount, bool json,
                      bool dry_run, const struct snapfs_options *opts, struct snapfs_report *why)
{
        int r;

        *rm = (struct cli_remover){ .cmd = cmd, .mount = mount, .json = json,
                                    .dry_run = dry_run, .m = SFC_MNT_INIT };
        sfc_report_reset(&rm->why);
        rm->list = json_object_new_array();
        if (!rm->list)
                return cli_system_error(cmd, json, -ENOMEM, "%s", mount);
        sfc_report_reset(why);
        r = sfc_mnt_check(mount, opts, &rm->m, why);
        if (r == 0)
                r = sfc_mnt_catalog(&rm->m, &rm->items, &rm->n, why);
        if (r < 0)
                return cli_remover_refuse_mount(rm, r, why);
        return -1;
}

static void line(const struct cli_remover *rm, const char *what, const struct sfc_entry *e,
                 const char *after)
{
        if (!rm->json)
                printf("%s %.12s %s%s\n", what, e->hex, e->snap.name[0] ? e->snap.name : "-",
                       after);
}

void cli_remover_one(struct cli_remover *rm, const struct sfc_entry *e)
{
        struct snapfs_report why;
        json_object *o = cli_snapshot_json(&e->snap);
        const char *kind = cli_kind_name(e->snap.kind);
        bool kept = false;
        int r = 0;

        sfc_report_reset(&why);
        if (!rm->dry_run)
                r = sfc_mnt_remove(&rm->m, e, &kept, &why);
        if (r < 0) {
                rm->failed++;
                if (!rm->first_err)
                        rm->first_err = r;
                for (unsigned i = 0; i < why.n_reasons; i++)
                        sfc_report_add(&rm->why, why.reasons[i].code, "%s",
                                          why.reasons[i].message);
                if (!rm->json)
                        fprintf(stderr, "snapfs %s: %.12s %s: not removed: %s\n", rm->cmd,
                                e->hex, e->snap.name[0] ? e->snap.name : "-",
                                why.n_reasons ? why.reasons[0].message : snapfs_strerror(r));
        } else if (kept) {
                rm->kept++;
                line(rm, "released", e, " (your hold; it stays for its other holders)");
        } else {
                rm->removed++;
                line(rm, rm->dry_run ? "would remove" : "removed", e, "");
        }
        if (!o)
                return;
        json_object_object_add(o, "kind", kind ? json_object_new_string(kind) : NULL);
        json_object_object_add(o, "removed", json_object_new_boolean(r == 0 && !kept &&
                                                                     !rm->dry_run));
        json_object_object_add(o, "kept", json_object_new_boolean(kept));
        json_object_object_add(o, "error",
                               r < 0 ? json_object_new_string(strerrorname_np(-r) ?: "EIO")
                                     : NULL);
        json_object_object_add(o, "message",
                               r < 0 ? json_object_new_string(why.n_reasons
                                                                      ? why.reasons[0].message
                                                                      : snapfs_strerror(r))
                                     : NULL);
        json_object_array_add(rm->list, o);
}

static int finish(struct cli_remover *rm, int err, const char *message)
{
        int rc = err == -EINVAL ? 2 : err ? 1 : 0;

        sfc_mnt_close(&rm->m);
        free(rm->items);
        rm->items = NULL;

        if (rm->json) {
                json_object *o = err ? cli_json_result(false, strerrorname_np(-err) ?: "EIO",
                                                       message, &rm->why)
                                     : cli_json_result(true, NULL, NULL, NULL);
                if (o) {
                        json_object_object_add(o, "mount", json_object_new_string(rm->mount));
                        json_object_object_add(o, "dry_run",
                                               json_object_new_boolean(rm->dry_run));
                        json_object_object_add(o, "snapshots", rm->list);
                } else {
                        json_object_put(rm->list);
                }
                rm->list = NULL;
                return cli_print_json(o) < 0 ? 2 : rc;
        }
        json_object_put(rm->list);
        rm->list = NULL;
        if (fflush(stdout) != 0)
                return 2;
        return rc;
}

int cli_remover_finish(struct cli_remover *rm)
{
        char message[128];

        snprintf(message, sizeof(message), "%zu of %zu snapshots not removed", rm->failed,
                 rm->failed + rm->removed + rm->kept);
        if (!rm->json && !rm->dry_run && rm->failed == 0 && rm->removed + rm->kept == 0)
                printf("nothing to remove\n");
        if (!rm->json && rm->dry_run)
                printf("(dry run: nothing was removed)\n");
        return finish(rm, rm->first_err, message);
}

int cli_remover_refuse(struct cli_remover *rm, int err, const struct snapfs_report *why)
{
        const char *message = why->n_reasons ? why->reasons[0].message : snapfs_strerror(err);

        for (unsigned i = 0; i < why->n_reasons; i++)
                sfc_report_add(&rm->why, why->reasons[i].code, "%s", why->reasons[i].message);
        if (!rm->json) {
                fprintf(stderr, "snapfs %s: nothing removed: %s\n", rm->cmd, message);
                for (unsigned i = 1; i < why->n_reasons; i++)
                        fprintf(stderr, "%s: %s\n", why->reasons[i].code,
                                why->reasons[i].message);
        }
        return finish(rm, err, message);
}

int cli_remover_refuse_mount(struct cli_remover *rm, int err, const struct snapfs_report *why)
{
        for (unsigned i = 0; i < why->n_reasons; i++)
                sfc_report_add(&rm->why, why->reasons[i].code, "%s", why->reasons[i].message);
        if (!rm->json) {
                /* The finding codes, as check, ls and the rest print them: a script or a
                 * person searching the docs finds the same words. */
                fprintf(stderr, "snapfs %s: nothing removed: %s: %s\n", rm->cmd, rm->mount,
                        snapfs_strerror(err));
                cli_print_reasons(stderr, why);
        }
        return finish(rm, err, why->n_reasons ? why->reasons[0].message : snapfs_strerror(err));
}
