/* SPDX-License-Identifier: MIT */
/* denysys: writes to standard output a seccomp BPF program (libseccomp's
 * seccomp_export_bpf) that lets every system call through except the ones named, which fail
 * with EPERM: the kind of filter sandboxes use to block memfd_create. bubblewrap loads it
 * with --seccomp FD.
 *
 *   denysys SYSCALL... > filter.bpf
 *
 * Exit 0, or 1 with a message naming the step that failed. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        scmp_filter_ctx ctx;
        int r;

        if (argc < 2) {
                fprintf(stderr, "usage: denysys SYSCALL... > filter.bpf\n");
                return 2;
        }
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx) {
                fprintf(stderr, "denysys: seccomp_init failed\n");
                return 1;
        }
        for (int i = 1; i < argc; i++) {
                int nr = seccomp_syscall_resolve_name(argv[i]);
                if (nr == __NR_SCMP_ERROR) {
                        fprintf(stderr, "denysys: unknown system call '%s'\n", argv[i]);
                        seccomp_release(ctx);
                        return 1;
                }
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0) {
                        fprintf(stderr, "denysys: rule for %s: %s\n", argv[i], strerror(-r));
                        seccomp_release(ctx);
                        return 1;
                }
        }
        r = seccomp_export_bpf(ctx, STDOUT_FILENO);
        seccomp_release(ctx);
        if (r < 0) {
                fprintf(stderr, "denysys: export: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
