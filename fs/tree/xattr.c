/* SPDX-License-Identifier: MIT */
/* Extended attributes: user.snapfs.sha256, user.snapfs.binding, user.snapfs.name and
 * user.snapfs.kind, read-only; on a staging file its digest and user.snapfs.refusal; on the
 * root user.snapfs.usage and, with --store, user.snapfs.store-corrupt and
 * user.snapfs.store-check (the store's blobs re-hashed now, not listed). */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/tree/tree-internal.h"
#include "common/util.h"

#include "snapshot/binding.h"
#include "snapshot/kind.h"
#include "snapshot/name.h"
#include "fs/store/ocistore.h"

/* ---- xattrs ---- */

/* "SCOPE" or "SCOPE/ENTRY" of size bytes into scope and entry (each SFS_STAGING_NAME_MAX + 1
 * bytes): 0, or -EINVAL for anything else (an entry is no digest: it would shadow one). */
static int parse_for_scope(const char *value, size_t size, char *scope, char *entry)
{
        char text[2 * SFS_STAGING_NAME_MAX + 2];
        char *slash;

        if (!value || size == 0 || size >= sizeof(text) || memchr(value, 0, size))
                return -EINVAL;
        memcpy(text, value, size);
        text[size] = 0;
        slash = strchr(text, '/');
        if (slash)
                *slash++ = 0;
        if (!snap_name_valid(text) ||
            (slash && (!snap_name_valid(slash) || snap_is_digest_name(slash))))
                return -EINVAL;
        /* Both valid names: at most SFS_STAGING_NAME_MAX bytes each. */
        memcpy(scope, text, strlen(text) + 1);
        if (slash)
                memcpy(entry, slash, strlen(slash) + 1);
        else
                entry[0] = 0;
        return 0;
}

/* SFS_XATTR_FOR_SCOPE on a staging file of the main mount (its owner's, already visible):
 * only the mount owner and root grant, so only they publish for a scope. t->lock held. */
static int set_for_scope(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                         const char *value, size_t size)
{
        char scope[SFS_STAGING_NAME_MAX + 1], entry[SFS_STAGING_NAME_MAX + 1];
        int r = 0;

        if (!sfs_may_control(&t->cfg, c))
                return -EACCES;
        if (value && parse_for_scope(value, size, scope, entry) < 0)
                return -EINVAL;
        pthread_mutex_lock(&n->stg->lock);
        if (n->stg->publishing) {
                r = -EBUSY;
        } else {
                snprintf(n->stg->for_scope, sizeof(n->stg->for_scope), "%s", value ? scope : "");
                snprintf(n->stg->for_entry, sizeof(n->stg->for_entry), "%s", value ? entry : "");
        }
        pthread_mutex_unlock(&n->stg->lock);
        return r;
}

int sfs_tree_setxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *op, const char *name, const char *value, size_t size)
{
        char buf[SNAP_DIGEST_HEX_LEN + 1];
        const char *label;
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        label = sfs_node_label(n, buf);
        if (r == 0 && !t->scope && node_kind(n) == SFS_KIND_STAGING_FILE &&
            strcmp(name, SFS_XATTR_FOR_SCOPE) == 0) {
                r = set_for_scope(t, c, n, value, size);
                tree_unlock(t);
                return r == -EACCES ? sfs_tree_refuse(t, c, op, label, EACCES) : r;
        }
        tree_unlock(t);
        /* Otherwise the attribute's name says nothing about what was attacked. */
        if (r == -ENOENT)
                return r;
        return sfs_tree_refuse(t, c, op, label, r == -EACCES ? EACCES : EROFS);
}


/* ---- per-uid usage ---- */

struct usage_line {
        uint32_t uid;
        uint64_t snapshots, bytes, staging, staging_bytes;
};

