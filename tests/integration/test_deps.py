# SPDX-License-Identifier: MIT
"""scripts/deps.sh asks apt-get for what building and running snapfs needs, and only with
--test for the tooling of the tests, the benchmark, the Debian package and the registries;
it says what it installed. Run against stand-ins for dpkg-query and apt-get that play a
machine with nothing installed (the real ones would change this host)."""
import os
import stat

from snaptest import ROOT, run

DEPS = ROOT / "scripts" / "deps.sh"
# What only the tests and their tooling use: never in what the demo installs.
TEST_ONLY = {"valgrind", "clang", "llvm", "podman", "docker-registry", "prometheus", "lintian",
             "skopeo", "systemd-container", "gnuplot-nox", "python3-pytest", "python3-pytest-timeout",
             "python3-mypy",
             "bubblewrap", "debhelper", "btrfs-progs"}
BUILD_AND_RUN = {"build-essential", "meson", "ninja-build", "pkg-config", "libfuse3-dev",
                 "fuse3", "libssl-dev", "libmount-dev", "libjson-c-dev", "libcmocka-dev",
                 "python3"}

DPKG_QUERY = """#!/bin/sh
# A machine where only what apt-get installed here is installed.
state=$FAKE_STATE/installed
case "$*" in
  *'${Status}'*) p=$(eval echo \\${$#}); grep -qx "$p" "$state" 2>/dev/null && echo "install ok installed"; exit 0 ;;
  *) [ -f "$state" ] && sed 's/^/ii  /' "$state"; exit 0 ;;
esac
"""
APT_GET = """#!/bin/sh
echo "apt-get $*" >>"$FAKE_STATE/log"
[ "$1" = install ] || exit 0
for a; do case $a in -*|install) ;; *) echo "$a" >>"$FAKE_STATE/installed" ;; esac; done
"""


def fake_tools(workdir):
    bindir = os.path.join(workdir, "bin")
    os.mkdir(bindir)
    for name, text in (("dpkg-query", DPKG_QUERY), ("apt-get", APT_GET)):
        path = os.path.join(bindir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, stat.S_IRWXU)
    return bindir


def deps(workdir, *args):
    state = os.path.join(workdir, "state-" + "-".join(args or ("base",)))
    os.mkdir(state)
    bindir = os.path.join(workdir, "bin")
    if not os.path.isdir(bindir):
        fake_tools(workdir)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", FAKE_STATE=state)
    r = run(DEPS, *args, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(state, "installed")) as f:
        return set(f.read().split()), r.stdout


def test_deps_installs_what_snapfs_needs_and_the_test_tooling_only_with_test(workdir):
    base, out = deps(workdir)
    assert BUILD_AND_RUN <= base
    assert not base & TEST_ONLY, base & TEST_ONLY
    # It says what it installed.
    assert "scripts/deps.sh: installing " in out
    assert f"scripts/deps.sh: installed {len(base)} Debian packages: " in out
    full, out = deps(workdir, "--test")
    assert BUILD_AND_RUN | TEST_ONLY <= full
    r = run(DEPS, "--bench")
    assert r.returncode == 2 and "usage: scripts/deps.sh [--test]" in r.stderr
