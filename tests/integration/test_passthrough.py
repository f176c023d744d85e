# SPDX-License-Identifier: MIT
"""Snapshot reads in both modes (docs/design.md, "Reads without the daemon"): by FUSE
passthrough, where the kernel reads a sealed memory file the daemon registered and no READ
reaches the daemon, and through the daemon (--no-passthrough, or a kernel, a privilege or an
INIT without it). Every guarantee of a snapshot is asserted in both, with the same errno: the
bytes, the binding (dev, ino, size, SHA-256, mode 0000), every write refused, a writable shared
mapping refused, and a view's uid policy decided at OPEN."""
import errno
import fcntl
import hashlib
import mmap
import os
import signal
import subprocess

import pytest

from snaptest import (NOBODY_UID, UID_PRELUDE, as_uid, control_ok, is_mounted,
                      is_sanitizer_build, snap, wait_for)
from test_takeover import Daemon, alive, status as takeover_status
from test_trust import ATTACKER, rootless_snapfs, user_dir, user_fuse  # noqa: F401 (fixture)

MODES = {"passthrough": (), "read": ("--no-passthrough",)}


def status(fs):
    return control_ok(fs.path, {"op": "status"})["status"]


def reads(fs):
    return status(fs)["reads"]


def bytes_read(fs):
    return status(fs)["counters"]["bytes_read"]


@pytest.fixture(params=sorted(MODES))
def mode(request):
    return request.param


@pytest.fixture
def start(mount_snapfs, mode):
    """mount_snapfs in this test's mode: the daemon says which mode serves, and why not
    passthrough when it does not."""
    def go(*opts, name="mnt"):
        fs = mount_snapfs(*opts, *MODES[mode], name=name)
        r = reads(fs)
        if mode == "read":
            assert (r["mode"], r["why"]) == ("read", "--no-passthrough"), r
        elif r["mode"] != "passthrough":
            pytest.skip(f"no FUSE passthrough here: {r['why']}")
        assert r["backing_files"] == 0
        return fs
    return go


