# SPDX-License-Identifier: MIT
"""Noisy neighbours: what one uid does to the daemon must not stop it serving another. The
audit log first: which files it accepts, what a flood of refusals costs it, and the bytes of
hostile names."""
import json
import mmap
import os
import subprocess

import pytest

from snaptest import (BUILD, E, NOBODY_UID, SNAPFS, UID_PRELUDE, as_uid, control_ok, errno_of,
                      is_mounted, run, start_snapfs)


def refused_start(snapfs_bin, path, log):
    proc = start_snapfs(snapfs_bin, path, audit_log=log, expect_ready=False)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, err


@pytest.mark.parametrize("kind", ["fifo", "fifo-with-reader", "group-writable", "symlink"])
def test_an_audit_log_that_is_not_a_private_regular_file_is_refused_and_nothing_mounted(
        snapfs_bin, workdir, kind):
    path = os.path.join(workdir, "mnt")
    os.mkdir(path)
    log = os.path.join(workdir, "audit")
    reader = None
    if kind.startswith("fifo"):
        # The attack: the log path pre-created as a FIFO nobody reads would block the writer
        # while it holds the kernel's directory lock, hanging every other uid's requests.
        os.mkfifo(log, 0o600)
        if kind == "fifo-with-reader":
            reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
        want = "not a regular file"
    elif kind == "group-writable":
        os.close(os.open(log, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(log, 0o620)
        want = "writable by group or others"
    else:
        os.close(os.open(os.path.join(workdir, "elsewhere"), os.O_WRONLY | os.O_CREAT, 0o600))
        os.symlink(os.path.join(workdir, "elsewhere"), log)
        want = f"{log} is a symbolic link"
    try:
        rc, err = refused_start(snapfs_bin, path, log)
    finally:
        if reader is not None:
            os.close(reader)
    assert rc == 1, err
    assert f"--audit-log {log}: refused: {want}" in err and "nothing mounted" in err
    assert not is_mounted(path)
    # The same path as a private regular file is accepted and written.
    os.unlink(log)
    fs = start_snapfs(snapfs_bin, path, audit_log=log)
    try:
        digest = fs.publish(b"logged")
        events = fs.wait_audit(lambda ev: any(e["event"] == "publish" for e in ev))
        assert [e["digest"] for e in events if e["event"] == "publish"] == [digest]
    finally:
        assert fs.stop() == 0
    assert not is_mounted(path)
    assert os.stat(log).st_mode & 0o777 == 0o600


def test_names_that_are_not_utf8_are_logged_as_valid_utf8_with_their_bytes(snapfs):
    raw = b"caf\xe9-\xff\xfe"
    assert errno_of(os.mkdir, os.path.join(snapfs.path.encode(), raw)) == E.EPERM
    # The same refusal of a valid UTF-8 name is logged as it is.
    assert errno_of(os.mkdir, snapfs.p("café")) == E.EPERM
    events = snapfs.wait_audit(lambda ev: len(ev) >= 2)
    with open(snapfs.audit_log, "rb") as f:
        f.read().decode("utf-8")  # strictly valid: raises otherwise
    assert [(e["event"], e["op"], e["errno"]) for e in events] == [
        ("refused", "mkdir", E.EPERM), ("refused", "mkdir", E.EPERM)]
    assert events[0]["name"] == "caf\ufffd-\ufffd\ufffd"
    assert bytes.fromhex(events[0]["name_hex"]) == raw
    assert events[1]["name"] == "café" and "name_hex" not in events[1]


FLOOD = UID_PRELUDE + r'''
n = int(sys.argv[2])
for i in range(n):
    assert refused(os.mkdir, f"{mnt}/{'x' * 200}{i}") == errno.EPERM
print("done")
'''


@pytest.mark.readers_any
def test_a_flood_of_refusals_is_coalesced_and_another_uids_refusal_still_logged(snapfs):
    as_uid(NOBODY_UID, FLOOD, snapfs.path, 20000)
    # Another uid's refusal after the flood still gets its own line.
    as_uid(NOBODY_UID + 1, UID_PRELUDE + "assert refused(os.mkdir, mnt + '/mine') == "
           "errno.EPERM", snapfs.path)

    def counted(ev):
        return sum(c["count"] for e in ev if e["event"] == "refused-coalesced"
                   for c in e["refusals"] if c["uid"] == NOBODY_UID)

    def flood_logged(ev):
        one_by_one = sum(1 for e in ev if e["event"] == "refused" and e["uid"] == NOBODY_UID)
        return one_by_one + counted(ev) == 20000

    events = snapfs.wait_audit(lambda ev: flood_logged(ev) and any(
        e["event"] == "refused" and e["uid"] == NOBODY_UID + 1 for e in ev))
    assert flood_logged(events)
    assert [e["name"] for e in events
            if e["event"] == "refused" and e["uid"] == NOBODY_UID + 1] == ["mine"]
    # Every refusal is accounted for, in far fewer lines (and bytes) than one each.
    assert len(events) < 1000
    assert os.stat(snapfs.audit_log).st_size < 1 << 20
    co = [c for e in events if e["event"] == "refused-coalesced" for c in e["refusals"]]
    assert {(c["uid"], c["op"], c["errno"], c["error"]) for c in co} == {
        (NOBODY_UID, "mkdir", E.EPERM, "EPERM")}


# ---- the daemon's memory and quotas under one uid's pressure ---------------------------------

def daemon_rss_kib(fs):
    with open(f"/proc/{fs.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


# For code run as another uid: publish(data) -> digest, leaving no staging file behind when
# the rename is refused (refused() then returns its errno).
PUBLISH_PRELUDE = UID_PRELUDE + r'''
import hashlib
def publish(data, name="p"):
    fd = os.open(f"{mnt}/.staging/{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, data); os.close(fd)
    d = hashlib.sha256(data).hexdigest()
    try:
        os.rename(f"{mnt}/.staging/{name}", f"{mnt}/{d}")
    finally:
        if os.path.exists(f"{mnt}/.staging/{name}"):
            os.unlink(f"{mnt}/.staging/{name}")
    return d
'''


def publish_many(fs, n, prefix):
    for i in range(n):
        fs.publish(b"%s %d" % (prefix, i), "many")


HOLD_DIRS = UID_PRELUDE + r'''
import resource
n = int(sys.argv[2])
# scandir(fd) works on a duplicate: two descriptors, one daemon handle, each.
resource.setrlimit(resource.RLIMIT_NOFILE, (2 * n + 64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
fds = []
for i in range(n):
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    it = os.scandir(fd)   # one READDIR on this handle: one entry read
    next(it)
    fds.append((fd, it))
print("holding", flush=True)
sys.stdin.read()          # until the test is done measuring
for fd, it in fds:
    it.close()
    os.close(fd)
'''


def live_memory_only(monkeypatch):
    """In the sanitizer build, ASan keeps freed memory in a quarantine (256 MB by default):
    RSS would measure that, not what the daemon still holds."""
    monkeypatch.setenv("ASAN_OPTIONS", os.environ.get("ASAN_OPTIONS", "") +
                       ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0")


def test_2000_directory_handles_on_4096_snapshots_cost_the_daemon_under_16_mb(mount_snapfs,
                                                                                monkeypatch):
    live_memory_only(monkeypatch)
    fs = mount_snapfs("--allow-other", "--readers", "any", "--max-snapshots", "8192")
    publish_many(fs, 4096, b"listed")
    before = daemon_rss_kib(fs)
    holder = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
         "/usr/bin/python3", "-c", HOLD_DIRS, fs.path, "2000"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        held = daemon_rss_kib(fs)
        # Each handle still lists everything: the allowance beside the bound.
        assert len(os.listdir(fs.p())) == 4096 + 2  # and .staging, .control
    finally:
        holder.stdin.close()
        rc = holder.wait(60)
        holder.stdout.close()
    assert rc == 0
    assert held - before < 16 * 1024, f"RSS {before} KiB -> {held} KiB"


def test_a_uid_past_its_snapshot_limit_gets_edquot_while_another_uid_and_the_owner_publish(
        mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", f"0,{NOBODY_UID},{NOBODY_UID + 1}",
                      "--max-uid-snapshots", "3")
    code = PUBLISH_PRELUDE + r'''
tag = sys.argv[2]
for i in range(3):
    publish(b"%s %d" % (tag.encode(), i))
assert os.statvfs(mnt).f_favail == 0
assert refused(publish, b"%s more" % tag.encode()) == errno.EDQUOT
print(os.statvfs(mnt).f_favail)
'''
    as_uid(NOBODY_UID, code, fs.path, "a")
    # Another uid has its own three, and the owner is not held by either.
    as_uid(NOBODY_UID + 1, code, fs.path, "b")
    fs.publish(b"the owner still publishes")
    assert os.statvfs(fs.p()).f_favail == 4096 - 7
    events = fs.wait_audit(lambda ev: sum(e["event"] == "publish-refused" for e in ev) >= 2)
    assert [(e["uid"], e["error"]) for e in events if e["event"] == "publish-refused"] == [
        (NOBODY_UID, "EDQUOT"), (NOBODY_UID + 1, "EDQUOT")]


def test_a_snapshot_unlinked_but_still_open_counts_until_closed(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--readers", "any", "--publishers", f"0,{NOBODY_UID}",
                      "--max-uid-snapshots", "1")
    code = PUBLISH_PRELUDE + r'''
d = publish(b"held")
fd = os.open(f"{mnt}/{d}", os.O_RDONLY)
print(d, flush=True)
sys.stdin.readline()                 # root unlinks it meanwhile
assert not os.path.exists(f"{mnt}/{d}")
assert os.pread(fd, 16, 0) == b"held"
assert refused(publish, b"second") == errno.EDQUOT
os.close(fd)
print("closed", flush=True)
'''
    p = subprocess.Popen(["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}",
                          "--clear-groups", "/usr/bin/python3", "-c", code, fs.path],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        digest = p.stdout.readline().strip()
        os.unlink(fs.p(digest))
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "closed"
    finally:
        p.stdin.close()
        assert p.wait(60) == 0
        p.stdout.close()
    # Closed: the kernel forgets the node soon after; poll for the room to come back.
    after = UID_PRELUDE + r'''
import hashlib, time
deadline = time.monotonic() + 20
while os.statvfs(mnt).f_favail == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
fd = os.open(f"{mnt}/.staging/p", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"second"); os.close(fd)
os.rename(f"{mnt}/.staging/p", f"{mnt}/" + hashlib.sha256(b"second").hexdigest())
'''
    as_uid(NOBODY_UID, after, fs.path)


def test_staging_files_unlinked_while_open_count_until_closed(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", f"0,{NOBODY_UID},{NOBODY_UID + 1}",
                      "--max-staging", "4")
    code = UID_PRELUDE + r'''
fds = []
for i in range(4):
    fd = os.open(f"{mnt}/.staging/s{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, b"x" * 4096)
    os.unlink(f"{mnt}/.staging/s{i}")
    fds.append(fd)
assert os.listdir(f"{mnt}/.staging") == []
# The attack: unlinked, but held open, they still count.
assert refused(os.open, f"{mnt}/.staging/s4", os.O_WRONLY | os.O_CREAT | os.O_EXCL) == errno.EDQUOT
os.close(fds.pop())
# close() returns before the kernel's RELEASE (sent after it, asynchronously) reaches the
# daemon: the slot comes back once that RELEASE is handled, so wait for that state.
import time
deadline = time.monotonic() + 30
while True:
    try:
        fd = os.open(f"{mnt}/.staging/s4", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        break
    except OSError as e:
        if e.errno != errno.EDQUOT or time.monotonic() > deadline:
            raise
        time.sleep(0.01)
os.close(fd)
os.unlink(f"{mnt}/.staging/s4")
for fd in fds:
    os.close(fd)
'''
    as_uid(NOBODY_UID, code, fs.path)
    # Another uid was never held by it.
    as_uid(NOBODY_UID + 1, UID_PRELUDE + "os.close(os.open(f'{mnt}/.staging/mine', "
           "os.O_WRONLY | os.O_CREAT | os.O_EXCL)); os.unlink(f'{mnt}/.staging/mine')", fs.path)


# ---- requests without the handle they need --------------------------------------------------

@pytest.mark.parametrize("mode", ["through-the-daemon", "passthrough"])
def test_a_write_through_the_read_view_remounted_rw_is_erofs_and_both_mounts_live(
        mount_snapfs, workdir, mode):
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    opts = ("--no-passthrough",) if mode == "through-the-daemon" else ()
    fs = mount_snapfs("--allow-other", "--readers", "any", "--read-view", view, *opts)
    data = b"never rewritten" * 400
    digest = fs.publish(data)
    # Root makes the kernel's read-only view writable behind the daemon's back (-i: the
    # superblock itself, without mount.fuse).
    subprocess.run(["mount", "-i", "-o", "remount,rw", view], check=True)
    reads = control_ok(fs.path, {"op": "status"})["status"]["reads"]
    assert reads["mode"] == ("read" if opts else "passthrough"), reads
    if mode == "passthrough":
        # OPEN names the backing file, so the daemon sees it: a writable open is refused
        # there, before any write can be tried; a read-only one reads the published bytes.
        assert errno_of(os.open, os.path.join(view, digest), os.O_RDWR) == E.EROFS
        with open(os.path.join(view, digest), "rb") as f:
            assert f.read() == data
        assert fs.proc.poll() is None
        return
    # Reads through the daemon: the view declines OPEN, so the kernel sends WRITE with no
    # handle.
    fd = os.open(os.path.join(view, digest), os.O_RDWR)
    try:
        assert errno_of(os.pwrite, fd, b"EVIL", 0) == E.EROFS
        m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            m[0:4] = b"EVIL"
            assert errno_of(m.flush) == E.EROFS
        finally:
            m.close()
    finally:
        os.close(fd)
    # The daemon lives and the bytes are the published ones, through the main mount.
    with open(fs.p(digest), "rb") as f:
        assert f.read() == data
    assert fs.proc.poll() is None


# ---- the noisy neighbour, all routes at once (scripts/load.sh runs it for a minute) ---------

def test_a_hostile_uid_running_every_route_leaves_another_uid_unharmed(mount_snapfs,
                                                                        monkeypatch):
    live_memory_only(monkeypatch)
    fs = mount_snapfs("--allow-other", "--readers", "any", "--publishers", "0,40000,40001",
                      "--unlink-own",
                      "--max-snapshots", "16384", "--staging-ttl", "1s")
    driver = BUILD / "tests" / "load" / "noisy"
    assert driver.exists(), f"{driver} was not built"
    r = run(driver, "--seconds", "3", "--quiet-seconds", "1", "--snapshots", "4096",
            "--dir-handles", "2000", "--uid-a", "40000", "--uid-b", "40001",
            "--daemon-pid", str(fs.proc.pid), "--audit-log", fs.audit_log,
            "--max-rss-growth", "64", "--max-log", "4", fs.path, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "B errors (noisy)           none" in out and "B wrong bytes              0" in out
    assert "A dir handles held         2000" in out
    # Each route was stopped by a limit on its own uid (EDQUOT, EPERM), never by a crash.
    for route, err in [("tiny publishes", "EDQUOT"), ("staging hoard", "EDQUOT"),
                       ("refusal flood", "EPERM")]:
        line = next(l for l in out.splitlines() if l.startswith(f"A {route}:"))
        assert f"{err}=" in line, line
    assert "noisy: B unharmed" in out
    # The flood is in the log, coalesced.
    events = fs.wait_audit(lambda ev: any(e["event"] == "refused-coalesced" for e in ev))
    assert any(c["uid"] == 40000 and c["op"] == "mkdir"
               for e in events if e["event"] == "refused-coalesced" for c in e["refusals"])


# ---- one scope flooding its own view, two others served (scripts/load.sh: the figure) ------

def test_a_scope_flood_leaves_other_scopes_served(mount_snapfs, workdir, monkeypatch):
    # Correctness only, never latency: the driver fails on an error or a wrong byte in scope B
    # or C in any phase (quiet, CPU burners, A's flood), on a crashed process, and on the
    # daemon's RSS growing by 64 MiB; its p99 figures are printed for scripts/load.sh.
    live_memory_only(monkeypatch)
    fs = mount_snapfs("--allow-other")
    views = os.path.join(workdir, "views")
    os.mkdir(views, 0o711)
    driver = BUILD / "tests" / "load" / "scopeload"
    assert driver.exists(), f"{driver} was not built"
    r = run(driver, "--seconds", "1", "--burners", "2", "--dir-handles", "500",
            "--daemon-pid", str(fs.proc.pid), "--max-rss-growth", "64", fs.path, views,
            timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for who in ("B", "C"):
        for phase in ("quiet", "cpu", "flood"):
            assert f"{who} {phase} errors".ljust(22) + " none" in out, out
    assert "A dir handles held        500" in out
    # A was stopped by its own scope's limits (EDQUOT) and by the daemon (EPERM for mkdir),
    # never by a crash; the scopes are gone afterwards.
    for route, err in [("held 64K publishes", "EDQUOT"), ("tiny publishes", "EDQUOT"),
                       ("staging held open", "EDQUOT"), ("mkdir flood", "EPERM")]:
        line = next(l for l in out.splitlines() if l.startswith(f"A {route}:"))
        assert f"{err}=" in line, line
    assert "scopeload: B and C unharmed" in out
    assert control_ok(fs.path, {"op": "scope-list"})["scopes"] == []
    assert os.listdir(views) == []


# ---- usage per uid, as snapfs ls and snapfs audit show it ---------------------------------

def test_ls_and_audit_show_what_each_uid_holds_against_its_limits(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", f"0,{NOBODY_UID}",
                      "--max-uid-snapshots", "2", "--max-uid-bytes", "1M")
    code = UID_PRELUDE + r'''
import hashlib
for data in (b"one", b"two!"):
    fd = os.open(f"{mnt}/.staging/p", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, data); os.close(fd)
    os.rename(f"{mnt}/.staging/p", f"{mnt}/" + hashlib.sha256(data).hexdigest())
fd = os.open(f"{mnt}/.staging/open", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"12345")
os.unlink(f"{mnt}/.staging/open")   # still open: still counted
print(os.statvfs(mnt).f_favail, flush=True)
sys.stdin.readline()
os.close(fd)
'''
    p = subprocess.Popen(["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}",
                          "--clear-groups", "/usr/bin/python3", "-c", code, fs.path],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "0"  # its statfs: nothing left to publish
        fs.publish(b"the owner's")
        want = [{"uid": NOBODY_UID, "snapshots": 2, "bytes": 7, "staging": 1,
                 "staging_bytes": 5},
                {"uid": 0, "snapshots": 1, "bytes": len(b"the owner's"), "staging": 0,
                 "staging_bytes": 0}]
        for cmd in ("ls", "audit"):
            r = run(SNAPFS, cmd, "--mount", fs.path, "--json")
            assert r.returncode == 0, r.stdout + r.stderr
            usage = json.loads(r.stdout)["usage"]
            assert usage["uids"] == want, cmd
            assert (usage["uid_snapshots"], usage["uid_bytes"], usage["owner"]) == (2, 1 << 20, 0)
            assert usage["reserve_snapshots"] == 4096 // 16 and usage["more"] == 0
        text = run(SNAPFS, "ls", "--mount", fs.path).stdout
        assert f"\n{NOBODY_UID:<10} {2:>10} {7:>12} {1:>8} {5:>14}\n" in text
        assert "limits per uid: 2 snapshots, 1M bytes; the owner (uid 0)" in text
    finally:
        p.stdin.close()
        assert p.wait(60) == 0
        p.stdout.close()
