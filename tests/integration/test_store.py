# SPDX-License-Identifier: MIT
"""--store DIR: snapshots that survive a restart, kept in an OCI image layout that standard
tools read; blobs re-hashed at start (a bad one set aside, reported, never served); unlink
removes the blob; a daemon killed at any point of a publish leaves each snapshot complete or
absent, and every publish it answered complete."""
import ctypes
import hashlib
import json
import os
import random
import select
import signal
import struct
import subprocess
import threading
import time

import pytest

from snaptest import (NOBODY_UID, UID_PRELUDE, E, as_uid, errno_of, is_mounted, run, sha256_hex,
                      snap,
                      start_snapfs)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def layout_snapshots(store):
    """{digest: title} of the layers of the manifest index.json tags "snapfs" ({} before the
    first publish: no index.json yet)."""
    if not os.path.exists(os.path.join(store, "index.json")):
        return {}
    index = read_json(os.path.join(store, "index.json"))
    tagged = [m for m in index["manifests"]
              if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "snapfs"]
    assert len(tagged) == 1, index
    blob = tagged[0]["digest"].split(":")[1]
    manifest = read_json(os.path.join(store, "blobs", "sha256", blob))
    assert manifest["artifactType"] == "application/vnd.snapfs.snapshots.v1"
    return {layer["digest"].split(":")[1]: layer.get("annotations", {}).get(
        "org.opencontainers.image.title") for layer in manifest["layers"]}


def wait_for_events(fs, name, deadline=60):
    """The audit events called name, once at least one is written (a thread writes them)."""
    end = time.monotonic() + deadline
    while True:
        events = [json.loads(line) for line in fs.audit_events()]
        found = [e for e in events if e["event"] == name]
        if found or time.monotonic() > end:
            return found
        time.sleep(0.02)


def blob_path(store, digest):
    return os.path.join(store, "blobs", "sha256", digest)


def served(fs):
    return sorted(n for n in os.listdir(fs.path) if not n.startswith("."))


def read_snapshot(fs, digest):
    with open(fs.p(digest), "rb") as f:
        return f.read()


@pytest.fixture
def store_mount(snapfs_bin, workdir):
    """Factory: start(*opts) mounts workdir/mnt with --store workdir/store (plus opts);
    every daemon it started is stopped (SIGTERM, exit 0) at the end."""
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    os.makedirs(mnt, exist_ok=True)
    started = []

    def start(*opts):
        fs = start_snapfs(snapfs_bin, mnt, "--store", store, *opts,
                          audit_log=os.path.join(workdir, "audit"))
        started.append(fs)
        return fs

    start.store, start.mnt = store, mnt
    yield start
    for fs in started:
        if fs.proc.poll() is None:
            assert fs.stop() == 0, fs.stderr()
    if is_mounted(mnt):
        subprocess.run(["umount", "-l", mnt], check=False)


def test_snapshots_survive_a_restart_in_an_oci_layout(store_mount, snapfs_bin):
    fs = store_mount()
    a = fs.publish(b'{"mcpServers": {}}\n', name="mcp.json")
    b = fs.publish(b"second", name="second.txt")
    store = store_mount.store
    # Written before the rename was answered: the layout names both, titled.
    assert read_json(os.path.join(store, "oci-layout")) == {"imageLayoutVersion": "1.0.0"}
    assert layout_snapshots(store) == {a: "mcp.json", b: "second.txt"}
    with open(blob_path(store, a), "rb") as f:
        assert f.read() == b'{"mcpServers": {}}\n'
    # A standard tool reads it.
    r = run("skopeo", "inspect", "--raw", f"oci:{store}:snapfs")
    assert r.returncode == 0, r.stderr
    assert {layer["digest"] for layer in json.loads(r.stdout)["layers"]} == {
        "sha256:" + a, "sha256:" + b}
    assert fs.stop() == 0

    fs2 = store_mount()
    assert served(fs2) == sorted([a, b])
    assert read_snapshot(fs2, a) == b'{"mcpServers": {}}\n'
    # The name comes back from the layer's title.
    assert os.getxattr(fs2.p(a), "user.snapfs.name") == b"mcp.json"
    # The binding is per mount instance: the new one is what verify prints now.
    r = run(snapfs_bin, "verify", "--mount", fs2.path, "--json", fs2.p(a))
    assert r.returncode == 0, r.stdout + r.stderr
    binding = os.getxattr(fs2.p(a), "user.snapfs.binding").decode()
    assert json.loads(r.stdout)["binding"] == binding
    st = os.stat(fs2.p(a))
    assert f"dev={os.major(st.st_dev)}:{os.minor(st.st_dev)}" in binding


def test_unlink_removes_the_blob_and_the_snapshot_stays_gone(store_mount):
    fs = store_mount()
    gone = fs.publish(b"withdrawn", name="gone")
    kept = fs.publish(b"kept", name="kept")
    os.unlink(fs.p(gone))
    assert not os.path.exists(blob_path(store_mount.store, gone))
    assert layout_snapshots(store_mount.store) == {kept: "kept"}
    assert fs.stop() == 0
    fs2 = store_mount()
    assert errno_of(os.stat, fs2.p(gone)) == E.ENOENT
    assert read_snapshot(fs2, kept) == b"kept"