static struct usage_line *usage_line_of(struct usage_line *l, size_t *n, uint32_t uid)
{
        for (size_t i = 0; i < *n; i++)
                if (l[i].uid == uid)
                        return &l[i];
        l[*n] = (struct usage_line){ .uid = uid };
        return &l[(*n)++];
}

static int by_bytes(const void *a, const void *b)
{
        const struct usage_line *x = a, *y = b;
        uint64_t tx = x->bytes + x->staging_bytes, ty = y->bytes + y->staging_bytes;
        return tx < ty ? 1 : tx > ty ? -1 : (x->uid > y->uid) - (x->uid < y->uid);
}

/* The value of SFS_XATTR_USAGE, at most SFS_USAGE_MAX bytes. malloc'd, or NULL. */
static char *usage_text(struct sfs_tree *t)
{
        struct snap_store_usage *su = NULL;
        struct usage_line *l = NULL;
        size_t nsu, n = 0, cap, used = 0, shown = 0;
        char *out = NULL;

        /* Sized to what the store holds now; a uid that appears meanwhile is left out. */
        cap = snap_store_list_usage(t->store, NULL, 0) + 1;
        su = calloc(cap, sizeof(*su));
        if (!su)
                return NULL;
        nsu = snap_store_list_usage(t->store, su, cap);
        if (nsu > cap)
                nsu = cap;
        tree_lock(t);
        cap = nsu + t->nstages + 1;
        l = calloc(cap, sizeof(*l));
        if (l) {
                for (size_t i = 0; i < nsu; i++) {
                        struct usage_line *u = usage_line_of(l, &n, su[i].uid);
                        u->snapshots = su[i].objects;
                        u->bytes = su[i].bytes;
                }
                for (size_t i = 0; i < t->nstages; i++) {
                        struct sfs_uidstage *st = t->stages[i];
                        uint64_t b = __atomic_load_n(&st->bytes, __ATOMIC_RELAXED);
                        if (!st->count && !b)
                                continue;
                        struct usage_line *u = usage_line_of(l, &n, (uint32_t)st->uid);
                        u->staging = st->count;
                        u->staging_bytes = b;
                }
        }
        tree_unlock(t);
        free(su);
        out = l ? malloc(SFS_USAGE_MAX + 1) : NULL;
        if (!out) {
                free(l);
                return NULL;
        }
        qsort(l, n, sizeof(*l), by_bytes);
        used = (size_t)snprintf(out, SFS_USAGE_MAX + 1,
                                "limits uid-snapshots=%llu uid-bytes=%llu owner=%u "
                                "reserve-snapshots=%llu reserve-bytes=%llu\n",
                                (unsigned long long)t->cfg.max_uid_snapshots,
                                (unsigned long long)t->cfg.max_uid_bytes,
                                (unsigned)t->cfg.owner_uid,
                                (unsigned long long)t->reserve_objects,
                                (unsigned long long)t->reserve_bytes);
        for (size_t i = 0; i < n; i++) {
                char line[160];
                int k = snprintf(line, sizeof(line),
                                 "uid=%u snapshots=%llu bytes=%llu staging=%llu "
                                 "staging-bytes=%llu\n",
                                 (unsigned)l[i].uid, (unsigned long long)l[i].snapshots,
                                 (unsigned long long)l[i].bytes,
                                 (unsigned long long)l[i].staging,
                                 (unsigned long long)l[i].staging_bytes);
                /* Room kept for the "more" line. */
                if (used + (size_t)k + 24 > SFS_USAGE_MAX)
                        break;
                memcpy(out + used, line, (size_t)k);
                used += (size_t)k;
                shown++;
        }
        if (shown < n)
                used += (size_t)snprintf(out + used, SFS_USAGE_MAX + 1 - used, "more=%zu\n",
                                         n - shown);
        out[used] = '\0';
        free(l);
        return out;
}

/* ---- the store's blobs, re-hashed on demand ---- */

/* A blob of ck found corrupt or missing on disk while the daemon holds its bytes: rewritten
 * from them (the store checks they hash to its name), and counted intact from then on. Only
 * the next start could lose it otherwise: it sets aside what does not hash. */
