/* SPDX-License-Identifier: MIT */
/* A scope view's watches of its entries (watch.h; docs/design.md, "Waiting for an entry to
 * move"). A lookup of VIEW/.watch.NAME gives a watch bound to what NAME names then; a poll of
 * it is ready once NAME moved to another snapshot or was removed, and until then the poll's
 * handle is kept here and woken (FUSE_NOTIFY_POLL) by the change itself. Nothing polls on a
 * timer.
 *
 * The entry's own file cannot be the thing polled: it is the old snapshot, shared by every
 * name of the same digest, and a view may decline OPEN (no handle to hang a watch on). So the
 * watch is a node of its own, one per (entry, binding): a new lookup after a move finds a new
 * watch (the tree gives it entry timeout 0), and one watch serves every poller of a binding. */
#include "fs/tree/watch.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/tree/tree.h"
#include "snapshot/name.h"

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
        bool marked;                    /* ... but not announced yet: polls say not ready */
        bool gone;                      /* ... nothing: removed */
        struct sfs_poller pollers[WATCH_POLLERS_MAX];
        size_t n_pollers;
        struct sfs_watch *next;
};

struct sfs_watch *sfs_watches_find(const struct sfs_watches *ws, const char *entry)
{
        for (struct sfs_watch *w = ws->head; w; w = w->next)
                if (!w->moved && !w->marked && strcmp(w->entry, entry) == 0)
                        return w;
        return NULL;
}

struct sfs_watch *sfs_watches_add(struct sfs_watches *ws, const char *entry,
                                  const struct snap_digest *d, struct sfs_node *n)
{
        struct sfs_watch *w;

        if (strlen(entry) > SNAP_NAME_MAX || !(w = calloc(1, sizeof(*w))))
                return NULL;
        snprintf(w->entry, sizeof(w->entry), "%s", entry);
        w->digest = *d;
        w->node = n;
        w->next = ws->head;
        ws->head = w;
        return w;
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

void sfs_watches_remove(struct sfs_watches *ws, struct sfs_watch *w)
{
        for (struct sfs_watch **pp = &ws->head; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        while (w->n_pollers)
                drop_at(w, w->n_pollers - 1, false);
        free(w);
}

bool sfs_watches_moved(struct sfs_watches *ws, const char *entry, bool gone)
{
        bool any = false;

        for (struct sfs_watch *w = ws->head; w; w = w->next) {
                if (w->moved || w->marked || strcmp(w->entry, entry) != 0)
                        continue;
                w->marked = any = true;
                w->gone = gone;
        }
        return any;
}

void sfs_watches_announce(struct sfs_watches *ws)
{
        for (struct sfs_watch *w = ws->head; w; w = w->next) {
                if (!w->marked)
                        continue;
                w->marked = false;
                w->moved = true;
                /* Woken under the tree's lock: the kernel's poll wake-up takes its own
                 * spinlock and wakes waiters, it never waits for this daemon (unlike an entry
                 * invalidation, sent with no lock held). */
                while (w->n_pollers)
                        drop_at(w, 0, true);
        }
}

void sfs_watches_forget_owner(struct sfs_watches *ws, const void *owner)
{
        for (struct sfs_watch *w = ws->head; w; w = w->next)
                for (size_t i = w->n_pollers; i-- > 0;)
                        if (w->pollers[i].owner == owner)
                                drop_at(w, i, false);
}

struct sfs_node *sfs_watch_node(const struct sfs_watch *w)
{
        return w->node;
}

bool sfs_watch_moved(const struct sfs_watch *w)
{
        return w->moved;
}

/* Keeps p to be woken when w's entry moves. A handle's earlier one is replaced (the kernel
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

unsigned sfs_watch_poll(struct sfs_watch *w, uint64_t fh, void *ph, const void *owner,
                        const struct sfs_poll_ops *ops)
{
        if (w->moved) {
                if (ph)
                        ops->drop(ph);
                return POLLIN | POLLRDNORM | POLLPRI | (w->gone ? POLLHUP : 0);
        }
        if (ph)
                keep_poller(w, &(struct sfs_poller){
                                       .ph = ph, .owner = owner, .ops = ops, .fh = fh });
        return 0;
}

void sfs_watch_drop_handle(struct sfs_watch *w, uint64_t fh)
{
        for (size_t i = w->n_pollers; fh && i-- > 0;)
                if (w->pollers[i].fh == fh)
                        drop_at(w, i, false);
}
