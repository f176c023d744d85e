/* SPDX-License-Identifier: MIT */
/* --store DIR: publishing into an OCI image layout, the store's checks at open, the snapshots
 * served again at start, and the re-hash of the blobs on disk that `snapfs audit` asks for
 * (ocistore.h). */
#include "fs/store/ocistore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fs/base/lockorder.h"
#include "snapshot/oci.h"
#include "snapshot/name.h"
#include "snapshot/safeopen.h"
#include "snapshot/store.h"
#include "common/array.h"
#include "common/util.h"
#include "common/values.h"

/* What a layer's annotation of holders holds: SNAP_HOLDERS_MAX uids and the privileged one. */
#define HOLDERS_MAX (SNAP_HOLDERS_MAX + 1)
/* "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" */
#define TIME_TEXT_MAX 64
/* How often a start looks again whether the daemon holding the store let it go. */
#define WAIT_STEP_MS 20

struct entry {
        struct snap_digest digest;
        uint64_t size;
        char *title; /* NULL when unknown */
        struct timespec created;
        uint32_t *holders;
        size_t n_holders;
        bool unheld; /* no uid holds it: grants to scopes keep it (an empty annotation) */
};

struct sfs_ocistore {
        struct snap_oci_layout layout;
        pthread_mutex_t lock;
        struct entry *v;
        size_t n, cap;
        bool has_manifest;
        struct snap_digest manifest; /* the blob index.json's tag names now */
        uint64_t manifest_size;
        uint64_t corrupt;
        size_t max_entries; /* SNAP_OCI_ENTRIES_MAX, or less (sfs_ocistore_set_max_entries) */
        bool locked;        /* the store is ours: the pid file is ours to remove */
        bool fs_full;       /* the last add or set_holders failed on a full filesystem */
        int scopesfd;       /* DIR/scopes */
        pthread_mutex_t *lockp; /* &lock, or the durable store's (sfs_ocistore_open_runtime) */
        struct sfs_ocistore *twin; /* the other of a durable store and its runtime store */
};

/* Filesystems whose fsync and rename promise nothing to this host, or that a FUSE daemon
 * (perhaps this one) serves: a store there could lose or forge published snapshots. */
static const struct {
        long magic;
        const char *name;
} remote_fs[] = {
        { 0x65735546, "fuse" },   { NFS_SUPER_MAGIC, "nfs" },  { SMB_SUPER_MAGIC, "smb" },
        { 0xff534d42, "cifs" },   { 0xfe534d42, "smb2" },      { 0x00c36400, "ceph" },
        { V9FS_MAGIC, "9p" },     { AFS_SUPER_MAGIC, "afs" },  { CODA_SUPER_MAGIC, "coda" },
        { 0x7461636f, "ocfs2" },  { 0x01161970, "gfs2" },      { 0x47504653, "gpfs" },
        { 0x0bd00bd0, "lustre" }, { 0x013111a8, "ibrix" },     { 0x6b414653, "kafs" },
};

/* The snapshots may be secrets that --readers keeps from other uids: what the store makes
 * is 0700 (before snap_oci_layout_open, so an existing directory is judged as it is). */
