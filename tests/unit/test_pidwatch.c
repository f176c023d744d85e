/* SPDX-License-Identifier: MIT */
/* fs/scopes/pidwatch.c: processes a scope's life is tied to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/scopes/pidwatch.h"
#include "tests/unit/testutil.h"

/* Valgrind, which runs these tests too, has no pidfd_open: then the tie is refused with
 * ENOSYS, which is what a scope's create answers there. */
static bool have_pidfd(void)
{
        long fd = syscall(SYS_pidfd_open, getpid(), 0);

        if (fd < 0)
                return errno != ENOSYS;
        close((int)fd);
        return true;
}

static pid_t child(void)
{
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

struct seen {
        pthread_mutex_t lock;
        uint64_t cookies[4];
        unsigned n;
};

static void on_exit_cb(void *ctx, uint64_t cookie)
{
        struct seen *s = ctx;

        pthread_mutex_lock(&s->lock);
        if (s->n < 4)
                s->cookies[s->n++] = cookie;
        pthread_mutex_unlock(&s->lock);
}

static unsigned seen_count(struct seen *s)
{
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = s->n;
        pthread_mutex_unlock(&s->lock);
        return n;
}

static void test_a_tied_process_that_exits_is_reported_once_under_its_cookie(void **state)
{
        struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct timespec step = { .tv_nsec = 5 * 1000 * 1000 };
        struct sfs_pidwatch *w;
        pid_t a, b;
        uint64_t start;
        int fd;

        (void)state;
        if (!have_pidfd()) {
                a = child();
                assert_int_equal(sfs_pid_tie(a, &fd, &start, NULL), -ENOSYS);
                kill(a, SIGKILL);
                waitpid(a, NULL, 0);
                return;
        }
        a = child();
        b = child();
        assert_int_equal(sfs_pidwatch_new(on_exit_cb, &seen, &w), 0);
        assert_int_equal(sfs_pidwatch_start(w), 0);
        assert_int_equal(sfs_pid_tie(a, &fd, &start, NULL), 0);
        assert_true(sfs_pid_same(a, start));
        assert_int_equal(sfs_pidwatch_add(w, fd, 7), 0);
        assert_int_equal(sfs_pid_tie(b, &fd, &start, NULL), 0);
        assert_int_equal(sfs_pidwatch_add(w, fd, 8), 0);
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        for (int i = 0; i < 4000 && seen_count(&seen) == 0; i++)
                nanosleep(&step, NULL);
        assert_int_equal(seen_count(&seen), 1);
        assert_int_equal(seen.cookies[0], 7);
        /* Removed from the watch: its end is not reported. */
        sfs_pidwatch_remove(w, 8);
        kill(b, SIGKILL);
        waitpid(b, NULL, 0);
        sfs_pidwatch_free(w); /* joins the thread: nothing can be reported after this */
        assert_int_equal(seen_count(&seen), 1);
        assert_false(sfs_pid_same(a, start));
}

static void test_a_process_that_is_gone_cannot_be_tied(void **state)
{
        pid_t a = child();
        uint64_t start;
        int fd;

        (void)state;
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        assert_int_equal(sfs_pid_tie(a, &fd, &start, NULL), have_pidfd() ? -ESRCH : -ENOSYS);
        assert_int_equal(sfs_pid_tie(0, &fd, &start, NULL), -ESRCH);
        assert_int_equal(sfs_pid_tie(-1, &fd, &start, NULL), -ESRCH);
}

struct tid_box {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pid_t tid;
        bool done;
};

/* Reports its tid, then lives until told: a thread of this process whose tid is not its pid,
 * as a client's writer thread is. */
static void *report_tid(void *arg)
{
        struct tid_box *b = arg;

        pthread_mutex_lock(&b->lock);
        b->tid = (pid_t)syscall(SYS_gettid);
        pthread_cond_broadcast(&b->cond);
        while (!b->done)
                pthread_cond_wait(&b->cond, &b->lock);
        pthread_mutex_unlock(&b->lock);
        return NULL;
}

static void test_a_threads_tid_belongs_to_its_process(void **state)
{
        struct tid_box b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        pthread_t t;
        char boot[40];
        pid_t other = child();

        (void)state;
        assert_int_equal(pthread_create(&t, NULL, report_tid, &b), 0);
        pthread_mutex_lock(&b.lock);
        while (!b.tid)
                pthread_cond_wait(&b.cond, &b.lock);
        pthread_mutex_unlock(&b.lock);
        assert_int_not_equal(b.tid, getpid());
        assert_int_equal(sfs_tgid_of(b.tid), getpid());
        assert_int_equal(sfs_tgid_of(getpid()), getpid());
        /* Beside it: another process's pid is its own group, not ours. */
        assert_int_equal(sfs_tgid_of(other), other);
        pthread_mutex_lock(&b.lock);
        b.done = true;
        pthread_cond_broadcast(&b.cond);
        pthread_mutex_unlock(&b.lock);
        pthread_join(t, NULL);
        kill(other, SIGKILL);
        waitpid(other, NULL, 0);
        assert_int_equal(sfs_boot_id(boot), 0);
        assert_int_equal(strlen(boot), 36);
}

static void test_a_reaped_process_has_no_tgid_and_is_esrch(void **state)
{
        pid_t a = child();

        (void)state;
        /* Beside it: while it runs, its pid is its own group. */
        assert_int_equal(sfs_tgid_of(a), a);
        kill(a, SIGKILL);
        waitpid(a, NULL, 0);
        /* Its /proc entry is gone: ESRCH, not the text of a file that is not there. */
        assert_int_equal(sfs_tgid_of(a), -ESRCH);
        assert_false(sfs_pid_same(a, 0));
}

static void test_a_thread_id_or_a_zombie_is_esrch_with_its_reason_and_a_live_pid_ties(void **state)
{
        struct tid_box b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        pid_t zombie = child(), live = child();
        const char *why = NULL;
        siginfo_t info;
        pthread_t t;
        uint64_t start;
        int fd = -1;

        (void)state;
        if (!have_pidfd()) {
                kill(zombie, SIGKILL);
                kill(live, SIGKILL);
                waitpid(zombie, NULL, 0);
                waitpid(live, NULL, 0);
                return;
        }
        assert_int_equal(pthread_create(&t, NULL, report_tid, &b), 0);
        pthread_mutex_lock(&b.lock);
        while (!b.tid)
                pthread_cond_wait(&b.cond, &b.lock);
        pthread_mutex_unlock(&b.lock);
        /* A thread id: ESRCH saying it is a thread, never read as its process. */
        assert_int_equal(sfs_pid_tie(b.tid, &fd, &start, &why), -ESRCH);
        assert_non_null(strstr(why, "a thread, not a process"));
        /* A zombie (exited, not reaped: WNOWAIT leaves it so): ESRCH saying so. */
        kill(zombie, SIGKILL);
        assert_int_equal(waitid(P_PID, (id_t)zombie, &info, WEXITED | WNOWAIT), 0);
        why = NULL;
        assert_int_equal(sfs_pid_tie(zombie, &fd, &start, &why), -ESRCH);
        assert_non_null(strstr(why, "a zombie"));
        /* Beside them: a live process ties. */
        assert_int_equal(sfs_pid_tie(live, &fd, &start, &why), 0);
        close(fd);
        pthread_mutex_lock(&b.lock);
        b.done = true;
        pthread_cond_broadcast(&b.cond);
        pthread_mutex_unlock(&b.lock);
        pthread_join(t, NULL);
        waitpid(zombie, NULL, 0);
        kill(live, SIGKILL);
        waitpid(live, NULL, 0);
}

/* A stat line as the kernel writes it: pid, (comm), then fields 3..52; field 22 is 4242. */
#define STAT_TAIL "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21 22\n"

static void test_a_stat_line_gives_field_22_counted_after_the_last_paren(void **state)
{
        uint64_t start = 0;

        (void)state;
        assert_int_equal(sfs_proc_stat_start_time("7 (sh) " STAT_TAIL, &start), 0);
        assert_int_equal(start, 4242);
        /* A command name of spaces and parentheses does not shift the fields. */
        start = 0;
        assert_int_equal(sfs_proc_stat_start_time("7 (a) 1 2 (b) ) " STAT_TAIL, &start), 0);
        assert_int_equal(start, 4242);
}

static void test_a_stat_line_the_kernel_never_writes_is_eio(void **state)
{
        uint64_t start = 99;

        (void)state;
        /* No ')' closing the command name. */
        assert_int_equal(sfs_proc_stat_start_time("7 (sh " STAT_TAIL, &start), -EIO);
        /* Fewer than 22 fields. */
        assert_int_equal(sfs_proc_stat_start_time("7 (sh) S 1 2 3 4 5\n", &start), -EIO);
        /* Field 22 is no number, or one out of range. */
        assert_int_equal(sfs_proc_stat_start_time(
                                 "7 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20\n",
                                 &start),
                         -EIO);
        assert_int_equal(sfs_proc_stat_start_time(
                                 "7 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
                                 "99999999999999999999999 20\n",
                                 &start),
                         -EIO);
        assert_int_equal(start, 99);
}

#define STATUS_OK "Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t77\nPid:\t78\n"

static void test_a_status_text_gives_tgid_and_state(void **state)
{
        pid_t tgid = 0;
        char st = 0;

        (void)state;
        assert_int_equal(sfs_proc_status_fields(STATUS_OK, &tgid, &st), 0);
        assert_int_equal(tgid, 77);
        assert_int_equal(st, 'S');
        /* Without a state asked, State need not be there (sfs_tgid_of). */
        tgid = 0;
        assert_int_equal(sfs_proc_status_fields("Name:\tsh\nTgid:\t77\n", &tgid, NULL), 0);
        assert_int_equal(tgid, 77);
}

static void test_a_status_text_the_kernel_never_writes_is_eio(void **state)
{
        pid_t tgid = 5;
        char st = 'x';

        (void)state;
        assert_int_equal(sfs_proc_status_fields("Name:\tsh\nTgid:\t77\n", &tgid, &st), -EIO);
        assert_int_equal(sfs_proc_status_fields("Name:\tsh\nState:\tR\n", &tgid, &st), -EIO);
        assert_int_equal(sfs_proc_status_fields("Name:\tsh\nState:\tR\n", &tgid, NULL), -EIO);
        assert_int_equal(sfs_proc_status_fields("Name:\tsh\nState:\tR\nTgid:\t0\n", &tgid, &st),
                         -EIO);
        assert_int_equal(sfs_proc_status_fields("Name:\tsh\nState:\tR\nTgid:\t-3\n", &tgid, &st),
                         -EIO);
        assert_int_equal(tgid, 5);
}

/* In a mount namespace of its own (gone with it): an empty file bound over /proc/victim/status
 * and a blank line over boot_id, as a container runtime could; what the reads gave, before and
 * after, into out[0..4]. */
static void read_under_empty_files(pid_t victim, const char *empty, const char *blank, int out[5])
{
        char status[64], boot[40];

        snprintf(status, sizeof(status), "/proc/%d/status", (int)victim);
        out[0] = sfs_tgid_of(victim);
        out[1] = sfs_boot_id(boot);
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount(empty, status, NULL, MS_BIND, NULL) < 0 ||
            mount(blank, "/proc/sys/kernel/random/boot_id", NULL, MS_BIND, NULL) < 0)
                return;
        out[3] = sfs_boot_id(boot);
        /* Right after a read of another process's status: the empty one is not answered
         * with what the buffer held from that read. */
        out[2] = sfs_tgid_of(getpid());
        out[4] = sfs_tgid_of(victim);
}

