/* SPDX-License-Identifier: MIT */
/* snapshot/oci-sign.c: keys, the signature envelope, sign and verify; each refusal beside the
 * same call with valid input. */
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

#include <json-c/json.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/x509.h>

#include "snapshot/oci.h"


/* The fields of an envelope as JSON values ("\"...\"" for a string); NULL leaves one out. */
struct parts {
        const char *digest, *size, *key, *sig;
};

struct fx {
        EVP_PKEY *key, *ec;
        struct snap_digest md;
        char *json; /* the envelope as signed: the key's signature of md, 8 bytes */
        size_t len;
        char digest[80], key_fp[80], sig[100];
        struct parts ok; /* the fields of json */
};

static int setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        struct snap_oci_envelope e;
        char text[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        unsigned char b64[89];

        assert_non_null(f);
        assert_int_equal(snap_oci_key_generate(&f->key), 0);
        f->ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        assert_non_null(f->ec);
        assert_int_equal(snap_sha256("manifest", 8, &f->md), 0);
        assert_int_equal(snap_oci_sign(f->key, &f->md, 8, &f->json, &f->len), 0);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
        snap_oci_digest_format(&e.manifest, text);
        snprintf(f->digest, sizeof(f->digest), "\"%s\"", text);
        snap_oci_digest_format(&e.key, text);
        snprintf(f->key_fp, sizeof(f->key_fp), "\"%s\"", text);
        assert_int_equal(EVP_EncodeBlock(b64, e.signature, 64), 88);
        snprintf(f->sig, sizeof(f->sig), "\"%s\"", b64);
        f->ok = (struct parts){ f->digest, "8", f->key_fp, f->sig };
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fx *f = *state;

        EVP_PKEY_free(f->key);
        EVP_PKEY_free(f->ec);
        free(f->json);
        free(f);
        return 0;
}

/* Parses the envelope made of p's fields: the parse's return. */
static int parse_parts(const struct parts *p, struct snap_oci_envelope *e)
{
        char buf[1024];
        int n;

        n = snprintf(buf, sizeof(buf),
                     "{\"mediaType\":\"%s\",\"algorithm\":\"ed25519\",\"manifest\":{%s%s%s%s%s}"
                     "%s%s%s%s}",
                     SNAP_OCI_MEDIA_SIGNATURE, p->digest ? "\"digest\":" : "",
                     p->digest ? p->digest : "", p->digest && p->size ? "," : "",
                     p->size ? "\"size\":" : "", p->size ? p->size : "",
                     p->key ? ",\"key\":" : "", p->key ? p->key : "",
                     p->sig ? ",\"signature\":" : "", p->sig ? p->sig : "");
        assert_true(n > 0 && (size_t)n < sizeof(buf));
        return snap_oci_envelope_parse(buf, (size_t)n, e);
}

static void test_key_generation_where_libcrypto_offers_no_ed25519_is_eio(void **state)
{
        OSSL_LIB_CTX *none = OSSL_LIB_CTX_new(), *prev;
        OSSL_PROVIDER *null_prov;
        EVP_PKEY *k = NULL;
        int r;

        (void)state;
        /* A library context whose only provider is the null one (as a FIPS-only configuration
         * without EdDSA would be), this thread's default for the one call. */
        assert_non_null(none);
        null_prov = OSSL_PROVIDER_load(none, "null");
        assert_non_null(null_prov);
        prev = OSSL_LIB_CTX_set0_default(none);
        r = snap_oci_key_generate(&k);
        OSSL_LIB_CTX_set0_default(prev);
        OSSL_PROVIDER_unload(null_prov);
        OSSL_LIB_CTX_free(none);
        assert_int_equal(r, -EIO);
        assert_null(k);

        assert_int_equal(snap_oci_key_generate(&k), 0);
        assert_int_equal(EVP_PKEY_get_id(k), EVP_PKEY_ED25519);
        EVP_PKEY_free(k);
}

