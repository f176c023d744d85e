# SPDX-License-Identifier: MIT
"""A daemon that dies breaks no reader: its supervisor starts a successor that takes every
kernel FUSE connection over (docs/design.md, "Taking over"), instead of a remount.

Outside systemd (`snapfs mount` daemonized) the serving process is killed with SIGKILL round
after round while readers check every byte: one on the host through the main mount and the
read view, one in a bubblewrap sandbox (uid 1000) through its scope's view, where OPEN
reaches the daemon. Every request they make reaches the daemon (fresh opens, the page cache
dropped before each pread, an mmap of a descriptor opened before the first kill, listings).
Each reports requests failed, wrong bytes, bindings moved (device or inode number changed):
all 0, and no SIGBUS (the reader would die of it). ROUNDS here is 12, to keep the suite
quick on a 2-CPU machine; scripts/bench.sh runs 200 rounds and reports the longest wait."""
import errno
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import pytest

from snaptest import (BUILD, NOBODY_UID, ROOT, SNAPFS, as_uid, control_ok, is_mounted, run,
                      sha256_hex, wait_for)

READER = pathlib.Path(__file__).resolve().parent / "takeover_reader.py"
ROUNDS = 12
SANDBOX_VIEW = "/run/snapfs"


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    assert shutil.which("bwrap"), "bwrap missing: scripts/deps.sh installs bubblewrap"
    assert SNAPFS.exists(), f"build first: {SNAPFS} missing"


def ppid_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        # Gone, or going: a process that exits between the open and the read of its stat
        # file fails the read with ESRCH.
        return False


class Daemon:
    """A daemonized snapfs with --store, a read view, a scope for uid 1000 and a few
    snapshots. The pid file names the supervisor (the process that stays); snapfs status
    names the serving process, the supervisor's child."""

    def __init__(self, workdir, runtime):
        self.dir = workdir
        self.mnt, self.view = os.path.join(workdir, "m"), os.path.join(workdir, "v")
        self.store, self.pidfile = os.path.join(workdir, "store"), os.path.join(workdir, "pid")
        self.audit = os.path.join(workdir, "audit.log")
        self.scope_view = os.path.join(workdir, "views", "box")
        for d in (self.mnt, self.view, os.path.dirname(self.scope_view)):
            os.makedirs(d)
        os.mkdir(self.store, 0o700)
        # Scopes keep their content in a RAM-backed runtime store (docs/deployment.md).
        r = run(SNAPFS, "mount", "--store", self.store, "--runtime-store", runtime,
                "--read-view", self.view,
                "--pid-file", self.pidfile, "--audit-log", self.audit, "--allow-other",
                "--readers", "any",
                self.mnt)
        assert r.returncode == 0, r.stderr
        with open(self.pidfile) as f:
            self.supervisor = int(f.read())
        self.pid = self.serving_pid()
        assert ppid_of(self.pid) == self.supervisor != self.pid

    def populate(self):
        self.data = {f"s{i}": os.urandom(1000 + 70000 * i) for i in range(3)}
        self.digests = {}
        for name, data in self.data.items():
            r = subprocess.run([str(SNAPFS), "put", "--mount", self.mnt, "--name", name, "-"],
                               input=data, capture_output=True, timeout=60)
            assert r.returncode == 0, r.stderr
            self.digests[name] = sha256_hex(data)
        control_ok(self.mnt, {"op": "scope-create", "name": "box", "view": self.scope_view,
                              "uids": [NOBODY_UID]})
        for name in ("s0", "s2"):
            control_ok(self.mnt, {"op": "grant", "scope": "box", "sha256": self.digests[name]})

    def serving_pid(self):
        return status(self.mnt)["pid"]

    def kill_and_wait_successor(self, sig=signal.SIGKILL):
        """Kills the serving process; returns once its successor serves (snapfs status, a
        request only a serving daemon answers, names it)."""
        old = self.pid
        os.kill(old, sig)
        wait_for(lambda: not alive(old), f"pid {old} to end")
        self.pid = self.serving_pid()
        assert self.pid != old and ppid_of(self.pid) == self.supervisor
        with open(self.pidfile) as f:
            assert int(f.read()) == self.supervisor

    def stop(self):
        os.kill(self.supervisor, signal.SIGTERM)
        wait_for(lambda: not alive(self.pid) and not alive(self.supervisor),
                 "the daemon and its supervisor to exit")


def waiting_for_fuse(pid):
    """Whether pid sleeps in the kernel waiting for a FUSE reply."""
    with open(f"/proc/{pid}/wchan") as f:
        return f.read() == "request_wait_answer"


def status(mnt):
    r = run(SNAPFS, "status", "--json", "--mount", mnt)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["status"]


