# SPDX-License-Identifier: MIT
"""MCP config delivery end to end, with real parts: a real snapfs mount, a config that starts
the real @modelcontextprotocol/server-filesystem, and the real MCP Inspector in CLI mode as the
client, started by `snapfs exec` with the verified descriptor as --config /proc/self/fd/3.
Then the tamper recipe on the snapshot, a binding whose digest does not match, and the same
delivery inside a bubblewrap sandbox whose seccomp filter makes memfd_create fail with EPERM.

The npm packages are pinned by tests/mcp/package-lock.json and installed by scripts/deps.sh;
a missing one fails these tests (never skips them). Every subprocess has a timeout."""
import errno
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from snaptest import BUILD, NOBODY_UID, ROOT, SNAPFS, E, as_uid, errno_of, run, sha256_hex

MCP = ROOT / "tests" / "mcp"
INSPECTOR = MCP / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / \
    "cli.js"
SERVER = MCP / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / \
    "index.js"
DENYSYS = BUILD / "tests" / "helpers" / "denysys"
NODE_TIMEOUT = 120  # seconds for one client run: a few seconds here, never a hang


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    assert shutil.which("node"), "node missing: scripts/deps.sh installs nodejs"
    for f in (INSPECTOR, SERVER):
        assert f.exists(), f"{f} missing: scripts/deps.sh runs npm ci in tests/mcp"
    assert shutil.which("bwrap"), "bwrap missing: scripts/deps.sh installs bubblewrap"
    assert DENYSYS.exists(), f"build first: {DENYSYS} missing"


class Delivery:
    """A published MCP config that starts the filesystem server on a directory of its own."""

    def __init__(self, fs, workdir):
        self.fs = fs
        self.data = os.path.join(workdir, "data")
        os.mkdir(self.data)
        with open(os.path.join(self.data, "notes.txt"), "w") as f:
            f.write("hello from the data directory\n")
        self.config = json.dumps({"mcpServers": {"fs": {
            "command": "node", "args": [str(SERVER), self.data],
            "env": {"API_TOKEN": "token-the-runtime-vetted"}}}}).encode()
        src = os.path.join(workdir, "mcp.json")
        with open(src, "wb") as f:
            f.write(self.config)
        r = run(SNAPFS, "put", "--mount", fs.path, "--owner", "0", src)
        assert r.returncode == 0, r.stderr
        self.binding = r.stdout.strip()
        self.digest = sha256_hex(self.config)
        self.path = fs.p(self.digest)

    def exec_argv(self, *client_args, binding=None, prefix=(), trust=()):
        return [str(SNAPFS), "exec", "--mount", self.fs.path, "--owner", "0", *trust,
                "--binding", binding or self.binding, "--", *prefix,
                "node", str(INSPECTOR), "--cli", "--config", "{}", "--server", "fs",
                *client_args]

    def run_client(self, *client_args, **kw):
        return run(*self.exec_argv(*client_args, **kw), timeout=NODE_TIMEOUT)


@pytest.fixture
def delivery(snapfs, workdir):
    return Delivery(snapfs, workdir)


def tool_names(stdout):
    return {t["name"] for t in json.loads(stdout)["tools"]}


def allowed_directories(stdout):
    out = json.loads(stdout)
    return out["content"][0]["text"]


LIST_TOOLS = ("--method", "tools/list")
CALL_ALLOWED = ("--method", "tools/call", "--tool-name", "list_allowed_directories")


def test_the_mcp_client_lists_the_tools_of_the_server_the_snapshot_configures(delivery):
    r = delivery.run_client(*LIST_TOOLS)
    assert r.returncode == 0, r.stderr
    # Only the published config names this server: its tools arriving means the client read
    # the snapshot through /proc/self/fd/3 and started what it says.
    assert {"read_text_file", "list_directory", "list_allowed_directories"} <= \
        tool_names(r.stdout)


