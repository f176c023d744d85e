# SPDX-License-Identifier: MIT
"""Waiting for an entry of a scope's view to move (docs/design.md, "Waiting for an entry to
move"), on the real daemon: snapfs wait, libsnapfs's watch descriptor through the Python
client, woken by real rotations (snapfs grant --as) and removals; the timeout beside the
wake, another scope's waiter left asleep, and the watch refused to whom the view refuses the
entry, each by its exact errno.

A waiter is shown asleep in poll(2) (its /proc wchan) before the entry moves, so what wakes
it is the daemon's poll notice, not the state it finds on its first poll. Nothing here times
anything: the wake latency is measured apart (docs/design.md)."""
import json
import os
import select
import stat
import subprocess
import sys

import pytest

from clients import APICLIENT, CLIENTS, LIBSNAPFS, PYCLIENT, client_env
from snaptest import (E, NOBODY_UID, SNAPFS, UID_PRELUDE, as_uid, errno_of, is_mounted, jsnap,
                      sha256_hex, snap, wait_for)

CFG = b'{"token": "one"}\n'
CFG2 = b'{"token": "two"}\n'
CFG3 = b'{"token": "three"}\n'


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    for tool in (APICLIENT, LIBSNAPFS, PYCLIENT, SNAPFS):
        assert tool.exists(), f"build first: {tool} missing"


class Scopes:
    """The scopes a test creates, removed at the end with their views unmounted."""

    def __init__(self, fs, workdir):
        self.fs, self.workdir, self.views = fs, workdir, {}

    def create(self, name, *opts):
        view = os.path.join(self.workdir, "views", name)
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


def publish(fs, *datas):
    for data in datas:
        r = snap("put", "--mount", fs.path, "-", input=data.decode())
        assert r.returncode == 0, r.stderr
    return [sha256_hex(d) for d in datas]


def grant(fs, scope, digest, entry):
    r = snap("grant", "--mount", fs.path, scope, digest, "--as", entry)
    assert r.returncode == 0, r.stdout + r.stderr


def asleep_in_poll(pid):
    """Whether pid's main thread sleeps in poll(2) itself: its FUSE_POLL answered and the
    daemon holding its poll handle (not waiting for a reply of the daemon)."""
    with open(f"/proc/{pid}/wchan") as f:
        wchan = f.read()
    with open(f"/proc/{pid}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    return state == "S" and "poll" in wchan and "fuse" not in wchan


def entry_content(view, entry="mcp"):
    r = snap("exec", "--mount", view, "--entry", entry, "--", "cat", "{}")
    assert r.returncode == 0, r.stderr
    return r.stdout.encode()


def start_wait(view, *opts, uid=None):
    argv = [str(SNAPFS), "wait", "--mount", view, "--entry", "mcp", *opts]
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p):
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


# ---- snapfs wait ----------------------------------------------------------------------------

def test_wait_returns_the_new_binding_when_a_rotation_wakes_it(snapfs, scopes):
    view = scopes.create("sandbox-a")
    x, y = publish(snapfs, CFG, CFG2)
    grant(snapfs, "sandbox-a", x, "mcp")
    # No limit: only the daemon's notice can end this wait.
    p = start_wait(view)
    try:
        wait_for(lambda: asleep_in_poll(p.pid), "snapfs wait asleep in poll")
        grant(snapfs, "sandbox-a", y, "mcp")
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc == 0, err
    st = os.stat(os.path.join(view, "mcp"))
    assert out == (f"sha256={y} size={len(CFG2)} dev={os.major(st.st_dev)}:"
                   f"{os.minor(st.st_dev)} ino={st.st_ino}\n")
    assert entry_content(view) == CFG2


def test_wait_json_is_the_one_snapshot_object_beside_the_entry(snapfs, scopes):
    view = scopes.create("sandbox-a")
    x, y = publish(snapfs, CFG, CFG2)
    grant(snapfs, "sandbox-a", x, "mcp")
    p = start_wait(view, "--json", "--timeout", "10m")
    try:
        wait_for(lambda: asleep_in_poll(p.pid), "snapfs wait asleep in poll")
        grant(snapfs, "sandbox-a", y, "mcp")
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    o = json.loads(out)
    assert rc == 0 and o["ok"] is True, (out, err)
    assert list(o)[:4] == ["ok", "error", "message", "reasons"]
    assert o["entry"] == "mcp" and o["mount"] == view
    assert o["snapshot"]["sha256"] == y and o["snapshot"]["size"] == len(CFG2)
    assert o["binding"] == o["snapshot"]["binding"]
    assert set(o["snapshot"]) == {"sha256", "size", "dev", "ino", "name", "published",
                                  "publisher", "binding"}


