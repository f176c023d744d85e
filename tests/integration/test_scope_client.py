# SPDX-License-Identifier: MIT
"""Scopes from the client's side, on the real daemon: every command (snapfs scope
create|ls|rm, grant, revoke, put --scope, exec --entry, check of a view) and every libsnapfs
function, through both clients (the C API and the Python client), each refusal beside its
allowance, by its exact errno.

The main mount is the owner's control surface (its .control file); a scope's view is a mount
of its own that lists only the snapshots granted to it."""
import errno
import json
import os
import signal
import subprocess
import time

import pytest

from clients import APICLIENT, LIBSNAPFS, PYCLIENT, Client, client_env, codes
from snaptest import (E, NOBODY_UID, SNAPFS, errno_of, is_mounted, jsnap, run, sha256_hex,
                      snap)

CFG = b'{"mcpServers": {"fs": {"command": "true"}}}\n'
CFG2 = b'{"mcpServers": {"fs": {"command": "false"}}}\n'


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    for tool in (APICLIENT, LIBSNAPFS, PYCLIENT, SNAPFS):
        assert tool.exists(), f"build first: {tool} missing"


@pytest.fixture(params=["c", "python"])
def client(request):
    return Client(request.param)


def put(fs, data, *opts):
    r = snap("put", "--mount", fs.path, *opts, "-", input=data.decode())
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


class Scopes:
    """The scopes a test creates on one main mount: each removed at the end if still there,
    its view unmounted, so no test leaves a mount behind."""

    def __init__(self, fs, workdir):
        self.fs, self.workdir, self.views = fs, workdir, {}

    def view(self, name):
        return os.path.join(self.workdir, "views", name)

    def create(self, name, *opts, view=None):
        view = view or self.view(name)
        os.makedirs(os.path.dirname(view), exist_ok=True)
        r = snap("scope", "create", "--mount", self.fs.path, name, "--view", view, *opts)
        assert r.returncode == 0, r.stdout + r.stderr
        self.views[name] = view
        return view

    def cleanup(self):
        for name, view in self.views.items():
            snap("scope", "rm", "--mount", self.fs.path, name)
            if is_mounted(view):
                subprocess.run(["umount", "-l", view], capture_output=True, check=False)


@pytest.fixture
def scopes(snapfs, workdir):
    s = Scopes(snapfs, workdir)
    yield s
    s.cleanup()


