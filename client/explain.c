/* SPDX-License-Identifier: MIT */
/* What to do about a refusal: the limit that refused a publish and the option that changes
 * it, the daemon's own reason when only it knows one, the command to run next. Each becomes
 * the message of a reason (docs/design.md, "Every refusal says what to do"). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "snapshot/trust.h"
#include "common/util.h"

char *sfc_size_text(uint64_t v, char *buf, size_t n)
{
        static const char suffix[] = "KMG";
        int k = -1;

        /* The size grammar's own spelling (the largest of K, M, G that divides it), so the
         * value can be typed back as an option: 262144 is 256K. */
        while (k < 2 && v && v % 1024 == 0) {
                v /= 1024;
                k++;
        }
        if (k < 0)
                snprintf(buf, n, "%" PRIu64 " bytes", v);
        else
                snprintf(buf, n, "%" PRIu64 "%c", v, suffix[k]);
        return buf;
}

int sfc_refusal_parse(const char *text, char *code, size_t n, uint64_t *value)
{
        const char *sp = strchr(text, ' '), *eq;
        size_t len = sp ? (size_t)(sp - text) : strlen(text);
        char *end;

        *value = 0;
        if (len == 0 || len >= n)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (!((text[i] >= 'a' && text[i] <= 'z') || text[i] == '-'))
                        return -EBADMSG;
        memcpy(code, text, len);
        code[len] = '\0';
        if (!sp)
                return 0;
        /* One option=digits after the code: the limit that refused. */
        eq = strchr(sp + 1, '=');
        if (!eq || eq[1] < '0' || eq[1] > '9')
                return -EBADMSG;
        errno = 0;
        *value = strtoull(eq + 1, &end, 10);
        if (errno || *end)
                return -EBADMSG;
        return 0;
}

int sfc_refusal_read(int fd, char *code, size_t n, uint64_t *value)
{
        char buf[128], path[64];
        ssize_t k = fgetxattr(fd, SFC_XATTR_REFUSAL, buf, sizeof(buf) - 1);

        if (k < 0 && errno == EBADF) {
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                k = getxattr(path, SFC_XATTR_REFUSAL, buf, sizeof(buf) - 1);
        }
        if (k < 0)
                return negative_errno();
        buf[k] = '\0';
        return sfc_refusal_parse(buf, code, n, value);
}

int sfc_explain_too_big(struct snapfs_report *why, int err, uint64_t size, bool exact,
                           uint64_t limit, bool daemon)
{
        char a[64], l[32];

        /* A stream says nothing of its size before its end: only that it is larger. */
        if (exact)
                snprintf(a, sizeof(a), "%" PRIu64 " bytes is", size);
        else
                snprintf(a, sizeof(a), "the content is");
        sfc_size_text(limit, l, sizeof(l));
        if (daemon)
                return sfc_report_fail(why, err, "too-big",
                                          "%s over the daemon's limit of %s (snapfs mount "
                                          "--max-snapshot-size, at most 1G)", a, l);
        return sfc_report_fail(why, err, "too-big",
                                  "%s over the client's limit of %s (the max_size option of "
                                  "the client library)", a, l);
}

/* Why a --trust-key daemon refused, in words that say what to do. */
static const char *trust_words(const char *code)
{
        if (!strcmp(code, SNAP_TRUST_NOT_ADMITTED))
                return "the daemon (snapfs mount --trust-key) publishes only content that a "
                       "manifest signed by one of its keys names: export it signed (snapfs "
                       "export --sign KEY) and publish it with snapfs import";
        if (!strcmp(code, SNAP_TRUST_UNTRUSTED_KEY))
                return "a signature by a key the daemon does not trust: sign with a key whose "
                       "public half the daemon was given (--trust-key)";
        if (!strcmp(code, SNAP_TRUST_BAD_SIGNATURE))
                return "a signature that does not verify: export and sign the manifest again";
        if (!strcmp(code, SNAP_TRUST_BAD_MANIFEST))
                return "a signed digest whose bytes are not an OCI image manifest";
        if (!strcmp(code, SNAP_TRUST_FULL))
                return "the daemon's table of signed digests is full: restart it";
        return NULL;
}

