/* SPDX-License-Identifier: MIT */
/* fs/base/metrics.c: the counters a request adds to, and their OpenMetrics and Prometheus text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/base/metrics.h"

static const struct sfs_metrics_gauges gauges = {
        .version = "1.2.3",
        .start_time = 1700000000.5,
        .snapshots = 2,
        .max_snapshots = 8,
        .bytes = 512,
        .max_bytes = 1024,
        .views_mounted = 1,
};

static int reset(void **state)
{
        (void)state;
        sfs_metrics_reset();
        return 0;
}

static char *render(enum sfs_metrics_format fmt)
{
        struct sfs_metrics_snapshot s;
        char *text;
        size_t len;

        sfs_metrics_read(&s);
        assert_int_equal(sfs_metrics_render(&s, &gauges, fmt, &text, &len), 0);
        assert_int_equal(strlen(text), len);
        return text;
}

/* Durations chosen so no scheduling delay can move them: a start in the future is 0 (the
 * first bucket), one 2 s back is past the last bound (+Inf) whatever the delay. */
static void test_a_request_lands_in_the_bucket_its_duration_reaches(void **state)
{
        struct sfs_metrics_snapshot s;
        uint64_t now = sfs_metrics_now_ns();

        (void)state;
        sfs_metrics_request(SFS_OP_READ, now + 1000000000u);
        sfs_metrics_request(SFS_OP_READ, now - 2000000000u);
        sfs_metrics_request(SFS_OP_COUNT, now); /* no such operation: not counted */
        sfs_metrics_read(&s);
        assert_int_equal(s.buckets[SFS_OP_READ][0], 1);
        assert_int_equal(s.buckets[SFS_OP_READ][SFS_METRICS_BUCKETS], 1);
        assert_true(s.sum_ns[SFS_OP_READ] >= 2000000000u);
        for (size_t op = 0; op < SFS_OP_COUNT; op++)
                for (size_t b = 0; op != SFS_OP_READ && b <= SFS_METRICS_BUCKETS; b++)
                        assert_int_equal(s.buckets[op][b], 0);
}

static void test_a_refusal_counts_by_errno_and_an_idempotent_publish_is_none(void **state)
{
        struct sfs_metrics_snapshot s;

        (void)state;
        sfs_metrics_event("refused", EACCES);
        sfs_metrics_event("publish-refused", EBADMSG);
        sfs_metrics_event("publish-exists", EEXIST);
        sfs_metrics_event("store-blob-corrupt", EBADMSG);
        sfs_metrics_event("refused", 4000); /* past the table: "other" */
        sfs_metrics_event("no-such-event", 0);
        sfs_metrics_read(&s);
        assert_int_equal(s.refusals[EACCES], 1);
        assert_int_equal(s.refusals[EBADMSG], 1);
        assert_int_equal(s.refusals[EEXIST], 0);
        assert_int_equal(s.refusals[0], 1);
        assert_int_equal(sfs_metrics_refusals_total(&s), 3);
        assert_int_equal(s.events[SFS_METRICS_EVENTS], 1); /* "other" */
        assert_string_equal(sfs_metrics_event_name(SFS_METRICS_EVENTS), "other");
        assert_int_equal(s.generation, 6);
}

static void test_openmetrics_names_counter_families_without_total_and_ends_with_eof(void **state)
{
        char *text;

        (void)state;
        sfs_metrics_event("publish", 0);
        sfs_metrics_event("refused", EROFS);
        sfs_metrics_request(SFS_OP_LOOKUP, sfs_metrics_now_ns() + 1000000000u);
        text = render(SFS_METRICS_OPENMETRICS);
        assert_non_null(strstr(text, "# TYPE snapfs_publishes counter\n"
                                     "snapfs_publishes_total 1\n"));
        assert_non_null(strstr(text, "snapfs_refusals_total{reason=\"EROFS\"} 1\n"));
        assert_non_null(strstr(text, "# UNIT snapfs_request_duration_seconds seconds\n"));
        assert_non_null(strstr(text, "snapfs_build{version=\"1.2.3\"} 1\n"));
        assert_non_null(strstr(text, "snapfs_quota_used_ratio{limit=\"bytes\"} 0.500000\n"));
        /* Cumulative buckets: the one request is in every bucket from the first on. */
        assert_non_null(strstr(text, "{op=\"lookup\",le=\"0.00001\"} 1\n"));
        assert_non_null(strstr(text, "{op=\"lookup\",le=\"+Inf\"} 1\n"));
        assert_non_null(strstr(text, "snapfs_request_duration_seconds_count{op=\"lookup\"} 1\n"));
        /* An operation never asked has no series. */
        assert_null(strstr(text, "op=\"read\""));
        assert_string_equal(text + strlen(text) - 6, "# EOF\n");
        free(text);
}

static void test_prometheus_text_names_the_sample_family_and_has_no_eof_or_unit(void **state)
{
        char *text;

        (void)state;
        sfs_metrics_event("publish", 0);
        text = render(SFS_METRICS_PROMETHEUS);
        assert_non_null(strstr(text, "# TYPE snapfs_publishes_total counter\n"
                                     "snapfs_publishes_total 1\n"));
        assert_null(strstr(text, "# EOF"));
        assert_null(strstr(text, "# UNIT"));
        /* No store, no store gauge. */
        assert_null(strstr(text, "snapfs_store_corrupt_blobs"));
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_a_request_lands_in_the_bucket_its_duration_reaches,
                                       reset),
                cmocka_unit_test_setup(
                        test_a_refusal_counts_by_errno_and_an_idempotent_publish_is_none, reset),
                cmocka_unit_test_setup(
                        test_openmetrics_names_counter_families_without_total_and_ends_with_eof,
                        reset),
                cmocka_unit_test_setup(
                        test_prometheus_text_names_the_sample_family_and_has_no_eof_or_unit,
                        reset),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
