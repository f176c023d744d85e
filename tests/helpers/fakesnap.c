/* SPDX-License-Identifier: MIT */
/* fakesnap: an impostor. A low-level FUSE filesystem that names itself exactly as snapfs does
 * (fsname=snapfs, subtype=snapfs, nosuid,nodev,noexec: type fuse.snapfs), so the mount check
 * accepts it when its mounter is the trusted owner, and that serves at digest names whatever
 * a test asks for: a symlink, a FIFO, a file of any mode and content. It lets the tests reach
 * the checks a client makes after the mount check, one by one.
 *
 *   fakesnap MOUNTPOINT [ro] [scope=SCOPE] ENTRY...
 *     ro                   mount it read-only
 *     scope=SCOPE          its root names SCOPE in user.snapfs.scope, as a scope's view does
 *     NAME=reg:MODE:FILE   a regular file with FILE's bytes and permission bits MODE (octal)
 *     NAME=dir             an empty directory (".staging=dir": a view that publishes)
 *     NAME=ctl:FILE        a control file: any write is taken whole, every read serves FILE's
 *                          bytes, whatever was written (a daemon's fixed reply)
 *     sha256:NAME=TEXT     the entry NAME (given before) answers TEXT for user.snapfs.sha256
 *     NAME=link:TARGET     a symlink to TARGET
 *     NAME=fifo            a FIFO
 *     NAME=swap:MODE:INO:FIRST:LATER
 *                          a regular file reporting inode number INO: each open serves
 *                          FIRST's bytes until one read has reached their end, then LATER's
 *                          (same size): what a same-uid attacker's server does to pass a client's
 *                          check and then feed the child its own bytes (direct I/O, so the
 *                          page cache never hides a later read)
 *
 * The root directory is owned by the uid the server runs as, as snapfs reports it.
 * Prints "mounted" once the kernel has the mount; SIGTERM unmounts and exits 0. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ENTRIES 16

struct entry {
        char name[128];
        mode_t mode;   /* type and permission bits */
        char *data;    /* content, or the symlink target */
        size_t len;
        ino_t ino;     /* st_ino to report; 0: the node id */
        char *later;   /* swap: served once a read of this open has reached the end of data */
        bool ctl;      /* a control file: writes taken, reads serve data */
        char *sha256;  /* what user.snapfs.sha256 answers, or NULL (ENODATA) */
};

static const char *root_scope; /* what the root answers for user.snapfs.scope, or NULL */
static bool read_only;

static struct entry entries[MAX_ENTRIES];
static size_t n_entries;

/* Inode 1 is the root; entry i is inode i + 2. */
static struct entry *entry_of(fuse_ino_t ino)
{
        return ino >= 2 && ino - 2 < n_entries ? &entries[ino - 2] : NULL;
}

static int fake_stat(fuse_ino_t ino, struct stat *st)
{
        struct entry *e = entry_of(ino);

        memset(st, 0, sizeof(*st));
        st->st_ino = ino;
        if (ino == FUSE_ROOT_ID) {
                st->st_mode = S_IFDIR | 0555;
                st->st_nlink = 2;
                st->st_uid = getuid();
                st->st_gid = getgid();
                return 0;
        }
        if (!e)
                return -ENOENT;
        if (e->ino)
                st->st_ino = e->ino;
        st->st_mode = e->mode;
        st->st_nlink = 1;
        st->st_size = (off_t)e->len;
        return 0;
}

static void fake_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        struct fuse_entry_param ep;

        for (size_t i = 0; parent == FUSE_ROOT_ID && i < n_entries; i++) {
                if (strcmp(entries[i].name, name) != 0)
                        continue;
                memset(&ep, 0, sizeof(ep));
                ep.ino = i + 2;
                ep.attr_timeout = ep.entry_timeout = 1.0;
                fake_stat(ep.ino, &ep.attr);
                fuse_reply_entry(req, &ep);
                return;
        }
        fuse_reply_err(req, ENOENT);
}

static void fake_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct stat st;
        (void)fi;
        if (fake_stat(ino, &st) < 0)
                fuse_reply_err(req, ENOENT);
        else
                fuse_reply_attr(req, &st, 1.0);
}

static void fake_readlink(fuse_req_t req, fuse_ino_t ino)
{
        struct entry *e = entry_of(ino);

        if (!e || !S_ISLNK(e->mode))
                fuse_reply_err(req, EINVAL);
        else
                fuse_reply_readlink(req, e->data);
}

/* Per open: has a read reached the end yet (swap entries). Every one is listed, so what the
 * kernel never released (its RELEASE still queued when SIGTERM ends the loop) is freed at exit
 * rather than reported as a leak. The loop is single-threaded: no lock. */