int sfc_explain_daemon(struct snapfs_report *why, int err, const char *code, uint64_t value)
{
        char l[32];
        const char *words = trust_words(code);

        if (words)
                return sfc_report_fail(why, err, code, "%s", words);
        if (!strcmp(code, "staging-bytes"))
                return sfc_report_fail(why, err, code,
                                          "your uid's staging files would hold more than the "
                                          "daemon's limit of %s per uid (snapfs mount "
                                          "--max-staging-bytes)",
                                          sfc_size_text(value, l, sizeof(l)));
        if (!strcmp(code, "store-full"))
                return sfc_report_fail(why, err, code,
                                          "the store's filesystem is full (the daemon's "
                                          "--store): free room on it; no limit of the "
                                          "daemon's refused this, and nothing was published");
        if (!strcmp(code, "no-such-scope"))
                return sfc_report_fail(why, err, code,
                                          "the daemon has no scope of that name: nothing was "
                                          "published (snapfs scope ls lists the scopes)");
        if (!strcmp(code, "reserved"))
                return sfc_report_fail(why, err, code,
                                          "the rest of the daemon's --max-bytes is reserved: "
                                          "%s kept for other scopes' guaranteed minimums "
                                          "(snapfs scope create --min-bytes), besides the "
                                          "owner's reserve; remove snapshots this scope holds, "
                                          "or ask for a minimum of its own",
                                          sfc_size_text(value, l, sizeof(l)));
        if (!strcmp(code, "full"))
                return sfc_report_fail(why, err, code,
                                          "the mount is full: its snapshots and staging files "
                                          "reached the daemon's --max-bytes; remove snapshots "
                                          "(snapfs rm, snapfs prune) or raise it");
        return sfc_report_fail(why, err, code, "refused by the daemon (%s)", code);
}

int sfc_explain_publish(const struct sfc_mnt *m, struct snapfs_report *why, int err,
                           const char *step, const char *what)
{
        struct sfc_usage u = { 0 };
        char b[32], l[32];

        switch (-err) {
        case EACCES:
                return sfc_report_fail(why, err, step,
                                          "%s: this uid may not publish on this mount: only the "
                                          "mount's owner, root and the uids of the daemon's "
                                          "--publishers do", what);
        case EROFS:
        case ENOENT:
                if (strcmp(step, "staging") == 0)
                        return sfc_report_fail(why, err, step,
                                                  "%s: the mount takes no publishes (a "
                                                  "--read-only daemon, or a read view): publish "
                                                  "through its main mount", what);
                break;
        case EDQUOT:
                if (strcmp(step, "staging") == 0)
                        return sfc_report_fail(why, err, step,
                                                  "%s: your uid has as many staging files as the "
                                                  "daemon allows (snapfs mount --max-staging); "
                                                  "an interrupted publish's go after its "
                                                  "--staging-ttl", what);
                if (sfc_mnt_usage(m, &u) == 0) {
                        uint32_t me = (uint32_t)geteuid();
                        uint64_t have = 0, bytes = 0;
                        for (size_t i = 0; i < u.n; i++)
                                if (u.uids[i].uid == me) {
                                        have = u.uids[i].snapshots;
                                        bytes = u.uids[i].bytes;
                                }
                        sfc_report_fail(why, err, "quota",
                                           "%s: your uid holds %" PRIu64 " snapshots of %s; the "
                                           "daemon allows %" PRIu64 " snapshots and %s per uid "
                                           "(snapfs mount --max-uid-snapshots, "
                                           "--max-uid-bytes), and 64 holders a snapshot: "
                                           "remove some (snapfs rm)",
                                           what, have, sfc_size_text(bytes, b, sizeof(b)),
                                           u.uid_snapshots,
                                           sfc_size_text(u.uid_bytes, l, sizeof(l)));
                        sfc_usage_free(&u);
                        return err;
                }
                return sfc_report_fail(why, err, "quota",
                                          "%s: past your uid's limits (snapfs mount "
                                          "--max-uid-snapshots, --max-uid-bytes)", what);
        case ENOSPC:
                return sfc_report_fail(why, err, "full",
                                          "%s: the mount is full (the daemon's --max-bytes or "
                                          "--max-snapshots): remove snapshots (snapfs rm, "
                                          "snapfs prune) or raise them", what);
        }
        return sfc_report_fail(why, err, step, "%s: %s", what,
                                  strerrordesc_np(-err) ?: "unknown error");
}
