# SPDX-License-Identifier: MIT
"""libsnapfs as installed: `meson install` into a scratch directory, then pkg-config and a C
compiler build tests/pkgconfig/example.c against the installed header and library only, and
that program publishes and verifies on a real mount."""
import os
import re
import shutil

import pytest

from clients import sanitized
from snaptest import BUILD, ROOT, run, sha256_hex

EXAMPLE = ROOT / "tests" / "pkgconfig" / "example.c"
EXPORTED = {"snapfs_binding_format", "snapfs_binding_parse", "snapfs_publish",
            "snapfs_publish_fd", "snapfs_open_verified", "snapfs_open_digest",
            "snapfs_verify_fd", "snapfs_strerror"}


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    for tool in ("meson", "pkg-config", "cc", "nm"):
        assert shutil.which(tool), f"{tool} missing: scripts/deps.sh installs it"


@pytest.fixture
def installed(workdir):
    """The build installed under workdir/dest, and where its pieces landed."""
    dest = os.path.join(workdir, "dest")
    r = run("meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest, "--quiet",
            timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    found = {}
    for top, _, files in os.walk(dest):
        for f in files:
            found.setdefault(f, os.path.join(top, f))
    return dest, found


def test_install_puts_library_header_pkgconfig_man_page_and_python_client(installed):
    _, found = installed
    for name in ("libsnapfs.so.0", "snapfs.h", "snapfs.pc", "snapfs.1", "snapfs_client.py",
                 "snapfs"):
        assert name in found, f"{name} not installed"
    assert found["snapfs.1"].endswith("/man1/snapfs.1")


def test_the_installed_library_exports_only_the_public_functions(installed):
    _, found = installed
    r = run("nm", "-D", "--defined-only", found["libsnapfs.so.0"])
    assert r.returncode == 0, r.stderr
    symbols = {line.split()[-1].split("@")[0] for line in r.stdout.splitlines()
               if line.split()[1] in ("T", "W", "D", "B")}
    assert symbols == EXPORTED
    with open(found["snapfs.h"]) as f:
        header = f.read()
    assert all(re.search(rf"\b{s}\(", header) for s in EXPORTED)


def test_a_program_built_with_pkg_config_publishes_and_verifies(installed, snapfs, workdir):
    dest, found = installed
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(found["snapfs.pc"]),
               PKG_CONFIG_SYSROOT_DIR=dest)
    r = run("pkg-config", "--cflags", "--libs", "snapfs", env=env)
    assert r.returncode == 0, r.stderr
    flags = r.stdout.split()
    assert f"-I{os.path.dirname(found['snapfs.h'])}" in flags and "-lsnapfs" in flags
    exe = os.path.join(workdir, "example")
    # A program linked against a sanitized library is built with the same sanitizers.
    extra = ["-fsanitize=address,undefined"] if sanitized() else []
    r = run("cc", "-std=c17", "-Wall", "-Wextra", "-Werror", *extra, str(EXAMPLE), "-o", exe,
            *flags, timeout=120)
    assert r.returncode == 0, r.stderr
    libdir = os.path.dirname(found["libsnapfs.so.0"])
    run_env = dict(os.environ, LD_LIBRARY_PATH=libdir)

    r = run(exe, snapfs.path, env=run_env)
    assert r.returncode == 0, r.stderr
    digest = sha256_hex(b'{"mcpServers": {}}\n')
    assert r.stdout == os.getxattr(snapfs.p(digest), "user.snapfs.binding").decode() + "\n"
    # It loaded the installed library, not the one in the build tree.
    r = run("ldd", exe, env=run_env)
    assert f"{libdir}/libsnapfs.so.0" in r.stdout

    # The same program on a directory that is not a snapfs mount: refused, with reasons.
    r = run(exe, workdir, env=run_env)
    assert r.returncode == 1
    assert re.search(r"^not-a-mount-point: ", r.stderr, re.M)
    assert r.stderr.endswith("\nnot a compliant snapfs mount\n")


def test_the_readme_shows_the_example_as_it_is():
    with open(ROOT / "README.md") as f:
        readme = f.read()
    with open(EXAMPLE) as f:
        example = f.read()
    assert example in readme, "README.md's libsnapfs example differs from tests/pkgconfig"
