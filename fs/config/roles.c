/* SPDX-License-Identifier: MIT */
/* Roles: the reader and publisher sets, who may remove a snapshot or drop a hold, and who may
 * have the store re-hashed. */
#include "fs/config/roles.h"

/* Without --publishers (an empty set, which no option spells) only the mount's owner and root
 * publish: a sandbox that reaches the mount must not fill the store, nor publish under its own
 * uid what it may then remove. */
static bool is_publisher(const struct sfs_tree_config *cfg, uid_t uid)
{
        if (!cfg->publishers.any && cfg->publishers.n == 0)
                return uid == cfg->owner_uid || uid == 0;
        return value_uid_list_has(&cfg->publishers, uid);
}

/* The main mount is its owner's: the owner and root read it whatever --readers says (the
 * owner lists, audits and re-hashes everything; root could read the daemon's memory
 * anyway), and --readers names who else does. Without it nobody else: snapshots published
 * there may be a sandbox's tokens, which a local user with no scope must not read by
 * reaching the mount (allow_other, a sandbox given --ro-bind / /). Every-uid reads are
 * --readers any. */
static bool is_reader(const struct sfs_tree_config *cfg, uid_t uid)
{
        return uid == cfg->owner_uid || uid == 0 || value_uid_list_has(&cfg->readers, uid);
}

bool sfs_is_scope_user(const struct sfs_scope_users *u, const struct sfs_caller *c)
{
        /* Root is always one: it could read the daemon's memory anyway, and refusing it
         * would only hide the view from the operator. */
        return c->uid == 0 || value_uid_list_has(&u->uids, c->uid) ||
               (u->has_gid && c->gid == u->gid);
}

/* Metadata is visible to readers and publishers; content only to readers; staging only to
 * publishers. In a scope's view all three are its users: confidentiality there is the
 * scope's, never a uid's (two sandboxes of one uid are two scopes). */
bool sfs_may_see(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        if (cfg->scope_users)
                return sfs_is_scope_user(cfg->scope_users, c);
        return is_reader(cfg, c->uid) || is_publisher(cfg, c->uid);
}

bool sfs_may_read(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        if (cfg->scope_users)
                return sfs_is_scope_user(cfg->scope_users, c);
        return is_reader(cfg, c->uid);
}

bool sfs_may_publish(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        if (cfg->read_only || c->read_view)
                return false;
        if (cfg->scope_users)
                return sfs_is_scope_user(cfg->scope_users, c);
        return is_publisher(cfg, c->uid);
}

/* The mount's owner (the runtime that runs the daemon) and root. */
static bool is_owner(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return c->uid == 0 || c->uid == cfg->owner_uid;
}

bool sfs_may_remove(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        /* A view's grants change through the control channel alone: a sandbox must not
         * take away what the runtime granted it. */
        return !cfg->scope_users && is_owner(cfg, c);
}

bool sfs_may_unhold(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        (void)c; /* a hold is its holder's, whatever the roles are now */
        /* Only with --unlink-own: when the runtime publishes under the sandbox's uid, the
         * sandbox must not pull the config out from under it. */
        return !cfg->scope_users && cfg->unlink_own;
}

bool sfs_may_unpublish(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        /* What a scope published counts against its own limits: its publishers may take it
         * back to make room. */
        return cfg->scope_users && sfs_may_publish(cfg, c);
}

bool sfs_may_control(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        return !cfg->scope_users && !c->read_view && is_owner(cfg, c);
}

bool sfs_may_check_store(const struct sfs_tree_config *cfg, const struct sfs_caller *c)
{
        /* A re-hash reads every blob of the store: no uid but these may make the daemon
         * do that on demand. Never from a view: it is the operator's. */
        return !cfg->scope_users && is_owner(cfg, c);
}

/* When metadata is not visible to every uid, nothing may be cached by the kernel: its caches
 * are per superblock, not per uid, so a cached entry would answer an excluded uid. */
double sfs_meta_timeout(const struct sfs_tree_config *cfg, double want)
{
        /* A view caches its entries: the daemon invalidates every name a grant change
         * touches, and a user's OPEN is what decides (docs/design.md, "Scopes", says what a
         * non-user can learn from an entry the kernel still has). */
        if (cfg->scope_users)
                return want;
        /* Without allow_other the kernel lets no uid but the owner reach the mount: no
         * cached entry can answer anyone excluded. */
        if (cfg->single_uid)
                return want;
        if (!cfg->readers.any && !cfg->publishers.any)
                return 0;
        return want;
}
