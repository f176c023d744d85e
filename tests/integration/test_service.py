# SPDX-License-Identifier: MIT
"""snapfs run as a service, as an operator deploys it: installed by `meson install`, started by
mount(8) and fstab through mount.fuse3, supervised by systemd (the unit verifies, READY=1
reaches the notify socket), logs rotated. Scenarios that need snapfs at /usr/local/bin run in a
mount namespace of their own (service_ns.py)."""
import contextlib
import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from snaptest import BUILD, ROOT, E, errno_of, is_mounted, run

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The build installed by `meson install --destdir` (default prefix /usr/local)."""
    dest = str(tmp_path_factory.mktemp("dest"))
    r = run("meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest, "--quiet",
            timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = dest + "/usr/local"
    assert os.access(prefix + "/bin/snapfs", os.X_OK), "snapfs is not installed in /usr/local/bin"
    yield prefix
    shutil.rmtree(dest)


def scenario(name, installed, work, *args):
    """Runs service_ns.py's scenario in a new private mount namespace: its JSON result."""
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                        os.path.join(HERE, "service_ns.py"), name, installed + "/bin", work,
                        *[str(a) for a in args]],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["killed"] == [], f"processes still running at the end: {res}"
    return res


def assert_served_then_stopped_cleanly(res):
    assert res["mount"]["rc"] == 0, res["mount"]
    # Whatever mount(8) and mount.fuse3 pass (dev,suid always), snapfs imposes its flags.
    flags = res["mountinfo"].split()[5].split(",")
    assert {"nosuid", "nodev", "noexec"} <= set(flags), res["mountinfo"]
    assert res["mountinfo"].split()[7] == "fuse.snapfs"
    # The options reached the daemon: max_snapshot_size=1K refuses 2 KiB, accepts 10 bytes.
    assert res["small"] == "OK" and res["big"] == "EFBIG", res
    # umount stops the daemon: it exits 0, and no process is left.
    assert res["umount"]["rc"] == 0, res["umount"]
    assert len(res["pids"]) == 1
    assert res["reaped"] == [[res["pids"][0], 0]], res


def test_mount_8_starts_the_daemon_and_umount_stops_it(installed, workdir):
    pidfile = os.path.join(workdir, "snapfs.pid")
    res = scenario("mount8", installed, workdir, "-o",
                   "allow_other,max_snapshot_size=1K,max-bytes=64M,exec,dev,suid,"
                   f"pid_file={pidfile}")
    assert_served_then_stopped_cleanly(res)
    assert "allow_other" in res["mountinfo"].split()[-1]
    # The pid file named the serving daemon by the time mount(8) returned, and is gone.
    assert res["pidfile"] == f"{res['pids'][0]}\n"
    assert res["pidfile_left"] is False


def test_mount_8_takes_a_config_file_through_o_config(installed, workdir):
    """fstab's route to the config file: -o config=FILE, the file's options reaching the
    daemon (max-snapshot-size = 1K refuses 2 KiB), its unknown key refused by line."""
    path = os.path.join(workdir, "snapfs.conf")
    with open(path, "w") as f:
        f.write("# as /etc/snapfs/snapfs.conf\nmax-snapshot-size = 1K\nallow-other = yes\n")
    assert_served_then_stopped_cleanly(
        scenario("mount8", installed, workdir, "-o", f"config={path}"))
    with open(path, "a") as f:
        f.write("max-snapshots-size = 1K\n")
    res = scenario("mount8", installed, workdir, "-o", f"config={path}")
    assert res["mount"]["rc"] != 0
    assert f"{path}:4: unknown key 'max-snapshots-size'; nothing mounted" in \
        res["mount"]["err"], res["mount"]
    assert res["mountinfo"] is None and res["reaped"] == []


