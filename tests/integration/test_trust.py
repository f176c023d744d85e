# SPDX-License-Identifier: MIT
"""The trust root against the one attacker snapfs exists for: code running as the caller's own
uid. A rootless runtime's mount is replaced by a FUSE server of the same uid (refused:
owner-is-caller) while root's mount verifies for the same client with no flag; a server
mounted inside `unshare -Ur` (refused: user-namespace) beside the same server mounted in the
initial namespace (accepted)."""
import contextlib
import json
import os
import select
import stat
import subprocess
import sys

import pytest

from clients import FAKESNAP, PYCLIENT, Client, client_env, codes
from snaptest import NOBODY_UID, SNAPFS, helper_fs, run, sha256_hex

REAL = b'{"mcpServers": {"files": {"command": "mcp-server-filesystem"}}}\n'
FAKE = b'{"mcpServers": {"files": {"command": "sh -c attacker-code-here"}}}\n'[:len(REAL)]
ATTACKER = 1000  # the runtime's uid, and so the attacker's
SANDBOX = 2000
assert len(FAKE) == len(REAL) and ATTACKER == NOBODY_UID


def as_uid(uid, *argv):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *map(str, argv)]


@pytest.fixture
def user_fuse(workdir):
    """/dev/fuse is 0600 on these machines: a 0666 copy of its node (10,229), bound over it in
    this test's own mount namespace, lets an ordinary uid mount through fusermount3 or inside
    `unshare -Ur`. Unbound at the end."""
    node = os.path.join(workdir, "fuse")
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(10, 229))
    os.chmod(node, 0o666)
    r = run("mount", "--bind", node, "/dev/fuse")
    assert r.returncode == 0, r.stderr
    try:
        yield
    finally:
        run("umount", "/dev/fuse")


def user_dir(workdir, name, uid=ATTACKER):
    d = os.path.join(workdir, name)
    os.mkdir(d)
    os.chown(d, uid, uid)
    return d


def data_file(workdir, name, data):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o644)
    return path


@contextlib.contextmanager
def rootless_snapfs(mnt, wrap=(), opts=()):
    """`snapfs mount -f` run by the runtime's uid: it mounts through fusermount3 (or, with
    wrap, under that command: `unshare -Ur -m` mounts it in a user namespace of its own)."""
    p = subprocess.Popen(as_uid(ATTACKER, *wrap, SNAPFS, "mount", "-f", *opts, mnt),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 20)
        line = p.stdout.readline() if ready else ""
        assert line.startswith("snapfs: serving"), f"rootless snapfs did not start: {line!r}"
        yield p
    finally:
        if p.poll() is None:
            p.terminate()
        p.wait(timeout=20)
        run("umount", "-l", mnt)
        p.stdout.close()
        p.stderr.close()


def check_codes(argv, backend):
    """The finding codes of `snapfs check --json` run as argv says."""
    r = run(*argv[:-1], "--backend", backend, "--json", argv[-1])
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] == (r.returncode == 0)
    return {x["code"] for x in out["reasons"]}


