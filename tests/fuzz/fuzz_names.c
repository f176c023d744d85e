/* SPDX-License-Identifier: MIT */
/* The two name checks of the tree, against plain restatements of docs/design.md:
 *   a snapshot name is exactly 64 characters of [0-9a-f] (snap_digest_from_hex, and
 *   snap_is_digest_name on a C string);
 *   a staging name is 1-64 characters of [A-Za-z0-9._-], not starting with "."
 *   (sfs_staging_name_valid);
 *   an entry name is a staging name that starts with neither "." nor "-" and is not 64
 *   hexadecimal characters in any case (snap_entry_name_valid). */
#include <errno.h>

#include "snapshot/digest.h"
#include "snapshot/name.h"
#include "tests/fuzz/fuzz.h"
#include "fs/tree/staging.h"

static bool ref_lower_hex(const uint8_t *s, size_t len)
{
        if (len != SNAP_DIGEST_HEX_LEN)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static bool ref_staging_name(const char *s)
{
        size_t len = strlen(s);

        if (len < 1 || len > SFS_STAGING_NAME_MAX || s[0] == '.')
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

static bool ref_entry_name(const char *s)
{
        size_t len = strlen(s), hex = 0;

        if (!ref_staging_name(s) || len > SNAP_NAME_MAX || s[0] == '-')
                return false;
        for (size_t i = 0; i < len; i++)
                hex += (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
                       (s[i] >= 'A' && s[i] <= 'F');
        return !(len == 64 && hex == 64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *name = fz_cstr(data, size);
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct snap_digest d;
        int r;

        /* Exactly size bytes: an embedded NUL is one more byte no rule accepts. */
        r = snap_digest_from_hex((const char *)data, size, &d);
        FZ_CHECK(r == 0 || r == -EINVAL);
        FZ_CHECK((r == 0) == ref_lower_hex(data, size));
        if (r == 0) {
                snap_digest_to_hex(&d, hex);
                FZ_CHECK(memcmp(hex, data, SNAP_DIGEST_HEX_LEN) == 0);
        }

        /* As a C string, the way the daemon sees a name from a FUSE request. */
        FZ_CHECK(snap_is_digest_name(name) == ref_lower_hex((const uint8_t *)name, strlen(name)));
        FZ_CHECK(sfs_staging_name_valid(name) == ref_staging_name(name));
        FZ_CHECK(snap_entry_name_valid(name) == ref_entry_name(name));
        /* An entry is never a digest's name, in any case, nor an option. */
        if (snap_entry_name_valid(name))
                FZ_CHECK(!snap_is_digest_name(name) && name[0] != '-');
        /* Whatever the reference says: never ".", "..", a hidden name or a path. */
        if (sfs_staging_name_valid(name))
                FZ_CHECK(!strchr(name, '/') && name[0] != '.');
        free(name);
        return 0;
}