def wait_for(done, timeout=20):
    """Polls done() until it holds (the state a test asserts), or fails at the deadline."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.02)


def grant_object(fs, view, digest, size, name, entry):
    """A grant as every --json output and both clients show it: the one snapshot object (its
    binding in the scope's view; its name, first publish and publisher as the main mount's
    daemon says them), its entry beside it."""
    st, main = os.stat(os.path.join(view, digest)), os.stat(fs.p(digest))
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    return {"sha256": digest, "size": size, "dev": dev, "ino": st.st_ino, "name": name,
            "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(main.st_mtime)),
            "publisher": main.st_uid,
            "binding": f"sha256={digest} size={size} dev={dev} ino={st.st_ino}", "entry": entry}


def read_fd(fd):
    return os.pread(fd, 1 << 20, 0)


# ---- the lifecycle --------------------------------------------------------------------------

def test_scope_create_mounts_a_view_that_check_accepts_and_names(snapfs, scopes):
    view = scopes.view("sandbox-a")
    os.makedirs(os.path.dirname(view))
    rc, out = jsnap("scope", "create", "--mount", snapfs.path, "sandbox-a", "--view", view)
    assert rc == 0, out
    scopes.views["sandbox-a"] = view
    st = os.stat(view)
    assert out["mount"] == snapfs.path
    assert out["scope"]["name"] == "sandbox-a" and out["scope"]["view"] == view
    assert out["scope"]["dev"] == f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    assert out["scope"]["publish"] is False and out["scope"]["grants"] == 0
    assert is_mounted(view) and os.listdir(view) == []
    r = snap("check", view)
    assert r.returncode == 0 and r.stdout == "scope sandbox-a\n", r.stdout + r.stderr
    # Without --publish the view is read-only, which the check requires of it.
    r = snap("check", "--json", view)
    assert json.loads(r.stdout)["scope_publishes"] is False


def test_a_taken_name_or_view_is_eexist_and_a_free_one_is_created(snapfs, scopes):
    view = scopes.create("sandbox-a")
    rc, out = jsnap("scope", "create", "--mount", snapfs.path, "sandbox-a", "--view",
                    scopes.view("other"))
    assert rc == 1 and out["error"] == "EEXIST" and codes(out) == {"refused"}
    assert out["scope"] is None
    rc, out = jsnap("scope", "create", "--mount", snapfs.path, "sandbox-b", "--view", view)
    assert rc == 1 and out["error"] == "EEXIST" and codes(out) == {"refused"}, out
    scopes.create("sandbox-b")
    names = [s["name"] for s in jsnap("scope", "ls", "--mount", snapfs.path)[1]["scopes"]]
    assert sorted(names) == ["sandbox-a", "sandbox-b"]


@pytest.mark.parametrize("name", [".hidden", "a/b", "x" * 65, ""])
def test_a_scope_name_outside_the_grammar_is_einval_before_any_request(snapfs, scopes,
                                                                      workdir, name):
    rc, out = jsnap("scope", "create", "--mount", snapfs.path, name, "--view",
                    scopes.view("v"))
    # Refused before any request: a usage error, 2.
    assert rc == 2 and out["error"] == "EINVAL" and codes(out) == {"invalid-argument"}
    assert not os.path.exists(scopes.view("v"))
    scopes.create("x" * 64, view=scopes.view("v"))


def test_a_view_on_the_daemons_own_mount_is_refused(snapfs, scopes):
    rc, out = jsnap("scope", "create", "--mount", snapfs.path, "a", "--view",
                    snapfs.p(".staging"))
    assert rc == 1 and out["error"] == "EBUSY" and codes(out) == {"refused"}, out
    rc, out = jsnap("scope", "create", "--mount", snapfs.path, "a", "--view", snapfs.path)
    assert rc == 1 and out["error"] == "EBUSY" and codes(out) == {"refused"}, out
    scopes.create("a")


@pytest.mark.readers_any
def test_only_the_mount_owner_and_root_control_scopes(snapfs, scopes):
    scopes.create("sandbox-a")
    rc, out = jsnap("scope", "ls", "--mount", snapfs.path, uid=NOBODY_UID)
    assert rc == 1 and out["error"] == "EACCES" and codes(out) == {"control"}, out
    rc, out = jsnap("scope", "rm", "--mount", snapfs.path, "sandbox-a", uid=NOBODY_UID)
    assert rc == 1 and out["error"] == "EACCES", out
    # Root (the owner here) lists it, and it is still there.
    rc, out = jsnap("scope", "ls", "--mount", snapfs.path)
    assert rc == 0 and [s["name"] for s in out["scopes"]] == ["sandbox-a"]


def test_scope_ls_shows_one_scope_with_its_grants_and_enoent_for_none(snapfs, scopes):
    scopes.create("sandbox-a", "--uid", f"{NOBODY_UID},1001", "--gid", "100",
                  "--max-snapshots", "4", "--max-bytes", "1M", "--min-bytes", "64K")
    digest = sha256_hex(CFG)
    put(snapfs, CFG, "--name", "cfg")
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", digest, "--as", "mcp"
                ).returncode == 0
    rc, out = jsnap("scope", "ls", "--mount", snapfs.path, "sandbox-a")
    assert rc == 0, out
    s = out["scope"]
    assert s["uids"] == [NOBODY_UID, 1001] and s["gid"] == 100
    assert s["limits"]["max_snapshots"] == 4 and s["limits"]["max_bytes"] == 1 << 20
    assert s["limits"]["min_bytes"] == 64 << 10
    # Limits not given are the daemon's own, reported as such.
    assert isinstance(s["limits"]["max_staging"], int) and s["limits"]["max_staging"] > 0
    # Each grant is the one snapshot object, its entry beside it; the name is the daemon's,
    # though the view, which the operator granted it to, names nothing.
    view = scopes.views["sandbox-a"]
    assert grant_object(snapfs, view, digest, len(CFG), "cfg", "mcp") in out["grants"], out
    assert errno_of(os.getxattr, os.path.join(view, digest), "user.snapfs.name") == E.ENODATA
    r = snap("scope", "ls", "--mount", snapfs.path, "sandbox-a")
    assert r.returncode == 0 and "name       sandbox-a\n" in r.stdout
    assert f"users      {NOBODY_UID},1001 gid=100\n" in r.stdout
    assert " min-bytes=65536\n" in r.stdout
    rc, out = jsnap("scope", "ls", "--mount", snapfs.path, "sandbox-b")
    assert rc == 1 and out["error"] == "ENOENT" and out["scope"] is None
    assert out["grants"] is None


def test_scope_rm_detaches_the_view_while_an_open_descriptor_reads_on(snapfs, scopes):
    view = scopes.create("sandbox-a")
    digest = sha256_hex(CFG)
    put(snapfs, CFG)
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", digest).returncode == 0
    fd = os.open(os.path.join(view, digest), os.O_RDONLY)
    try:
        rc, out = jsnap("scope", "rm", "--mount", snapfs.path, "sandbox-a")
        assert rc == 0 and out["scope"] == "sandbox-a", out
        wait_for(lambda: not is_mounted(view))
        assert read_fd(fd) == CFG  # the same bytes, until closed
        assert errno_of(os.stat, os.path.join(view, digest)) == E.ENOENT
    finally:
        os.close(fd)
    rc, out = jsnap("scope", "rm", "--mount", snapfs.path, "sandbox-a")
    assert rc == 1 and out["error"] == "ENOENT" and out["scope"] == "sandbox-a"
    assert jsnap("scope", "ls", "--mount", snapfs.path)[1]["scopes"] == []
    # The snapshot stays on the main mount: its publisher still holds it.
    assert os.stat(snapfs.p(digest)).st_size == len(CFG)


def test_a_view_unmounted_from_outside_is_reported_unserved(client, snapfs, scopes):
    view = scopes.create("sandbox-a")
    digest = sha256_hex(CFG)
    put(snapfs, CFG, "--name", "cfg")
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", digest).returncode == 0
    seen = grant_object(snapfs, view, digest, len(CFG), "cfg", None)
    assert client("scope-show", snapfs.path, "sandbox-a")["grants"] == [seen]
    dev = os.stat(view).st_dev
    assert client("scope-list", snapfs.path)["scopes"][0]["dev"] == \
        f"{os.major(dev)}:{os.minor(dev)}"
    assert run("umount", "-l", view).returncode == 0
    wait_for(lambda: client("scope-list", snapfs.path)["scopes"][0]["dev"] is None)
    rc, out = jsnap("scope", "ls", "--mount", snapfs.path)
    assert rc == 0 and out["scopes"][0]["dev"] is None
    row = snap("scope", "ls", "--mount", snapfs.path).stdout.splitlines()[1].split()
    assert row[:3] == ["sandbox-a", view, "-"]
    r = snap("scope", "ls", "--mount", snapfs.path, "sandbox-a")
    assert "dev        - (the view is not mounted)\n" in r.stdout
    # Its grants have no binding to show while unserved; the daemon still says the rest.
    unserved = {**seen, "dev": None, "binding": None}
    rc, out = jsnap("scope", "ls", "--mount", snapfs.path, "sandbox-a")
    assert rc == 0 and out["grants"] == [unserved], out
    assert client("scope-show", snapfs.path, "sandbox-a")["grants"] == [unserved]
    rc, out = jsnap("scope", "rm", "--mount", snapfs.path, "sandbox-a")
    assert rc == 0, out


# ---- grants --------------------------------------------------------------------------------

def test_a_view_lists_exactly_its_grants_by_digest_or_binding(snapfs, scopes):
    view = scopes.create("sandbox-a")
    x, y, z = sha256_hex(CFG), sha256_hex(CFG2), sha256_hex(b"never granted")
    put(snapfs, CFG)
    binding_y = put(snapfs, CFG2)[0]
    put(snapfs, b"never granted")
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-a", x)
    assert rc == 0, out
    assert out["grant"] == grant_object(snapfs, view, x, len(CFG), None, None)
    assert os.listdir(view) == [x]
    r = snap("grant", "--mount", snapfs.path, "sandbox-a", binding_y)
    assert r.returncode == 0 and r.stdout.startswith(f"sha256={y} size={len(CFG2)} ino=")
    assert sorted(os.listdir(view)) == sorted([x, y])
    # Published but not granted: no oracle, the same ENOENT as a digest never published.
    assert errno_of(os.stat, os.path.join(view, z)) == E.ENOENT
    assert errno_of(os.stat, os.path.join(view, sha256_hex(b"nowhere"))) == E.ENOENT
    r = snap("verify", "--mount", view, x)
    assert r.returncode == 0, r.stdout + r.stderr
    st = os.stat(os.path.join(view, x))
    assert f"dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} " in r.stdout


def test_a_grant_of_what_is_not_published_or_to_no_scope_is_enoent(snapfs, scopes):
    scopes.create("sandbox-a")
    put(snapfs, CFG)
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-a", sha256_hex(b"absent"))
    assert rc == 1 and out["error"] == "ENOENT" and out["grant"] is None
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-b", sha256_hex(CFG))
    assert rc == 1 and out["error"] == "ENOENT"
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-a", sha256_hex(CFG))
    assert rc == 0


@pytest.mark.parametrize("entry", [".mcp", "a/b", sha256_hex(b"x"), "x" * 65])
def test_an_entry_outside_the_grammar_or_shaped_as_a_digest_is_einval(snapfs, scopes, entry):
    scopes.create("sandbox-a")
    put(snapfs, CFG)
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-a", sha256_hex(CFG), "--as",
                    entry)
    assert rc == 2 and out["error"] == "EINVAL" and codes(out) == {"invalid-argument"}
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-a", sha256_hex(CFG), "--as",
                    "mcp")
    assert rc == 0 and out["grant"]["entry"] == "mcp"


def test_an_entry_moves_to_another_snapshot_and_exec_hands_over_the_one_it_names(snapfs,
                                                                                 scopes):
    view = scopes.create("sandbox-a")
    x, y = sha256_hex(CFG), sha256_hex(CFG2)
    put(snapfs, CFG)
    put(snapfs, CFG2)
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", x, "--as", "mcp").returncode == 0
    assert sorted(os.listdir(view)) == sorted([x, "mcp"])
    entry, named = os.stat(os.path.join(view, "mcp")), os.stat(os.path.join(view, x))
    assert (entry.st_ino, entry.st_dev, entry.st_mode) == (named.st_ino, named.st_dev,
                                                           named.st_mode)
    r = snap("exec", "--mount", view, "--entry", "mcp", "--", "cat", "{}")
    assert r.returncode == 0 and r.stdout == CFG.decode(), r.stderr
    # Moved: the entry names the new snapshot, and the old digest leaves the view.
    rc, out = jsnap("grant", "--mount", snapfs.path, "sandbox-a", y, "--as", "mcp")
    assert rc == 0 and out["grant"]["sha256"] == y
    r = snap("exec", "--mount", view, "--entry", "mcp", "--", "sh", "-c",
             'cat "$1"; printf %s "$SNAPFS_BINDING"', "sh", "{}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(CFG2.decode()) and f"sha256={y} " in r.stdout
    assert sorted(os.listdir(view)) == sorted([y, "mcp"])
    assert errno_of(os.stat, os.path.join(view, x)) == E.ENOENT
    r = snap("exec", "--mount", view, "--entry", "absent", "--", "true")
    assert r.returncode == 125 and "open: no entry absent" in r.stderr


def test_readers_of_a_moving_entry_get_one_snapshot_or_the_other_whole(snapfs, scopes,
                                                                       workdir):
    view = scopes.create("sandbox-a")
    x, y = sha256_hex(CFG), sha256_hex(CFG2)
    put(snapfs, CFG)
    put(snapfs, CFG2)
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", x, "--as", "mcp").returncode == 0
    stop = os.path.join(workdir, "stop")
    # Each reader opens through the entry (libsnapfs, verified) until told to stop, then once
    # more: every open must give one of the two snapshots, whole, never an error.
    reader = f"""
