/* SPDX-License-Identifier: MIT */
/* Waiting for an entry of a scope's view to move: a descriptor a program can poll(), and the
 * blocking wait `snapfs wait` runs (docs/design.md, "Waiting for an entry to move"). The
 * daemon wakes the poll itself (FUSE poll notices): nothing here polls on a timer. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client-internal.h"
#include "common/util.h"
#include "mountcheck/verdict.h"
#include "snapshot/name.h"

/* The daemon's watch of an entry (fs/tree/tree.h, SFS_WATCH_PREFIX). */
#define WATCH_PREFIX ".watch."

/* Opens the watch of entry on the judged view m: the descriptor, or a negative errno. */
static int open_watch(const struct sfc_mnt *m, const char *entry, const char *esc,
                      struct snapfs_report *why)
{
        _cleanup_close_ int fd = -1;
        char name[sizeof(WATCH_PREFIX) + SNAPFS_NAME_MAX];
        struct stat st;
        int r;

        snprintf(name, sizeof(name), "%s%s", WATCH_PREFIX, entry);
        /* O_NONBLOCK: a FIFO planted at the name never blocks; O_NOFOLLOW (added): a symlink
         * is refused. */
        fd = sfc_mnt_open(m, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd == -ENOENT)
                return sfc_report_fail(why, fd, "open", "no entry %s in this view", esc);
        if (fd < 0)
                return sfc_report_fail(why, fd, fd == -EXDEV ? "other-mount" : "open",
                                       "watch %s: %s", esc,
                                       strerrordesc_np(-fd) ?: "unknown error");
        r = sfc_mnt_confirm(m, fd);
        if (r < 0)
                return sfc_report_fail(why, r, r == -EXDEV ? "other-mount" : "open",
                                       "the watch of %s lies on another mount than the one "
                                       "checked", esc);
        if (fstat(fd, &st) < 0)
                return sfc_report_fail(why, negative_errno(), "io", "fstat the watch of %s: %s",
                                       esc, strerrordesc_np(errno) ?: "unknown error");
        if (!S_ISREG(st.st_mode))
                return sfc_report_fail(why, -EINVAL, "not-regular",
                                       "the watch of %s is not a regular file", esc);
        return TAKE_FD(fd);
}

static int check_entry_name(const char *entry, struct snapfs_report *why)
{
        if (!entry || !snap_name_valid(entry) || snap_is_digest_name(entry))
                return sfc_report_fail(why, -EINVAL, "invalid-argument",
                                       "%s: 1-%d of [A-Za-z0-9._-], not starting with '.', "
                                       "not a digest",
                                       entry ? "not a valid entry name" : "no entry name",
                                       SNAPFS_NAME_MAX);
        return 0;
}

int snapfs_watch_entry(const char *view, const char *entry, const struct snapfs_options *opts,
                       struct snapfs_report *why)
{
        struct sfc_mnt m = SFC_MNT_INIT;
        char esc[96];
        int r;

        sfc_report_reset(why);
        r = check_entry_name(entry, why);
        if (r < 0)
                return r;
        mc_escape(entry, esc, sizeof(esc));
        r = sfc_mnt_check(view, opts, &m, why);
        if (r < 0)
                return r;
        r = open_watch(&m, entry, esc, why);
        sfc_mnt_close(&m);
        return r;
}

/* Milliseconds from now to deadline (CLOCK_MONOTONIC), never below 0. */
static int ms_left(const struct timespec *deadline)
{
        struct timespec now;
        long long ms;

        clock_gettime(CLOCK_MONOTONIC, &now);
        ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
             (deadline->tv_nsec - now.tv_nsec) / 1000000;
        return ms < 0 ? 0 : ms > INT32_MAX ? INT32_MAX : (int)ms;
}

int snapfs_watch_wait(int fd, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };
        struct timespec deadline;
        int n;

        if (fd < 0)
                return -EBADF;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        if (timeout_ms > 0) {
                deadline.tv_sec += timeout_ms / 1000;
                deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
                if (deadline.tv_nsec >= 1000000000) {
                        deadline.tv_sec++;
                        deadline.tv_nsec -= 1000000000;
                }
        }
        /* One poll, asleep until the daemon's notice or the deadline; a signal only makes it
         * sleep again for what is left. */
        do
                n = poll(&p, 1, timeout_ms < 0 ? -1 : ms_left(&deadline));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if (n == 0)
                return -ETIMEDOUT;
        if (p.revents & (POLLERR | POLLNVAL))
                return p.revents & POLLNVAL ? -EBADF : -EIO;
        return 0;
}

int snapfs_wait_entry(const char *view, const char *entry, int timeout_ms,
                      const struct snapfs_options *opts, struct snapfs_binding *out,
                      struct snapfs_report *why)
{
        _cleanup_close_ int watch = -1;
        char esc[96];
        int r;

        watch = snapfs_watch_entry(view, entry, opts, why);
        if (watch < 0)
                return watch;
        mc_escape(entry, esc, sizeof(esc));
        r = snapfs_watch_wait(watch, timeout_ms);
        if (r == -ETIMEDOUT)
                return sfc_report_fail(why, r, "timeout", "%s did not move within %d ms", esc,
                                       timeout_ms);
        /* -EIO: the watch can tell no more (its view removed and answering from its
         * reaper, or its daemon gone): what the entry names now is asked of a fresh open,
         * which says "removed", ENOTCONN or the new snapshot. */
        if (r < 0 && r != -EIO)
                return sfc_report_fail(why, r, "io", "waiting for %s: %s", esc,
                                       strerrordesc_np(-r) ?: "unknown error");
        /* Moved: what it names now, opened and verified like any entry. */
        r = snapfs_open_entry(view, entry, opts, out, why);
        if (r == -ENOENT) {
                sfc_report_reset(why);
                return sfc_report_fail(why, r, "removed", "%s was removed from the view", esc);
        }
        return r;
}
