/* SPDX-License-Identifier: MIT */
/* mc_policy_set() and mc_parse_options() on arbitrary option text, one "key=value" a line
 * (a line without "=" passes a NULL value), applied in order to the snapfs preset.
 *
 * After each call: a refusal leaves the policy untouched; the policy stays well-formed (no
 * option both required and forbidden, a mode within 07777, an fstype that could appear in
 * mountinfo, never the "no uid" owner). After all of them: a mount built to meet the policy
 * is judged compliant, so no accepted policy refuses every mount. */
#include <errno.h>

#include "tests/fuzz/fuzz-judge.h"
#include "mountcheck/policy.h"

static void check_options(const char *value)
{
        uint32_t bits = 0xdead, again;
        char text[128];
        size_t o = 0;
        int r;

        r = mc_parse_options(value, &bits);
        FZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0) {
                FZ_CHECK(bits == 0xdead);
                return;
        }
        FZ_CHECK((bits & ~(uint32_t)MC_OPT_ALL) == 0);
        text[0] = '\0';
        for (uint32_t bit = 1; bit & MC_OPT_ALL; bit <<= 1)
                if (bits & bit)
                        o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%s", o ? "," : "",
                                              mc_option_name(bit));
        FZ_CHECK(mc_parse_options(text, &again) == 0 && again == bits);
}

static void check_well_formed(const struct mc_policy *pol)
{
        size_t len = strnlen(pol->fstype, sizeof(pol->fstype));

        FZ_CHECK(len < sizeof(pol->fstype));
        for (size_t i = 0; i < len; i++)
                FZ_CHECK((unsigned char)pol->fstype[i] > ' ' && pol->fstype[i] != ',' &&
                         pol->fstype[i] != 0x7f);
        FZ_CHECK((pol->require & ~(uint32_t)MC_OPT_ALL) == 0);
        FZ_CHECK((pol->forbid & ~(uint32_t)MC_OPT_ALL) == 0);
        FZ_CHECK((pol->require & pol->forbid) == 0);
        FZ_CHECK((pol->require & (MC_OPT_RO | MC_OPT_RW)) != (MC_OPT_RO | MC_OPT_RW));
        FZ_CHECK(!pol->check_mode || pol->mode <= 07777);
        FZ_CHECK(!pol->check_owner || pol->owner != UINT32_MAX);
}

/* A mount at /run/snap that meets every rule of pol; the judge must accept it. */
static void check_meetable(const struct mc_policy *pol)
{
        struct mc_mount m[2] = {
                { .id = 1, .parent_id = 1, .mount_point = (char *)"/run", .root = (char *)"/",
                  .fstype = (char *)"tmpfs", .options = MC_OPT_RW },
                { .id = 2, .parent_id = 1, .mount_point = (char *)"/run/snap",
                  .root = (char *)"/" },
        };
        struct mc_facts f = {
                .path = "/run/snap",
                .mount_id = 2,
                .mount_root = true,
                .root_mode = pol->check_mode ? pol->mode : 0755,
                /* Asked by root in the initial namespace, the mount root owned by its owner. */
                .caller_initial_userns = true,
                .has_root_uid = true,
                .root_uid = pol->owner,
                .mounts = m,
                .n_mounts = 2,
        };

        m[1].fstype = (char *)(pol->fstype[0] ? pol->fstype : "fuse.snapfs");
        /* Exactly one of ro/rw, as both backends record it. */
        m[1].options = pol->require | ((pol->require & MC_OPT_RO) || (pol->forbid & MC_OPT_RW) ?
                                       MC_OPT_RO : MC_OPT_RW);
        m[1].has_user_id = true;
        m[1].user_id = pol->owner;
        m[1].has_size = true;
        m[1].size = pol->max_size;
        FZ_CHECK(fz_judge_and_check(&f, pol));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fz_cstr(data, size), *save = NULL;
        struct mc_policy pol, before;

        FZ_CHECK(mc_policy_preset(&pol, "snapfs") == 0);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *value = strchr(line, '=');
                int r;

                if (value)
                        *value++ = '\0';
                if (value)
                        check_options(value);
                memcpy(&before, &pol, sizeof(pol));
                r = mc_policy_set(&pol, line, value);
                FZ_CHECK(r == 0 || r == -EINVAL || r == -ENOENT ||
                         /* a uid or size of common/values.h out of range */
                         (r == -ERANGE && (strcmp(line, "owner") == 0 ||
                                           strcmp(line, "max-size") == 0)));
                if (r < 0)
                        FZ_CHECK(memcmp(&pol, &before, sizeof(pol)) == 0);
                check_well_formed(&pol);
        }
        check_meetable(&pol);
        free(text);
        return 0;
}