/* The kernel never gives an empty status or boot id (a process gone after the open reads
 * ESRCH), but a file bound over them can: EIO, never the text of nothing. */
static void test_an_empty_status_or_boot_id_is_eio(void **state)
{
        struct tu_dir dir;
        char empty[PATH_MAX], blank[PATH_MAX];
        int fds[2], got[5] = { 1, 1, 1, 1, 1 }, fd;
        pid_t victim, reader;

        (void)state;
        /* Only root can bind a file over /proc's; elsewhere this is not checked, and says so. */
        if (geteuid() != 0)
                skip();
        assert_int_equal(tu_dir_make(&dir), 0);
        fd = open(tu_path(&dir, "empty", empty), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        fd = open(tu_path(&dir, "blank", blank), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "\n", 1), 1); /* trimmed, nothing is left */
        close(fd);
        assert_int_equal(pipe(fds), 0);
        victim = child();
        reader = fork();
        assert_true(reader >= 0);
        if (reader == 0) {
                read_under_empty_files(victim, empty, blank, got);
                _exit(write(fds[1], got, sizeof(got)) == (ssize_t)sizeof(got) ? 0 : 1);
        }
        close(fds[1]);
        assert_int_equal(read(fds[0], got, sizeof(got)), (ssize_t)sizeof(got));
        close(fds[0]);
        assert_int_equal(waitpid(reader, NULL, 0), reader);
        kill(victim, SIGKILL);
        waitpid(victim, NULL, 0);
        tu_dir_remove(&dir);
        /* Beside them: the kernel's own files read, before the binds and after them. */
        assert_int_equal(got[0], victim);
        assert_int_equal(got[1], 0);
        assert_int_equal(got[2], reader);
        assert_int_equal(got[3], -EIO);
        assert_int_equal(got[4], -EIO);
}