def test_a_blob_that_does_not_hash_to_its_name_is_set_aside_and_reported(store_mount,
                                                                          snapfs_bin, workdir):
    fs = store_mount()
    bad = fs.publish(b"will be damaged on disk", name="bad")
    good = fs.publish(b"stays intact", name="good")
    assert fs.stop() == 0
    # Beside the refusal, the clean store audits clean first.
    fs = store_mount()
    assert os.getxattr(fs.path, "user.snapfs.store-corrupt") == b"0"
    r = run(snapfs_bin, "audit", fs.path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert fs.stop() == 0

    with open(blob_path(store_mount.store, bad), "r+b") as f:
        f.write(b"W")  # same size, other bytes
    fs2 = store_mount()
    err = fs2.stderr()
    assert f"blob {bad} does not hash to its name" in err
    assert os.path.exists(os.path.join(store_mount.store, "corrupt", bad))
    assert not os.path.exists(blob_path(store_mount.store, bad))
    # Never served; the other one is.
    assert served(fs2) == [good]
    assert errno_of(os.stat, fs2.p(bad)) == E.ENOENT
    assert read_snapshot(fs2, good) == b"stays intact"
    corrupt = wait_for_events(fs2, "store-blob-corrupt")
    assert len(corrupt) == 1 and corrupt[0]["digest"] == bad
    assert corrupt[0]["error"] == "EBADMSG"
    assert os.getxattr(fs2.path, "user.snapfs.store-corrupt") == b"1"
    r = run(snapfs_bin, "audit", fs2.path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "store-blob-corrupt" in r.stdout
    # The manifest no longer names it: the next start finds nothing more to set aside.
    assert layout_snapshots(store_mount.store) == {good: "good"}


def test_a_store_on_a_fuse_filesystem_is_refused(mount_snapfs, store_mount, snapfs_bin,
                                                 workdir):
    other = mount_snapfs(name="other")
    mnt = os.path.join(workdir, "refused")
    os.mkdir(mnt)
    r = run(snapfs_bin, "mount", "-f", "--store", other.path, mnt)
    assert r.returncode == 1
    assert f"--store {other.path}: refused: on a fuse filesystem" in r.stderr
    assert not is_mounted(mnt)
    # Beside it, a store on the local filesystem is accepted.
    fs = store_mount()
    assert fs.publish(b"local") == sha256_hex(b"local")


def refused_start(snapfs_bin, store, mnt):
    """The standard error of a start that must be refused; fails (and stops it) if it serves."""
    proc = start_snapfs(snapfs_bin, mnt, "--store", store, expect_ready=False)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
        raise AssertionError(f"served instead of refusing: {out}{err}")
    assert proc.returncode == 1, err
    assert not is_mounted(mnt)
    return err


def test_a_store_other_uids_can_write_is_refused(store_mount, snapfs_bin, workdir):
    store = store_mount.store
    os.mkdir(store, 0o700)
    os.chmod(store, 0o777)  # anyone could plant a blob and a manifest naming it
    err = refused_start(snapfs_bin, store, store_mount.mnt)
    assert f"--store {store}: refused: {store} is not owned by this uid, or is writable " \
           "by group" in err
    # Beside it, the same directory without write for others is accepted; what the store
    # makes itself is private.
    os.chmod(store, 0o755)
    fs = store_mount()
    assert fs.publish(b"stored privately") == sha256_hex(b"stored privately")
    assert os.stat(os.path.join(store, "blobs", "sha256")).st_mode & 0o777 == 0o700
    assert fs.stop() == 0


def test_a_store_whose_subdirectory_others_can_write_or_own_is_refused(store_mount,
                                                                       snapfs_bin):
    fs = store_mount()
    digest = fs.publish(b"kept in the store")
    assert fs.stop() == 0
    store = store_mount.store
    # The attack: blobs/ 0777 inside a private store; another uid moved blobs/sha256 away
    # and after a restart nothing was served.
    for sub, change in (("blobs", lambda p: os.chmod(p, 0o777)),
                        ("blobs/sha256", lambda p: os.chmod(p, 0o770)),
                        ("blobs", lambda p: os.chown(p, NOBODY_UID, NOBODY_UID))):
        path = os.path.join(store, sub)
        before = os.stat(path)
        change(path)
        err = refused_start(snapfs_bin, store, store_mount.mnt)
        assert f"refused: {path} is not owned by this uid, or is writable by group" in err
        os.chmod(path, before.st_mode & 0o7777)
        os.chown(path, before.st_uid, before.st_gid)
    # Beside them, the same store, private again, serves what it kept.
    fs = store_mount()
    assert read_snapshot(fs, digest) == b"kept in the store"


def test_a_second_daemon_on_a_store_in_use_waits_then_is_refused_naming_its_pid(
        store_mount, snapfs_bin, workdir):
    fs = store_mount()
    mnt = os.path.join(workdir, "second")
    os.mkdir(mnt)
    err = refused_start(snapfs_bin, store_mount.store, mnt)
    assert f"another snapfs daemon (pid {fs.proc.pid}) holds this store; waiting up to" in err
    assert f"refused: another snapfs daemon (pid {fs.proc.pid}) uses this store" in err
    assert fs.publish(b"the first still serves") == sha256_hex(b"the first still serves")


def test_a_daemon_started_while_the_previous_one_exits_waits_for_it(store_mount, snapfs_bin,
                                                                    workdir):
    first = store_mount()
    kept = first.publish(b"handed from one daemon to the next")
    mnt = os.path.join(workdir, "next")
    os.mkdir(mnt)
    nxt = subprocess.Popen([snapfs_bin, "mount", "-f", "--store", store_mount.store, mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # It says it waits, for whom...
        ready, _, _ = select.select([nxt.stderr], [], [], 30)
        line = nxt.stderr.readline() if ready else ""
        assert f"(pid {first.proc.pid}) holds this store; waiting up to" in line, line
        # ...and the store is let go while it waits (the old daemon exiting): it serves.
        assert first.stop() == 0
        ready, _, _ = select.select([nxt.stdout], [], [], 30)
        assert ready and nxt.stdout.readline().startswith("snapfs: serving")
        with open(os.path.join(mnt, kept), "rb") as f:
            assert f.read() == b"handed from one daemon to the next"
    finally:
        nxt.terminate()
        rc = nxt.wait(20)
        nxt.stdout.close()
        nxt.stderr.close()
    assert rc == 0
    assert not is_mounted(mnt)


def tree_modes(store):
    """{relative path: mode bits} of everything under store."""
    out = {}
    for root, dirs, files in os.walk(store):
        for name in dirs + files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, store)] = os.lstat(path).st_mode & 0o7777
    return out


def test_a_fresh_store_is_a_valid_private_layout_before_the_first_publish(store_mount,
                                                                          workdir):
    fs = store_mount()
    store = store_mount.store
    # Standard tools read it at once: a tagged manifest with no layers yet. (skopeo 1.9's
    # inspect without --raw refuses every artifact, published snapshots or not.)
    r = run("skopeo", "inspect", "--raw", f"oci:{store}:snapfs")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layers"] == []
    r = run("skopeo", "copy", f"oci:{store}:snapfs", f"oci:{workdir}/copy:snapfs")
    assert r.returncode == 0, r.stderr
    # Everything the store makes is this uid's alone, blobs included.
    digest = fs.publish(b"a secret the readers policy keeps")
    modes = tree_modes(store)
    assert f"blobs/sha256/{digest}" in modes
    loose = {p: oct(m) for p, m in modes.items() if m & 0o077}
    assert loose == {}, loose
    r = run("skopeo", "inspect", "--raw", f"oci:{store}:snapfs")
    assert [layer["digest"] for layer in json.loads(r.stdout)["layers"]] == ["sha256:" + digest]


def usage_line(path, uid):
    text = os.getxattr(path, "user.snapfs.usage").decode()
    for line in text.splitlines():
        if line.startswith(f"uid={uid} "):
            return line
    return ""


# Runs as another uid: publishes argv[2], prints its digest, or the errno name it got.
PUBLISH_AS = UID_PRELUDE + r'''
data = sys.argv[2].encode()
d = hashlib.sha256(data).hexdigest()
fd = os.open(f"{mnt}/.staging/p", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, data); os.close(fd)
try:
    os.rename(f"{mnt}/.staging/p", f"{mnt}/{d}")
    print(d)
except OSError as e:
    print(errno.errorcode[e.errno])
os.unlink(f"{mnt}/.staging/p") if os.path.exists(f"{mnt}/.staging/p") else None
'''


def publish_as(uid, fs, text):
    return as_uid(uid, PUBLISH_AS, fs.path, text).stdout.strip()


def test_per_uid_counts_survive_a_restart(store_mount):
    opts = ("--allow-other", "--publishers", "any", "--max-uid-snapshots", "2")
    fs = store_mount(*opts)
    assert publish_as(NOBODY_UID, fs, "first") == sha256_hex(b"first")
    assert publish_as(NOBODY_UID, fs, "second") == sha256_hex(b"second")
    before = usage_line(fs.path, NOBODY_UID)
    assert before.startswith(f"uid={NOBODY_UID} snapshots=2 bytes=11 ")
    assert fs.stop() == 0
    # The attack: restored snapshots were charged to the owner, so the count started at 0
    # after every restart (16 + 16 + 16 + 12 against a limit of 16).
    fs = store_mount(*opts)
    assert usage_line(fs.path, NOBODY_UID) == before
    assert publish_as(NOBODY_UID, fs, "third") == "EDQUOT"
    # Beside it, another uid still publishes, and the owner.
    assert publish_as(NOBODY_UID + 1, fs, "third") == sha256_hex(b"third")
    fs.publish(b"the owner's")


def test_holders_names_and_publish_times_survive_a_restart(store_mount, snapfs_bin):
    opts = ("--allow-other", "--publishers", "any", "--unlink-own")
    fs = store_mount(*opts)
    # The sandbox's uid publishes the runtime's predictable config first...
    digest = publish_as(NOBODY_UID, fs, "predictable config")
    # ...then the runtime publishes the same bytes: already published, it holds it too.
    r = run(snapfs_bin, "put", "--mount", fs.path, "-", input="predictable config")
    assert r.returncode == 0 and "already published" in r.stderr, r.stderr
    st = os.stat(fs.p(digest))
    name = os.getxattr(fs.p(digest), "user.snapfs.name")
    manifest = json.loads(run("skopeo", "inspect", "--raw",
                              f"oci:{store_mount.store}:snapfs").stdout)
    assert manifest["layers"][0]["annotations"]["vnd.snapfs.holders"] == f"{NOBODY_UID},0"
    assert fs.stop() == 0

    fs = store_mount(*opts)
    assert os.stat(fs.p(digest)).st_mtime_ns == st.st_mtime_ns
    assert os.stat(fs.p(digest)).st_uid == NOBODY_UID
    assert os.getxattr(fs.p(digest), "user.snapfs.name") == name
    # The sandbox removes its own hold only: the runtime's keeps the snapshot.
    as_uid(NOBODY_UID, UID_PRELUDE + "os.unlink(f\"{mnt}/{sys.argv[2]}\")", fs.path, digest)
    assert read_snapshot(fs, digest) == b"predictable config"
    assert usage_line(fs.path, NOBODY_UID) == ""
    assert fs.stop() == 0
    # And that, too, holds after a restart: held by the runtime alone.
    fs = store_mount(*opts)
    assert read_snapshot(fs, digest) == b"predictable config"
    assert usage_line(fs.path, NOBODY_UID) == ""
    assert usage_line(fs.path, 0).startswith("uid=0 snapshots=1 ")


# ---- crash safety --------------------------------------------------------------------

class Publisher(threading.Thread):
    """Publishes distinct contents until the daemon dies, and unlinks every third one it
    published; records what was answered, and the unlink in flight when it died."""

    def __init__(self, fs, rng, round_no):
        super().__init__(daemon=True)
        self.fs, self.rng, self.round = fs, rng, round_no
        self.acked, self.attempted, self.removed = {}, {}, {}
        self.unlinking = None

    def run(self):
        i = 0
        while True:
            data = f"round {self.round} item {i} ".encode() * self.rng.randint(1, 8192)
            digest = sha256_hex(data)
            self.attempted[digest] = data
            try:
                self.fs.publish(data, name=f"r{self.round}-{i}")
            except OSError:
                return
            self.acked[digest] = data
            i += 1
            if i % 3 == 0:
                victim = next(d for d in self.acked if d not in self.removed)
                self.unlinking = victim
                try:
                    os.unlink(self.fs.p(victim))
                except OSError:
                    return
                self.removed[victim] = self.acked[victim]
                self.unlinking = None


def check_invariant(fs, acked, attempted, removed=(), maybe_gone=()):
    """Each snapshot served is complete and was attempted; every answered publish is served
    unless an unlink of it started; no answered unlink comes back."""
    names = set(served(fs))
    for digest in names:
        assert digest in attempted, f"{digest} served but never published"
        data = read_snapshot(fs, digest)
        assert hashlib.sha256(data).hexdigest() == digest, f"{digest} is partial"
        assert data == attempted[digest]
    missing = set(acked) - set(removed) - set(maybe_gone) - names
    assert not missing, f"answered publishes lost by the crash: {sorted(missing)}"
    back = set(removed) & names
    assert not back, f"answered unlinks undone by the crash: {sorted(back)}"
    return names


def crash_rounds(snapfs_bin, workdir, rounds, seed):
    rng = random.Random(seed)
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    os.makedirs(mnt, exist_ok=True)
    acked, attempted, removed, maybe_gone = {}, {}, {}, set()
    for rnd in range(rounds):
        fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale",
                          "--max-snapshot-size", "1M", "--max-bytes", "1G",
                          "--max-snapshots", "100000")
        check_invariant(fs, acked, attempted, removed, maybe_gone)
        pub = Publisher(fs, rng, rnd)
        pub.start()
        # Let a few publishes through, then kill at a point the clock picks: before, during
        # or after the blob, the manifest or index.json of the one in flight.
        deadline = time.monotonic() + 60
        want = rng.randint(1, 4)
        while len(pub.acked) < want and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.01))
        fs.stop(signal.SIGKILL)
        pub.join(60)
        assert not pub.is_alive()
        acked.update(pub.acked)
        attempted.update(pub.attempted)
        removed.update(pub.removed)
        if pub.unlinking:
            maybe_gone.add(pub.unlinking)
    fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale",
                      "--max-snapshot-size", "1M", "--max-bytes", "1G",
                      "--max-snapshots", "100000")
    try:
        names = check_invariant(fs, acked, attempted, removed, maybe_gone)
        # The publishes in flight at a kill: some made it, some did not.
        in_flight = set(attempted) - set(acked)
        print(f"crash rounds: {rounds}, answered {len(acked)}, in flight {len(in_flight)}, "
              f"of which served {len(in_flight & names)}; unlinks answered {len(removed)}, "
              f"in flight {len(maybe_gone)}, of which served {len(maybe_gone & names)}")
        # Nothing half-written is left in the layout either.
        leftovers = [n for n in os.listdir(os.path.join(store, "blobs", "sha256"))
                     if n.startswith(".tmp-")]
        assert leftovers == []
        assert set(layout_snapshots(store)) == names
    finally:
        assert fs.stop() == 0
    return len(acked), len(attempted)


