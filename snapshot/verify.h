/* SPDX-License-Identifier: MIT */
/* Verify a held descriptor against a binding: docs/design.md "Reading and verifying",
 * steps 2 and 4.
 *
 * Step 2: fstat — a regular file, mode 0000, size within the limit, dev/ino/size equal to the
 * binding. Step 4: pread the whole content (never more than limit + 1 bytes), SHA-256 it and
 * compare, then fstat again: dev, ino, mode, nlink, uid, gid, size, mtime and ctime unchanged.
 * Hashing is the step that catches a same-size rewrite in place, which no metadata check can. */
#pragma once

#include <stdint.h>

#include "snapshot/binding.h"

struct snap_hasher;

enum snap_verify_finding {
        SNAP_VERIFY_OK = 0,
        SNAP_VERIFY_IO,            /* fstat or pread failed; errno returned as is */
        SNAP_VERIFY_NOT_REGULAR,   /* -EINVAL (a directory: -EISDIR) */
        SNAP_VERIFY_MODE,          /* -EPERM: permission bits are not 0000 */
        SNAP_VERIFY_TOO_BIG,       /* -EFBIG: larger than the limit */
        SNAP_VERIFY_IDENTITY,      /* -ESTALE: dev, ino or size differ from the binding */
        SNAP_VERIFY_DIGEST,        /* -EBADMSG: content does not hash to the binding */
        SNAP_VERIFY_CHANGED,       /* -EAGAIN: metadata or length changed while verifying */
};

struct snap_verify_result {
        enum snap_verify_finding finding;
        char message[256]; /* one line, for a person; empty when OK */
};

/* Stable short name of a finding ("digest-mismatch", ...). */
const char *snap_verify_finding_name(enum snap_verify_finding f);

/* 0 when fd matches b, else the negative errno listed above and *res (may be NULL) says why.
 * limit is the largest content size accepted. hasher may be NULL (one is made for the call);
 * passing one avoids an allocation per verification. The file offset of fd is not used. */
int snap_verify_fd(int fd, const struct snap_binding *b, uint64_t limit,
                   struct snap_hasher *hasher, struct snap_verify_result *res);

/* snap_verify_fd that also copies the first copy_len bytes of the content (copy has room for
 * them; past the content's size nothing is written) into copy as they are hashed: what the
 * caller then looks at are the bytes that hashed to the binding, not a second read. */
int snap_verify_fd_copy(int fd, const struct snap_binding *b, uint64_t limit,
                        struct snap_hasher *hasher, struct snap_verify_result *res, void *copy,
                        size_t copy_len);
