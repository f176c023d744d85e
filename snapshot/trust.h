/* SPDX-License-Identifier: MIT */
/* What a daemon started with --trust-key admits: a publish is allowed only for content that
 * a signed manifest, imported through the normal publish path, names.
 *
 *   1. A signature envelope (snapshot/oci.h) is self-authenticating: publishing one is
 *      allowed when it verifies with a trusted key, and admits the manifest digest and size
 *      it signs.
 *   2. Publishing an admitted manifest is allowed when it parses as an OCI image manifest,
 *      and admits the digest and size of each of its layers.
 *   3. Publishing an admitted layer is allowed.
 *   Anything else is refused. What is admitted stays admitted for the daemon's lifetime
 *   (unlinking a snapshot revokes nothing). Thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/digest.h"

struct snap_trust;
struct evp_pkey_st;

/* Reasons of a refusal, as audited. */
#define SNAP_TRUST_NOT_ADMITTED "not-in-signed-manifest"
#define SNAP_TRUST_UNTRUSTED_KEY "untrusted-key"
#define SNAP_TRUST_BAD_SIGNATURE "bad-signature"
#define SNAP_TRUST_BAD_MANIFEST "manifest-invalid"
#define SNAP_TRUST_FULL "trust-table-full"

/* Most digests remembered (manifests and layers together): past it -ENOSPC. */
#define SNAP_TRUST_MAX_ENTRIES (UINT32_C(1) << 20)

int snap_trust_new(struct snap_trust **out);
void snap_trust_free(struct snap_trust *t);
/* Lowers the table's limit below SNAP_TRUST_MAX_ENTRIES (never above): a table that fills in
 * a few admissions, for tests. */
void snap_trust_set_max_entries(struct snap_trust *t, size_t max);

/* Trusts key (an Ed25519 public key; a reference is taken): 0, -EINVAL, -ENOMEM. */
int snap_trust_add_key(struct snap_trust *t, struct evp_pkey_st *key);
size_t snap_trust_n_keys(const struct snap_trust *t);

/* True when d of size bytes is admitted as a manifest or a layer (what an auditor asks of a
 * snapshot already served). */
bool snap_trust_admits(struct snap_trust *t, const struct snap_digest *d, uint64_t size);
/* True when d of size bytes is admitted as a manifest (a trusted envelope signs it), or as a
 * layer (a manifest admitted and then published names it): what an auditor asks of a
 * snapshot of that kind. */
bool snap_trust_admits_manifest(struct snap_trust *t, const struct snap_digest *d,
                                uint64_t size);
bool snap_trust_admits_layer(struct snap_trust *t, const struct snap_digest *d, uint64_t size);

/* Decides whether len bytes of data, whose SHA-256 is d, may be published, and learns what
 * they admit: 0 allowed, or -EPERM with *reason one of the SNAP_TRUST_ reasons (-ENOSPC for
 * SNAP_TRUST_FULL, -ENOMEM); -EINVAL without t or d, or without data for a non-zero len.
 * reason must not be NULL. */
int snap_trust_admit(struct snap_trust *t, const struct snap_digest *d, const void *data,
                     size_t len, const char **reason);
