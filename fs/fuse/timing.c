/* SPDX-License-Identifier: MIT */
/* sfs_ops with every request timed (timing.h). An op of fs/fuse/ops.c answers its request before
 * it returns, so the time from its call to its return is the request's time in the daemon,
 * reply included. Nothing here touches the request after the op returned: it is gone then.
 * INIT and FORGET are not timed (once per mount; no reply). */
#include "fs/fuse/timing.h"

#include <fuse_log.h>

#include "fs/base/log.h"
#include "fs/base/metrics.h"

#define TIMED(op, OP, params, args)                                                        \
        static void timed_##op params                                                      \
        {                                                                                  \
                uint64_t t0 = sfs_metrics_now_ns();                                        \
                sfs_ops.op args;                                                           \
                sfs_metrics_request(OP, t0);                                               \
        }

typedef struct fuse_file_info ffi;

TIMED(lookup, SFS_OP_LOOKUP, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
TIMED(getattr, SFS_OP_GETATTR, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
TIMED(setattr, SFS_OP_SETATTR, (fuse_req_t r, fuse_ino_t i, struct stat *a, int s, ffi *fi),
      (r, i, a, s, fi))
TIMED(access, SFS_OP_ACCESS, (fuse_req_t r, fuse_ino_t i, int m), (r, i, m))
TIMED(open, SFS_OP_OPEN, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
TIMED(create, SFS_OP_CREATE, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, ffi *fi),
      (r, p, n, m, fi))
TIMED(read, SFS_OP_READ, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, ffi *fi),
      (r, i, s, o, fi))
TIMED(write, SFS_OP_WRITE,
      (fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o, ffi *fi),
      (r, i, b, s, o, fi))
TIMED(flush, SFS_OP_FLUSH, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
TIMED(release, SFS_OP_RELEASE, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
TIMED(unlink, SFS_OP_UNLINK, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
TIMED(rename, SFS_OP_RENAME,
      (fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn, unsigned f),
      (r, p, n, np, nn, f))
TIMED(mknod, SFS_OP_MKNOD, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d),
      (r, p, n, m, d))
TIMED(mkdir, SFS_OP_MKDIR, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m), (r, p, n, m))
TIMED(rmdir, SFS_OP_RMDIR, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
TIMED(symlink, SFS_OP_SYMLINK, (fuse_req_t r, const char *l, fuse_ino_t p, const char *n),
      (r, l, p, n))
TIMED(link, SFS_OP_LINK, (fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char *nn),
      (r, i, np, nn))
TIMED(opendir, SFS_OP_OPENDIR, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
TIMED(readdir, SFS_OP_READDIR, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, ffi *fi),
      (r, i, s, o, fi))
TIMED(readdirplus, SFS_OP_READDIRPLUS,
      (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, ffi *fi), (r, i, s, o, fi))
TIMED(releasedir, SFS_OP_RELEASEDIR, (fuse_req_t r, fuse_ino_t i, ffi *fi), (r, i, fi))
TIMED(statfs, SFS_OP_STATFS, (fuse_req_t r, fuse_ino_t i), (r, i))
TIMED(getxattr, SFS_OP_GETXATTR, (fuse_req_t r, fuse_ino_t i, const char *n, size_t s),
      (r, i, n, s))
TIMED(listxattr, SFS_OP_LISTXATTR, (fuse_req_t r, fuse_ino_t i, size_t s), (r, i, s))
TIMED(setxattr, SFS_OP_SETXATTR,
      (fuse_req_t r, fuse_ino_t i, const char *n, const char *v, size_t s, int f),
      (r, i, n, v, s, f))
TIMED(removexattr, SFS_OP_REMOVEXATTR, (fuse_req_t r, fuse_ino_t i, const char *n), (r, i, n))

/* libfuse's own messages ("fuse: ..." on its option errors, -d's trace), written as libfuse
 * writes them (no prefix) but through log.c: a daemonized process's reach syslog instead of
 * /dev/null. fuse_log_level's values are syslog's priorities. */
__attribute__((format(printf, 2, 0)))
static void fuse_to_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
        sfs_vlog((int)level, "", fmt, ap);
}

void sfs_timed_ops(struct fuse_lowlevel_ops *out)
{
        /* Every session is made from this table, before its first libfuse call. */
        fuse_set_log_func(fuse_to_log);
        *out = sfs_ops;
        if (out->lookup)
                out->lookup = timed_lookup;
        if (out->getattr)
                out->getattr = timed_getattr;
        if (out->setattr)
                out->setattr = timed_setattr;
        if (out->access)
                out->access = timed_access;
        if (out->open)
                out->open = timed_open;
        if (out->create)
                out->create = timed_create;
        if (out->read)
                out->read = timed_read;
        if (out->write)
                out->write = timed_write;
        if (out->flush)
                out->flush = timed_flush;
        if (out->release)
                out->release = timed_release;
        if (out->unlink)
                out->unlink = timed_unlink;
        if (out->rename)
                out->rename = timed_rename;
        if (out->mknod)
                out->mknod = timed_mknod;
        if (out->mkdir)
                out->mkdir = timed_mkdir;
        if (out->rmdir)
                out->rmdir = timed_rmdir;
        if (out->symlink)
                out->symlink = timed_symlink;
        if (out->link)
                out->link = timed_link;
        if (out->opendir)
                out->opendir = timed_opendir;
        if (out->readdir)
                out->readdir = timed_readdir;
        if (out->readdirplus)
                out->readdirplus = timed_readdirplus;
        if (out->releasedir)
                out->releasedir = timed_releasedir;
        if (out->statfs)
                out->statfs = timed_statfs;
        if (out->getxattr)
                out->getxattr = timed_getxattr;
        if (out->listxattr)
                out->listxattr = timed_listxattr;
        if (out->setxattr)
                out->setxattr = timed_setxattr;
        if (out->removexattr)
                out->removexattr = timed_removexattr;
}
