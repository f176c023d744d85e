# SPDX-License-Identifier: MIT
"""The deployment recipes of docs/deployment.md, run as written (docs/recipes/): a bubblewrap
sandbox and a rootless podman container, each given its own scope's view read-only, while the
runtime publishes and grants outside; the sandboxed child opens its entry verified, then
reads, and sees nothing another scope was granted."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from snaptest import BUILD, ROOT, control_ok, is_mounted, sha256_hex, wait_for

RECIPES = ROOT / "docs" / "recipes"
HERE = os.path.dirname(os.path.abspath(__file__))
NOBODY = 1000
CFG = b'{"mcpServers": {"fs": {"command": "true"}}}\n'
OTHER = b'{"mcpServers": {"fs": {"command": "another sandbox"}}}\n'

# Run in the sandbox: open the entry verified and read through that descriptor; what the view
# lists, what a write, a create and an unverified open (no --trust-user-namespace) get there.
CHILD = r'''
import errno, json, os, subprocess, sys
def err(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
    return "OK"
entry = os.environ["SNAPFS_ENTRY"]
out = {}
r = subprocess.run(["snapfs", "exec", "--trust-user-namespace", "--entry", entry, "--",
                    "cat", "{}"], capture_output=True, text=True)
out["exec"] = [r.returncode, r.stdout, r.stderr]
r = subprocess.run(["snapfs", "exec", "--entry", entry, "--", "echo", "started"],
                   capture_output=True, text=True)
out["untrusted"] = [r.returncode, r.stdout, r.stderr]
out["listing"] = sorted(os.listdir("/run/snapfs"))
out["write"] = err(os.open, "/run/snapfs/" + entry, os.O_WRONLY)
out["create"] = err(os.open, "/run/snapfs/new", os.O_WRONLY | os.O_CREAT, 0o600)
out["stage"] = err(os.open, "/run/snapfs/.staging/new", os.O_WRONLY | os.O_CREAT, 0o600)
out["mountinfo"] = [l for l in open("/proc/self/mountinfo") if " /run/snapfs " in l]
print(json.dumps(out))
'''


@pytest.fixture
def host(snapfs, workdir):
    """A daemon, a configuration file to publish, and a scope of another sandbox with a
    snapshot of its own, which no recipe's sandbox may see."""
    cfg = os.path.join(workdir, "mcp.json")
    with open(cfg, "wb") as f:
        f.write(CFG)
    os.chmod(cfg, 0o644)
    views = os.path.join(workdir, "views")
    os.mkdir(views, 0o700)  # on the host only root reaches a view (docs/deployment.md)
    other = snapfs.publish(OTHER, "other")
    control_ok(snapfs.path, {"op": "scope-create", "name": "other",
                             "view": os.path.join(views, "other")})
    control_ok(snapfs.path, {"op": "grant", "scope": "other", "sha256": other,
                             "entry": "config"})
    yield snapfs, views, cfg
    control_ok(snapfs.path, {"op": "scope-remove", "name": "other"})


def env_with_snapfs():
    return dict(os.environ, PATH=f"{BUILD / 'cli'}:{os.environ['PATH']}")


def check_child(out, fs):
    # Opened through the entry, verified, then read through that very descriptor.
    assert out["exec"][0] == 0, out["exec"]
    assert out["exec"][1] == CFG.decode()
    # Beside it, the same entry without the runtime's word for the mount is refused.
    assert out["untrusted"][:2] == [125, ""], out["untrusted"]
    assert "user-namespace: " in out["untrusted"][2], out["untrusted"]
    # The view lists its own grant, under its digest and its entry, and nothing else.
    assert out["listing"] == sorted([sha256_hex(CFG), "config"]), out["listing"]
    # The view is read-only: no write, no create, no staging there.
    assert out["write"] == "EROFS" and out["create"] == "EROFS", out
    assert out["stage"] == "ENOENT", out
    line = out["mountinfo"]
    assert len(line) == 1 and line[0].split()[5].startswith("ro,"), line
    # The runtime still publishes outside, and reads what it published.
    assert fs.publish(b"published while the sandbox ran") == sha256_hex(
        b"published while the sandbox ran")


def scope_names(fs):
    return sorted(s["name"] for s in control_ok(fs.path, {"op": "scope-list"})["scopes"])


def test_bubblewrap_sandbox_gets_its_scopes_view_read_only_and_the_scope_goes_with_it(host):
    fs, views, cfg = host
    view = os.path.join(views, "sandbox-1")
    r = subprocess.run([str(RECIPES / "bwrap-sandbox.sh"), fs.path, "sandbox-1", view, cfg,
                        "python3", "-c", CHILD], capture_output=True, text=True, timeout=120,
                       env=env_with_snapfs())
    assert r.returncode == 0, r.stdout + r.stderr
    check_child(json.loads(r.stdout), fs)
    # The recipe tied the scope to the sandbox: it went when the sandbox exited; the other
    # sandbox's scope stays.
    wait_for(lambda: scope_names(fs) == ["other"], "the sandbox's scope to go with it")
    assert not is_mounted(view) and not os.path.exists(view)


def test_rootless_podman_container_gets_its_scopes_view_read_only(host, workdir):
    for tool in ("podman", "crun", "newuidmap"):
        assert shutil.which(tool), f"{tool} missing: scripts/deps.sh installs it"
    fs, views, cfg = host
    # The user binds the view itself: it may pass through the views' directory, not list it.
    os.chmod(views, 0o711)
    view = os.path.join(views, "container-1")
    r = subprocess.run([str(BUILD / "cli" / "snapfs"), "scope", "create", "--mount", fs.path,
                        "container-1", "--view", view, "--uid", str(NOBODY)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(BUILD / "cli" / "snapfs"), "put", "--mount", fs.path, "--scope",
                        "container-1", "--as", "config", cfg],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    try:
        work = os.path.join(workdir, "podman")
        os.mkdir(work)
        r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            os.path.join(HERE, "service_ns.py"), "podman", "/usr/local/bin",
                            work, str(RECIPES / "podman-rootless.sh"), view, "config",
                            str(NOBODY), "python3", "-c", CHILD],
                           capture_output=True, text=True, timeout=600, env=env_with_snapfs())
        assert r.returncode == 0, r.stdout + r.stderr
        res = json.loads(r.stdout)
        assert res["killed"] == [], res
        run = res["run"]
        assert run["rc"] == 0, run["err"]
        check_child(json.loads(run["out"].strip().splitlines()[-1]), fs)
    finally:
        control_ok(fs.path, {"op": "scope-remove", "name": "container-1"})


def test_the_deployment_doc_shows_the_recipes_as_they_are():
    with open(ROOT / "docs" / "deployment.md") as f:
        doc = f.read()
    for name in ("bwrap-sandbox.sh", "podman-rootless.sh"):
        with open(RECIPES / name) as f:
            assert f.read() in doc, f"docs/deployment.md's {name} differs from docs/recipes"
