#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Builds the wheel of the Python client at `meson install` time, with the standard library
alone: `pip install PREFIX/share/snapfs/python/snapfs_client-VERSION-py3-none-any.whl` then
works in any virtual environment, offline, with no setuptools, and the module it installs
names the installed libsnapfs by its absolute path.

    mkwheel.py PYPROJECT MODULE README OUT

A wheel is a zip file (PEP 427): the module, and a .dist-info directory holding METADATA,
WHEEL, entry_points.txt and RECORD (each file's SHA-256 and size). Entries carry a fixed
date ($SOURCE_DATE_EPOCH, else 1980), so two builds of one source give the same bytes."""
import base64
import hashlib
import os
import sys
import time
import tomllib
import zipfile


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(pyproject, module, readme, out):
    with open(pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    name, version = project["name"], project["version"]
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    with open(readme, encoding="utf-8") as f:
        description = f.read()
    meta = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {project['description']}",
        f"License: {project['license']['text']}",
        f"Requires-Python: {project['requires-python']}",
        *[f"Classifier: {c}" for c in project.get("classifiers", [])],
        "Description-Content-Type: text/markdown",
        "",
        description,
    ]
    scripts = project.get("scripts", {})
    with open(module, "rb") as f:
        files = {os.path.basename(module): f.read()}
    files[f"{dist}/METADATA"] = "\n".join(meta).encode()
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: snapfs mkwheel.py\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    if scripts:
        files[f"{dist}/entry_points.txt"] = (
            "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())).encode()
    record = "".join(f"{path},{digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    when = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=when[:6])
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(*sys.argv[1:]))