def test_a_daemon_killed_during_publishes_leaves_each_snapshot_complete_or_absent(
        snapfs_bin, workdir):
    try:
        # scripts/store-crash.sh runs many more rounds.
        rounds = int(os.environ.get("SNAPFS_STORE_CRASH_ROUNDS", "6"))
        acked, attempted = crash_rounds(snapfs_bin, workdir, rounds=rounds, seed=12)
    finally:
        mnt = os.path.join(workdir, "mnt")
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
    assert acked > 0 and attempted > acked


# ---- index.json lost or damaged: nothing is deleted for it ----------------------------------

EMPTY_CONFIG = sha256_hex(b"{}")


def blobs(store):
    return {n for n in os.listdir(os.path.join(store, "blobs", "sha256"))
            if not n.startswith(".")}


def test_a_deleted_index_json_serves_every_intact_blob_and_deletes_nothing(store_mount):
    """index.json deleted, then a start: exit 0 and every snapshot gone, its blob deleted (9
    blobs -> 2), grants dropped. Now every intact blob is served, untitled, and kept."""
    fs = store_mount()
    a = fs.publish(b"first", name="a.txt")
    b = fs.publish(b"second", name="b.txt")
    assert fs.stop() == 0
    store = store_mount.store
    before = blobs(store)
    # The allowance: with index.json there, a restart serves both under their names.
    fs = store_mount()
    assert served(fs) == sorted([a, b])
    assert os.getxattr(fs.p(a), "user.snapfs.name") == b"a.txt"
    assert fs.stop() == 0
    os.unlink(os.path.join(store, "index.json"))
    fs = store_mount()
    manifest = (before - {a, b, EMPTY_CONFIG}).pop()
    # Every intact blob, the old manifest's too: nothing can say it was not content.
    assert served(fs) == sorted([a, b, manifest])
    assert read_snapshot(fs, a) == b"first" and read_snapshot(fs, b) == b"second"
    assert blobs(store) >= before
    assert (f"--store {store}: index.json: missing beside the store's blobs; every intact "
            "blob is served, untitled, and nothing is deleted") in fs.stderr()
    # The store is whole again: a publish, and a restart that serves everything.
    c = fs.publish(b"third", name="c.txt")
    assert fs.stop() == 0
    fs = store_mount()
    assert served(fs) == sorted([a, b, c, manifest])
    assert "index.json" not in fs.stderr()


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_index_json_is_set_aside_named_at_its_byte_and_nothing_is_deleted(
        store_mount, damage):
    """index.json cut short: the start failed (exit 2, "--store ...: Invalid argument",
    naming no file) and the unit never restarted it."""
    fs = store_mount()
    a = fs.publish(b"first", name="a.txt")
    assert fs.stop() == 0
    store = store_mount.store
    index = os.path.join(store, "index.json")
    before = blobs(store)
    with open(index, "rb") as f:
        text = f.read()
    bad = text[:40] if damage == "truncated" else b"#" + text[1:]
    with open(index, "wb") as f:
        f.write(bad)
    fs = store_mount()
    assert served(fs) == sorted(before - {EMPTY_CONFIG})
    assert blobs(store) >= before
    where = ("cut short: its JSON ends at byte 40, before the document does"
             if damage == "truncated" else "not valid JSON at byte 0")
    assert f"--store {store}: index.json: {where}" in fs.stderr(), fs.stderr()
    # Set aside, as it was, for the operator; a valid index.json written in its place.
    kept = os.listdir(os.path.join(store, "corrupt"))
    assert len(kept) == 1 and kept[0].startswith("index.json-")
    with open(os.path.join(store, "corrupt", kept[0]), "rb") as f:
        assert f.read() == bad
    with open(blob_path(store, tagged_manifest(store))) as f:
        layers = [x["digest"].split(":")[1] for x in json.load(f)["layers"]]
    assert sorted(layers) == sorted(before - {EMPTY_CONFIG})
    assert read_snapshot(fs, a) == b"first"