def test_a_same_uid_server_in_place_of_a_rootless_mount_is_refused_owner_is_caller(
        workdir, user_fuse):
    real = data_file(workdir, "real.json", REAL)
    fake = data_file(workdir, "fake.json", FAKE)
    mnt = os.path.join(user_dir(workdir, "run"), "snapfs")
    os.mkdir(mnt)
    os.chown(mnt, ATTACKER, ATTACKER)

    # 1. The runtime (uid 1000) mounts snapfs itself and publishes. Its own publish now needs
    #    the insecure opt-in too: the same refusal protects the runtime.
    with rootless_snapfs(mnt) as runtime:
        r = run(*as_uid(ATTACKER, SNAPFS, "put", "--mount", mnt, real))
        assert r.returncode == 1 and "owner-is-caller: mounted by uid 1000" in r.stderr
        r = run(*as_uid(ATTACKER, SNAPFS, "put", "--mount", mnt, "--insecure-own-mount", real))
        assert r.returncode == 0, r.stderr
        binding = r.stdout.strip()
        digest, ino = sha256_hex(REAL), binding.rsplit("ino=", 1)[1]
        assert binding.startswith(f"sha256={digest} ")

        # 2. Code of the same uid unmounts it and mounts its own server at the same path:
        #    type fuse.snapfs, nosuid,nodev,noexec, a mode-0000 file under the right name and
        #    inode, the real bytes for the first full read and its own after that.
        r = run(*as_uid(ATTACKER, "fusermount3", "-u", mnt))
        assert r.returncode == 0, r.stderr
        assert runtime.wait(timeout=20) == 0
    entry = f"{digest}=swap:0:{ino}:{real}:{fake}"
    with helper_fs(as_uid(ATTACKER, FAKESNAP, mnt, entry), mnt, "impostor"):
        # (Only its own uid may look: no allow_other.)
        r = run(*as_uid(ATTACKER, "stat", "-c", "%a %i", os.path.join(mnt, digest)))
        assert r.stdout.split() == ["0", ino], r.stdout + r.stderr

        # 3. The client of that uid with no flag: refused, by its own finding, in text and
        #    JSON, by both backends; exec never starts the child.
        for backend in ("statmount", "mountinfo"):
            assert check_codes(as_uid(ATTACKER, SNAPFS, "check", mnt), backend) == \
                {"owner-is-caller"}
        r = run(*as_uid(ATTACKER, SNAPFS, "check", mnt))
        assert r.returncode == 1
        assert r.stdout.startswith("owner-is-caller: mounted by uid 1000, the caller's own")
        r = run(*as_uid(ATTACKER, SNAPFS, "exec", "--mount", mnt, "--binding", binding,
                        "--", "cat", "{}"))
        assert r.returncode == 125 and r.stdout == "", r.stdout
        assert "owner-is-caller: mounted by uid 1000" in r.stderr
        # libsnapfs from C and Python: refused the same way ...
        for name in ("c", "python"):
            out = Client(name, ATTACKER)("digest", mnt, digest)
            assert out["error"] == "EMEDIUMTYPE" and codes(out) == {"owner-is-caller"}
        # ... and what the opt-in is worth: the descriptor verifies (the first full read got
        # the real bytes), then reading it again gives the attacker's.
        for name in ("c", "python"):
            out = Client(name, ATTACKER)("digest", "--insecure-own-mount", mnt, digest)
            assert out["ok"] and out["content_hex"] == FAKE.hex()


