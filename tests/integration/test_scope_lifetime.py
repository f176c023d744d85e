# SPDX-License-Identifier: MIT
"""How long a scope's content lives, on real mounts: a snapshot published for a scope (snapfs
put --scope, the Python client's publish(scope=)) is held by that scope's grants alone, and
when its last grant goes (a rotation, a revoke, scope rm, its until-pid ending) and its last
descriptor closes, it is gone: from the main mount and snapfs ls, from --store, from the
quota, and from the daemon's memory (zeroed before it is freed), whatever the kernel still
caches. Each disappearance is asserted next to its allowance: before collection (or while a
descriptor is open) the same token is read and found."""
import errno
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile

import pytest

from clients import client_env
from snaptest import (BUILD, NOBODY_UID, ROOT, UID_PRELUDE, as_uid, control, control_ok, errno_of,
                      jsnap, sha256_hex, snap, start_snapfs, wait_for)


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests read the daemon's memory: run them as root"


def scope(fs, workdir, name="sandbox-a", **fields):
    views = os.path.join(workdir, "views")
    os.makedirs(views, exist_ok=True)
    req = {"op": "scope-create", "name": name, "view": os.path.join(views, name), **fields}
    return control_ok(fs.path, req)["scope"]


def secret(label: bytes, size=4096) -> "tuple[bytes, bytes]":
    """(content, token): content of size bytes holding a random token found nowhere else, in
    its middle (a freed heap chunk's first bytes are overwritten by the allocator's own
    pointers: a token there would vanish without being zeroed)."""
    token = b"TOKEN-" + label + b"-" + secrets.token_hex(24).encode()
    filler = secrets.token_bytes(size)
    mid = size // 2
    return filler[:mid] + token + filler[mid + len(token):], token