static void test_private_pem_of_a_public_key_is_eio_and_its_public_pem_is_written(void **state)
{
        struct fx *f = *state;
        EVP_PKEY *pub = NULL;
        char *pem = NULL, *pem2 = NULL;
        size_t len, len2;

        assert_int_equal(snap_oci_key_to_pem(f->key, false, &pem, &len), 0);
        assert_int_equal(snap_oci_key_from_pem(pem, len, false, &pub), 0);
        assert_int_equal(snap_oci_key_to_pem(pub, true, &pem2, &len2), -EIO);
        assert_null(pem2);
        assert_int_equal(snap_oci_key_to_pem(pub, false, &pem2, &len2), 0);
        assert_int_equal(len2, len);
        assert_memory_equal(pem2, pem, len);
        free(pem2);
        assert_int_equal(snap_oci_key_to_pem(f->key, true, &pem2, &len2), 0);
        assert_non_null(strstr(pem2, "BEGIN PRIVATE KEY"));
        free(pem2);
        free(pem);
        EVP_PKEY_free(pub);
}

static void test_a_private_key_where_a_public_one_is_expected_is_ekeyrejected(void **state)
{
        struct fx *f = *state;
        EVP_PKEY *k = NULL;
        char *priv = NULL, *pub = NULL;
        size_t plen, qlen;

        assert_int_equal(snap_oci_key_to_pem(f->key, true, &priv, &plen), 0);
        assert_int_equal(snap_oci_key_to_pem(f->key, false, &pub, &qlen), 0);
        /* The secret, given to a verifier: refused by name, never used for its public half. */
        assert_int_equal(snap_oci_key_from_pem(priv, plen, false, &k), -EKEYREJECTED);
        assert_null(k);
        /* Its public half verifies; the private key still signs. */
        assert_int_equal(snap_oci_key_from_pem(pub, qlen, false, &k), 0);
        assert_true(EVP_PKEY_eq(k, f->key) == 1);
        EVP_PKEY_free(k);
        k = NULL;
        assert_int_equal(snap_oci_key_from_pem(priv, plen, true, &k), 0);
        EVP_PKEY_free(k);
        free(priv);
        free(pub);
}

static void test_pem_past_16k_or_absent_is_einval_and_the_same_key_padded_to_16k_loads(
        void **state)
{
        struct fx *f = *state;
        EVP_PKEY *k = NULL;
        char *pem = NULL, *big;
        size_t len;

        assert_int_equal(snap_oci_key_to_pem(f->key, false, &pem, &len), 0);
        /* The PEM followed by newlines, which a PEM reader skips. */
        big = malloc(SNAP_OCI_KEY_FILE_MAX + 1);
        assert_non_null(big);
        memset(big, '\n', SNAP_OCI_KEY_FILE_MAX + 1);
        memcpy(big, pem, len);
        assert_int_equal(snap_oci_key_from_pem(big, SNAP_OCI_KEY_FILE_MAX + 1, false, &k), -EINVAL);
        assert_null(k);
        assert_int_equal(snap_oci_key_from_pem(NULL, len, false, &k), -EINVAL);
        assert_null(k);
        assert_int_equal(snap_oci_key_from_pem(big, SNAP_OCI_KEY_FILE_MAX, false, &k), 0);
        assert_true(EVP_PKEY_eq(k, f->key) == 1);
        EVP_PKEY_free(k);
        free(big);
        free(pem);
}

static void test_fingerprint_of_an_ed25519_key_object_holding_no_key_is_eio(void **state)
{
        struct fx *f = *state;
        EVP_PKEY *empty = EVP_PKEY_new();
        struct snap_digest fp, want;
        unsigned char *der = NULL;
        int n;

        /* Of the Ed25519 type, so the type checks pass, but with no key in it. */
        assert_non_null(empty);
        assert_int_equal(EVP_PKEY_set_type(empty, EVP_PKEY_ED25519), 1);
        assert_int_equal(snap_oci_key_fingerprint(empty, &fp), -EIO);
        EVP_PKEY_free(empty);

        /* A real key's fingerprint: the SHA-256 of its DER SubjectPublicKeyInfo. */
        assert_int_equal(snap_oci_key_fingerprint(f->key, &fp), 0);
        n = i2d_PUBKEY(f->key, &der);
        assert_true(n > 0);
        assert_int_equal(snap_sha256(der, (size_t)n, &want), 0);
        assert_memory_equal(fp.bytes, want.bytes, sizeof(want.bytes));
        OPENSSL_free(der);
}

