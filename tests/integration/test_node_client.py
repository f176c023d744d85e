# SPDX-License-Identifier: MIT
"""The Node.js package (client/node) against real daemons: its own tests, written for
`node --test` (client/node/test/*.test.mjs), each file starting one daemon of its own on a
real mount in this private mount namespace and stopping it. Every test of a file must pass
and none may be skipped or left undone; the count of passed tests is checked against the
tests the file declares, so a file that stopped early cannot pass."""
import os
import re
import shutil

import pytest

from clients import client_env
from snaptest import BUILD, ROOT, run

NODE_DIR = ROOT / "client" / "node"
PACKAGE = BUILD / "client" / "node"
TESTS = sorted(p.name for p in (NODE_DIR / "test").glob("*.test.mjs"))


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    assert shutil.which("node"), "node missing: scripts/deps.sh installs nodejs"
    for f in (PACKAGE / "snapfs.node", PACKAGE / "lib" / "index.js", PACKAGE / "lib" / "index.d.ts"):
        assert f.exists(), f"{f} missing: build with the Node-API headers and client/node's tsc " \
                           "(scripts/deps.sh installs both)"


def node_env():
    env = client_env()
    env.update(SNAPFS_BUILD=str(BUILD), SNAPFS_NODE_PACKAGE=str(PACKAGE))
    env.pop("SNAPFS_NODE_ADDON", None)
    env.pop("SNAPFS_MOUNT", None)
    env.pop("SNAPFS_OWNER", None)
    return env


def test_the_package_has_test_files():
    assert {"publish.test.mjs", "open.test.mjs", "spawn.test.mjs", "scopes.test.mjs"} <= set(TESTS)


@pytest.mark.parametrize("name", TESTS)
def test_node_tests_pass(name):
    path = NODE_DIR / "test" / name
    declared = len(re.findall(r"^test\(", path.read_text(), re.M))
    # Only flags Node 18 has (Debian 12's nodejs, what scripts/deps.sh installs there):
    # --test-timeout came with 20.11, and Node 18 refuses to start with it. The run's own
    # timeout stops a file that hangs.
    r = run("node", "--test", "--test-reporter=tap", path, env=node_env(), timeout=300)
    summary = dict(re.findall(r"^# (\w+) (\d+)$", r.stdout, re.M))
    failed = re.findall(r"^\s*not ok \d+ - (.*)$", r.stdout, re.M)
    assert r.returncode == 0 and not failed, f"failed: {failed}\n{r.stdout}{r.stderr}"
    assert summary.get("pass") == str(declared), (summary, r.stdout)
    assert summary.get("fail") == "0" and summary.get("skipped", "0") == "0" and \
        summary.get("todo", "0") == "0" and summary.get("cancelled", "0") == "0", summary