static bool repair(struct sfs_tree *t, struct sfs_ocistore_check *ck, size_t i)
{
        struct snap_object *obj = snap_store_lookup(t->store, &ck->bad[i].digest);
        int r = obj ? sfs_ocistore_repair(t->cfg.ocistore, &obj->digest, obj->data, obj->size)
                    : -ENOENT;

        if (obj)
                snap_store_release(t->store, obj);
        if (r < 0)
                return false;
        if (ck->bad[i].err == -ENOENT)
                ck->missing--;
        else
                ck->corrupt--;
        ck->intact++;
        ck->bad[i].err = 0;
        return true;
}

/* The value of SFS_XATTR_STORE_CHECK, at most SFS_USAGE_MAX bytes: the daemon re-hashes every
 * blob of --store as it is on disk now. Each problem is also an audit event, so it is on
 * record whoever asked. malloc'd into *out, or a negative errno. */
static int store_check_text(struct sfs_tree *t, const struct sfs_caller *c, char **out)
{
        struct sfs_ocistore_check *ck = malloc(sizeof(*ck));
        char *text = malloc(SFS_USAGE_MAX + 1);
        bool repaired[SFS_OCISTORE_CHECK_NAMED];
        size_t used, bad_shown = 0;
        int r;

        if (!ck || !text) {
                free(ck);
                free(text);
                return -ENOMEM;
        }
        r = sfs_ocistore_check(t->cfg.ocistore, ck);
        if (r < 0) {
                free(ck);
                free(text);
                return r;
        }
        /* Repaired first: the counts then say what is on disk once this answer is given. */
        for (size_t i = 0; i < ck->n_named; i++)
                repaired[i] = repair(t, ck, i);
        used = (size_t)snprintf(text, SFS_USAGE_MAX + 1,
                                "blobs=%llu intact=%llu corrupt=%llu missing=%llu set-aside=%llu\n",
                                (unsigned long long)ck->blobs, (unsigned long long)ck->intact,
                                (unsigned long long)ck->corrupt, (unsigned long long)ck->missing,
                                (unsigned long long)sfs_ocistore_corrupt(t->cfg.ocistore));
        for (size_t i = 0; i < ck->n_named; i++) {
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                const char *what = repaired[i]                ? "repaired"
                                   : ck->bad[i].err == -ENOENT ? "missing"
                                                               : "corrupt";

                snap_digest_to_hex(&ck->bad[i].digest, hex);
                sfs_audit_emit(t->cfg.audit, &(struct sfs_audit_event){
                                                     .event = repaired[i] ? "store-blob-repaired"
                                                                          : "store-blob-corrupt",
                                                     .op = "getxattr",
                                                     .uid = c->uid,
                                                     .pid = c->pid,
                                                     .digest = hex,
                                                     .err = -ck->bad[i].err,
                                             });
                /* Room kept for the "more" line. */
                if (used + 9 + SNAP_DIGEST_HEX_LEN + 2 + 24 > SFS_USAGE_MAX)
                        continue;
                used += (size_t)snprintf(text + used, SFS_USAGE_MAX + 1 - used, "%s %s\n",
                                         what, hex);
                bad_shown += !repaired[i];
        }
        if (bad_shown < ck->corrupt + ck->missing)
                used += (size_t)snprintf(text + used, SFS_USAGE_MAX + 1 - used, "more=%llu\n",
                                         (unsigned long long)(ck->corrupt + ck->missing -
                                                              bad_shown));
        text[used] = '\0';
        free(ck);
        *out = text;
        return 0;
}

static int xattr_value(char *out, size_t outsize, const char *value, size_t vlen, size_t *len)
{
        *len = vlen;
        if (outsize == 0)
                return 0;
        if (outsize < vlen)
                return -ERANGE;
        memcpy(out, value, vlen);
        return 0;
}

