/* SPDX-License-Identifier: MIT */
/* Extended attributes: user.snapfs.sha256, user.snapfs.binding and user.snapfs.name,
 * read-only; on the root with --store, user.snapfs.store-corrupt. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tree-internal.h"
#include "util.h"

#include "binding.h"
#include "ocistore.h"

/* ---- xattrs ---- */

int sfs_tree_setxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *op, const char *name)
{
        char buf[SNAP_DIGEST_HEX_LEN + 1];
        const char *label;
        int r;

        (void)name; /* the attribute's name says nothing about what was attacked */
        pthread_mutex_lock(&t->lock);
        r = sfs_check_visible(t, c, n);
        label = sfs_node_label(n, buf);
        pthread_mutex_unlock(&t->lock);
        if (r == -ENOENT)
                return r;
        return sfs_tree_refuse(t, c, op, label, r == -EACCES ? EACCES : EROFS);
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

int sfs_tree_getxattr(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                      const char *name, char *buf, size_t bufsize, size_t *len)
{
        char value[SNAP_BINDING_TEXT_MAX];
        struct snap_digest d;
        struct sfs_staging *stg;
        int r;

        pthread_mutex_lock(&t->lock);
        r = sfs_check_visible(t, c, n);
        if (r < 0) {
                pthread_mutex_unlock(&t->lock);
                return r;
        }
        switch (node_kind(n)) {
        case SFS_KIND_SNAPSHOT:
                if (strcmp(name, SFS_XATTR_SHA256) == 0) {
                        snap_digest_to_hex(&n->obj->digest, value);
                } else if (strcmp(name, SFS_XATTR_BINDING) == 0) {
                        struct snap_binding b = {
                                .sha256 = n->obj->digest,
                                .size = n->obj->size,
                                .dev = c->read_view ? t->cfg.read_view_dev : t->cfg.dev,
                                .ino = n->obj->ino,
                        };
                        r = snap_binding_format(&b, value, sizeof(value));
                } else if (strcmp(name, SFS_XATTR_NAME) == 0 && n->obj->name) {
                        snprintf(value, sizeof(value), "%s", n->obj->name);
                } else {
                        r = -ENODATA;
                }
                pthread_mutex_unlock(&t->lock);
                break;
        case SFS_KIND_STAGING_FILE:
                if (strcmp(name, SFS_XATTR_SHA256) != 0) {
                        pthread_mutex_unlock(&t->lock);
                        return -ENODATA;
                }
                stg = n->stg;
                pthread_mutex_lock(&stg->lock);
                pthread_mutex_unlock(&t->lock);
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
                pthread_mutex_unlock(&t->lock);
                /* What `snapfs audit` reads to learn that --store set blobs aside at start. */
                if (!t->cfg.ocistore || strcmp(name, SFS_XATTR_STORE_CORRUPT) != 0)
                        return -ENODATA;
                snprintf(value, sizeof(value), "%llu",
                         (unsigned long long)sfs_ocistore_corrupt(t->cfg.ocistore));
                break;
        default:
                pthread_mutex_unlock(&t->lock);
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
                                             SFS_XATTR_NAME;
        static const char staging_names[] = SFS_XATTR_SHA256;
        static const char root_names[] = SFS_XATTR_STORE_CORRUPT;
        enum sfs_kind kind;
        bool named = false;
        int r;

        pthread_mutex_lock(&t->lock);
        r = sfs_check_visible(t, c, n);
        kind = node_kind(n);
        if (r == 0 && kind == SFS_KIND_SNAPSHOT)
                named = n->obj->name != NULL;
        pthread_mutex_unlock(&t->lock);
        if (r < 0)
                return r;
        /* The name last, so a snapshot without one lists the first two alone. */
        if (kind == SFS_KIND_SNAPSHOT)
                return xattr_value(buf, bufsize, snapshot_names,
                                   named ? sizeof(snapshot_names)
                                         : sizeof(SFS_XATTR_SHA256 "\0" SFS_XATTR_BINDING),
                                   len);
        if (kind == SFS_KIND_STAGING_FILE)
                return xattr_value(buf, bufsize, staging_names, sizeof(staging_names), len);
        if (kind == SFS_KIND_ROOT && t->cfg.ocistore)
                return xattr_value(buf, bufsize, root_names, sizeof(root_names), len);
        *len = 0;
        return 0;
}
