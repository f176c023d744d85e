# SPDX-License-Identifier: MIT
"""Faults: clients and the daemon killed at the worst moments, memory and descriptors run out.
Each case checks that nothing is published that should not be, that no reader ever gets
wrong bytes or a short read reported as success, and that everyone else keeps being served."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from snaptest import (NOBODY_UID, E, Snapfs, as_uid, errno_of, is_mounted, is_sanitizer_build,
                      run, sha256_hex, start_snapfs)

PY = "/usr/bin/python3"

# A client that stages bytes as NOBODY_UID and then stops at a given point, saying where on
# stdout, so the test can kill it exactly there. argv: mount, stop point ("write" | "close").
STALLED_CLIENT = r'''
import os, sys, time
mnt, stop = sys.argv[1], sys.argv[2]
fd = os.open(f"{mnt}/.staging/victim", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"first half of a config with a TOKEN=")
if stop == "close":
    os.write(fd, b"second half")
    os.close(fd)
print("stalled", flush=True)
time.sleep(600)
'''


def start_stalled_client(fs, stop):
    proc = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
         PY, "-c", STALLED_CLIENT, fs.path, stop],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "stalled", proc.stderr.read()
    return proc


def kill(proc):
    proc.kill()
    proc.wait(10)
    proc.stdout.close()
    proc.stderr.close()


OWNER_SEES = r'''
import os, sys
print(",".join(sorted(os.listdir(sys.argv[1] + "/.staging"))))
'''

OTHER_SEES_NOTHING = r'''
import errno, os, sys
mnt = sys.argv[1]
assert os.listdir(mnt + "/.staging") == []
try:
    os.stat(mnt + "/.staging/victim")
    raise SystemExit("another uid can see the staging file")
except OSError as e:
    assert e.errno == errno.ENOENT, e
'''


def owner_listing(fs):
    return as_uid(NOBODY_UID, OWNER_SEES, fs.path).stdout.strip()


@pytest.mark.parametrize("stop", ["write", "close"])
def test_a_client_killed_before_rename_publishes_nothing_and_its_owner_can_remove_it(
        mount_snapfs, stop):
    fs = mount_snapfs("--allow-other", "--publishers", "any")
    client = start_stalled_client(fs, stop)
    kill(client)
    assert sorted(os.listdir(fs.p())) == [".control", ".staging"]  # nothing published
    as_uid(NOBODY_UID + 1, OTHER_SEES_NOTHING, fs.path)
    assert owner_listing(fs) == "victim"
    as_uid(NOBODY_UID, "import os, sys; os.unlink(sys.argv[1] + '/.staging/victim')", fs.path)
    assert owner_listing(fs) == ""
    assert sorted(os.listdir(fs.p())) == [".control", ".staging"]


@pytest.mark.parametrize("stop", ["write", "close"])
def test_a_dead_clients_staging_file_expires_after_the_ttl(mount_snapfs, stop):
    fs = mount_snapfs("--allow-other", "--publishers", "any", "--staging-ttl", "1s")
    client = start_stalled_client(fs, stop)
    # While the writer is alive and holds the file open, it never expires.
    if stop == "write":
        time.sleep(1.6)
        assert owner_listing(fs) == "victim"
    kill(client)
    as_uid(NOBODY_UID + 1, OTHER_SEES_NOTHING, fs.path)
    deadline = time.monotonic() + 15
    while owner_listing(fs) != "" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert owner_listing(fs) == ""
    assert sorted(os.listdir(fs.p())) == [".control", ".staging"]
    events = fs.wait_audit(lambda ev: any(e["event"] == "staging-expired" for e in ev))
    assert [(e["event"], e["uid"], e["name"]) for e in events
            if e["event"] == "staging-expired"] == [("staging-expired", NOBODY_UID, "victim")]
    # The owner's quota is back: it can stage again under the same name.
    as_uid(NOBODY_UID, "import os, sys; os.close(os.open(sys.argv[1] + '/.staging/victim', "
                       "os.O_WRONLY | os.O_CREAT | os.O_EXCL))", fs.path)


# A reader that reads the whole snapshot again and again, dropping its page cache before each
# pass so every pass asks the daemon, and compares every byte with the source. A read may
# return fewer bytes than asked (pages that arrived before the daemon died): like any careful
# client it then reads on from there. It prints "reading" once, then one final line:
# "error ERRNO", or "EOF <offset>" if the file seemed to end early, or "MISMATCH <offset>".
READER = r'''
import os, sys
path, source = sys.argv[1], sys.argv[2]
want = open(source, "rb").read()
fd = os.open(path, os.O_RDONLY)
chunk = 128 * 1024
said = False
try:
    while True:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        off = 0
        while off < len(want):
            got = os.pread(fd, min(chunk, len(want) - off), off)
            if not got:
                print("EOF", off, flush=True); sys.exit(1)
            if got != want[off:off + len(got)]:
                print("MISMATCH", off, flush=True); sys.exit(1)
            off += len(got)
            if not said:
                print("reading", flush=True); said = True
except OSError as e:
    print("error", e.errno, flush=True)
'''


@pytest.mark.parametrize("mode", ["passthrough", "read"])
def test_killing_the_daemon_under_8_readers_gives_each_an_error_never_wrong_bytes(
        snapfs_bin, workdir, mode):
    """Through the daemon, each reader gets an error once it dies. With passthrough its
    readers never needed it: the kernel reads the sealed copy, so every byte stays right and
    nobody gets an error; only new opens fail closed."""
    path = os.path.join(workdir, "mnt")
    os.mkdir(path)
    fs = start_snapfs(snapfs_bin, path, "--max-snapshot-size", "32M", "--max-bytes", "64M",
                      *(("--no-passthrough",) if mode == "read" else ()),
                      audit_log=os.path.join(workdir, "audit"))
    readers, held = [], None
    try:
        data = os.urandom(24 << 20)
        source = os.path.join(workdir, "source")
        with open(source, "wb") as f:
            f.write(data)
        digest = fs.publish(data)
        held = os.open(fs.p(digest), os.O_RDONLY)
        for _ in range(8):
            readers.append(subprocess.Popen([PY, "-c", READER, fs.p(digest), source],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True))
        for r in readers:
            assert r.stdout.readline().strip() == "reading", r.stderr.read()
        fs.stop(signal.SIGKILL)
        outcomes = []
        if mode == "passthrough":
            # A descriptor held across the kill reads the whole snapshot right, uncached.
            os.posix_fadvise(held, 0, 0, os.POSIX_FADV_DONTNEED)
            assert os.pread(held, len(data), 0) == data
            for r in readers:
                r.kill()
                out, err = r.communicate(timeout=60)
                outcomes.append(out.strip())
            # Killed while still reading: not one said EOF, MISMATCH or an error.
            assert outcomes == [""] * 8, outcomes
        else:
            for r in readers:
                out, err = r.communicate(timeout=60)
                outcomes.append(out.strip())
                assert r.returncode == 0, f"{out}{err}"
            allowed = {f"error {e}" for e in (E.ENOTCONN, E.EIO, E.ECONNABORTED)}
            assert all(o in allowed for o in outcomes), outcomes
        # A verified open afterwards fails closed.
        chk = run(snapfs_bin, "check", "--preset", "snapfs", path)
        assert chk.returncode == 1 and "transport-not-connected" in chk.stdout
        assert errno_of(os.open, fs.p(digest), os.O_RDONLY) == E.ENOTCONN
    finally:
        if held is not None:
            os.close(held)
        for r in readers:
            if r.poll() is None:
                r.kill()
            r.communicate()
        if fs.proc.poll() is None:
            fs.stop(signal.SIGKILL)
        subprocess.run(["umount", "-l", path], check=False)
    assert not is_mounted(path)


def test_memory_exhaustion_fails_only_the_greedy_request(snapfs_bin, workdir):
    path = os.path.join(workdir, "mnt")
    os.mkdir(path)
    args = [snapfs_bin, "mount", "-f", "--allow-other", "--max-snapshot-size", "1G",
            "--max-bytes", "4G", path]
    env = dict(os.environ)
    asan_log = os.path.join(workdir, "asan")
    sanitized = is_sanitizer_build(snapfs_bin)
    if sanitized:
        # ASan reserves terabytes of address space, so an address-space limit cannot apply;
        # its allocator refuses large allocations instead, as a real limit would. It warns
        # about each refusal: that warning is this test's expected outcome, so the log goes
        # to a file of the test's own, searched below for real errors only.
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                               ":allocator_may_return_null=1:max_allocation_size_mb=256"
                               f":log_path={asan_log}")
    else:
        args = ["prlimit", f"--as={768 << 20}", "--"] + args
    err_path = path + ".stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    fs = Snapfs(snapfs_bin, path, proc, None, err_path)
    try:
        assert proc.stdout.readline().startswith("snapfs: serving"), fs.stderr()
        kept = fs.publish(b"a config that must stay readable", "kept")
        fd = os.open(fs.p(".staging/greedy"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        block = b"\xa5" * (1 << 20)
        err_no = None
        try:
            for i in range(1024):
                os.write(fd, block)
        except OSError as e:
            err_no = e.errno
        finally:
            os.close(fd)
        assert err_no == E.ENOMEM, f"greedy writer stopped with {err_no} after {i} MiB"
        # Everyone else is still served, and the daemon is alive.
        assert open(fs.p(kept), "rb").read() == b"a config that must stay readable"
        fresh = fs.publish(b"published after the failure", "fresh")
        assert open(fs.p(fresh), "rb").read() == b"published after the failure"
        os.unlink(fs.p(".staging/greedy"))
        assert proc.poll() is None
        rc = fs.stop()
        assert rc == 0, fs.stderr()
        if sanitized:
            logs = "".join(open(os.path.join(workdir, f), errors="replace").read()
                           for f in os.listdir(workdir) if f.startswith("asan."))
            assert "failed to allocate" in logs  # the refusal really came from the allocator
            assert "ERROR:" not in logs, logs
    finally:
        if proc.poll() is None:
            fs.stop(signal.SIGKILL)
        if proc.stdout and not proc.stdout.closed:
            proc.stdout.close()
        subprocess.run(["umount", "-l", path], check=False)


# Opens one snapshot until the descriptor limit says no; then closes one and reads again.
FD_HOG = r'''
import errno, os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24))
path = sys.argv[1]
fds = []
try:
    while True:
        fds.append(os.open(path, os.O_RDONLY))
except OSError as e:
    assert e.errno == errno.EMFILE, e
    assert len(fds) > 10
os.close(fds.pop())
fd = os.open(path, os.O_RDONLY)
assert os.read(fd, 100) == b"shared config"
print(len(fds) + 1)
'''


@pytest.mark.readers_any
def test_a_client_out_of_descriptors_gets_emfile_and_the_daemon_is_unaffected(snapfs):
    digest = snapfs.publish(b"shared config")
    r = as_uid(NOBODY_UID, FD_HOG, snapfs.p(digest))
    assert int(r.stdout) > 10
    assert open(snapfs.p(digest), "rb").read() == b"shared config"
    snapfs.publish(b"still publishing", "after")
