/* SPDX-License-Identifier: MIT */
/* What each uid holds on a judged mount, as the daemon reports it in the root's
 * user.snapfs.usage xattr, parsed strictly. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "common/util.h"

#define USAGE_XATTR "user.snapfs.usage"
#define USAGE_MAX 4096

/* "key=digits": 0 and *v when s starts with key=, then digits, then a space or the end. */
static int field(const char **s, const char *key, uint64_t *v)
{
        size_t k = strlen(key);
        const char *p = *s;
        uint64_t x = 0;

        if (strncmp(p, key, k) != 0 || p[k] != '=')
                return -EBADMSG;
        p += k + 1;
        if (*p < '0' || *p > '9')
                return -EBADMSG;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
                        return -EBADMSG;
                x = x * 10 + (uint64_t)(*p - '0');
        }
        if (*p == ' ')
                p++;
        else if (*p != '\0')
                return -EBADMSG;
        *s = p;
        *v = x;
        return 0;
}

int sfc_usage_parse(const char *text, struct sfc_usage *out)
{
        _cleanup_free_ char *copy = strdup(text);
        struct sfc_usage u = { 0 };
        char *line, *save = NULL;
        bool first = true;
        int r = 0;

        if (!copy)
                return -ENOMEM;
        for (line = strtok_r(copy, "\n", &save); line && r == 0;
             line = strtok_r(NULL, "\n", &save)) {
                const char *p = line;
                uint64_t v[5] = { 0 };

                if (first) {
                        uint64_t owner = 0;
                        first = false;
                        if (strncmp(p, "limits ", 7) != 0)
                                return -EBADMSG;
                        p += 7;
                        r = field(&p, "uid-snapshots", &u.uid_snapshots);
                        if (r == 0)
                                r = field(&p, "uid-bytes", &u.uid_bytes);
                        if (r == 0)
                                r = field(&p, "owner", &owner);
                        if (r == 0)
                                r = field(&p, "reserve-snapshots", &u.reserve_snapshots);
                        if (r == 0)
                                r = field(&p, "reserve-bytes", &u.reserve_bytes);
                        if (r == 0 && (*p || owner > UINT32_MAX))
                                r = -EBADMSG;
                        u.owner = (uint32_t)owner;
                        continue;
                }
                if (strncmp(p, "more=", 5) == 0) {
                        r = field(&p, "more", &u.more);
                        continue;
                }
                r = field(&p, "uid", &v[0]);
                if (r == 0)
                        r = field(&p, "snapshots", &v[1]);
                if (r == 0)
                        r = field(&p, "bytes", &v[2]);
                if (r == 0)
                        r = field(&p, "staging", &v[3]);
                if (r == 0)
                        r = field(&p, "staging-bytes", &v[4]);
                if (r == 0 && (*p || v[0] > UINT32_MAX))
                        r = -EBADMSG;
                if (r == 0) {
                        struct sfc_uid_usage *n =
                                reallocarray(u.uids, u.n + 1, sizeof(*u.uids));
                        if (!n) {
                                r = -ENOMEM;
                                break;
                        }
                        u.uids = n;
                        u.uids[u.n++] = (struct sfc_uid_usage){
                                .uid = (uint32_t)v[0], .snapshots = v[1], .bytes = v[2],
                                .staging = v[3], .staging_bytes = v[4],
                        };
                }
        }
        if (r == 0 && first)
                r = -EBADMSG;
        if (r < 0) {
                free(u.uids);
                return r;
        }
        *out = u;
        return 0;
}

int sfc_usage_parse_value(char *buf, size_t n, struct sfc_usage *out)
{
        /* A NUL inside would end the text early and hide what follows it. */
        if (memchr(buf, '\0', n))
                return -EBADMSG;
        buf[n] = '\0';
        return sfc_usage_parse(buf, out);
}

int sfc_mnt_usage(const struct sfc_mnt *m, struct sfc_usage *out)
{
        _cleanup_close_ int fd = sfc_mnt_open(m, ".", O_RDONLY | O_DIRECTORY, 0);
        char buf[USAGE_MAX + 1];
        ssize_t n;

        if (fd < 0)
                return fd;
        n = fgetxattr(fd, USAGE_XATTR, buf, USAGE_MAX);
        if (n < 0)
                return negative_errno();
        return sfc_usage_parse_value(buf, (size_t)n, out);
}

void sfc_usage_free(struct sfc_usage *u)
{
        if (!u)
                return;
        free(u->uids);
        u->uids = NULL;
        u->n = 0;
}
