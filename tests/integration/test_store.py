# SPDX-License-Identifier: MIT
"""--store DIR: snapshots that survive a restart, kept in an OCI image layout that standard
tools read; blobs re-hashed at start (a bad one set aside, reported, never served); unlink
removes the blob; a daemon killed at any point of a publish leaves each snapshot complete or
absent, and every publish it answered complete."""
import hashlib
import json
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from snaptest import E, errno_of, is_mounted, run, sha256_hex, start_snapfs


def read_json(path):
    with open(path) as f:
        return json.load(f)


def layout_snapshots(store):
    """{digest: title} of the layers of the manifest index.json tags "snapfs"."""
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
    return sorted(n for n in os.listdir(fs.path) if n != ".staging")


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


def test_a_second_daemon_on_the_same_store_is_refused(store_mount, snapfs_bin, workdir):
    fs = store_mount()
    mnt = os.path.join(workdir, "second")
    os.mkdir(mnt)
    r = run(snapfs_bin, "mount", "-f", "--store", store_mount.store, mnt)
    assert r.returncode == 1
    assert "refused: another snapfs daemon uses this store" in r.stderr
    assert not is_mounted(mnt)
    assert fs.publish(b"the first still serves") == sha256_hex(b"the first still serves")


# ---- crash safety --------------------------------------------------------------------

class Publisher(threading.Thread):
    """Publishes distinct contents until the daemon dies; records what was answered."""

    def __init__(self, fs, rng, round_no):
        super().__init__(daemon=True)
        self.fs, self.rng, self.round = fs, rng, round_no
        self.acked, self.attempted = {}, {}

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


def check_invariant(fs, acked, attempted):
    """Each snapshot served is complete and was attempted; every answered one is served."""
    names = set(served(fs))
    for digest in names:
        assert digest in attempted, f"{digest} served but never published"
        data = read_snapshot(fs, digest)
        assert hashlib.sha256(data).hexdigest() == digest, f"{digest} is partial"
        assert data == attempted[digest]
    missing = set(acked) - names
    assert not missing, f"answered publishes lost by the crash: {sorted(missing)}"
    return names


def crash_rounds(snapfs_bin, workdir, rounds, seed):
    rng = random.Random(seed)
    store = os.path.join(workdir, "store")
    mnt = os.path.join(workdir, "mnt")
    os.makedirs(mnt, exist_ok=True)
    acked, attempted = {}, {}
    for rnd in range(rounds):
        fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale",
                          "--max-snapshot-size", "1M", "--max-bytes", "1G",
                          "--max-snapshots", "100000")
        check_invariant(fs, acked, attempted)
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
    fs = start_snapfs(snapfs_bin, mnt, "--store", store, "--replace-stale",
                      "--max-snapshot-size", "1M", "--max-bytes", "1G",
                      "--max-snapshots", "100000")
    try:
        names = check_invariant(fs, acked, attempted)
        # The publishes in flight at a kill: some made it, some did not.
        in_flight = set(attempted) - set(acked)
        print(f"crash rounds: {rounds}, answered {len(acked)}, in flight {len(in_flight)}, "
              f"of which served {len(in_flight & names)}")
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
