/* SPDX-License-Identifier: MIT */
/* The judge: the one pure function that turns the facts about a path (the records a backend
 * gathered, the descriptor's mount, who asks) plus a policy into every finding. */
#include "mountcheck/judge.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool mc_path_is_canonical(const char *path)
{
        const char *c = path;

        if (!path || path[0] != '/')
                return false;
        if (path[1] == '\0')
                return true;
        while (*c) {
                const char *s = c + 1;
                size_t len = strcspn(s, "/");
                if (len == 0)
                        return false; /* "//" or a trailing slash */
                if (len == 1 && s[0] == '.')
                        return false;
                if (len == 2 && s[0] == '.' && s[1] == '.')
                        return false;
                c = s + len;
        }
        return true;
}

static const char *str(const char *s)
{
        return s ? s : "";
}

static const struct mc_mount *find(const struct mc_facts *f, uint64_t id)
{
        for (size_t i = 0; i < f->n_mounts; i++)
                if (f->mounts[i].id == id)
                        return &f->mounts[i];
        return NULL;
}

#define ESC(s, buf) mc_escape(str(s), buf, sizeof(buf))

/* A mount recorded at the path that the path does not reach: an ancestor directory has been
 * mounted over, so the table still lists the old mount at this path while opening the path
 * lands in the upper mount (or nowhere). Judging that listed mount would judge a mount nobody
 * can reach. */
static bool report_hidden(const struct mc_facts *f, const struct mc_mount *reached,
                          struct mc_verdict *v)
{
        char ep[128], ef[48];

        for (size_t i = 0; i < f->n_mounts; i++) {
                const struct mc_mount *m = &f->mounts[i];
                if (reached && m->id == reached->id)
                        continue;
                if (strcmp(str(m->mount_point), f->path) != 0)
                        continue;
                mc_verdict_add(v, MC_ANCESTOR_OVERMOUNTED,
                               "mount %llu (%s) is recorded at %s but the path no longer reaches it: an ancestor directory is mounted over",
                               (unsigned long long)m->id, ESC(m->fstype, ef), ESC(f->path, ep));
                return true;
        }
        return false;
}

/* Who mounted a FUSE filesystem, and may this caller trust it. fsname and subtype are chosen
 * by whoever mounts; user_id= is set by the kernel from the mounting process (fusermount3 for
 * an unprivileged user), but printed relative to the superblock's user namespace: a server
 * mounted inside `unshare -Ur` by uid 1000 shows user_id=0. */
static void judge_owner(const struct mc_facts *f, const struct mc_mount *t,
                        const struct mc_policy *pol, struct mc_verdict *v)
{
        bool own;

        /* user-namespace. From inside another user namespace the uids this process sees are
         * not the host's: "0" may be whoever created the namespace, and nothing it can read
         * tells a superblock of the initial namespace from one of its own. */
        if (t->has_user_id && !pol->trust_user_namespace) {
                if (!f->caller_initial_userns) {
                        mc_verdict_add(v, MC_USER_NAMESPACE,
                                       "this process runs in a user namespace other than the initial one: the uids it sees are not the host's, so who mounted this FUSE filesystem cannot be verified");
                } else if (f->has_root_uid && f->root_uid != t->user_id) {
                        /* In the initial namespace user_id= of an initial-namespace superblock
                         * is the real uid, and snapfs reports its root as owned by the uid it
                         * runs as. FUSE maps the root's owner through the superblock's
                         * namespace, so a namespace-local "0" shows here as the real uid of
                         * the namespace's creator (or the overflow uid), never as uid 0. */
                        mc_verdict_add(v, MC_USER_NAMESPACE,
                                       "the superblock says user_id=%u but the kernel shows its root owned by uid %u: it was mounted in another user namespace",
                                       t->user_id, f->root_uid);
                }
        }

        /* owner-is-caller. A mount of the caller's own uid proves nothing against code running
         * as that uid: it can unmount it (fusermount3 -u) and mount its own server at the same
         * path, and even the device number and mount id may come back the same. */
        own = f->caller_uid != 0 &&
              ((t->has_user_id && t->user_id == f->caller_uid) ||
               (f->caller_initial_userns && f->has_root_uid && f->root_uid == f->caller_uid));
        if (own && !pol->insecure_own_mount) {
                mc_verdict_add(v, MC_OWNER_IS_CALLER,
                               "mounted by uid %u, the caller's own: any process of that uid can unmount it and mount its own FUSE server in its place",
                               f->caller_uid);
                return;
        }

        if (!pol->check_owner)
                return;
        if (!t->has_user_id)
                mc_verdict_add(v, MC_OWNER, "no user_id= superblock option: the mounting uid is unknown");
        else if (t->user_id != pol->owner && !(own && pol->insecure_own_mount))
                mc_verdict_add(v, MC_OWNER, "mounted by uid %u, expected uid %u",
                               t->user_id, pol->owner);
}

