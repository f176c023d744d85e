/* SPDX-License-Identifier: MIT */
/* fs/config/conffile.c: the daemon's config file, its lines and the file itself; each refusal
 * beside the allowance that shows nothing else was refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/config/conffile.h"

static char why[640];
static unsigned line;

/* Applies text to cfg (a fresh config unless the caller set it up): what apply returns. */
static int apply(struct sfs_daemon_config *cfg, const char *text)
{
        char *copy = strdup(text);

        assert_non_null(copy);
        return sfs_conffile_apply(cfg, copy, strlen(copy), &line, why, sizeof(why));
}

static void test_lines_set_options_by_either_spelling_and_skip_comments(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(apply(&cfg, "# a comment\n"
                                     "\n"
                                     "   # indented comment\n"
                                     "max-bytes = 1G\n"
                                     "\tmax_snapshot_size=1M  \n"
                                     "allow_other = yes\n"
                                     "store = /var/lib/snapfs store\n"
                                     "trust-key = a.pub\n"
                                     "trust_key = b.pub"),
                         0);
        assert_true(cfg.tree.max_bytes == 1ULL << 30);
        assert_true(cfg.tree.max_snapshot_size == 1ULL << 20);
        assert_true(cfg.allow_other);
        /* Blanks inside a value are kept; around it they go. */
        assert_string_equal(cfg.store, "/var/lib/snapfs store");
        assert_int_equal(cfg.n_trust_keys, 2);
        assert_string_equal(cfg.trust_keys[1], "b.pub");
        assert_int_equal(line, 0);
        sfs_daemon_config_free(&cfg);
}

static void test_an_unknown_key_is_refused_with_its_line(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(apply(&cfg, "max-bytes = 1G\n# x\nmax-byte = 1G\n"), -EINVAL);
        assert_int_equal(line, 3);
        assert_string_equal(why, "unknown key 'max-byte'");
        sfs_daemon_config_free(&cfg);
}

static void test_a_bad_value_is_refused_with_its_line_and_the_common_message(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(apply(&cfg, "\n\nmax-bytes = 12Q\n"), -EINVAL);
        assert_int_equal(line, 3);
        assert_string_equal(why, "max-bytes: invalid size '12Q': expected digits with an "
                                 "optional K, M or G suffix (binary units: 4096, 256K, 64M, "
                                 "1G)");
        sfs_daemon_config_free(&cfg);
        sfs_daemon_config_init(&cfg);
        assert_int_equal(apply(&cfg, "read-only = on\n"), -EINVAL);
        assert_string_equal(why, "read-only: invalid flag 'on': expected yes or no");
        sfs_daemon_config_free(&cfg);
}

static void test_a_line_without_equals_or_with_a_control_byte_is_refused(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(apply(&cfg, "allow-other\n"), -EINVAL);
        assert_int_equal(line, 1);
        assert_string_equal(why, "expected KEY = VALUE");
        sfs_daemon_config_free(&cfg);
        sfs_daemon_config_init(&cfg);
        /* A carriage return would hide what the line says on a terminal. */
        assert_int_equal(apply(&cfg, "max-bytes = 1G\nstore = /a\r/b\n"), -EINVAL);
        assert_int_equal(line, 2);
        assert_string_equal(why, "a control character (\\x0d)");
        sfs_daemon_config_free(&cfg);
        sfs_daemon_config_init(&cfg);
        {
                char text[] = "store = /a\0/b\n";
                char *copy = malloc(sizeof(text));
                assert_non_null(copy);
                memcpy(copy, text, sizeof(text));
                assert_int_equal(sfs_conffile_apply(&cfg, copy, sizeof(text) - 1, &line, why,
                                                    sizeof(why)),
                                 -EINVAL);
                assert_string_equal(why, "a control character (\\x00)");
        }
        sfs_daemon_config_free(&cfg);
}