def put(fs, data: bytes, *opts):
    r = snap("put", "--mount", fs.path, *opts, "-", input=data, text=False)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def in_memory(pid: int, needle: bytes) -> bool:
    """Whether needle is anywhere in the readable memory of process pid (as root: every
    mapping of /proc/PID/maps read through /proc/PID/mem)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if fields[1][0] != "r" or (len(fields) > 5 and fields[5] in ("[vvar]",
                                                                         "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            # An ASan daemon reserves terabytes of shadow memory: no heap is that large.
            if end - start > SCAN_MAPPING_MAX:
                continue
            if in_mapping(mem, start, end, needle):
                return True
    return False


SCAN_MAPPING_MAX = 64 << 30
SCAN_PIECE = 16 << 20


def in_mapping(mem, start: int, end: int, needle: bytes) -> bool:
    """needle in [start, end) of /proc/PID/mem, read a piece at a time (overlapping by the
    needle's length, so one across two pieces is found)."""
    pos = start
    while pos < end:
        n = min(SCAN_PIECE + len(needle), end - pos)
        try:
            mem.seek(pos)
            chunk = mem.read(n)
        except OSError:  # a mapping with nothing behind it (a guard page)
            return False
        if needle in chunk:
            return True
        pos += SCAN_PIECE
    return False


def in_tree(path: str, needle: bytes) -> bool:
    """Whether needle is in any file under path (grep -r)."""
    for d, _, files in os.walk(path):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                if needle in fh.read():
                    return True
    return False


def used(fs) -> int:
    st = os.statvfs(fs.path)
    return st.f_files - st.f_ffree


def listed(fs) -> list:
    rc, out = jsnap("ls", "--mount", fs.path)
    assert rc == 0, out
    return [s["sha256"] for s in out["snapshots"]]


# ---- held by the scope's grants alone ------------------------------------------------------

@pytest.mark.readers_any
def test_put_for_a_scope_leaves_no_hold_on_the_main_mount_and_keep_leaves_one(snapfs, workdir):
    s = scope(snapfs, workdir, uids=[NOBODY_UID])
    data, _ = secret(b"a")
    digest = sha256_hex(data)
    put(snapfs, data, "--scope", "sandbox-a", "--as", "cfg")
    # The scope's user reads it in the view.
    with open(os.path.join(s["view"], "cfg"), "rb") as f:
        assert f.read() == data
    # Not listed on the main mount, and another uid, a reader there (--readers any), gets
    # ENOENT (as for anything it cannot see) while it reads what is held there; the owner
    # still finds it by digest.
    held = snapfs.publish(b"held on the main mount", "h")
    assert digest not in os.listdir(snapfs.path) and digest not in listed(snapfs)
    r = as_uid(NOBODY_UID, UID_PRELUDE + r'''
print(refused(os.stat, f"{mnt}/{sys.argv[2]}"))
print(open(f"{mnt}/{sys.argv[3]}", "rb").read().decode())
''', snapfs.path, digest, held)
    assert r.stdout.splitlines() == [str(errno.ENOENT), "held on the main mount"]
    assert os.stat(snapfs.p(digest)).st_size == len(data)
    # --keep: the operator's explicit choice to keep a hold on the main mount, listed there.
    kept, _ = secret(b"kept")
    put(snapfs, kept, "--scope", "sandbox-a", "--as", "kept", "--keep")
    assert sha256_hex(kept) in listed(snapfs) and digest not in listed(snapfs)


def test_the_python_client_publishes_for_a_scope_and_refuses_an_entry_without_one(
        snapfs, workdir):
    s = scope(snapfs, workdir)
    data, _ = secret(b"py")
    code = r'''
import json, sys
from snapfs_client import publish, SnapfsError
mnt, data = sys.argv[1], sys.stdin.buffer.read()
b = publish(mnt, data, scope="sandbox-a", entry="cfg")
out = {"sha256": b.sha256, "already": b.already_published}
try:
    publish(mnt, data, entry="cfg")
except SnapfsError as e:
    out["no_scope"] = e.errno
try:
    publish(mnt, data + b"x", scope="nowhere")
except SnapfsError as e:
    out["nowhere"] = e.errno
print(json.dumps(out))
'''
    env = dict(client_env(), PYTHONPATH=str(ROOT / "client" / "python"))
    r = subprocess.run([sys.executable, "-c", code, snapfs.path], input=data, env=env,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out == {"sha256": sha256_hex(data), "already": False,
                   "no_scope": errno.EINVAL, "nowhere": errno.ENOENT}
    with open(os.path.join(s["view"], "cfg"), "rb") as f:
        assert f.read() == data
    assert listed(snapfs) == [] and used(snapfs) == 1


# ---- gone with its last grant and descriptor -----------------------------------------------

def test_a_rotated_token_leaves_the_listing_store_quota_and_memory_once_closed(
        mount_snapfs, workdir, runtime_dir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--allow-other", "--store", store, "--runtime-store", runtime_dir,
                      "--max-bytes", "4M")
    pid = fs.proc.pid
    s = scope(fs, workdir)
    entry = os.path.join(s["view"], "cfg")
    old, old_token = secret(b"old", 250_000)
    new, new_token = secret(b"new", 250_000)
    put(fs, old, "--scope", "sandbox-a", "--as", "cfg")
    # Before collection: granted, read, and in the daemon's memory.
    fd = os.open(entry, os.O_RDONLY)
    assert os.pread(fd, len(old), 0) == old
    assert in_memory(pid, old_token)
    # Kept for a restart in the runtime store (RAM), never in --store (a disk).
    assert in_tree(runtime_dir, old_token) and not in_tree(store, old_token)

    put(fs, new, "--scope", "sandbox-a", "--as", "cfg")
    with open(entry, "rb") as f:
        assert f.read() == new
    # A descriptor open on the old one keeps it: still read, still in memory.
    assert os.pread(fd, len(old), 0) == old
    assert in_memory(pid, old_token)
    os.close(fd)
    # Its last descriptor closed (the kernel sends RELEASE after close returns): gone from
    # memory, the store and the quota, though the kernel may still cache its inode.
    wait_for(lambda: not in_memory(pid, old_token), "the old token to leave the daemon")
    assert not in_tree(runtime_dir, old_token) and not in_tree(store, old_token)
    assert used(fs) == 1 and listed(fs) == []
    # The one still granted stays: read, in memory.
    assert in_memory(pid, new_token)

    # Its revoke takes it too.
    control_ok(fs.path, {"op": "revoke", "scope": "sandbox-a", "entry": "cfg"})
    assert errno_of(os.stat, entry) == errno.ENOENT
    assert not in_memory(pid, new_token) and not in_tree(runtime_dir, new_token)
    assert used(fs) == 0


def test_scope_rm_and_the_end_of_its_process_collect_what_it_held(mount_snapfs, workdir):
    fs = mount_snapfs("--allow-other")
    pid = fs.proc.pid
    scope(fs, workdir, "removed")
    a, a_token = secret(b"removed")
    put(fs, a, "--scope", "removed", "--as", "cfg")
    child = subprocess.Popen(["sleep", "600"])
    try:
        tied = scope(fs, workdir, "tied", until_pid=child.pid, client_pid=os.getpid())
        b, b_token = secret(b"tied")
        put(fs, b, "--scope", "tied", "--as", "cfg")
        with open(os.path.join(tied["view"], "cfg"), "rb") as f:
            assert f.read() == b
        assert in_memory(pid, a_token) and in_memory(pid, b_token)

        control_ok(fs.path, {"op": "scope-remove", "name": "removed"})
        assert not in_memory(pid, a_token)
        assert in_memory(pid, b_token)  # the other scope's, untouched
        child.send_signal(signal.SIGKILL)
        child.wait()
        wait_for(lambda: control_ok(fs.path, {"op": "scope-list"})["scopes"] == [],
                 "the tied scope to go with its process")
        assert not in_memory(pid, b_token)
        assert used(fs) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_content_a_view_publishes_and_unlinks_leaves_memory(mount_snapfs, workdir):
    fs = mount_snapfs("--allow-other")
    pid = fs.proc.pid
    s = scope(fs, workdir, publish=True)
    data, token = secret(b"view")
    digest = sha256_hex(data)
    fd = os.open(os.path.join(s["view"], ".staging", "cfg"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, data)
    os.close(fd)
    os.rename(os.path.join(s["view"], ".staging", "cfg"), os.path.join(s["view"], digest))
    with open(os.path.join(s["view"], digest), "rb") as f:
        assert f.read() == data
    assert in_memory(pid, token)
    os.unlink(os.path.join(s["view"], digest))
    assert not in_memory(pid, token)
    assert used(fs) == 0


# ---- never on a disk ------------------------------------------------------------------------

def test_a_disk_store_alone_has_no_scopes_and_a_runtime_store_must_be_in_ram(
        mount_snapfs, workdir, runtime_dir, snapfs_bin):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store)
    views = os.path.join(workdir, "views")
    os.makedirs(views)
    reply = control(fs.path, {"op": "scope-create", "name": "a",
                              "view": os.path.join(views, "a")})
    assert (reply["error"], "--runtime-store" in reply["message"]) == ("EINVAL", True)
    assert fs.stop() == 0
    # A runtime store on a disk (a directory beside the build): refused at start.
    disk = tempfile.mkdtemp(prefix="runtime-on-disk-", dir=str(BUILD))
    try:
        fstype = subprocess.run(["stat", "-f", "-c", "%T", disk], capture_output=True,
                                text=True, check=True).stdout.strip()
        assert fstype not in ("tmpfs", "ramfs"), f"the build directory is on {fstype}"
        os.makedirs(os.path.join(workdir, "mnt2"))
        p = start_snapfs(snapfs_bin, os.path.join(workdir, "mnt2"), "--store", store,
                         "--runtime-store", disk, expect_ready=False)
        out, err = p.communicate(timeout=30)
        assert p.returncode == 1 and "not on a RAM filesystem" in err, (p.returncode, err)
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", disk], check=False)
    # In RAM: the same daemon has scopes.
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    assert scope(fs, workdir, "a")["name"] == "a"


def test_a_scopes_token_never_reaches_the_disk_store_and_survives_a_restart(
        mount_snapfs, workdir, runtime_dir):
    # The shipped configuration's shape: --store on a disk, --runtime-store under /run.
    store = os.path.join(workdir, "store")
    opts = ("--allow-other", "--store", store, "--runtime-store", runtime_dir)
    fs = mount_snapfs(*opts)
    s = scope(fs, workdir, publish=True)
    data, token = secret(b"restart")
    put(fs, data, "--scope", "sandbox-a", "--as", "cfg")
    own, own_token = secret(b"own")
    staged = os.path.join(s["view"], ".staging", "own")
    with open(staged, "wb") as f:
        f.write(own)
    os.rename(staged, os.path.join(s["view"], sha256_hex(own)))
    held = fs.publish(b"the operator's own, on the main mount", "h")
    for t in (token, own_token):
        assert not in_tree(store, t) and in_tree(runtime_dir, t)
    assert os.path.exists(os.path.join(store, "blobs", "sha256", held))
    assert os.listdir(os.path.join(store, "scopes")) == []
    assert fs.stop() == 0

    fs = mount_snapfs(*opts)
    with open(os.path.join(s["view"], "cfg"), "rb") as f:
        assert f.read() == data
    with open(os.path.join(s["view"], sha256_hex(own)), "rb") as f:
        assert f.read() == own
    assert not in_tree(store, token) and not in_tree(store, own_token)
    # The operator's audit still re-hashes what is stored.
    rc, out = jsnap("audit", "--mount", fs.path)
    assert rc == 0, out
    # The same bytes published on the main mount are the main mount's: on the disk store now,
    # gone from RAM.
    put(fs, data)  # already published: the caller holds it now
    assert in_tree(store, token) and not in_tree(runtime_dir, token)
    assert sha256_hex(data) in listed(fs)


# ---- rotations never fill the mount ---------------------------------------------------------

ROTATIONS = 1000  # the figure the issue names; about 6 s here through the Python client

def test_rotations_of_a_250k_entry_under_max_bytes_4m_are_never_refused(mount_snapfs, workdir):
    # Before: each rotated 250 KB token stayed charged while the kernel cached its inode, and
    # rotation 17 was refused "the mount is full".
    fs = mount_snapfs("--allow-other", "--max-bytes", "4M")
    s = scope(fs, workdir)
    code = r'''
import os, sys
from snapfs_client import publish
mnt, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    data = os.urandom(250_000)
    publish(mnt, data, scope="sandbox-a", entry="cfg")
    if i % 100 == 0:  # a reader of the entry each hundred rotations
        with open(sys.argv[3], "rb") as f:
            assert f.read() == data, i
print(n)
'''
    env = dict(client_env(), PYTHONPATH=str(ROOT / "client" / "python"))
    r = subprocess.run([sys.executable, "-c", code, fs.path, str(ROTATIONS),
                        os.path.join(s["view"], "cfg")],
                       env=env, capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert r.stdout.split() == [str(ROTATIONS).encode()]
    assert used(fs) == 1 and listed(fs) == []
    shown = control_ok(fs.path, {"op": "scope-show", "name": "sandbox-a"})
    assert [g["entry"] for g in shown["grants"]] == ["cfg"]