/* A snapfs scope view: what its daemon said it is, and the one rule that follows from it. */
static void judge_scope(const struct mc_facts *f, const struct mc_mount *t, struct mc_verdict *v)
{
        if (!f->is_scope)
                return;
        v->is_scope = true;
        v->scope_publishes = f->scope_publishes;
        mc_escape(str(f->scope), v->scope, sizeof(v->scope));
        /* scope-writable. A view of a scope that does not publish is served read-only by the
         * kernel, before its daemon is asked: without allow_other the daemon declines OPEN
         * (the kernel opens files without it), so the read-only mount flag is what refuses
         * an open for writing, a truncate or a writable shared mmap there. A view remounted
         * read-write loses that. */
        if (!f->scope_publishes && !(t->options & MC_OPT_RO))
                mc_verdict_add(v, MC_SCOPE_WRITABLE,
                               "the view of scope %s is read-write, but the scope does not allow publishing: it must be mounted ro",
                               v->scope[0] ? v->scope : "(unnamed)");
}

static void judge_policy(const struct mc_facts *f, const struct mc_mount *t,
                         const struct mc_policy *pol, struct mc_verdict *v)
{
        char e1[64], e2[64];

        if (pol->fstype[0] && strcmp(str(t->fstype), pol->fstype) != 0)
                mc_verdict_add(v, MC_FSTYPE, "filesystem type is %s, expected %s",
                               ESC(t->fstype, e1), ESC(pol->fstype, e2));

        for (uint32_t bit = 1; bit & MC_OPT_ALL; bit <<= 1) {
                if ((pol->require & bit) && !(t->options & bit))
                        mc_verdict_add(v, MC_MISSING_OPTION, "required option %s is not set",
                                       mc_option_name(bit));
                if ((pol->forbid & bit) && (t->options & bit))
                        mc_verdict_add(v, MC_FORBIDDEN_OPTION, "forbidden option %s is set",
                                       mc_option_name(bit));
        }

        /* A shared or slave mount receives mounts made elsewhere: something can appear on top
         * of or below the path after the check, from outside this process's control. */
        if (pol->require_private) {
                if (t->propagation & MC_PROP_SHARED)
                        mc_verdict_add(v, MC_PROPAGATION,
                                       "the mount is shared: mount events propagate to and from its peer group");
                if (t->propagation & MC_PROP_SLAVE)
                        mc_verdict_add(v, MC_PROPAGATION,
                                       "the mount is a slave: mount events from its master propagate into it");
        }

        /* An idmapped mount shows every file with remapped ownership: the owner a client sees
         * is not the owner the filesystem records. */
        if (t->idmapped)
                mc_verdict_add(v, MC_IDMAPPED, "the mount is idmapped: ownership seen through it is remapped");

        judge_owner(f, t, pol, v);
        judge_scope(f, t, v);

        if (pol->check_mode && (f->root_mode & 07777) != (pol->mode & 07777))
                mc_verdict_add(v, MC_MODE, "root directory mode is %04o, expected %04o",
                               f->root_mode & 07777, pol->mode & 07777);

        if (pol->check_size) {
                if (!t->has_size || t->size == 0)
                        mc_verdict_add(v, MC_SIZE, "the filesystem has no size limit, expected at most %llu bytes",
                                       (unsigned long long)pol->max_size);
                else if (t->size > pol->max_size)
                        mc_verdict_add(v, MC_SIZE, "size limit is %llu bytes, expected at most %llu",
                                       (unsigned long long)t->size,
                                       (unsigned long long)pol->max_size);
        }
}

