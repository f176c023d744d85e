/* SPDX-License-Identifier: MIT */
/* FUSE passthrough to sealed memory files (passthrough.h). */
#include "fs/fuse/passthrough.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/util.h"
#include "fs/base/inostate.h"
#include "fs/base/log.h"
#include "fs/base/metrics.h"
#include "fs/fuse/conn.h"
#include "snapshot/store.h"

/* The kernel's numbers that Debian 12's headers (6.1) and libfuse 3.14 lack (uapi fuse.h,
 * 6.9). */
#define SFS_FUSE_INIT_EXT (1u << 30)
#define SFS_FUSE_WRITEBACK_CACHE (1u << 16)
#define SFS_FUSE_PASSTHROUGH2 (1u << 5) /* in flags2: bit 37 of the 64-bit flags */
#define SFS_FOPEN_DIRECT_IO (1u << 0)
#define SFS_FOPEN_KEEP_CACHE (1u << 1)
#define SFS_FOPEN_PASSTHROUGH (1u << 7)
struct sfs_backing_map {
        int32_t fd;
        uint32_t flags;
        uint64_t padding;
};
#define SFS_FUSE_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct sfs_backing_map)
#define SFS_FUSE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* fuse_init_in and fuse_init_out, as far as they are read or written here. */
struct init_in {
        uint32_t major, minor, max_readahead, flags, flags2;
};
struct init_out {
        uint32_t major, minor, max_readahead, flags;
        uint16_t max_background, congestion_threshold;
        uint32_t max_write, time_gran;
        uint16_t max_pages, map_alignment;
        uint32_t flags2, max_stack_depth;
};
struct open_out {
        uint64_t fh;
        uint32_t open_flags;
        uint32_t backing_id;
};

/* One connection's registration of a snapshot's backing file: id 0 when it failed (for good:
 * the kernel refuses an inode whose opens mix passthrough and cached reads). */
struct reg {
        struct sfs_conn *conn;
        uint32_t id;
        struct reg *next;
};

/* A snapshot's backing file: fd a negative errno when none could be made (read through the
 * daemon), -1 too before the first try. */
struct entry {
        const struct snap_object *obj;
        int fd;
        bool tried;
        void *map; /* the adopted copy the store reads (size bytes), or NULL */
        struct reg *regs;
        struct entry *next;
};

#define BUCKETS 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *table[BUCKETS];
static unsigned n_files;   /* entries with a memory file */
static unsigned max_files; /* --max-backing-files */
static bool wanted, privileged, offered_seen, refused_seen, on_seen, said;
static struct sfs_inostate *record; /* where ids are noted for a successor, or NULL */

static void publish_mode(void);
static void say_read_mode(void);

static _Thread_local bool next_set;
static _Thread_local uint32_t next_id;

/* CAP_SYS_ADMIN in the initial user namespace: FUSE_DEV_IOC_BACKING_OPEN asks capable(), so a
 * root of a user namespace (rootless) is refused (EPERM) at every open. */
static bool check_privileged(void)
{
        char line[256];
        bool cap = false, init_ns = false;
        FILE *f = fopen("/proc/self/status", "re");

        if (f) {
                while (fgets(line, sizeof(line), f)) {
                        unsigned long long eff;
                        if (sscanf(line, "CapEff: %llx", &eff) == 1)
                                cap = eff & (1ULL << 21); /* CAP_SYS_ADMIN */
                }
                fclose(f);
        }
        f = fopen("/proc/self/uid_map", "re");
        if (f) {
                unsigned long a, b, n;
                init_ns = fscanf(f, "%lu %lu %lu", &a, &b, &n) == 3 && a == 0 && b == 0 &&
                          n == 4294967295UL;
                fclose(f);
        }
        return cap && init_ns;
}

void sfs_pt_configure(bool want, struct sfs_inostate *st, unsigned max)
{
        record = st;
        max_files = max;
        wanted = want;
        privileged = want && check_privileged();
        /* One descriptor per backing file (--max-backing-files): the soft limit (often 1,024)
         * is raised to the hard one; past it a snapshot falls back to READ, said nowhere
         * but correct. */
        if (privileged) {
                struct rlimit rl;
                if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                        rl.rlim_cur = rl.rlim_max;
                        setrlimit(RLIMIT_NOFILE, &rl);
                }
        }
        publish_mode();
        /* Said now when the reason is known before any INIT: a daemon stopped before the
         * kernel's INIT still said which mode it serves in. */
        if (!privileged)
                say_read_mode();
}

bool sfs_pt_wanted(void)
{
        return wanted && privileged;
}