@pytest.fixture
def daemon(workdir, runtime_dir):
    d = Daemon(workdir, runtime_dir)
    try:
        d.populate()
        yield d
    finally:
        if alive(d.pid) or alive(d.supervisor):
            d.stop()
    for m in (d.scope_view, d.view, d.mnt):
        assert not is_mounted(m), f"{m} left mounted"


def mount_ident(path):
    st = os.stat(path)
    return st.st_dev, st.st_ino


def start_host_reader(d, out, stop):
    pairs = [f"{d.mnt}/{d.digests[n]}={d.digests[n]}" for n in ("s0", "s1")]
    pairs += [f"{d.view}/{d.digests['s2']}={d.digests['s2']}"]
    return subprocess.Popen(["/usr/bin/python3", str(READER), out, stop, *pairs])


def start_sandbox_reader(d, outdir):
    """The reader in a bubblewrap sandbox as uid 1000, its scope's view bound read-only at
    SANDBOX_VIEW; outdir (bound read-write at /out) gets its report."""
    os.chmod(outdir, 0o777)
    trees = [str(ROOT)] + ([] if str(BUILD).startswith(str(ROOT) + "/") else [str(BUILD)])
    argv = ["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--dir", "/run"]
    for tree in trees:
        parents = [str(p) for p in reversed(pathlib.PurePath(tree).parents) if str(p) != "/"]
        for p in parents:
            argv += ["--dir", p]
        argv += ["--ro-bind", tree, tree]
    argv += ["--ro-bind", d.scope_view, SANDBOX_VIEW, "--bind", outdir, "/out",
             "--", "setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}",
             "--clear-groups", "/usr/bin/python3", str(READER), "/out/report", "/out/stop"]
    argv += [f"{SANDBOX_VIEW}/{d.digests[n]}={d.digests[n]}" for n in ("s0", "s2")]
    return subprocess.Popen(argv)


def progress(out):
    try:
        with open(out + ".progress") as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


def finish(proc, out, stop):
    open(stop, "w").close()
    assert proc.wait(timeout=120) == 0, f"reader died: {proc.returncode} (-7 is SIGBUS)"
    with open(out) as f:
        return json.load(f)


def clean(report):
    """The figures that must all be 0, and the proof the reader read throughout."""
    assert report["rounds"] > ROUNDS and report["reads"] > 0, report
    assert report["failures"] == {}, report
    assert report["wrong_bytes"] == 0 and report["bindings_moved"] == 0, report


def test_kill_9_rounds_of_the_serving_process_break_no_reader(daemon, workdir):
    d = daemon
    idents = {p: mount_ident(p) for p in (d.mnt, d.view, d.scope_view)}
    snap = {n: mount_ident(f"{d.mnt}/{dg}") for n, dg in d.digests.items()}
    host_out, host_stop = os.path.join(workdir, "host.json"), os.path.join(workdir, "stop")
    box = os.path.join(workdir, "box-out")
    os.mkdir(box)
    host, sandbox = start_host_reader(d, host_out, host_stop), start_sandbox_reader(d, box)
    try:
        wait_for(lambda: progress(host_out) > 0 and progress(f"{box}/report") > 0,
                 "both readers to read")
        for _ in range(ROUNDS):
            # Each round spans reads: both readers made progress since the last kill.
            before = (progress(host_out), progress(f"{box}/report"))
            d.kill_and_wait_successor()
            wait_for(lambda: progress(host_out) > before[0] and
                     progress(f"{box}/report") > before[1], "the readers to go on")
    finally:
        host_report = finish(host, host_out, host_stop)
        box_report = finish(sandbox, f"{box}/report", f"{box}/stop")
    print("host reader:", host_report, "sandbox reader:", box_report)
    clean(host_report)
    clean(box_report)
    # The same superblocks, devices and inode numbers: every binding still holds.
    assert {p: mount_ident(p) for p in idents} == idents
    assert {n: mount_ident(f"{d.mnt}/{dg}") for n, dg in d.digests.items()} == snap
    s = status(d.mnt)
    assert s["takeovers"] == ROUNDS and s["supervisor_pid"] == d.supervisor
    assert s["pid"] == d.pid != s["supervisor_pid"]
    with open(d.audit) as f:
        events = [json.loads(line) for line in f]
    taken = [e for e in events if e["event"] == "takeover"]
    assert len(taken) == ROUNDS and taken[-1]["pid"] == d.pid


