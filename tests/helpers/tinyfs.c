/* SPDX-License-Identifier: MIT */
/* tinyfs: the smallest low-level FUSE filesystem the mount tests need (a root directory and
 * one read-only file "hello"), in the shape of libfuse's example/hello_ll.c.
 *
 *   tinyfs [--wait-signal] [--log FILE] MOUNTPOINT [-o fsname=..,subtype=..,nosuid,...]
 *
 * Prints "mounted" on stdout once the kernel has the mount. --wait-signal then holds the
 * session loop back until SIGUSR1, so the kernel's INIT stays unanswered and any FUSE request
 * would block: exactly the state of a daemon checking its own mount before serving. --log
 * appends one line per request received, so a test can count round trips. SIGTERM unmounts
 * and exits 0. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char hello_name[] = "hello";
static const char hello_data[] = "hello from tinyfs\n";
static int log_fd = -1;

static void note(const char *op)
{
        if (log_fd >= 0) {
                char line[64];
                int n = snprintf(line, sizeof(line), "%s\n", op);
                if (write(log_fd, line, (size_t)n) < 0)
                        abort(); /* a lost line would make a request count lie */
        }
}

static int tiny_stat(fuse_ino_t ino, struct stat *st)
{
        memset(st, 0, sizeof(*st));
        st->st_ino = ino;
        if (ino == FUSE_ROOT_ID) {
                st->st_mode = S_IFDIR | 0755;
                st->st_nlink = 2;
        } else if (ino == 2) {
                st->st_mode = S_IFREG | 0444;
                st->st_nlink = 1;
                st->st_size = sizeof(hello_data) - 1;
        } else
                return -1;
        return 0;
}

static void tiny_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct stat st;
        (void)fi;
        note("getattr");
        if (tiny_stat(ino, &st) < 0)
                fuse_reply_err(req, ENOENT);
        else
                fuse_reply_attr(req, &st, 1.0);
}

static void tiny_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        struct fuse_entry_param e;
        note("lookup");
        if (parent != FUSE_ROOT_ID || strcmp(name, hello_name) != 0) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        memset(&e, 0, sizeof(e));
        e.ino = 2;
        e.attr_timeout = 1.0;
        e.entry_timeout = 1.0;
        tiny_stat(e.ino, &e.attr);
        fuse_reply_entry(req, &e);
}

static void tiny_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                         struct fuse_file_info *fi)
{
        char buf[256];
        size_t used = 0;
        struct stat st = { 0 };
        const struct {
                const char *name;
                fuse_ino_t ino;
        } ents[] = { { ".", FUSE_ROOT_ID }, { "..", FUSE_ROOT_ID }, { hello_name, 2 } };
        (void)fi;
        note("readdir");
        if (ino != FUSE_ROOT_ID) {
                fuse_reply_err(req, ENOTDIR);
                return;
        }
        for (off_t i = off; i < (off_t)(sizeof(ents) / sizeof(ents[0])); i++) {
                size_t need;
                st.st_ino = ents[i].ino;
                need = fuse_add_direntry(req, buf + used, sizeof(buf) - used, ents[i].name, &st, i + 1);
                if (used + need > size || used + need > sizeof(buf))
                        break;
                used += need;
        }
        fuse_reply_buf(req, buf, used);
}

static void tiny_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        note("open");
        if (ino != 2)
                fuse_reply_err(req, EISDIR);
        else if ((fi->flags & O_ACCMODE) != O_RDONLY)
                fuse_reply_err(req, EACCES);
        else
                fuse_reply_open(req, fi);
}

static void tiny_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
        size_t len = sizeof(hello_data) - 1;
        (void)fi;
        (void)ino;
        note("read");
        if ((size_t)off >= len)
                fuse_reply_buf(req, NULL, 0);
        else
                fuse_reply_buf(req, hello_data + off, size < len - (size_t)off ? size : len - (size_t)off);
}

static void tiny_statfs(fuse_req_t req, fuse_ino_t ino)
{
        struct statvfs sv = { .f_bsize = 4096, .f_namemax = 255 };
        (void)ino;
        note("statfs");
        fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops tiny_ops = {
        .lookup = tiny_lookup,
        .getattr = tiny_getattr,
        .readdir = tiny_readdir,
        .open = tiny_open,
        .read = tiny_read,
        .statfs = tiny_statfs,
};

int main(int argc, char **argv)
{
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        struct fuse_cmdline_opts opts;
        struct fuse_session *se;
        bool wait_signal = false;
        sigset_t held;
        int ret = 1;

        /* Our own options first; everything else goes to libfuse. */
        fuse_opt_add_arg(&args, argv[0]);
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--wait-signal") == 0)
                        wait_signal = true;
                else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
                        log_fd = open(argv[++i], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
                        if (log_fd < 0) {
                                perror("tinyfs: --log");
                                return 1;
                        }
                } else
                        fuse_opt_add_arg(&args, argv[i]);
        }
        if (fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) {
                fprintf(stderr, "usage: tinyfs [--wait-signal] [--log FILE] MOUNTPOINT [-o OPTS]\n");
                return 1;
        }

        /* Blocked before "mounted" is printed, so a test's SIGUSR1 can never be lost. */
        sigemptyset(&held);
        sigaddset(&held, SIGUSR1);
        if (wait_signal)
                sigaddset(&held, SIGTERM);
        sigprocmask(SIG_BLOCK, &held, NULL);

        se = fuse_session_new(&args, &tiny_ops, sizeof(tiny_ops), NULL);
        if (!se)
                goto out_args;
        if (fuse_set_signal_handlers(se) != 0)
                goto out_session;
        if (fuse_session_mount(se, opts.mountpoint) != 0)
                goto out_handlers;
        printf("mounted\n");
        fflush(stdout);

        if (wait_signal) {
                int sig = 0;
                sigwait(&held, &sig);
                if (sig == SIGTERM) {
                        ret = 0;
                        goto out_unmount;
                }
                sigdelset(&held, SIGUSR1);
                sigprocmask(SIG_UNBLOCK, &held, NULL);
        }
        ret = fuse_session_loop(se) < 0 ? 1 : 0;

out_unmount:
        fuse_session_unmount(se);
out_handlers:
        fuse_remove_signal_handlers(se);
out_session:
        fuse_session_destroy(se);
out_args:
        free(opts.mountpoint);
        fuse_opt_free_args(&args);
        return ret;
}
