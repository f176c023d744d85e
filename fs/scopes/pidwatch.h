/* SPDX-License-Identifier: MIT */
/* Processes a scope's life is tied to (until-pid, docs/design.md "Scopes"): each watched by a
 * pidfd, whose exit a thread of its own reports. A pidfd names one process, never a later one
 * that got the same number. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sfs_pidwatch;

/* A watcher that calls exited(ctx, cookie) from its thread, holding none of its own locks,
 * once for each watched process that ended: 0 and *out, or -errno. */
int sfs_pidwatch_new(void (*exited)(void *ctx, uint64_t cookie), void *ctx,
                     struct sfs_pidwatch **out);
/* Starts the thread (after any fork): 0 or -errno. Processes already ended are reported then. */
int sfs_pidwatch_start(struct sfs_pidwatch *w);
/* Watches the process of pidfd (taken over, also on failure) under cookie: 0 or -errno. */
int sfs_pidwatch_add(struct sfs_pidwatch *w, int pidfd, uint64_t cookie);
/* Stops watching cookie; nothing is reported for it after this returns unless a report is
 * running right now (the callback must tolerate a cookie it no longer knows). */
void sfs_pidwatch_remove(struct sfs_pidwatch *w, uint64_t cookie);
/* Stops the thread and frees w (its pidfds closed). NULL is fine. */
void sfs_pidwatch_free(struct sfs_pidwatch *w);

/* The process pid, tied to as a scope's until-pid: 0 and a pidfd for it, its start time
 * (/proc/PID/stat field 22, clock ticks since boot) in *start, or -ESRCH (no such process, a
 * thread id that is not its process's, a zombie; *why, when not NULL, says which), -errno.
 * The start time is read while the pidfd already holds the process, and the process is
 * checked to be alive after it: the time is that process's, not a successor's. */
int sfs_pid_tie(pid_t pid, int *pidfd, uint64_t *start, const char **why);
/* Whether pid still runs and started at start: what a restart re-ties by. */
bool sfs_pid_same(pid_t pid, uint64_t start);
/* This boot's id (/proc/sys/kernel/random/boot_id, 36 characters): a start time compares only
 * within one boot. 0 or -errno. */
int sfs_boot_id(char out[40]);
/* The start time (field 22, clock ticks since boot) in a /proc/PID/stat text: 0, or -EIO when
 * the text is not what the kernel writes (no ')' closing the command name, fewer fields, no
 * number). The command name may hold spaces and parentheses: fields count after its last ')'. */
int sfs_proc_stat_start_time(const char *stat, uint64_t *out);
/* Tgid (a positive number) and, when state is not NULL, State's letter in a /proc/PID/status
 * text: 0, or -EIO when a line is missing or Tgid is no positive number. */
int sfs_proc_status_fields(const char *status, pid_t *tgid, char *state);
/* The thread group id of a task (a thread's tid, in the daemon's pid namespace), or -errno. */
pid_t sfs_tgid_of(pid_t tid);
