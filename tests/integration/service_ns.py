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
import hashlib
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


def child_pids(comm_wanted=None, parent=None):
    """The processes whose parent is parent (default: this one), named comm_wanted."""
    parent = os.getpid() if parent is None else parent
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
            if fields[1] == str(parent) and comm_wanted in (None, comm):
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

def mounted_by(work, mount_argv):
    """Runs mount_argv (mount(8) on work/mnt), then a small publish, an oversized one and a
    listing of .staging there, then umount."""
    mnt = os.path.join(work, "mnt")
    res = {"mount": sh(*mount_argv)}
    res["mountinfo"] = mountinfo_line(mnt)
    if res["mount"]["rc"] != 0:
        return res
    res["pids"] = child_pids("snapfs")
    pidfile = os.path.join(work, "snapfs.pid")
    if os.path.exists(pidfile):
        with open(pidfile) as f:
            res["pidfile"] = f.read()
    res["small"] = stage(mnt, "small", b"x" * 10)
    res["big"] = stage(mnt, "big", b"x" * 2048)
    res["staging"] = errno_name(os.listdir, os.path.join(mnt, ".staging"))
    res["umount"] = sh("umount", mnt)
    return res


def scenario_mount8(work, *opts):
    """mount -t fuse.snapfs snapfs work/mnt OPTS."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    return mounted_by(work, ["mount", "-t", "fuse.snapfs", "snapfs", mnt, *opts])


def scenario_fstab(work, line_opts):
    """An fstab line with line_opts, mounted with mount -T FSTAB work/mnt."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    fstab = os.path.join(work, "fstab")
    with open(fstab, "w") as f:
        f.write(f"# snapfs, as an operator writes it\nsnapfs {mnt} fuse.snapfs {line_opts} 0 0\n")
    return mounted_by(work, ["mount", "-T", fstab, mnt])


def scenario_verify_unit(work, unit, mandir):
    """systemd-analyze verify on the installed unit (or units, separated by spaces: a timer
    with its service); its ExecStart must exist."""
    env = dict(os.environ, MANPATH=mandir)
    return {"verify": sh("systemd-analyze", "verify", *unit.split(" "), env=env)}


def recv_state(sock):
    """The next datagram that is not STATUS= (the daemon's summary, sent by a thread of its own
    whenever it changes, in no fixed order with MAINPID=, READY=1 and STOPPING=1)."""
    while True:
        msg = sock.recv(4096).decode()
        if not msg.startswith("STATUS="):
            return msg


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
    res["message"] = recv_state(sock)
    res["pids"] = child_pids("snapfs")
    res["served"] = errno_name(os.listdir, mnt)
    os.kill(res["pids"][0], signal.SIGTERM)
    sock.settimeout(DEADLINE)
    res["stopping"] = recv_state(sock)
    wait_for(lambda: mountinfo_line(mnt) is None, "the unmount")
    sock.close()
    return res


def scenario_bad_notify_socket(work, binary):
    """snapfs mount (daemonized) with a $NOTIFY_SOCKET that does not exist: what its caller
    sees, and whether the mount serves."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    env = dict(os.environ, NOTIFY_SOCKET=os.path.join(work, "no-such-dir", "sock"))
    res = {"mount": sh(binary, "mount", mnt, env=env)}
    if res["mount"]["rc"] != 0:
        return res
    res["pids"] = child_pids("snapfs")
    res["served"] = errno_name(os.listdir, mnt)
    res["umount"] = sh("umount", mnt)
    return res


# What this machine needs for rootless podman, in the user's own configuration: no systemd
# here to manage cgroups, and a hard RLIMIT_NOFILE below podman's default.
CONTAINERS_CONF = """[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
[containers]
cgroups = "disabled"
default_ulimits = ["nofile=%d:%d"]
"""


def scenario_podman(work, recipe, view, entry, uid, *command):
    """docs/recipes/podman-rootless.sh as uid (subordinate ids given in this namespace only)."""
    import pwd
    import resource
    user = pwd.getpwuid(int(uid))
    res = {}
    # crun refuses a hybrid cgroup layout (v1 controllers and a v2 tree beside them), which
    # this machine has; with cgroups disabled it only needs not to see the v2 tree.
    if os.path.ismount("/sys/fs/cgroup/unified"):
        res["cgroup"] = sh("umount", "/sys/fs/cgroup/unified")
    for name in ("subuid", "subgid"):
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(f"{user.pw_name}:100000:65536\n")
        res[name] = sh("mount", "--bind", path, f"/etc/{name}")
    home, runtime = os.path.join(work, "home"), os.path.join(work, "run")
    os.makedirs(os.path.join(home, ".config", "containers"))
    os.makedirs(runtime, mode=0o700)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    with open(os.path.join(home, ".config", "containers", "containers.conf"), "w") as f:
        f.write(CONTAINERS_CONF % (hard, hard))
    for top, dirs, files in os.walk(work):
        for n in dirs + files:
            os.lchown(os.path.join(top, n), int(uid), int(uid))
    os.chown(work, int(uid), int(uid))
    env = {"HOME": home, "XDG_RUNTIME_DIR": runtime, "PATH": os.environ["PATH"]}
    res["run"] = sh("setpriv", f"--reuid={uid}", f"--regid={uid}", "--init-groups",
                    recipe, view, entry, os.path.join(work, "rootfs"), *command,
                    env=env, timeout=300)
    # Rootless podman leaves a pause process holding its namespaces: ours to stop.
    pause = os.path.join(runtime, "libpod", "tmp", "pause.pid")
    if os.path.exists(pause):
        with open(pause) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGTERM)
    return res


def private_dev_log(work):
    """A /dev of this namespace only (a tmpfs, the devices the daemon needs bound in from the
    real one) with our own datagram socket at /dev/log, as syslog(3) finds it."""
    old = os.path.join(work, "olddev")
    os.makedirs(old)
    res = {"rbind": sh("mount", "--rbind", "/dev", old),
           "tmpfs": sh("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/dev")}
    for node in ("null", "zero", "full", "random", "urandom", "fuse", "tty"):
        open(f"/dev/{node}", "w").close()
        res[node] = sh("mount", "--bind", os.path.join(old, node), f"/dev/{node}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    sock.bind("/dev/log")
    os.chmod("/dev/log", 0o666)
    return sock, res


def scenario_syslog(work, binary):
    """snapfs mount daemonized without --audit-log: its events reach /dev/log."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    sock, res = private_dev_log(work)
    res["mount"] = sh(binary, "mount", mnt)
    if res["mount"]["rc"] != 0:
        return res
    res["pids"] = child_pids("snapfs")
    # The serving process: the supervisor's child (docs/design.md, "Taking over").
    res["serving"] = child_pids("snapfs", res["pids"][0])
    data = b"audited through syslog"
    digest = hashlib.sha256(data).hexdigest()
    res["stage"] = stage(mnt, "cfg", data)
    res["publish"] = errno_name(os.rename, os.path.join(mnt, ".staging", "cfg"),
                                os.path.join(mnt, digest))
    res["write"] = errno_name(os.open, os.path.join(mnt, digest), os.O_WRONLY)
    res["digest"] = digest
    messages = []
    sock.settimeout(DEADLINE)
    while len([m for m in messages if "snapfs" in m]) < 2:
        messages.append(sock.recv(65536).decode(errors="replace"))
    res["messages"] = messages
    res["umount"] = sh("umount", mnt)
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
    res["pidfile_left"] = os.path.exists(os.path.join(work, "snapfs.pid"))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