def test_a_pid_file_that_is_a_symlink_is_refused_and_nothing_is_mounted(installed, workdir):
    target = os.path.join(workdir, "precious")
    with open(target, "w") as f:
        f.write("not a pid file\n")
    os.symlink(target, os.path.join(workdir, "snapfs.pid"))
    res = scenario("mount8", installed, workdir, "-o",
                   f"pid_file={os.path.join(workdir, 'snapfs.pid')}")
    assert res["mount"]["rc"] != 0
    assert "--pid-file" in res["mount"]["err"]
    assert f"refused: {workdir}/snapfs.pid is a symbolic link" in res["mount"]["err"], \
        res["mount"]
    assert res["mountinfo"] is None and res["reaped"] == []
    with open(target) as f:
        assert f.read() == "not a pid file\n"  # untouched


def test_an_unknown_mount_option_is_refused_and_nothing_is_mounted(installed, workdir):
    res = scenario("mount8", installed, workdir, "-o", "max_snapshot_size=1K,no_such_option")
    assert res["mount"]["rc"] != 0
    # One line naming the option as written, no usage dump.
    assert res["mount"]["err"].strip().splitlines() == \
        ["snapfs: unknown mount option 'no_such_option'"], res["mount"]
    assert res["mountinfo"] is None
    # The daemon process refused before forking: mount.fuse3 reaped it, nothing is left.
    assert res["reaped"] == []
    # Beside it, the same mount without the bad word is served.
    assert_served_then_stopped_cleanly(
        scenario("mount8", installed, workdir, "-o", "max_snapshot_size=1K"))


@pytest.mark.parametrize("word", ["help", "debug", "foreground", "fore"])
def test_options_that_cannot_run_under_mount_8_are_refused_and_nothing_is_mounted(
        installed, workdir, word):
    # help printed its usage and mount(8) said success with nothing mounted; debug and
    # foreground never returned; an abbreviation reached them too.
    res = scenario("mount8", installed, workdir, "-o", f"allow_other,{word}")
    assert res["mount"]["rc"] != 0, res["mount"]
    refused = f"-o {word}: refused: mount(8) and fstab cannot run it" if word != "fore" \
        else f"snapfs: unknown mount option '{word}'"
    assert refused in res["mount"]["err"], res["mount"]
    assert res["mountinfo"] is None and res["reaped"] == []
    assert_served_then_stopped_cleanly(
        scenario("mount8", installed, workdir, "-o", "allow_other,max_snapshot_size=1K"))


