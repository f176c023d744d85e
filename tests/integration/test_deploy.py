# SPDX-License-Identifier: MIT
"""The deployment recipes of docs/deployment.md, run as written (docs/recipes/): a bubblewrap
sandbox and a rootless podman container, each given the read view read-only, while the
runtime publishes outside; the sandboxed child verifies, then reads."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from snaptest import BUILD, ROOT, sha256_hex

RECIPES = ROOT / "docs" / "recipes"
HERE = os.path.dirname(os.path.abspath(__file__))
NOBODY = 1000

# Run in the sandbox: verify the binding and read through the verified descriptor; what a
# write, a create and an unverified open (no --trust-user-namespace) get there.
CHILD = r'''
import errno, json, os, subprocess, sys
def err(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
    return "OK"
b = os.environ["SNAPFS_BINDING"]
digest = b.split()[0].split("=")[1]
out = {}
r = subprocess.run(["snapfs", "exec", "--trust-user-namespace", "--binding", b, "--",
                    "cat", "{}"], capture_output=True, text=True)
out["exec"] = [r.returncode, r.stdout, r.stderr]
r = subprocess.run(["snapfs", "verify", "--json", b], capture_output=True, text=True)
out["untrusted"] = [r.returncode, json.loads(r.stdout)]
snap = "/run/snapfs/" + digest
out["write"] = err(os.open, snap, os.O_WRONLY)
out["create"] = err(os.open, "/run/snapfs/new", os.O_WRONLY | os.O_CREAT, 0o600)
out["stage"] = err(os.open, "/run/snapfs/.staging/new", os.O_WRONLY | os.O_CREAT, 0o600)
out["mountinfo"] = [l for l in open("/proc/self/mountinfo") if " /run/snapfs " in l]
print(json.dumps(out))
'''


@pytest.fixture
def viewed(mount_snapfs, workdir):
    """A daemon with --read-view, and a configuration file to publish."""
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    fs = mount_snapfs("--allow-other", "--read-view", view)
    cfg = os.path.join(workdir, "mcp.json")
    with open(cfg, "wb") as f:
        f.write(b'{"mcpServers": {"fs": {"command": "true"}}}\n')
    os.chmod(cfg, 0o644)
    return fs, view, cfg


def env_with_snapfs():
    return dict(os.environ, PATH=f"{BUILD / 'cli'}:{os.environ['PATH']}")


def check_child(out, fs, digest):
    # Verified, then read through that very descriptor: the bytes the runtime published.
    assert out["exec"][0] == 0, out["exec"]
    assert out["exec"][1] == '{"mcpServers": {"fs": {"command": "true"}}}\n'
    # Beside it, the same binding without the runtime's word for the mount is refused.
    assert out["untrusted"][0] == 1
    assert out["untrusted"][1]["reasons"][0]["code"] == "user-namespace", out["untrusted"]
    # The view is read-only: no write, no create, no staging there.
    assert out["write"] == "EROFS" and out["create"] == "EROFS", out
    assert out["stage"] == "ENOENT", out
    line = out["mountinfo"]
    assert len(line) == 1 and line[0].split()[5].startswith("ro,"), line
    # The runtime still publishes outside, and reads what it published.
    assert fs.publish(b"published while the sandbox ran") == sha256_hex(
        b"published while the sandbox ran")


def test_bubblewrap_sandbox_gets_the_read_view_read_only(viewed):
    fs, view, cfg = viewed
    r = subprocess.run([str(RECIPES / "bwrap-sandbox.sh"), fs.path, view, cfg,
                        "python3", "-c", CHILD], capture_output=True, text=True, timeout=120,
                       env=env_with_snapfs())
    assert r.returncode == 0, r.stdout + r.stderr
    check_child(json.loads(r.stdout), fs, None)


def test_rootless_podman_container_gets_the_read_view_read_only(viewed, workdir):
    for tool in ("podman", "crun", "newuidmap"):
        assert shutil.which(tool), f"{tool} missing: scripts/deps.sh installs it"
    fs, view, cfg = viewed
    with open(cfg, "rb") as f:
        digest = sha256_hex(f.read())
    r = subprocess.run([str(BUILD / "cli" / "snapfs"), "put", "--mount", fs.path, cfg],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    binding = os.getxattr(os.path.join(view, digest), "user.snapfs.binding").decode()
    work = os.path.join(workdir, "podman")
    os.mkdir(work)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                        os.path.join(HERE, "service_ns.py"), "podman", "/usr/local/bin", work,
                        str(RECIPES / "podman-rootless.sh"), view, binding, str(NOBODY),
                        "python3", "-c", CHILD],
                       capture_output=True, text=True, timeout=600, env=env_with_snapfs())
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["killed"] == [], res
    run = res["run"]
    assert run["rc"] == 0, run["err"]
    check_child(json.loads(run["out"].strip().splitlines()[-1]), fs, digest)


def test_the_deployment_doc_shows_the_recipes_as_they_are():
    with open(ROOT / "docs" / "deployment.md") as f:
        doc = f.read()
    for name in ("bwrap-sandbox.sh", "podman-rootless.sh"):
        with open(RECIPES / name) as f:
            assert f.read() in doc, f"docs/deployment.md's {name} differs from docs/recipes"