static void test_command_line_options_and_config_itself_belong_to_no_file(void **state)
{
        static const char *const lines[] = { "foreground = yes", "debug = yes", "help = yes",
                                             "config = /etc/other.conf" };
        struct sfs_daemon_config cfg;

        (void)state;
        for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
                sfs_daemon_config_init(&cfg);
                assert_int_equal(apply(&cfg, lines[i]), -EINVAL);
                assert_non_null(strstr(why, "not in a configuration file"));
                assert_false(cfg.foreground || cfg.debug || cfg.help || cfg.config);
                sfs_daemon_config_free(&cfg);
        }
}

static void test_a_key_given_twice_is_refused_unless_repeatable(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(apply(&cfg, "max-bytes = 1G\nreaders = any\nmax_bytes = 2G\n"),
                         -EINVAL);
        assert_int_equal(line, 3);
        assert_string_equal(why, "max-bytes: given twice (first on line 1)");
        sfs_daemon_config_free(&cfg);
}

static void test_the_command_line_wins_but_its_lines_are_still_checked(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(sfs_option_set(&cfg, sfs_option_find("max-bytes", false), "2G", why,
                                        sizeof(why)),
                         0);
        assert_int_equal(sfs_option_set(&cfg, sfs_option_find("trust-key", false), "cli.pub",
                                        why, sizeof(why)),
                         0);
        assert_int_equal(apply(&cfg, "max-bytes = 1G\ntrust-key = file.pub\nmax-staging = 3\n"),
                         0);
        assert_true(cfg.tree.max_bytes == 2ULL << 30);
        assert_int_equal(cfg.n_trust_keys, 1);
        assert_string_equal(cfg.trust_keys[0], "cli.pub");
        assert_int_equal(cfg.tree.max_staging, 3);
        sfs_daemon_config_free(&cfg);
        /* A bad value stays a bad value, overridden or not. */
        sfs_daemon_config_init(&cfg);
        assert_int_equal(sfs_option_set(&cfg, sfs_option_find("max-bytes", false), "2G", why,
                                        sizeof(why)),
                         0);
        assert_int_equal(apply(&cfg, "max-bytes = lots\n"), -EINVAL);
        assert_int_equal(line, 1);
        sfs_daemon_config_free(&cfg);
}

/* A scratch directory for the files below, removed by the caller. */
static char dir[64];

static const char *file_with(const char *name, const char *text, mode_t mode)
{
        static char path[128];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
        return path;
}