bool sfs_pt_init_offered(const void *buf, size_t len)
{
        struct init_in in;
        bool offered;

        if (len < sizeof(in))
                return false;
        memcpy(&in, buf, sizeof(in));
        offered = in.major == 7 && in.minor >= 40 && (in.flags & SFS_FUSE_INIT_EXT) &&
                  (in.flags2 & SFS_FUSE_PASSTHROUGH2);
        pthread_mutex_lock(&lock);
        if (offered)
                offered_seen = true;
        else
                refused_seen = true;
        pthread_mutex_unlock(&lock);
        return offered;
}

bool sfs_pt_patch_init(void *buf, size_t len)
{
        struct init_out out;

        if (len < sizeof(out))
                return false;
        memcpy(&out, buf, sizeof(out));
        out.flags |= SFS_FUSE_INIT_EXT;
        /* The kernel refuses passthrough beside a writeback cache: there is nothing to write
         * back anyway. */
        out.flags &= ~SFS_FUSE_WRITEBACK_CACHE;
        out.flags2 |= SFS_FUSE_PASSTHROUGH2;
        /* Backing files are on shmem, a filesystem stacked on nothing. */
        out.max_stack_depth = 1;
        memcpy(buf, &out, sizeof(out));
        return true;
}

void sfs_pt_conn_on(struct sfs_conn *c)
{
        bool first;

        (void)c;
        pthread_mutex_lock(&lock);
        on_seen = true;
        first = !said;
        said = true;
        pthread_mutex_unlock(&lock);
        publish_mode();
        if (first)
                sfs_log(LOG_INFO, "snapshot reads: passthrough (the kernel reads each snapshot's sealed "
                    "memory file; no READ reaches the daemon)\n");
}

/* The mode, for status and metrics. */
static void publish_mode(void)
{
        const char *why;
        const char *mode = sfs_pt_mode(&why);

        sfs_metrics_set_read_mode(mode, why);
}

const char *sfs_pt_mode(const char **why)
{
        *why = NULL;
        if (on_seen)
                return "passthrough";
        if (!wanted)
                *why = "--no-passthrough";
        else if (!privileged)
                *why = "no CAP_SYS_ADMIN in the initial user namespace";
        else if (refused_seen && !offered_seen)
                *why = "the kernel offers no FUSE passthrough (before 6.9, or built without it)";
        else
                *why = "no connection yet";
        return "read";
}

/* Said once, at the first INIT that did not get passthrough, when none did before. */
static void say_read_mode(void)
{
        const char *why;
        bool first;

        pthread_mutex_lock(&lock);
        first = !said && !on_seen;
        said = true;
        pthread_mutex_unlock(&lock);
        publish_mode();
        sfs_pt_mode(&why);
        if (first)
                sfs_log(LOG_INFO, "snapshot reads: through the daemon (no passthrough: %s)\n", why);
}

void sfs_pt_conn_off(void)
{
        say_read_mode();
}

/* ---- backing files ---- */

static size_t bucket(const struct snap_object *obj)
{
        return ((uintptr_t)obj >> 6) % BUCKETS;
}

static struct entry **find(const struct snap_object *obj)
{
        struct entry **pp = &table[bucket(obj)];

        while (*pp && (*pp)->obj != obj)
                pp = &(*pp)->next;
        return pp;
}

/* A sealed memory file holding obj's content, or -errno. The seals are what a passthrough
 * read trusts: the attack they stop is anyone — a tenant, the daemon's own bug, root through
 * /proc/PID/fd — changing a snapshot's bytes under readers who verified them, since the kernel
 * reads this file, not the daemon's memory. */