static void test_signing_with_a_non_ed25519_key_or_nowhere_to_put_it_is_einval(void **state)
{
        struct fx *f = *state;
        char *json = NULL;
        size_t len;

        assert_int_equal(snap_oci_sign(f->ec, &f->md, 8, &json, &len), -EINVAL);
        assert_int_equal(snap_oci_sign(NULL, &f->md, 8, &json, &len), -EINVAL);
        assert_int_equal(snap_oci_sign(f->key, NULL, 8, &json, &len), -EINVAL);
        assert_int_equal(snap_oci_sign(f->key, &f->md, 8, NULL, &len), -EINVAL);
        assert_int_equal(snap_oci_sign(f->key, &f->md, 8, &json, NULL), -EINVAL);
        assert_null(json);
        assert_int_equal(snap_oci_sign(f->key, &f->md, 8, &json, &len), 0);
        assert_int_equal(len, f->len);
        assert_memory_equal(json, f->json, len);
        free(json);
}

static void test_envelope_parse_without_buffer_or_output_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;

        assert_int_equal(snap_oci_envelope_parse(NULL, f->len, &e), -EINVAL);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, NULL), -EINVAL);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
}

static void test_envelope_past_4096_bytes_is_efbig_and_the_signed_envelope_parses(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        char *buf = malloc(SNAP_OCI_ENVELOPE_MAX + 1);

        /* The signed envelope followed by spaces: refused for its length before any parse. */
        assert_non_null(buf);
        memset(buf, ' ', SNAP_OCI_ENVELOPE_MAX + 1);
        memcpy(buf, f->json, f->len);
        assert_int_equal(snap_oci_envelope_parse(buf, SNAP_OCI_ENVELOPE_MAX + 1, &e), -EFBIG);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
        assert_int_equal(snap_oci_envelope_verify(&e, f->key), 0);
        free(buf);
}

/* The envelope as signed, with text spliced in at offset at (replacing drop bytes). */
static char *splice(const struct fx *f, size_t at, size_t drop, const char *text, size_t *len)
{
        size_t n = strlen(text);
        char *out = malloc(f->len - drop + n + 1);

        assert_non_null(out);
        assert_true(at + drop <= f->len);
        memcpy(out, f->json, at);
        memcpy(out + at, text, n);
        memcpy(out + at + n, f->json + at + drop, f->len - at - drop);
        *len = f->len - drop + n;
        out[*len] = '\0';
        return out;
}

static void test_a_genuine_envelope_with_a_key_added_is_einval_and_as_signed_it_verifies(
        void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        size_t len;
        /* The attack: a signature (they travel publicly) carrying a config of the attacker's
         * beside its fields; the signature over the manifest digest still verifies. */
        char *bad = splice(f, f->len - 1, 0,
                           ",\"mcpServers\":{\"x\":{\"command\":\"/tmp/evil\"}}", &len);

        assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
        free(bad);
        bad = splice(f, 1, 0, "\"mcpServers\":{},", &len);
        assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
        free(bad);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
        assert_int_equal(snap_oci_envelope_verify(&e, f->key), 0);
}

static void test_an_envelope_with_whitespace_is_einval_and_without_it_parses(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        const char *ws[] = { " ", "\n", "\t", "\r" };
        size_t len;

        for (size_t i = 0; i < 4; i++) {
                char *bad = splice(f, 0, 0, ws[i], &len);
                assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
                free(bad);
                bad = splice(f, f->len, 0, ws[i], &len);
                assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
                free(bad);
                /* After the first colon. */
                bad = splice(f, 13, 0, ws[i], &len);
                assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
                free(bad);
        }
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
}

static void test_an_envelope_with_a_duplicate_key_is_einval_and_with_each_once_parses(
        void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        char text[128];
        size_t len;
        char *bad;

        /* "key" twice, the second one the same: the JSON reader keeps one of them. */
        snprintf(text, sizeof(text), ",\"key\":%s", f->key_fp);
        bad = splice(f, f->len - 1, 0, text, &len);
        assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
        free(bad);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
}

static void test_an_envelope_with_its_keys_reordered_is_einval_and_in_order_parses(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        char buf[1024];
        int n;

        n = snprintf(buf, sizeof(buf),
                     "{\"algorithm\":\"ed25519\",\"mediaType\":\"%s\",\"manifest\":{\"digest\":%s,"
                     "\"size\":8},\"key\":%s,\"signature\":%s}",
                     SNAP_OCI_MEDIA_SIGNATURE, f->digest, f->key_fp, f->sig);
        assert_true(n > 0 && (size_t)n < sizeof(buf));
        assert_int_equal(snap_oci_envelope_parse(buf, (size_t)n, &e), -EINVAL);
        n = snprintf(buf, sizeof(buf),
                     "{\"mediaType\":\"%s\",\"algorithm\":\"ed25519\",\"manifest\":{\"size\":8,"
                     "\"digest\":%s},\"key\":%s,\"signature\":%s}",
                     SNAP_OCI_MEDIA_SIGNATURE, f->digest, f->key_fp, f->sig);
        assert_int_equal(snap_oci_envelope_parse(buf, (size_t)n, &e), -EINVAL);
        assert_int_equal(parse_parts(&f->ok, &e), 0);
}

