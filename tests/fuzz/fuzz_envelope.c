/* SPDX-License-Identifier: MIT */
/* The signature envelope parser on arbitrary bytes, with the property that makes "signed" mean
 * exactly the signed bytes: every envelope it accepts re-encodes to its input, byte for byte
 * (no key, space or spelling the signer did not write survives a parse), and the kind of a
 * snapshot (snapshot/kind.h) says "signature" for exactly those inputs. Then the other way
 * round: an envelope built from the fuzz bytes encodes into text the parser gives back
 * unchanged. Any errno but -EINVAL/-EFBIG from the parser is a bug. */
#include <errno.h>

#include "tests/fuzz/fuzz.h"
#include "snapshot/kind.h"
#include "snapshot/oci.h"

static void check_parse(const uint8_t *data, size_t size)
{
        struct snap_oci_envelope e;
        char text[SNAP_OCI_ENVELOPE_TEXT_MAX];
        int r = snap_oci_envelope_parse(data, size, &e), n, k;

        FZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG);
        k = snap_kind_of(data, size);
        FZ_CHECK(k >= 0 || k == -ENOMEM);
        if (r < 0) {
                FZ_CHECK(k != SNAP_KIND_SIGNATURE);
                return;
        }
        FZ_CHECK(e.manifest_size <= SNAP_OCI_DOC_MAX);
        n = snap_oci_envelope_encode(&e, text, sizeof(text));
        FZ_CHECK(n >= 0 && (size_t)n == size && memcmp(text, data, size) == 0);
        FZ_CHECK(k == SNAP_KIND_SIGNATURE);
}

static void check_build(const uint8_t *data, size_t size)
{
        struct snap_oci_envelope e, again;
        struct fz_reader rd = { data, size };
        char text[SNAP_OCI_ENVELOPE_TEXT_MAX];
        int n;

        for (size_t i = 0; i < sizeof(e.manifest.bytes); i++)
                e.manifest.bytes[i] = fz_u8(&rd);
        for (size_t i = 0; i < sizeof(e.key.bytes); i++)
                e.key.bytes[i] = fz_u8(&rd);
        for (size_t i = 0; i < sizeof(e.signature); i++)
                e.signature[i] = fz_u8(&rd);
        e.manifest_size = fz_u64(&rd);
        n = snap_oci_envelope_encode(&e, text, sizeof(text));
        FZ_CHECK(n > 0 && (size_t)n < sizeof(text));
        /* A size past 4 MiB names no manifest: encoded, never accepted. */
        if (e.manifest_size > SNAP_OCI_DOC_MAX) {
                FZ_CHECK(snap_oci_envelope_parse(text, (size_t)n, &again) == -EINVAL);
                return;
        }
        FZ_CHECK(snap_oci_envelope_parse(text, (size_t)n, &again) == 0);
        FZ_CHECK(memcmp(&again.manifest, &e.manifest, sizeof(e.manifest)) == 0);
        FZ_CHECK(memcmp(&again.key, &e.key, sizeof(e.key)) == 0);
        FZ_CHECK(memcmp(again.signature, e.signature, sizeof(e.signature)) == 0);
        FZ_CHECK(again.manifest_size == e.manifest_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        check_parse(data, size);
        check_build(data, size);
        return 0;
}
