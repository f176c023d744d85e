/* SPDX-License-Identifier: MIT */
/* The FUSE low-level operations: each one translates a request into an sfs_tree call (tree.h)
 * and the result into a reply. Every decision is made by the tree's files below (tree.c,
 * file.c, publish.c, listing.c, xattr.c), none here.
 *
 * Node ids are inode numbers (the root's is FUSE_ROOT_ID, 1) and file handles are handle ids,
 * each found again in the tree's tables, never memory addresses: a successor daemon could
 * rebuild them from the store. The kernel only ever sends ids we gave it, and a node lives
 * until the kernel forgets it and no handle is open on it; an id the tree does not know
 * (which the kernel would never send) is answered ESTALE rather than trusted. */
#include "fs/fuse/ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fs/base/lockorder.h"
#include "fs/fuse/conn.h"
#include "fs/fuse/passthrough.h"
#include "fs/tree/tree.h"
#include "common/util.h"

static struct sfs_ops_ctx *ctx_of(fuse_req_t req)
{
        return fuse_req_userdata(req);
}

static struct sfs_node *node_of(fuse_req_t req, fuse_ino_t ino)
{
        return sfs_tree_node(ctx_of(req)->tree, ino);
}

static fuse_ino_t id_of(struct sfs_node *n)
{
        return sfs_node_ino(n);
}

static struct sfs_handle *handle_of(fuse_req_t req, const struct fuse_file_info *fi)
{
        return fi ? sfs_tree_handle(ctx_of(req)->tree, fi->fh) : NULL;
}

/* Every op that names a node starts here: the node, or ESTALE answered and NULL. */
static struct sfs_node *node_or_reply(fuse_req_t req, fuse_ino_t ino)
{
        struct sfs_node *n = node_of(req, ino);

        if (!n)
                fuse_reply_err(req, ESTALE);
        return n;
}

static struct sfs_caller caller_of(fuse_req_t req)
{
        const struct fuse_ctx *c = fuse_req_ctx(req);
        return (struct sfs_caller){
                .uid = c->uid,
                .gid = c->gid,
                .pid = c->pid,
                .read_view = ctx_of(req)->read_view,
        };
}

static void reply_entry(fuse_req_t req, const struct sfs_entry *e)
{
        struct fuse_entry_param p = {
                .ino = id_of(e->node),
                .attr = e->st,
                .attr_timeout = e->attr_timeout,
                .entry_timeout = e->entry_timeout,
        };
        /* If the kernel did not get the entry (interrupted), it will never forget it. */
        if (fuse_reply_entry(req, &p) < 0)
                sfs_tree_forget(ctx_of(req)->tree, e->node, 1);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
        struct sfs_ops_ctx *ctx = userdata;

        /* Let OPEN carry O_TRUNC, so a truncating open of a snapshot is refused in one
         * place (EROFS) instead of as a separate SETATTR. */
        if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
                conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
        /* Content never changes under a name: no GETATTR per read to detect changes. */
        conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
        conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
        conn->time_gran = 1;
        ctx->initialized = true;
}

/* The session ends: no poll handle it gave may be woken after, its channel is gone. */
static void op_destroy(void *userdata)
{
        struct sfs_ops_ctx *ctx = userdata;

        sfs_tree_poll_forget(ctx->tree, ctx);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *dir = node_or_reply(req, parent);
        struct sfs_entry e;
        int r;

        if (!dir)
                return;
        r = sfs_tree_lookup(ctx_of(req)->tree, &c, dir, name, &e);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                reply_entry(req, &e);
}

static void forget_one(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
        struct sfs_node *n;

        if (ino == FUSE_ROOT_ID)
                return;
        n = node_of(req, ino);
        if (n)
                sfs_tree_forget(ctx_of(req)->tree, n, nlookup);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
        forget_one(req, ino, nlookup);
        fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
        for (size_t i = 0; i < count; i++)
                forget_one(req, forgets[i].ino, forgets[i].nlookup);
        fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_or_reply(req, ino);
        struct stat st;
        double timeout;
        int r;

        (void)fi;
        if (!n)
                return;
        r = sfs_tree_getattr(ctx_of(req)->tree, &c, n, &st, &timeout);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_attr(req, &st, timeout);
}