def test_the_tamper_recipe_fails_and_the_next_delivery_gets_the_same_bytes(delivery):
    path = delivery.path
    before = os.stat(path)
    # The anonymous-file recipe, step by step, whatever the uid: chmod back, reopen for
    # writing (directly, through /proc/self/fd, with O_TRUNC), truncate, and publish other
    # bytes of the same size under the same name.
    assert errno_of(os.chmod, path, 0o600) == E.EROFS
    fd = os.open(path, os.O_RDONLY)
    try:
        assert errno_of(os.fchmod, fd, 0o600) == E.EROFS
        assert errno_of(os.open, f"/proc/self/fd/{fd}", os.O_WRONLY) == E.EROFS
    finally:
        os.close(fd)
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND):
        assert errno_of(os.open, path, flags) == E.EROFS
    assert errno_of(os.truncate, path, 0) == E.EROFS
    forged = delivery.config.replace(b"token-the-runtime-vetted", b"token-of-the-attacker!!!")
    assert len(forged) == len(delivery.config)
    delivery.fs.stage(forged, "forged")
    assert errno_of(os.rename, delivery.fs.p(".staging/forged"), path) == E.EBADMSG
    os.unlink(delivery.fs.p(".staging/forged"))
    # Another uid may not even reach it: the main mount is its owner's (no --readers).
    r = as_uid(NOBODY_UID, "import os, sys\ntry: os.unlink(sys.argv[1])\n"
               "except OSError as e: print(e.errno)", path)
    assert r.stdout.strip() == str(errno.EACCES)

    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mode) == \
        (before.st_ino, before.st_size, before.st_mode)
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == delivery.digest
    assert run(SNAPFS, "verify", "--mount", delivery.fs.path, "--owner", "0",
               delivery.binding).returncode == 0
    # The second delivery starts the server with exactly the published arguments.
    r = delivery.run_client(*CALL_ALLOWED)
    assert r.returncode == 0, r.stderr
    assert allowed_directories(r.stdout) == f"Allowed directories:\n{delivery.data}"


def test_a_binding_whose_digest_does_not_match_never_starts_the_client(delivery, workdir):
    marker = os.path.join(workdir, "client-started")
    # The client is wrapped so that its start leaves a mark.
    prefix = ("sh", "-c", 'touch "$0" && exec "$@"', marker)
    wrong = delivery.binding.replace(delivery.digest, sha256_hex(b"a config nobody vetted"))
    r = delivery.run_client(*LIST_TOOLS, binding=wrong, prefix=prefix)
    assert r.returncode == 125 and r.stdout == ""
    assert "not verified, not starting sh" in r.stderr
    assert not os.path.exists(marker)
    # The right binding, same command: the client starts and gets its tools.
    r = delivery.run_client(*LIST_TOOLS, prefix=prefix)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(marker)
    assert "list_allowed_directories" in tool_names(r.stdout)


# Run inside the sandbox before the delivery: what memfd_create does there, and which pid,
# user and mount namespaces the process is in.
SANDBOX_PROBE = """
import errno, json, os
try:
    os.close(os.memfd_create("probe"))
    memfd = "ok"
except OSError as e:
    memfd = errno.errorcode[e.errno]
print(json.dumps({"memfd_create": memfd, "pid": os.getpid(),
                  "user_ns": os.readlink("/proc/self/ns/user"),
                  "mnt_ns": os.readlink("/proc/self/ns/mnt")}))
"""