static void test_an_envelope_spelling_a_character_as_an_escape_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        size_t len;
        /* "algorithm":"ed25519" with its e as \u0065, and the media type's / as \/: the
         * same values to a JSON reader, other bytes. */
        const char *alg = strstr(f->json, "ed25519");
        const char *slash = strchr(f->json, '/');
        char *bad;

        assert_non_null(alg);
        assert_non_null(slash);
        bad = splice(f, (size_t)(alg - f->json), 1, "\\u0065", &len);
        assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
        free(bad);
        bad = splice(f, (size_t)(slash - f->json), 1, "\\/", &len);
        assert_int_equal(snap_oci_envelope_parse(bad, len, &e), -EINVAL);
        free(bad);
        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
}

static void test_an_envelope_size_with_a_leading_zero_is_einval_and_without_parses(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        struct parts p = f->ok;

        p.size = "08";
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        p.size = "8e0";
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        assert_int_equal(parse_parts(&f->ok, &e), 0);
        assert_int_equal(e.manifest_size, 8);
}

/* The envelope exactly as json-c wrote it before the encoding was spelled out: what export
 * signed then parses now. */
static void test_an_envelope_as_json_c_writes_it_is_the_canonical_encoding(void **state)
{
        struct fx *f = *state;
        json_object *root = json_object_new_object(), *m = json_object_new_object();
        struct snap_oci_envelope e;
        char md[SNAP_OCI_DIGEST_TEXT_LEN + 1], kd[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        char text[SNAP_OCI_ENVELOPE_TEXT_MAX];
        unsigned char b64[89];
        const char *old;
        size_t n;

        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
        snap_oci_digest_format(&e.manifest, md);
        snap_oci_digest_format(&e.key, kd);
        EVP_EncodeBlock(b64, e.signature, 64);
        json_object_object_add(root, "mediaType", json_object_new_string(SNAP_OCI_MEDIA_SIGNATURE));
        json_object_object_add(root, "algorithm", json_object_new_string("ed25519"));
        json_object_object_add(root, "manifest", m);
        json_object_object_add(m, "digest", json_object_new_string(md));
        json_object_object_add(m, "size", json_object_new_int64(8));
        json_object_object_add(root, "key", json_object_new_string(kd));
        json_object_object_add(root, "signature", json_object_new_string((char *)b64));
        old = json_object_to_json_string_length(
                root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        assert_int_equal(n, f->len);
        assert_memory_equal(old, f->json, n);
        assert_int_equal(snap_oci_envelope_encode(&e, text, sizeof(text)), (int)f->len);
        assert_memory_equal(text, f->json, f->len);
        /* A buffer one byte short of the text and its NUL. */
        assert_int_equal(snap_oci_envelope_encode(&e, text, f->len), -ENOBUFS);
        assert_int_equal(snap_oci_envelope_encode(NULL, text, sizeof(text)), -EINVAL);
        json_object_put(root);
}

static void test_envelope_manifest_digest_missing_or_malformed_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        struct parts p = f->ok;
        char bad[80];

        p.digest = NULL;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        p.digest = "7";
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        /* One hex digit short. */
        snprintf(bad, sizeof(bad), "%.71s\"", f->digest);
        p.digest = bad;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        assert_int_equal(parse_parts(&f->ok, &e), 0);
        assert_memory_equal(e.manifest.bytes, f->md.bytes, sizeof(f->md.bytes));
}

static void test_envelope_manifest_size_missing_or_not_an_integer_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        struct parts p = f->ok;

        p.size = NULL;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        p.size = "\"8\"";
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        p.size = "8.0";
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        assert_int_equal(parse_parts(&f->ok, &e), 0);
        assert_int_equal(e.manifest_size, 8);
}