def test_wait_times_out_with_exit_1_and_leaves_the_entry_as_it_was(snapfs, scopes):
    view = scopes.create("sandbox-a")
    (x,) = publish(snapfs, CFG)
    grant(snapfs, "sandbox-a", x, "mcp")
    rc, o = jsnap("wait", "--mount", view, "--entry", "mcp", "--timeout", "1")
    assert rc == 1 and o["error"] == "ETIMEDOUT" and o["binding"] is None
    assert [r["code"] for r in o["reasons"]] == ["timeout"]
    r = snap("wait", "--mount", view, "--entry", "mcp", "--timeout", "0")
    assert r.returncode == 1 and "timeout: mcp did not move within 0 ms" in r.stdout
    # Untouched: the same snapshot under the entry, still readable.
    assert entry_content(view) == CFG


def test_wait_for_a_removed_entry_exits_1_removed(snapfs, scopes):
    view = scopes.create("sandbox-a")
    (x,) = publish(snapfs, CFG)
    grant(snapfs, "sandbox-a", x, "mcp")
    p = start_wait(view, "--json")
    try:
        wait_for(lambda: asleep_in_poll(p.pid), "snapfs wait asleep in poll")
        r = snap("revoke", "--mount", snapfs.path, "sandbox-a", "mcp")
        assert r.returncode == 0, r.stderr
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    o = json.loads(out)
    assert rc == 1 and o["error"] == "ENOENT", (out, err)
    assert [r["code"] for r in o["reasons"]] == ["removed"]


def test_wait_usage_errors_exit_2_and_an_absent_entry_is_enoent(snapfs, scopes):
    view = scopes.create("sandbox-a")
    (x,) = publish(snapfs, CFG)
    grant(snapfs, "sandbox-a", x, "mcp")
    assert snap("wait", "--mount", view).returncode == 2
    assert snap("wait", "--mount", view, "--entry", "mcp", "--timeout", "soon").returncode == 2
    assert snap("wait", "--mount", view, "--entry", "mcp", "extra").returncode == 2
    # The grammar of entries: a digest never moves, a path is no entry.
    for bad in (x, "../mcp", ".watch.mcp"):
        rc, o = jsnap("wait", "--mount", view, "--entry", bad, "--timeout", "0")
        assert rc == 1 and o["error"] == "EINVAL", (bad, o)
    rc, o = jsnap("wait", "--mount", view, "--entry", "absent", "--timeout", "0")
    assert rc == 1 and o["error"] == "ENOENT"
    # Beside them, the entry that exists waits (and times out: nothing moved it).
    rc, o = jsnap("wait", "--mount", view, "--entry", "mcp", "--timeout", "0")
    assert rc == 1 and o["error"] == "ETIMEDOUT"


# ---- the descriptor (libsnapfs through the Python client) ------------------------------------

WATCHER = """
import os, select, sys
sys.path.insert(0, {pkg!r})
import snapfs_client as snapfs
w = snapfs.watch_entry({view!r}, "mcp")
assert w.wait(timeout=0) is False
print("watching", flush=True)
p = select.poll()
p.register(w, select.POLLIN | select.POLLPRI)
events = p.poll()
print(" ".join(str(e) for _, e in events), flush=True)
fd, b = snapfs.open_entry({view!r}, "mcp")
print(b.sha256, os.pread(fd, 4096, 0).decode(), end="", flush=True)
"""


