# SPDX-License-Identifier: MIT
"""The Python client where Python users install things: `pip install client/python` into a
virtual environment of every Python 3 interpreter on the machine (Debian's /usr/bin/python3,
and the python3 first on PATH when it is another), offline and with no index or wheel
directory at all (its build backend is its own, standard library only); the wheel `meson
install` puts under PREFIX/share/snapfs/python; each then publishes and describes on a real
mount. A library that cannot be loaded is refused with the one command that fixes it. And
`mypy --strict` (Debian's python3-mypy) finds the package's annotations whole, as Python 3.9
(the oldest it installs under) has them, and refuses a program that misuses them."""
import json
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from clients import PYCLIENT, client_env
from snaptest import BUILD, ROOT, run, sha256_hex

VERSION = json.loads(subprocess.run(["meson", "introspect", "--projectinfo",
                                     str(ROOT / "meson.build")], capture_output=True,
                                    text=True, check=True).stdout)["version"]

USE = r"""
import json, sys
import snapfs_client as snapfs
b = snapfs.publish(sys.argv[1], b"from a venv", name="venv.cfg")
d = snapfs.describe(sys.argv[1], str(b), trust=snapfs.Trust(owner=0))
with snapfs.open_verified(sys.argv[1], b) as fd:
    data = snapfs.api.pread_all(fd)
print(json.dumps({"file": snapfs.__file__, "snapshot": b.as_dict(), "described": d.as_dict(),
                  "kind": d.kind, "library": snapfs._INSTALLED_LIBRARY,
                  "closed": fd.closed, "data": data.decode(),
                  "python": sys.version_info[:2]}))
"""


def interpreters():
    """Every distinct Python 3 on the machine this suite would meet: Debian's, and the one
    first on PATH (here pyenv's), by the executable each reports."""
    found = {}
    for cand in ("/usr/bin/python3", shutil.which("python3")):
        if not cand:
            continue
        r = subprocess.run([cand, "-c", "import sys; print(sys.executable)"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            found.setdefault(os.path.realpath(r.stdout.strip()), cand)
    return sorted(found.values())


PYTHONS = interpreters()


def venv(python, path):
    r = run(python, "-m", "venv", path, timeout=120)
    assert r.returncode == 0, r.stderr
    return os.path.join(path, "bin")


def use(bindir, mount, **env):
    return run(os.path.join(bindir, "python"), "-c", USE, mount, env={**client_env(), **env})


def test_versions_of_the_package_the_module_and_snapfs_agree():
    with open(PYCLIENT.parent / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    with open(PYCLIENT / "_abi.py") as f:
        module = f.read()
    assert project["version"] == VERSION
    assert f'__version__ = "{VERSION}"' in module
    assert tomllib.loads((PYCLIENT.parent / "pyproject.toml").read_text())["build-system"] == \
        {"requires": [], "build-backend": "snapfs_build", "backend-path": ["."]}


def test_the_machine_has_debians_python_among_those_tested():
    assert "/usr/bin/python3" in PYTHONS


@pytest.mark.parametrize("python", PYTHONS)
def test_pip_installs_the_source_tree_client_into_a_venv_offline(python, snapfs, workdir):
    # A copy: pip builds in the tree it is given, and the checkout stays clean.
    src = os.path.join(workdir, "python")
    shutil.copytree(PYCLIENT.parent, src, ignore=shutil.ignore_patterns("__pycache__"))
    bindir = venv(python, os.path.join(workdir, "venv"))
    # No index, no wheel directory: nothing to fetch, nothing needed.
    r = run(os.path.join(bindir, "pip"), "install", "--no-index", src, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = use(bindir, snapfs.path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["file"].startswith(os.path.join(workdir, "venv")), out
    assert out["snapshot"]["name"] == "venv.cfg" and out["snapshot"] == out["described"]
    assert out["snapshot"]["sha256"] == sha256_hex(b"from a venv") and out["kind"] == "content"
    assert out["closed"] is True and out["data"] == "from a venv"
    # Its command too.
    r = run(os.path.join(bindir, "snapfs-client"), "abi", env=client_env())
    assert r.returncode == 0 and json.loads(r.stdout)["sizeof snapfs_binding"] == 56
    # No library to load: refused with the one command that fixes it, nothing published.
    r = use(bindir, snapfs.path, SNAPFS_LIBRARY=os.path.join(workdir, "no-such-lib.so"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "`sudo scripts/install.sh /usr/local`" in r.stderr and "SNAPFS_LIBRARY" in r.stderr


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
    bindir = venv("/usr/bin/python3", os.path.join(workdir, "venv"))
    r = run(os.path.join(bindir, "pip"), "install", "--no-index", wheels[0], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = use(bindir, snapfs.path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    libs = [os.path.join(top, f)[len(dest):] for top, _, files in os.walk(dest) for f in files
            if f == "libsnapfs.so.0"]
    assert out["library"] == libs[0], out  # the absolute path the install put it at
    assert out["snapshot"]["name"] == "venv.cfg"
    # The wheel is the package, typed, with the installed _abi.py.
    import zipfile
    with zipfile.ZipFile(wheels[0]) as z:
        names = set(z.namelist())
        abi = z.read("snapfs_client/_abi.py").decode()
    assert {"snapfs_client/__init__.py", "snapfs_client/py.typed", "snapfs_client/api.py",
            "snapfs_client/cli.py", "snapfs_client/values.py"} <= names
    assert f"_INSTALLED_LIBRARY = {libs[0]!r}" in abi


MISUSE = """
import snapfs_client as snapfs
snapfs.publish("/run/snapfs", "not bytes")
snapfs.open_verified("/run/snapfs", 42)
snapfs.Trust(owner="0")
x: str = snapfs.parse_size("64M")
"""


def mypy(*args, **env):
    return run("/usr/bin/python3", "-m", "mypy", "--strict", "--no-incremental", *args,
               env={**os.environ, **env}, timeout=600)


def test_mypy_strict_passes_the_package_and_refuses_a_program_that_misuses_it(workdir):
    # Checked as the oldest Python it installs under (requires-python), its build backend
    # too: a construct or a module of a later Python is found here, not in a user's venv.
    with open(PYCLIENT.parent / "pyproject.toml", "rb") as f:
        oldest = tomllib.load(f)["project"]["requires-python"]
    assert oldest == ">=3.9"
    r = mypy("--python-version", "3.9", PYCLIENT, PYCLIENT.parent / "snapfs_build.py")
    assert r.returncode == 0 and r.stdout.startswith("Success: no issues found"), r.stdout
    prog = os.path.join(workdir, "misuse.py")
    with open(prog, "w") as f:
        f.write(MISUSE)
    r = mypy(prog, MYPYPATH=str(PYCLIENT.parent))
    assert r.returncode == 1, r.stdout
    lines = {int(line.split(":")[1]) for line in r.stdout.splitlines() if ": error:" in line}
    assert lines == {3, 4, 5, 6}, r.stdout
