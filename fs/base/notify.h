/* SPDX-License-Identifier: MIT */
/* The sd_notify datagram protocol, written out (no libsystemd): a service manager that set
 * $NOTIFY_SOCKET learns that the mount serves (READY=1), which process to watch (MAINPID=)
 * and that it is stopping (STOPPING=1). */
#pragma once

/* Sends state ("READY=1", "MAINPID=123\nREADY=1", ...) as one datagram to $NOTIFY_SOCKET: a
 * path, or an abstract socket written "@name". 0 when sent or when the variable is unset or
 * empty; -EINVAL when it names neither (or is too long for sockaddr_un); the errno of
 * socket/sendto. */
int sfs_notify(const char *state);
