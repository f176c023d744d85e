# SPDX-License-Identifier: MIT
"""The Python client where Python users install things: `pip install client/python` into a
virtual environment, offline (Debian's wheels of setuptools and wheel, as docs/clients.md
says), and the wheel `meson install` puts under PREFIX/share/snapfs/python, which needs not
even those; each then publishes and describes on a real mount. A library that cannot be
loaded is refused with how to install it, beside the same environment loading it."""
import json
import os
import shutil
import subprocess
import tomllib

import pytest

from clients import PYCLIENT, client_env
from snaptest import BUILD, ROOT, run, sha256_hex

WHEELS = "/usr/share/python-wheels"
VERSION = json.loads(subprocess.run(["meson", "introspect", "--projectinfo",
                                     str(ROOT / "meson.build")], capture_output=True,
                                    text=True, check=True).stdout)["version"]

USE = r"""
import json, sys
import snapfs_client as snapfs
b = snapfs.publish(sys.argv[1], b"from a venv", name="venv.cfg")
d = snapfs.describe(sys.argv[1], str(b))
print(json.dumps({"file": snapfs.__file__, "snapshot": b.as_dict(), "described": d.as_dict(),
                  "kind": d.kind, "library": snapfs._INSTALLED_LIBRARY}))
"""


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    for whl in ("setuptools", "wheel", "pip"):
        assert any(f.startswith(whl + "-") for f in os.listdir(WHEELS)), \
            f"no {whl} wheel in {WHEELS}: scripts/deps.sh installs python3-{whl}-whl"


def venv(path):
    r = run("/usr/bin/python3", "-m", "venv", path, timeout=120)
    assert r.returncode == 0, r.stderr
    return os.path.join(path, "bin")


def use(bindir, mount, **env):
    r = run(os.path.join(bindir, "python"), "-c", USE, mount, env={**client_env(), **env})
    return r


def test_versions_of_the_package_the_module_and_snapfs_agree():
    with open(PYCLIENT.parent / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    with open(PYCLIENT) as f:
        module = f.read()
    assert project["version"] == VERSION
    assert f'__version__ = "{VERSION}"' in module


def test_pip_installs_the_source_tree_client_into_a_venv_offline(snapfs, workdir):
    # A copy: pip builds in the tree it is given, and the checkout stays clean.
    src = os.path.join(workdir, "python")
    shutil.copytree(PYCLIENT.parent, src, ignore=shutil.ignore_patterns("__pycache__"))
    bindir = venv(os.path.join(workdir, "venv"))
    r = run(os.path.join(bindir, "pip"), "install", "--no-index", "--find-links", WHEELS, src,
            timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = use(bindir, snapfs.path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["file"].startswith(os.path.join(workdir, "venv")), out
    assert out["snapshot"]["name"] == "venv.cfg" and out["snapshot"] == out["described"]
    assert out["snapshot"]["sha256"] == sha256_hex(b"from a venv") and out["kind"] == "content"
    # Its command too.
    r = run(os.path.join(bindir, "snapfs-client"), "abi", env=client_env())
    assert r.returncode == 0 and json.loads(r.stdout)["sizeof snapfs_binding"] == 56
    # No library to load: refused with what to do, nothing published.
    r = use(bindir, snapfs.path, SNAPFS_LIBRARY=os.path.join(workdir, "no-such-lib.so"))
    assert r.returncode == 1 and "set SNAPFS_LIBRARY" in r.stderr and "ldconfig" in r.stderr


def test_the_installed_wheel_installs_offline_and_names_the_installed_library(snapfs, workdir):
    dest = os.path.join(workdir, "dest")
    r = run("meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest, "--quiet",
            timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = [os.path.join(top, f) for top, _, files in os.walk(dest) for f in files
              if f.endswith(".whl")]
    assert [os.path.basename(w) for w in wheels] == \
        [f"snapfs_client-{VERSION}-py3-none-any.whl"]
    assert wheels[0].endswith(f"/share/snapfs/python/snapfs_client-{VERSION}-py3-none-any.whl")
    bindir = venv(os.path.join(workdir, "venv"))
    # No index and no find-links: the wheel needs nothing else.
    r = run(os.path.join(bindir, "pip"), "install", "--no-index", wheels[0], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = use(bindir, snapfs.path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    libs = [os.path.join(top, f)[len(dest):] for top, _, files in os.walk(dest) for f in files
            if f == "libsnapfs.so.0"]
    assert out["library"] == libs[0], out  # the absolute path the install put it at
    assert out["snapshot"]["name"] == "venv.cfg"