/* UINT64_MAX is the watcher's own wake-up's: a pidfd under it is refused (and closed), one
 * under any other cookie is watched. */
static void test_the_wake_up_cookie_is_einval_and_another_is_watched(void **state)
{
        struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct sfs_pidwatch *w;
        int fd;

        (void)state;
        assert_int_equal(sfs_pidwatch_new(on_exit_cb, &seen, &w), 0);
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* epoll takes any pollable descriptor */
        assert_true(fd >= 0);
        assert_int_equal(sfs_pidwatch_add(w, fd, UINT64_MAX), -EINVAL);
        assert_int_equal(fcntl(fd, F_GETFD), -1); /* taken over: closed */
        assert_int_equal(errno, EBADF);
        fd = eventfd(0, EFD_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(sfs_pidwatch_add(w, fd, 3), 0);
        sfs_pidwatch_free(w);
        assert_int_equal(seen_count(&seen), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_tied_process_that_exits_is_reported_once_under_its_cookie),
                cmocka_unit_test(test_a_process_that_is_gone_cannot_be_tied),
                cmocka_unit_test(test_a_threads_tid_belongs_to_its_process),
                cmocka_unit_test(test_a_reaped_process_has_no_tgid_and_is_esrch),
                cmocka_unit_test(
                        test_a_thread_id_or_a_zombie_is_esrch_with_its_reason_and_a_live_pid_ties),
                cmocka_unit_test(test_a_stat_line_gives_field_22_counted_after_the_last_paren),
                cmocka_unit_test(test_a_stat_line_the_kernel_never_writes_is_eio),
                cmocka_unit_test(test_a_status_text_gives_tgid_and_state),
                cmocka_unit_test(test_a_status_text_the_kernel_never_writes_is_eio),
                cmocka_unit_test(test_the_wake_up_cookie_is_einval_and_another_is_watched),
                cmocka_unit_test(test_an_empty_status_or_boot_id_is_eio),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
