/* SPDX-License-Identifier: MIT */
/* snapshot/trust.c: what a --trust-key daemon admits and refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "snapshot/oci.h"
#include "snapshot/trust.h"

struct fx {
        struct snap_trust *t;
        EVP_PKEY *key, *other;
        char *manifest;  /* a manifest of two layers, "layer-a" and "layer-b" */
        size_t manifest_len;
        struct snap_digest md;
};

static const char *const layer_text[2] = { "layer-a", "layer-b" };

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        struct snap_oci_desc layers[2];

        assert_non_null(f);
        assert_int_equal(snap_trust_new(&f->t), 0);
        assert_int_equal(snap_oci_key_generate(&f->key), 0);
        assert_int_equal(snap_oci_key_generate(&f->other), 0);
        assert_int_equal(snap_trust_add_key(f->t, f->key), 0);
        assert_int_equal(snap_trust_n_keys(f->t), 1);
        snap_oci_desc_empty_config(&m.config);
        for (int i = 0; i < 2; i++) {
                layers[i] = (struct snap_oci_desc){ .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                                    .size = strlen(layer_text[i]) };
                assert_int_equal(snap_sha256(layer_text[i], layers[i].size, &layers[i].digest), 0);
        }
        m.layers = layers;
        m.n_layers = 2;
        assert_int_equal(snap_oci_manifest_build(&m, &f->manifest, &f->manifest_len), 0);
        assert_int_equal(snap_sha256(f->manifest, f->manifest_len, &f->md), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        snap_trust_free(f->t);
        EVP_PKEY_free(f->key);
        EVP_PKEY_free(f->other);
        free(f->manifest);
        free(f);
        return 0;
}

/* Publishes data through the trust check: its return, with *reason. */
static int admit(struct fx *f, const void *data, size_t len, const char **reason)
{
        struct snap_digest d;

        assert_int_equal(snap_sha256(data, len, &d), 0);
        return snap_trust_admit(f->t, &d, data, len, reason);
}

static int admit_text(struct fx *f, const char *s, const char **reason)
{
        return admit(f, s, strlen(s), reason);
}

static void sign(EVP_PKEY *key, const struct snap_digest *d, uint64_t size,
                 char **env, size_t *len)
{
        assert_int_equal(snap_oci_sign(key, d, size, env, len), 0);
}

