/* SPDX-License-Identifier: MIT */
/* The unit tests' fixture for a tree: callers, a small configuration, and the steps every test
 * of fs/ takes (stage, publish, read back, look up), each asserting that it worked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <string.h>

#include "fs/tree/tree-internal.h"
#include "tests/unit/treefix.h"

const struct sfs_caller alice = { .uid = 1000, .gid = 1000, .pid = 11 };
const struct sfs_caller bob = { .uid = 1001, .gid = 1001, .pid = 12 };
const struct sfs_caller root = { .uid = 0, .gid = 0, .pid = 1 };

struct sfs_tree_config base_config(void)
{
        return (struct sfs_tree_config){
                .max_snapshot_size = 4096,
                .max_bytes = 16384,
                .max_snapshots = 8,
                .max_staging = 3,
                .readers = { .any = true },
                .publishers = { .any = true },
                .cache_timeout = 60,
        };
}

struct sfs_tree *new_tree(const struct sfs_tree_config *cfg)
{
        struct sfs_tree *t = NULL;
        assert_int_equal(sfs_tree_new(cfg, &t), 0);
        return t;
}

struct sfs_node *staging_dir(struct sfs_tree *t, const struct sfs_caller *c)
{
        struct sfs_entry e;
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), ".staging", &e), 0);
        return e.node;
}

void hex_of(const void *buf, size_t len, char hex[SNAP_DIGEST_HEX_LEN + 1])
{
        struct snap_digest d;
        assert_int_equal(snap_sha256(buf, len, &d), 0);
        snap_digest_to_hex(&d, hex);
}

/* Creates .staging/name with content and closes it; returns the node. */
struct sfs_node *stage(struct sfs_tree *t, const struct sfs_caller *c, const char *name,
                       const void *buf, size_t len)
{
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct sfs_entry e;

        assert_int_equal(sfs_tree_create(t, c, staging_dir(t, c), name, O_WRONLY | O_CREAT | O_EXCL,
                                         &e, &h, &oi),
                         0);
        assert_true(oi.direct_io);
        if (len)
                assert_int_equal(sfs_tree_write(t, c, h, buf, len, 0), 0);
        sfs_tree_release(t, h);
        return e.node;
}

int truncate_to(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                off_t size)
{
        struct stat attr = { .st_size = size }, st;
        double timeout;
        return sfs_tree_setattr(t, c, n, &attr, SFS_SET_SIZE, &st, &timeout);
}

int publish(struct sfs_tree *t, const struct sfs_caller *c, const char *name, const void *buf,
            size_t len, struct sfs_node **out)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_node *published = NULL;
        int r;

        stage(t, c, name, buf, len);
        hex_of(buf, len, hex);
        r = sfs_tree_rename(t, c, staging_dir(t, c), name, sfs_tree_root(t), hex, 0, &published);
        if (out)
                *out = published;
        return r;
}

int collect(void *ctx, const void *data, size_t len)
{
        struct readback *rb = ctx;
        memcpy(rb->buf, data, len);
        rb->len = len;
        return 0;
}

void assert_reads(struct sfs_tree *t, const struct sfs_caller *c, struct sfs_node *n,
                  const char *want)
{
        struct sfs_open_info oi;
        struct sfs_handle *h;
        struct readback rb = { .len = 0 };

        assert_int_equal(sfs_tree_open(t, c, n, O_RDONLY, &h, &oi), 0);
        assert_true(oi.keep_cache);
        assert_int_equal(sfs_tree_read(t, h, sizeof(rb.buf), 0, collect, &rb), 0);
        assert_int_equal(rb.len, strlen(want));
        assert_memory_equal(rb.buf, want, rb.len);
        sfs_tree_release(t, h);
}

struct sfs_node *lookup_digest(struct sfs_tree *t, const struct sfs_caller *c,
                               const char *content, int want)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];
        struct sfs_entry e = { 0 };
        hex_of(content, strlen(content), hex);
        assert_int_equal(sfs_tree_lookup(t, c, sfs_tree_root(t), hex, &e), want);
        return want == 0 ? e.node : NULL;
}

void revoke_publishers(struct sfs_tree *t)
{
        pthread_mutex_lock(&t->lock);
        t->cfg.publishers = (struct value_uid_list){ .any = false, .n = 0 };
        pthread_mutex_unlock(&t->lock);
}

void hold_publishing(struct sfs_node *staged, bool on)
{
        assert_int_equal(sfs_node_kind(staged), SFS_KIND_STAGING_FILE);
        pthread_mutex_lock(&staged->stg->lock);
        staged->stg->publishing = on;
        pthread_mutex_unlock(&staged->stg->lock);
}

void get_stats(struct sfs_tree *t, struct tree_stats *st)
{
        struct snap_store_stats s;

        pthread_mutex_lock(&t->lock);
        snap_store_get_stats(t->store, &s);
        st->snapshots = s.indexed;
        st->bytes = s.bytes;
        st->reserved = s.reserved;
        st->staging_files = t->staging_files;
        st->nodes = t->nnodes;
        pthread_mutex_unlock(&t->lock);
}