def test_a_request_waiting_at_the_kill_is_answered_by_the_successor(daemon, workdir):
    d = daemon
    path = f"{d.mnt}/{d.digests['s1']}"
    fd = os.open(path, os.O_RDONLY)
    try:
        os.kill(d.pid, signal.SIGSTOP)
        # Uncached: the page cache is dropped, so this pread is a READ only a daemon answers;
        # it waits while the serving process is stopped.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        reader = subprocess.Popen(
            ["/usr/bin/python3", "-c",
             "import hashlib, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
             "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); "
             "print(hashlib.sha256(os.pread(fd, 1 << 20, 0)).hexdigest())", path],
            stdout=subprocess.PIPE, text=True)
        wait_for(lambda: waiting_for_fuse(reader.pid), "the reader to wait for the daemon")
        assert reader.poll() is None  # still waiting: nobody answers it
        d.kill_and_wait_successor()
        out, _ = reader.communicate(timeout=60)
        assert reader.returncode == 0 and out.strip() == d.digests["s1"]
        # The descriptor opened before the kill reads on through the successor.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert sha256_hex(os.pread(fd, 1 << 20, 0)) == d.digests["s1"]
    finally:
        os.close(fd)


def test_sigusr1_hands_over_and_sigterm_still_unmounts_everything(daemon, workdir):
    """Through the pid file's process, the supervisor, which forwards both signals."""
    d = daemon
    ident = mount_ident(d.scope_view)
    out, stop = os.path.join(workdir, "r.json"), os.path.join(workdir, "stop")
    reader = start_host_reader(d, out, stop)
    try:
        wait_for(lambda: progress(out) > 0, "the reader to read")
        # A planned hand-over (an upgrade outside systemd): nothing in flight is lost.
        old = d.pid
        os.kill(d.supervisor, signal.SIGUSR1)
        wait_for(lambda: not alive(old), f"pid {old} to end")
        d.pid = d.serving_pid()
        assert d.pid != old and ppid_of(d.pid) == d.supervisor
        n = progress(out)
        wait_for(lambda: progress(out) > n + 1, "the reader to go on")
    finally:
        report = finish(reader, out, stop)
    assert report["failures"] == {} and report["wrong_bytes"] == 0, report
    assert mount_ident(d.scope_view) == ident
    assert status(d.mnt)["takeovers"] == 1
    text = run(SNAPFS, "status", "--mount", d.mnt).stdout
    assert f"pid        {d.pid}\n" in text and f"supervisor {d.supervisor}\n" in text
    assert "takeovers  1\n" in text
    # A stop is not a hand-over: every mount goes, and so do both processes.
    d.stop()
    for m in (d.mnt, d.view, d.scope_view):
        assert not is_mounted(m)
    assert not os.path.exists(d.pidfile)


def test_a_successor_serves_only_descriptors_that_are_fuse_connections(snapfs_bin, workdir):
    """Descriptors handed in LISTEN_FDS that claim to be a connection but are a plain file
    are closed, and the daemon mounts anew (a device number of its own); the allowance,
    real connections adopted, is every test above."""
    mnt = os.path.join(workdir, "m")
    os.mkdir(mnt)
    fake = os.path.join(workdir, "fake")
    with open(fake, "wb") as f:
        f.write(b"not a FUSE connection")
    proc = subprocess.Popen(
        ["sh", "-c", 'exec 3<"$1" 4<"$1"; LISTEN_PID=$$ LISTEN_FDS=2 '
         'LISTEN_FDNAMES=snapfs-fuse-1:snapfs-rec-1 exec "$2" mount -f "$3"',
         "sh", fake, str(snapfs_bin), mnt],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: is_mounted(mnt), "the mount")
        s = status(mnt)
        assert s["takeovers"] == 0 and s["supervisor_pid"] is None and s["pid"] == proc.pid
        text = run(SNAPFS, "status", "--mount", mnt).stdout
        assert "takeovers  0\n" in text and "supervisor" not in text
        with open(fake, "rb") as f:
            assert f.read() == b"not a FUSE connection"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0 and not is_mounted(mnt)


def test_a_successor_that_refuses_to_start_unmounts_what_it_was_handed(daemon):
    """A successor that cannot serve (here a --store others may write, refused: exit 1)
    leaves no mount answering ENOTCONN: it unmounts every connection it was handed, and the
    supervisor, which gives up on a refusal, exits with its status. The allowance, a
    successor that starts, is every test above."""
    d = daemon
    os.chmod(d.store, 0o777)
    os.kill(d.pid, signal.SIGKILL)
    wait_for(lambda: not alive(d.supervisor), "the supervisor to give up")
    for m in (d.mnt, d.view, d.scope_view):
        assert not is_mounted(m), m
    with open(d.audit) as f:
        assert not any(json.loads(line)["event"] == "takeover" for line in f)


