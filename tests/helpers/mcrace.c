/* SPDX-License-Identifier: MIT */
/* mcrace: runs the tmpfs-preset check on PATH through a real backend wrapped so that, when
 * asked, it mounts a compliant tmpfs on top of PATH in the middle of the check (after the
 * path was pinned, before the table is read): the race changed-during-check exists for.
 *
 *   mcrace statmount|mountinfo PATH race|calm
 *
 * Prints one finding code per line; exit 0 compliant, 1 not, 2 error. Root, in a private
 * mount namespace; the caller unmounts what it left. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "mountcheck/backend.h"
#include "mountcheck/check.h"

static const struct mc_backend_ops *real;
static bool race, raced;

static int racing_collect(const struct mc_query *q, struct mc_mount_set *set)
{
        if (race && !raced) {
                raced = true;
                if (mount("tmpfs", q->path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          "size=1m,mode=1777") < 0)
                        return -errno;
        }
        return real->collect(q, set);
}

int main(int argc, char **argv)
{
        struct mc_backend_ops ops;
        struct mc_policy pol;
        struct mc_verdict v;
        int r;

        if (argc != 4 || (strcmp(argv[3], "race") != 0 && strcmp(argv[3], "calm") != 0)) {
                fprintf(stderr, "usage: mcrace statmount|mountinfo PATH race|calm\n");
                return 2;
        }
        if (strcmp(argv[1], "statmount") == 0)
                real = &mc_backend_statmount;
        else if (strcmp(argv[1], "mountinfo") == 0)
                real = &mc_backend_mountinfo;
        else {
                fprintf(stderr, "mcrace: unknown backend '%s'\n", argv[1]);
                return 2;
        }
        race = strcmp(argv[3], "race") == 0;
        ops = *real;
        ops.collect = racing_collect;

        if (mc_policy_preset(&pol, "tmpfs") < 0)
                return 2;
        r = mc_check_path_with(argv[2], &pol, &ops, &v, NULL);
        if (r < 0) {
                fprintf(stderr, "mcrace: %s: %s\n", argv[2], strerror(-r));
                return 2;
        }
        for (size_t i = 0; i < v.n_findings; i++)
                printf("%s\n", mc_code_name(v.findings[i].code));
        return v.compliant ? 0 : 1;
}
