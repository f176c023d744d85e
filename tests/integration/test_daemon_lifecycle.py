# SPDX-License-Identifier: MIT
"""The daemon's lifecycle: self-check before serving, daemonizing, clean exit on signals,
a killed daemon's stale mount, options, and the audit log."""
import json
import os
import signal
import subprocess
import time

import pytest

from snaptest import E, errno_of, is_mounted, run, sha256_hex, start_snapfs


def mount_count(path):
    n = 0
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4] == path:
                n += 1
    return n


def ppid_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def daemon_pids(path):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"mount" in argv and path.encode() in argv and argv[0].endswith(b"snapfs"):
                pids.append(int(entry))
    return pids


def wait_gone(pid, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.02)
    return False


def test_sigterm_unmounts_and_exits_zero(snapfs):
    snapfs.publish(b"bye")
    assert snapfs.stop(signal.SIGTERM) == 0
    assert not is_mounted(snapfs.path)


def test_sigint_unmounts_and_exits_zero(snapfs):
    assert snapfs.stop(signal.SIGINT) == 0
    assert not is_mounted(snapfs.path)


def test_sigterm_as_soon_as_it_reports_serving_unmounts_and_exits_zero(snapfs_bin, workdir):
    # The signal handlers must be in place before "serving" is printed: a caller may stop the
    # daemon the moment it reads that line (before the fix, 3 of 4 such stops killed it).
    path = os.path.join(workdir, "quick")
    os.mkdir(path)
    for _ in range(5):
        fs = start_snapfs(snapfs_bin, path)
        assert fs.stop(signal.SIGTERM) == 0, fs.stderr()
        assert not is_mounted(path)


def test_a_mount_stacked_on_another_is_refused_before_serving(snapfs_bin, workdir):
    path = os.path.join(workdir, "stacked")
    os.mkdir(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path], check=True)
    try:
        proc = start_snapfs(snapfs_bin, path, expect_ready=False)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 1, err
        assert "stacked:" in err
        assert mount_count(path) == 1  # only the tmpfs: snapfs took its own mount away
    finally:
        subprocess.run(["umount", path], check=True)
    # The same path, made free, is served.
    fs = start_snapfs(snapfs_bin, path)
    try:
        assert fs.publish(b"served") == sha256_hex(b"served")
    finally:
        assert fs.stop() == 0
    assert not is_mounted(path)