def test_a_publish_in_progress_at_a_kill_fails_clearly_and_publishes_nothing(daemon):
    """Its staged bytes were the dead process's: the next write through the descriptor fails
    EBADF (never ENOTCONN), the staging file is gone (ENOENT), and the rename publishes
    nothing; the allowance, a publish started after the takeover, is published."""
    d = daemon
    data = b"half of a config " * 1000
    path = os.path.join(d.mnt, ".staging", "inflight")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, data[:8000])
        d.kill_and_wait_successor()
        with pytest.raises(OSError) as e:
            os.write(fd, data[8000:])
        assert e.value.errno == errno.EBADF
    finally:
        os.close(fd)
    target = os.path.join(d.mnt, sha256_hex(data))
    with pytest.raises(OSError) as e:
        os.rename(path, target)
    assert e.value.errno == errno.ENOENT
    assert not os.path.exists(target)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.rename(path, target)
    with open(target, "rb") as f:
        assert f.read() == data


def test_a_scope_views_staging_numbers_are_never_handed_out_again(daemon):
    """A view numbers its own inodes; a staging file's number is in no scope file, so the
    successor learns it from the numbers kept for it: the next staging file after the kill
    gets a higher one, never one the kernel may still hold for the first."""
    d = daemon
    view = os.path.join(d.dir, "views", "pub")
    control_ok(d.mnt, {"op": "scope-create", "name": "pub", "view": view,
                       "uids": [NOBODY_UID], "publish": True})
    code = ("import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL); "
            "print(os.fstat(fd).st_ino); os.close(fd)")
    first = int(as_uid(NOBODY_UID, code, f"{view}/.staging/a").stdout)
    second = int(as_uid(NOBODY_UID, code, f"{view}/.staging/b").stdout)
    d.kill_and_wait_successor()
    third = int(as_uid(NOBODY_UID, code, f"{view}/.staging/c").stdout)
    assert first < second < third, (first, second, third)
    control_ok(d.mnt, {"op": "scope-remove", "name": "pub"})


def test_a_hand_over_runs_the_program_now_at_the_path(workdir):
    """An upgrade outside systemd: the program at the daemon's path is replaced (here by a
    wrapper that leaves a mark, then runs snapfs), SIGUSR1 to the pid file's process, and the
    successor is the new program; the mount serves on with the same device and content."""
    bindir, mnt = os.path.join(workdir, "bin"), os.path.join(workdir, "m")
    os.mkdir(bindir)
    os.mkdir(mnt)
    prog, mark = os.path.join(bindir, "snapfs"), os.path.join(workdir, "upgraded")
    shutil.copy(SNAPFS, prog)
    pidfile, store = os.path.join(workdir, "pid"), os.path.join(workdir, "store")
    os.mkdir(store, 0o700)
    # Relative paths: the successor starts where the daemon was started.
    r = run(prog, "mount", "--store", "store", "--pid-file", "pid", "m", cwd=workdir)
    assert r.returncode == 0, r.stderr
    with open(pidfile) as f:
        supervisor = int(f.read())
    try:
        r = subprocess.run([str(SNAPFS), "put", "--mount", mnt, "-"], input=b"before",
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        dev, old = os.stat(mnt).st_dev, status(mnt)["pid"]
        new = prog + ".new"
        with open(new, "w") as f:
            f.write(f"#!/bin/sh\necho \"$$\" > {mark}\nexec {SNAPFS} \"$@\"\n")
        os.chmod(new, 0o755)
        os.rename(new, prog)  # as dpkg replaces a program
        os.kill(supervisor, signal.SIGUSR1)
        wait_for(lambda: not alive(old), "the old serving process to end")
        s = status(mnt)
        with open(mark) as f:
            assert int(f.read()) == s["pid"] != old  # the new program is what serves
        assert s["takeovers"] == 1 and os.stat(mnt).st_dev == dev
        with open(os.path.join(mnt, sha256_hex(b"before")), "rb") as f:
            assert f.read() == b"before"
    finally:
        os.kill(supervisor, signal.SIGTERM)
        wait_for(lambda: not alive(supervisor), "the supervisor to exit")
    assert not is_mounted(mnt)


def test_a_scope_with_content_published_in_it_is_removed_after_a_takeover(daemon):
    """The removal drops the scope's nodes under its tree's lock: a successor must find them
    without making any again (it once took the lock twice and aborted; its own successor
    then answered the resent request EBADF). The same removal without a takeover is
    test_scopes.py's."""
    d = daemon
    view = os.path.join(d.dir, "views", "own")
    r = run(SNAPFS, "scope", "create", "--mount", d.mnt, "own", "--view", view)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(SNAPFS), "put", "--mount", d.mnt, "--scope", "own", "--as", "cfg",
                        "-"], input=b"a token", capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    d.kill_and_wait_successor()
    with open(os.path.join(view, "cfg"), "rb") as f:
        assert f.read() == b"a token"
    r = run(SNAPFS, "scope", "rm", "--mount", d.mnt, "own")
    assert r.returncode == 0, r.stderr
    s = status(d.mnt)
    assert s["pid"] == d.pid and s["takeovers"] == 1  # the successor itself did it