/* The staging NAME a snapshot shows: on the main mount its first publisher's; in a view the
 * one it was published under in that scope, and none for what the operator granted (a name
 * another scope chose is that scope's). t->lock held. */
static const char *snapshot_name(struct sfs_tree *t, struct sfs_node *n)
{
        const struct sfs_grant *g;

        if (!t->scope)
                return n->obj->name;
        g = sfs_scope_grant_of(t, &n->obj->digest);
        return g && g->published ? g->name : NULL;
}

/* A scope's usage against its limits, the value of SFS_XATTR_USAGE on its view's root:
 * "limits snapshots=N bytes=N staging=N staging-bytes=N" and "scope=NAME snapshots=N
 * bytes=N staging=N staging-bytes=N grants=N". */
static char *scope_usage_text(struct sfs_tree *t)
{
        const struct sfs_scope_limits *l = &t->scope->limits;
        struct sfs_scope_usage u;
        char *out = NULL;

        sfs_scope_get_usage(t, &u);
        if (asprintf(&out,
                     "limits snapshots=%llu bytes=%llu staging=%llu staging-bytes=%llu\n"
                     "scope=%s snapshots=%llu bytes=%llu staging=%llu staging-bytes=%llu "
                     "grants=%llu\n",
                     (unsigned long long)l->max_snapshots, (unsigned long long)l->max_bytes,
                     (unsigned long long)l->max_staging,
                     (unsigned long long)l->max_staging_bytes, t->scope->name,
                     (unsigned long long)u.snapshots, (unsigned long long)u.bytes,
                     (unsigned long long)u.staging, (unsigned long long)u.staging_bytes,
                     (unsigned long long)u.grants) < 0)
                return NULL;
        return out;
}

/* The root of a scope's view answers for the scope alone: its name and its usage. */
static int scope_root_xattr(struct sfs_tree *t, const char *name, char *buf, size_t bufsize,
                            size_t *len)
{
        _cleanup_free_ char *text = NULL;

        if (strcmp(name, SFS_XATTR_SCOPE) == 0)
                return xattr_value(buf, bufsize, t->scope->name, strlen(t->scope->name), len);
        if (strcmp(name, SFS_XATTR_USAGE) != 0)
                return -ENODATA;
        text = scope_usage_text(t);
        if (!text)
                return -ENOMEM;
        return xattr_value(buf, bufsize, text, strlen(text), len);
}

/* SFS_XATTR_HOLDERS of a main-mount snapshot: "uids=U,U scopes=N" (its holders, and how many
 * scopes it is granted to), for the owner and root alone (-EACCES: whom else a snapshot is
 * held by is not another uid's to learn); -ENODATA in a view. t->lock held. */
static int holders_text(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                        char *value, size_t size)
{
        uint32_t uids[SNAP_HOLDERS_MAX + 1];
        size_t k, o;

        if (t->scope)
                return -ENODATA;
        if (c->uid != 0 && c->uid != t->cfg.owner_uid)
                return -EACCES;
        k = snap_store_get_holders(t->store, n->obj, uids, ARRAY_SIZE(uids));
        o = (size_t)snprintf(value, size, "uids=");
        for (size_t i = 0; i < k && i < ARRAY_SIZE(uids) && o < size; i++)
                o += (size_t)snprintf(value + o, size - o, "%s%" PRIu32, i ? "," : "", uids[i]);
        if (o < size)
                snprintf(value + o, size - o, " scopes=%" PRIu32,
                         snap_store_grants(t->store, n->obj));
        return 0;
}

