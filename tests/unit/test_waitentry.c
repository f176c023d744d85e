/* SPDX-License-Identifier: MIT */
/* client/wait-entry.c without a mount: what snapfs_watch_entry and snapfs_wait_entry refuse before
 * anything is opened, and snapfs_watch_wait on a descriptor that is, or is not yet, readable
 * (the watch of a real view is driven in tests/integration/test_entry_wait.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "client/snapfs.h"

static const char digest[] =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

static void test_an_entry_outside_the_grammar_or_a_digest_is_einval(void **state)
{
        struct snapfs_report why;
        const char *bad[] = { "../etc", "a/b", ".watch.x", "", digest, NULL };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(snapfs_watch_entry("/nonexistent", bad[i], NULL, &why), -EINVAL);
                assert_string_equal(why.reasons[0].code, "invalid-argument");
                assert_int_equal(snapfs_wait_entry("/nonexistent", bad[i], 0, NULL, NULL, &why),
                                 -EINVAL);
        }
        /* A valid name goes on to the mount check, which a missing path fails. */
        assert_int_equal(snapfs_watch_entry("/nonexistent", "mcp", NULL, &why), -ENOENT);
}

static void test_a_wait_returns_once_readable_and_times_out_otherwise(void **state)
{
        int p[2];

        (void)state;
        assert_int_equal(pipe(p), 0);
        assert_int_equal(snapfs_watch_wait(p[0], 0), -ETIMEDOUT);
        assert_int_equal(snapfs_watch_wait(p[0], 20), -ETIMEDOUT);
        assert_int_equal(write(p[1], "x", 1), 1);
        assert_int_equal(snapfs_watch_wait(p[0], -1), 0);
        assert_int_equal(snapfs_watch_wait(p[0], 0), 0);
        close(p[0]);
        close(p[1]);
        assert_int_equal(snapfs_watch_wait(-1, 0), -EBADF);
        /* A closed descriptor number: poll reports it invalid. */
        assert_int_equal(snapfs_watch_wait(p[0], 0), -EBADF);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_an_entry_outside_the_grammar_or_a_digest_is_einval),
                cmocka_unit_test(test_a_wait_returns_once_readable_and_times_out_otherwise),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