static void judge_reached(const struct mc_facts *f, const struct mc_mount *t,
                          const struct mc_policy *pol, struct mc_verdict *v)
{
        char e1[128], e2[64];
        const struct mc_mount *p = NULL;

        /* A bind of a subdirectory is a mount root at the path, of the expected type and
         * flags, yet it exposes a different tree than the filesystem's root. */
        if (strcmp(str(t->root), "/") != 0)
                mc_verdict_add(v, MC_BIND_OF_SUBDIRECTORY,
                               "the mount shows %s of its filesystem, not its root: a bind of a subdirectory",
                               ESC(t->root, e1));

        /* Stacking is decided by ids, never by which mountinfo line comes first or last: line
         * order is not stack order (a detached mount moved on top, or one slid beneath with
         * MOVE_MOUNT_BENEATH, is listed before the mount it covers). Beneath: our parent is
         * mounted at the very same path. */
        if (t->parent_id != t->id)
                p = find(f, t->parent_id);
        if (p && p != t && strcmp(str(p->mount_point), f->path) == 0)
                mc_verdict_add(v, MC_STACKED,
                               "mount %llu (%s) lies beneath this one at the same path",
                               (unsigned long long)p->id, ESC(p->fstype, e2));

        /* On top: a child mounted on our root. Elsewhere below the path: a submount, which
         * replaces part of the tree a client will open relative to our root. */
        for (size_t i = 0; i < f->n_mounts; i++) {
                const struct mc_mount *c = &f->mounts[i];
                if (c == t || c->id == t->id || c->parent_id != t->id)
                        continue;
                if (strcmp(str(c->mount_point), f->path) == 0)
                        mc_verdict_add(v, MC_STACKED, "mount %llu (%s) is mounted on top of this one",
                                       (unsigned long long)c->id, ESC(c->fstype, e2));
                else
                        mc_verdict_add(v, MC_SUBMOUNT, "mount %llu (%s) at %s lies below the path",
                                       (unsigned long long)c->id, ESC(c->fstype, e2),
                                       ESC(c->mount_point, e1));
        }

        judge_policy(f, t, pol, v);
}

void mc_judge(const struct mc_facts *f, const struct mc_policy *pol, struct mc_verdict *v)
{
        char ep[128], e1[128];
        const struct mc_mount *t;

        if (!v)
                return;
        if (!f || !pol || !f->path) {
                v->compliant = false;
                return;
        }
        if (f->n_mounts && !f->mounts) {
                v->compliant = false;
                return;
        }
        ESC(f->path, ep);

        /* Judge the path as given: "/a/../b", "/a//b" or a relative path may reach a mount
         * whose recorded mount point can never equal the text the caller will use. */
        if (!mc_path_is_canonical(f->path)) {
                mc_verdict_add(v, MC_NON_CANONICAL_PATH,
                               "%s is not an absolute canonical path (no //, ., .. or trailing /)", ep);
                goto out;
        }
        /* A symlink anywhere lets whoever can write its directory retarget the path later. */
        if (f->open_error == -ELOOP) {
                mc_verdict_add(v, MC_SYMLINK_IN_PATH, "a component of %s is a symbolic link", ep);
                goto out;
        }
        if (f->open_error != 0) {
                if (!report_hidden(f, NULL, v))
                        mc_verdict_add(v, MC_NOT_A_MOUNT_POINT, "%s does not resolve", ep);
                goto tail;
        }

        t = find(f, f->mount_id);
        if (!t) {
                mc_verdict_add(v, MC_CHANGED_DURING_CHECK,
                               "mount %llu reached by the path vanished during the check",
                               (unsigned long long)f->mount_id);
                goto tail;
        }
        if (!f->mount_root) {
                mc_verdict_add(v, MC_NOT_A_MOUNT_POINT,
                               "%s is a directory inside the mount at %s, not the root of a mount",
                               ep, ESC(t->mount_point, e1));
                report_hidden(f, t, v);
                goto tail;
        }
        if (strcmp(str(t->mount_point), f->path) != 0) {
                mc_verdict_add(v, MC_NOT_A_MOUNT_POINT,
                               "%s reaches the root of the mount at %s, not a mount at the path",
                               ep, ESC(t->mount_point, e1));
                report_hidden(f, t, v);
                goto tail;
        }
        judge_reached(f, t, pol, v);

tail:
        if (f->transport_dead)
                mc_verdict_add(v, MC_TRANSPORT_NOT_CONNECTED,
                               "the filesystem's daemon is gone (ENOTCONN): nothing serves this mount");
        /* Whatever the policy trusts: a mount no request of this process can reach serves it
         * nothing, and its superblock is shown to be of another user namespace. */
        if (f->caller_unmapped)
                mc_verdict_add(v, MC_USER_NAMESPACE,
                               "this process's uid or gid has no mapping in the user namespace this FUSE filesystem was mounted in (EOVERFLOW): that namespace is not the initial one, and the kernel passes none of this process's requests to its daemon");
        if (f->changed && !mc_verdict_has(v, MC_CHANGED_DURING_CHECK))
                mc_verdict_add(v, MC_CHANGED_DURING_CHECK,
                               "re-opening %s at the end reached another mount", ep);
out:
        v->compliant = v->n_findings == 0 && v->n_dropped == 0;
}