int sfs_tree_getxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *name, char *buf, size_t bufsize, size_t *len)
{
        char value[SNAP_BINDING_TEXT_MAX];
        struct snap_digest d;
        struct sfs_staging *stg;
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        if (r < 0) {
                tree_unlock(t);
                return r;
        }
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT: {
                const char *sname = snapshot_name(t, n);
                if (strcmp(name, SFS_XATTR_SHA256) == 0) {
                        snap_digest_to_hex(&n->obj->digest, value);
                } else if (strcmp(name, SFS_XATTR_BINDING) == 0) {
                        /* The node's own inode number: in a view, the one it shows there. */
                        struct snap_binding b = {
                                .sha256 = n->obj->digest,
                                .size = n->obj->size,
                                .dev = c->read_view ? t->cfg.read_view_dev : t->cfg.dev,
                                .ino = n->ino,
                        };
                        r = snap_binding_format(&b, value, sizeof(value));
                } else if (strcmp(name, SFS_XATTR_NAME) == 0 && sname) {
                        snprintf(value, sizeof(value), "%s", sname);
                } else if (strcmp(name, SFS_XATTR_HOLDERS) == 0) {
                        r = holders_text(t, c, n, value, sizeof(value));
                } else if (strcmp(name, SFS_XATTR_KIND) == 0) {
                        /* Classified outside the tree lock (a manifest is parsed), on the
                         * object a reference keeps alive, by the classifier every client
                         * uses. Not refused to a uid outside the reader policy: what it tells
                         * is whether the bytes parse as a manifest or an envelope, which
                         * import's names for them say already. */
                        struct snap_object *obj = n->obj;
                        int kind;

                        snap_store_ref(t->store, obj);
                        tree_unlock(t);
                        kind = snap_kind_of(obj->data, (size_t)obj->size);
                        snap_store_release(t->store, obj);
                        if (kind < 0)
                                return kind;
                        return xattr_value(buf, bufsize, snap_kind_name(kind),
                                           strlen(snap_kind_name(kind)), len);
                } else {
                        r = -ENODATA;
                }
                tree_unlock(t);
                break;
        }
        case SFS_KIND_STAGING_FILE:
                if (strcmp(name, SFS_XATTR_SHA256) != 0 && strcmp(name, SFS_XATTR_REFUSAL) != 0) {
                        tree_unlock(t);
                        return -ENODATA;
                }
                stg = n->stg;
                pthread_mutex_lock(&stg->lock);
                tree_unlock(t);
                /* Only the owner gets here: another uid's staging file is invisible
                 * (sfs_check_visible), so no uid learns why another's publish failed. */
                if (strcmp(name, SFS_XATTR_REFUSAL) == 0) {
                        snprintf(value, sizeof(value), "%s", stg->refusal);
                        pthread_mutex_unlock(&stg->lock);
                        if (!value[0])
                                return -ENODATA;
                        break;
                }
                /* The digest of bytes still being written would be a lie a moment later. */
                if (stg->writers)
                        r = -EBUSY;
                else
                        r = sfs_staging_digest(stg, &d);
                pthread_mutex_unlock(&stg->lock);
                if (r == 0)
                        snap_digest_to_hex(&d, value);
                break;
        case SFS_KIND_ROOT:
                if (t->scope) {
                        tree_unlock(t);
                        return scope_root_xattr(t, name, buf, bufsize, len);
                }
                if (strcmp(name, SFS_XATTR_READ_VIEW) == 0) {
                        char path[PATH_MAX];
                        /* Where the view is, asked on the main mount only. */
                        if (c->read_view || !t->view_path) {
                                tree_unlock(t);
                                return -ENODATA;
                        }
                        snprintf(path, sizeof(path), "%s", t->view_path);
                        tree_unlock(t);
                        return xattr_value(buf, bufsize, path, strlen(path), len);
                }
                tree_unlock(t);
                if (strcmp(name, SFS_XATTR_USAGE) == 0) {
                        _cleanup_free_ char *text = usage_text(t);
                        if (!text)
                                return -ENOMEM;
                        return xattr_value(buf, bufsize, text, strlen(text), len);
                }
                if (t->cfg.ocistore && strcmp(name, SFS_XATTR_STORE_CHECK) == 0) {
                        _cleanup_free_ char *text = NULL;
                        /* A re-hash of the whole store is not for every uid to trigger. */
                        if (!sfs_tree_may_check_store(t, c))
                                return sfs_tree_refuse(t, c, "getxattr", NULL, EACCES);
                        r = store_check_text(t, c, &text);
                        if (r < 0)
                                return r;
                        return xattr_value(buf, bufsize, text, strlen(text), len);
                }
                /* What `snapfs audit` reads to learn that --store set blobs aside at start. */
                if (!t->cfg.ocistore || strcmp(name, SFS_XATTR_STORE_CORRUPT) != 0)
                        return -ENODATA;
                snprintf(value, sizeof(value), "%llu",
                         (unsigned long long)sfs_ocistore_corrupt(t->cfg.ocistore));
                break;
        default:
                tree_unlock(t);
                return -ENODATA;
        }
        if (r < 0)
                return r;
        return xattr_value(buf, bufsize, value, strlen(value), len);
}

