# SPDX-License-Identifier: MIT
"""Logs that reach someone: a daemon without --audit-log logs to syslog, never to /dev/null;
SIGHUP reopens the audit log (a rotated file keeps its lines, the new one gets the next) and
does not stop the daemon; the shipped logrotate snippet passes logrotate -d and, run for
real, rotates a live daemon's log."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from snaptest import BUILD, ROOT, E, errno_of, is_mounted, run, sha256_hex, start_snapfs

HERE = os.path.dirname(os.path.abspath(__file__))
SNIPPET = ROOT / "dist" / "snapfs.logrotate"


def events(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_text(path):
    with open(path) as f:
        return f.read()


def wait_until(pred, what, deadline=60):
    end = time.monotonic() + deadline
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def writes_to(pid, path):
    """True once one of pid's descriptors is the file now at path (not a renamed one)."""
    st = os.stat(path)
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fst = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def test_sighup_reopens_the_audit_log_and_the_daemon_keeps_serving(mount_snapfs, workdir):
    fs = mount_snapfs()
    log = fs.audit_log
    first = fs.publish(b"before the rotation", name="one")
    wait_until(lambda: any(e.get("digest") == first for e in events(log)), "the first line")
    os.rename(log, log + ".1")
    fs.proc.send_signal(signal.SIGHUP)
    # The daemon made the file anew and writes there: only then publish again.
    wait_until(lambda: os.path.exists(log) and writes_to(fs.proc.pid, log), "the reopen")
    second = fs.publish(b"after the rotation", name="two")
    wait_until(lambda: any(e.get("digest") == second for e in events(log)), "the next line")
    old = events(log + ".1")
    assert [e["digest"] for e in old if e["event"] == "publish"] == [first]
    assert [e["digest"] for e in events(log) if e["event"] == "publish"] == [second]
    # SIGHUP stopped nothing: still mounted, still serving; SIGTERM stops it (exit 0).
    assert fs.proc.poll() is None and is_mounted(fs.path)
    with open(fs.p(first), "rb") as f:
        assert f.read() == b"before the rotation"
    assert fs.stop(signal.SIGTERM) == 0
    assert not is_mounted(fs.path)


def test_the_logrotate_snippet_passes_logrotate_d(workdir):
    # logrotate ignores a config that group or others may write. Installed, the snippet is
    # 0644; in a checkout made under umask 002 it is 0664, so judge an installed-mode copy.
    snippet = os.path.join(workdir, "snapfs")
    with open(SNIPPET) as src, open(snippet, "w") as dst:
        dst.write(src.read())
    os.chmod(snippet, 0o644)
    r = run("logrotate", "-d", "-s", "/dev/null", snippet)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "error" not in out.lower(), out
    assert "rotating pattern: /var/log/snapfs/*.log" in out


def test_the_logrotate_snippet_rotates_a_live_daemons_log(mount_snapfs, workdir):
    pidfile = os.path.join(workdir, "snapfs.pid")
    fs = mount_snapfs("--pid-file", pidfile)
    # Written once the mount serves (a moment after "serving" in the foreground).
    wait_until(lambda: read_text(pidfile) == f"{fs.proc.pid}\n", "the pid file")
    log = fs.audit_log
    first = fs.publish(b"rotated away", name="one")
    wait_until(lambda: any(e.get("digest") == first for e in events(log)), "the first line")
    # The shipped snippet, pointed at this test's log and pid file; no service to reload
    # here (test_systemd.py reloads them under a real systemd), so it signals the pid the
    # file names.
    with open(SNIPPET) as f:
        text = f.read()
    for shipped in ("/var/log/snapfs/*.log {", "systemctl list-units", "/run/snapfs.pid"):
        assert shipped in text
    text = text.replace("/var/log/snapfs/*.log", log).replace("/run/snapfs.pid", pidfile)
    text = text.replace("systemctl list-units", "false")
    conf = os.path.join(workdir, "logrotate.conf")
    with open(conf, "w") as f:
        f.write(text)
    os.chmod(conf, 0o644)
    r = run("logrotate", "-f", "-s", os.path.join(workdir, "logrotate.state"), conf)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_until(lambda: os.path.exists(log) and writes_to(fs.proc.pid, log), "the reopen")
    second = fs.publish(b"in the new file", name="two")
    wait_until(lambda: any(e.get("digest") == second for e in events(log)), "the next line")
    assert first in {e.get("digest") for e in events(log + ".1")}
    assert first not in {e.get("digest") for e in events(log)}
    assert oct(os.stat(log).st_mode & 0o777) == "0o600"
    assert fs.proc.poll() is None and is_mounted(fs.path)


