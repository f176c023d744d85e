/* SPDX-License-Identifier: MIT */
/* The mountinfo backend on arbitrary mountinfo text: libmount parses it, the backend turns the
 * lines the query asks for into records (mc_mountinfo_collect_stream), and the judge decides.
 *
 * Input: a first line "ID PATH" (the mount the descriptor reached, and the checked path), then
 * the mountinfo text. Records must come out well-formed (no NULL string, one id each, exactly
 * one of ro/rw) and the verdict must pass fz_judge_and_check. */
#include <errno.h>
#include <inttypes.h>

#include "mountcheck/backend.h"
#include "tests/fuzz/fuzz-judge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *nl = memchr(data, '\n', size);
        struct mc_mount_set set = { 0 };
        struct mc_query q = { 0 };
        char *head, *path;
        uint64_t id = 0;
        FILE *table;
        int r;

        if (!nl)
                return 0;
        head = fz_cstr(data, (size_t)(nl - data));
        path = strchr(head, ' ');
        if (!path || sscanf(head, "%" SCNu64, &id) != 1) {
                free(head);
                return 0;
        }
        path++;
        q = (struct mc_query){
                .path = path,
                .want = MC_WANT_TARGET | MC_WANT_PARENT | MC_WANT_CHILDREN | MC_WANT_AT_PATH,
                .has_target = true,
                .target_id = id,
        };
        /* fmemopen of zero bytes fails: an empty table is a one-byte blank line. */
        table = size - (size_t)(nl - data) - 1 ? fmemopen((void *)(nl + 1), size - (size_t)(nl - data) - 1, "r") :
                                                  fmemopen((void *)"\n", 1, "r");
        FZ_CHECK(table != NULL);
        r = mc_mountinfo_collect_stream(&q, table, &set);
        fclose(table);
        FZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM || r == -EINVAL);

        for (size_t i = 0; i < set.n; i++) {
                const struct mc_mount *m = &set.v[i];
                FZ_CHECK(m->mount_point && m->root && m->fstype);
                FZ_CHECK(((m->options & MC_OPT_RO) != 0) != ((m->options & MC_OPT_RW) != 0));
                for (size_t j = 0; j < i; j++)
                        FZ_CHECK(set.v[j].id != m->id);
        }

        if (r == 0)
                fz_judge_both_presets(path, id, set.v, set.n);
        mc_mount_set_free(&set);
        free(head);
        return 0;
}