def test_an_index_json_damaged_while_the_daemon_runs_does_not_stop_its_publishes(store_mount):
    """Truncated while running: every publish got EINVAL ("not a regular file, or an invalid
    argument"). What index.json said is in the daemon's memory: it is written anew."""
    fs = store_mount()
    a = fs.publish(b"first", name="a.txt")
    store = store_mount.store
    with open(os.path.join(store, "index.json"), "r+b") as f:
        f.truncate(40)
    c = fs.publish(b"after the damage", name="c.txt")
    assert len(os.listdir(os.path.join(store, "corrupt"))) == 1
    assert fs.stop() == 0
    fs = store_mount()
    assert served(fs) == sorted([a, c])
    assert os.getxattr(fs.p(c), "user.snapfs.name") == b"c.txt"
    assert "index.json" not in fs.stderr()


def test_a_grant_whose_blob_is_lost_stays_dangling_and_comes_back_with_its_bytes(
        store_mount, workdir, runtime_dir):
    """One flipped byte in a granted blob: the next start set the blob aside and dropped its
    grant and entry for good. The grant is kept, dangling, and comes back when those bytes
    are published again. (The operator's bytes are in --store; the scope's file in the
    runtime store.)"""
    def store_mount_rt():
        return store_mount("--runtime-store", runtime_dir)
    fs = store_mount_rt()
    data = b'{"mcpServers": {"fs": {}}}\n'
    digest = fs.publish(data, name="mcp.json")
    other = fs.publish(b"granted and intact", name="other")
    view = os.path.join(workdir, "views", "sandbox")
    os.makedirs(os.path.dirname(view))
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view).returncode == 0
    assert snap("grant", "--mount", fs.path, "sandbox", digest, "--as", "mcp").returncode == 0
    assert snap("grant", "--mount", fs.path, "sandbox", other, "--as", "cfg").returncode == 0
    assert fs.stop() == 0
    with open(blob_path(store_mount.store, digest), "r+b") as f:
        f.write(b"#")
    scope_file = os.path.join(runtime_dir, "scopes", "sandbox.json")
    for _ in range(2):  # a start, and one more: the grant is still kept
        fs = store_mount_rt()
        # Set aside, not served; the intact grant beside it is.
        assert sorted(os.listdir(view)) == sorted([other, "cfg"])
        with open(scope_file) as f:
            kept = json.load(f)
        assert digest in [g["sha256"] for g in kept["grants"]], kept
        assert ("mcp", digest) in [(e["name"], e["sha256"]) for e in kept["entries"]], kept
        assert fs.stop() == 0
    fs = store_mount_rt()
    # The same bytes published again: the grant and its entry are back.
    assert fs.publish(data, name="mcp.json") == digest
    assert sorted(os.listdir(view)) == sorted([other, "cfg", digest, "mcp"])
    with open(os.path.join(view, "mcp"), "rb") as f:
        assert f.read() == data
    assert fs.stop() == 0
    fs = store_mount_rt()
    assert sorted(os.listdir(view)) == sorted([other, "cfg", digest, "mcp"])
    assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0


