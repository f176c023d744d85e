/* SPDX-License-Identifier: MIT */
/* Policy presets and per-field overrides, parsed strictly. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "mountcheck/policy.h"

#include "common/values.h"

static const struct {
        uint32_t bit;
        const char *name;
} option_names[] = {
        { MC_OPT_RO, "ro" },
        { MC_OPT_RW, "rw" },
        { MC_OPT_NOSUID, "nosuid" },
        { MC_OPT_NODEV, "nodev" },
        { MC_OPT_NOEXEC, "noexec" },
        { MC_OPT_NOATIME, "noatime" },
        { MC_OPT_NODIRATIME, "nodiratime" },
        { MC_OPT_NOSYMFOLLOW, "nosymfollow" },
};

const char *mc_option_name(uint32_t bit)
{
        for (size_t i = 0; i < sizeof(option_names) / sizeof(option_names[0]); i++)
                if (option_names[i].bit == bit)
                        return option_names[i].name;
        return NULL;
}

int mc_parse_options(const char *s, uint32_t *bits)
{
        uint32_t out = 0;

        if (!s || !bits)
                return -EINVAL;
        if (*s == '\0') {
                *bits = 0;
                return 0;
        }
        for (;;) {
                size_t len = strcspn(s, ",");
                bool found = false;

                for (size_t i = 0; i < sizeof(option_names) / sizeof(option_names[0]); i++)
                        if (strlen(option_names[i].name) == len &&
                            strncmp(option_names[i].name, s, len) == 0) {
                                out |= option_names[i].bit;
                                found = true;
                        }
                if (!found) /* also catches an empty item: "a,,b" or a trailing comma */
                        return -EINVAL;
                if (s[len] == '\0')
                        break;
                s += len + 1;
        }
        *bits = out;
        return 0;
}

static int parse_uint(const char *s, uint64_t max, unsigned base, uint64_t *out)
{
        uint64_t v = 0;

        if (!s || *s == '\0')
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                unsigned d;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                d = (unsigned)(*p - '0');
                if (d >= base || v > (max - d) / base)
                        return -EINVAL;
                v = v * base + d;
        }
        *out = v;
        return 0;
}

static int parse_yes_no(const char *v, bool *out)
{
        if (strcmp(v, "yes") == 0)
                *out = true;
        else if (strcmp(v, "no") == 0)
                *out = false;
        else
                return -EINVAL;
        return 0;
}

static bool is_any(const char *v)
{
        return strcmp(v, "any") == 0;
}

static int set_fstype(struct mc_policy *pol, const char *v)
{
        size_t len = strlen(v);

        if (is_any(v)) {
                pol->fstype[0] = '\0';
                return 0;
        }
        if (len == 0 || len >= sizeof(pol->fstype))
                return -EINVAL;
        /* mountinfo separates fields with spaces and options with commas: a type containing
         * either (or a control byte) can never match what the kernel reports. */
        for (const char *p = v; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == ',' || *p == 0x7f)
                        return -EINVAL;
        memcpy(pol->fstype, v, len + 1);
        return 0;
}

int mc_policy_preset(struct mc_policy *pol, const char *name)
{
        struct mc_policy p = { 0 };

        if (!pol || !name)
                return -EINVAL;
        if (strcmp(name, "snapfs") == 0) {
                strcpy(p.fstype, "fuse.snapfs");
                p.require = MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC;
                p.require_private = true;
                /* Root, not the caller: the threat snapfs exists for is code running as the
                 * caller's own uid, which can always replace a mount that uid made. */
                p.check_owner = true;
                p.owner = 0;
                p.scope = MC_SCOPE_JUDGE;
        } else if (strcmp(name, "tmpfs") == 0) {
                strcpy(p.fstype, "tmpfs");
                p.require = MC_OPT_RW | MC_OPT_NOSUID | MC_OPT_NODEV | MC_OPT_NOEXEC;
                p.require_private = true;
                p.check_mode = true;
                p.mode = 01777;
                p.check_size = true;
                p.max_size = 1ULL << 20;
        } else
                return -EINVAL;
        p.probe_transport = true;
        *pol = p;
        return 0;
}

static int set_require_or_forbid(struct mc_policy *pol, bool req, const char *value)
{
        uint32_t bits;
        int r = mc_parse_options(value, &bits);

        if (r < 0)
                return r;
        /* Requiring and forbidding the same option is a policy nothing can meet. */
        if (bits & (req ? pol->forbid : pol->require))
                return -EINVAL;
        /* Every mount is exactly one of ro and rw: requiring both, or forbidding both, refuses
         * every mount. */
        if ((bits & (MC_OPT_RO | MC_OPT_RW)) == (MC_OPT_RO | MC_OPT_RW))
                return -EINVAL;
        if (req)
                pol->require = bits;
        else
                pol->forbid = bits;
        return 0;
}