def start_watcher(view, uid=None):
    argv = ["/usr/bin/python3", "-c", WATCHER.format(pkg=str(PYCLIENT.parent), view=view)]
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    p = subprocess.Popen(argv, env=client_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    assert line == "watching\n", line + p.stderr.read()
    return p


def test_the_watch_descriptor_polls_readable_when_a_rotation_wakes_it(snapfs, scopes):
    view = scopes.create("sandbox-a", "--uid", str(NOBODY_UID))
    x, y = publish(snapfs, CFG, CFG2)
    grant(snapfs, "sandbox-a", x, "mcp")
    p = start_watcher(view, uid=NOBODY_UID)
    try:
        wait_for(lambda: asleep_in_poll(p.pid), "the watcher asleep in poll")
        grant(snapfs, "sandbox-a", y, "mcp")
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc == 0, err
    events, rest = out.split("\n", 1)
    assert int(events) == select.POLLIN | select.POLLPRI
    assert rest == f"{y} {CFG2.decode()}"


def test_a_waiter_of_another_scope_is_not_woken_by_this_scopes_rotation(snapfs, scopes):
    view_a = scopes.create("sandbox-a")
    view_b = scopes.create("sandbox-b")
    x, y, z = publish(snapfs, CFG, CFG2, CFG3)
    grant(snapfs, "sandbox-a", x, "mcp")
    grant(snapfs, "sandbox-b", x, "mcp")
    a, b = start_watcher(view_a), start_watcher(view_b)
    try:
        wait_for(lambda: asleep_in_poll(a.pid) and asleep_in_poll(b.pid), "both asleep")
        # A's entry moves: A's waiter wakes; B's, on an entry of the same name and digest in
        # another scope, sleeps on (the notice went out before the grant's reply).
        grant(snapfs, "sandbox-a", y, "mcp")
        rc, out, err = finish(a)
        assert rc == 0 and out.split("\n", 1)[1] == f"{y} {CFG2.decode()}", err
        assert b.poll() is None and asleep_in_poll(b.pid)
        with open(os.path.join(view_b, ".watch.mcp"), "rb") as f:
            poller = select.poll()
            poller.register(f, select.POLLIN | select.POLLPRI)
            assert poller.poll(0) == []
        # Its own scope's rotation wakes it.
        grant(snapfs, "sandbox-b", z, "mcp")
        rc, out, err = finish(b)
        assert rc == 0 and out.split("\n", 1)[1] == f"{z} {CFG3.decode()}", err
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_wait_entry_returns_the_new_snapshot_and_a_removal_hangs_up(snapfs, scopes):
    view = scopes.create("sandbox-a")
    x, y = publish(snapfs, CFG, CFG2)
    grant(snapfs, "sandbox-a", x, "mcp")
    code = f"""
import errno, os, select, sys
sys.path.insert(0, {str(PYCLIENT.parent)!r})
import snapfs_client as snapfs
try:
    snapfs.wait_entry({view!r}, "mcp", timeout=0)
    raise SystemExit("did not time out")
except snapfs.SnapfsError as e:
    assert e.errno == errno.ETIMEDOUT and e.finding == "timeout", e
w = snapfs.watch_entry({view!r}, "mcp")
print("watching", flush=True)
sys.stdin.readline()
# Moved before this poll: readable at once, from the watch's own state.
p = select.poll()
p.register(w, select.POLLIN | select.POLLPRI)
assert p.poll(0) == [(w, select.POLLIN | select.POLLPRI)], p.poll(0)
assert w.wait(timeout=0) is True
w.close()
w = snapfs.watch_entry({view!r}, "mcp")
print("watching", flush=True)
sys.stdin.readline()
p = select.poll()
p.register(w, select.POLLIN | select.POLLPRI)
assert p.poll(0) == [(w, select.POLLIN | select.POLLPRI | select.POLLHUP)], p.poll(0)
try:
    snapfs.watch_entry({view!r}, "mcp")
    raise SystemExit("watched an absent entry")
except snapfs.SnapfsError as e:
    assert e.errno == errno.ENOENT, e
print("ok")
"""
    p = subprocess.Popen(["/usr/bin/python3", "-c", code], env=client_env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline() == "watching\n", p.stderr.read()
        grant(snapfs, "sandbox-a", y, "mcp")
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline() == "watching\n", p.stderr.read()
        assert snap("revoke", "--mount", snapfs.path, "sandbox-a", "mcp").returncode == 0
        p.stdin.write("\n")
        p.stdin.flush()
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc == 0 and out == "ok\n", err


# ---- both clients: libsnapfs's snapfs_wait_entry from C, and the Python client's wait_entry --

@pytest.mark.parametrize("client", ["c", "python"])
def test_each_client_waits_for_a_rotation_and_times_out_without_one(snapfs, scopes, client):
    view = scopes.create("sandbox-a")
    x, y = publish(snapfs, CFG, CFG2)
    grant(snapfs, "sandbox-a", x, "mcp")
    argv = [*CLIENTS[client], "wait-entry"]
    r = subprocess.run([*argv, "--timeout", "0", view, "mcp"], capture_output=True, text=True,
                       timeout=60, env=client_env())
    o = json.loads(r.stdout)
    assert r.returncode == 1 and o["error"] == "ETIMEDOUT", r.stdout + r.stderr
    assert [x["code"] for x in o["reasons"]] == ["timeout"]
    p = subprocess.Popen([*argv, view, "mcp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=client_env())
    try:
        wait_for(lambda: asleep_in_poll(p.pid), f"the {client} client asleep in poll")
        grant(snapfs, "sandbox-a", y, "mcp")
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    o = json.loads(out)
    assert rc == 0 and o["ok"] is True, out + err
    assert o["snapshot"]["sha256"] == y and bytes.fromhex(o["content_hex"]) == CFG2


# ---- who may watch -------------------------------------------------------------------------

def test_a_watch_is_refused_to_whom_the_view_refuses_the_entry(snapfs, scopes):
    view = scopes.create("sandbox-a", "--uid", str(NOBODY_UID))
    (x,) = publish(snapfs, CFG)
    grant(snapfs, "sandbox-a", x, "mcp")
    code = UID_PRELUDE + r"""
import select
w = os.path.join(mnt, ".watch.mcp")
print(refused(os.open, os.path.join(mnt, "mcp"), os.O_RDONLY), refused(os.open, w, os.O_RDONLY))
"""
    # Another uid: refused the watch exactly as the entry (EACCES)...
    r = as_uid(NOBODY_UID + 1, code, view)
    assert r.stdout.split() == [str(E.EACCES), str(E.EACCES)]
    # ... which the uid the view admits opens, and polls: not moved.
    allowed = UID_PRELUDE + r"""
import select
fd = os.open(os.path.join(mnt, ".watch.mcp"), os.O_RDONLY)
st = os.fstat(fd)
assert stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_nlink == 1, st
assert os.read(fd, 10) == b""
p = select.poll()
p.register(fd, select.POLLIN | select.POLLPRI)
print(p.poll(0), refused(os.open, os.path.join(mnt, ".watch.absent"), os.O_RDONLY),
      refused(os.open, os.path.join(mnt, ".watch." + sys.argv[2]), os.O_RDONLY),
      refused(os.open, os.path.join(mnt, ".watch.mcp"), os.O_WRONLY))
"""
    r = as_uid(NOBODY_UID, allowed, view, x)
    # An absent entry, or a digest (which never moves), has no watch: ENOENT as for the name;
    # the view is read-only.
    assert r.stdout.split() == ["[]", str(E.ENOENT), str(E.ENOENT), str(E.EROFS)]
    # Never listed: the view lists its grants alone.
    assert sorted(os.listdir(view)) == sorted([x, "mcp"])
    assert errno_of(os.open, os.path.join(view, ".watch.mcp"), os.O_RDONLY | os.O_DIRECTORY) \
        == E.ENOTDIR


def test_the_main_mount_has_no_watches(snapfs):
    (x,) = publish(snapfs, CFG)
    assert errno_of(os.open, os.path.join(snapfs.path, ".watch.mcp"), os.O_RDONLY) == E.ENOENT
    # Beside it, the snapshot itself opens.
    fd = os.open(os.path.join(snapfs.path, x), os.O_RDONLY)
    try:
        assert os.pread(fd, 100, 0) == CFG
    finally:
        os.close(fd)


def test_a_scope_removed_wakes_its_waiters_with_removed(snapfs, scopes):
    view = scopes.create("sandbox-a")
    (x,) = publish(snapfs, CFG)
    grant(snapfs, "sandbox-a", x, "mcp")
    p = start_wait(view, "--json")
    try:
        wait_for(lambda: asleep_in_poll(p.pid), "snapfs wait asleep in poll")
        assert snap("scope", "rm", "--mount", snapfs.path, "sandbox-a").returncode == 0
        rc, out, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    o = json.loads(out)
    # Woken by the removal; what it then opens is no longer there (the view is detached).
    assert rc == 1 and o["ok"] is False and o["binding"] is None, (out, err)
    assert o["error"] in ("ENOENT", "EMEDIUMTYPE"), o


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