def test_a_daemon_without_audit_log_logs_to_syslog(snapfs_bin, workdir):
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                        os.path.join(HERE, "service_ns.py"), "syslog", "/usr/local/bin",
                        workdir, snapfs_bin], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["killed"] == [], res
    assert res["mount"]["rc"] == 0, res["mount"]
    assert res["publish"] == "OK" and res["write"] == "EROFS", res
    lines = {}
    for m in res["messages"]:
        # <PRI>timestamp snapfs[pid]: {json}; PRI = facility daemon (3) * 8 + severity.
        g = re.match(r"<(\d+)>.*? snapfs\[(\d+)\]: (\{.*\})$", m)
        assert g, m
        assert int(g.group(1)) // 8 == 3, m
        # Logged by the serving process, whose supervisor is the pid file's and MAINPID.
        assert [int(g.group(2))] == res["serving"]
        e = json.loads(g.group(3))
        lines[e["event"]] = e
    assert lines["publish"]["digest"] == res["digest"]
    assert lines["refused"]["error"] == "EROFS" and lines["refused"]["digest"] == res["digest"]
    assert res["umount"]["rc"] == 0
    assert res["reaped"] == [[res["pids"][0], 0]]


def lost_lines(fs):
    r = run(BUILD / "cli" / "snapfs", "status", "--mount", fs.path, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["status"]["counters"]["audit_lines_lost"]


def refuse_a_write(fs, digest):
    assert errno_of(os.open, fs.p(digest), os.O_WRONLY) == E.EROFS


def test_an_audit_line_the_full_log_filesystem_does_not_take_is_counted_and_said_once(
        snapfs_bin, workdir):
    """"Every refusal is audited" was false in silence: with the log's filesystem full, every
    line was dropped, no counter moved and nothing was said."""
    full = os.path.join(workdir, "full")
    os.mkdir(full)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", full],
                   check=True)
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    fs = None
    try:
        fs = start_snapfs(snapfs_bin, mnt, audit_log=os.path.join(full, "audit.log"))
        digest = fs.publish(b"refused to writers\n")
        # The allowance: while there is room, the refusal is a line and nothing is lost.
        refuse_a_write(fs, digest)
        wait_until(lambda: any(e.get("error") == "EROFS" for e in events(fs.audit_log)),
                   "the first refusal's line")
        assert lost_lines(fs) == 0
        # Full: a filler takes the free pages, blank lines the rest of the log's last one.
        for path, chunk in ((os.path.join(full, "filler"), b"\0" * 4096),
                            (fs.audit_log, b"\n")):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                with pytest.raises(OSError) as e:
                    while True:
                        os.write(fd, chunk)
                assert e.value.errno == E.ENOSPC
            finally:
                os.close(fd)
        written = read_text(fs.audit_log)
        for _ in range(3):
            refuse_a_write(fs, digest)
        wait_until(lambda: lost_lines(fs) >= 1, "the lost line to be counted")
        assert read_text(fs.audit_log) == written  # nothing more could be written
        r = run(BUILD / "cli" / "snapfs", "metrics", "--mount", fs.path)
        assert r.returncode == 0, r.stderr
        lost = [x for x in r.stdout.splitlines() if x.startswith("snapfs_audit_lines_lost_total ")]
        assert lost and int(lost[0].split()[1]) >= 1, r.stdout
        said = [x for x in fs.stderr().splitlines() if "cannot be written" in x]
        assert said == [f"snapfs mount: audit log {fs.audit_log} cannot be written (No space "
                        "left on device): audit lines are lost until it can, and counted "
                        "(snapfs status, snapfs metrics)"], fs.stderr()
        # Room again: the next refusal is a line once more; the count stays what it was.
        os.unlink(os.path.join(full, "filler"))
        count = lost_lines(fs)
        refuse_a_write(fs, digest)
        wait_until(lambda: read_text(fs.audit_log) != written, "a line after the burst")
        assert lost_lines(fs) == count
        assert fs.stop() == 0
    finally:
        if fs and fs.proc.poll() is None:
            fs.stop()
        subprocess.run(["umount", "-l", mnt], check=False, capture_output=True)
        subprocess.run(["umount", full], check=True)
