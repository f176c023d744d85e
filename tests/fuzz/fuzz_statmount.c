/* SPDX-License-Identifier: MIT */
/* The statmount backend's record parser on arbitrary replies: offsets past the reply or past
 * its own size field, strings without a terminator, opt_num larger than the strings there,
 * masks that claim fields that are not there. Then the judge on the records.
 *
 * Input: replies one after the other, each a 16-bit little-endian length and that many
 * bytes; each reply is copied into a buffer of exactly its length, so a read past it is an
 * ASan report. The first record names the reached mount and the checked path. */
#include <errno.h>

#include "mountcheck/backend.h"
#include "tests/fuzz/fuzz-judge.h"
#include "mountcheck/kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct fz_reader in = { data, size };
        struct mc_mount_set set = { 0 };

        while (in.n >= 2 && set.n < 16) {
                size_t len = fz_u8(&in);
                struct mc_mount *m;
                uint8_t *reply;
                int r;

                len |= (size_t)fz_u8(&in) << 8;
                if (len > in.n)
                        len = in.n;
                reply = malloc(len ? len : 1);
                FZ_CHECK(reply != NULL);
                memcpy(reply, in.p, len);
                in.p += len;
                in.n -= len;

                m = mc_mount_set_push(&set);
                FZ_CHECK(m != NULL);
                r = mc_statmount_record(reply, len, m);
                FZ_CHECK(r == 0 || r == -EIO || r == -EOPNOTSUPP || r == -ENOMEM);
                if (len < sizeof(struct mc_kstatmount))
                        FZ_CHECK(r == -EIO); /* shorter than the fixed part: never read */
                if (r < 0) {
                        mc_mount_set_pop(&set);
                } else {
                        FZ_CHECK(m->mount_point && m->root && m->fstype);
                        FZ_CHECK(((m->options & MC_OPT_RO) != 0) !=
                                 ((m->options & MC_OPT_RW) != 0));
                        FZ_CHECK(m->id == ((const struct mc_kstatmount *)reply)->mnt_id);
                }
                free(reply);
        }

        if (set.n)
                fz_judge_both_presets(set.v[0].mount_point, set.v[0].id, set.v, set.n);
        mc_mount_set_free(&set);
        return 0;
}