struct opened {
        bool swapped;
        struct opened *prev, *next;
};
static struct opened *opens;

static void fake_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct entry *e = entry_of(ino);

        if (!e || !S_ISREG(e->mode))
                fuse_reply_err(req, EISDIR);
        else if ((fi->flags & O_ACCMODE) != O_RDONLY && !e->ctl)
                fuse_reply_err(req, EROFS);
        else {
                struct opened *o = calloc(1, sizeof(*o));
                if (!o) {
                        fuse_reply_err(req, ENOMEM);
                        return;
                }
                fi->fh = (uint64_t)(uintptr_t)o;
                fi->direct_io = e->later != NULL || e->ctl;
                if (fuse_reply_open(req, fi) != 0) {
                        free(o);
                        return;
                }
                o->next = opens;
                if (opens)
                        opens->prev = o;
                opens = o;
        }
}

static void opened_free(struct opened *o)
{
        if (o->prev)
                o->prev->next = o->next;
        else
                opens = o->next;
        if (o->next)
                o->next->prev = o->prev;
        free(o);
}

static void fake_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                      struct fuse_file_info *fi)
{
        struct entry *e = entry_of(ino);
        bool *swapped = &((struct opened *)(uintptr_t)fi->fh)->swapped;
        const char *data;
        size_t n;

        if (!e || (size_t)off >= e->len) {
                fuse_reply_buf(req, NULL, 0);
                return;
        }
        data = *swapped && e->later ? e->later : e->data;
        n = size < e->len - (size_t)off ? size : e->len - (size_t)off;
        if ((size_t)off + n == e->len)
                *swapped = true; /* one full read served: every later read gets LATER */
        fuse_reply_buf(req, data + off, n);
}

static void fake_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
        struct entry *e = entry_of(ino);
        (void)buf;
        (void)off;
        (void)fi;
        if (!e || !e->ctl)
                fuse_reply_err(req, EROFS);
        else
                fuse_reply_write(req, size);
}

static void reply_xattr(fuse_req_t req, const char *value, size_t size)
{
        size_t len;

        if (!value) {
                fuse_reply_err(req, ENODATA);
                return;
        }
        len = strlen(value);
        if (size == 0)
                fuse_reply_xattr(req, len);
        else if (size < len)
                fuse_reply_err(req, ERANGE);
        else
                fuse_reply_buf(req, value, len);
}

static void fake_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
        struct entry *e = entry_of(ino);

        if (ino == FUSE_ROOT_ID && strcmp(name, "user.snapfs.scope") == 0)
                reply_xattr(req, root_scope, size);
        else if (e && strcmp(name, "user.snapfs.sha256") == 0)
                reply_xattr(req, e->sha256, size);
        else
                fuse_reply_err(req, ENODATA);
}

static void fake_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        (void)ino;
        opened_free((struct opened *)(uintptr_t)fi->fh);
        fuse_reply_err(req, 0);
}