def test_a_store_crash_run_then_a_lost_index_json_keeps_every_blob(snapfs_bin, workdir):
    """The daemon killed mid-publish (SIGKILL), its answered publishes checked; then
    index.json goes: every blob survives the next start, served."""
    mnt = os.path.join(workdir, "mnt")
    store = os.path.join(workdir, "store")
    try:
        acked, _ = crash_rounds(snapfs_bin, workdir, rounds=2, seed=27)
        assert acked > 0
        before = blobs(store)
        os.unlink(os.path.join(store, "index.json"))
        fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--max-snapshot-size", "1M",
                          "--max-bytes", "1G", "--max-snapshots", "100000")
        try:
            assert blobs(store) >= before
            assert served(fs) == sorted(before - {EMPTY_CONFIG})
        finally:
            assert fs.stop() == 0
    finally:
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)


# ---- crash safety, at every file the daemon opens in the store ---------------------------

FAN_CLOEXEC, FAN_CLASS_CONTENT = 0x1, 0x4
FAN_OPEN_PERM, FAN_EVENT_ON_CHILD = 0x10000, 0x08000000
FAN_MARK_ADD, FAN_ALLOW = 0x1, 0x1
EVENT = struct.Struct("IBBHQii")  # struct fanotify_event_metadata


class OpenGate:
    """fanotify permission events on the store's directories: every open there waits for
    our answer, so the daemon can be killed exactly before its k-th open."""

    def __init__(self, dirs):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.fanotify_init(FAN_CLOEXEC | FAN_CLASS_CONTENT, os.O_RDONLY)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        for d in dirs:
            r = self.libc.fanotify_mark(self.fd, FAN_MARK_ADD,
                                        ctypes.c_uint64(FAN_OPEN_PERM | FAN_EVENT_ON_CHILD),
                                        -100, d.encode())
            assert r == 0, os.strerror(ctypes.get_errno())

    def next_open(self, deadline):
        """(pid, answer): the next open waiting; answer() lets it proceed. None on timeout."""
        ready, _, _ = select.select([self.fd], [], [], deadline)
        if not ready:
            return None
        buf = os.read(self.fd, EVENT.size)
        _, _, _, _, _, fd, pid = EVENT.unpack(buf)

        def answer():
            os.write(self.fd, struct.pack("iI", fd, FAN_ALLOW))
            os.close(fd)
        return pid, answer

    def close(self):
        os.close(self.fd)  # every open still waiting is allowed


def kill_before_open(snapfs_bin, mnt, store, k, data, request=None, opts=()):
    """Publishes data (or runs request(fs)) and kills the daemon (SIGKILL) just before its
    k-th open in the store. Returns the daemon that was killed, whether the request was
    answered (then k was past its last open: nothing was killed), and the opens seen."""
    fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale", *opts)
    if request is None:
        def request(fs):
            fs.publish(data, name="gated")
    gate = OpenGate([store, os.path.join(store, "blobs", "sha256")])
    outcome = {}

    def publish():
        try:
            request(fs)
            outcome["answered"] = True
        except (OSError, AssertionError) as e:
            outcome["errno"] = getattr(e, "errno", None)

    t = threading.Thread(target=publish, daemon=True)
    t.start()
    seen = 0
    try:
        while t.is_alive():
            ev = gate.next_open(0.05)
            if ev is None:
                continue
            pid, answer = ev
            if pid == fs.proc.pid:
                seen += 1
                if seen == k:
                    fs.stop(signal.SIGKILL)  # waits in the open: killed before it happens
            answer()
    finally:
        gate.close()
        t.join(60)
    return fs, outcome.get("answered", False), seen


