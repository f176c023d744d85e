# SPDX-License-Identifier: MIT
"""Two sandboxes of the same uid, each a bubblewrap sandbox with only its own scope's view
bound in, read-only, at the same path: the deployment docs/deployment.md recommends (one
daemon, one scope per sandbox).

Sandbox B tries every route it has to A's snapshots (listing, lookup and open by digest,
xattrs of the root and of the digest, statfs and usage figures, /proc/self/mountinfo, A's
view's host path, `snapfs ls`, `snapfs verify` with A's own binding, the Python client,
publishing A's bytes to see whether the daemon knew them) and learns nothing: each route for
A's digest answers exactly what it answers for a digest nobody published, beside B's own
snapshot, which every route serves. Meanwhile A's real MCP client (tests/mcp: the MCP
Inspector CLI and server-filesystem) gets its config through `snapfs exec --entry` in A's
view, and B's, through the same path and the same entry name, gets B's.

The sandboxes are started by root and drop to the shared uid inside (setpriv), so the daemon
sees that uid on every request, as it would for two containers of one unprivileged user."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from clients import LIBSNAPFS, PYCLIENT, client_env
from snaptest import (BUILD, NOBODY_UID, ROOT, SNAPFS, control_ok, is_mounted, run, sha256_hex,
                      wait_for)

MCP = ROOT / "tests" / "mcp"
INSPECTOR = MCP / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / \
    "cli.js"
SERVER = MCP / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / \
    "index.js"
VIEW = "/run/snapfs"  # where every sandbox finds its own view
UID = NOBODY_UID      # both sandboxes run as this one uid
TIMEOUT = 120         # one sandbox run: seconds here, never a hang


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    assert shutil.which("bwrap"), "bwrap missing: scripts/deps.sh installs bubblewrap"
    assert shutil.which("node"), "node missing: scripts/deps.sh installs nodejs"
    for f in (INSPECTOR, SERVER):
        assert f.exists(), f"{f} missing: scripts/deps.sh runs npm ci in tests/mcp"
    for f in (SNAPFS, LIBSNAPFS):
        assert f.exists(), f"build first: {f} missing"


def _dirs_to(path):
    """bwrap makes the missing parents of a bind 0700; --dir makes them 0755, so the
    sandbox's uid can walk to the tree bound there."""
    out = []
    for parent in reversed(pathlib.PurePath(path).parents):
        if str(parent) != "/":
            out += ["--dir", str(parent)]
    return out