/* What a setattr sets, in the tree's terms; the _NOW forms set a time too. */
static const struct bit_map setattr_bits[] = {
        { FUSE_SET_ATTR_MODE, SFS_SET_MODE },
        { FUSE_SET_ATTR_UID, SFS_SET_UID },
        { FUSE_SET_ATTR_GID, SFS_SET_GID },
        { FUSE_SET_ATTR_SIZE, SFS_SET_SIZE },
        { FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW, SFS_SET_ATIME },
        { FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW, SFS_SET_MTIME },
        { FUSE_SET_ATTR_CTIME, SFS_SET_CTIME },
};

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_or_reply(req, ino);
        struct stat st;
        double timeout;
        int set, r;

        (void)fi;
        if (!n)
                return;
        set = (int)BIT_MAP((unsigned)to_set, setattr_bits);
        if (!set)
                set = SFS_SET_OTHER;
        r = sfs_tree_setattr(ctx_of(req)->tree, &c, n, attr, set, &st, &timeout);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_attr(req, &st, timeout);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_or_reply(req, ino);

        if (n)
                fuse_reply_err(req, -sfs_tree_access(ctx_of(req)->tree, &c, n, mask));
}

/* What an open or create tells the kernel about the new handle. */
static void set_file_info(struct fuse_file_info *fi, struct sfs_handle *h,
                          const struct sfs_open_info *oi)
{
        fi->fh = sfs_handle_id(h);
        fi->keep_cache = oi->keep_cache;
        fi->direct_io = oi->direct_io;
        /* Only staging writes need close() to reach the daemon; for everything else a
         * FLUSH would be a wasted round trip on every close. */
        fi->noflush = !oi->flush;
}

/* Whether ctx's connection serves snapshot reads by passthrough (its INIT asked for it). */
static bool passthrough(const struct sfs_ops_ctx *ctx)
{
        return ctx->conn && __atomic_load_n(&ctx->conn->passthrough, __ATOMIC_ACQUIRE);
}

/* The backing id an open of h names (0: read through the daemon). Decided after the tree
 * judged the open, so every policy (a view's uids, writes refused) is what it was. */
static uint32_t backing_of(struct sfs_ops_ctx *ctx, const struct sfs_handle *h)
{
        const struct snap_object *obj = sfs_handle_snapshot(h);
        uint32_t id = 0;

        if (!obj || !passthrough(ctx) || sfs_pt_backing(ctx->conn, obj, &id) < 0)
                return 0;
        return id;
}

/* The flags an open in a read-only view is judged by. The kernel refused every write intent
 * there before asking (the mount is ro); what is left of O_APPEND on a read-only descriptor
 * cannot write, and the kernel accepted it when the view declined OPEN: so does the daemon
 * when it answers OPEN there (passthrough), and the errno table stays one for both modes. */
static int view_flags(const struct sfs_ops_ctx *ctx, int flags)
{
        if ((ctx->read_view || ctx->no_open) && (flags & O_ACCMODE) == O_RDONLY)
                return flags & ~O_APPEND;
        return flags;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct sfs_ops_ctx *ctx = ctx_of(req);
        struct sfs_caller c = caller_of(req);
        struct sfs_open_info oi = { 0 };
        struct sfs_handle *h;
        struct sfs_node *n;
        int r;

        /* The read view is mounted read-only, so the kernel itself refuses every open for
         * writing, writable shared mappings, truncation and attribute changes before asking
         * us. What is left, read-only opens of immutable files, needs no round trip: ENOSYS
         * tells the kernel to stop sending OPEN (and RELEASE) on this mount altogether. It is
         * only mounted when every uid may read, so no per-open policy is skipped. With
         * passthrough, OPEN is where the backing file is named: answered as anywhere else. */
        if ((ctx->read_view || ctx->no_open) && !passthrough(ctx)) {
                fuse_reply_err(req, ENOSYS);
                return;
        }

        n = node_or_reply(req, ino);
        if (!n)
                return;
        r = sfs_tree_open(ctx->tree, &c, n, view_flags(ctx, fi->flags), &h, &oi);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        set_file_info(fi, h, &oi);
        /* conn.c's writev adds FOPEN_PASSTHROUGH and the id to this very reply. */
        sfs_pt_next_open(backing_of(ctx, h));
        r = fuse_reply_open(req, fi);
        sfs_pt_next_open(0);
        if (r < 0)
                sfs_tree_release(ctx->tree, h);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
        struct sfs_ops_ctx *ctx = ctx_of(req);
        struct sfs_caller c = caller_of(req);
        struct sfs_open_info oi = { 0 };
        struct sfs_node *dir = node_or_reply(req, parent);
        struct sfs_handle *h;
        struct sfs_entry e;
        int r;

        (void)mode; /* staging files are always 0200 */
        if (!dir)
                return;
        r = sfs_tree_create(ctx->tree, &c, dir, name, fi->flags, &e, &h, &oi);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        set_file_info(fi, h, &oi);
        struct fuse_entry_param p = {
                .ino = id_of(e.node),
                .attr = e.st,
                .attr_timeout = e.attr_timeout,
                .entry_timeout = e.entry_timeout,
        };
        if (fuse_reply_create(req, &p, fi) < 0) {
                sfs_tree_release(ctx->tree, h);
                sfs_tree_forget(ctx->tree, e.node, 1);
        }
}