def test_a_pid_file_that_cannot_be_written_fails_the_mount_before_it_is_made(installed,
                                                                             workdir):
    # /proc/PID/status opens for writing as root and takes no write: the mount was made and
    # mount(8) said success. (/proc/self/status is refused before: /proc/self is a link.)
    status = f"/proc/{os.getpid()}/status"
    res = scenario("mount8", installed, workdir, "-o",
                   f"max_snapshot_size=1K,pid_file={status}")
    assert res["mount"]["rc"] != 0, res["mount"]
    assert f"--pid-file {status}: refused: a kernel interface" in res["mount"]["err"]
    assert res["mountinfo"] is None and res["reaped"] == []
    res = scenario("mount8", installed, workdir, "-o",
                   "max_snapshot_size=1K,pid_file=/proc/self/status")
    assert "--pid-file /proc/self/status: refused: /proc/self is a symbolic link" in \
        res["mount"]["err"], res["mount"]
    assert res["mountinfo"] is None and res["reaped"] == []
    # A regular file on a full filesystem: opened, created, and not writable.
    full = os.path.join(workdir, "full")
    os.mkdir(full)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", full], check=True)
    try:
        fd = os.open(os.path.join(full, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        assert os.write(fd, b"x" * 4096) == 4096
        assert errno_of(os.write, fd, b"x") == E.ENOSPC  # full: the state the test is about
        os.close(fd)
        res = scenario("mount8", installed, workdir, "-o",
                       f"max_snapshot_size=1K,pid_file={full}/snapfs.pid")
    finally:
        subprocess.run(["umount", full], check=True)
    assert res["mount"]["rc"] != 0, res["mount"]
    assert "cannot be written: No space left on device; nothing mounted" in \
        res["mount"]["err"], res["mount"]
    assert res["mountinfo"] is None and res["reaped"] == []
    # The allowance: a pid file that can be written names the serving daemon.
    pidfile = os.path.join(workdir, "snapfs.pid")
    res = scenario("mount8", installed, workdir, "-o",
                   f"max_snapshot_size=1K,pid_file={pidfile}")
    assert_served_then_stopped_cleanly(res)
    assert res["pidfile"] == f"{res['pids'][0]}\n"


def test_generic_flags_that_tighten_the_mount_are_kept_on_it(installed, workdir):
    res = scenario("mount8", installed, workdir, "-o",
                   "max_snapshot_size=1K,nosymfollow,noatime,nodiratime")
    assert_served_then_stopped_cleanly(res)
    flags = set(res["mountinfo"].split()[5].split(","))
    assert {"nosymfollow", "noatime", "nodiratime", "nosuid", "nodev", "noexec"} <= flags, \
        res["mountinfo"]
    res = scenario("mount8", installed, workdir, "-o", "max_snapshot_size=1K,relatime")
    assert_served_then_stopped_cleanly(res)
    assert "relatime" in res["mountinfo"].split()[5].split(","), res["mountinfo"]
    # Two atime modes cannot both hold: refused, naming both.
    res = scenario("mount8", installed, workdir, "-o", "noatime,relatime")
    assert res["mount"]["rc"] != 0
    assert "--noatime and --relatime cannot both hold" in res["mount"]["err"], res["mount"]
    assert res["mountinfo"] is None


def test_an_fstab_line_mounts_with_mount_T(installed, workdir):
    res = scenario("fstab", installed, workdir,
                   "max_snapshot_size=1K,publishers=0,1000,allow_other,noauto,nofail,"
                   "x-systemd.requires=network.target")
    assert_served_then_stopped_cleanly(res)
    assert res["staging"] == "OK"


def test_an_fstab_line_with_ro_mounts_read_only(installed, workdir):
    res = scenario("fstab", installed, workdir, "ro,max_snapshot_size=1K")
    assert res["mount"]["rc"] == 0, res["mount"]
    assert res["mountinfo"].split()[5].startswith("ro,"), res["mountinfo"]
    # Read-only: no staging area at all, so nothing can be published.
    assert res["small"] == "ENOENT" and res["staging"] == "ENOENT"
    assert res["umount"]["rc"] == 0
    assert res["reaped"] == [[res["pids"][0], 0]]


def test_the_logrotate_snippet_rotates_a_log_past_100m_before_its_week_is_out(workdir):
    """logrotate, not forced, within the week: the log past the snippet's maxsize is rotated,
    its small neighbour is not."""
    logs = os.path.join(workdir, "logs")
    os.mkdir(logs, 0o750)
    with open(ROOT / "dist" / "snapfs.logrotate") as f:
        text = f.read()
    assert "/var/log/snapfs/*.log {" in text and "\tmaxsize 100M\n" in text
    # No service to reload here, and no pid file to signal.
    text = text.replace("/var/log/snapfs", logs).replace("systemctl list-units", "false")
    text = text.replace("/run/snapfs.pid", os.path.join(workdir, "no.pid"))
    conf, state = os.path.join(workdir, "snapfs.logrotate"), os.path.join(workdir, "state")
    with open(conf, "w") as f:
        f.write(text)
    os.chmod(conf, 0o644)  # logrotate ignores a configuration others may write
    big, small = os.path.join(logs, "audit.log"), os.path.join(logs, "audit-small.log")
    for path in (big, small):
        with open(path, "w") as f:
            f.write('{"event": "publish"}\n' * 50)
    # The first run records both logs as rotated now: a week is not out for either.
    r = run("logrotate", "--state", state, conf)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(os.listdir(logs)) == ["audit-small.log", "audit.log"]
    # Past 100 MiB (a sparse file: only its size counts).
    os.truncate(big, 100 * 1024 * 1024 + 1)
    r = run("logrotate", "--state", state, conf)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(os.listdir(logs)) == ["audit-small.log", "audit.log", "audit.log.1"]
    assert os.stat(big + ".1").st_size == 100 * 1024 * 1024 + 1
    assert os.stat(big).st_size == 0 and os.stat(small).st_size > 0


@pytest.mark.parametrize("name", ["snapfs.service", "snapfs@.service"])
def test_the_installed_units_pass_systemd_analyze_verify(installed, workdir, name):
    unit = installed + "/lib/systemd/system/" + name
    assert os.path.exists(unit)
    with open(unit) as f:
        text = f.read()
    assert "ExecStart=/usr/local/bin/snapfs mount --foreground" in text
    assert "Type=notify" in text
    res = scenario("verify_unit", installed, workdir, unit, installed + "/share/man")
    assert res["verify"]["rc"] == 0, res["verify"]
    assert res["verify"]["err"] == "", res["verify"]


def test_the_installed_metrics_units_pass_systemd_analyze_verify(installed, workdir):
    units = [installed + "/lib/systemd/system/" + n
             for n in ("snapfs-metrics.service", "snapfs-metrics.timer")]
    with open(units[0]) as f:
        text = f.read()
    assert ("ExecStart=/usr/local/bin/snapfs metrics --mount /run/snapfs --format prometheus "
            "--output /var/lib/prometheus/node-exporter/snapfs.prom --group prometheus\n") in text
    res = scenario("verify_unit", installed, workdir, " ".join(units), installed + "/share/man")
    assert res["verify"]["rc"] == 0, res["verify"]
    assert res["verify"]["err"] == "", res["verify"]


def notify_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    s.bind(path)
    return s


def recv_within(sock, deadline=60, stderr=None):
    """The next state datagram. STATUS= ones, the summary a thread of the daemon sends whenever
    it changes (in no fixed order with READY=1 and STOPPING=1), are passed over: test_status.py
    checks them."""
    while True:
        ready, _, _ = select.select([sock], [], [], deadline)
        if not ready and stderr:
            with open(stderr) as f:
                raise AssertionError(f"no datagram on the notify socket; stderr:\n{f.read()}")
        assert ready, "no datagram on the notify socket"
        msg = sock.recv(4096).decode()
        if not msg.startswith("STATUS="):
            return msg


@contextlib.contextmanager
def notified(argv, workdir, mnt):
    """Starts argv (a daemon in the foreground) with its own $NOTIFY_SOCKET: yields (proc,
    sock). At the end the process is gone (killed if the test did not stop it) and nothing
    is left mounted at mnt."""
    path = os.path.join(workdir, "notify")
    sock = notify_socket(path)
    with open(os.path.join(workdir, "daemon.stderr"), "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                env=dict(os.environ, NOTIFY_SOCKET=path))
    try:
        yield proc, sock
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sock.close()
    assert not is_mounted(mnt)


def stopped_by(proc, sock, *signals):
    """Sends signals at once; the daemon says STOPPING=1 and exits 0."""
    for sig in signals:
        proc.send_signal(sig)
    assert recv_within(sock) == "STOPPING=1"
    assert proc.wait(60) == 0


def test_ready_reaches_the_notify_socket_once_the_mount_serves(snapfs_bin, workdir):
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    argv = [snapfs_bin, "mount", "-f", "--audit-log", os.path.join(workdir, "audit"), mnt]
    with notified(argv, workdir, mnt) as (proc, sock):
        assert recv_within(sock, stderr=os.path.join(workdir, "daemon.stderr")) == "READY=1"
        # Ready means served: the mount is there and answers a request.
        assert is_mounted(mnt)
        assert sorted(os.listdir(mnt)) == [".control", ".staging"]
        stopped_by(proc, sock, signal.SIGTERM)


def test_a_refused_mount_never_says_ready(mount_snapfs, snapfs_bin, workdir):
    fs = mount_snapfs()
    sock = notify_socket(os.path.join(workdir, "notify"))
    env = dict(os.environ, NOTIFY_SOCKET=os.path.join(workdir, "notify"))
    try:
        # A second mount on the same path stacks: its self-check refuses it, before READY.
        r = run(snapfs_bin, "mount", "-f", fs.path, env=env)
        assert r.returncode == 1, r.stderr
        assert "stacked" in r.stderr
        # The process has exited: anything it sent is queued already.
        assert errno_of(sock.recv, 4096, socket.MSG_DONTWAIT) == E.EAGAIN
        # Beside it, the mount that is alone serves (and was announced by its own start).
        assert sorted(os.listdir(fs.path)) == [".control", ".staging"]
    finally:
        sock.close()


def test_a_daemonized_mount_names_its_main_pid(installed, snapfs_bin, workdir):
    res = scenario("notify_daemonized", installed, workdir, snapfs_bin)
    assert res["mount"]["rc"] == 0, res["mount"]
    pid = res["pids"][0]
    assert res["message"] == f"MAINPID={pid}\nREADY=1"
    assert res["served"] == "OK"
    assert res["stopping"] == "STOPPING=1"
    assert res["reaped"] == [[pid, 0]]


def test_snapfs_mount_returns_only_once_the_daemon_serves(installed, snapfs_bin, workdir):
    """The daemonized child reports to the waiting caller after INIT and READY: what it says
    until then (here, that $NOTIFY_SOCKET cannot be reached, which it finds only when it
    sends READY=1) reaches the caller's standard error, and the caller exits 0."""
    res = scenario("bad_notify_socket", installed, workdir, snapfs_bin)
    assert res["mount"]["rc"] == 0, res["mount"]
    assert "$NOTIFY_SOCKET: No such file or directory" in res["mount"]["err"], res["mount"]
    assert res["served"] == "OK"
    assert res["umount"]["rc"] == 0
    assert res["reaped"] == [[res["pids"][0], 0]]


def test_the_units_command_serves_and_stops_as_systemd_drives_it(installed, snapfs_bin,
                                                                 workdir, runtime_dir):
    """The installed unit's ExecStart and the installed config file it names, their paths
    moved under workdir, run as systemd would: READY=1 on the notify socket, reload (SIGHUP)
    keeps it serving, stop (SIGTERM) exits 0."""
    with open(installed + "/lib/systemd/system/snapfs.service") as f:
        line = next(l for l in f if l.startswith("ExecStart="))
    argv = line.strip().split("=", 1)[1].split()
    conf = "/usr/local/etc/snapfs/snapfs.conf"
    assert argv == ["/usr/local/bin/snapfs", "mount", "--foreground", "--config", conf,
                    "/run/snapfs"], argv
    moved = {"/run/snapfs": os.path.join(workdir, "run"),
             "/var/lib/snapfs": os.path.join(workdir, "lib"),
             "/var/log/snapfs/audit.log": os.path.join(workdir, "audit.log"),
             # RuntimeDirectory=: on a tmpfs, as /run is under systemd
             "/run/snapfs-scopes": os.path.join(runtime_dir, "scopes"),
             conf: os.path.join(workdir, "snapfs.conf")}
    for path in moved.values():
        if not path.endswith((".log", ".conf")):
            os.mkdir(path, 0o700)
    # The installed file (installed is the prefix), with the same paths moved.
    with open(installed + "/etc/snapfs/snapfs.conf") as f:
        text = f.read()
    for old, new in moved.items():
        text, n = re.subn(rf"(?m)^([a-z-]+ = ){re.escape(old)}$", rf"\g<1>{new}", text)
        assert n == (old not in ("/run/snapfs", conf)), (old, n)
    with open(moved[conf], "w") as f:
        f.write(text)
    argv = [snapfs_bin] + [moved.get(a, a) for a in argv[1:]]
    mnt = moved["/run/snapfs"]
    with notified(argv, workdir, mnt) as (proc, sock):
        assert recv_within(sock, stderr=os.path.join(workdir, "daemon.stderr")) == "READY=1"
        data = b"published under the unit"
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(mnt, ".staging", "cfg"), "wb") as f:
            f.write(data)
        os.rename(os.path.join(mnt, ".staging", "cfg"), os.path.join(mnt, digest))
        assert os.path.exists(os.path.join(moved["/var/lib/snapfs"], "blobs", "sha256", digest))
        # systemctl reload, then stop, at once.
        stopped_by(proc, sock, signal.SIGHUP, signal.SIGTERM)
