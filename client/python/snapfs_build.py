#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python client's build backend (PEP 517), standard library only, so that
`pip install client/python` works offline under any Python 3.9 or later: pip needs nothing
from an index to build it (pyproject.toml: requires = [], backend-path = ["."]). Debian's
setuptools wheel, the one a host without an index has, works under Debian's /usr/bin/python3
alone (`AttributeError: install_layout` under any other).

It is also what `meson install` builds the installed wheel with, its _abi.py replaced by the
installed copy that names the installed libsnapfs by its absolute path:

    snapfs_build.py OUT.whl [ARCHIVE_PATH=FILE ...]

A wheel is a zip file (PEP 427): the package, and a .dist-info directory holding METADATA,
WHEEL, entry_points.txt and RECORD (each file's SHA-256 and size). Entries carry a fixed date
($SOURCE_DATE_EPOCH, else 1980), so two builds of one source give the same bytes."""
from __future__ import annotations

import base64
import hashlib
import importlib
import os
import re
import sys
import time
import zipfile
from typing import Any, Dict, List, Mapping, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "snapfs_client"


def _toml_project(text: str) -> Dict[str, Any]:
    """The [project] and [project.scripts] tables of this pyproject.toml: tomllib where there
    is one (3.11+), else the few forms the file uses (strings, lists of strings, an inline
    table of strings)."""
    try:
        # By name: the module is 3.11's, and this file is checked as the 3.9 it runs under.
        tomllib = importlib.import_module("tomllib")
    except ImportError:
        tomllib = None
    if tomllib is not None:
        found: Dict[str, Any] = tomllib.loads(text)["project"]
        return found
    project: Dict[str, Any] = {}
    table: Optional[str] = None
    pending = ""  # a list that goes on over lines
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or not line:
            continue
        if pending:
            pending += " " + line
            if "]" not in line:
                continue
            line, pending = pending, ""
        elif re.match(r"[\w\"-]+\s*=\s*\[", line) and "]" not in line:
            pending = line
            continue
        m = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if m:
            table = m.group(1)
            if table == "project.scripts":
                project["scripts"] = {}
            continue
        if table not in ("project", "project.scripts"):
            continue
        key, _, value = (s.strip() for s in line.partition("="))
        key = key.strip('"')
        parsed: Any
        if value.startswith("["):
            parsed = re.findall(r'"([^"]*)"', value)
        elif value.startswith("{"):
            parsed = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', value))
        else:
            parsed = value.strip('"')
        (project["scripts"] if table == "project.scripts" else project)[key] = parsed
    return project


def _project() -> Dict[str, Any]:
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        return _toml_project(f.read())


def _dist_info(project: Mapping[str, Any]) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"


def _metadata(project: Mapping[str, Any]) -> bytes:
    with open(os.path.join(HERE, project.get("readme", "README.md")), encoding="utf-8") as f:
        description = f.read()
    meta = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"License: {project['license']['text']}",
        f"Requires-Python: {project['requires-python']}",
        *[f"Classifier: {c}" for c in project.get("classifiers", [])],
        "Description-Content-Type: text/markdown",
        "",
        description,
    ]
    return "\n".join(meta).encode()


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _package_files(overrides: Mapping[str, str]) -> Dict[str, bytes]:
    """The package's files by archive path: every .py and py.typed under snapfs_client/, with
    overrides (archive path: file) in place of some."""
    files = {}
    src = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(src)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(src, name), "rb") as f:
                files[f"{PACKAGE}/{name}"] = f.read()
    for path, file in overrides.items():
        if path not in files:
            raise SystemExit(f"snapfs_build.py: {path} is no file of the package")
        with open(file, "rb") as f:
            files[path] = f.read()
    return files


def write_wheel(out: str, overrides: Optional[Mapping[str, str]] = None) -> str:
    project = _project()
    dist = _dist_info(project)
    files = _package_files(overrides or {})
    files[f"{dist}/METADATA"] = _metadata(project)
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: snapfs snapfs_build.py\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    scripts = project.get("scripts", {})
    if scripts:
        files[f"{dist}/entry_points.txt"] = (
            "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())).encode()
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    when = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=when[:6])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return os.path.basename(out)


def wheel_name() -> str:
    project = _project()
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


# ---- PEP 517 --------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = _project()
    dist = _dist_info(project)
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    with open(os.path.join(metadata_directory, dist, "METADATA"), "wb") as f:
        f.write(_metadata(project))
    return dist


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return write_wheel(os.path.join(wheel_directory, wheel_name()))


def build_sdist(sdist_directory: str,
                config_settings: Optional[Dict[str, Any]] = None) -> str:
    import tarfile
    project = _project()
    base = f"{project['name'].replace('-', '_')}-{project['version']}"
    out = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(out, "w:gz") as t:
        for name in ("pyproject.toml", "README.md", "snapfs_build.py"):
            t.add(os.path.join(HERE, name), f"{base}/{name}")
        for path in _package_files({}):
            t.add(os.path.join(HERE, path), f"{base}/{path}")
    return os.path.basename(out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[2])
    pairs = dict(a.split("=", 1) for a in sys.argv[2:])
    write_wheel(sys.argv[1], pairs)