static void test_envelope_manifest_size_negative_or_past_4mib_is_einval_and_4mib_parses(
        void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        struct parts p = f->ok;
        char size[32];

        p.size = "-1";
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        snprintf(size, sizeof(size), "%" PRIu64, SNAP_OCI_DOC_MAX + 1);
        p.size = size;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        snprintf(size, sizeof(size), "%" PRIu64, SNAP_OCI_DOC_MAX);
        assert_int_equal(parse_parts(&p, &e), 0);
        assert_int_equal(e.manifest_size, SNAP_OCI_DOC_MAX);
        p.size = "0";
        assert_int_equal(parse_parts(&p, &e), 0);
        assert_int_equal(e.manifest_size, 0);
}

static void test_envelope_key_missing_or_malformed_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        struct parts p = f->ok;
        char bad[80];

        p.key = NULL;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        /* The fingerprint spelled with an algorithm other than sha256. */
        snprintf(bad, sizeof(bad), "\"sha512%s", f->key_fp + 7);
        p.key = bad;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        assert_int_equal(parse_parts(&f->ok, &e), 0);
        assert_int_equal(snap_oci_envelope_verify(&e, f->key), 0);
}

static void test_envelope_signature_missing_short_or_not_base64_is_einval(void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;
        struct parts p = f->ok;
        char bad[100];

        p.sig = NULL;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        /* 84 characters: a well-formed base64 text of 63 bytes. */
        snprintf(bad, sizeof(bad), "%.85s\"", f->sig);
        p.sig = bad;
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        /* 88 characters, the first no base64 digit. */
        snprintf(bad, sizeof(bad), "\"!%s", f->sig + 2);
        assert_int_equal(strlen(bad), strlen(f->sig));
        assert_int_equal(parse_parts(&p, &e), -EINVAL);
        assert_int_equal(parse_parts(&f->ok, &e), 0);
        assert_int_equal(snap_oci_envelope_verify(&e, f->key), 0);
}

static void test_verify_against_a_non_ed25519_key_or_nothing_is_einval_and_its_own_key_verifies(
        void **state)
{
        struct fx *f = *state;
        struct snap_oci_envelope e;

        assert_int_equal(snap_oci_envelope_parse(f->json, f->len, &e), 0);
        assert_int_equal(snap_oci_envelope_verify(&e, f->ec), -EINVAL);
        assert_int_equal(snap_oci_envelope_verify(&e, NULL), -EINVAL);
        assert_int_equal(snap_oci_envelope_verify(NULL, f->key), -EINVAL);
        assert_int_equal(snap_oci_envelope_verify(&e, f->key), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(test_key_generation_where_libcrypto_offers_no_ed25519_is_eio),
                T(test_private_pem_of_a_public_key_is_eio_and_its_public_pem_is_written),
                T(test_pem_past_16k_or_absent_is_einval_and_the_same_key_padded_to_16k_loads),
                T(test_a_private_key_where_a_public_one_is_expected_is_ekeyrejected),
                T(test_fingerprint_of_an_ed25519_key_object_holding_no_key_is_eio),
                T(test_signing_with_a_non_ed25519_key_or_nowhere_to_put_it_is_einval),
                T(test_envelope_parse_without_buffer_or_output_is_einval),
                T(test_envelope_past_4096_bytes_is_efbig_and_the_signed_envelope_parses),
                T(test_a_genuine_envelope_with_a_key_added_is_einval_and_as_signed_it_verifies),
                T(test_an_envelope_with_whitespace_is_einval_and_without_it_parses),
                T(test_an_envelope_with_a_duplicate_key_is_einval_and_with_each_once_parses),
                T(test_an_envelope_with_its_keys_reordered_is_einval_and_in_order_parses),
                T(test_an_envelope_spelling_a_character_as_an_escape_is_einval),
                T(test_an_envelope_size_with_a_leading_zero_is_einval_and_without_parses),
                T(test_an_envelope_as_json_c_writes_it_is_the_canonical_encoding),
                T(test_envelope_manifest_digest_missing_or_malformed_is_einval),
                T(test_envelope_manifest_size_missing_or_not_an_integer_is_einval),
                T(test_envelope_manifest_size_negative_or_past_4mib_is_einval_and_4mib_parses),
                T(test_envelope_key_missing_or_malformed_is_einval),
                T(test_envelope_signature_missing_short_or_not_base64_is_einval),
                T(test_verify_against_a_non_ed25519_key_or_nothing_is_einval_and_its_own_key_verifies),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