static int setup_dir(void **state)
{
        (void)state;
        snprintf(dir, sizeof(dir), "/tmp/test_conffile.XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
        char cmd[96];

        (void)state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_a_private_regular_file_is_read_and_applied(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(sfs_conffile_load(&cfg, file_with("ok.conf", "max-staging = 5\n",
                                                           0644),
                                           &line, why, sizeof(why)),
                         0);
        assert_int_equal(cfg.tree.max_staging, 5);
        sfs_daemon_config_free(&cfg);
}

static void test_a_file_others_may_write_is_refused_before_it_is_read(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        sfs_daemon_config_init(&cfg);
        assert_int_equal(sfs_conffile_load(&cfg, file_with("g.conf", "max-staging = 5\n",
                                                           0664),
                                           &line, why, sizeof(why)),
                         -EPERM);
        assert_int_equal(sfs_conffile_load(&cfg, file_with("o.conf", "max-staging = 5\n",
                                                           0606),
                                           &line, why, sizeof(why)),
                         -EPERM);
        assert_int_equal(line, 0);
        assert_int_equal(cfg.tree.max_staging, 16);
        sfs_daemon_config_free(&cfg);
}

static void test_a_symlink_a_fifo_or_a_directory_is_refused_without_blocking(void **state)
{
        struct sfs_daemon_config cfg;
        char link[128], fifo[128];

        (void)state;
        sfs_daemon_config_init(&cfg);
        snprintf(link, sizeof(link), "%s/link.conf", dir);
        assert_int_equal(symlink(file_with("target.conf", "max-staging = 5\n", 0644), link), 0);
        assert_int_equal(sfs_conffile_load(&cfg, link, &line, why, sizeof(why)), -ELOOP);
        snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(sfs_conffile_load(&cfg, fifo, &line, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "refused: not a regular file");
        assert_int_equal(sfs_conffile_load(&cfg, dir, &line, why, sizeof(why)), -EINVAL);
        assert_int_equal(cfg.tree.max_staging, 16);
        sfs_daemon_config_free(&cfg);
}

static void test_a_file_past_the_bound_is_refused(void **state)
{
        struct sfs_daemon_config cfg;
        char *big = malloc(SFS_CONFFILE_MAX + 2);

        (void)state;
        assert_non_null(big);
        memset(big, '#', SFS_CONFFILE_MAX + 1);
        big[SFS_CONFFILE_MAX + 1] = '\0';
        sfs_daemon_config_init(&cfg);
        assert_int_equal(sfs_conffile_load(&cfg, file_with("big.conf", big, 0644), &line, why,
                                           sizeof(why)),
                         -EFBIG);
        big[SFS_CONFFILE_MAX] = '\0'; /* the bound itself is fine */
        assert_int_equal(sfs_conffile_load(&cfg, file_with("max.conf", big, 0644), &line, why,
                                           sizeof(why)),
                         0);
        free(big);
        sfs_daemon_config_free(&cfg);
}

static void test_a_file_of_another_uid_is_refused_and_root_s_is_read(void **state)
{
        struct sfs_daemon_config cfg;
        const char *path;

        (void)state;
        /* Only root can give a file away: elsewhere this is not checked, and says so. */
        if (geteuid() != 0)
                skip();
        sfs_daemon_config_init(&cfg);
        path = file_with("theirs.conf", "max-staging = 5\n", 0644);
        assert_int_equal(chown(path, 1000, 1000), 0);
        assert_int_equal(sfs_conffile_load(&cfg, path, &line, why, sizeof(why)), -EPERM);
        assert_string_equal(why, "refused: owned by uid 1000, neither this uid nor root (it "
                                 "could choose the daemon's options)");
        assert_int_equal(cfg.tree.max_staging, 16);
        assert_int_equal(chown(path, 0, 0), 0);
        assert_int_equal(sfs_conffile_load(&cfg, path, &line, why, sizeof(why)), 0);
        assert_int_equal(cfg.tree.max_staging, 5);
        sfs_daemon_config_free(&cfg);
}

static void test_a_file_that_reads_longer_than_its_size_is_refused_at_the_bound(void **state)
{
        struct sfs_daemon_config cfg;

        (void)state;
        /* /proc/kallsyms: a regular file of root, not writable, whose fstat says 0 bytes and
         * whose read gives megabytes, as a file that grows after fstat would. */
        sfs_daemon_config_init(&cfg);
        assert_int_equal(sfs_conffile_load(&cfg, "/proc/kallsyms", &line, why, sizeof(why)),
                         -EFBIG);
        assert_int_equal(line, 0);
        sfs_daemon_config_free(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lines_set_options_by_either_spelling_and_skip_comments),
                cmocka_unit_test(test_an_unknown_key_is_refused_with_its_line),
                cmocka_unit_test(test_a_bad_value_is_refused_with_its_line_and_the_common_message),
                cmocka_unit_test(test_a_line_without_equals_or_with_a_control_byte_is_refused),
                cmocka_unit_test(test_command_line_options_and_config_itself_belong_to_no_file),
                cmocka_unit_test(test_a_key_given_twice_is_refused_unless_repeatable),
                cmocka_unit_test(test_the_command_line_wins_but_its_lines_are_still_checked),
                cmocka_unit_test(test_a_private_regular_file_is_read_and_applied),
                cmocka_unit_test(test_a_file_others_may_write_is_refused_before_it_is_read),
                cmocka_unit_test(test_a_symlink_a_fifo_or_a_directory_is_refused_without_blocking),
                cmocka_unit_test(test_a_file_past_the_bound_is_refused),
                cmocka_unit_test(test_a_file_of_another_uid_is_refused_and_root_s_is_read),
                cmocka_unit_test(test_a_file_that_reads_longer_than_its_size_is_refused_at_the_bound),
        };
        return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
