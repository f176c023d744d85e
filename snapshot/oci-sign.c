/* SPDX-License-Identifier: MIT */
/* Ed25519 signatures over manifest digests: keys, the signature envelope, sign and verify. */
#include "snapshot/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "snapshot/oci-json.h"
#include "snapshot/safeopen.h"
#include "common/json.h"
#include "common/util.h"

#define ALGORITHM "ed25519"
#define SIG_LEN 64
#define SIG_B64_LEN 88 /* 4 * ceil(64 / 3) */
#define MESSAGE_MAX 128

static void pkeyp(EVP_PKEY **k)
{
        EVP_PKEY_free(*k);
}

static void biop(BIO **b)
{
        BIO_free(*b);
}

static void mdctxp(EVP_MD_CTX **c)
{
        EVP_MD_CTX_free(*c);
}

/* The signed bytes. A fixed prefix keeps a signature made here from ever being read as a
 * signature over something else made with the same key. */
static size_t message(const struct snap_digest *d, uint64_t size, char out[MESSAGE_MAX])
{
        char text[SNAP_OCI_DIGEST_TEXT_LEN + 1];

        snap_oci_digest_format(d, text);
        return (size_t)snprintf(out, MESSAGE_MAX, "snapfs-signature-v1\n%s\n%" PRIu64 "\n", text,
                                size);
}

int snap_oci_key_generate(EVP_PKEY **out)
{
        EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

        if (!k) {
                ERR_clear_error();
                return -EIO;
        }
        *out = k;
        return 0;
}

int snap_oci_key_to_pem(EVP_PKEY *key, bool private_key, char **pem, size_t *len)
{
        _cleanup_(biop) BIO *b = BIO_new(BIO_s_mem());
        char *data;
        long n;
        int ok;

        if (!b)
                return -ENOMEM;
        ok = private_key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
                         : PEM_write_bio_PUBKEY(b, key);
        if (!ok) {
                ERR_clear_error();
                return -EIO;
        }
        n = BIO_get_mem_data(b, &data);
        if (n <= 0)
                return -EIO;
        *pem = strndup(data, (size_t)n);
        if (!*pem)
                return -ENOMEM;
        *len = (size_t)n;
        return 0;
}

/* Never prompt: a key file with a passphrase is refused, not asked about on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
        (void)buf, (void)size, (void)rwflag, (void)u;
        return -1;
}

int snap_oci_key_from_pem(const void *pem, size_t len, bool want_private, EVP_PKEY **out)
{
        _cleanup_(pkeyp) EVP_PKEY *k = NULL;
        _cleanup_(biop) BIO *b = NULL;

        if (!pem || len > SNAP_OCI_KEY_FILE_MAX)
                return -EINVAL;
        b = BIO_new_mem_buf(pem, (int)len);
        if (!b)
                return -ENOMEM;
        if (!want_private)
                k = PEM_read_bio_PUBKEY(b, NULL, no_passphrase, NULL);
        if (!k) {
                if (BIO_reset(b) != 1)
                        return -EIO;
                k = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
                /* A private key where a public one is expected is refused by name, not used
                 * for its public half: a verifier never needs the secret, and one that was
                 * handed it (a --trust-key or --verify-key copied from the signing host)
                 * holds a key that can sign whatever it likes. */
                if (k && !want_private) {
                        ERR_clear_error();
                        return -EKEYREJECTED;
                }
        }
        ERR_clear_error();
        if (!k || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519)
                return -EINVAL;
        *out = TAKE_PTR(k);
        return 0;
}

int snap_oci_key_load(const char *path, bool want_private, EVP_PKEY **out)
{
        _cleanup_free_ void *buf = NULL;
        size_t len;
        int r;

        r = snap_read_untrusted(AT_FDCWD, path, SNAP_OCI_KEY_FILE_MAX, &buf, &len);
        if (r < 0)
                return r == -EFBIG ? -EINVAL : r;
        r = snap_oci_key_from_pem(buf, len, want_private, out);
        /* The private key's bytes do not outlive the parse. */
        OPENSSL_cleanse(buf, len);
        return r;
}

int snap_oci_key_fingerprint(EVP_PKEY *key, struct snap_digest *out)
{
        unsigned char *der = NULL;
        int n, r;

        n = i2d_PUBKEY(key, &der);
        if (n <= 0) {
                ERR_clear_error();
                return -EIO;
        }
        r = snap_sha256(der, (size_t)n, out);
        OPENSSL_free(der);
        return r;
}

