/* SPDX-License-Identifier: MIT */
/* Orchestration: pin, identify, gather, probe, re-check, judge. The decision itself is
 * mc_judge(); this file only gathers the facts it needs. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountcheck/backend.h"
#include "mountcheck/check.h"
#include "mountcheck/identity.h"
#include "mountcheck/judge.h"
#include "mountcheck/kernel-calls.h"
#include "common/util.h"

/* The root xattr that names the scope a snapfs view serves (fs/tree/tree.h). */
#define MC_XATTR_SCOPE "user.snapfs.scope"

static void setp(struct mc_mount_set *set)
{
        mc_mount_set_free(set);
}

/* The id a client will compare with: unique when the kernel has it. Reusable ids can be
 * handed to a new mount once the old one is gone; unique ids never are. */
static uint64_t best_id(const struct mc_identity *id, bool *unique)
{
        *unique = id->has_unique;
        return id->has_unique ? id->unique_id : id->old_id;
}

/* What the root of a live fuse.snapfs mount says about scopes (docs/design.md, "Scopes"): the
 * scope it serves (the xattr MC_XATTR_SCOPE; none on a main mount or a read view) and, for a
 * view, whether its root has a .staging/ directory (the scope allows publishing). Asked only
 * as the policy says: a read-only mount only to report. name holds len bytes. 0, or the
 * errno that kept the daemon from answering. */
static int gather_scope(int fd, const struct mc_mount *t, const struct mc_policy *pol,
                        struct mc_facts *f, char *name, size_t len)
{
        struct statx stx;
        long n;

        if (pol->scope == MC_SCOPE_IGNORE || !t || !t->fstype ||
            strcmp(t->fstype, "fuse.snapfs") != 0)
                return 0;
        if ((t->options & MC_OPT_RO) && pol->scope != MC_SCOPE_REPORT)
                return 0;
        n = mc_kernel()->dir_getxattr(fd, MC_XATTR_SCOPE, name, len - 1);
        if (n < 0 && (errno == ENODATA || errno == EOPNOTSUPP))
                return 0; /* not a view: the main mount, a read view, an older daemon */
        if (n < 0 && errno != ERANGE)
                return negative_errno();
        /* Longer than any scope name, or holding a NUL: a view whose name is unreadable. It is
         * judged all the same (fail closed), reported without a name. */
        if (n < 0 || n > MC_SCOPE_NAME_MAX || memchr(name, '\0', (size_t)n))
                n = 0;
        name[n] = '\0';
        f->is_scope = true;
        f->scope = name;
        if (mc_kernel()->statx(fd, ".staging", AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) == 0)
                f->scope_publishes = (stx.stx_mask & STATX_TYPE) && S_ISDIR(stx.stx_mode);
        else if (errno != ENOENT)
                return negative_errno();
        return 0;
}

/* Re-open the path the same way and ask where it lands now. A mount slid on top, beneath or
 * over an ancestor between our open and our reading of the table would otherwise judge a
 * stack that no longer exists. */
static int reached_same_mount(const char *path, const struct mc_identity *first, bool *same)
{
        _cleanup_close_ int fd = -1;
        struct mc_identity now;
        bool u1, u2;
        int r;

        r = mc_open_path(path, &fd);
        if (r < 0) {
                *same = false;
                return 0;
        }
        r = mc_fd_identity(fd, &now);
        if (r < 0)
                return r;
        *same = best_id(&now, &u2) == best_id(first, &u1) && u1 == u2 &&
                now.mount_root == first->mount_root;
        return 0;
}

/* The mount fd reached, by the id the backend lists mounts by, into id, f and v: 0, or
 * -EOPNOTSUPP when the kernel gives no such id, -errno. */
static int identify(int fd, const struct mc_backend_ops *ops, struct mc_identity *id,
                    struct mc_facts *f, struct mc_verdict *v)
{
        int r = mc_fd_identity(fd, id);

        if (r < 0)
                return r;
        if (ops->id_unique ? !id->has_unique : !id->has_old)
                return -EOPNOTSUPP;
        v->mount_id = best_id(id, &v->mount_id_unique);
        v->has_mount_id = true;
        f->mount_id = ops->id_unique ? id->unique_id : id->old_id;
        f->mount_root = id->mount_root;
        f->root_mode = id->mode & 07777;
        return 0;
}

/* The mounts the judge needs around the one fd reached (f->mount_id): it, and its parent and
 * children when fd is its root, or what is mounted at the path when it is not: 0 or -errno. */