struct read_reply {
        fuse_req_t req;
        bool replied;
};

static int reply_data(void *ctx, const void *data, size_t len)
{
        struct read_reply *rr = ctx;
        rr->replied = true;
        return fuse_reply_buf(rr->req, data, len);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
        struct sfs_handle *h = handle_of(req, fi);
        struct read_reply rr = { .req = req };
        struct sfs_node *n;
        int r;

        /* No handle: the read view, whose opens the kernel made without asking us. The
         * publishing mount always has one, or had it from a predecessor (taken over): the
         * open it answered was judged then, and a snapshot never changes, so the file is
         * read again by its node. */
        if (h)
                r = sfs_tree_read(ctx_of(req)->tree, h, size, off, reply_data, &rr);
        else if ((((ctx_of(req)->read_view || ctx_of(req)->no_open) && fi->fh == 0) ||
                  sfs_tree_id_foreign(ctx_of(req)->tree, fi->fh)) &&
                 (n = node_of(req, ino)))
                r = sfs_tree_read_node(ctx_of(req)->tree, n, size, off, reply_data, &rr);
        else
                r = -EBADF;
        /* A request is answered exactly once: after a failed reply it is already gone. */
        if (r < 0 && !rr.replied)
                fuse_reply_err(req, -r);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
        struct sfs_handle *h = handle_of(req, fi);
        struct sfs_caller c = caller_of(req);
        int r;

        (void)ino;
        /* The read view never writes, even remounted rw by root: it has no handles. */
        if (ctx_of(req)->read_view)
                r = -EROFS;
        else
                r = sfs_tree_write_flags(ctx_of(req)->tree, &c, fi->flags);
        if (r == 0)
                r = sfs_tree_write(ctx_of(req)->tree, &c, h, buf, size, off);
        /* buf lies in libfuse's receive buffer, which the thread reuses: a later request
         * overwrites only its own length of it, so a secret written to a staging file would
         * stay readable in the daemon's memory long after its snapshot was collected. The
         * bytes are copied (or refused) now: zero them. */
        explicit_bzero((void *)(uintptr_t)buf, size);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        (void)ino;
        if (ctx_of(req)->read_view || ctx_of(req)->no_open) {
                /* Nothing is ever written there: no FLUSH on every close(). */
                fuse_reply_err(req, ENOSYS);
                return;
        }
        sfs_tree_flush(ctx_of(req)->tree, handle_of(req, fi));
        fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        (void)ino;
        sfs_tree_release(ctx_of(req)->tree, handle_of(req, fi));
        fuse_reply_err(req, 0);
}

static void wake_poller(void *ph)
{
        /* A poller gone meanwhile is unknown to the kernel now: nothing to tell it. */
        fuse_lowlevel_notify_poll(ph);
        fuse_pollhandle_destroy(ph);
}

static void drop_poller(void *ph)
{
        fuse_pollhandle_destroy(ph);
}

static const struct sfs_poll_ops poll_ops = { .wake = wake_poller, .drop = drop_poller };

/* A watch of an entry (VIEW/.watch.NAME) is readable once the entry moved; ph, when the kernel
 * asks to be told, is woken then (docs/design.md, "Waiting for an entry to move"). Every
 * other file is always ready. Implemented for every node, never ENOSYS: that answer would
 * turn poll off for the whole mount. */
