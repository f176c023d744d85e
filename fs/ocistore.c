/* SPDX-License-Identifier: MIT */
/* --store DIR: publishing into an OCI image layout, the store's checks at open, and the
 * snapshots served again at start (ocistore.h). */
#include "ocistore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "oci.h"
#include "util.h"

struct entry {
        struct snap_digest digest;
        uint64_t size;
        char *title; /* NULL when unknown */
};

struct sfs_ocistore {
        struct snap_oci_layout layout;
        pthread_mutex_t lock;
        struct entry *v;
        size_t n, cap;
        bool has_manifest;
        struct snap_digest manifest; /* the blob index.json's tag names now */
        uint64_t corrupt;
        size_t max_entries; /* SNAP_OCI_ENTRIES_MAX, or less (sfs_ocistore_set_max_entries) */
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
 * is 0700 (before snap_oci_layout_open makes it 0755). */
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
        return 0;
}

/* Another uid that can write the store could plant a blob and a manifest naming it: served
 * as published at the next start (they hash to their names). -EPERM for a directory not
 * owned by this uid or writable by group or others. */
static int check_private(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
                return -EPERM;
        return 0;
}

int sfs_ocistore_open(const char *dir, struct sfs_ocistore **out, const char **fstype)
{
        struct sfs_ocistore *s;
        struct statfs sf;
        int r = 0;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->layout = (struct snap_oci_layout)SNAP_OCI_LAYOUT_INIT;
        s->max_entries = SNAP_OCI_ENTRIES_MAX;
        pthread_mutex_init(&s->lock, NULL);
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
                        if (fstype)
                                *fstype = remote_fs[i].name;
                        r = -EREMOTE;
                }
        if (r == 0)
                r = make_private_dirs(dir);
        if (r == 0)
                r = snap_oci_layout_open(dir, SNAP_OCI_CREATE, &s->layout);
        if (r == 0)
                r = check_private(s->layout.dirfd);
        if (r == 0)
                r = check_private(s->layout.blobsfd);
        /* Two daemons on one store would each rewrite the manifest without the other's
         * snapshots. The lock is on blobs/sha256, not the layout directory, whose flock
         * snap_oci_tag takes for each index.json update. */
        if (r == 0 && flock(s->layout.blobsfd, LOCK_EX | LOCK_NB) < 0)
                r = negative_errno();
        if (r < 0) {
                sfs_ocistore_close(s);
                return r;
        }
        *out = s;
        return 0;
}

void sfs_ocistore_close(struct sfs_ocistore *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].title);
        free(s->v);
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
        pthread_mutex_lock(&s->lock);
}