int snap_oci_envelope_encode(const struct snap_oci_envelope *e, char *out, size_t outlen)
{
        char mdigest[SNAP_OCI_DIGEST_TEXT_LEN + 1], kdigest[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        char b64[SIG_B64_LEN + 1];
        int n;

        if (!e || !out)
                return -EINVAL;
        EVP_EncodeBlock((unsigned char *)b64, e->signature, SIG_LEN);
        snap_oci_digest_format(&e->manifest, mdigest);
        snap_oci_digest_format(&e->key, kdigest);
        /* No whitespace, these keys in this order, no escapes (no field holds a character
         * JSON would escape: hex digits, base64, a media type), the size in decimal without
         * leading zeros: one text per envelope. */
        n = snprintf(out, outlen,
                     "{\"mediaType\":\"" SNAP_OCI_MEDIA_SIGNATURE "\",\"algorithm\":\"" ALGORITHM
                     "\",\"manifest\":{\"digest\":\"%s\",\"size\":%" PRIu64 "},\"key\":\"%s\","
                     "\"signature\":\"%s\"}",
                     mdigest, e->manifest_size, kdigest, b64);
        if (n < 0 || (size_t)n >= outlen)
                return -ENOBUFS;
        return n;
}

int snap_oci_sign(EVP_PKEY *key, const struct snap_digest *manifest, uint64_t size, char **json,
                  size_t *len)
{
        char msg[MESSAGE_MAX], text[SNAP_OCI_ENVELOPE_TEXT_MAX];
        _cleanup_(mdctxp) EVP_MD_CTX *ctx = NULL;
        struct snap_oci_envelope e = { .manifest_size = size };
        size_t siglen = SIG_LEN, n;
        int r;

        if (!key || !manifest || !json || !len || EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
                return -EINVAL;
        r = snap_oci_key_fingerprint(key, &e.key);
        if (r < 0)
                return r;
        e.manifest = *manifest;
        n = message(manifest, size, msg);
        ctx = EVP_MD_CTX_new();
        if (!ctx)
                return -ENOMEM;
        /* Ed25519 hashes internally: no digest is named (NULL), and the message goes in one
         * call. */
        if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) != 1 ||
            EVP_DigestSign(ctx, e.signature, &siglen, (const unsigned char *)msg, n) != 1 ||
            siglen != SIG_LEN) {
                ERR_clear_error();
                return -EINVAL; /* a public key alone cannot sign */
        }
        /* The one encoding snap_oci_envelope_parse accepts. */
        r = snap_oci_envelope_encode(&e, text, sizeof(text));
        if (r < 0)
                return r;
        *json = strndup(text, (size_t)r);
        if (!*json)
                return -ENOMEM;
        *len = (size_t)r;
        return 0;
}

/* The string under key, exactly equal to want when want is set. */
static const char *field(json_object *o, const char *key, const char *want)
{
        json_object *v;
        const char *s;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        s = json_object_get_string(v);
        if ((size_t)json_object_get_string_len(v) != strlen(s))
                return NULL;
        return !want || !strcmp(s, want) ? s : NULL;
}

int snap_oci_envelope_parse(const void *buf, size_t len, struct snap_oci_envelope *out)
{
        _cleanup_json_ json_object *root = NULL;
        unsigned char raw[SIG_B64_LEN];
        char again[SIG_B64_LEN + 1], text[SNAP_OCI_ENVELOPE_TEXT_MAX];
        json_object *m;
        const char *s;
        int r, n;

        if (!buf || !out)
                return -EINVAL;
        if (len > SNAP_OCI_ENVELOPE_MAX)
                return -EFBIG;
        r = oci_json_parse(buf, len, &root);
        if (r < 0)
                return r;
        if (!field(root, "mediaType", SNAP_OCI_MEDIA_SIGNATURE) ||
            !field(root, "algorithm", ALGORITHM) ||
            !json_object_object_get_ex(root, "manifest", &m) ||
            !json_object_is_type(m, json_type_object))
                return -EINVAL;
        if (!(s = field(m, "digest", NULL)) ||
            snap_oci_digest_parse(s, strlen(s), &out->manifest) < 0)
                return -EINVAL;
        if (oci_json_size(m, "size", SNAP_OCI_DOC_MAX, &out->manifest_size) < 0)
                return -EINVAL;
        if (!(s = field(root, "key", NULL)) || snap_oci_digest_parse(s, strlen(s), &out->key) < 0)
                return -EINVAL;
        /* One spelling of a signature: exactly the canonical base64 of 64 bytes (a decoder
         * that skips junk would let two texts name one signature). */
        if (!(s = field(root, "signature", NULL)) || strlen(s) != SIG_B64_LEN ||
            EVP_DecodeBlock(raw, (const unsigned char *)s, SIG_B64_LEN) < SIG_LEN)
                return -EINVAL;
        EVP_EncodeBlock((unsigned char *)again, raw, SIG_LEN);
        if (strcmp(again, s))
                return -EINVAL;
        memcpy(out->signature, raw, SIG_LEN);
        /* Signed means exactly the signed bytes. The signature covers the manifest digest and
         * size, not the envelope's text, so a parser that ignored what it does not read would
         * admit a genuine envelope with keys added ("mcpServers": {...}), spaces or another
         * key order: bytes nobody signed, served as "verified". Only the one encoding the
         * signer produces is an envelope: what was parsed is encoded again and must be the
         * input, byte for byte (no unknown or duplicate key, no whitespace, no escape). */
        n = snap_oci_envelope_encode(out, text, sizeof(text));
        if (n < 0 || (size_t)n != len || memcmp(text, buf, len) != 0)
                return -EINVAL;
        return 0;
}

int snap_oci_envelope_verify(const struct snap_oci_envelope *e, EVP_PKEY *pub)
{
        _cleanup_(mdctxp) EVP_MD_CTX *ctx = NULL;
        char msg[MESSAGE_MAX];
        struct snap_digest fp;
        size_t n;
        int r;

        if (!e || !pub || EVP_PKEY_get_id(pub) != EVP_PKEY_ED25519)
                return -EINVAL;
        r = snap_oci_key_fingerprint(pub, &fp);
        if (r < 0)
                return r;
        if (!snap_digest_equal(&fp, &e->key))
                return -EKEYREJECTED;
        n = message(&e->manifest, e->manifest_size, msg);
        ctx = EVP_MD_CTX_new();
        if (!ctx)
                return -ENOMEM;
        if (EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pub) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        r = EVP_DigestVerify(ctx, e->signature, SIG_LEN, (const unsigned char *)msg, n);
        ERR_clear_error();
        return r == 1 ? 0 : -EBADMSG;
}