static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                    struct fuse_pollhandle *ph)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_of(req, ino);
        unsigned revents = 0;
        int r;

        if (!n) {
                if (ph)
                        fuse_pollhandle_destroy(ph);
                fuse_reply_err(req, ESTALE);
                return;
        }
        r = sfs_tree_poll(ctx_of(req)->tree, &c, n, fi ? fi->fh : 0, ph, ctx_of(req),
                          &poll_ops, &revents);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_poll(req, revents);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        struct sfs_ops_ctx *ctx = ctx_of(req);
        struct sfs_caller c = caller_of(req);
        struct sfs_node *dir = node_or_reply(req, parent);
        bool root = parent == FUSE_ROOT_ID;
        int r;

        if (!dir)
                return;
        r = sfs_tree_unlink(ctx->tree, &c, dir, name);
        /* The read view's kernel caches the name for a long time and never saw this unlink:
         * drop its entry, or new opens there would still find the removed snapshot. Sent
         * with no lock held, so the view's own workers can answer whatever waits on it. */
        if (r == 0 && root && ctx->view_se) {
                assert(sfs_no_tree_lock_held());
                fuse_lowlevel_notify_inval_entry(ctx->view_se, FUSE_ROOT_ID, name, strlen(name));
        }
        fuse_reply_err(req, -r);
}

/* Hands a just-published snapshot's bytes to the kernel's page cache (NOTIFY_STORE), so the
 * first read after publishing costs no READ round trip, and no GETATTR either (a READ answered
 * by the daemon makes the kernel drop the cached atime, so the next fstat asks again).
 *
 * Called inside the RENAME request, before its reply: the kernel still holds the parents'
 * locks, so nobody can open the new name yet, and with no handle open on the node (checked by
 * sfs_tree_get_content) no mapping exists whose page fault could hold a page lock while it
 * waits for a READ; the store can then never wait on this daemon. After the reply, a reader
 * could fault a page in, and with every worker thread storing, nobody would answer its READ. */
#define PREFILL_CHUNK (1u << 20)

/* true when the page cache now holds the whole snapshot; else *filled is how many bytes from
 * offset 0 on it holds from it. */
static bool prefill(struct sfs_ops_ctx *ctx, struct sfs_node *n, fuse_ino_t id,
                    uint64_t *filled)
{
        struct snap_object *ref;
        const uint8_t *data;
        uint64_t size, off;

        *filled = 0;
        /* Passthrough reads never look at this mount's page cache: filling it would hold the
         * content a second time for nothing. */
        if (passthrough(ctx))
                return false;
        if (sfs_tree_get_content(ctx->tree, n, &ref, (const void **)&data, &size) < 0)
                return false;
        for (off = 0; off < size; off += PREFILL_CHUNK) {
                size_t len = size - off < PREFILL_CHUNK ? (size_t)(size - off) : PREFILL_CHUNK;
                struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);

                bv.buf[0].mem = (void *)(uintptr_t)(data + off);
                /* Only a speed-up: a refusal (memory pressure, say) leaves reads to READ. */
                if (fuse_lowlevel_notify_store(ctx->se, id, (off_t)off, &bv, 0) < 0)
                        break;
        }
        sfs_tree_put_content(ctx->tree, ref);
        *filled = off < size ? off : size;
        return off >= size;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
        struct sfs_ops_ctx *ctx = ctx_of(req);
        struct sfs_caller c = caller_of(req);
        struct sfs_node *published = NULL, *dir, *newdir;
        int r;

        dir = node_of(req, parent);
        newdir = node_of(req, newparent);
        if (!dir || !newdir) {
                fuse_reply_err(req, ESTALE);
                return;
        }
        r = sfs_tree_rename(ctx->tree, &c, dir, name, newdir, newname, flags, &published);
        /* The kernel moves the staging dentry onto the digest name and keeps the attributes
         * it cached for the staging file (mode 0200, its size); drop them so the next stat
         * shows the snapshot (mode 0000). Only attributes (offset -1): no page lock is taken,
         * so this cannot wait on the rename in progress. Sent before the reply, so it lands
         * before the caller's next stat; sent after, it could land behind that stat's GETATTR
         * and throw away the fresh attributes, costing the stat after it another round trip. */
        if (r == 0 && ctx->se) {
                fuse_ino_t id = id_of(published);
                uint64_t filled;

                assert(sfs_no_tree_lock_held());
                fuse_lowlevel_notify_inval_inode(ctx->se, id, -1, 0);
                /* Pages the prefill did not replace (a descriptor was open, or a store was
                 * refused) may hold what the staging file's page cache had before: drop them
                 * all, so a reader can only ever get the snapshot's bytes from the daemon.
                 * Their locks are taken by readers whose READs other workers answer; the
                 * staging file itself is written with direct I/O, so nothing is written back. */
                if (!prefill(ctx, published, id, &filled))
                        fuse_lowlevel_notify_inval_inode(ctx->se, id, (off_t)filled, 0);
        }
        fuse_reply_err(req, -r);
}