def test_a_daemon_killed_before_each_open_of_a_publish_leaves_it_complete_or_absent(
        snapfs_bin, workdir):
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    served_after = []
    try:
        for k in range(1, 50):
            data = f"gated publish {k}".encode()
            fs, answered, opens = kill_before_open(snapfs_bin, mnt, store, k, data)
            if answered:
                # k is past the publish's last open: it ran to the end and was answered,
                # so it is there after a restart, and it alone.
                assert fs.stop() == 0
                fs2 = start_snapfs(snapfs_bin, mnt, "--store", store)
                try:
                    assert served(fs2) == [sha256_hex(data)]
                    assert read_snapshot(fs2, sha256_hex(data)) == data
                finally:
                    assert fs2.stop() == 0
                break
            fs2 = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale")
            try:
                digest = sha256_hex(data)
                names = served(fs2)
                if digest in names:
                    assert read_snapshot(fs2, digest) == data
                served_after.append(digest in names)
                # Every earlier gated publish is still there exactly when it was served.
                assert set(layout_snapshots(store)) == set(names)
            finally:
                assert fs2.stop() == 0
        else:
            raise AssertionError("a publish opened more than 50 files in the store")
    finally:
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
    # Killed before each open of a publish: at least blob, manifest and index.json.
    # Killed before each open of a publish (its blob, the manifest's config and blob,
    # index.json): never answered, so never served.
    assert len(served_after) >= 3, served_after
    assert not any(served_after), served_after


def test_a_daemon_killed_before_each_open_of_an_unlink_never_serves_it_again(snapfs_bin,
                                                                             workdir):
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    try:
        fs = start_snapfs(snapfs_bin, mnt, "--store", store)
        kept = fs.publish(b"kept through every crash", name="kept")
        assert fs.stop() == 0
        for k in range(1, 50):
            data = f"unlinked {k}".encode()
            fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale")
            fs.publish(data, name="gone")
            assert fs.stop() == 0
            fs, answered, opens = kill_before_open(
                snapfs_bin, mnt, store, k, data,
                request=lambda fs, d=sha256_hex(data): os.unlink(fs.p(d)))
            if answered:
                assert fs.stop() == 0
            fs2 = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale")
            try:
                # The blob goes first: killed before any later step, the unlink still holds.
                assert served(fs2) == [kept]
                assert read_snapshot(fs2, kept) == b"kept through every crash"
                assert set(layout_snapshots(store)) <= {kept, sha256_hex(data)}
            finally:
                assert fs2.stop() == 0
            if answered:
                break
        else:
            raise AssertionError("an unlink opened more than 50 files in the store")
    finally:
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
    print(f"answered after {k - 1} killed opens")
    assert k >= 3, k  # the manifest's config, its blob, index.json at least


def test_a_daemon_killed_before_each_open_of_a_new_hold_keeps_the_counts_of_what_it_stored(
        snapfs_bin, workdir):
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    opts = ("--allow-other", "--publishers", "any")
    try:
        fs = start_snapfs(snapfs_bin, mnt, "--store", store, *opts)
        shared = fs.publish(b"held by many", name="shared")
        assert fs.stop() == 0
        for k in range(1, 50):
            uid = NOBODY_UID + k

            def hold(fs, uid=uid):
                got = publish_as(uid, fs, "held by many")
                assert got == "EEXIST", got

            fs, answered, opens = kill_before_open(snapfs_bin, mnt, store, k, None,
                                                   request=hold, opts=opts)
            if answered:
                assert fs.stop() == 0
            fs2 = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale", *opts)
            try:
                assert read_snapshot(fs2, shared) == b"held by many"
                manifest = json.loads(run("skopeo", "inspect", "--raw",
                                          f"oci:{store}:snapfs").stdout)
                holders = manifest["layers"][0]["annotations"]["vnd.snapfs.holders"]
                held = str(uid) in holders.split(",")
                # The count a restart gives is what the store says, a hold answered is there.
                assert usage_line(fs2.path, uid).startswith(f"uid={uid} snapshots=1 ") == held
                assert held or not answered
            finally:
                assert fs2.stop() == 0
            if answered:
                break
        else:
            raise AssertionError("a hold opened more than 50 files in the store")
    finally:
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
    print(f"answered after {k - 1} killed opens")
    assert k >= 3, k  # the manifest's config, its blob, index.json at least


# ---- decide before writing ----------------------------------------------------------------

FAN_OPEN, FAN_CLASS_NOTIF, FAN_NONBLOCK = 0x20, 0x0, 0x2


class OpenCounter:
    """fanotify open events (notification only) on the store's directories: what a request
    made the daemon open there, counted after it was answered (events are queued at the open
    itself, so they are all there once the request returns)."""

    def __init__(self, dirs, pid):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.pid = pid
        self.fd = self.libc.fanotify_init(FAN_CLOEXEC | FAN_CLASS_NOTIF | FAN_NONBLOCK,
                                          os.O_RDONLY)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        for d in dirs:
            r = self.libc.fanotify_mark(self.fd, FAN_MARK_ADD,
                                        ctypes.c_uint64(FAN_OPEN | FAN_EVENT_ON_CHILD), -100,
                                        d.encode())
            assert r == 0, os.strerror(ctypes.get_errno())

    def take(self):
        """How many opens the daemon made since the last call."""
        n = 0
        while True:
            try:
                buf = os.read(self.fd, 4096)
            except BlockingIOError:
                return n
            for off in range(0, len(buf), EVENT.size):
                _, _, _, _, _, fd, pid = EVENT.unpack_from(buf, off)
                if fd >= 0:
                    os.close(fd)
                n += pid == self.pid

    def close(self):
        os.close(self.fd)