static int make_private_dirs(const char *dir)
{
        _cleanup_close_ int fd = -1, blobs = -1;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (mkdirat(fd, "blobs", 0700) < 0 && errno != EEXIST)
                return negative_errno();
        blobs = openat(fd, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (blobs < 0)
                return negative_errno();
        if (mkdirat(blobs, "sha256", 0700) < 0 && errno != EEXIST)
                return negative_errno();
        if (mkdirat(fd, SFS_OCISTORE_SCOPES_DIR, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* Another uid that can write any directory of the store could plant a blob and a manifest
 * naming it (served as published at the next start, since they hash to their names), or move
 * blobs/sha256 away (nothing served after a restart). -EPERM for a directory not owned by
 * this uid or writable by group or others. */
static int check_private(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
                return -EPERM;
        return 0;
}

/* Every directory of the store, as check_private judges it: the layout's, blobs, blobs/sha256
 * and corrupt (when there is one). *part names the one refused. */
static int check_private_dirs(const struct snap_oci_layout *l, const char **part)
{
        static const char *const subdirs[] = { "blobs", SFS_OCISTORE_SCOPES_DIR,
                                               SFS_OCISTORE_CORRUPT_DIR };
        int r;

        *part = NULL;
        r = check_private(l->dirfd);
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(subdirs); i++) {
                _cleanup_close_ int fd = openat(l->dirfd, subdirs[i],
                                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                *part = subdirs[i];
                if (fd < 0 && errno == ENOENT && i == ARRAY_SIZE(subdirs) - 1)
                        continue; /* corrupt/ is made when a blob is first set aside */
                r = fd < 0 ? negative_errno() : check_private(fd);
        }
        if (r == 0) {
                *part = "blobs/sha256";
                r = check_private(l->blobsfd);
        }
        return r;
}

/* An older store made blobs 0644 and directories 0755: nothing it holds is for other uids.
 * Only regular files and directories this uid owns are changed (check_private_dirs refused
 * directories of other owners; a link is never followed). */
static void make_private(int dirfd, const char *name)
{
        struct stat st;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid() ||
            !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) ||
            !(st.st_mode & (S_IRWXG | S_IRWXO)))
                return;
        /* Best effort, its result looked at (Debian's _FORTIFY_SOURCE makes ignoring it an
         * error): what could refuse a chmod of this uid's own file, a read-only filesystem,
         * leaves it as it was, and the store is served as before. */
        if (fchmodat(dirfd, name, st.st_mode & S_IRWXU, 0) < 0)
                return;
}

/* The pid in DIR/snapfs.pid, or 0. */
static pid_t read_holder(int dirfd)
{
        _cleanup_free_ void *buf = NULL;
        char text[33];
        size_t len;
        long pid;
        char *end;

        if (snap_read_untrusted(dirfd, SFS_OCISTORE_PID_FILE, 32, &buf, &len) < 0)
                return 0;
        memcpy(text, buf, len);
        text[len] = '\0';
        errno = 0;
        pid = strtol(text, &end, 10);
        if (errno || end == text || (*end && *end != '\n') || pid <= 0 || pid > INT32_MAX)
                return 0;
        return (pid_t)pid;
}

int sfs_ocistore_note_pid(struct sfs_ocistore *s, pid_t pid)
{
        _cleanup_close_ int fd = -1;
        char line[32];
        int n = snprintf(line, sizeof(line), "%d\n", (int)pid);

        /* O_NOFOLLOW: the directory is private, but a link there must still not redirect a
         * write. Not durable on purpose: it only names the holder, and the lock decides. */
        fd = openat(s->layout.dirfd, SFS_OCISTORE_PID_FILE,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        if (write(fd, line, (size_t)n) != n)
                return errno ? negative_errno() : -EIO;
        return 0;
}

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Two daemons on one store would each rewrite the manifest without the other's snapshots. The
 * lock is on blobs/sha256, not the layout directory, whose flock snap_oci_tag takes for each
 * index.json update. A daemon that was just unmounted may still be freeing what it served:
 * wait for it up to wait_ms. */
static int take(struct sfs_ocistore *s, unsigned wait_ms, pid_t *holder)
{
        uint64_t deadline = now_ms() + wait_ms;

        for (;;) {
                if (flock(s->layout.blobsfd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                if (errno != EWOULDBLOCK || now_ms() >= deadline)
                        break;
                usleep(WAIT_STEP_MS * 1000);
        }
        if (errno != EWOULDBLOCK)
                return negative_errno();
        if (holder)
                *holder = read_holder(s->layout.dirfd);
        return -EWOULDBLOCK;
}

int sfs_ocistore_open(const char *dir, unsigned wait_ms, struct sfs_ocistore **out,
                      struct sfs_ocistore_why *why)
{
        struct sfs_ocistore_why ignored;
        struct sfs_ocistore *s;
        struct statfs sf;
        int r = 0;

        if (!why)
                why = &ignored;
        *why = (struct sfs_ocistore_why){ 0 };
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->layout = (struct snap_oci_layout)SNAP_OCI_LAYOUT_INIT;
        s->max_entries = SNAP_OCI_ENTRIES_MAX;
        s->scopesfd = -1;
        pthread_mutex_init(&s->lock, NULL);
        s->lockp = &s->lock;
        /* Judged before anything is created: the directory, or where it would be made. */
        if (statfs(dir, &sf) < 0) {
                int e = errno;
                _cleanup_free_ char *parent = strdup(dir);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                if (!parent)
                        r = -ENOMEM;
                else if (e != ENOENT)
                        r = -e;
                else if (statfs(!slash ? "." : slash == parent ? "/" : (*slash = '\0', parent),
                                &sf) < 0)
                        r = negative_errno();
        }
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(remote_fs); i++)
                if ((long)sf.f_type == remote_fs[i].magic) {
                        why->fstype = remote_fs[i].name;
                        r = -EREMOTE;
                }
        if (r == 0)
                r = make_private_dirs(dir);
        if (r == 0)
                r = snap_oci_layout_open(dir, SNAP_OCI_CREATE | SNAP_OCI_PRIVATE, &s->layout);
        if (r == 0)
                r = check_private_dirs(&s->layout, &why->path);
        if (r == 0) {
                s->scopesfd = openat(s->layout.dirfd, SFS_OCISTORE_SCOPES_DIR,
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (s->scopesfd < 0)
                        r = negative_errno();
        }
        if (r == 0)
                r = take(s, wait_ms, &why->holder);
        if (r < 0) {
                sfs_ocistore_close(s);
                return r;
        }
        s->locked = true;
        why->path = NULL;
        /* Only names the holder for a refusal: a full filesystem must not stop the start. */
        sfs_ocistore_note_pid(s, getpid());
        *out = s;
        return 0;
}

static void entry_clear(struct entry *e)
{
        free(e->title);
        free(e->holders);
        *e = (struct entry){ 0 };
}

void sfs_ocistore_close(struct sfs_ocistore *s)
{
        if (!s)
                return;
        /* The pid file first, then the lock (with the descriptors): a daemon waiting for the
         * store never reads the name of one that is gone. */
        if (s->locked && s->layout.dirfd >= 0)
                unlinkat(s->layout.dirfd, SFS_OCISTORE_PID_FILE, 0);
        if (s->twin)
                s->twin->twin = NULL;
        for (size_t i = 0; i < s->n; i++)
                entry_clear(&s->v[i]);
        free(s->v);
        safe_close(s->scopesfd);
        snap_oci_layout_close(&s->layout);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

void sfs_ocistore_set_max_entries(struct sfs_ocistore *s, size_t max)
{
        s->max_entries = max < SNAP_OCI_ENTRIES_MAX ? max : SNAP_OCI_ENTRIES_MAX;
}

void sfs_ocistore_lock(struct sfs_ocistore *s)
{
        sfs_lock_order(s->lockp, SFS_LOCK_OCISTORE);
}

void sfs_ocistore_unlock(struct sfs_ocistore *s)
{
        sfs_unlock_order(s->lockp, SFS_LOCK_OCISTORE);
}

/* RAM filesystems: what they hold never reaches a disk (but swap, which an encrypted or no
 * swap keeps from being one). */
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

int sfs_ocistore_open_runtime(const char *dir, struct sfs_ocistore *durable, unsigned wait_ms,
                              struct sfs_ocistore **out, struct sfs_ocistore_why *why)
{
        struct sfs_ocistore_why ignored;
        struct statfs sf;
        int r;

        if (!why)
                why = &ignored;
        r = sfs_ocistore_open(dir, wait_ms, out, why);
        if (r < 0)
                return r;
        /* Judged where it is now (the directory exists: the open made it). The attack it
         * stops: a scope's secret written in plaintext to a disk, where it outlives its grant
         * in freed blocks, backups and images of the host. */
        if (fstatfs((*out)->layout.dirfd, &sf) < 0 ||
            ((long)sf.f_type != TMPFS_MAGIC && (long)sf.f_type != RAMFS_MAGIC)) {
                sfs_ocistore_close(*out);
                *out = NULL;
                why->fstype = "a disk";
                return -EMEDIUMTYPE;
        }
        if (durable) {
                /* One lock for both: a change may touch either store's files, and the lock
                 * order has room for one store lock. */
                (*out)->lockp = durable->lockp;
                (*out)->twin = durable;
                durable->twin = *out;
        }
        return 0;
}

uint64_t sfs_ocistore_corrupt(const struct sfs_ocistore *s)
{
        return s ? s->corrupt : 0;
}

static ssize_t find(const struct sfs_ocistore *s, const struct snap_digest *d)
{
        for (size_t i = 0; i < s->n; i++)
                if (snap_digest_equal(&s->v[i].digest, d))
                        return (ssize_t)i;
        return -1;
}

/* ---- the annotations of a layer ---- */

/* "0,1000": decimal uids below 4294967295 (no sign, no leading zero), comma-separated, each
 * once, at most HOLDERS_MAX. 0 and *out (malloc'd), or -EINVAL, -ENOMEM. */
static int holders_parse(const char *text, uint32_t **out, size_t *n_out)
{
        _cleanup_free_ uint32_t *v = calloc(HOLDERS_MAX, sizeof(*v));
        size_t n = 0;
        const char *p = text;

        if (!v)
                return -ENOMEM;
        for (;;) {
                size_t len = strcspn(p, ",");
                uint32_t uid;

                /* Each a uid as every command writes one (common/values.h). */
                if (value_parse_uid_n(p, len, &uid) < 0 || n == HOLDERS_MAX)
                        return -EINVAL;
                for (size_t i = 0; i < n; i++)
                        if (v[i] == uid)
                                return -EINVAL;
                v[n++] = uid;
                if (p[len] == '\0')
                        break;
                p += len + 1;
        }
        *out = TAKE_PTR(v);
        *n_out = n;
        return 0;
}

/* The annotation's text: at most 65 uids of up to 10 digits and their commas (below
 * SNAP_OCI_ANNOTATION_MAX). malloc'd or NULL. */
static char *holders_format(const uint32_t *v, size_t n)
{
        char text[HOLDERS_MAX * 11 + 1];
        size_t used = 0;

        text[0] = '\0';
        for (size_t i = 0; i < n && i < HOLDERS_MAX; i++)
                used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%" PRIu32,
                                         i ? "," : "", v[i]);
        return strdup(text);
}

/* RFC 3339 in UTC with nanoseconds, as the image spec's "created" annotation takes it. */
static void time_format(const struct timespec *ts, char out[TIME_TEXT_MAX])
{
        struct tm tm;
        time_t sec = ts->tv_sec;

        if (!gmtime_r(&sec, &tm)) {
                snprintf(out, TIME_TEXT_MAX, "1970-01-01T00:00:00Z");
                return;
        }
        snprintf(out, TIME_TEXT_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts->tv_nsec);
}

/* "YYYY-MM-DDTHH:MM:SS[.fraction]Z": 0 and *out, or -EINVAL. */
static int time_parse(const char *text, struct timespec *out)
{
        struct tm tm = { 0 };
        const char *p;
        long nsec = 0;
        time_t sec;
        int used = 0;

        if (strlen(text) >= TIME_TEXT_MAX ||
            sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 || used != 19)
                return -EINVAL;
        p = text + used;
        if (*p == '.') {
                long scale = 100000000;
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        nsec += (*p - '0') * scale;
                        scale /= 10;
                }
        }
        if (strcmp(p, "Z") != 0 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
            tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
                return -EINVAL;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        sec = timegm(&tm);
        if (sec == (time_t)-1)
                return -EINVAL;
        *out = (struct timespec){ .tv_sec = sec, .tv_nsec = nsec };
        return 0;
}

/* n 0: nobody holds it any more (grants keep it). */
static int entry_set_holders(struct entry *e, const uint32_t *holders, size_t n)
{
        uint32_t *v = NULL;

        if (n > HOLDERS_MAX)
                return -EINVAL;
        if (n) {
                v = malloc(n * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                memcpy(v, holders, n * sizeof(*v));
        }
        free(e->holders);
        e->holders = v;
        e->n_holders = n;
        e->unheld = n == 0;
        return 0;
}

static int push(struct sfs_ocistore *s, const struct snap_digest *d, uint64_t size,
                const struct sfs_ocistore_meta *meta)
{
        struct entry e = { .digest = *d, .size = size, .created = meta->created };
        int r;

        if (ARRAY_GROW(s->v, s->cap, s->n + 1, 64) < 0)
                return -ENOMEM;
        if (meta->title && !(e.title = strdup(meta->title)))
                return -ENOMEM;
        /* A store written before holders were kept: none recorded, the caller decides. One
         * that nobody holds says so. */
        if ((meta->n_holders || meta->unheld) &&
            (r = entry_set_holders(&e, meta->holders, meta->unheld ? 0 : meta->n_holders)) < 0) {
                entry_clear(&e);
                return r;
        }
        s->v[s->n++] = e;
        return 0;
}

/* Takes entry i out, keeping the others in publish order (the order a restart serves them in). */
static struct entry take_out(struct sfs_ocistore *s, size_t i)
{
        struct entry e = s->v[i];

        memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(s->v[0]));
        s->n--;
        return e;
}

static void put_back(struct sfs_ocistore *s, size_t i, struct entry e)
{
        /* s->n < s->cap: the entry was taken out of this array. */
        memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(s->v[0]));
        s->v[i] = e;
        s->n++;
}

/* ---- the manifest ---- */

/* A manifest of s->v, built but not written. */
struct built {
        char *json;
        size_t len;
};

static void built_free(struct built *b)
{
        free(b->json);
        b->json = NULL;
}

/* Builds the manifest of s->v: 0, or -ENOSPC when one manifest cannot name them all (more
 * than max_entries, or past SNAP_OCI_DOC_MAX: it could never be read back at the next
 * start), -ENOMEM. Writes nothing: whatever refuses a publish is known before its blob is
 * written. */
static int build(struct sfs_ocistore *s, struct built *b)
{
        struct snap_oci_desc *layers;
        char (*times)[TIME_TEXT_MAX] = NULL;
        char **holders = NULL;
        struct snap_oci_manifest m = {
                .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS,
                .n_layers = s->n,
        };
        int r = 0;

        *b = (struct built){ 0 };
        if (s->n > s->max_entries)
                return -ENOSPC;
        layers = calloc(s->n ?: 1, sizeof(*layers));
        times = calloc(s->n ?: 1, sizeof(*times));
        holders = calloc(s->n ?: 1, sizeof(*holders));
        if (!layers || !times || !holders)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < s->n; i++) {
                time_format(&s->v[i].created, times[i]);
                if ((s->v[i].n_holders || s->v[i].unheld) &&
                    !(holders[i] = holders_format(s->v[i].holders, s->v[i].n_holders)))
                        r = -ENOMEM;
                layers[i] = (struct snap_oci_desc){
                        .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                        .digest = s->v[i].digest,
                        .size = s->v[i].size,
                        .title = s->v[i].title,
                        .created = times[i],
                        .holders = holders[i],
                };
        }
        if (r == 0) {
                m.layers = layers;
                snap_oci_desc_empty_config(&m.config);
                r = snap_oci_manifest_build(&m, &b->json, &b->len);
                if (r == -EFBIG)
                        r = -ENOSPC;
        }
        for (size_t i = 0; holders && i < s->n; i++)
                free(holders[i]);
        free(holders);
        free(times);
        free(layers);
        return r;
}

static bool index_readable(struct sfs_ocistore *s);
static int index_set_aside(struct sfs_ocistore *s);

/* A write's result, remembered when the filesystem was full (ENOSPC, or EDQUOT: a disk quota)
 * so the caller tells that apart from the manifest's own bounds (sfs_ocistore_full). */
static int wrote(struct sfs_ocistore *s, int r)
{
        s->fs_full = r == -ENOSPC || r == -EDQUOT;
        return r;
}

bool sfs_ocistore_full(const struct sfs_ocistore *s)
{
        return s->fs_full;
}

/* Writes a built manifest (and the empty config blob it names) and points the tag at it: 0
 * once index.json is durable. The manifest it replaces is removed after that (a crash
 * between leaves a blob nothing names, removed at the next start). */
static int write_built(struct sfs_ocistore *s, const struct built *b)
{
        static const char empty[] = "{}";
        struct snap_digest old = s->manifest, d;
        struct snap_oci_desc desc;
        bool had = s->has_manifest;
        int r;

        r = snap_oci_blob_write(&s->layout, empty, sizeof(empty) - 1, NULL);
        if (r >= 0)
                r = snap_oci_blob_write(&s->layout, b->json, b->len, &d);
        if (r < 0)
                return wrote(s, r);
        desc = (struct snap_oci_desc){
                .media_type = (char *)SNAP_OCI_MEDIA_MANIFEST,
                .digest = d,
                .size = b->len,
                .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS,
        };
        r = snap_oci_tag(&s->layout, &desc, SFS_OCISTORE_TAG);
        /* index.json damaged under a running daemon (cut short, a byte flipped): every
         * publish failed EINVAL. What it said is in memory: it is set aside, written anew. */
        if ((r == -EINVAL || r == -EBADMSG || r == -EFBIG) && !index_readable(s) &&
            index_set_aside(s) == 0)
                r = snap_oci_tag(&s->layout, &desc, SFS_OCISTORE_TAG);
        if (r < 0)
                return wrote(s, r);
        s->manifest = d;
        s->manifest_size = b->len;
        s->has_manifest = true;
        if (had && !snap_digest_equal(&old, &d))
                snap_oci_blob_remove(&s->layout, &old);
        return 0;
}

static int commit(struct sfs_ocistore *s)
{
        struct built b;
        int r = build(s, &b);

        if (r == 0)
                r = write_built(s, &b);
        built_free(&b);
        return r;
}

static bool is_empty_config(const struct snap_digest *d)
{
        struct snap_oci_desc c;
        snap_oci_desc_empty_config(&c);
        return snap_digest_equal(&c.digest, d);
}

/* A blob the store must keep whatever happens to the snapshot of the same bytes: the empty
 * config, or the tagged manifest itself. */
static bool needed_by_the_manifest(const struct sfs_ocistore *s, const struct snap_digest *d)
{
        return is_empty_config(d) || (s->has_manifest && snap_digest_equal(d, &s->manifest));
}

int sfs_ocistore_add(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                     size_t len, const struct sfs_ocistore_meta *meta)
{
        struct built b;
        int r, written;

        s->fs_full = false;
        if (find(s, d) >= 0)
                return 0;
        if (meta->n_holders > HOLDERS_MAX)
                return -EINVAL;
        r = push(s, d, len, meta);
        if (r < 0)
                return r;
        /* Every refusal first: a publish that cannot be named writes nothing. */
        r = build(s, &b);
        if (r < 0) {
                entry_clear(&s->v[--s->n]);
                return r;
        }
        written = wrote(s, snap_oci_blob_write(&s->layout, data, len, NULL));
        r = written < 0 ? written : write_built(s, &b);
        built_free(&b);
        if (r < 0) {
                entry_clear(&s->v[--s->n]);
                /* Not published: a blob written for it now goes again, so no older manifest
                 * that still names it (an unlink that could not rewrite a full store's
                 * manifest) serves it after a restart. */
                if (written == 0 && !needed_by_the_manifest(s, d))
                        snap_oci_blob_remove(&s->layout, d);
        }
        return r;
}

static int remove_one(struct sfs_ocistore *s, const struct snap_digest *d);

/* Content of the runtime store that a uid now holds (published on the main mount as well) is
 * the main mount's: it moves to the durable store s, with its holders, and leaves the runtime
 * store. */
static int move_from_twin(struct sfs_ocistore *s, const struct snap_digest *d,
                          const uint32_t *holders, size_t n)
{
        struct sfs_ocistore *t = s->twin;
        ssize_t i = find(t, d);
        struct sfs_ocistore_meta meta = { .holders = holders, .n_holders = n };
        void *buf = NULL;
        uint64_t size;
        int r;

        if (i < 0)
                return -ENOENT;
        size = t->v[i].size;
        meta.title = t->v[i].title;
        meta.created = t->v[i].created;
        r = snap_oci_blob_read(&t->layout, d, size, size, &buf);
        if (r == 0)
                r = sfs_ocistore_add(s, d, buf, (size_t)size, &meta);
        free_zeroed(buf, (size_t)size);
        if (r == 0)
                remove_one(t, d);
        return r;
}

int sfs_ocistore_set_holders(struct sfs_ocistore *s, const struct snap_digest *d,
                             const uint32_t *holders, size_t n)
{
        return sfs_ocistore_set_holders_title(s, d, holders, n, NULL);
}

int sfs_ocistore_set_holders_title(struct sfs_ocistore *s, const struct snap_digest *d,
                                   const uint32_t *holders, size_t n, const char *title)
{
        ssize_t i = find(s, d);
        char *old_title = NULL, *new_title = NULL;
        uint32_t *old;
        size_t old_n;
        bool old_unheld;
        int r;

        s->fs_full = false;
        if (i < 0 && s->twin && n > 0)
                return move_from_twin(s, d, holders, n);
        if (i < 0)
                return -ENOENT;
        if (title && !(new_title = strdup(title)))
                return -ENOMEM;
        old = s->v[i].holders;
        old_n = s->v[i].n_holders;
        old_unheld = s->v[i].unheld;
        s->v[i].holders = NULL;
        if (new_title) {
                old_title = s->v[i].title;
                s->v[i].title = new_title;
        }
        r = entry_set_holders(&s->v[i], holders, n);
        if (r == 0)
                r = commit(s);
        if (r < 0) {
                /* Back as it was: the manifest on disk still says the old holders. */
                free(s->v[i].holders);
                s->v[i].holders = old;
                s->v[i].n_holders = old_n;
                s->v[i].unheld = old_unheld;
                if (new_title) {
                        free(new_title);
                        s->v[i].title = old_title;
                }
                return r;
        }
        free(old);
        free(old_title);
        return 0;
}

int sfs_ocistore_remove(struct sfs_ocistore *s, const struct snap_digest *d)
{
        int r = remove_one(s, d);

        /* A snapshot lives in one of a durable store and its runtime store. */
        if (r == -ENOENT && s->twin)
                r = remove_one(s->twin, d);
        return r;
}

static int remove_one(struct sfs_ocistore *s, const struct snap_digest *d)
{
        ssize_t i = find(s, d);
        struct entry e;
        int r;

        if (i < 0)
                return -ENOENT;
        e = take_out(s, (size_t)i);
        /* The blob first: its removal needs no room, so a full filesystem cannot make a
         * snapshot unremovable, and once it is gone the snapshot can never come back (a
         * crash before the manifest is rewritten leaves an entry without its blob, which the
         * next start drops). */
        if (!needed_by_the_manifest(s, d)) {
                r = snap_oci_blob_remove(&s->layout, d);
                if (r < 0 && r != -ENOENT) {
                        put_back(s, (size_t)i, e);
                        return r;
                }
        }
        entry_clear(&e);
        /* Failing here (ENOSPC) leaves a manifest that names a blob already gone: the next
         * write or start rewrites it. */
        commit(s);
        return 0;
}

/* ---- start: re-hash, set aside, restore, collect ---- */

struct blobset {
        struct snap_digest *v;
        bool *named; /* referenced by a manifest of index.json (or is one) */
        size_t n, cap, cap_named;
};

static int blobset_add(struct blobset *b, const struct snap_digest *d)
{
        if (ARRAY_GROW(b->v, b->cap, b->n + 1, 64) < 0 ||
            ARRAY_GROW(b->named, b->cap_named, b->n + 1, 64) < 0)
                return -ENOMEM;
        b->named[b->n] = false;
        b->v[b->n++] = *d;
        return 0;
}

static ssize_t blobset_find(const struct blobset *b, const struct snap_digest *d)
{
        for (size_t i = 0; i < b->n; i++)
                if (snap_digest_equal(&b->v[i], d))
                        return (ssize_t)i;
        return -1;
}

static void blobset_name(struct blobset *b, const struct snap_digest *d)
{
        ssize_t i = blobset_find(b, d);
        if (i >= 0)
                b->named[i] = true;
}

/* Removes the temporary files of writes a crash interrupted (".tmp-*", snapshot/oci.c), and
 * makes what is left private (files 0600, directories 0700). */
static void tidy(int dirfd)
{
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;

        if (!dir) {
                safe_close(fd);
                return;
        }
        while ((de = readdir(dir))) {
                if (strncmp(de->d_name, ".tmp-", 5) == 0)
                        unlinkat(dirfd, de->d_name, 0);
                else if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        make_private(dirfd, de->d_name);
        }
        closedir(dir);
}

/* Moves name in the directory fromfd to DIR/corrupt/as, durably (both directories synced).
 * 0 or a negative errno. */
static int move_to_corrupt(struct sfs_ocistore *s, int fromfd, const char *name, const char *as)
{
        _cleanup_close_ int cfd = -1;

        if (mkdirat(s->layout.dirfd, SFS_OCISTORE_CORRUPT_DIR, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        cfd = openat(s->layout.dirfd, SFS_OCISTORE_CORRUPT_DIR,
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
                return negative_errno();
        if (renameat(fromfd, name, cfd, as) < 0)
                return negative_errno();
        if (fsync(cfd) < 0 || fsync(fromfd) < 0)
                return negative_errno();
        return 0;
}

/* Moves blobs/sha256/hex to DIR/corrupt/hex, durably. */
static int set_aside(struct sfs_ocistore *s, const char *hex)
{
        return move_to_corrupt(s, s->layout.blobsfd, hex, hex);
}

/* A directory stream of what dirfd names, on a descriptor of its own (dirfd stays open and
 * keeps its offset): 0 and *out, or a negative errno. */
static int open_dir(int dirfd, DIR **out)
{
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r;

        *out = fd >= 0 ? fdopendir(fd) : NULL;
        if (!*out) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
        return 0;
}

/* A blob's verdict: what snap_oci_blob_verify says of a blob that is not intact (other bytes,
 * another size, a link, not a regular file). */
static bool is_corrupt(int v)
{
        return v == -EBADMSG || v == -ELOOP || v == -EINVAL || v == -EISDIR;
}

/* Every blob re-hashed: the intact ones in *good, the others set aside. */
static int rehash_all(struct sfs_ocistore *s, const struct sfs_ocistore_hooks *h,
                      struct blobset *good)
{
        struct dirent *de;
        DIR *dir;
        int r = open_dir(s->layout.blobsfd, &dir);

        if (r < 0)
                return r;
        while (r == 0 && (de = readdir(dir))) {
                struct snap_digest d;
                struct stat st;
                int v;

                if (snap_digest_from_hex(de->d_name, strlen(de->d_name), &d) < 0)
                        continue; /* not a blob name: not ours to judge */
                if (fstatat(s->layout.blobsfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = negative_errno();
                        break;
                }
                v = S_ISREG(st.st_mode) ? snap_oci_blob_verify(&s->layout, &d, (uint64_t)st.st_size)
                                        : S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL;
                if (v == 0) {
                        r = blobset_add(good, &d);
                } else if (is_corrupt(v)) {
                        r = set_aside(s, de->d_name);
                        if (r == 0) {
                                s->corrupt++;
                                h->corrupt(h->ctx, de->d_name, v);
                        }
                } else {
                        r = v;
                }
        }
        closedir(dir);
        return r;
}

/* Marks what index.json's manifests name; returns the tagged manifest (NULL when there is no
 * tag; *broken when the tag names a manifest that is missing or does not load). */
static int name_referenced(struct sfs_ocistore *s, struct blobset *good,
                           struct snap_oci_manifest **tagged, bool *broken)
{
        struct snap_oci_index *ix = NULL;
        int r;

        *tagged = NULL;
        *broken = false;
        r = snap_oci_index_read(&s->layout, &ix);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ix->n_manifests; i++) {
                const struct snap_oci_desc *e = &ix->manifests[i];
                bool ours = e->ref_name && strcmp(e->ref_name, SFS_OCISTORE_TAG) == 0;
                struct snap_oci_manifest *m = NULL;

                blobset_name(good, &e->digest);
                if (blobset_find(good, &e->digest) < 0 ||
                    snap_oci_manifest_load(&s->layout, e, &m) < 0) {
                        if (ours)
                                *broken = true;
                        continue;
                }
                blobset_name(good, &m->config.digest);
                for (size_t j = 0; j < m->n_layers; j++)
                        blobset_name(good, &m->layers[j].digest);
                if (ours && !*tagged) {
                        *tagged = m;
                        s->manifest = e->digest;
                        s->manifest_size = e->size;
                        s->has_manifest = true;
                } else {
                        snap_oci_manifest_free(m);
                }
        }
        snap_oci_index_free(ix);
        return 0;
}

/* ---- index.json lost or damaged: nothing is deleted for it ---- */

#define INDEX_FILE "index.json"

/* Where the JSON of buf breaks, in words, with the byte offset: an operator opens the file
 * there. */
static void json_break(const char *buf, size_t len, char *out, size_t n)
{
        json_tokener *tok = json_tokener_new_ex(64);
        json_object *root = NULL;
        size_t end = 0;

        if (!tok) {
                snprintf(out, n, "not valid JSON");
                return;
        }
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        root = len ? json_tokener_parse_ex(tok, buf, (int)len) : NULL;
        end = json_tokener_get_parse_end(tok);
        if (!len)
                snprintf(out, n, "empty (0 bytes)");
        else if (!root && json_tokener_get_error(tok) == json_tokener_continue)
                snprintf(out, n, "cut short: its JSON ends at byte %zu, before the document does",
                         len);
        else if (!root)
                snprintf(out, n, "not valid JSON at byte %zu (%s)", end,
                         json_tokener_error_desc(json_tokener_get_error(tok)));
        else if (end < len)
                snprintf(out, n, "bytes after its JSON, from byte %zu", end);
        else
                snprintf(out, n, "valid JSON at every byte, but not an OCI image index");
        json_object_put(root);
        json_tokener_free(tok);
}

/* Moves index.json to DIR/corrupt/index.json-SECONDS, durably: kept for the operator, out of
 * the way of the one the store writes next. 0 or a negative errno. */
static int index_set_aside(struct sfs_ocistore *s)
{
        char name[64];

        snprintf(name, sizeof(name), INDEX_FILE "-%lld", (long long)time(NULL));
        return move_to_corrupt(s, s->layout.dirfd, INDEX_FILE, name);
}

/* Whether index.json reads as an OCI index (or is missing: written anew, nothing lost). */
static bool index_readable(struct sfs_ocistore *s)
{
        _cleanup_free_ void *buf = NULL;
        struct snap_oci_index *ix = NULL;
        size_t len = 0;
        int r = snap_read_untrusted(s->layout.dirfd, INDEX_FILE, SNAP_OCI_DOC_MAX, &buf, &len);

        if (r == -ENOENT)
                return true;
        if (r < 0 || snap_oci_index_parse(buf, len, &ix) < 0)
                return false;
        snap_oci_index_free(ix);
        return true;
}

/* The attack on the store's own data: index.json deleted (or cut short, or a byte flipped),
 * then a start, and every blob it no longer named was removed as unfinished. Here a missing
 * index.json beside blobs, or one that does not read, makes *lost true: the caller serves
 * every intact blob, untitled, and deletes nothing. A damaged one is set aside first, named
 * with the byte where it breaks. 0, or a negative errno that leaves the store unusable. */
static int index_check(struct sfs_ocistore *s, const struct sfs_ocistore_hooks *h,
                       const struct blobset *good, bool *lost)
{
        _cleanup_free_ void *buf = NULL;
        struct snap_oci_index *ix = NULL;
        char what[256], why[160];
        size_t len = 0;
        int r = snap_read_untrusted(s->layout.dirfd, INDEX_FILE, SNAP_OCI_DOC_MAX, &buf, &len);

        *lost = false;
        if (r == -ENOENT) {
                for (size_t i = 0; i < good->n; i++)
                        if (!is_empty_config(&good->v[i]))
                                *lost = true;
                if (*lost)
                        h->warn(h->ctx, INDEX_FILE, "missing beside the store's blobs; every "
                                "intact blob is served, untitled, and nothing is deleted",
                                -ENOENT);
                return 0;
        }
        if (r == 0 && snap_oci_index_parse(buf, len, &ix) == 0) {
                snap_oci_index_free(ix);
                return 0;
        }
        if (r == 0)
                json_break(buf, len, why, sizeof(why));
        else
                snprintf(why, sizeof(why), "cannot be read (%s)", strerror(-r));
        r = index_set_aside(s);
        if (r < 0)
                return r;
        snprintf(what, sizeof(what), "%s; set aside in %s/, every intact blob is served, "
                 "untitled, and nothing is deleted", why, SFS_OCISTORE_CORRUPT_DIR);
        h->warn(h->ctx, INDEX_FILE, what, -EBADMSG);
        *lost = true;
        return 0;
}

static bool was_set_aside(const struct sfs_ocistore *s, const char *hex)
{
        int cfd = openat(s->layout.dirfd, SFS_OCISTORE_CORRUPT_DIR,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        bool found = cfd >= 0 && faccessat(cfd, hex, F_OK, AT_SYMLINK_NOFOLLOW) == 0;

        safe_close(cfd);
        return found;
}

/* What a layer's annotations say (the entry keeps its own copies): its holders and first
 * publish, or for a store written before they were kept, no holders and the blob's
 * modification time. An annotation that does not parse is warned about and treated as
 * absent. *holders is malloc'd. */
static void layer_meta(struct sfs_ocistore *s, const struct sfs_ocistore_hooks *h,
                       const struct snap_oci_desc *l, struct sfs_ocistore_meta *meta,
                       uint32_t **holders)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct stat st;
        size_t n = 0;

        snap_digest_to_hex(&l->digest, hex);
        *holders = NULL;
        *meta = (struct sfs_ocistore_meta){ .title = l->title };
        if (l->holders && !*l->holders) {
                meta->unheld = true; /* held by nobody: its grants, restored later, keep it */
        } else if (l->holders && holders_parse(l->holders, holders, &n) < 0) {
                h->warn(h->ctx, hex, "its holders annotation does not parse; held by the owner",
                        -EINVAL);
                n = 0;
        }
        meta->holders = *holders;
        meta->n_holders = n;
        if (l->created && time_parse(l->created, &meta->created) == 0)
                return;
        if (l->created)
                h->warn(h->ctx, hex, "its created annotation does not parse; the blob's time "
                                     "is used", -EINVAL);
        if (fstatat(s->layout.blobsfd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0)
                meta->created = st.st_mtim;
}

static void restore_one(struct sfs_ocistore *s, const struct sfs_ocistore_hooks *h,
                        const struct snap_digest *d, uint64_t size, uint64_t max_size,
                        const struct sfs_ocistore_meta *meta)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        void *buf = NULL;
        int r;

        snap_digest_to_hex(d, hex);
        r = snap_oci_blob_read(&s->layout, d, size, max_size, &buf);
        if (r == 0) {
                r = h->restore(h->ctx, d, buf, (size_t)size, meta);
                if (r != 0)
                        free(buf);
        }
        if (r != 0)
                h->warn(h->ctx, hex, "stored but not served", r < 0 ? r : -EEXIST);
}

/* The snapshots the tagged manifest m names, served again from the intact blobs (good):
 * each pushed and handed to the hooks; one whose blob is set aside or gone left out (and
 * *changed: the manifest is to be rewritten), a missing one said. 0 or -errno. */
static int load_layers(struct sfs_ocistore *s, const struct snap_oci_manifest *m,
                       const struct blobset *good, uint64_t max_size,
                       const struct sfs_ocistore_hooks *h, bool *changed)
{
        int r = 0;

        for (size_t i = 0; i < m->n_layers && r == 0; i++) {
                const struct snap_oci_desc *l = &m->layers[i];
                char hex[SNAP_DIGEST_HEX_LEN + 1];
                struct sfs_ocistore_meta meta;
                uint32_t *holders;

                if (find(s, &l->digest) >= 0)
                        continue;
                if (blobset_find(good, &l->digest) < 0) {
                        /* Set aside (reported already), or gone: an unlink that took the blob
                         * and could not rewrite the manifest, or a loss. */
                        snap_digest_to_hex(&l->digest, hex);
                        if (faccessat(s->layout.blobsfd, hex, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
                            errno == ENOENT && !was_set_aside(s, hex))
                                h->warn(h->ctx, hex, "named by the manifest but missing (an "
                                        "unlink that did not finish, or a loss); dropped",
                                        -ENOENT);
                        *changed = true;
                        continue;
                }
                layer_meta(s, h, l, &meta, &holders);
                r = push(s, &l->digest, l->size, &meta);
                if (r == 0)
                        restore_one(s, h, &l->digest, l->size, max_size, &meta);
                free(holders);
        }
        return r;
}

/* The tag names a manifest that is gone: every intact blob (good) that no other manifest
 * names is served as a snapshot (titles are lost) rather than deleted, and marked named.
 * 0 or -errno. */
static int load_untitled(struct sfs_ocistore *s, struct blobset *good, uint64_t max_size,
                         const struct sfs_ocistore_hooks *h)
{
        int r = 0;

        for (size_t i = 0; i < good->n && r == 0; i++) {
                struct sfs_ocistore_meta meta = { 0 };
                struct stat st;
                char hex[SNAP_DIGEST_HEX_LEN + 1];

                if (good->named[i] || is_empty_config(&good->v[i]))
                        continue;
                snap_digest_to_hex(&good->v[i], hex);
                if (fstatat(s->layout.blobsfd, hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                meta.created = st.st_mtim;
                r = push(s, &good->v[i], (uint64_t)st.st_size, &meta);
                if (r == 0) {
                        good->named[i] = true;
                        restore_one(s, h, &good->v[i], (uint64_t)st.st_size, max_size, &meta);
                }
        }
        return r;
}

int sfs_ocistore_load(struct sfs_ocistore *s, uint64_t max_size,
                      const struct sfs_ocistore_hooks *h)
{
        static const char *const dirs[] = { ".", "blobs", "blobs/sha256",
                                            SFS_OCISTORE_SCOPES_DIR };
        struct blobset good = { 0 };
        struct snap_oci_manifest *m = NULL;
        bool broken = false, changed = false, lost = false;
        int r;

        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
                make_private(s->layout.dirfd, dirs[i]);
        tidy(s->layout.dirfd);
        tidy(s->layout.blobsfd);
        tidy(s->scopesfd);
        r = rehash_all(s, h, &good);
        if (r == 0)
                r = index_check(s, h, &good, &lost);
        if (r == 0)
                r = name_referenced(s, &good, &m, &broken);
        if (r < 0)
                goto out;
        if (m) {
                r = load_layers(s, m, &good, max_size, h, &changed);
        } else if (broken || lost) {
                r = load_untitled(s, &good, max_size, h);
                if (broken)
                        h->warn(h->ctx, SFS_OCISTORE_TAG, "the tagged manifest is missing or "
                                "corrupt; every intact blob is served, untitled", -EBADMSG);
                changed = true;
        }
        if (r < 0)
                goto out;
        if (!s->has_manifest && !broken && !lost) {
                /* A fresh store: tagged at once, so standard tools read it before the first
                 * publish. A store that cannot even hold that cannot take a publish either. */
                r = commit(s);
                if (r < 0)
                        goto out;
        } else if (changed) {
                /* What is served holds without it: the next write brings the manifest in line
                 * (a full filesystem must not keep the daemon from starting). */
                int c = commit(s);
                if (c < 0)
                        h->warn(h->ctx, SFS_OCISTORE_TAG, "the manifest could not be rewritten "
                                                          "without what is gone", c);
        }
        /* A blob nothing names is a publish that never reached index.json (it was never
         * answered) or an unlink that did: either way not a snapshot. Only an index.json
         * that was read says so: without one, nothing is deleted. */
        for (size_t i = 0; i < good.n && !lost; i++) {
                if (good.named[i] || find(s, &good.v[i]) >= 0 ||
                    needed_by_the_manifest(s, &good.v[i]))
                        continue;
                snap_oci_blob_remove(&s->layout, &good.v[i]);
        }
out:
        snap_oci_manifest_free(m);
        free(good.v);
        free(good.named);
        return r;
}

/* ---- the scopes' files ---- */

/* "NAME.json" for a scope name, or -EINVAL. */
static int scope_file(const char *name, char out[SNAP_NAME_MAX + 6])
{
        if (!snap_name_valid(name))
                return -EINVAL;
        snprintf(out, SNAP_NAME_MAX + 6, "%s.json", name);
        return 0;
}

int sfs_ocistore_put_scope(struct sfs_ocistore *s, const char *name, const void *data,
                           size_t len)
{
        char file[SNAP_NAME_MAX + 6];
        int r = scope_file(name, file);

        if (r < 0 || len > SFS_OCISTORE_SCOPE_MAX)
                return -EINVAL;
        return snap_oci_write_private(s->scopesfd, file, data, len);
}

int sfs_ocistore_drop_scope(struct sfs_ocistore *s, const char *name)
{
        char file[SNAP_NAME_MAX + 6];
        int r = scope_file(name, file);

        if (r < 0)
                return r;
        if (unlinkat(s->scopesfd, file, 0) < 0)
                return negative_errno();
        /* Durable: a scope answered as removed never comes back at the next start. */
        return fsync(s->scopesfd) < 0 ? negative_errno() : 0;
}

static int by_name(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The scope names DIR/scopes holds a file for, sorted. 0 and *out (malloc'd, each too), or an
 * errno. */
static int scope_names(struct sfs_ocistore *s, char ***out, size_t *n_out)
{
        char **v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *dir;
        int r = open_dir(s->scopesfd, &dir);

        if (r < 0)
                return r;
        while (r == 0 && (de = readdir(dir))) {
                size_t len = strlen(de->d_name);
                char *name;

                /* Only NAME.json with a valid NAME: whatever else is there is not a scope. */
                if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
                        continue;
                name = strndup(de->d_name, len - 5);
                if (!name) {
                        r = -ENOMEM;
                        break;
                }
                if (!snap_name_valid(name)) {
                        free(name);
                        continue;
                }
                if (ARRAY_GROW(v, cap, n + 1, 16) < 0) {
                        free(name);
                        r = -ENOMEM;
                        break;
                }
                v[n++] = name;
        }
        closedir(dir);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
                free(v);
                return r;
        }
        if (n)
                qsort(v, n, sizeof(*v), by_name);
        *out = v;
        *n_out = n;
        return 0;
}

int sfs_ocistore_load_scopes(struct sfs_ocistore *s,
                             int (*fn)(void *ctx, const char *name, const char *text, size_t len,
                                       int err),
                             void *ctx)
{
        char **names = NULL;
        size_t n = 0;
        int r = scope_names(s, &names, &n);

        for (size_t i = 0; r == 0 && i < n; i++) {
                char file[SNAP_NAME_MAX + 6];
                void *buf = NULL;
                size_t len = 0;
                int err;

                scope_file(names[i], file);
                /* A link planted there is never followed, a FIFO never blocks the start. */
                err = snap_read_untrusted(s->scopesfd, file, SFS_OCISTORE_SCOPE_MAX, &buf, &len);
                r = fn(ctx, names[i], err < 0 ? NULL : buf, err < 0 ? 0 : len, err < 0 ? err : 0);
                free(buf);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

/* ---- the re-hash `snapfs audit` asks for ---- */

struct to_check {
        struct snap_digest digest;
        uint64_t size;
        int verdict;
};

/* Whether d is still a blob the store needs (under the lock): one removed while it was being
 * re-hashed is no finding. */
static bool still_needed(struct sfs_ocistore *s, const struct snap_digest *d)
{
        return find(s, d) >= 0 || needed_by_the_manifest(s, d);
}

int sfs_ocistore_check(struct sfs_ocistore *s, struct sfs_ocistore_check *out)
{
        _cleanup_free_ struct to_check *v = NULL;
        struct snap_oci_desc config;
        size_t n = 0;
        int r = 0;

        *out = (struct sfs_ocistore_check){ 0 };
        snap_oci_desc_empty_config(&config);
        pthread_mutex_lock(&s->lock);
        v = calloc(s->n + 2, sizeof(*v));
        if (v) {
                for (size_t i = 0; i < s->n; i++)
                        v[n++] = (struct to_check){ .digest = s->v[i].digest,
                                                    .size = s->v[i].size };
                if (s->has_manifest) {
                        v[n++] = (struct to_check){ .digest = s->manifest,
                                                    .size = s->manifest_size };
                        v[n++] = (struct to_check){ .digest = config.digest,
                                                    .size = config.size };
                }
        }
        pthread_mutex_unlock(&s->lock);
        if (!v)
                return -ENOMEM;
        /* Read without the lock: a publish must not wait for a re-hash of the whole store. */
        for (size_t i = 0; i < n; i++) {
                v[i].verdict = snap_oci_blob_verify(&s->layout, &v[i].digest, v[i].size);
                if (v[i].verdict < 0 && v[i].verdict != -ENOENT && !is_corrupt(v[i].verdict)) {
                        r = v[i].verdict;
                        break;
                }
        }
        if (r < 0)
                return r;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < n; i++) {
                if (v[i].verdict != 0 && !still_needed(s, &v[i].digest))
                        continue;
                out->blobs++;
                if (v[i].verdict == 0) {
                        out->intact++;
                        continue;
                }
                if (v[i].verdict == -ENOENT)
                        out->missing++;
                else
                        out->corrupt++;
                if (out->n_named < SFS_OCISTORE_CHECK_NAMED) {
                        out->bad[out->n_named].digest = v[i].digest;
                        out->bad[out->n_named++].err = v[i].verdict;
                }
        }
        pthread_mutex_unlock(&s->lock);
        return 0;
}

int sfs_ocistore_repair(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                        size_t len)
{
        struct snap_digest actual;
        int r = snap_sha256(data, len, &actual);

        /* Only the right bytes are ever written under a blob's name. */
        if (r < 0)
                return r;
        if (!snap_digest_equal(&actual, d))
                return -EBADMSG;
        pthread_mutex_lock(&s->lock);
        r = find(s, d) >= 0 ? snap_oci_blob_write(&s->layout, data, len, NULL) : -ENOENT;
        pthread_mutex_unlock(&s->lock);
        return r < 0 ? r : 0;
}