import hashlib, os, sys
sys.path.insert(0, {str(PYCLIENT.parent)!r})
import snapfs_client as snapfs
seen, opens = set(), 0
def once():
    global opens
    fd, b = snapfs.open_entry({view!r}, "mcp")
    data = os.pread(fd, 1 << 16, 0)
    os.close(fd)
    assert b.sha256 in ({x!r}, {y!r}), b
    assert hashlib.sha256(data).hexdigest() == b.sha256 and len(data) == b.size, (b, data)
    seen.add(b.sha256)
    opens += 1
once()
print("ready", flush=True)
while not os.path.exists({stop!r}):
    once()
once()
print(" ".join(sorted(seen)), opens)
"""
    readers = [subprocess.Popen(["/usr/bin/python3", "-c", reader], env=client_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(4)]
    try:
        for p in readers:
            assert p.stdout.readline() == "ready\n", p.stderr.read()
        # An odd number of moves, x to y first: the entry ends on y.
        for i in range(41):
            digest = y if i % 2 == 0 else x
            assert snap("grant", "--mount", snapfs.path, "sandbox-a", digest, "--as",
                        "mcp").returncode == 0
    finally:
        with open(stop, "w"):
            pass
        results = [p.communicate(timeout=120) for p in readers]
    for p, (out, err) in zip(readers, results):
        assert p.returncode == 0, err
        *digests, opens = out.split()
        # Every reader read x before the first move and y after the last.
        assert sorted(digests) == sorted([x, y]) and int(opens) >= 2, out


ROTATOR = """
import json, os, sys
mnt, x, y, stop = sys.argv[1:]
moves = 0
while not os.path.exists(stop):
    fd = os.open(os.path.join(mnt, ".control"), os.O_RDWR | os.O_CLOEXEC)
    req = {"op": "grant", "scope": "sandbox-a", "sha256": y if moves % 2 == 0 else x,
           "entry": "mcp"}
    os.write(fd, json.dumps(req).encode())
    reply = json.loads(os.pread(fd, 65536, 0))
    os.close(fd)
    # Another rotator may have moved it there first: EEXIST, and on to the other one.
    assert reply["ok"] or reply["error"] == "EEXIST", reply
    moves += 1