static void refuse(fuse_req_t req, const char *op, const char *name)
{
        struct sfs_caller c = caller_of(req);
        fuse_reply_err(req, -sfs_tree_refuse(ctx_of(req)->tree, &c, op, name, EPERM));
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev)
{
        (void)parent, (void)mode, (void)rdev;
        refuse(req, "mknod", name);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
        (void)parent, (void)mode;
        refuse(req, "mkdir", name);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        (void)parent;
        refuse(req, "rmdir", name);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
        (void)link, (void)parent;
        refuse(req, "symlink", name);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
        (void)ino, (void)newparent;
        refuse(req, "link", newname);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct sfs_ops_ctx *ctx = ctx_of(req);
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_or_reply(req, ino);
        struct sfs_dir *d;
        int r;

        if (!n)
                return;
        r = sfs_tree_opendir(ctx->tree, &c, n, &d);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        fi->fh = sfs_dir_id(d);
        if (fuse_reply_open(req, fi) < 0)
                sfs_tree_releasedir(ctx->tree, d);
}

struct dirbuf {
        fuse_req_t req;
        char *buf;
        size_t size;
        size_t used;
        /* readdirplus: every entry returned with attributes is a lookup the kernel will
         * forget. If the reply never reaches the kernel, they are forgotten here. */
        struct sfs_node *dir;
        struct sfs_caller caller;
        struct sfs_node **looked_up;
        size_t nlooked_up, cap;
};

static int fill_dirent(void *ctx, const char *name, uint64_t ino, mode_t mode, off_t next_off)
{
        struct dirbuf *b = ctx;
        struct stat st = { .st_ino = ino, .st_mode = mode };
        size_t need = fuse_add_direntry(b->req, NULL, 0, name, NULL, 0);

        if (b->used + need > b->size)
                return 1;
        fuse_add_direntry(b->req, b->buf + b->used, b->size - b->used, name, &st, next_off);
        b->used += need;
        return 0;
}

/* The open directory fi names. One a predecessor opened (taken over) is opened again for
 * this request alone, as its caller, into *tmp: listings resume at their offset (the root's
 * is an inode number). */
static struct sfs_dir *dir_of(fuse_req_t req, fuse_ino_t ino, const struct fuse_file_info *fi,
                              struct sfs_dir **tmp)
{
        struct sfs_tree *t = ctx_of(req)->tree;
        struct sfs_dir *d = sfs_tree_dir(t, fi->fh);
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n;

        *tmp = NULL;
        if (d || !sfs_tree_id_foreign(t, fi->fh) || !(n = node_of(req, ino)))
                return d;
        return sfs_tree_opendir(t, &c, n, tmp) == 0 ? *tmp : NULL;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
        struct dirbuf b = { .req = req, .size = size };
        struct sfs_dir *tmp;
        int r;

        b.buf = malloc(size ? size : 1);
        if (!b.buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        r = sfs_tree_readdir(ctx_of(req)->tree, dir_of(req, ino, fi, &tmp), off, fill_dirent,
                             &b);
        sfs_tree_releasedir(ctx_of(req)->tree, tmp);
        if (r < 0 && !b.used)
                fuse_reply_err(req, -r);
        else
                fuse_reply_buf(req, b.buf, b.used);
        free(b.buf);
}

/* Each entry goes through the same lookup a LOOKUP request would make (policy, visibility,
 * timeouts), so `ls -l` or an audit of N snapshots costs N / (entries per reply) round trips
 * instead of one LOOKUP each. */
static int fill_dirent_plus(void *ctx, const char *name, uint64_t ino, mode_t mode,
                            off_t next_off)
{
        struct dirbuf *b = ctx;
        struct fuse_entry_param p = { .attr = { .st_ino = (ino_t)ino, .st_mode = mode } };
        size_t need = fuse_add_direntry_plus(b->req, NULL, 0, name, NULL, 0);
        struct sfs_entry e;

        if (b->used + need > b->size || b->nlooked_up == b->cap)
                return 1;
        /* "." and ".." carry no attributes, so no lookup to forget; neither does an entry
         * gone since opendir (ino 0: the kernel lists it and looks it up when asked), nor
         * .staging, which a reader that may not publish would be refused, and audited for,
         * without having asked for it. */
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
            strcmp(name, SFS_STAGING_NAME) != 0 &&
            sfs_tree_lookup(ctx_of(b->req)->tree, &b->caller, b->dir, name, &e) == 0) {
                p.ino = id_of(e.node);
                p.attr = e.st;
                p.attr_timeout = e.attr_timeout;
                p.entry_timeout = e.entry_timeout;
                b->looked_up[b->nlooked_up++] = e.node;
        }
        fuse_add_direntry_plus(b->req, b->buf + b->used, b->size - b->used, name, &p, next_off);
        b->used += need;
        return 0;
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
        struct sfs_ops_ctx *ctx = ctx_of(req);
        struct sfs_dir *tmp;
        struct dirbuf b = {
                .req = req,
                .size = size,
                .dir = node_of(req, ino),
                .caller = caller_of(req),
        };
        int r;

