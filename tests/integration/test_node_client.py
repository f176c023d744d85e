# SPDX-License-Identifier: MIT
"""The Node.js package (client/node) against real daemons: its own tests, written for
`node --test` (client/node/test/*.test.mjs), each file starting one daemon of its own on a
real mount in this private mount namespace and stopping it. Every test of a file must pass
and none may be skipped or left undone; the count of passed tests is checked against the
tests the file declares, so a file that stopped early cannot pass. And the checks at load: the
addon refuses a libsnapfs of another version, the package an addon of another version."""
import json
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


# ---- the version checks at load -------------------------------------------------------------

OTHER_VERSION = BUILD / "tests" / "helpers" / "otherversion.so"
VERSION = json.loads(run("meson", "introspect", "--projectinfo", ROOT / "meson.build").stdout)[
    "version"]
LOAD = r"""
const snapfs = require(process.argv[1]);
(async () => {
  try {
    console.log(JSON.stringify(snapfs.versions()));
  } catch (e) {
    console.log(JSON.stringify({ versions: e.message }));
  }
  // A call on a path that is no mount: the library refuses it, when it is reached at all.
  try {
    await snapfs.publish("never", { mount: "/nonexistent/snapfs" });
  } catch (e) {
    console.log(JSON.stringify({ publish: e.message, snapfsError: e instanceof snapfs.SnapfsError,
                                 code: e.code ?? null }));
  }
})();
"""


def load(package, **env):
    r = run("node", "-e", LOAD, package, env={**node_env(), **env}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_the_addon_refuses_to_load_against_a_library_of_another_version():
    # The library of this build: it loads, and the library itself refuses the path.
    versions, published = load(PACKAGE)
    assert versions == {"package": VERSION, "library": VERSION, "napi": 8}, versions
    assert published["snapfsError"] is True and published["code"] == "ENOENT", published
    # The same addon in a process whose libsnapfs says another version (preloaded first):
    # it refuses to load, so nothing reaches a library whose structs it cannot know.
    env = node_env()
    preload = " ".join(filter(None, (env.get("LD_PRELOAD"), str(OTHER_VERSION))))
    got = load(PACKAGE, LD_PRELOAD=preload)
    want = (f"the addon was built for libsnapfs {VERSION} but libsnapfs 0.0.0-other was "
            "loaded: install the snapfs package that matches its library")
    assert [want in g.get("versions", g.get("publish", "")) for g in got] == [True, True], got
    assert got[1]["snapfsError"] is False and got[1]["code"] is None, got
    assert f"snapfs: cannot load {PACKAGE / 'snapfs.node'}: " in got[0]["versions"], got


def test_the_package_refuses_an_addon_of_another_version(workdir):
    # The package as the build laid it out, twice: as it is, and saying another version.
    for version in (VERSION, "9.9.9"):
        pkg = os.path.join(workdir, version)
        shutil.copytree(PACKAGE / "lib", os.path.join(pkg, "lib"))
        meta = json.loads((PACKAGE / "package.json").read_text())
        meta["version"] = version
        with open(os.path.join(pkg, "package.json"), "w") as f:
            json.dump(meta, f)
    versions, published = load(os.path.join(workdir, VERSION),
                               SNAPFS_NODE_ADDON=str(PACKAGE / "snapfs.node"))
    assert versions["package"] == VERSION and published["code"] == "ENOENT", (versions, published)
    versions, published = load(os.path.join(workdir, "9.9.9"),
                               SNAPFS_NODE_ADDON=str(PACKAGE / "snapfs.node"))
    want = f"{PACKAGE / 'snapfs.node'} was built for snapfs {VERSION}, this package is 9.9.9"
    assert want in versions["versions"] and want in published["publish"], (versions, published)
