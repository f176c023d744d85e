/* SPDX-License-Identifier: MIT */
/* The FUSE low-level operations table of the snapfs daemon. */
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdbool.h>

struct sfs_tree;
struct sfs_conn;

/* The session's userdata. */
struct sfs_ops_ctx {
        struct sfs_tree *tree;
        struct fuse_session *se; /* for invalidation notices; set before the loop starts */
        bool initialized;        /* INIT has been answered */
        bool read_view;          /* this session is the read-only view: no OPEN, no FLUSH */
        bool no_open;            /* OPEN answered ENOSYS (a read-only scope view only its
                                    daemon's uid reaches): the kernel opens without asking */
        struct fuse_session *view_se; /* the publishing session's read view, or NULL */
        struct sfs_conn *conn;   /* the kernel connection (conn.h), set when mounted */
};

extern const struct fuse_lowlevel_ops sfs_ops;
