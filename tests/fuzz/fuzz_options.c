/* SPDX-License-Identifier: MIT */
/* The daemon's option values (sfs_parse_size, sfs_parse_count, sfs_parse_uidset) and
 * mountcheck's size parser (mc_parse_size) on one arbitrary C string: a refusal changes
 * nothing, an accepted value re-formatted parses to the same value, and the two size parsers,
 * which document the same grammar, agree on every input. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "fs/options.h"
#include "mountcheck/policy.h"

static void check_size(const char *s)
{
        static const struct {
                char suffix;
                unsigned shift;
        } units[] = { { 'K', 10 }, { 'm', 20 }, { 'G', 30 } };
        uint64_t v = 0x5a5a5a5a, w = 0xa5a5a5a5, again;
        char text[32];
        int r, r2;

        r = sfs_parse_size(s, &v);
        FZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        FZ_CHECK(r == 0 || v == 0x5a5a5a5a);
        r2 = mc_parse_size(s, &w);
        FZ_CHECK(r2 == 0 || r2 == -EINVAL);
        FZ_CHECK(r2 == 0 || w == 0xa5a5a5a5);
        FZ_CHECK((r == 0) == (r2 == 0));
        if (r < 0)
                return;
        FZ_CHECK(v == w);

        snprintf(text, sizeof(text), "%" PRIu64, v);
        FZ_CHECK(sfs_parse_size(text, &again) == 0 && again == v);
        FZ_CHECK(mc_parse_size(text, &again) == 0 && again == v);
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (v & ((1ULL << units[i].shift) - 1))
                        continue;
                snprintf(text, sizeof(text), "%" PRIu64 "%c", v >> units[i].shift, units[i].suffix);
                FZ_CHECK(sfs_parse_size(text, &again) == 0 && again == v);
                FZ_CHECK(mc_parse_size(text, &again) == 0 && again == v);
        }
}

static void check_count(const char *s, uint64_t max)
{
        uint64_t v = 7, size;
        char text[32];
        int r;

        r = sfs_parse_count(s, max, &v);
        FZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r < 0) {
                FZ_CHECK(v == 7);
                return;
        }
        FZ_CHECK(v >= 1 && v <= max);
        /* A count is a size without a suffix. */
        FZ_CHECK(sfs_parse_size(s, &size) == 0 && size == v);
        snprintf(text, sizeof(text), "%" PRIu64, v);
        FZ_CHECK(sfs_parse_count(text, max, &size) == 0 && size == v);
}

static void check_uidset(const char *s)
{
        struct sfs_uidset set, again, untouched;
        char text[SFS_UIDSET_MAX * 11 + 1];
        size_t o = 0;
        int r;

        memset(&set, 0x5a, sizeof(set));
        memcpy(&untouched, &set, sizeof(set));
        r = sfs_parse_uidset(s, &set);
        FZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE || r == -E2BIG);
        if (r < 0) {
                FZ_CHECK(memcmp(&set, &untouched, sizeof(set)) == 0);
                return;
        }
        /* Only the word "any" means everyone; a parsed list never names the kernel's "no
         * uid". */
        if (strcmp(s, "any") == 0) {
                FZ_CHECK(set.any && set.n == 0 && sfs_uidset_contains(&set, 0));
                return;
        }
        FZ_CHECK(!set.any && set.n >= 1 && set.n <= SFS_UIDSET_MAX);
        for (unsigned i = 0; i < set.n; i++) {
                FZ_CHECK(set.uids[i] != (uid_t)-1);
                FZ_CHECK(sfs_uidset_contains(&set, set.uids[i]));
                o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%u", i ? "," : "",
                                      (unsigned)set.uids[i]);
        }
        FZ_CHECK(sfs_parse_uidset(text, &again) == 0);
        FZ_CHECK(again.n == set.n && !again.any &&
                 memcmp(again.uids, set.uids, set.n * sizeof(set.uids[0])) == 0);
        /* A uid not in the list is not admitted. */
        for (uid_t u = 0; u < 4; u++) {
                bool listed = false;
                for (unsigned i = 0; i < set.n; i++)
                        listed |= set.uids[i] == u;
                FZ_CHECK(sfs_uidset_contains(&set, u) == listed);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s = fz_cstr(data, size);

        check_size(s);
        check_count(s, UINT64_MAX);
        check_count(s, 4096);
        check_uidset(s);
        free(s);
        return 0;
}
