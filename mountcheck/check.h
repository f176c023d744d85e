/* SPDX-License-Identifier: MIT */
/* The mount check: is the mount that a pinned descriptor of this path reaches compliant? */
#pragma once

#include "mountcheck/policy.h"
#include "mountcheck/verdict.h"

/* Opens path without following symlinks, judges the mount its descriptor reaches (by mount
 * id, with every finding collected into *out) and re-opens the path at the end to catch a
 * change. Returns 0 when the check ran: out->compliant says yes or no. Returns -errno for a
 * usage or system error (-EINVAL bad arguments, -ENOENT no such path and no mount recorded at
 * it, -EACCES, -ENOSYS/-EOPNOTSUPP a forced backend this kernel lacks, ...); *out then says
 * not compliant.
 * With a compliant verdict and pinned_fd_out non-NULL, *pinned_fd_out receives the
 * O_PATH|O_DIRECTORY|O_CLOEXEC descriptor of the judged mount root (the caller closes it):
 * openat() relative to it reaches that mount with no path race. Otherwise it is set to -1.
 * MC_BACKEND_AUTO uses statmount and falls back to mountinfo on -ENOSYS/-EOPNOTSUPP; a named
 * backend never falls back. No FUSE request is sent unless pol->probe_transport is true. */
int mc_check_path(const char *path, const struct mc_policy *pol, enum mc_backend backend,
                  struct mc_verdict *out, int *pinned_fd_out);