static void fake_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                         struct fuse_file_info *fi)
{
        char buf[4096];
        size_t used = 0;
        struct stat st = { 0 };
        (void)fi;

        if (ino != FUSE_ROOT_ID) {
                fuse_reply_err(req, ENOTDIR);
                return;
        }
        /* Offsets: 0 ".", 1 "..", 2 + i entry i. */
        for (off_t i = off; i < (off_t)n_entries + 2; i++) {
                const char *name = i == 0 ? "." : i == 1 ? ".." : entries[i - 2].name;
                size_t need;

                st.st_ino = i < 2 ? FUSE_ROOT_ID : (fuse_ino_t)i;
                st.st_mode = i < 2 ? S_IFDIR : entries[i - 2].mode;
                need = fuse_add_direntry(req, buf + used, sizeof(buf) - used, name, &st, i + 1);
                if (used + need > size || used + need > sizeof(buf))
                        break;
                used += need;
        }
        fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops fake_ops = {
        .lookup = fake_lookup,
        .getattr = fake_getattr,
        .readlink = fake_readlink,
        .open = fake_open,
        .read = fake_read,
        .release = fake_release,
        .readdir = fake_readdir,
        .write = fake_write,
        .getxattr = fake_getxattr,
};

static char *slurp(const char *path, size_t *len)
{
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        size_t cap = 0, n;

        *len = 0;
        if (!f)
                return NULL;
        do {
                if (*len + 4096 > cap) {
                        cap = (*len + 4096) * 2;
                        buf = realloc(buf, cap);
                        if (!buf)
                                break;
                }
                n = fread(buf + *len, 1, cap - *len, f);
                *len += n;
        } while (n > 0);
        fclose(f);
        return buf;
}

static int parse_entry(const char *spec)
{
        struct entry *e = &entries[n_entries];
        const char *eq = strchr(spec, '='), *rest;

        if (strcmp(spec, "ro") == 0) {
                read_only = true;
                return 0;
        }
        if (strncmp(spec, "scope=", 6) == 0) {
                root_scope = spec + 6;
                return 0;
        }
        if (strncmp(spec, "sha256:", 7) == 0 && eq) {
                for (size_t i = 0; i < n_entries; i++)
                        if (strlen(entries[i].name) == (size_t)(eq - spec - 7) &&
                            strncmp(entries[i].name, spec + 7, (size_t)(eq - spec - 7)) == 0) {
                                entries[i].sha256 = strdup(eq + 1);
                                return entries[i].sha256 ? 0 : -1;
                        }
                return -1;
        }

        if (!eq || n_entries == MAX_ENTRIES || (size_t)(eq - spec) >= sizeof(e->name))
                return -1;
        memcpy(e->name, spec, (size_t)(eq - spec));
        rest = eq + 1;
        if (strncmp(rest, "reg:", 4) == 0) {
                char *end;
                unsigned long mode = strtoul(rest + 4, &end, 8);
                if (*end != ':' || mode > 07777)
                        return -1;
                e->mode = S_IFREG | (mode_t)mode;
                e->data = slurp(end + 1, &e->len);
                if (!e->data)
                        return -1;
        } else if (strncmp(rest, "link:", 5) == 0) {
                e->mode = S_IFLNK | 0777;
                e->data = strdup(rest + 5);
                e->len = strlen(rest + 5);
        } else if (strncmp(rest, "swap:", 5) == 0) {
                char *end, *first, *later;
                unsigned long mode = strtoul(rest + 5, &end, 8);
                unsigned long long ino;
                size_t later_len;
                if (*end != ':' || mode > 07777)
                        return -1;
                ino = strtoull(end + 1, &end, 10);
                if (*end != ':' || ino == 0)
                        return -1;
                first = strdup(end + 1);
                if (!first || !(later = strchr(first, ':'))) {
                        free(first);
                        return -1;
                }
                *later++ = '\0';
                e->mode = S_IFREG | (mode_t)mode;
                e->ino = (ino_t)ino;
                e->data = slurp(first, &e->len);
                e->later = slurp(later, &later_len);
                free(first);
                if (!e->data || !e->later || later_len != e->len)
                        return -1;
        } else if (strcmp(rest, "fifo") == 0) {
                e->mode = S_IFIFO | 0600;
        } else if (strcmp(rest, "dir") == 0) {
                e->mode = S_IFDIR | 01777;
        } else if (strncmp(rest, "ctl:", 4) == 0) {
                e->mode = S_IFREG | 0600;
                e->ctl = true;
                e->data = slurp(rest + 4, &e->len);
                if (!e->data)
                        return -1;
        } else
                return -1;
        n_entries++;
        return 0;
}

int main(int argc, char **argv)
{
        char *fargv[] = { argv[0], "-o", "fsname=snapfs,subtype=snapfs,nosuid,nodev,noexec",
                          NULL, NULL };
        struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
        struct fuse_session *se;
        int ret = 1;

        if (argc < 2) {
                fprintf(stderr, "usage: fakesnap MOUNTPOINT "
                                "[ro] [scope=SCOPE] NAME=reg:MODE:FILE|NAME=link:TARGET|NAME=fifo|"
                                "NAME=swap:MODE:INO:FIRST:LATER|NAME=dir|NAME=ctl:FILE|"
                                "sha256:NAME=TEXT...\n");
                return 2;
        }
        for (int i = 2; i < argc; i++)
                if (parse_entry(argv[i]) < 0) {
                        fprintf(stderr, "fakesnap: bad entry '%s'\n", argv[i]);
                        return 2;
                }
        if (read_only) {
                fargv[3] = "-oro";
                args.argc = 4;
        }
        se = fuse_session_new(&args, &fake_ops, sizeof(fake_ops), NULL);
        fuse_opt_free_args(&args); /* libfuse copies what it keeps */
        if (!se)
                return 1;
        if (fuse_set_signal_handlers(se) != 0)
                goto out_session;
        if (fuse_session_mount(se, argv[1]) != 0)
                goto out_handlers;
        printf("mounted\n");
        fflush(stdout);
        ret = fuse_session_loop(se) < 0 ? 1 : 0;
        fuse_session_unmount(se);
out_handlers:
        fuse_remove_signal_handlers(se);
out_session:
        fuse_session_destroy(se);
        while (opens)
                opened_free(opens);
        for (size_t i = 0; i < n_entries; i++) {
                free(entries[i].data);
                free(entries[i].later);
                free(entries[i].sha256);
        }
        return ret;
}
