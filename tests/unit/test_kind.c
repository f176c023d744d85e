/* SPDX-License-Identifier: MIT */
/* snapshot/kind.c: which snapshots are content, signature envelopes or manifests; each kind
 * beside the near miss that is content. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "snapshot/kind.h"
#include "snapshot/oci.h"

static const char config[] =
        "{\"mcpServers\":{\"fs\":{\"command\":\"npx\",\"args\":[\"server-filesystem\"]}}}";

/* A genuine envelope, signed now: *json (malloc'd), *len. */
static void sign_something(char **json, size_t *len)
{
        EVP_PKEY *key = NULL;
        struct snap_digest md;

        assert_int_equal(snap_oci_key_generate(&key), 0);
        assert_int_equal(snap_sha256("manifest", 8, &md), 0);
        assert_int_equal(snap_oci_sign(key, &md, 8, json, len), 0);
        EVP_PKEY_free(key);
}

static void test_a_config_and_binary_bytes_are_content(void **state)
{
        static const uint8_t binary[] = { 0x7f, 'E', 'L', 'F', 0, 1, 2 };
        (void)state;

        assert_int_equal(snap_kind_of(config, strlen(config)), SNAP_KIND_CONTENT);
        assert_int_equal(snap_kind_of(binary, sizeof(binary)), SNAP_KIND_CONTENT);
        assert_int_equal(snap_kind_of("", 0), SNAP_KIND_CONTENT);
        assert_int_equal(snap_kind_of("  [1, 2]", 8), SNAP_KIND_CONTENT);
}

static void test_a_signed_envelope_is_a_signature_and_with_a_key_added_it_is_content(
        void **state)
{
        char *json, *bad;
        size_t len;
        (void)state;

        sign_something(&json, &len);
        assert_int_equal(snap_kind_of(json, len), SNAP_KIND_SIGNATURE);
        /* The attack of a signature carrying a config: no signature anywhere, so content,
         * which only a publisher trusted for any content can have published. */
        bad = malloc(len + sizeof(",\"mcpServers\":{}"));
        assert_non_null(bad);
        memcpy(bad, json, len - 1);
        strcpy(bad + len - 1, ",\"mcpServers\":{}}");
        assert_int_equal(snap_kind_of(bad, strlen(bad)), SNAP_KIND_CONTENT);
        free(bad);
        free(json);
}

static void test_an_oci_manifest_is_a_manifest_and_one_without_layers_is_content(void **state)
{
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        struct snap_oci_desc layer = { .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                       .size = 3 };
        static const char no_layers[] =
                "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"a/b\",\"digest\":"
                "\"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\","
                "\"size\":2}}";
        char *json, *spaced;
        size_t len;
        (void)state;

        snap_oci_desc_empty_config(&m.config);
        assert_int_equal(snap_sha256("abc", 3, &layer.digest), 0);
        m.n_layers = 1;
        m.layers = &layer;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_int_equal(snap_kind_of(json, len), SNAP_KIND_MANIFEST);
        /* Whitespace around it changes nothing: the JSON reader is what decides. */
        assert_true(asprintf(&spaced, " \n%s\n", json) > 0);
        assert_int_equal(snap_kind_of(spaced, strlen(spaced)), SNAP_KIND_MANIFEST);
        assert_int_equal(snap_kind_of(no_layers, strlen(no_layers)), SNAP_KIND_CONTENT);
        free(spaced);
        free(json);
}

static void test_content_past_the_scan_limit_is_content_unread_and_a_null_buffer_below_is_einval(
        void **state)
{
        (void)state;
        assert_int_equal(snap_kind_of(NULL, SNAP_KIND_SCAN_MAX + 1), SNAP_KIND_CONTENT);
        assert_int_equal(snap_kind_of(NULL, SNAP_KIND_SCAN_MAX), -EINVAL);
        assert_int_equal(snap_kind_of(NULL, 0), -EINVAL);
}

static void test_kind_names_round_trip_and_others_are_einval(void **state)
{
        (void)state;
        for (int k = 0; k < SNAP_KIND_COUNT; k++)
                assert_int_equal(snap_kind_from_name(snap_kind_name(k)), k);
        assert_string_equal(snap_kind_name(SNAP_KIND_SIGNATURE), "signature");
        assert_null(snap_kind_name(SNAP_KIND_COUNT));
        assert_null(snap_kind_name(-1));
        assert_int_equal(snap_kind_from_name("Signature"), -EINVAL);
        assert_int_equal(snap_kind_from_name("envelope"), -EINVAL);
        assert_int_equal(snap_kind_from_name(NULL), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_config_and_binary_bytes_are_content),
                cmocka_unit_test(test_a_signed_envelope_is_a_signature_and_with_a_key_added_it_is_content),
                cmocka_unit_test(test_an_oci_manifest_is_a_manifest_and_one_without_layers_is_content),
                cmocka_unit_test(test_content_past_the_scan_limit_is_content_unread_and_a_null_buffer_below_is_einval),
                cmocka_unit_test(test_kind_names_round_trip_and_others_are_einval),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
