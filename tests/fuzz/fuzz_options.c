/* SPDX-License-Identifier: MIT */
/* The value grammars (common/values.h) on one arbitrary C string: a refusal changes nothing
 * and is one of the documented errors, with a message that names the type; an accepted value
 * formatted again (value_format) parses to the same value; a count is a size without a
 * suffix; a uid is a one-item uid list; a uid list formatted again parses to the same list.
 * Then the same bytes as a daemon config file (fs/config/conffile.h): refused with a line that
 * exists, or accepted with every value within its option's range. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "common/values.h"
#include "fs/config/conffile.h"

static void check_message(enum value_type t, const char *s, int err, uint64_t lo, uint64_t hi)
{
        char small[16], text[512];

        /* Cut to the buffer whatever the input, and always the same sentence. */
        value_error(t, s, err, lo, hi, small, sizeof(small));
        FZ_CHECK(strlen(small) < sizeof(small));
        value_error(t, s, err, lo, hi, text, sizeof(text));
        FZ_CHECK(strncmp(text, "invalid ", 8) == 0);
        FZ_CHECK(strncmp(text + 8, value_type_name(t), strlen(value_type_name(t))) == 0);
        for (const char *p = text; *p; p++)
                FZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f); /* control bytes quoted */
}

static void check_scalar(enum value_type t, const char *s, uint64_t lo, uint64_t hi)
{
        uint64_t v = 0x5a5a5a5a, again;
        char text[32];
        int r;

        r = value_parse(t, s, lo, hi, &v);
        FZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r < 0) {
                FZ_CHECK(v == 0x5a5a5a5a);
                check_message(t, s, r, lo, hi);
                return;
        }
        FZ_CHECK(v >= lo && v <= hi);
        value_format(t, v, text, sizeof(text));
        FZ_CHECK(value_parse(t, text, lo, hi, &again) == 0 && again == v);
        if (t == VALUE_COUNT) /* a count is a size without a suffix */
                FZ_CHECK(value_parse(VALUE_SIZE, s, 0, UINT64_MAX, &again) == 0 && again == v);
        if (t == VALUE_UID) { /* and a uid is one canonical spelling, a list of one */
                struct value_uid_list list;
                snprintf(text, sizeof(text), "%" PRIu64, v);
                FZ_CHECK(strcmp(text, s) == 0);
                FZ_CHECK(value_parse_uid_list(s, &list) == 0 && !list.any && list.n == 1 &&
                         list.uids[0] == v);
        }
}

static void check_list(const char *s)
{
        struct value_uid_list list, again, untouched;
        char text[VALUE_UID_LIST_MAX * 11 + 1];
        size_t o = 0;
        int r;

        memset(&list, 0x5a, sizeof(list));
        memcpy(&untouched, &list, sizeof(list));
        r = value_parse_uid_list(s, &list);
        FZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE || r == -E2BIG);
        if (r < 0) {
                FZ_CHECK(memcmp(&list, &untouched, sizeof(list)) == 0);
                check_message(VALUE_UID_LIST, s, r, 0, UINT64_MAX);
                return;
        }
        /* Only the word "any" means everyone; a parsed list never names the kernel's "no
         * uid". */
        if (strcmp(s, "any") == 0) {
                FZ_CHECK(list.any && list.n == 0 && value_uid_list_has(&list, 0));
                return;
        }
        FZ_CHECK(!list.any && list.n >= 1 && list.n <= VALUE_UID_LIST_MAX);
        for (unsigned i = 0; i < list.n; i++) {
                FZ_CHECK(list.uids[i] <= VALUE_UID_MAX);
                FZ_CHECK(value_uid_list_has(&list, list.uids[i]));
                o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%" PRIu32, i ? "," : "",
                                      list.uids[i]);
        }
        /* One spelling per list: formatted again, it is the very input. */
        FZ_CHECK(strcmp(text, s) == 0);
        FZ_CHECK(value_parse_uid_list(text, &again) == 0);
        FZ_CHECK(again.n == list.n && !again.any &&
                 memcmp(again.uids, list.uids, list.n * sizeof(list.uids[0])) == 0);
        /* A uid not in the list is not admitted. */
        for (uint32_t u = 0; u < 4; u++) {
                bool listed = false;
                for (unsigned i = 0; i < list.n; i++)
                        listed |= list.uids[i] == u;
                FZ_CHECK(value_uid_list_has(&list, u) == listed);
        }
}

static void check_conffile(const uint8_t *data, size_t size)
{
        const struct sfs_option *o = sfs_options;
        struct sfs_daemon_config cfg;
        char why[640], *text = malloc(size + 1);
        unsigned line, lines = 1;
        int r;

        if (!text)
                return;
        memcpy(text, data, size);
        text[size] = '\0';
        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';
        sfs_daemon_config_init(&cfg);
        r = sfs_conffile_apply(&cfg, text, size, &line, why, sizeof(why));
        FZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        FZ_CHECK(strlen(why) < sizeof(why));
        if (r == -EINVAL)
                FZ_CHECK(line >= 1 && line <= lines && why[0]);
        if (r == 0) {
                FZ_CHECK(line == 0);
                FZ_CHECK(cfg.tree.max_snapshot_size >= o[SFS_OPT_MAX_SNAPSHOT_SIZE].min &&
                         cfg.tree.max_snapshot_size <= o[SFS_OPT_MAX_SNAPSHOT_SIZE].max);
                FZ_CHECK(cfg.tree.max_bytes >= 1 && cfg.tree.max_snapshots >= 1 &&
                         cfg.tree.max_staging >= 1);
                FZ_CHECK(cfg.n_trust_keys <= SFS_TRUST_KEYS_MAX);
                /* Nothing that belongs on the command line came from the file. */
                FZ_CHECK(!cfg.foreground && !cfg.debug && !cfg.help && !cfg.config);
        }
        sfs_daemon_config_free(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s = fz_cstr(data, size);

        check_conffile(data, size);

        check_scalar(VALUE_UID, s, 0, VALUE_UID_MAX);
        check_scalar(VALUE_SIZE, s, 0, UINT64_MAX);
        check_scalar(VALUE_SIZE, s, 1, 1ULL << 30);
        check_scalar(VALUE_COUNT, s, 0, UINT64_MAX);
        check_scalar(VALUE_COUNT, s, 1, 4096);
        check_scalar(VALUE_DURATION, s, 0, UINT64_MAX);
        check_list(s);
        free(s);
        return 0;
}