def sandbox_argv(view, *cmd, binds=(), writable=False):
    """A bubblewrap sandbox of its own pid, ipc, uts and network namespaces with only `view`
    (one scope's view) bound at VIEW (read-only, unless writable: a publishing scope's view
    is bound read-write for its .staging/), the source tree and build read-only, and a
    private /tmp; cmd runs in it as UID."""
    argv = ["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc", "/etc",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    trees = [str(ROOT)]
    if not str(BUILD).startswith(str(ROOT) + "/"):
        trees.append(str(BUILD))
    for tree in [*trees, *binds]:
        argv += [*_dirs_to(tree), "--ro-bind", tree, tree]
    argv += [*_dirs_to(VIEW), "--bind" if writable else "--ro-bind", view, VIEW]
    env = client_env()
    for key in ("SNAPFS_LIBRARY", "LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if key in env:
            argv += ["--setenv", key, env[key]]
    argv += ["--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin:/bin",
             "--", "setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups", *cmd]
    return argv


def in_sandbox(view, *cmd, binds=(), writable=False):
    r = run(*sandbox_argv(view, *cmd, binds=binds, writable=writable), timeout=TIMEOUT)
    assert r.returncode == 0, f"sandbox run failed ({r.returncode}):\n{r.stdout}{r.stderr}"
    return r.stdout


def mcp_config(data_dir, token):
    return json.dumps({"mcpServers": {"fs": {
        "command": "node", "args": [str(SERVER), data_dir],
        "env": {"API_TOKEN": token}}}}).encode()


class Sandboxes:
    """Scope A and scope B on one daemon, both for UID; each with its MCP config under the
    entry mcp.json. A also has a second snapshot (larger), so its figures differ from B's; B
    publishes (its view has a .staging/), A does not."""

    def __init__(self, fs, workdir):
        self.fs, self.workdir = fs, workdir
        views = os.path.join(workdir, "views")
        os.makedirs(views)
        self.data = {}
        for name in ("a", "b"):
            d = os.path.join(workdir, f"data-{name}")
            os.mkdir(d)
            with open(os.path.join(d, "notes.txt"), "w") as f:
                f.write(f"sandbox {name}'s notes\n")
            self.data[name] = d
        self.token_a = "token-of-sandbox-a-" + os.urandom(8).hex()
        self.cfg_a = mcp_config(self.data["a"], self.token_a)
        self.cfg_b = mcp_config(self.data["b"], "token-of-sandbox-b")
        self.extra_a = b"A's second secret " * 200
        self.a = fs.publish(self.cfg_a, "a.json")
        self.extra = fs.publish(self.extra_a, "a-extra")
        self.b = fs.publish(self.cfg_b, "b.json")
        self.view_a = self.create("sandbox-a", publish=False)
        self.view_b = self.create("sandbox-b", publish=True)
        for scope, digest, entry in (("sandbox-a", self.a, "mcp.json"),
                                     ("sandbox-a", self.extra, None),
                                     ("sandbox-b", self.b, "mcp.json")):
            req = {"op": "grant", "scope": scope, "sha256": digest}
            if entry:
                req["entry"] = entry
            control_ok(fs.path, req)
        # A's binding as A's own client sees it in A's view: what B might have got hold of.
        r = run(SNAPFS, "exec", "--mount", self.view_a, "--entry", "mcp.json", "--", "sh",
                "-c", 'printf %s "$SNAPFS_BINDING"')
        assert r.returncode == 0, r.stderr
        self.binding_a = r.stdout
        assert f"sha256={self.a} " in self.binding_a

    def create(self, name, publish):
        view = os.path.join(self.workdir, "views", name)
        s = control_ok(self.fs.path, {"op": "scope-create", "name": name, "view": view,
                                      "uids": [UID], "publish": publish})["scope"]
        assert s["uids"] == [UID]
        return view

    def remove(self):
        for name in ("sandbox-a", "sandbox-b"):
            control_ok(self.fs.path, {"op": "scope-remove", "name": name})


@pytest.fixture
def sandboxes(snapfs, workdir):
    s = Sandboxes(snapfs, workdir)
    yield s
    s.remove()


# What a sandbox learns of one digest, by every route its view offers; run as UID inside it.
# argv: the digests to ask about (as "label=digest"), then a binding's text to verify.
PROBE = r'''
import errno, json, os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.environ["PYCLIENT"]))
import snapfs_client as snapfs
VIEW, SNAPFS = "/run/snapfs", os.environ["SNAPFS"]

def outcome(fn, *a):
    try:
        r = fn(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
    return "ok"

def opened(path):
    with open(path, "rb") as f:
        return f.read()

def py_open(digest):
    fd, _ = snapfs.open_digest(VIEW, digest)
    os.close(fd)

def py_entry_digest():
    fd, b = snapfs.open_entry(VIEW, "mcp.json")
    os.close(fd)
    return b.sha256

def cli(sub, *args):
    r = subprocess.run([SNAPFS, sub, "--json", *args], capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout)

out = {"listing": sorted(os.listdir(VIEW)), "routes": {}}
for arg in sys.argv[1:-1]:
    label, digest = arg.split("=")
    path = f"{VIEW}/{digest}"
    v = cli("verify", "--mount", VIEW, "--", digest)
    out["routes"][label] = {
        "stat": outcome(os.stat, path),
        "lstat": outcome(os.lstat, path),
        "open": outcome(opened, path),
        "getxattr": outcome(os.getxattr, path, "user.snapfs.sha256"),
        "listxattr": outcome(os.listxattr, path),
        "python-open-digest": outcome(py_open, digest),
        "cli-verify-digest": v["error"],
    }
root_xattrs = {n: os.getxattr(VIEW, n).decode() for n in os.listxattr(VIEW)}
st = os.statvfs(VIEW)
with open("/proc/self/mountinfo") as f:
    mountinfo = f.read()
v = cli("verify", "--mount", VIEW, sys.argv[-1])
fd, own = snapfs.open_entry(VIEW, "mcp.json")
os.close(fd)
try:
    snapfs.read_verified(VIEW, sys.argv[-1])
    python_verify = "ok"
except OSError as e:
    python_verify = errno.errorcode[e.errno]
out.update({
    "root_xattrs": root_xattrs,
    "statvfs": [st.f_bsize, st.f_blocks, st.f_bfree, st.f_bavail, st.f_files, st.f_ffree],
    "mountinfo": mountinfo,
    "ls": sorted(e["sha256"] for e in cli("ls", "--mount", VIEW)["snapshots"]),
    "verify-binding": [v["ok"], v["error"]],
    "python-verify-binding": python_verify,
    "entry-digest": own.sha256,
    "entry-bytes": opened(f"{VIEW}/mcp.json").decode(),
})
print(json.dumps(out))
'''


def probe(s, view, *labelled, binding):
    argv = sandbox_argv(view, "/usr/bin/python3", "-c", PROBE,
                        *[f"{label}={d}" for label, d in labelled], binding)
    # The probe finds the CLI and the Python client through the environment bwrap sets.
    i = argv.index("--")
    argv[i:i] = ["--setenv", "SNAPFS", str(SNAPFS), "--setenv", "PYCLIENT", str(PYCLIENT)]
    r = run(*argv, timeout=TIMEOUT)
    assert r.returncode == 0, f"probe failed:\n{r.stdout}{r.stderr}"
    return json.loads(r.stdout)


def test_sandbox_b_learns_nothing_of_sandbox_as_snapshots_by_any_route(sandboxes):
    s = sandboxes
    never = sha256_hex(os.urandom(32))  # a digest nobody published
    b_binding = run(SNAPFS, "exec", "--mount", s.view_b, "--entry", "mcp.json", "--", "sh",
                    "-c", 'printf %s "$SNAPFS_BINDING"').stdout
    seen = probe(s, s.view_b, ("a", s.a), ("a-extra", s.extra), ("never", never),
                 ("own", s.b), binding=s.binding_a)

    # The allowance: B's own snapshot by every route, and its own entry, in its own view.
    assert seen["listing"] == sorted([".staging", s.b, "mcp.json"])
    assert seen["ls"] == [s.b]
    own = seen["routes"]["own"]
    assert set(own.values()) == {"ok", None}, own  # None: verify's "error" when it passed
    assert (seen["entry-digest"], seen["entry-bytes"]) == (s.b, s.cfg_b.decode())

    # A's digests, guessed or known: exactly what a digest nobody published gets, ENOENT.
    nothing = seen["routes"]["never"]
    assert {k: v for k, v in nothing.items() if k != "cli-verify-digest"} == dict.fromkeys(
        ["stat", "lstat", "open", "getxattr", "listxattr", "python-open-digest"], "ENOENT")
    assert seen["routes"]["a"] == nothing and seen["routes"]["a-extra"] == nothing

    # A's binding, as A's client got it: refused in B's view (it names another mount), and
    # B's own binding is what B verifies.
    assert seen["verify-binding"] == [False, "ENOENT"]
    assert seen["python-verify-binding"] == "ENOENT"
    assert probe_binding_errors(s, s.binding_a.replace(s.a, never)) == ("ENOENT", "ENOENT")
    assert run(SNAPFS, "verify", "--mount", s.view_b, b_binding).returncode == 0

    # The root's xattrs and statfs speak of B alone.
    assert seen["root_xattrs"]["user.snapfs.scope"] == "sandbox-b"
    usage = seen["root_xattrs"]["user.snapfs.usage"]
    assert "scope=sandbox-b " in usage and "sandbox-a" not in usage
    assert s.a not in json.dumps(seen["root_xattrs"])

    # Its mount table: one snapfs mount, its own view at VIEW with B's device number; neither
    # A's device number nor A's scope name nor where A's view lives on the host.
    scopes = {x["name"]: x for x in control_ok(s.fs.path, {"op": "scope-list"})["scopes"]}
    snapfs_lines = [ln for ln in seen["mountinfo"].splitlines() if " - fuse.snapfs " in ln]
    assert len(snapfs_lines) == 1 and snapfs_lines[0].split()[4] == VIEW, snapfs_lines
    assert snapfs_lines[0].split()[2] == scopes["sandbox-b"]["dev"]
    assert scopes["sandbox-a"]["dev"] != scopes["sandbox-b"]["dev"]
    for secret in ("sandbox-a", s.view_a, s.token_a, s.a):
        assert secret not in seen["mountinfo"]

    # Nothing B saw carries A's token.
    assert s.token_a not in json.dumps(seen)

    # The same routes in A's sandbox serve A's snapshot and A's binding, and know nothing of
    # B's: what refused B above is the scope, not the route.
    mine = probe(s, s.view_a, ("a", s.a), ("b", s.b), binding=s.binding_a)
    assert set(mine["routes"]["a"].values()) == {"ok", None}, mine["routes"]["a"]
    assert mine["routes"]["b"] == nothing
    assert (mine["verify-binding"], mine["python-verify-binding"]) == ([True, None], "ok")
    assert mine["listing"] == sorted([s.a, s.extra, "mcp.json"])
    assert mine["root_xattrs"]["user.snapfs.scope"] == "sandbox-a"


def probe_binding_errors(s, binding):
    """(CLI verify errno, Python verify errno) in B's sandbox for a binding of A's mount whose
    digest nobody published: the yardstick A's real binding is held to."""
    seen = probe(s, s.view_b, binding=binding)
    return seen["verify-binding"][1], seen["python-verify-binding"]


def test_sandbox_bs_figures_do_not_move_when_sandbox_a_changes(sandboxes):
    s = sandboxes
    before_b = probe(s, s.view_b, binding=s.binding_a)
    before_a = probe(s, s.view_a, binding=s.binding_a)
    # A gets a third snapshot, held by no uid: A's figures move, B's stay as they were.
    more = s.fs.publish(b"more for A " * 300, "more")
    control_ok(s.fs.path, {"op": "grant", "scope": "sandbox-a", "sha256": more})
    after_b = probe(s, s.view_b, binding=s.binding_a)
    after_a = probe(s, s.view_a, binding=s.binding_a)
    assert after_a["listing"] == sorted([s.a, s.extra, more, "mcp.json"])
    assert after_a["root_xattrs"]["user.snapfs.usage"] != \
        before_a["root_xattrs"]["user.snapfs.usage"]
    for key in ("listing", "root_xattrs", "statvfs", "ls"):
        assert after_b[key] == before_b[key], key


PUBLISH = r'''
import errno, hashlib, os, sys
view, name, data = "/run/snapfs", sys.argv[1], sys.argv[2].encode()
with open(f"{view}/.staging/{name}", "wb") as f:
    f.write(data)
try:
    os.rename(f"{view}/.staging/{name}", f"{view}/{hashlib.sha256(data).hexdigest()}")
    print("ok")
except OSError as e:
    os.unlink(f"{view}/.staging/{name}")
    print(errno.errorcode[e.errno])
'''


def test_publishing_as_bytes_in_b_tells_b_nothing_its_own_again_is_eexist(sandboxes):
    s = sandboxes
    # B guesses A's config byte for byte and publishes it: answered as new content is.
    assert in_sandbox(s.view_b, "/usr/bin/python3", "-c", PUBLISH, "guess",
                      s.cfg_a.decode(), writable=True).split() == ["ok"]
    assert in_sandbox(s.view_b, "/usr/bin/python3", "-c", PUBLISH, "new",
                      "bytes nobody had", writable=True).split() == ["ok"]
    # What B already has is EEXIST: the one answer that differs is about B's own scope.
    assert in_sandbox(s.view_b, "/usr/bin/python3", "-c", PUBLISH, "again",
                      s.cfg_b.decode(), writable=True).split() == ["EEXIST"]
    # A's view is unchanged by it, and B now has the bytes it published, under its own record.
    assert sorted(os.listdir(s.view_a)) == sorted([s.a, s.extra, "mcp.json"])
    st = os.stat(os.path.join(s.view_b, s.a))
    assert (st.st_uid, st.st_size) == (UID, len(s.cfg_a))
    assert os.getxattr(os.path.join(s.view_b, s.a), "user.snapfs.name") == b"guess"


def mcp_exec_argv():
    return [str(SNAPFS), "exec", "--mount", VIEW, "--entry", "mcp.json", "--",
            "node", str(INSPECTOR), "--cli", "--config", "{}", "--server", "fs",
            "--method", "tools/call", "--tool-name", "list_allowed_directories"]


def allowed(stdout):
    return json.loads(stdout)["content"][0]["text"]


def test_each_sandboxs_mcp_client_gets_its_own_config_through_the_same_entry(sandboxes):
    s = sandboxes
    # The same command at the same path in both: each client starts the server its own
    # scope's config names, on its own data directory (bound in both, so only the config
    # decides which one the server gets).
    binds = (s.data["a"], s.data["b"])
    out_a = in_sandbox(s.view_a, *mcp_exec_argv(), binds=binds)
    out_b = in_sandbox(s.view_b, *mcp_exec_argv(), binds=binds)
    assert allowed(out_a) == f"Allowed directories:\n{s.data['a']}"
    assert allowed(out_b) == f"Allowed directories:\n{s.data['b']}"
    # The entry A's client read was verified against its digest: a moved entry hands over
    # the new config to the next client start, and B's stays.
    moved = mcp_config(s.data["b"], s.token_a)
    control_ok(s.fs.path, {"op": "grant", "scope": "sandbox-a",
                           "sha256": s.fs.publish(moved, "moved"), "entry": "mcp.json"})
    assert allowed(in_sandbox(s.view_a, *mcp_exec_argv(), binds=binds)) == \
        f"Allowed directories:\n{s.data['b']}"


def test_a_scope_tied_to_its_sandbox_goes_when_the_sandbox_exits(snapfs, workdir):
    # The runtime's order: start the sandbox's process held at a gate, tie a scope to its
    # pid, grant, open the gate (the process execs bwrap: the same pid), and the sandbox
    # reads its config. The scope outlives nothing: the sandbox's exit removes it.
    digest = snapfs.publish(b"config of a short-lived sandbox", "short")
    views = os.path.join(workdir, "views")
    os.makedirs(views)
    view = os.path.join(views, "short-lived")
    inner = "cat /run/snapfs/cfg; echo; cat >/dev/null"
    gate = subprocess.Popen(
        ["sh", "-c", 'read go && exec "$@"', "sh",
         *sandbox_argv(view, "sh", "-c", inner)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        s = control_ok(snapfs.path, {"op": "scope-create", "name": "short-lived", "view": view,
                                     "uids": [UID], "until_pid": gate.pid,
                                     "client_pid": os.getpid()})["scope"]
        assert s["until_pid"] == gate.pid
        control_ok(snapfs.path, {"op": "grant", "scope": "short-lived", "sha256": digest,
                                 "entry": "cfg"})
        gate.stdin.write("go\n")
        gate.stdin.flush()
        # While the sandbox runs, its scope is there and the sandbox reads through it.
        assert gate.stdout.readline() == "config of a short-lived sandbox\n", \
            gate.stderr.read()
        assert [x["name"] for x in control_ok(snapfs.path, {"op": "scope-list"})["scopes"]] \
            == ["short-lived"]
        gate.stdin.close()  # the sandbox's shell reads end of file and exits
        assert gate.wait(TIMEOUT) == 0, gate.stderr.read()
    finally:
        if gate.poll() is None:
            gate.kill()
            gate.wait()
        gate.stdout.close()
        gate.stderr.close()
    wait_for(lambda: control_ok(snapfs.path, {"op": "scope-list"})["scopes"] == [],
             "the scope to go with its sandbox")
    assert not is_mounted(view) and not os.path.exists(view)
    # The snapshot itself is held on the main mount and stays.
    with open(snapfs.p(digest), "rb") as f:
        assert f.read() == b"config of a short-lived sandbox"