        if (!b.dir) {
                fuse_reply_err(req, ESTALE);
                return;
        }
        b.cap = size / fuse_add_direntry_plus(req, NULL, 0, "", NULL, 0) + 1;
        b.buf = malloc(size ? size : 1);
        b.looked_up = calloc(b.cap, sizeof(*b.looked_up));
        if (!b.buf || !b.looked_up) {
                free(b.buf);
                free(b.looked_up);
                fuse_reply_err(req, ENOMEM);
                return;
        }
        r = sfs_tree_readdir(ctx->tree, dir_of(req, ino, fi, &tmp), off, fill_dirent_plus, &b);
        sfs_tree_releasedir(ctx->tree, tmp);
        if (r < 0 && !b.used)
                fuse_reply_err(req, -r);
        else if (fuse_reply_buf(req, b.buf, b.used) < 0)
                for (size_t i = 0; i < b.nlooked_up; i++)
                        sfs_tree_forget(ctx->tree, b.looked_up[i], 1);
        free(b.buf);
        free(b.looked_up);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        (void)ino;
        sfs_tree_releasedir(ctx_of(req)->tree, sfs_tree_dir(ctx_of(req)->tree, fi->fh));
        fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
        struct sfs_caller c = caller_of(req);
        struct statvfs sv;

        int r;

        (void)ino;
        r = sfs_tree_statfs(ctx_of(req)->tree, &c, &sv);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_statfs(req, &sv);
}

/* The kernel caps xattr sizes at XATTR_SIZE_MAX (64 KiB); our values are far smaller, so a
 * caller's huge buffer is never allocated in full. */
#define XATTR_BUF_MAX 4096

/* getxattr (name), or listxattr (name NULL); size 0 asks for the length alone. */
static void reply_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_tree *t = ctx_of(req)->tree;
        char buf[XATTR_BUF_MAX];
        size_t len = 0, cap = size > sizeof(buf) ? sizeof(buf) : size;
        int r;

        struct sfs_node *n = node_or_reply(req, ino);

        if (!n)
                return;
        r = name ? sfs_tree_getxattr(t, &c, n, name, buf, cap, &len)
                 : sfs_tree_listxattr(t, &c, n, buf, cap, &len);
        if (r < 0)
                fuse_reply_err(req, -r);
        else if (size == 0)
                fuse_reply_xattr(req, len);
        else
                fuse_reply_buf(req, buf, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
        reply_xattr(req, ino, name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
        reply_xattr(req, ino, NULL, size);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_or_reply(req, ino);

        (void)flags;
        if (n)
                fuse_reply_err(req, -sfs_tree_setxattr(ctx_of(req)->tree, &c, n, "setxattr",
                                                       name, value, size));
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
        struct sfs_caller c = caller_of(req);
        struct sfs_node *n = node_or_reply(req, ino);

        if (n)
                fuse_reply_err(req, -sfs_tree_setxattr(ctx_of(req)->tree, &c, n, "removexattr",
                                                       name, NULL, 0));
}

/* flush only reaches the daemon for staging writes (everything else opens with noflush). No
 * fsync, fallocate, ioctl or copy_file_range: the kernel remembers the ENOSYS for fsync and
 * refuses the others. */
const struct fuse_lowlevel_ops sfs_ops = {
        .init = op_init,
        .destroy = op_destroy,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .setattr = op_setattr,
        .access = op_access,
        .open = op_open,
        .create = op_create,
        .read = op_read,
        .write = op_write,
        .flush = op_flush,
        .release = op_release,
        .unlink = op_unlink,
        .rename = op_rename,
        .mknod = op_mknod,
        .mkdir = op_mkdir,
        .rmdir = op_rmdir,
        .symlink = op_symlink,
        .link = op_link,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .releasedir = op_releasedir,
        .statfs = op_statfs,
        .getxattr = op_getxattr,
        .listxattr = op_listxattr,
        .setxattr = op_setxattr,
        .removexattr = op_removexattr,
        .poll = op_poll,
};