def test_a_refused_publish_writes_nothing_to_the_store(store_mount):
    fs = store_mount("--allow-other", "--publishers", "any", "--max-uid-snapshots", "1")
    store = store_mount.store
    assert publish_as(NOBODY_UID, fs, "the one it may") == sha256_hex(b"the one it may")
    theirs = fs.publish(b"published by the owner")
    counter = OpenCounter([store, os.path.join(store, "blobs", "sha256")], fs.proc.pid)
    try:
        counter.take()
        before = tree_modes(store)
        # Past its limit: a new snapshot, and a hold on one that is already there.
        assert publish_as(NOBODY_UID, fs, "one too many") == "EDQUOT"
        assert publish_as(NOBODY_UID, fs, "published by the owner") == "EDQUOT"
        # The attack: each refused publish was written and fsynced (blob, manifest,
        # index.json), then removed: 1.59 GB in 25 s.
        assert counter.take() == 0
        assert tree_modes(store) == before
        # Beside it, an admitted publish of another uid does write the store.
        assert publish_as(NOBODY_UID + 1, fs, "one too many") == sha256_hex(b"one too many")
        assert counter.take() > 0
        assert os.path.exists(blob_path(store, sha256_hex(b"one too many")))
        # And an admitted hold is written too, before it is answered.
        assert publish_as(NOBODY_UID + 2, fs, "published by the owner") == "EEXIST"
        assert counter.take() > 0
    finally:
        counter.close()
    assert read_snapshot(fs, theirs) == b"published by the owner"


# ---- a full store ---------------------------------------------------------------------------