def test_without_foreground_it_returns_once_the_mount_serves(snapfs_bin, workdir):
    path = os.path.join(workdir, "bg")
    os.mkdir(path)
    r = run(snapfs_bin, "mount", path)
    assert r.returncode == 0, r.stderr
    pids = daemon_pids(path)
    try:
        # The serving process and its supervisor (docs/design.md, "Taking over"), whose
        # child it is; SIGTERM to either stops both and unmounts.
        assert len(pids) == 2
        assert len({ppid_of(p) for p in pids} & set(pids)) == 1
        assert is_mounted(path)
        data = b"ready at once"
        fd = os.open(os.path.join(path, ".staging/a"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        os.write(fd, data)
        os.close(fd)
        os.rename(os.path.join(path, ".staging/a"), os.path.join(path, sha256_hex(data)))
    finally:
        serving = [p for p in pids if ppid_of(p) in pids]
        os.kill(serving[0], signal.SIGTERM)
        for pid in pids:
            assert wait_gone(pid)
    assert not is_mounted(path)


def replaced_by_a_new_daemon(snapfs_bin, path, lost=None):
    """snapfs mount --replace-stale at path clears the dead mount and serves alone (without
    the snapshot lost, the dead daemon's)."""
    fs = start_snapfs(snapfs_bin, path, "--replace-stale")
    try:
        assert mount_count(path) == 1
        assert fs.publish(b"new daemon") == sha256_hex(b"new daemon")
        if lost:
            assert errno_of(os.stat, os.path.join(path, lost)) == E.ENOENT
    finally:
        assert fs.stop() == 0


def cleared(path):
    if is_mounted(path):
        subprocess.run(["umount", "-l", path], check=False)
    assert not is_mounted(path)


def test_a_killed_daemon_is_reported_and_must_be_cleared_explicitly(snapfs_bin, workdir):
    path = os.path.join(workdir, "killed")
    os.mkdir(path)
    fs = start_snapfs(snapfs_bin, path)
    digest = fs.publish(b"lost with the daemon")
    fs.stop(signal.SIGKILL)
    try:
        assert errno_of(os.stat, os.path.join(path, digest)) == E.ENOTCONN
        chk = run(snapfs_bin, "check", "--preset", "snapfs", path)
        assert chk.returncode == 1
        assert "transport-not-connected" in chk.stdout

        again = start_snapfs(snapfs_bin, path, expect_ready=False)
        out, err = again.communicate(timeout=30)
        assert again.returncode == 1
        assert f"fusermount3 -u {path}" in err and "--replace-stale" in err

        replaced_by_a_new_daemon(snapfs_bin, path, lost=digest)
    finally:
        cleared(path)


def test_replace_stale_sees_a_dead_daemon_whose_root_was_stat_ed(snapfs_bin, workdir):
    """The kernel answers stat() of a dead mount's root from cached attributes: the stale
    check must ask the daemon itself. Beside it, a live mount is never replaced."""
    path = os.path.join(workdir, "cached")
    os.mkdir(path)
    fs = start_snapfs(snapfs_bin, path)
    digest = fs.publish(b"looked at before the kill")
    try:
        # The live mount first: --replace-stale leaves it alone, refused as stacked.
        r = run(snapfs_bin, "mount", "-f", "--replace-stale", path)
        assert r.returncode == 1, r.stderr
        assert "stacked" in r.stderr
        assert mount_count(path) == 1
        assert os.stat(os.path.join(path, digest)).st_size == len(b"looked at before the kill")

        os.stat(path)
        os.stat(os.path.join(path, digest))
        fs.stop(signal.SIGKILL)
        # Cached attributes still answer stat(): this is what fooled the old check.
        assert os.stat(path).st_mode & 0o777 == 0o555

        replaced_by_a_new_daemon(snapfs_bin, path)
    finally:
        cleared(path)


def test_replace_stale_leaves_a_dead_mount_of_another_type_alone(snapfs_bin, workdir):
    tiny = os.path.join(os.environ.get("SNAPFS_BUILD", "build"), "tests", "helpers", "tinyfs")
    if not os.path.exists(tiny):
        pytest.fail(f"test helper {tiny} was not built")
    path = os.path.join(workdir, "other")
    os.mkdir(path)
    proc = subprocess.Popen([tiny, path, "-o", "fsname=other,subtype=other,nosuid,nodev,noexec"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not is_mounted(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.kill()
        proc.wait()
        r = run(snapfs_bin, "mount", "-f", "--replace-stale", path)
        assert r.returncode == 1
        assert "not a snapfs mount" in r.stderr
        assert is_mounted(path)
    finally:
        proc.stdout.close()
        proc.stderr.close()
        subprocess.run(["umount", "-l", path], check=False)


@pytest.mark.parametrize("opt,value", [("--max-snapshot-size", "2G"),
                                       ("--max-snapshot-size", "12Q"),
                                       ("--max-bytes", "-1"),
                                       ("--max-snapshots", "0"),
                                       ("--max-staging", "many"),
                                       ("--readers", "1000,,1001"),
                                       ("--publishers", "root")])
def test_bad_option_values_are_refused_naming_the_option(snapfs_bin, workdir, opt, value):
    r = run(snapfs_bin, "mount", opt, value, workdir)
    assert r.returncode == 2
    assert opt in r.stderr and value in r.stderr
    assert not is_mounted(workdir)


def test_read_only_mode_has_no_staging_and_is_mounted_ro(mount_snapfs):
    fs = mount_snapfs("--read-only")
    assert os.listdir(fs.p()) == []
    assert errno_of(os.stat, fs.p(".staging")) == E.ENOENT
    assert errno_of(os.open, fs.p("x"), os.O_WRONLY | os.O_CREAT) == E.EROFS
    assert os.statvfs(fs.p()).f_flag & os.ST_RDONLY


def test_audit_log_has_one_json_line_per_publish_and_refusal(snapfs):
    digest = snapfs.publish(b"audited")
    errno_of(os.open, snapfs.p(digest), os.O_WRONLY)
    errno_of(os.chmod, snapfs.p(digest), 0o600)
    snapfs.stage(b"wrong", "w")
    errno_of(os.rename, snapfs.p(".staging/w"), snapfs.p(sha256_hex(b"right")))
    os.unlink(snapfs.p(digest))
    events = snapfs.wait_audit(lambda ev: len(ev) >= 5)
    kinds = [(e["event"], e.get("op"), e["errno"]) for e in events]
    assert kinds == [("publish", "rename", 0),
                     ("refused", "open", E.EROFS),
                     ("refused", "setattr", E.EROFS),
                     ("publish-refused", "rename", E.EBADMSG),
                     ("unlink", "unlink", 0)]
    assert events[0]["digest"] == digest and events[0]["uid"] == 0 and events[0]["pid"] > 0
    assert events[1]["error"] == "EROFS"
    assert events[1]["digest"] == digest and events[2]["digest"] == digest
    assert events[3]["name"] == "w" and events[3]["target"] == sha256_hex(b"right")
    for e in events:
        assert e["time"].endswith("Z")


def blocked_signals(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16)
    raise AssertionError("no SigBlk")


def test_only_the_main_thread_takes_sigterm_so_it_always_stops_the_loop(mount_snapfs, workdir):
    """libfuse stops its loop when SIGTERM interrupts the thread waiting in it. Were SIGTERM
    delivered to another thread of ours (the staging sweeper, the read view's loop), the
    daemon would mark itself exited and never stop: every other thread must block it."""
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    fs = mount_snapfs("--readers", "any", "--read-view", view, "--staging-ttl", "1m")
    pid = fs.proc.pid
    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    assert len(tids) >= 3  # main, sweeper, view loop (and libfuse's workers)
    term = 1 << (signal.SIGTERM - 1)
    both = term | 1 << (signal.SIGINT - 1) | 1 << (signal.SIGHUP - 1)
    # libfuse blocks SIGTERM in the main thread for a moment each time it starts a worker:
    # wait for the loop to settle rather than sample that moment.
    deadline = time.monotonic() + 30
    while blocked_signals(pid, pid) & term and time.monotonic() < deadline:
        time.sleep(0.01)
    assert blocked_signals(pid, pid) & term == 0
    for tid in tids:
        if tid != pid:
            assert blocked_signals(pid, tid) & both == both, f"thread {tid} takes SIGTERM"
    assert fs.stop() == 0