def test_the_same_client_with_no_flag_verifies_on_a_root_mount(mount_snapfs, workdir):
    fs = mount_snapfs("--allow-other", "--readers", "any")
    real = data_file(workdir, "real.json", REAL)
    r = run(SNAPFS, "put", "--mount", fs.path, real)
    assert r.returncode == 0, r.stderr
    binding = r.stdout.strip()
    for backend in ("statmount", "mountinfo"):
        assert check_codes(as_uid(ATTACKER, SNAPFS, "check", fs.path), backend) == set()
    r = run(*as_uid(ATTACKER, SNAPFS, "exec", "--mount", fs.path, "--binding", binding,
                    "--", "cat", "{}"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == REAL.decode()


def test_a_server_mounted_in_a_user_namespace_is_refused_the_same_in_the_initial_one_is_not(
        workdir, user_fuse):
    real = data_file(workdir, "real.json", REAL)
    entry = f"{sha256_hex(REAL)}=reg:0:{real}"
    ns_mnt = user_dir(workdir, "ns")
    host_mnt = user_dir(workdir, "host")

    # Mounted inside `unshare -Ur` by uid 1000: its superblock says user_id=0, which is what
    # the default owner trusts. Only its own mount namespace sees it.
    with helper_fs(as_uid(ATTACKER, "unshare", "-Ur", "-m", FAKESNAP, ns_mnt, entry), ns_mnt,
                   "fakesnap in a user namespace") as server:
        enter = ["nsenter", "-m", "-t", str(server.pid)]
        r = run(*enter, "grep", f" {ns_mnt} ", "/proc/self/mountinfo")
        assert "fuse.snapfs snapfs rw,user_id=0,group_id=0" in r.stdout, r.stdout
        # Without the probe's GETATTR (and before any), the owner the kernel cached for the
        # new root was mapped through the namespace too.
        for backend in ("statmount", "mountinfo"):
            argv = [*enter, *as_uid(ATTACKER, SNAPFS, "check", "--no-probe",
                                    "--insecure-own-mount", ns_mnt)]
            assert check_codes(argv, backend) == {"user-namespace"}
        for backend in ("statmount", "mountinfo"):
            # From the initial user namespace, in its mount namespace: the root the server
            # calls uid 0 shows as uid 1000, so user_id=0 is no root.
            argv = [*enter, *as_uid(ATTACKER, SNAPFS, "check", "--insecure-own-mount",
                                    ns_mnt)]
            assert check_codes(argv, backend) == {"user-namespace"}
            argv = [*enter, *as_uid(ATTACKER, SNAPFS, "check", ns_mnt)]
            assert check_codes(argv, backend) == {"user-namespace", "owner-is-caller"}
            # From inside that user namespace, where the client is "root".
            argv = ["nsenter", "-U", "-m", "-t", str(server.pid), SNAPFS, "check", ns_mnt]
            assert check_codes(argv, backend) == {"user-namespace"}
        r = run(*enter, *as_uid(ATTACKER, SNAPFS, "check", "--insecure-own-mount", ns_mnt))
        assert r.returncode == 1
        assert r.stdout.startswith("user-namespace: the superblock says user_id=0 but the "
                                   "kernel shows its root owned by uid 1000")
        # Explicitly trusted, the same check passes.
        r = run(*enter, *as_uid(ATTACKER, SNAPFS, "check", "--insecure-own-mount",
                                "--trust-user-namespace", ns_mnt))
        assert r.returncode == 0, r.stdout + r.stderr

    # The same server, same uid, mounted in the initial namespace through fusermount3: its
    # user_id= is the real uid, and the same client with the same flag accepts it.
    with helper_fs(as_uid(ATTACKER, FAKESNAP, host_mnt, entry), host_mnt, "fakesnap"):
        for backend in ("statmount", "mountinfo"):
            argv = as_uid(ATTACKER, SNAPFS, "check", "--insecure-own-mount", host_mnt)
            assert check_codes(argv, backend) == set()


def test_a_client_keeping_its_credentials_in_a_user_namespace_gets_user_namespace_not_eoverflow(
        workdir, user_fuse):
    real = data_file(workdir, "real.json", REAL)
    mnt = user_dir(workdir, "ns")
    # A real daemon mounted by uid 1000 inside `unshare -Ur -m`, reachable by every process
    # of that user namespace (--allow-other); only its mount namespace sees it.
    with rootless_snapfs(mnt, wrap=("unshare", "-Ur", "-m"), opts=("--allow-other",)) as daemon:
        as_ns_root = ["nsenter", "-U", "-m", "-t", str(daemon.pid)]
        # Host root entering the namespace with its own credentials: uid 0 has no mapping
        # there, so FUSE passes none of its requests to the daemon (EOVERFLOW).
        keeping = ["nsenter", "-U", "-m", "--preserve-credentials", "-t", str(daemon.pid)]
        # The namespace's own root publishes and verifies, vouching for the namespace.
        r = run(*as_ns_root, SNAPFS, "put", "--trust-user-namespace", "--mount", mnt, real)
        assert r.returncode == 0, r.stderr
        binding = r.stdout.strip()
        assert binding.startswith(f"sha256={sha256_hex(REAL)} "), binding
        r = run(*as_ns_root, SNAPFS, "verify", "--trust-user-namespace", "--mount", mnt, binding)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.strip() == binding

        # The client that keeps its credentials: a finding that says why, not "Value too
        # large", and trusting the namespace cannot help it.
        for trust in ((), ("--trust-user-namespace",)):
            r = run(*keeping, SNAPFS, "verify", "--json", *trust, "--mount", mnt, binding)
            assert r.returncode == 1, r.stdout + r.stderr
            out = json.loads(r.stdout)
            assert out["error"] == "EMEDIUMTYPE" and codes(out) == {"user-namespace"}, out
            assert any("(EOVERFLOW)" in x["message"] for x in out["reasons"]), out
        for backend in ("statmount", "mountinfo"):
            assert check_codes([*keeping, SNAPFS, "check", mnt], backend) == {"user-namespace"}
            assert check_codes([*keeping, SNAPFS, "check", "--trust-user-namespace", mnt],
                               backend) == {"user-namespace"}
            assert check_codes([*as_ns_root, SNAPFS, "check", "--trust-user-namespace", mnt],
                               backend) == set()


@pytest.mark.parametrize("runtime", [0, ATTACKER], ids=["runtime-root", "runtime-1000"])
def test_the_recommended_topology_the_sandbox_verifies_through_the_read_view_only(
        mount_snapfs, workdir, runtime):
    # The daemon runs as root; the runtime publishes through MNT (as root, or as uid 1000 named
    # by --publishers); the sandbox (uid 2000) is given the read view and nothing else.
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    fs = mount_snapfs("--allow-other", "--publishers", str(runtime), "--readers", "any", "--read-view", view)
    real = data_file(workdir, "real.json", REAL)
    r = run(*as_uid(runtime, SNAPFS, "put", "--mount", fs.path, "--json", real))
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    binding, seen = out["binding"], out["read_view"]
    assert seen["mount"] == view and seen["binding"] != binding
    dev = os.stat(os.path.join(view, sha256_hex(REAL))).st_dev
    assert seen["binding"] == binding.rsplit(" dev=", 1)[0] + \
        f" dev={os.major(dev)}:{os.minor(dev)} ino={out['snapshot']['ino']}"
    # The view's snapshot object: the same snapshot, its binding there.
    assert seen["snapshot"] == {**out["snapshot"], "dev": f"{os.major(dev)}:{os.minor(dev)}",
                                "binding": seen["binding"]}
    text = run(*as_uid(runtime, SNAPFS, "put", "--mount", fs.path, real))
    assert text.stdout.splitlines() == [binding, f"read-view {seen['binding']} {view}"]
    # The same from libsnapfs, through the Python client, the view's snapshot object too.
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import snapfs_client as s\n"
            "v, b = s.view_binding(sys.argv[2], sys.argv[3]); print(v); print(b)\n"
            "print(json.dumps(b.as_dict()))\n")
    r = run(*as_uid(runtime, sys.executable, "-c", code, PYCLIENT.parent, fs.path, binding),
            env=client_env())
    lines = r.stdout.splitlines()
    assert lines[:2] == [view, seen["binding"]], r.stderr
    assert json.loads(lines[2]) == seen["snapshot"]

    # The sandbox, in a mount namespace of its own where MNT is gone: the view's binding
    # verifies there and the child reads the right bytes ...
    def sandbox(*argv):
        return run("unshare", "-m", "--propagation", "private", "sh", "-c",
                   'umount -l "$0" && exec "$@"', fs.path, *as_uid(SANDBOX, *argv))
    r = sandbox(SNAPFS, "exec", "--mount", view, "--binding", seen["binding"], "--",
                "cat", "{}")
    assert r.returncode == 0, r.stderr
    assert r.stdout == REAL.decode()
    # ... the binding of MNT does not (another mount instance, another device) ...
    r = sandbox(SNAPFS, "verify", "--mount", view, "--json", binding)
    assert r.returncode == 1 and json.loads(r.stdout)["error"] == "ESTALE", r.stdout
    assert {x["code"] for x in json.loads(r.stdout)["reasons"]} == {"identity"}
    # ... and the view offers it no way to publish or remove anything.
    code = ("import errno, os, sys\n"
            "v, d = sys.argv[1], sys.argv[2]\n"
            "for fn, a in ((os.open, (v + '/.staging/x', os.O_WRONLY | os.O_CREAT)),\n"
            "              (os.unlink, (v + '/' + d,))):\n"
            "    try:\n"
            "        fn(*a)\n"
            "    except OSError as e:\n"
            "        print(errno.errorcode[e.errno])\n")
    r = sandbox("/usr/bin/python3", "-c", code, view, sha256_hex(REAL))
    # (The view has no .staging/ at all; the kernel refuses the unlink on a read-only mount.)
    assert r.stdout.split() == ["ENOENT", "EROFS"], r.stdout + r.stderr
    assert open(fs.p(sha256_hex(REAL)), "rb").read() == REAL


def test_put_without_a_read_view_prints_one_binding_and_no_view(mount_snapfs, workdir):
    fs = mount_snapfs("--allow-other")
    real = data_file(workdir, "real.json", REAL)
    r = run(SNAPFS, "put", "--mount", fs.path, "--json", real)
    assert r.returncode == 0 and json.loads(r.stdout)["read_view"] is None
    r = run(SNAPFS, "put", "--mount", fs.path, real)
    assert len(r.stdout.splitlines()) == 1
