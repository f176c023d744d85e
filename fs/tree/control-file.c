/* SPDX-License-Identifier: MIT */
/* The control channel's transaction file, MNT/.control (docs/design.md, "The control
 * channel"): a descriptor the mount owner or root opened takes one request, a JSON object
 * written in one write() at offset 0, which the daemon executes during that write; the reply
 * is read back from offset 0 until end of file. What a request does is the executor's
 * (sfs_tree_set_control; fs/scopes/registry.c in the daemon): this file only keeps the transaction. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fs/tree/tree-internal.h"
#include "common/util.h"

int sfs_control_open(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                     struct sfs_handle **h, struct sfs_open_info *oi)
{
        struct sfs_ctl *ctl;

        /* The owner's channel: anyone else is refused (and audited by the caller), whatever
         * the mode bits say. */
        if (!sfs_may_control(&t->cfg, c))
                return -EACCES;
        ctl = calloc(1, sizeof(*ctl));
        if (!ctl)
                return -ENOMEM;
        *h = sfs_handle_new(t, n, true);
        if (!*h) {
                free(ctl);
                return -ENOMEM;
        }
        (*h)->ctl = ctl;
        /* Every write and read reaches the daemon: nothing is cached, nothing written back. */
        oi->direct_io = true;
        oi->keep_cache = false;
        oi->flush = false;
        return 0;
}

int sfs_control_write(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_handle *h,
                      const void *buf, size_t size, off_t off)
{
        struct sfs_control_hook hook;
        struct sfs_ctl *ctl = h->ctl;
        char *reply = NULL;
        size_t len = 0;
        int r = 0;

        /* A descriptor handed to another process does not hand it the channel. */
        if (!sfs_may_control(&t->cfg, c))
                return sfs_tree_refuse(t, c, "write", SFS_CONTROL_NAME, EACCES);
        tree_lock(t);
        if (ctl->done || ctl->busy)
                r = -EBUSY; /* one request per descriptor, whatever the second one is */
        /* One request, whole, at offset 0: a write the kernel split (past its largest WRITE)
         * or one at another offset is no request, and nothing is executed. */
        else if (off != 0 || size == 0 || size > SFS_CONTROL_REQUEST_MAX)
                r = -EINVAL;
        else
                ctl->busy = true;
        hook = t->control_hook;
        tree_unlock(t);
        if (r < 0)
                return sfs_tree_refuse(t, c, "write", SFS_CONTROL_NAME, -r);

        /* Executed with no tree lock held: a request takes the registry's and the scopes'
         * locks, and sends invalidations to views, which must never wait for this tree. */
        if (hook.exec)
                r = hook.exec(hook.ctx, c, buf, size, &reply, &len);
        else
                r = -EOPNOTSUPP;

        tree_lock(t);
        ctl->busy = false;
        if (r == 0) {
                ctl->done = true;
                ctl->reply = reply;
                ctl->len = len;
        }
        tree_unlock(t);
        if (r < 0) {
                free(reply);
                return r == -EINVAL ? sfs_tree_refuse(t, c, "write", SFS_CONTROL_NAME, EINVAL)
                                    : r;
        }
        return 0;
}

int sfs_control_read(struct sfs_tree *t, struct sfs_handle *h, size_t size, off_t off,
                     int (*reply)(void *ctx, const void *data, size_t len), void *ctx)
{
        struct sfs_ctl *ctl = h->ctl;
        char *copy = NULL;
        size_t n = 0;
        int r;

        /* off >= 0: sfs_tree_read checked it. The reply never changes once it is there;
         * copied under the lock, answered without it. */
        tree_lock(t);
        if (ctl->done && (uint64_t)off < ctl->len) {
                n = ctl->len - (size_t)off < size ? ctl->len - (size_t)off : size;
                copy = malloc(n);
                if (copy)
                        memcpy(copy, ctl->reply + off, n);
        }
        tree_unlock(t);
        if (n && !copy)
                return -ENOMEM;
        r = reply(ctx, copy ? copy : "", n);
        free(copy);
        return r;
}