void sfs_ocistore_unlock(struct sfs_ocistore *s)
{
        pthread_mutex_unlock(&s->lock);
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

static int push(struct sfs_ocistore *s, const struct snap_digest *d, uint64_t size,
                const char *title)
{
        char *t = NULL;

        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 64;
                struct entry *v = realloc(s->v, cap * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                s->v = v;
                s->cap = cap;
        }
        if (title && !(t = strdup(title)))
                return -ENOMEM;
        s->v[s->n++] = (struct entry){ .digest = *d, .size = size, .title = t };
        return 0;
}

static void drop(struct sfs_ocistore *s, size_t i)
{
        free(s->v[i].title);
        s->v[i] = s->v[--s->n];
}

/* Writes the manifest of s->v and points the tag at it: 0 once index.json is durable. The
 * manifest it replaces is removed after that (a crash between leaves a blob nothing names,
 * removed at the next start). */
static int commit(struct sfs_ocistore *s)
{
        _cleanup_free_ struct snap_oci_desc *layers = NULL;
        struct snap_oci_manifest m = {
                .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS,
                .n_layers = s->n,
        };
        struct snap_oci_desc desc;
        struct snap_digest old = s->manifest;
        bool had = s->has_manifest;
        int r;

        /* A manifest holds at most SNAP_OCI_ENTRIES_MAX layers: one more could never be
         * read back at the next start. */
        if (s->n > s->max_entries)
                return -ENOSPC;
        layers = calloc(s->n ? s->n : 1, sizeof(*layers));
        if (!layers)
                return -ENOMEM;
        for (size_t i = 0; i < s->n; i++)
                layers[i] = (struct snap_oci_desc){
                        .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                        .digest = s->v[i].digest,
                        .size = s->v[i].size,
                        .title = s->v[i].title,
                };
        m.layers = layers;
        snap_oci_desc_empty_config(&m.config);
        r = snap_oci_manifest_write(&s->layout, &m, &desc);
        if (r < 0)
                return r;
        r = snap_oci_tag(&s->layout, &desc, SFS_OCISTORE_TAG);
        if (r < 0)
                return r;
        s->manifest = desc.digest;
        s->has_manifest = true;
        if (had && !snap_digest_equal(&old, &desc.digest))
                snap_oci_blob_remove(&s->layout, &old);
        return 0;
}

int sfs_ocistore_add(struct sfs_ocistore *s, const struct snap_digest *d, const void *data,
                     size_t len, const char *title)
{
        int r;

        if (find(s, d) >= 0)
                return 0;
        r = snap_oci_blob_write(&s->layout, data, len, NULL);
        if (r < 0)
                return r;
        r = push(s, d, len, title);
        if (r < 0)
                return r;
        r = commit(s);
        if (r < 0)
                drop(s, s->n - 1);
        return r;
}

static bool is_empty_config(const struct snap_digest *d)
{
        struct snap_oci_desc c;
        snap_oci_desc_empty_config(&c);
        return snap_digest_equal(&c.digest, d);
}

int sfs_ocistore_remove(struct sfs_ocistore *s, const struct snap_digest *d)
{
        ssize_t i = find(s, d);
        struct entry e;
        int r;

        if (i < 0)
                return -ENOENT;
        e = s->v[i];
        s->v[i] = s->v[--s->n];
        r = commit(s);
        if (r < 0) {
                /* Back as it was: the manifest on disk still names it. */
                s->v[s->n++] = s->v[i];
                s->v[i] = e;
                return r;
        }
        free(e.title);
        /* The empty config blob, or the manifest itself, may have the same bytes. */
        if (!is_empty_config(d) && !snap_digest_equal(d, &s->manifest))
                snap_oci_blob_remove(&s->layout, d);
        return 0;
}

/* ---- start: re-hash, set aside, restore, collect ---- */

struct blobset {
        struct snap_digest *v;
        bool *named; /* referenced by a manifest of index.json (or is one) */
        size_t n, cap;
};

static int blobset_add(struct blobset *b, const struct snap_digest *d)
{
        if (b->n == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 64;
                struct snap_digest *v = realloc(b->v, cap * sizeof(*v));
                bool *named;
                if (!v)
                        return -ENOMEM;
                b->v = v;
                named = realloc(b->named, cap * sizeof(*named));
                if (!named)
                        return -ENOMEM;
                b->named = named;
                b->cap = cap;
        }
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

/* Removes the temporary files of writes a crash interrupted (".tmp-*", snapshot/oci.c). */
static void remove_temporaries(int dirfd)
{
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;

        if (!dir) {
                safe_close(fd);
                return;
        }
        while ((de = readdir(dir)))
                if (strncmp(de->d_name, ".tmp-", 5) == 0)
                        unlinkat(dirfd, de->d_name, 0);
        closedir(dir);
}

/* Moves blobs/sha256/hex to DIR/corrupt/hex, durably. */
static int set_aside(struct sfs_ocistore *s, const char *hex)
{
        _cleanup_close_ int cfd = -1;

        if (mkdirat(s->layout.dirfd, SFS_OCISTORE_CORRUPT_DIR, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        cfd = openat(s->layout.dirfd, SFS_OCISTORE_CORRUPT_DIR,
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
                return negative_errno();
        if (renameat(s->layout.blobsfd, hex, cfd, hex) < 0)
                return negative_errno();
        if (fsync(cfd) < 0 || fsync(s->layout.blobsfd) < 0)
                return negative_errno();
        return 0;
}

/* Every blob re-hashed: the intact ones in *good, the others set aside. */
static int rehash_all(struct sfs_ocistore *s, const struct sfs_ocistore_hooks *h,
                      struct blobset *good)
{
        int fd = openat(s->layout.blobsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        int r = 0;

        if (!dir) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
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
                } else if (v == -EBADMSG || v == -ELOOP || v == -EINVAL || v == -EISDIR) {
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
                        s->has_manifest = true;
                } else {
                        snap_oci_manifest_free(m);
                }
        }
        snap_oci_index_free(ix);
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

static void restore_one(struct sfs_ocistore *s, const struct sfs_ocistore_hooks *h,
                        const struct snap_digest *d, uint64_t size, uint64_t max_size,
                        const char *title)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        void *buf = NULL;
        int r;

        snap_digest_to_hex(d, hex);
        r = snap_oci_blob_read(&s->layout, d, size, max_size, &buf);
        if (r == 0) {
                r = h->restore(h->ctx, d, buf, (size_t)size, title);
                if (r != 0)
                        free(buf);
        }
        if (r != 0)
                h->warn(h->ctx, hex, "stored but not served", r < 0 ? r : -EEXIST);
}

int sfs_ocistore_load(struct sfs_ocistore *s, uint64_t max_size,
                      const struct sfs_ocistore_hooks *h)
{
        struct blobset good = { 0 };
        struct snap_oci_manifest *m = NULL;
        bool broken = false, changed = false;
        int r;

        remove_temporaries(s->layout.dirfd);
        remove_temporaries(s->layout.blobsfd);
        r = rehash_all(s, h, &good);
        if (r == 0)
                r = name_referenced(s, &good, &m, &broken);
        if (r < 0)
                goto out;
        if (m) {
                for (size_t i = 0; i < m->n_layers && r == 0; i++) {
                        const struct snap_oci_desc *l = &m->layers[i];
                        char hex[SNAP_DIGEST_HEX_LEN + 1];

                        if (find(s, &l->digest) >= 0)
                                continue;
                        if (blobset_find(&good, &l->digest) < 0) {
                                /* Set aside (reported already) or gone: never served. */
                                snap_digest_to_hex(&l->digest, hex);
                                if (faccessat(s->layout.blobsfd, hex, F_OK,
                                              AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
                                    !was_set_aside(s, hex))
                                        h->warn(h->ctx, hex, "named by the manifest but "
                                                "missing; dropped", -ENOENT);
                                changed = true;
                                continue;
                        }
                        r = push(s, &l->digest, l->size, l->title);
                        if (r == 0)
                                restore_one(s, h, &l->digest, l->size, max_size, l->title);
                }
        } else if (broken) {
                /* The tag names a manifest that is gone: keep every intact blob that no other
                 * manifest names as a snapshot (titles are lost), rather than delete them. */
                for (size_t i = 0; i < good.n && r == 0; i++) {
                        struct stat st;
                        char hex[SNAP_DIGEST_HEX_LEN + 1];

                        if (good.named[i] || is_empty_config(&good.v[i]))
                                continue;
                        snap_digest_to_hex(&good.v[i], hex);
                        if (fstatat(s->layout.blobsfd, hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        r = push(s, &good.v[i], (uint64_t)st.st_size, NULL);
                        if (r == 0) {
                                good.named[i] = true;
                                restore_one(s, h, &good.v[i], (uint64_t)st.st_size, max_size, NULL);
                        }
                }
                h->warn(h->ctx, SFS_OCISTORE_TAG, "the tagged manifest is missing or corrupt; "
                                                  "every intact blob is served, untitled",
                        -EBADMSG);
                changed = true;
        }
        if (r == 0 && changed)
                r = commit(s);
        if (r == 0) {
                /* A blob nothing names is a publish that never reached index.json (it was
                 * never answered) or an unlink that did: either way not a snapshot. */
                for (size_t i = 0; i < good.n; i++) {
                        if (good.named[i] || find(s, &good.v[i]) >= 0 ||
                            (s->has_manifest && snap_digest_equal(&good.v[i], &s->manifest)))
                                continue;
                        snap_oci_blob_remove(&s->layout, &good.v[i]);
                }
        }
out:
        snap_oci_manifest_free(m);
        free(good.v);
        free(good.named);
        return r;
}
