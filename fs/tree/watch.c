/* SPDX-License-Identifier: MIT */
/* Waiting for an entry of a scope's view to move (docs/design.md, "Waiting for an entry to
 * move"). A lookup of VIEW/.watch.NAME gives a watch node bound to what NAME names then; a
 * poll of it is readable once NAME moved to another snapshot or was removed, and until then
 * the poll's handle is kept here and woken (FUSE_NOTIFY_POLL) by the change itself. Nothing
 * polls on a timer.
 *
 * The entry's own file cannot be the thing polled: it is the old snapshot, shared by every
 * name of the same digest, and a view may decline OPEN (no handle to hang a watch on). So the
 * watch is a node of its own, which the kernel keeps per (entry, binding): a new lookup after a
 * move finds a new watch (entry timeout 0), and one watch serves every poller of one binding. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/tree/tree-internal.h"
#include "common/util.h"

/* Poll handles a watch keeps for pollers that came without a handle of their own (a view
 * whose opens the kernel makes alone), which nothing tells apart or says are gone: past this,
 * the oldest is woken now. A woken poller that still waits polls again and is kept anew; one
 * that gave up costs nothing more. */
#define WATCH_POLLERS_MAX 64

struct sfs_poller {
        void *ph;
        const void *owner;              /* the session the poll came through */
        const struct sfs_poll_ops *ops;
        uint64_t fh;                    /* the handle polled, or 0 */
};

struct sfs_watch {
        struct sfs_node *node;
        char entry[SNAP_NAME_MAX + 1];
        struct snap_digest digest;      /* what the entry named when the watch was made */
        bool moved;                     /* the entry names something else now, or nothing */
        bool gone;                      /* ... nothing: removed */
        struct sfs_poller pollers[WATCH_POLLERS_MAX];
        size_t n_pollers;
        struct sfs_watch *prev, *next;
};

int sfs_watch_lookup(struct sfs_tree *t, const char *entry, struct sfs_node **out)
{
        assert(mutex_held(&t->lock));
        struct sfs_grant_entry *e;
        struct sfs_watch *w;
        struct sfs_node *n;

        /* Only what a lookup of the entry itself would find: a watch is no oracle. */
        if (!t->scope || !snap_name_valid(entry) || snap_is_digest_name(entry))
                return -ENOENT;
        e = sfs_grants_entry(&t->scope->grants, entry);
        if (!e)
                return -ENOENT;
        for (w = t->watches; w; w = w->next)
                if (!w->moved && strcmp(w->entry, entry) == 0) {
                        *out = w->node;
                        return 0;
                }
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        n = sfs_node_new(t, SFS_KIND_WATCH, t->next_watch_ino);
        if (!n) {
                free(w);
                return -ENOMEM;
        }
        t->next_watch_ino++;
        snprintf(w->entry, sizeof(w->entry), "%s", entry);
        w->digest = e->target->digest;
        w->node = n;
        n->watch = w;
        LIST_ADD(t->watches, w);
        *out = n;
        return 0;
}

static void drop_at(struct sfs_watch *w, size_t i, bool wake)
{
        struct sfs_poller p = w->pollers[i];

        memmove(&w->pollers[i], &w->pollers[i + 1], (w->n_pollers - i - 1) * sizeof(p));
        w->n_pollers--;
        if (wake)
                p.ops->wake(p.ph);
        else
                p.ops->drop(p.ph);
}

void sfs_watch_entry_moved(struct sfs_tree *t, const char *entry, bool gone)
{
        assert(mutex_held(&t->lock));
        for (struct sfs_watch *w = t->watches; w; w = w->next) {
                if (w->moved || strcmp(w->entry, entry) != 0)
                        continue;
                w->moved = true;
                w->gone = gone;
                /* Woken under the tree's lock: the kernel's poll wake-up takes its own
                 * spinlock and wakes waiters, it never waits for this daemon (unlike an entry
                 * invalidation, sent with no lock held). */
                while (w->n_pollers)
                        drop_at(w, 0, true);
        }
}

void sfs_watch_drop_handle(struct sfs_tree *t, struct sfs_node *n, uint64_t fh)
{
        assert(mutex_held(&t->lock));
        struct sfs_watch *w = n->watch;

        for (size_t i = w->n_pollers; fh && i-- > 0;)
                if (w->pollers[i].fh == fh)
                        drop_at(w, i, false);
}

bool sfs_watch_moved(const struct sfs_node *n)
{
        return n->watch->moved;
}

void sfs_watch_free(struct sfs_tree *t, struct sfs_node *n)
{
        struct sfs_watch *w = n->watch;

        while (w->n_pollers)
                drop_at(w, w->n_pollers - 1, false);
        LIST_DEL(t->watches, w);
        n->watch = NULL;
        free(w);
}

/* Keeps ph to be woken when w's entry moves. A handle's earlier one is replaced (the kernel
 * wakes a file by its own key, the same for each poll of it); past the bound, the oldest
 * poller is woken now. */
static void keep_poller(struct sfs_watch *w, const struct sfs_poller *p)
{
        for (size_t i = 0; p->fh && i < w->n_pollers; i++)
                if (w->pollers[i].fh == p->fh && w->pollers[i].owner == p->owner) {
                        drop_at(w, i, false);
                        break;
                }
        if (w->n_pollers == WATCH_POLLERS_MAX)
                drop_at(w, 0, true);
        w->pollers[w->n_pollers++] = *p;
}

int sfs_tree_poll(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                  uint64_t fh, void *ph, const void *owner, const struct sfs_poll_ops *ops,
                  unsigned *revents)
{
        struct sfs_watch *w;
        int r;

        tree_lock(t);
        r = sfs_check_visible(t, c, n);
        w = n->watch;
        if (r < 0 || node_kind(n) != SFS_KIND_WATCH) {
                /* A file is always ready, as the kernel says of one whose server does not
                 * implement poll. */
                *revents = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
        } else if (w->moved) {
                *revents = POLLIN | POLLRDNORM | POLLPRI | (w->gone ? POLLHUP : 0);
        } else {
                *revents = 0;
                if (ph)
                        keep_poller(w, &(struct sfs_poller){
                                               .ph = ph, .owner = owner, .ops = ops, .fh = fh });
                ph = NULL;
        }
        tree_unlock(t);
        if (ph)
                ops->drop(ph);
        return r;
}

void sfs_tree_poll_forget(struct sfs_tree *t, const void *owner)
{
        tree_lock(t);
        for (struct sfs_watch *w = t->watches; w; w = w->next)
                for (size_t i = w->n_pollers; i-- > 0;)
                        if (w->pollers[i].owner == owner)
                                drop_at(w, i, false);
        tree_unlock(t);
}
