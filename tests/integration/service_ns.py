# SPDX-License-Identifier: MIT
"""Runs one operator scenario in a mount namespace of its own, with snapfs installed where
mount(8) finds it, and prints what happened as one JSON object.

Usage: unshare -m --propagation private python3 service_ns.py SCENARIO BINDIR WORKDIR [ARGS]

mount.fuse3 runs `snapfs` from a fixed PATH (/usr/local/bin, /usr/bin, ...), so a PATH of our
own cannot point it at the build: BINDIR (where `meson install --destdir` put snapfs) is
bind-mounted over /usr/local/bin, in this namespace only, so the host is untouched. This
process is a child subreaper: a daemon that forks away from mount(8) is reparented here, and
its exit status is reaped and reported ("reaped": [[pid, status], ...]). Whatever is still
running at the end is killed and reported under "killed", which fails the test.
"""
import ctypes
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
DEADLINE = 60.0

libc = ctypes.CDLL(None, use_errno=True)


def sh(*args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    r = subprocess.run([str(a) for a in args], **kw)
    return {"rc": r.returncode, "out": r.stdout, "err": r.stderr}


def mountinfo_line(path):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4] == path:
                return line.strip()
    return None


def wait_for(pred, what, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise SystemExit(f"timed out waiting for {what}")


def errno_name(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
    return "OK"


def stage(mnt, name, data):
    def do():
        fd = os.open(os.path.join(mnt, ".staging", name), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    return errno_name(do)


def child_pids(comm_wanted=None):
    pids = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{e}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if fields[1] == str(os.getpid()) and comm_wanted in (None, comm):
                pids.append(int(e))
    return pids


def reap_all(deadline=DEADLINE):
    """Waits for every remaining child (generous deadline), then kills what is left."""
    reaped, killed = [], []
    end = time.monotonic() + deadline
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            reaped.append([pid, os.waitstatus_to_exitcode(status)])
            continue
        if time.monotonic() > end and not killed:
            for p in child_pids():
                killed.append(p)
                os.kill(p, signal.SIGKILL)
        time.sleep(0.02)
    return reaped, killed


# ---- scenarios: each returns a dict --------------------------------------------------

def scenario_mount8(work, *opts):
    """mount -t fuse.snapfs with OPTS, a small publish and an oversized one, then umount."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    res = {"mount": sh("mount", "-t", "fuse.snapfs", "snapfs", mnt, *opts)}
    res["mountinfo"] = mountinfo_line(mnt)
    if res["mount"]["rc"] != 0:
        return res
    res["pids"] = child_pids("snapfs")
    res["small"] = stage(mnt, "small", b"x" * 10)
    res["big"] = stage(mnt, "big", b"x" * 2048)
    res["umount"] = sh("umount", mnt)
    return res


def scenario_fstab(work, line_opts):
    """An fstab line with line_opts, mounted with mount -T FSTAB MNT, then umount."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    fstab = os.path.join(work, "fstab")
    with open(fstab, "w") as f:
        f.write(f"# snapfs, as an operator writes it\nsnapfs {mnt} fuse.snapfs {line_opts} 0 0\n")
    res = {"mount": sh("mount", "-T", fstab, mnt)}
    res["mountinfo"] = mountinfo_line(mnt)
    if res["mount"]["rc"] != 0:
        return res
    res["pids"] = child_pids("snapfs")
    res["small"] = stage(mnt, "small", b"x" * 10)
    res["big"] = stage(mnt, "big", b"x" * 2048)
    res["staging"] = errno_name(os.listdir, os.path.join(mnt, ".staging"))
    res["umount"] = sh("umount", mnt)
    return res


def scenario_verify_unit(work, unit, mandir):
    """systemd-analyze verify on the installed unit; its ExecStart must exist."""
    env = dict(os.environ, MANPATH=mandir)
    return {"verify": sh("systemd-analyze", "verify", unit, env=env)}


def scenario_notify_daemonized(work, binary):
    """snapfs mount (daemonized) with an abstract $NOTIFY_SOCKET: MAINPID= and READY=1 come
    from the daemon once it serves; SIGTERM to that pid stops it."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    name = f"@snapfs-notify-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    sock.bind("\0" + name[1:])
    sock.settimeout(DEADLINE)
    env = dict(os.environ, NOTIFY_SOCKET=name)
    res = {"mount": sh(binary, "mount", mnt, env=env)}
    if res["mount"]["rc"] != 0:
        return res
    res["message"] = sock.recv(4096).decode()
    res["pids"] = child_pids("snapfs")
    res["served"] = errno_name(os.listdir, mnt)
    os.kill(res["pids"][0], signal.SIGTERM)
    sock.settimeout(DEADLINE)
    res["stopping"] = sock.recv(4096).decode()
    wait_for(lambda: mountinfo_line(mnt) is None, "the unmount")
    sock.close()
    return res


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items()
             if name.startswith("scenario_")}


def main():
    name, bindir, work, *args = sys.argv[1:]
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    r = subprocess.run(["mount", "--bind", bindir, "/usr/local/bin"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"cannot bind {bindir} over /usr/local/bin: {r.stderr}")
    try:
        res = SCENARIOS[name](work, *args)
    finally:
        reaped, killed = reap_all()
    res["reaped"], res["killed"] = reaped, killed
    print(json.dumps(res))


if __name__ == "__main__":
    main()