int sfs_tree_listxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                       char *buf, size_t bufsize, size_t *len)
{
        static const char snapshot_names[] = SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING "\0"
                                             SFS_XATTR_KIND "\0" SFS_XATTR_NAME;
        static const char staging_names[] = SFS_XATTR_SHA256 "\0" SFS_XATTR_REFUSAL;
        static const char root_names[] = SFS_XATTR_USAGE "\0" SFS_XATTR_STORE_CORRUPT;
        enum sfs_kind kind;
        bool named = false, refused = false;
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        kind = node_kind(n);
        if (r == 0 && kind == SFS_KIND_SNAPSHOT)
                named = snapshot_name(t, n) != NULL;
        if (r == 0 && kind == SFS_KIND_STAGING_FILE) {
                pthread_mutex_lock(&n->stg->lock);
                refused = n->stg->refusal[0] != '\0';
                pthread_mutex_unlock(&n->stg->lock);
        }
        tree_unlock(t);
        if (r < 0)
                return r;
        /* The name last, so a snapshot without one lists the first three alone; the same
         * for a staging file's refusal. */
        if (kind == SFS_KIND_SNAPSHOT)
                return xattr_value(buf, bufsize, snapshot_names,
                                   named ? sizeof(snapshot_names)
                                         : sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING
                                                  "\0" SFS_XATTR_KIND),
                                   len);
        if (kind == SFS_KIND_STAGING_FILE)
                return xattr_value(buf, bufsize, staging_names,
                                   refused ? sizeof(staging_names) : sizeof(SFS_XATTR_SHA256),
                                   len);
        if (kind == SFS_KIND_ROOT && t->scope) {
                static const char scope_names[] = SFS_XATTR_USAGE "\0" SFS_XATTR_SCOPE;
                return xattr_value(buf, bufsize, scope_names, sizeof(scope_names), len);
        }
        if (kind == SFS_KIND_ROOT) {
                /* The usage, then the view's path (main mount, with a view), then the
                 * store's (with --store). */
                char names[sizeof(SFS_XATTR_READ_VIEW) + sizeof(root_names)];
                size_t used = sizeof(SFS_XATTR_USAGE);
                bool view;
                tree_lock(t);
                view = t->view_path && !c->read_view;
                tree_unlock(t);
                memcpy(names, SFS_XATTR_USAGE, sizeof(SFS_XATTR_USAGE));
                if (view) {
                        memcpy(names + used, SFS_XATTR_READ_VIEW, sizeof(SFS_XATTR_READ_VIEW));
                        used += sizeof(SFS_XATTR_READ_VIEW);
                }
                if (t->cfg.ocistore) {
                        memcpy(names + used, SFS_XATTR_STORE_CORRUPT,
                               sizeof(SFS_XATTR_STORE_CORRUPT));
                        used += sizeof(SFS_XATTR_STORE_CORRUPT);
                }
                return xattr_value(buf, bufsize, names, used, len);
        }
        *len = 0;
        return 0;
}