def cold_read(path):
    """The whole file, after dropping whatever the FUSE mount's page cache held of it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)


def test_a_snapshot_reads_right_and_only_passthrough_sends_no_read_to_the_daemon(start, mode):
    fs = start("--allow-other")
    data = os.urandom(200 * 1024 + 17)
    digest = fs.publish(data)
    before = bytes_read(fs)
    got = cold_read(fs.p(digest))
    assert hashlib.sha256(got).hexdigest() == digest and got == data
    if mode == "passthrough":
        # The kernel read the backing file: not one byte of content came from the daemon.
        assert bytes_read(fs) == before
        assert reads(fs)["backing_files"] == 1
    else:
        assert bytes_read(fs) - before == len(data)
        assert reads(fs)["backing_files"] == 0


def test_the_binding_is_the_same_through_an_open_file_as_by_its_name(start):
    fs = start("--allow-other")
    data = b"bound once, read anywhere\n" * 100
    digest = fs.publish(data)
    st = os.stat(fs.p(digest))
    assert (st.st_mode, st.st_size) == (0o100000, len(data))
    with open(fs.p(digest), "rb") as f:
        fst = os.fstat(f.fileno())
        assert hashlib.sha256(f.read()).hexdigest() == digest
    after = os.stat(fs.p(digest))
    for s in (fst, after):
        assert (s.st_dev, s.st_ino, s.st_size, s.st_mode) == \
            (st.st_dev, st.st_ino, st.st_size, st.st_mode)


@pytest.mark.parametrize("flags", [os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC,
                                   os.O_WRONLY | os.O_APPEND])
def test_every_writable_open_is_erofs_and_a_read_only_one_reads(start, flags):
    fs = start("--allow-other")
    digest = fs.publish(b"immutable\n")
    with pytest.raises(OSError) as e:
        os.open(fs.p(digest), flags)
    assert e.value.errno == errno.EROFS
    assert cold_read(fs.p(digest)) == b"immutable\n"


def test_a_writable_shared_mapping_is_eacces_a_private_one_reads(start):
    fs = start("--allow-other")
    data = b"mapped\n" * 1000
    digest = fs.publish(data)
    with open(fs.p(digest), "rb") as f:
        with pytest.raises(OSError) as e:
            mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        assert e.value.errno == errno.EACCES
        # A private writable mapping copies on write: the snapshot stays as it was.
        m = mmap.mmap(f.fileno(), 0, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
        assert m[:len(data)] == data
        m[0:6] = b"CHANGE"
        m.close()
        with pytest.raises(OSError) as e:
            os.write(f.fileno(), b"x")
        assert e.value.errno == errno.EBADF
    with pytest.raises(OSError) as e:
        os.truncate(fs.p(digest), 0)
    assert e.value.errno == errno.EROFS
    assert cold_read(fs.p(digest)) == data


def test_a_uid_view_lets_its_uid_read_and_refuses_another_at_open(start, mode, workdir):
    fs = start("--allow-other")
    data = b"for uid 1000 alone"
    digest = fs.publish(data, "c")
    views = os.path.join(workdir, "views")
    os.makedirs(views)
    view = control_ok(fs.path, {"op": "scope-create", "name": "a", "view": f"{views}/a",
                                "uids": [NOBODY_UID]})["scope"]["view"]
    control_ok(fs.path, {"op": "grant", "scope": "a", "sha256": digest, "entry": "cfg"})
    code = UID_PRELUDE + r'''
view = sys.argv[2]
if os.getuid() == 1000:
    fd = os.open(f"{view}/cfg", os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    print(os.pread(fd, 100, 0).decode(), refused(os.open, f"{view}/cfg", os.O_RDWR))
else:
    print(refused(os.open, f"{view}/cfg", os.O_RDONLY))
'''
    before = bytes_read(fs)
    assert as_uid(NOBODY_UID, code, fs.path, view).stdout.split() == [
        "for", "uid", "1000", "alone", str(errno.EROFS)]
    assert as_uid(NOBODY_UID + 1, code, fs.path, view).stdout.split() == [str(errno.EACCES)]
    if mode == "passthrough":
        assert bytes_read(fs) == before
        assert reads(fs)["backing_files"] == 1  # the view's connection's
    else:
        assert bytes_read(fs) - before == len(data)


def test_the_read_view_and_a_root_only_scope_view_read_in_both_modes(start, mode, workdir):
    view = os.path.join(workdir, "view")
    os.makedirs(view)
    fs = start("--allow-other", "--readers", "any", "--read-view", view)
    data = os.urandom(100 * 1024)
    digest = fs.publish(data, "c")
    views = os.path.join(workdir, "views")
    os.makedirs(views)
    scoped = control_ok(fs.path, {"op": "scope-create", "name": "r",
                                  "view": f"{views}/r"})["scope"]["view"]
    control_ok(fs.path, {"op": "grant", "scope": "r", "sha256": digest, "entry": "cfg"})
    code = UID_PRELUDE + r'''
fd = os.open(f"{sys.argv[2]}/{sys.argv[3]}", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
print(hashlib.sha256(os.pread(fd, 1 << 20, 0)).hexdigest(),
      refused(os.open, f"{sys.argv[2]}/{sys.argv[3]}", os.O_WRONLY))
'''
    before = bytes_read(fs)
    # The read view: every uid reads; the kernel refuses writes on the read-only mount.
    assert as_uid(NOBODY_UID, code, fs.path, view, digest).stdout.split() == [
        digest, str(errno.EROFS)]
    # A scope's view of root alone.
    assert cold_read(os.path.join(scoped, "cfg")) == data
    with pytest.raises(OSError) as e:
        os.open(os.path.join(scoped, "cfg"), os.O_WRONLY)
    assert e.value.errno == errno.EROFS
    if mode == "passthrough":
        assert bytes_read(fs) == before
        assert reads(fs)["backing_files"] == 2  # one on each connection
    else:
        assert bytes_read(fs) - before == 2 * len(data)


def test_a_backing_file_is_registered_once_and_closed_when_its_snapshot_goes(start, mode):
    fs = start("--allow-other")
    data = b"registered once\n" * 64
    digest = fs.publish(data)
    fds = [os.open(fs.p(digest), os.O_RDONLY) for _ in range(5)]
    try:
        assert reads(fs)["backing_files"] == (1 if mode == "passthrough" else 0)
        # Removed while open: the open files read on (their own reference to the content).
        os.unlink(fs.p(digest))
        assert not os.path.exists(fs.p(digest))
        for fd in fds:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            assert os.pread(fd, 4096, 0) == data
    finally:
        for fd in fds:
            os.close(fd)
    # The last close collects the snapshot, and with it its backing file (RELEASE is sent
    # after close() returns: waited for, not timed).
    wait_for(lambda: status(fs)["usage"]["snapshots"] == 0, "the snapshot collected")
    assert reads(fs)["backing_files"] == 0
    # Published again: a new backing file, served as before.
    digest2 = fs.publish(data)
    assert digest2 == digest and cold_read(fs.p(digest)) == data
    assert reads(fs)["backing_files"] == (1 if mode == "passthrough" else 0)


def test_status_text_metrics_and_the_log_say_which_mode_serves(start, mode):
    fs = start("--allow-other")
    digest = fs.publish(b"which mode\n")
    assert cold_read(fs.p(digest)) == b"which mode\n"
    text = subprocess.run([fs.binary, "status", "--mount", fs.path], capture_output=True,
                          text=True, timeout=60)
    metrics = subprocess.run([fs.binary, "metrics", "--mount", fs.path], capture_output=True,
                             text=True, timeout=60)
    assert text.returncode == 0 and metrics.returncode == 0, text.stderr + metrics.stderr
    lines = metrics.stdout.splitlines()
    if mode == "passthrough":
        assert "reads      passthrough (1 backing files)\n" in text.stdout
        assert "snapfs_passthrough 1" in lines and "snapfs_backing_files 1" in lines
        said = "snapshot reads: passthrough"
    else:
        assert "reads      through the daemon (--no-passthrough)\n" in text.stdout
        assert "snapfs_passthrough 0" in lines and "snapfs_backing_files 0" in lines
        said = "snapshot reads: through the daemon (no passthrough: --no-passthrough)"
    # One line at start, whatever the number of connections.
    assert fs.stderr().count("snapshot reads:") == 1 and said in fs.stderr()


def test_across_a_kill_9_open_files_read_on_and_the_successor_serves_old_snapshots(
        mode, workdir, runtime_dir):
    """The serving process is killed while its supervisor is stopped, so no daemon runs for a
    while: with passthrough a file held open reads on from its backing file all along (in
    the read mode its READ would wait for a daemon: not tried). Then the successor serves new
    opens of the same snapshot (its inode tied to the predecessor's backing file, which the
    successor must name again: any other is refused) and of one opened for the first time."""
    d = Daemon(workdir, runtime_dir, *MODES[mode])
    held = None
    try:
        d.populate()
        if mode == "passthrough" and takeover_status(d.mnt)["reads"]["mode"] != "passthrough":
            pytest.skip("no FUSE passthrough here")
        s1 = f"{d.mnt}/{d.digests['s1']}"
        held = os.open(s1, os.O_RDONLY)
        assert os.pread(held, 1 << 20, 0) == d.data["s1"]
        os.kill(d.supervisor, signal.SIGSTOP)
        try:
            old = d.pid
            os.kill(old, signal.SIGKILL)
            wait_for(lambda: not alive(old), f"pid {old} to end")
            if mode == "passthrough":
                os.posix_fadvise(held, 0, 0, os.POSIX_FADV_DONTNEED)
                assert os.pread(held, 1 << 20, 0) == d.data["s1"]
        finally:
            os.kill(d.supervisor, signal.SIGCONT)
        d.pid = d.serving_pid()
        assert d.pid != old
        for name in ("s1", "s0"):
            assert cold_read(f"{d.mnt}/{d.digests[name]}") == d.data[name]
        os.posix_fadvise(held, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(held, 1 << 20, 0) == d.data["s1"]
        st = takeover_status(d.mnt)
        assert st["takeovers"] == 1
        if mode == "passthrough":
            assert st["reads"]["mode"] == "passthrough" and st["counters"]["bytes_read"] == 0
            assert st["reads"]["backing_files"] == 2  # s1 named again, s0 registered
        else:
            assert st["reads"]["mode"] == "read" and st["counters"]["bytes_read"] > 0
    finally:
        if held is not None:
            os.close(held)
        if alive(d.pid) or alive(d.supervisor):
            d.stop()
    for m in (d.scope_view, d.view, d.mnt):
        assert not is_mounted(m), f"{m} left mounted"


def test_past_max_backing_files_a_new_snapshot_is_read_through_the_daemon_for_good(start,
                                                                                   mode):
    fs = start("--allow-other", "--max-backing-files", "1")
    one, two = b"first, with a backing file\n", b"second, past the bound\n"
    d1, d2 = fs.publish(one, "a"), fs.publish(two, "b")
    assert cold_read(fs.p(d1)) == one
    before = bytes_read(fs)
    # Past the bound: read right, by READs the daemon answers, in both modes.
    assert cold_read(fs.p(d2)) == two
    assert bytes_read(fs) - before == len(two)
    if mode == "passthrough":
        assert reads(fs)["backing_files"] == 1
        # The first one's place freed: the second stays read through the daemon (an inode
        # whose opens mixed both would be refused by the kernel), a third gets the place.
        os.unlink(fs.p(d1))
        wait_for(lambda: status(fs)["usage"]["snapshots"] == 1, "the first one collected")
        assert reads(fs)["backing_files"] == 0
        before = bytes_read(fs)
        assert cold_read(fs.p(d2)) == two
        assert bytes_read(fs) - before == len(two)
        d3 = fs.publish(b"third\n", "c")
        assert cold_read(fs.p(d3)) == b"third\n"
        assert bytes_read(fs) - before == len(two)
        assert reads(fs)["backing_files"] == 1


F_GET_SEALS = 1034
SEALS = 0x0001 | 0x0002 | 0x0004 | 0x0008  # F_SEAL_SEAL, _SHRINK, _GROW, _WRITE


def backing_fds(pid):
    """The daemon's descriptors of sealed snapshot copies: {fd: size}."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:snapfs-snapshot"):
                out[int(fd)] = os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except FileNotFoundError:
            pass
    return out