static void test_signed_chain_admits_envelope_then_manifest_then_layers(void **state)
{
        struct fx *f = *state;
        const char *why;
        char *env;
        size_t len;

        /* Refused before the chain: the layer, and the manifest itself. */
        assert_int_equal(admit_text(f, layer_text[0], &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_NOT_ADMITTED);
        assert_int_equal(admit(f, f->manifest, f->manifest_len, &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_NOT_ADMITTED);

        sign(f->key, &f->md, f->manifest_len, &env, &len);
        assert_int_equal(admit(f, env, len, &why), 0);
        /* The layers wait for the manifest. */
        assert_int_equal(admit_text(f, layer_text[0], &why), -EPERM);
        assert_true(snap_trust_admits(f->t, &f->md, f->manifest_len));
        assert_false(snap_trust_admits(f->t, &f->md, f->manifest_len + 1));
        assert_int_equal(admit(f, f->manifest, f->manifest_len, &why), 0);
        assert_int_equal(admit_text(f, layer_text[0], &why), 0);
        assert_int_equal(admit_text(f, layer_text[1], &why), 0);
        /* Something in no manifest stays refused. */
        assert_int_equal(admit_text(f, "layer-c", &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_NOT_ADMITTED);
        free(env);
}

static void test_envelope_of_untrusted_key_or_bad_signature_is_refused(void **state)
{
        struct fx *f = *state;
        const char *why;
        char *env, *p, orig;
        size_t len;

        sign(f->other, &f->md, f->manifest_len, &env, &len);
        assert_int_equal(admit(f, env, len, &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_UNTRUSTED_KEY);
        assert_int_equal(admit(f, f->manifest, f->manifest_len, &why), -EPERM);
        free(env);

        /* Signed by the trusted key, one character of the signature changed. */
        sign(f->key, &f->md, f->manifest_len, &env, &len);
        p = strstr(env, "\"signature\":\"") + 13;
        orig = *p;
        *p = orig == 'A' ? 'B' : 'A';
        assert_int_equal(admit(f, env, len, &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_BAD_SIGNATURE);
        *p = orig;
        /* The accepted twin: the envelope as signed. */
        assert_int_equal(admit(f, env, len, &why), 0);
        free(env);
}

static void test_signed_digest_that_is_no_manifest_is_refused(void **state)
{
        struct fx *f = *state;
        static const char junk[] = "not a manifest";
        struct snap_digest d;
        const char *why;
        char *env;
        size_t len;

        assert_int_equal(snap_sha256(junk, strlen(junk), &d), 0);
        sign(f->key, &d, strlen(junk), &env, &len);
        assert_int_equal(admit(f, env, len, &why), 0);
        assert_int_equal(admit_text(f, junk, &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_BAD_MANIFEST);
        free(env);
}

static void test_a_trusted_envelope_with_a_key_added_is_refused_and_as_signed_admitted(
        void **state)
{
        struct fx *f = *state;
        const char *why;
        char *env, *bad;
        size_t len;

        sign(f->key, &f->md, f->manifest_len, &env, &len);
        /* The attack: the envelope still signs the manifest, and now carries a config. */
        assert_true(asprintf(&bad, "%.*s,\"mcpServers\":{\"x\":{\"command\":\"sh\"}}}",
                             (int)len - 1, env) > 0);
        assert_int_equal(admit_text(f, bad, &why), -EPERM);
        assert_string_equal(why, SNAP_TRUST_NOT_ADMITTED);
        assert_false(snap_trust_admits(f->t, &f->md, f->manifest_len));
        assert_int_equal(admit(f, env, len, &why), 0);
        assert_true(snap_trust_admits(f->t, &f->md, f->manifest_len));
        free(bad);
        free(env);
}

static void test_admitted_as_a_manifest_and_as_a_layer_are_told_apart(void **state)
{
        struct fx *f = *state;
        struct snap_digest d;
        const char *why;
        char *env;
        size_t len;

        sign(f->key, &f->md, f->manifest_len, &env, &len);
        assert_int_equal(admit(f, env, len, &why), 0);
        assert_true(snap_trust_admits_manifest(f->t, &f->md, f->manifest_len));
        assert_false(snap_trust_admits_layer(f->t, &f->md, f->manifest_len));
        assert_int_equal(admit(f, f->manifest, f->manifest_len, &why), 0);
        assert_int_equal(snap_sha256(layer_text[0], strlen(layer_text[0]), &d), 0);
        assert_true(snap_trust_admits_layer(f->t, &d, strlen(layer_text[0])));
        assert_false(snap_trust_admits_manifest(f->t, &d, strlen(layer_text[0])));
        assert_false(snap_trust_admits_layer(f->t, &d, strlen(layer_text[0]) + 1));
        assert_false(snap_trust_admits_layer(NULL, &d, strlen(layer_text[0])));
        free(env);
}

static void test_non_ed25519_key_is_not_trusted(void **state)
{
        struct fx *f = *state;
        EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");

        assert_non_null(ec);
        assert_int_equal(snap_trust_add_key(f->t, ec), -EINVAL);
        assert_int_equal(snap_trust_n_keys(f->t), 1);
        EVP_PKEY_free(ec);
}

static void test_admit_without_table_digest_or_data_of_its_length_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_digest d;
        const char *why;
        char *env;
        size_t len;

        sign(f->key, &f->md, f->manifest_len, &env, &len);
        assert_int_equal(snap_sha256(env, len, &d), 0);
        assert_int_equal(snap_trust_admit(NULL, &d, env, len, &why), -EINVAL);
        assert_int_equal(snap_trust_admit(f->t, NULL, env, len, &why), -EINVAL);
        assert_int_equal(snap_trust_admit(f->t, &d, NULL, len, &why), -EINVAL);
        assert_false(snap_trust_admits(f->t, &f->md, f->manifest_len));
        assert_int_equal(snap_trust_admit(f->t, &d, env, len, &why), 0);
        assert_true(snap_trust_admits(f->t, &f->md, f->manifest_len));
        free(env);
}

/* Layers per manifest when filling the table, and the table's limit in this test: three
 * rounds of a manifest and its layers fill all but two entries. */
#define FILL_LAYERS 8u
#define FILL_MAX (3u * (1u + FILL_LAYERS) + 2u)

/* Signs and publishes a manifest of n layers, "fill-<first>" on: the return of publishing the
 * manifest (its envelope must be admitted). */
static int publish_layers(struct fx *f, struct snap_oci_desc *layers, uint32_t first, uint32_t n,
                          const char **why)
{
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        struct snap_digest md;
        char text[32], *json, *env;
        size_t len, elen;
        int r;

        snap_oci_desc_empty_config(&m.config);
        for (uint32_t i = 0; i < n; i++) {
                snprintf(text, sizeof(text), "fill-%" PRIu32, first + i);
                layers[i] = (struct snap_oci_desc){ .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                                    .size = strlen(text) };
                assert_int_equal(snap_sha256(text, layers[i].size, &layers[i].digest), 0);
        }
        m.layers = layers;
        m.n_layers = n;
        assert_int_equal(snap_oci_manifest_build(&m, &json, &len), 0);
        assert_int_equal(snap_sha256(json, len, &md), 0);
        sign(f->key, &md, len, &env, &elen);
        assert_int_equal(admit(f, env, elen, why), 0);
        r = admit(f, json, len, why);
        free(env);
        free(json);
        return r;
}

static void test_full_table_is_enospc_and_what_it_holds_stays_admitted(void **state)
{
        struct fx *f = *state;
        struct snap_oci_desc layers[FILL_LAYERS];
        uint32_t used = 0, n;
        const char *why;
        char *env;
        size_t len;

        /* The same code path as at SNAP_TRUST_MAX_ENTRIES, reached in a few admissions. */
        snap_trust_set_max_entries(f->t, FILL_MAX);
        /* Each round is one manifest and its layers; the last round fills the table to the
         * last entry. */
        while (used + 1 + FILL_LAYERS <= FILL_MAX) {
                assert_int_equal(publish_layers(f, layers, used, FILL_LAYERS, &why), 0);
                used += 1 + FILL_LAYERS;
        }
        n = FILL_MAX - used - 1;
        assert_true(n > 0 && n < FILL_LAYERS);
        /* One layer more than fits: the manifest is refused at its last layer. */
        assert_int_equal(publish_layers(f, layers, used, n + 1, &why), -ENOSPC);
        assert_string_equal(why, SNAP_TRUST_FULL);
        assert_true(snap_trust_admits(f->t, &layers[n - 1].digest, layers[n - 1].size));
        assert_false(snap_trust_admits(f->t, &layers[n].digest, layers[n].size));

        /* A new envelope is refused too; the layers admitted stay so. */
        sign(f->key, &f->md, f->manifest_len, &env, &len);
        assert_int_equal(admit(f, env, len, &why), -ENOSPC);
        assert_string_equal(why, SNAP_TRUST_FULL);
        assert_false(snap_trust_admits(f->t, &f->md, f->manifest_len));
        assert_int_equal(admit_text(f, "fill-0", &why), 0);
        free(env);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_signed_chain_admits_envelope_then_manifest_then_layers),
                T(test_envelope_of_untrusted_key_or_bad_signature_is_refused),
                T(test_signed_digest_that_is_no_manifest_is_refused),
                T(test_a_trusted_envelope_with_a_key_added_is_refused_and_as_signed_admitted),
                T(test_admitted_as_a_manifest_and_as_a_layer_are_told_apart),
                T(test_non_ed25519_key_is_not_trusted),
                T(test_admit_without_table_digest_or_data_of_its_length_is_einval),
                T(test_full_table_is_enospc_and_what_it_holds_stays_admitted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