def fill(directory):
    """Writes a file in directory until its filesystem is full."""
    chunk = b"\0" * 4096
    with open(os.path.join(directory, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == E.ENOSPC
    # Whatever a partial page still takes, in smaller steps.
    with open(os.path.join(directory, "filler2"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0")
        except OSError as e:
            assert e.errno == E.ENOSPC


def test_unlink_works_when_the_stores_filesystem_is_full(snapfs_bin, workdir):
    small = os.path.join(workdir, "small")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(small)
    os.mkdir(mnt)
    store = os.path.join(small, "store")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", small],
                   check=True)
    daemons = []
    try:
        fs = start_snapfs(snapfs_bin, mnt, "--store", store)
        daemons.append(fs)
        gone = fs.publish(b"g" * 20000, name="gone")
        kept = fs.publish(b"k" * 20000, name="kept")
        fill(small)
        # Full: a publish is refused (the store cannot write its blob)...
        fs.stage(b"no room for this", "late")
        assert errno_of(os.rename, fs.p(".staging/late"), fs.p(sha256_hex(b"no room for this"))) \
            == E.ENOSPC
        # ...but a removal needs no room: the attack left nothing removable through the mount.
        os.unlink(fs.p(gone))
        assert errno_of(os.stat, fs.p(gone)) == E.ENOENT
        assert not os.path.exists(blob_path(store, gone))
        assert read_snapshot(fs, kept) == b"k" * 20000
        assert fs.stop() == 0
        # After a restart on the still-full filesystem: removed stays removed, kept is kept.
        fs = start_snapfs(snapfs_bin, mnt, "--store", store)
        daemons.append(fs)
        assert served(fs) == [kept]
        assert read_snapshot(fs, kept) == b"k" * 20000
        assert fs.stop() == 0
    finally:
        for fs in daemons:
            if fs.proc.poll() is None:
                fs.stop()
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
        subprocess.run(["umount", "-l", small], check=True)


def test_a_full_store_filesystem_is_reported_as_that_not_as_a_limit(snapfs_bin, workdir):
    """snapfs put blamed --max-bytes or --max-snapshots when the disk under --store was full:
    the operator raised a limit that was not the cause."""
    small = os.path.join(workdir, "small")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(small)
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", small],
                   check=True)
    fs = None
    try:
        fs = start_snapfs(snapfs_bin, mnt, "--store", os.path.join(small, "store"),
                          "--max-bytes", "64K", "--max-snapshot-size", "64K")
        kept = fs.publish(b"k" * 20000, name="kept")
        # Beside it: with room on the disk, the daemon's own limit is named as that.
        r = snap("put", "--mount", mnt, "-", input=b"m" * 60000, text=False)
        assert r.returncode != 0 and b"the daemon's --max-bytes" in r.stderr, r.stderr
        fill(small)
        # Full: ENOSPC from the store, with the staging file's reason saying so...
        fs.stage(b"no room for this", "late")
        assert errno_of(os.rename, fs.p(".staging/late"), fs.p(sha256_hex(b"no room for this"))) \
            == E.ENOSPC
        assert os.getxattr(fs.p(".staging/late"), "user.snapfs.refusal") == b"store-full"
        os.unlink(fs.p(".staging/late"))
        # ...and snapfs put says it first, not "--max-bytes or --max-snapshots".
        r = snap("put", "--mount", mnt, "-", input=b"no room either", text=False)
        err = r.stderr.decode()
        assert r.returncode == 1 and err.splitlines() == [
            f"snapfs put: {mnt}: not published: the store's filesystem is full",
            "store-full: the store's filesystem is full (the daemon's --store): free room on "
            "it; no limit of the daemon's refused this, and nothing was published"], err
        # A refusal of its own on the full disk is still that refusal: the store's last failed
        # write does not speak for a publish that wrote nothing (the wrong name is EBADMSG).
        fs.stage(b"named wrong", "wrong")
        assert errno_of(os.rename, fs.p(".staging/wrong"), fs.p(sha256_hex(b"other bytes"))) \
            == E.EBADMSG
        os.unlink(fs.p(".staging/wrong"))
        assert read_snapshot(fs, kept) == b"k" * 20000
        assert fs.stop() == 0
    finally:
        if fs and fs.proc.poll() is None:
            fs.stop()
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
        subprocess.run(["umount", "-l", small], check=True)


# ---- the audit re-hashes the store ----------------------------------------------------------

def tagged_manifest(store):
    with open(os.path.join(store, "index.json")) as f:
        return [m["digest"].split(":")[1] for m in json.load(f)["manifests"]
                if m.get("annotations", {}).get("org.opencontainers.image.ref.name") ==
                "snapfs"][0]


def test_audit_repairs_a_blob_changed_on_disk_from_the_daemons_copy(store_mount, snapfs_bin):
    """A flipped byte in a blob the daemon holds: the next start set it aside and dropped its
    snapshot for good. The audit rewrites it from the right bytes in memory."""
    fs = store_mount("--allow-other", "--readers", "any")
    changed = fs.publish(b"changed on disk later", name="changed")
    intact = fs.publish(b"left alone", name="intact")
    # Beside the finding, the clean store audits clean, re-hashed: both blobs, the manifest
    # and its config.
    r = run(snapfs_bin, "audit", "--json", "--mount", fs.path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["store"] == {"rehashed": True, "blobs": 4, "intact": 4, "corrupt": 0,
                            "missing": 0, "repaired": 0, "set_aside": 0, "note": None}
    with open(blob_path(store_mount.store, changed), "r+b") as f:
        f.write(b"C")  # same size, other bytes: the attack, found only by a restart before
    r = run(snapfs_bin, "audit", "--mount", fs.path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("store      4 blobs on disk re-hashed by the daemon: 4 intact (1 repaired from its "
            "copy), 0 corrupt") in r.stdout
    with open(blob_path(store_mount.store, changed), "rb") as f:
        assert sha256_hex(f.read()) == changed
    events = fs.wait_audit(lambda ev: any(e["event"] == "store-blob-repaired" for e in ev))
    assert [e["digest"] for e in events if e["event"] == "store-blob-repaired"] == [changed]
    # What the daemon holds no copy of (the tagged manifest) is found, named, not repaired.
    manifest = tagged_manifest(store_mount.store)
    with open(blob_path(store_mount.store, manifest), "r+b") as f:
        f.write(b" ")
    r = run(snapfs_bin, "audit", "--mount", fs.path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{manifest}: store-blob-corrupt: the blob on disk does not hash to its name" \
        in r.stdout
    assert intact not in r.stdout and changed not in r.stdout
    assert "4 blobs on disk re-hashed by the daemon: 3 intact (0 repaired from its copy), " \
        "1 corrupt" in r.stdout
    assert "audit: FAILED" in r.stdout
    # The snapshot itself is served from memory, intact; another uid may not have the store
    # re-hashed, and the audit says so plainly rather than pass it.
    assert read_snapshot(fs, changed) == b"changed on disk later"
    code = UID_PRELUDE + r"""
import json, subprocess
r = subprocess.run([sys.argv[2], "audit", "--json", "--mount", mnt], capture_output=True,
                   text=True)
print(r.returncode)
print(r.stdout)
"""
    r = as_uid(NOBODY_UID, code, fs.path, snapfs_bin)
    rc, text = r.stdout.split("\n", 1)
    out = json.loads(text)
    assert out["store"]["rehashed"] is False and out["store"]["blobs"] is None
    assert out["store"]["note"] == \
        "only the mount owner and root may have the daemon re-hash its store"
    assert int(rc) == 0  # nothing it could check failed


# ---- SIGHUP during the start ----------------------------------------------------------------

def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


class MountPath:
    """Just enough of a Snapfs for read_snapshot on a mount a test started itself."""

    def __init__(self, path):
        self.path = path

    def p(self, name):
        return os.path.join(self.path, name)


def start_under_sighups(snapfs_bin, store, mnt, pidfile, foreground):
    """Starts snapfs mount with --store and sends SIGHUP to it (and to the daemon it forks)
    at every file it opens in the store and in the directory of its pid file and audit log
    (the first files it opens), each open held until the signal was sent. Returns (process,
    signals sent) once it serves."""
    run_dir = os.path.dirname(pidfile)
    args = [snapfs_bin, "mount", *(["-f"] if foreground else []), "--store", store,
            "--pid-file", pidfile, "--audit-log", os.path.join(run_dir, "audit.log"), mnt]
    gate = OpenGate([run_dir, store, os.path.join(store, "blobs", "sha256")])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sent = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if foreground:
                ready, _, _ = select.select([proc.stdout], [], [], 0)
                if ready:
                    line = proc.stdout.readline()
                    if not line.startswith("snapfs: serving"):
                        proc.kill()
                        proc.wait(20)
                        proc.stdout.close()
                        proc.stderr.close()
                        raise AssertionError(f"did not serve (exit {proc.returncode})")
                    break
            elif proc.poll() is not None:
                break
            ev = gate.next_open(0.05)
            if ev is None:
                continue
            pid, answer = ev
            ours = {p for p in (proc.pid, pid) if p == proc.pid or parent_of(p) == proc.pid}
            for p in ours:
                os.kill(p, signal.SIGHUP)  # pending before the open it waits in returns
                sent += 1
            answer()
    finally:
        gate.close()
    return proc, sent


def test_a_sighup_at_every_open_of_the_start_never_kills_the_daemon(snapfs_bin, workdir):
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    pidfile = os.path.join(workdir, "run", "snapfs.pid")
    os.mkdir(mnt)
    os.mkdir(os.path.dirname(pidfile), 0o700)
    fs = start_snapfs(snapfs_bin, mnt, "--store", store)
    digest = fs.publish(b"served again after the start")
    assert fs.stop() == 0
    try:
        # In the foreground (the attack: `snapfs mount -f M & kill -HUP $!` killed it 6 of 6
        # times, before its handlers were in place)...
        proc, sent = start_under_sighups(snapfs_bin, store, mnt, pidfile, True)
        try:
            assert sent >= 5, sent  # pid file, audit log, the store's layout, index.json, blobs
            assert proc.poll() is None, f"died: {proc.returncode}"
            assert read_snapshot(MountPath(mnt), digest) == b"served again after the start"
        finally:
            proc.terminate()
            rc = proc.wait(20)
            proc.stdout.close()
            proc.stderr.close()
        assert rc == 0
        # ...and daemonized: the waiting parent returns 0, the daemon it forked serves.
        proc, sent = start_under_sighups(snapfs_bin, store, mnt, pidfile, False)
        rc = proc.wait(20)
        proc.stdout.close()
        proc.stderr.close()
        assert rc == 0
        with open(pidfile) as f:
            daemon = int(f.read())
        assert read_snapshot(MountPath(mnt), digest) == b"served again after the start"
        os.kill(daemon, signal.SIGHUP)  # serving: it reopens its log, nothing else
        assert read_snapshot(MountPath(mnt), digest) == b"served again after the start"
        os.kill(daemon, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while os.path.exists(f"/proc/{daemon}") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not os.path.exists(f"/proc/{daemon}")
    finally:
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", mnt], check=False)
    assert not is_mounted(mnt)