print(moves)
"""


def test_exec_entry_follows_an_entry_a_tight_loop_keeps_moving_without_a_failure(snapfs,
                                                                                 scopes,
                                                                                 workdir):
    """exec --entry exited 125 "moved ... while being opened" when its entry moved 8 times
    during one open. A rotation costs the reader time, never an error (up to
    $SNAPFS_ENTRY_TIMEOUT, 10 s by default)."""
    view = scopes.create("sandbox-a")
    # Large enough that an open (every page read and hashed) outlasts several moves.
    big_x, big_y = b"x" * 200000, b"y" * 200000
    x, y = sha256_hex(big_x), sha256_hex(big_y)
    put(snapfs, big_x)
    put(snapfs, big_y)
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", x, "--as", "mcp").returncode == 0
    stop = os.path.join(workdir, "stop-rotating")
    # Four rotators at once: the entry moves many times during each open.
    rotators = [subprocess.Popen(["/usr/bin/python3", "-c", ROTATOR, snapfs.path, x, y, stop],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    failures, seen = [], set()
    try:
        for _ in range(40):
            r = snap("exec", "--mount", view, "--entry", "mcp", "--", "sh", "-c",
                     'cat "$1"; printf "\\n%s" "$SNAPFS_BINDING"', "sh", "{}",
                     env={**os.environ, "SNAPFS_ENTRY_TIMEOUT": "60s"})
            if r.returncode != 0:
                failures.append(r.stderr)
                continue
            content, binding = r.stdout.rsplit("\n", 1)
            # One snapshot or the other, whole, with its own binding.
            digest = binding.split()[0][len("sha256="):]
            assert digest in (x, y) and sha256_hex(content.encode()) == digest, r.stdout
            seen.add(digest)
    finally:
        with open(stop, "w"):
            pass
        done = [(p, *p.communicate(timeout=120)) for p in rotators]
    for p, out, err in done:
        assert p.returncode == 0, err
    assert failures == [], failures[:3]
    # The entry kept moving while exec ran.
    assert sum(int(out) for _, out, _ in done) >= 40, done
    # A timeout that is no duration is refused before anything is opened.
    r = snap("exec", "--mount", view, "--entry", "mcp", "--", "true",
             env={**os.environ, "SNAPFS_ENTRY_TIMEOUT": "soon"})
    assert r.returncode == 125 and "$SNAPFS_ENTRY_TIMEOUT is no duration" in r.stderr, r.stderr
    r = snap("exec", "--mount", view, "--entry", "mcp", "--", "true",
             env={**os.environ, "SNAPFS_ENTRY_TIMEOUT": "30s"})
    assert r.returncode == 0, r.stderr


def test_revoke_makes_new_opens_enoent_while_an_open_descriptor_reads_on(client, snapfs,
                                                                         scopes):
    view = scopes.create("sandbox-a")
    x = sha256_hex(CFG)
    put(snapfs, CFG)
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", x).returncode == 0
    assert snap("grant", "--mount", snapfs.path, "sandbox-a", x, "--as", "mcp").returncode == 0
    fd = os.open(os.path.join(view, x), os.O_RDONLY)
    try:
        # Revoking the entry leaves the digest's own grant.
        rc, out = jsnap("revoke", "--mount", snapfs.path, "sandbox-a", "mcp")
        assert rc == 0 and out["entry"] == "mcp" and out["sha256"] is None
        assert errno_of(os.stat, os.path.join(view, "mcp")) == E.ENOENT
        assert client("digest", view, x)["content_hex"] == CFG.hex()
        rc, out = jsnap("revoke", "--mount", snapfs.path, "sandbox-a", "mcp")
        assert rc == 1 and out["error"] == "ENOENT"
        # Revoking the digest: new opens ENOENT, the open descriptor reads the same bytes.
        rc, out = jsnap("revoke", "--mount", snapfs.path, "sandbox-a", x)
        assert rc == 0 and out["sha256"] == x and out["entry"] is None
        out = client("digest", view, x)
        assert out["error"] == "ENOENT" and codes(out) == {"open"}
        assert read_fd(fd) == CFG
    finally:
        os.close(fd)
    rc, out = jsnap("revoke", "--mount", snapfs.path, "sandbox-a", x)
    assert rc == 1 and out["error"] == "ENOENT"


def test_ls_and_audit_take_a_view_its_entries_included(snapfs, scopes):
    view = scopes.create("sandbox-a")
    # A view without entries: the check ran and found nothing to fault.
    rc, out = jsnap("audit", "--mount", view)
    assert rc == 0 and {c["check"]: (c["ran"], c["passed"]) for c in out["checks"]}[
        "entry names a snapshot"] == (True, 0)
    put(snapfs, CFG, "--scope", "sandbox-a", "--as", "mcp")
    rc, out = jsnap("ls", "--mount", view)
    assert rc == 0 and [e["sha256"] for e in out["snapshots"]] == [sha256_hex(CFG)]
    rc, out = jsnap("audit", "--mount", view)
    assert rc == 0, out
    rows = {c["check"]: (c["passed"], c["failed"]) for c in out["checks"]}
    assert rows["entry names a snapshot"] == (1, 0)
    assert rows["content hashes to name"] == (1, 0)
    # The main mount has no entries: the check did not run there, and says so.
    rc, out = jsnap("audit", "--mount", snapfs.path)
    assert rc == 0 and {c["check"]: (c["ran"], c["passed"]) for c in out["checks"]}[
        "entry names a snapshot"] == (False, None)


# ---- put --scope ---------------------------------------------------------------------------

def test_put_scope_grants_and_prints_the_binding_the_view_shows(snapfs, scopes):
    view = scopes.create("sandbox-a")
    lines = put(snapfs, CFG, "--scope", "sandbox-a")
    assert len(lines) == 2
    st = os.stat(os.path.join(view, sha256_hex(CFG)))
    binding = (f"sha256={sha256_hex(CFG)} size={len(CFG)} "
               f"dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} ino={st.st_ino}")
    assert lines[1] == f"scope sandbox-a {binding} {view}"
    r = snap("verify", "--mount", view, binding)
    assert r.returncode == 0, r.stdout + r.stderr
    # With an entry, in JSON: the entry names it in the view.
    rc, out = jsnap("put", "--mount", snapfs.path, "--scope", "sandbox-a", "--as", "mcp", "-",
                    input=CFG2.decode())
    assert rc == 0, out
    assert out["scope"]["name"] == "sandbox-a" and out["scope"]["entry"] == "mcp"
    assert out["scope"]["mount"] == view and out["read_view"] is None
    r = snap("exec", "--mount", view, "--entry", "mcp", "--", "cat", "{}")
    assert r.stdout == CFG2.decode()


def test_put_to_a_scope_that_does_not_exist_publishes_nothing(snapfs, scopes):
    # Content for a scope is that scope's alone: without the scope it is not published.
    rc, out = jsnap("put", "--mount", snapfs.path, "--scope", "nowhere", "-",
                    input=CFG.decode())
    assert rc == 1 and out["error"] == "ENOENT" and "snapshot" not in out, out
    assert {r["code"] for r in out["reasons"]} == {"no-such-scope"}
    assert errno_of(os.stat, snapfs.p(sha256_hex(CFG))) == errno.ENOENT
    assert os.listdir(snapfs.p(".staging")) == []
    # --keep publishes on the main mount first (held there), then grants: that grant fails.
    rc, out = jsnap("put", "--mount", snapfs.path, "--scope", "nowhere", "--keep", "-",
                    input=CFG.decode())
    assert rc == 1 and out["error"] == "ENOENT" and out["scope"] is None
    assert out["snapshot"]["sha256"] == sha256_hex(CFG)
    assert os.stat(snapfs.p(sha256_hex(CFG))).st_size == len(CFG)  # published all the same
    r = snap("put", "--mount", snapfs.path, "--as", "mcp", "-", input=CFG.decode())
    assert r.returncode == 2 and "--as needs --scope" in r.stderr
    scopes.create("nowhere")
    assert len(put(snapfs, CFG, "--scope", "nowhere")) == 2


# ---- who may use a view, and publishing in one ---------------------------------------------

def test_a_user_of_the_view_reads_it_and_another_uid_gets_eacces(client, snapfs, scopes):
    view = scopes.create("sandbox-a", "--uid", str(NOBODY_UID))
    x = sha256_hex(CFG)
    put(snapfs, CFG, "--scope", "sandbox-a")
    user = client.as_uid(NOBODY_UID)
    assert user("digest", view, x)["content_hex"] == CFG.hex()
    r = snap("check", view, uid=NOBODY_UID)
    assert r.returncode == 0 and r.stdout == "scope sandbox-a\n", r.stdout + r.stderr
    # Another uid reaches the mount but the daemon answers it nothing.
    r = snap("check", "--json", view, uid=NOBODY_UID + 1)
    assert r.returncode == 2 and json.loads(r.stdout)["error"] == "EACCES", r.stdout
    out = client.as_uid(NOBODY_UID + 1)("digest", view, x)
    assert out["error"] == "EACCES"


def test_a_publishing_scope_publishes_in_its_view_up_to_its_limit(snapfs, scopes):
    view = scopes.create("sandbox-p", "--publish", "--max-snapshots", "1")
    rc, out = jsnap("check", view)
    assert rc == 0 and out["scope"] == "sandbox-p" and out["scope_publishes"] is True
    rc, out = jsnap("put", "--mount", view, "-", input=CFG.decode())
    assert rc == 0, out
    assert sorted(os.listdir(view)) == sorted([".staging", sha256_hex(CFG)])
    rc, out = jsnap("put", "--mount", view, "-", input=CFG2.decode())
    assert rc == 1 and out["error"] == "EDQUOT", out
    # Granted to that scope only: the main mount's listing does not show it, yet its owner
    # (root) reaches it by digest.
    assert sha256_hex(CFG) not in os.listdir(snapfs.path)
    assert os.stat(snapfs.p(sha256_hex(CFG))).st_size == len(CFG)
    # A view without --publish has no .staging/ and is read-only.
    other = scopes.create("sandbox-r")
    rc, out = jsnap("put", "--mount", other, "-", input=CFG.decode())
    assert rc == 1 and out["error"] == "ENOENT" and codes(out) == {"staging"}, out


# ---- until-pid -----------------------------------------------------------------------------

def test_a_scope_tied_to_a_process_goes_when_it_exits(snapfs, scopes):
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        view = scopes.create("sandbox-a", "--until-pid", str(sleeper.pid))
        rc, out = jsnap("scope", "ls", "--mount", snapfs.path, "sandbox-a")
        assert rc == 0 and out["scope"]["until_pid"] == sleeper.pid
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait()
    wait_for(lambda: jsnap("scope", "ls", "--mount", snapfs.path)[1]["scopes"] == [])
    wait_for(lambda: not is_mounted(view))


def test_until_pid_from_another_pid_namespace_is_einval(snapfs, scopes, workdir):
    view = scopes.view("sandbox-a")
    os.makedirs(os.path.dirname(view))
    # Pid 1 of a new pid namespace: the pid the daemon sees for the request is another.
    r = run("unshare", "--pid", "--fork", SNAPFS, "scope", "create", "--mount", snapfs.path,
            "sandbox-a", "--view", view, "--until-pid", "1", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["error"] == "EINVAL" and codes(out) == {"refused"}, out
    assert jsnap("scope", "ls", "--mount", snapfs.path)[1]["scopes"] == []
    # From the daemon's own pid namespace, with a pid of it, the scope is created.
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        scopes.create("sandbox-a", "--until-pid", str(sleeper.pid))
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait()


# ---- the same through both libsnapfs clients -----------------------------------------------

def test_both_clients_drive_every_scope_function(client, snapfs, scopes):
    view = scopes.view("sandbox-a")
    os.makedirs(os.path.dirname(view))
    x, y = sha256_hex(CFG), sha256_hex(CFG2)
    bx = put(snapfs, CFG)[0]
    put(snapfs, CFG2)
    out = client("scope-create", "--uid", str(NOBODY_UID), "--max-bytes", "4096",
                 snapfs.path, "sandbox-a", view)
    scopes.views["sandbox-a"] = view
    assert out["scope"]["name"] == "sandbox-a" and out["scope"]["uids"] == [NOBODY_UID]
    assert out["scope"]["limits"]["max_bytes"] == 4096
    assert client("scope-create", snapfs.path, "sandbox-a", view)["error"] == "EEXIST"
    assert [s["name"] for s in client("scope-list", snapfs.path)["scopes"]] == ["sandbox-a"]
    g = client("grant", "--entry", "mcp", snapfs.path, "sandbox-a", bx)["grant"]
    assert g == grant_object(snapfs, view, x, len(CFG), None, "mcp")
    assert client("grant", snapfs.path, "sandbox-b", x)["error"] == "ENOENT"
    shown = client("scope-show", snapfs.path, "sandbox-a")
    assert shown["scope"]["grants"] == len(shown["grants"]) >= 1
    assert g in shown["grants"]
    assert client("scope-show", snapfs.path, "sandbox-b")["error"] == "ENOENT"
    vb = client("scope-binding", snapfs.path, "sandbox-a", bx)
    st = os.stat(os.path.join(view, x))
    assert vb["view"] == view and vb["binding"].endswith(
        f"dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} ino={st.st_ino}")
    assert vb["snapshot"] == {k: v for k, v in g.items() if k != "entry"}
    assert client("scope-binding", snapfs.path, "sandbox-a",
                  put(snapfs, b"not granted")[0])["error"] == "ENOENT"
    opened = client("open-entry", view, "mcp")
    assert opened["content_hex"] == CFG.hex() and opened["binding"] == vb["binding"]
    client("grant", "--entry", "mcp", snapfs.path, "sandbox-a", y)
    assert client("open-entry", view, "mcp")["content_hex"] == CFG2.hex()
    assert client("revoke", "--entry", "mcp", snapfs.path, "sandbox-a")["ok"]
    assert client("open-entry", view, "mcp")["error"] == "ENOENT"
    assert client("revoke", "--sha256", x, snapfs.path, "sandbox-a")["error"] == "ENOENT"
    raw = client("control", snapfs.path, '{"op": "scope-list"}')
    assert raw["reply"]["ok"] is True and raw["reply"]["scopes"][0]["name"] == "sandbox-a"
    raw = client("control", snapfs.path, '{"op": "scope-show", "name": "sandbox-b"}')
    assert raw["error"] == "ENOENT" and raw["reply"]["ok"] is False
    assert client("scope-remove", snapfs.path, "sandbox-a")["ok"]
    assert client("scope-remove", snapfs.path, "sandbox-a")["error"] == "ENOENT"
    wait_for(lambda: not is_mounted(view))


def test_a_request_that_is_not_one_json_object_is_einval(client, snapfs):
    out = client("control", snapfs.path, "not json")
    assert out["error"] == "EINVAL" and codes(out) == {"refused"} and out["reply"] is None
    assert client("control", snapfs.path, '{"op": "scope-list"}')["ok"]


# ---- the grammar every client command shares -----------------------------------------------

COMMANDS = {
    "scope create": lambda fs, s: ["scope", "create", "a", "--view", s.view("a")],
    "scope ls": lambda fs, s: ["scope", "ls"],
    "scope rm": lambda fs, s: ["scope", "rm", "a"],
    "grant": lambda fs, s: ["grant", "a", sha256_hex(CFG)],
    "revoke": lambda fs, s: ["revoke", "a", sha256_hex(CFG)],
}


def prepare(cmd, fs, scopes):
    """What the command needs to succeed on fs."""
    put(fs, CFG)
    if cmd != "scope create":
        scopes.create("a")
    if cmd == "revoke":
        assert snap("grant", "--mount", fs.path, "a", sha256_hex(CFG)).returncode == 0
    os.makedirs(os.path.dirname(scopes.view("a")), exist_ok=True)


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_every_scope_command_has_one_json_shape_and_the_shared_grammar(cmd, snapfs, scopes,
                                                                       workdir):
    prepare(cmd, snapfs, scopes)
    argv = COMMANDS[cmd](snapfs, scopes)
    # A directory that is no mount: refused, exit 1, EMEDIUMTYPE, the same shape.
    plain = os.path.join(workdir, "plain")
    os.mkdir(plain)
    rc, out = jsnap(*argv, "--mount", plain)
    assert rc == 1 and out["error"] == "EMEDIUMTYPE" and "not-a-mount-point" in codes(out)
    # Another trusted owner refuses this root mount; an unknown option is a usage error.
    rc, out = jsnap(*argv, "--mount", snapfs.path, "--owner", "4101")
    assert rc == 1 and out["error"] == "EMEDIUMTYPE" and codes(out) == {"owner"}
    r = snap(*argv, "--mount", snapfs.path, "--bogus", "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"] == "usage"
    r = snap(*argv, env=dict(os.environ, SNAPFS_MOUNT=snapfs.path, SNAPFS_OWNER="any"))
    assert r.returncode == 2 and "SNAPFS_OWNER: invalid uid 'any'" in r.stderr
    # $SNAPFS_MOUNT with a trailing slash names the mount; the command does its work.
    rc, out = jsnap(*argv, env=dict(os.environ, SNAPFS_MOUNT=snapfs.path + "/",
                                    SNAPFS_OWNER="0"))
    assert rc == 0 and out["mount"] == snapfs.path, out