static int make_backing(const struct snap_object *obj)
{
        _cleanup_close_ int fd = memfd_create("snapfs-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        uint64_t off = 0;

        if (fd < 0)
                return negative_errno();
        while (off < obj->size) {
                size_t n = obj->size - off > (1u << 30) ? 1u << 30 : (size_t)(obj->size - off);
                ssize_t k = pwrite(fd, obj->data + off, n, (off_t)off);
                if (k <= 0)
                        return k < 0 ? negative_errno() : -EIO;
                off += (uint64_t)k;
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

/* obj's entry: NULL only without memory. */
static struct entry *entry_of(const struct snap_object *obj)
{
        struct entry **pp = find(obj), *e;

        if (*pp)
                return *pp;
        e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        e->obj = obj;
        e->fd = -1;
        *pp = e;
        return e;
}

/* e's memory file, made at the first registration that needs one: 0, -ENOSPC past the
 * bound (the snapshot is then read through the daemon, for good), or -errno. */
static int backing_file(struct entry *e)
{
        if (e->tried)
                return e->fd >= 0 ? 0 : e->fd;
        e->tried = true;
        e->fd = n_files < max_files ? make_backing(e->obj) : -ENOSPC;
        if (e->fd < 0)
                return e->fd;
        n_files++;
        return 0;
}

/* Registers e with c: the id, or 0 when it could not be (for good: noted in g). A connection
 * taken over names what its predecessor registered and did not close: the kernel ties an
 * inode a reader has open to one backing file and refuses any other (EBUSY). */
static uint32_t register_on(struct sfs_conn *c, struct entry *e)
{
        struct sfs_backing_map map = { 0 };
        uint32_t id = 0;
        int r;

        if (c->adopted && (id = sfs_inostate_backing(record, e->obj->digest.bytes, c->id)))
                return id;
        if (backing_file(e) < 0)
                return 0;
        map.fd = e->fd;
        r = ioctl(c->fd, SFS_FUSE_DEV_IOC_BACKING_OPEN, &map);
        if (r <= 0)
                return 0;
        id = (uint32_t)r;
        /* Before the OPEN reply names it: a successor must name the same file. */
        sfs_inostate_note_backing(record, e->obj->digest.bytes, c->id, id, false);
        return id;
}

const uint8_t *sfs_pt_adopt(const struct snap_object *obj)
{
        struct entry *e;
        void *map = NULL;

        if (!sfs_pt_wanted())
                return NULL;
        pthread_mutex_lock(&lock);
        e = entry_of(obj);
        if (e && backing_file(e) == 0) {
                map = mmap(NULL, obj->size, PROT_READ, MAP_SHARED, e->fd, 0);
                e->map = map == MAP_FAILED ? NULL : map;
        }
        pthread_mutex_unlock(&lock);
        return e ? e->map : NULL;
}

int sfs_pt_backing(struct sfs_conn *c, const struct snap_object *obj, uint32_t *id)
{
        struct entry *e;
        struct reg *g;
        int r;

        pthread_mutex_lock(&lock);
        e = entry_of(obj);
        if (!e) {
                pthread_mutex_unlock(&lock);
                return -ENOMEM;
        }
        for (g = e->regs; g && g->conn != c; g = g->next)
                ;
        if (!g && (g = calloc(1, sizeof(*g)))) {
                g->conn = c;
                g->id = register_on(c, e);
                g->next = e->regs;
                e->regs = g;
                if (g->id)
                        sfs_metrics_backing_files(1);
        }
        r = !g ? -ENOMEM : g->id ? 0 : e->fd < 0 && e->tried ? e->fd : -EPERM;
        if (r == 0)
                *id = g->id;
        pthread_mutex_unlock(&lock);
        return r;
}

static void close_reg(const struct entry *e, struct reg *g)
{
        if (g->id) {
                /* Noted first: a successor must never name an id closed since. */
                sfs_inostate_note_backing(record, e->obj->digest.bytes, g->conn->id, g->id,
                                          true);
                /* The kernel keeps the file for readers that have it open; new opens name a
                 * backing id no more. */
                if (ioctl(g->conn->fd, SFS_FUSE_DEV_IOC_BACKING_CLOSE, &g->id) < 0 &&
                    errno != ENOENT)
                        LOG("%s: cannot close backing file %u: %m\n", g->conn->path, g->id);
                sfs_metrics_backing_files(-1);
        }
        free(g);
}

void sfs_pt_forget(const struct snap_object *obj)
{
        struct entry **pp, *e;

        pthread_mutex_lock(&lock);
        pp = find(obj);
        e = *pp;
        if (e) {
                *pp = e->next;
                while (e->regs) {
                        struct reg *g = e->regs;
                        e->regs = g->next;
                        close_reg(e, g);
                }
                if (e->map)
                        munmap(e->map, e->obj->size);
                if (e->fd >= 0) {
                        close(e->fd);
                        n_files--;
                }
                free(e);
        }
        pthread_mutex_unlock(&lock);
}

void sfs_pt_conn_gone(struct sfs_conn *c, bool close_ids)
{
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < BUCKETS; i++)
                for (struct entry *e = table[i]; e; e = e->next)
                        for (struct reg **pp = &e->regs; *pp;) {
                                struct reg *g = *pp;
                                if (g->conn != c) {
                                        pp = &g->next;
                                        continue;
                                }
                                *pp = g->next;
                                if (!close_ids && g->id) {
                                        sfs_metrics_backing_files(-1);
                                        g->id = 0;
                                }
                                close_reg(e, g);
                        }
        pthread_mutex_unlock(&lock);
}

/* ---- OPEN replies ---- */

void sfs_pt_next_open(uint32_t id)
{
        next_set = id != 0;
        next_id = id;
}

void sfs_pt_patch_open(void *buf, size_t len)
{
        struct open_out out;

        if (!next_set || len < sizeof(out))
                return;
        next_set = false;
        memcpy(&out, buf, sizeof(out));
        /* The kernel refuses FOPEN_PASSTHROUGH beside direct I/O; keep_cache means nothing for
         * a file whose pages are the backing file's. */
        out.open_flags &= ~(SFS_FOPEN_DIRECT_IO | SFS_FOPEN_KEEP_CACHE);
        out.open_flags |= SFS_FOPEN_PASSTHROUGH;
        out.backing_id = next_id;
        memcpy(buf, &out, sizeof(out));
}