def test_each_snapshot_lives_once_in_a_sealed_copy_nobody_can_write(start, mode):
    """The attack: a process that reaches the copy the kernel reads (root, through
    /proc/PID/fd) changes a snapshot under readers who verified it. The copy is sealed against
    writes, growth and shrinking, and the seals themselves: root's write is EPERM. With
    passthrough the daemon's own reads use that copy too (mapped read-only): the content is
    held once."""
    fs = start("--allow-other")
    data = [os.urandom(100_000 + i) for i in range(3)]
    digests = [fs.publish(d, f"n{i}") for i, d in enumerate(data)]
    copies = backing_fds(fs.proc.pid)
    with open(f"/proc/{fs.proc.pid}/maps") as f:
        maps = f.read().count("/memfd:snapfs-snapshot")
    if mode == "read":
        assert copies == {} and maps == 0
        return
    assert sorted(copies.values()) == sorted(len(d) for d in data) and maps == 3
    for fd in copies:
        path = f"/proc/{fs.proc.pid}/fd/{fd}"
        with open(path, "rb") as f:
            assert fcntl.fcntl(f.fileno(), F_GET_SEALS) == SEALS
        w = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(OSError) as e:
                os.pwrite(w, b"X", 0)
            assert e.value.errno == errno.EPERM
            with pytest.raises(OSError) as e:
                os.ftruncate(w, 0)
            assert e.value.errno == errno.EPERM
            with pytest.raises(OSError) as e:
                mmap.mmap(w, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            assert e.value.errno == errno.EPERM
        finally:
            os.close(w)
    # Beside the refusals: each reads back whole, through the mount and from its copy.
    for d, digest in zip(data, digests):
        assert cold_read(fs.p(digest)) == d
    held = []
    for fd in copies:
        with open(f"/proc/{fs.proc.pid}/fd/{fd}", "rb") as f:
            held.append(f.read())
    assert sorted(held) == sorted(data)


def memory_of(pid):
    """VmRSS, RssAnon and RssShmem of pid, in KiB (/proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "RssAnon", "RssShmem")}


def test_a_daemon_serving_100_mib_holds_the_content_once_and_under_20_mib_itself(start, mode,
                                                                                  workdir):
    """docs/performance.md, "Memory": 100 MiB of snapshots, half staged and renamed, half by
    snapfs put, each read whole. With passthrough the content lives in the sealed memory files
    alone: the heap copies it went through are unmapped when freed, and the daemon's RSS stays
    under 20 MiB (85-125 MiB before, glibc keeping the freed buffers). Through the daemon it
    serves every byte right from its own copy."""
    fs = start("--allow-other", "--max-snapshot-size", "16M", "--max-bytes", "256M")
    size, digests = 10 << 20, []
    for i in range(5):
        digests.append(fs.publish(os.urandom(size), name=f"staged{i}"))
    for i in range(5):
        path = os.path.join(workdir, f"put{i}")
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        r = snap("put", "--mount", fs.path, path)
        assert r.returncode == 0, r.stderr
        digests.append(r.stdout.split()[0].split("=", 1)[1])
        os.unlink(path)
    before = bytes_read(fs)
    for digest in digests:
        fd = os.open(fs.p(digest), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # read cold: every page asked
            h = hashlib.sha256()
            while chunk := os.read(fd, 1 << 20):
                h.update(chunk)
        finally:
            os.close(fd)
        assert h.hexdigest() == digest
    st = status(fs)
    mem = memory_of(st["pid"])
    if mode == "read":
        assert bytes_read(fs) - before == 10 * size
        return
    assert st["reads"]["backing_files"] == 10 and bytes_read(fs) == before
    # The bound itself in the normal build: ASan's allocator (its quarantine keeps freed
    # buffers) and shadow memory inflate an instrumented daemon's RSS past any such figure.
    if not is_sanitizer_build():
        assert mem["VmRSS"] < 20 * 1024, mem
    # Nothing of the memory files is mapped in: the kernel read them, not the daemon.
    assert mem["RssShmem"] < 1024, mem


@pytest.mark.parametrize("wrap", [(), ("unshare", "-Ur", "-m")],
                         ids=["fusermount3", "root-of-a-user-namespace"])
def test_without_cap_sys_admin_in_the_initial_namespace_the_daemon_reads_and_says_why(
        workdir, user_fuse, wrap):
    """A rootless daemon (mounted through fusermount3), and one that is root only in a user
    namespace of its own: the kernel would refuse every backing file (EPERM), so neither asks
    for passthrough; both serve reads themselves and say why at start."""
    mnt = os.path.join(user_dir(workdir, "run"), "snapfs")
    os.mkdir(mnt)
    os.chown(mnt, ATTACKER, ATTACKER)
    code = UID_PRELUDE + r'''
data = b"read by a rootless daemon\n"
with open(f"{mnt}/.staging/x", "wb") as f:
    f.write(data)
digest = hashlib.sha256(data).hexdigest()
os.rename(f"{mnt}/.staging/x", f"{mnt}/{digest}")
fd = os.open(f"{mnt}/{digest}", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
print(os.pread(fd, 100, 0) == data, refused(os.open, f"{mnt}/{digest}", os.O_WRONLY))
'''
    with rootless_snapfs(mnt, wrap) as p:
        if not wrap:  # the other one's mount is in its own namespace: nothing to read here
            assert as_uid(ATTACKER, code, mnt).stdout.split() == ["True", str(errno.EROFS)]
        p.terminate()
        p.wait(timeout=20)
        err = p.stderr.read()
    assert "snapshot reads: through the daemon (no passthrough: no CAP_SYS_ADMIN in the " \
        "initial user namespace)" in err, (p.returncode, err)