static int set_require(struct mc_policy *pol, const char *value)
{
        return set_require_or_forbid(pol, true, value);
}

static int set_forbid(struct mc_policy *pol, const char *value)
{
        return set_require_or_forbid(pol, false, value);
}

/* A number check that "any" turns off: for "any", *check false; otherwise what parse makes of
 * value, with *check true and *n set. 0, or parse's refusal with nothing changed. */
static int set_checked(const char *value, bool *check, uint64_t *n,
                       int (*parse)(const char *value, uint64_t *n))
{
        uint64_t v = 0;
        int r;

        if (is_any(value)) {
                *check = false;
                return 0;
        }
        r = parse(value, &v);
        if (r < 0)
                return r;
        *check = true;
        *n = v;
        return 0;
}

/* The same for a 32-bit field (what parse makes fits in one). */
static int set_checked32(const char *value, bool *check, uint32_t *field,
                         int (*parse)(const char *value, uint64_t *n))
{
        uint64_t n = *field;
        int r = set_checked(value, check, &n, parse);

        *field = (uint32_t)n;
        return r;
}

static int read_mode(const char *value, uint64_t *n)
{
        return parse_uint(value, 07777, 8, n);
}

static int read_size(const char *value, uint64_t *n)
{
        /* size=0 means "unlimited" to tmpfs, so no mount has a bound of at most 0
         * (mc_policy_value_of's range). */
        return value_parse(VALUE_SIZE, value, 1, UINT64_MAX, n);
}

static int read_owner(const char *value, uint64_t *n)
{
        uint32_t uid;
        /* A uid as every command reads one (never (uid_t)-1, chown's "no change"). */
        int r = value_parse_uid(value, &uid);

        if (r == 0)
                *n = uid;
        return r;
}

static int set_mode(struct mc_policy *pol, const char *value)
{
        return set_checked32(value, &pol->check_mode, &pol->mode, read_mode);
}

static int set_max_size(struct mc_policy *pol, const char *value)
{
        return set_checked(value, &pol->check_size, &pol->max_size, read_size);
}

static int set_owner(struct mc_policy *pol, const char *value)
{
        return set_checked32(value, &pol->check_owner, &pol->owner, read_owner);
}

static int set_insecure_own_mount(struct mc_policy *pol, const char *value)
{
        return parse_yes_no(value, &pol->insecure_own_mount);
}

static int set_user_namespace(struct mc_policy *pol, const char *value)
{
        if (strcmp(value, "trust") == 0)
                pol->trust_user_namespace = true;
        else if (strcmp(value, "refuse") == 0)
                pol->trust_user_namespace = false;
        else
                return -EINVAL;
        return 0;
}

static int set_probe(struct mc_policy *pol, const char *value)
{
        return parse_yes_no(value, &pol->probe_transport);
}

/* Every key that takes a value, and what sets it. */
static const struct {
        const char *key;
        int (*set)(struct mc_policy *pol, const char *value);
} setters[] = {
        { "preset", mc_policy_preset },
        { "fstype", set_fstype },
        { "require", set_require },
        { "forbid", set_forbid },
        { "mode", set_mode },
        { "max-size", set_max_size },
        { "owner", set_owner },
        { "insecure-own-mount", set_insecure_own_mount },
        { "user-namespace", set_user_namespace },
        { "probe", set_probe },
};

int mc_policy_set(struct mc_policy *pol, const char *key, const char *value)
{
        if (!pol || !key)
                return -EINVAL;
        if (strcmp(key, "ro") == 0) {
                pol->require = (pol->require & ~MC_OPT_RW) | MC_OPT_RO;
                pol->forbid &= ~MC_OPT_RO;
                return 0;
        }
        if (!value)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(setters) / sizeof(setters[0]); i++)
                if (strcmp(key, setters[i].key) == 0)
                        return setters[i].set(pol, value);
        return -ENOENT;
}

int mc_policy_value_of(const char *key, int *type, uint64_t *min, uint64_t *max)
{
        if (!key || !type || !min || !max)
                return -EINVAL;
        if (strcmp(key, "owner") == 0) {
                *type = VALUE_UID;
                *min = 0;
                *max = VALUE_UID_MAX;
        } else if (strcmp(key, "max-size") == 0) {
                *type = VALUE_SIZE;
                *min = 1;
                *max = UINT64_MAX;
        } else {
                return -ENOENT;
        }
        return 0;
}