def test_delivery_works_in_a_bubblewrap_sandbox_where_memfd_create_is_denied(delivery,
                                                                              workdir):
    # Outside the sandbox memfd_create works: the filter below is what denies it.
    os.close(os.memfd_create("probe"))
    bpf = os.path.join(workdir, "deny-memfd.bpf")
    with open(bpf, "wb") as out:
        r = subprocess.run([str(DENYSYS), "memfd_create"], stdout=out, stderr=subprocess.PIPE,
                           timeout=30)
    assert r.returncode == 0, r.stderr
    fd = os.open(bpf, os.O_RDONLY)
    # Inside its own user namespace the client cannot verify who mounted snapfs (uid 0 there
    # is whoever created the namespace): refused unless the runtime says it trusts that.
    refused = shlex.join(delivery.exec_argv(*CALL_ALLOWED))
    trusted = shlex.join(delivery.exec_argv(*CALL_ALLOWED, trust=("--trust-user-namespace",)))
    try:
        probe = shlex.join([sys.executable, "-c", SANDBOX_PROBE])
        r = subprocess.run(sandbox_argv(delivery, fd, refused), capture_output=True, text=True,
                           timeout=NODE_TIMEOUT, pass_fds=(fd,))
        assert r.returncode == 125 and r.stdout == "", r.stderr  # exec's own failure
        assert "user-namespace: this process runs in a user namespace" in r.stderr
        os.lseek(fd, 0, os.SEEK_SET)  # bwrap read the filter to its end
        r = subprocess.run(sandbox_argv(delivery, fd, f"{probe} && exec {trusted}"),
                           capture_output=True, text=True, timeout=NODE_TIMEOUT,
                           pass_fds=(fd,))
    finally:
        os.close(fd)
    assert r.returncode == 0, r.stderr
    first, rest = r.stdout.split("\n", 1)
    probe = json.loads(first)
    assert probe["memfd_create"] == "EPERM"
    assert probe["pid"] < 10, "not in a new pid namespace"
    assert probe["user_ns"] != os.readlink("/proc/self/ns/user")
    assert probe["mnt_ns"] != os.readlink("/proc/self/ns/mnt")
    assert allowed_directories(rest) == f"Allowed directories:\n{delivery.data}"


def sandbox_argv(delivery, seccomp_fd, script):
    return [
        "bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc", "/etc",
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--ro-bind", str(ROOT), str(ROOT),
        "--ro-bind", delivery.data, delivery.data,
        # The snapfs mount bound in read-write: mountcheck inside judges this bind.
        "--bind", delivery.fs.path, delivery.fs.path,
        "--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin:/bin",
        "--seccomp", str(seccomp_fd),
        "--", "sh", "-c", script,
    ]


# ---- the same delivery from a Node.js program ----------------------------------------------

NODE_PACKAGE = BUILD / "client" / "node"
NODE_EXAMPLE = ROOT / "client" / "node" / "examples" / "mcp.ts"
TSC = ROOT / "client" / "node" / "node_modules" / ".bin" / "tsc"


def node_program(workdir):
    """The README's Node.js example (client/node/examples/mcp.ts), compiled by tsc against the
    package the build laid out, which node_modules/snapfs of its directory names."""
    app = os.path.join(workdir, "app")
    os.makedirs(os.path.join(app, "node_modules"))
    os.symlink(NODE_PACKAGE, os.path.join(app, "node_modules", "snapfs"))
    shutil.copy(NODE_EXAMPLE, app)
    r = run(TSC, "--strict", "--exactOptionalPropertyTypes", "--target", "es2021", "--module",
            "commonjs", "--moduleResolution", "node", "--types", "node", "--typeRoots",
            ROOT / "client" / "node" / "node_modules" / "@types", "--outDir", app,
            os.path.join(app, "mcp.ts"), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return os.path.join(app, "mcp.js")


def test_a_node_program_publishes_into_a_scope_and_starts_the_client_with_the_descriptor(
        snapfs, workdir):
    from clients import client_env
    program = node_program(workdir)
    data = os.path.join(workdir, "data")
    os.mkdir(data)
    view = os.path.join(workdir, "views", "sandbox")
    os.makedirs(os.path.dirname(view))
    argv = ["node", program, snapfs.path, view, str(SERVER), str(INSPECTOR), data]
    env = {k: v for k, v in client_env().items() if not k.startswith("SNAPFS_")}
    # A mount of an owner the program was not told to trust: no scope, no client.
    r = run(*argv, env={**env, "SNAPFS_OWNER": "4321"}, timeout=NODE_TIMEOUT)
    assert r.returncode == 1 and r.stdout == "", r.stdout + r.stderr
    assert "SnapfsError" in r.stderr and "owner" in r.stderr
    # Trusted: the client lists the tools of the server only the published config names.
    r = run(*argv, env=env, timeout=NODE_TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert {"read_text_file", "list_directory", "list_allowed_directories"} <= \
        tool_names(r.stdout)
    assert "published " in r.stderr and f"dev=" in r.stderr
    # It removed its scope: the view is gone, the daemon lists none.
    out = json.loads(run(SNAPFS, "scope", "ls", "--mount", snapfs.path, "--json").stdout)
    assert out["scopes"] == []