static int collect_around(const struct mc_backend_ops *ops, const struct mc_identity *id,
                          const struct mc_facts *f, struct mc_query *q, struct mc_mount_set *set)
{
        const struct mc_mount *t;
        int r;

        q->has_target = true;
        q->target_id = f->mount_id;
        q->want = id->mount_root ? MC_WANT_TARGET | MC_WANT_PARENT | MC_WANT_CHILDREN
                                 : MC_WANT_TARGET | MC_WANT_AT_PATH;
        r = ops->collect(q, set);
        if (r < 0)
                return r;
        t = mc_mount_set_find(set, f->mount_id);
        if (id->mount_root && (!t || !t->mount_point || strcmp(t->mount_point, f->path) != 0)) {
                /* A mount root, but not of a mount at this path: look for the one that is. */
                q->want = MC_WANT_AT_PATH;
                r = ops->collect(q, set);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Who owns the mount's root: asked of the daemon when the policy probes (a dead transport and
 * an unmapped caller are facts, not errors), else the kernel's cached owner: 0 or -errno. */
static int gather_owner(int fd, const struct mc_policy *pol, const struct mc_identity *id,
                        struct mc_facts *f)
{
        int r;

        if (pol->probe_transport) {
                r = mc_probe_owner(fd, &f->root_uid);
                if (r == -ENOTCONN || r == -ECONNABORTED)
                        f->transport_dead = true;
                else if (r == -EOVERFLOW)
                        /* Not a system error but a fact about the mount: FUSE answers
                         * EOVERFLOW for a caller whose uid or gid the connection's user
                         * namespace does not map (a process that entered a user namespace
                         * with its own credentials, say). */
                        f->caller_unmapped = true;
                else if (r < 0)
                        return r;
                else
                        f->has_root_uid = true;
        }
        if (!f->has_root_uid && id->has_uid) {
                /* No fresh owner (no probe, or a dead daemon): the cached one. FUSE mapped it
                 * through the superblock's user namespace too, so a foreign namespace still
                 * shows; a rootless mount nobody has stat'ed yet may show the uid 0 the kernel
                 * gives a new root, and is then refused rather than trusted. */
                f->has_root_uid = true;
                f->root_uid = id->uid;
        }
        return 0;
}

/* The scope the mount serves (into scope, which f then points to): only where the daemon is
 * known to answer, and of the mount the path reaches as its root (anything else is refused
 * before a scope could matter). 0 or -errno. */
static int gather_served_scope(int fd, const struct mc_policy *pol, const struct mc_identity *id,
                               const struct mc_mount_set *set, struct mc_facts *f, char *scope,
                               size_t size)
{
        const struct mc_mount *t;

        if (!pol->probe_transport || f->transport_dead || f->caller_unmapped || !id->mount_root)
                return 0;
        t = mc_mount_set_find(set, f->mount_id);
        if (!t || !t->mount_point || strcmp(t->mount_point, f->path) != 0)
                return 0;
        return gather_scope(fd, t, pol, f, scope, size);
}

int mc_check_path_with(const char *path, const struct mc_policy *pol,
                       const struct mc_backend_ops *ops, struct mc_verdict *v, int *pinned_fd_out)
{
        _cleanup_close_ int fd = -1;
        _cleanup_(setp) struct mc_mount_set set = { 0 };
        struct mc_facts f = { .path = path };
        struct mc_query q = { .path = path };
        struct mc_identity id;
        char scope[MC_SCOPE_NAME_MAX + 2];
        bool same;
        int r;

        if (pinned_fd_out)
                *pinned_fd_out = -1;
        if (!path || !pol || !ops || !ops->collect || !v)
                return -EINVAL;
        mc_verdict_init(v);
        v->backend = ops->kind;

        /* Who asks. Unknown (an older kernel) counts as "not the initial namespace": the
         * judge then refuses a FUSE mount unless the policy trusts user namespaces. */
        f.caller_uid = (uint32_t)getuid();
        f.caller_initial_userns = mc_caller_initial_userns() == 1;

        if (!mc_path_is_canonical(path))
                goto judge;

        r = mc_open_path(path, &fd);
        if (r == -ELOOP) {
                f.open_error = r;
                goto judge;
        }
        if (r == -ENOENT || r == -ENOTDIR) {
                /* Unreachable: an over-mounted ancestor hides a mount still recorded at the
                 * path. Without one, a missing path is the caller's error, not a verdict. */
                q.want = MC_WANT_AT_PATH;
                int c = ops->collect(&q, &set);
                if (c < 0)
                        return c;
                if (set.n == 0)
                        return r;
                f.open_error = r;
                goto judge;
        }
        if (r < 0)
                return r;

        r = identify(fd, ops, &id, &f, v);
        if (r < 0)
                return r;

        r = collect_around(ops, &id, &f, &q, &set);
        if (r < 0)
                return r;
        r = gather_owner(fd, pol, &id, &f);
        if (r < 0)
                return r;

        r = gather_served_scope(fd, pol, &id, &set, &f, scope, sizeof(scope));
        if (r < 0)
                return r;

        r = reached_same_mount(path, &id, &same);
        if (r < 0)
                return r;
        f.changed = !same;

judge:
        f.mounts = set.v;
        f.n_mounts = set.n;
        mc_judge(&f, pol, v);
        /* Every way here without an open descriptor (a path not canonical, a symlink, nothing
         * to open) leaves a finding: a compliant verdict always has its mount pinned. */
        assert(!v->compliant || fd >= 0);
        if (v->compliant && pinned_fd_out)
                *pinned_fd_out = TAKE_FD(fd);
        return 0;
}

int mc_check_path(const char *path, const struct mc_policy *pol, enum mc_backend backend,
                  struct mc_verdict *out, int *pinned_fd_out)
{
        int r;

        switch (backend) {
        case MC_BACKEND_STATMOUNT:
                return mc_check_path_with(path, pol, &mc_backend_statmount, out, pinned_fd_out);
        case MC_BACKEND_MOUNTINFO:
                return mc_check_path_with(path, pol, &mc_backend_mountinfo, out, pinned_fd_out);
        case MC_BACKEND_AUTO:
                r = mc_check_path_with(path, pol, &mc_backend_statmount, out, pinned_fd_out);
                if (r == -ENOSYS || r == -EOPNOTSUPP)
                        r = mc_check_path_with(path, pol, &mc_backend_mountinfo, out, pinned_fd_out);
                return r;
        }
        if (pinned_fd_out)
                *pinned_fd_out = -1;
        if (out)
                mc_verdict_init(out);
        return -EINVAL;
}
