# SPDX-License-Identifier: MIT
"""The Debian package, built once by scripts/package.sh (dpkg-buildpackage, debhelper driving
meson, lintian), installed with dpkg into a throwaway copy of this host and purged again.

The copy is an overlay: this host's root below, every write in an upper directory of the
test's own; it is booted with a real systemd (the host's own enabled services left out), so
dpkg's maintainer scripts do what they do on a real host: the unit is enabled and started on
install, restarted (taken over) on upgrade, stopped and removed on purge. package_driver.py,
run there as a oneshot unit, installs, uses the command, the daemon, the template, the Python
client, a C program built with the packaged header and pkg-config file, the man page and the
logrotate snippet, upgrades to a second package of another version (built the same way, with
SNAPFS_PACKAGE_VERSION) while readers check every byte, then purges; the tests below judge
what it saw, and what the purge left in the upper directory.

The package does not depend on the build under test (it is built from this checkout), so
scripts/test.sh runs this module once, with the normal build. By hand:
SNAPFS_BUILD=build unshare -m --propagation private -- python3 -m pytest
tests/integration/test_package.py (scripts/deps.sh installs debhelper, dh-python, lintian and
systemd-container)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from snaptest import ROOT, run

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = ROOT / "scripts" / "package.sh"
VERSION = json.loads(subprocess.run(["meson", "introspect", "--projectinfo",
                                     str(ROOT / "meson.build")], capture_output=True,
                                    text=True, check=True).stdout)["version"]
# The version of a second package of this checkout, to upgrade to (scripts/package.sh,
# SNAPFS_PACKAGE_VERSION): the next patch release.
NEWER = ".".join(VERSION.split(".")[:2] + [str(int(VERSION.split(".")[2]) + 1)])
BOOT_DEADLINE = 300  # seconds for the boot, install, checks, upgrade, purge and poweroff
MULTIARCH = "usr/lib/x86_64-linux-gnu"

# Where Debian's tools and Debian's layout put each piece.
EXPECTED = {
    "/usr/bin/snapfs", f"/{MULTIARCH}/libsnapfs.so.0", f"/{MULTIARCH}/libsnapfs.so",
    f"/{MULTIARCH}/libsnapfs.so.{VERSION}", f"/{MULTIARCH}/pkgconfig/snapfs.pc",
    "/usr/include/snapfs.h", "/usr/share/man/man1/snapfs.1.gz",
    "/lib/systemd/system/snapfs.service", "/lib/systemd/system/snapfs@.service",
    "/lib/systemd/system/snapfs-metrics.service", "/lib/systemd/system/snapfs-metrics.timer",
    "/etc/logrotate.d/snapfs", "/etc/snapfs/snapfs.conf",
    "/usr/lib/python3/dist-packages/snapfs_client/__init__.py",
    "/usr/lib/python3/dist-packages/snapfs_client/_abi.py",
    "/usr/lib/python3/dist-packages/snapfs_client/py.typed",
    f"/{MULTIARCH}/nodejs/snapfs/package.json", f"/{MULTIARCH}/nodejs/snapfs/snapfs.node",
    f"/{MULTIARCH}/nodejs/snapfs/lib/index.js", f"/{MULTIARCH}/nodejs/snapfs/lib/index.d.ts",
    "/usr/share/doc/snapfs/copyright", "/usr/share/doc/snapfs/changelog.gz",
    "/usr/share/bash-completion/completions/snapfs",
    f"/usr/share/snapfs/python/snapfs_client-{VERSION}-py3-none-any.whl",
}

DRIVER_UNIT = """[Unit]
Description=snapfs package scenario (test_package.py)
After=multi-user.target
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /snapfs-test/package_driver.py /snapfs-test /out
StandardOutput=file:/out/driver.log
StandardError=inherit
"""

# Runs in a mount namespace of its own: the overlay root, then the container on it. On this
# host /run is no tmpfs: nspawn's own state under /run/systemd goes to one of this namespace.
BOOT = r"""
set -eu
work=$1 test=$2 out=$3
mount -t tmpfs -o mode=755 tmpfs /run/systemd
mkdir "$work/upper" "$work/work" "$work/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$work/root"
root=$work/root
# The host's own enabled services (a database, a registry...) stay off, and so does its
# fstab: the copy boots what Debian's units pull in, and the test. A policy-rc.d (this host
# has one that forbids every start and stop, as container images do) is a host's choice,
# not Debian's: without it, dpkg starts and stops the units as on any Debian host.
rm -rf "$root"/etc/systemd/system/*.wants "$root/etc/fstab" "$root/usr/sbin/policy-rc.d"
cp -r "$test" "$root/snapfs-test"
cp "$test/snapfs-package-test.service" "$root/etc/systemd/system/"
exec systemd-nspawn --quiet --register=no --keep-unit -D "$root" --bind=/dev/fuse \
    --bind="$out:/out" --bind-ro="$work/upper:/snapfs-upper" \
    -b -- systemd.wants=snapfs-package-test.service
"""

# What dpkg and its triggers change in any install and purge, whatever the package: dpkg's
# own database and log, the loader's cache (ldconfig trigger), man-db's index (its trigger
# adds pages and leaves forgetting them to the daily man-db.timer); and the journal, which
# the whole run writes to.
BOOKKEEPING = re.compile(r"^/(var/lib/dpkg/|var/log/dpkg\.log$|etc/ld\.so\.cache$"
                         r"|var/cache/ldconfig/|var/cache/man/|var/log/journal/)")


def build_package(tmp_path_factory, **env):
    """scripts/package.sh into a directory of its own: (the .deb, its output, the directory)."""
    for tool in ("dpkg-buildpackage", "dh", "lintian", "systemd-nspawn"):
        assert shutil.which(tool), f"{tool} missing: scripts/deps.sh installs it"
    out = str(tmp_path_factory.mktemp("deb"))
    # The unit tests run elsewhere in the suite: not again at build time; and no debug
    # symbols package, which nothing here installs.
    r = run(PACKAGE, out, env=dict(os.environ, DEB_BUILD_OPTIONS="nocheck noddebs", **env),
            timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip().splitlines()[-1], r.stdout, out


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    """scripts/package.sh, once: the .deb, and lintian's word on it."""
    path, output, out = build_package(tmp_path_factory)
    try:
        yield path, output
    finally:
        shutil.rmtree(out)


@pytest.fixture(scope="module")
def newer_deb(tmp_path_factory):
    """The same checkout packaged as version NEWER, to upgrade to."""
    path, output, out = build_package(tmp_path_factory, SNAPFS_PACKAGE_VERSION=NEWER)
    try:
        yield path, output
    finally:
        shutil.rmtree(out)


@pytest.fixture(scope="module")
def installed(deb, newer_deb, tmp_path_factory):
    """Install, use, upgrade and purge in the booted copy: (result, upper before, upper after,
    upper directory on disk, journal)."""
    work = str(tmp_path_factory.mktemp("package"))
    test, out = os.path.join(work, "test"), os.path.join(work, "out")
    os.mkdir(test)
    os.mkdir(out)
    for f in (deb[0], ROOT / "tests" / "pkgconfig" / "example.c",
              os.path.join(HERE, "package_driver.py"), os.path.join(HERE, "systemd_driver.py"),
              os.path.join(HERE, "takeover_reader.py")):
        shutil.copy(f, test)
    os.mkdir(os.path.join(test, "newer"))
    shutil.copy(newer_deb[0], os.path.join(test, "newer"))
    with open(os.path.join(test, "snapfs-package-test.service"), "w") as f:
        f.write(DRIVER_UNIT)
    with open(os.path.join(work, "nspawn.log"), "w") as log:
        p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
                              BOOT, "sh", work, test, out], stdout=log,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(BOOT_DEADLINE)
        except subprocess.TimeoutExpired:
            p.terminate()  # nspawn powers the container off
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            rc = "timeout"

    def read(name, default=""):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            return default
        with open(path) as f:
            return f.read()

    journal = read("journal.txt")
    assert read("result.json"), \
        f"the driver wrote no result (nspawn: {rc})\n{read('driver.log')}\n" \
        f"{open(os.path.join(work, 'nspawn.log')).read()[-4000:]}\n{journal[-8000:]}"
    try:
        yield (json.loads(read("result.json")), json.loads(read("upper-before.json")),
               json.loads(read("upper-after.json")), os.path.join(work, "upper"), journal)
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", work], check=False)


def step(installed, name):
    res, journal = installed[0], installed[4]
    assert name not in res["errors"], f"{res['errors'][name]}\n---- journal\n{journal[-8000:]}"
    return res[name]


def test_the_package_is_built_by_debhelper_and_lintian_reports_no_error(deb):
    path, output = deb
    assert os.path.basename(path) == f"snapfs_{VERSION}_amd64.deb"
    # package.sh fails on a lintian error; what lintian printed is its last word before the
    # path: warnings are allowed, errors are not.
    assert not re.search(r"^E: ", output, re.M), output
    r = run("dpkg-deb", "--field", path, "Package", "Version", "Depends")
    assert r.returncode == 0, r.stderr
    fields = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert fields["Package"] == "snapfs" and fields["Version"] == VERSION
    for dep in ("fuse3", "libfuse3-3", "libssl3", "libmount1", "libjson-c5", "python3"):
        assert dep in fields["Depends"], fields


def test_an_install_whose_service_cannot_start_fails_with_the_units_reason(installed):
    res = step(installed, "install_refused")
    # A dead fuse.hello at /run/snapfs: dpkg -i returned 0 while the unit failed.
    assert res["dpkg"]["rc"] != 0, res["dpkg"]
    out = res["dpkg"]["out"] + res["dpkg"]["err"]
    assert "snapfs: snapfs.service did not start; nothing serves /run/snapfs. Its journal:" \
        in out, out
    assert "/run/snapfs: the dead mount there is not a snapfs mount; not clearing it" in out
    assert res["status"].endswith("half-configured"), res["status"]
    # The foreign mount was not the unit's to take: still there after the failed start.
    assert res["mounts"] == ["fuse.hello"], res
    # The allowance: the next test's install, the same .deb once the point is free, succeeds.


def test_dpkg_installs_every_piece_in_debians_places(installed):
    res = step(installed, "install")
    assert res["dpkg"]["rc"] == 0, res["dpkg"]
    assert res["status"]["out"] == f"install ok installed {VERSION}"
    assert EXPECTED <= set(res["files"]), EXPECTED - set(res["files"])
    # "PATH MD5" pairs: the logrotate snippet and the service's config file are the
    # administrator's to edit, kept across upgrades, removed by dpkg -P.
    assert set(res["conffiles"][0::2]) == {"/etc/logrotate.d/snapfs", "/etc/snapfs/snapfs.conf"}


def test_the_installed_unit_is_enabled_started_and_serves(installed):
    res = step(installed, "service")
    assert res["is_enabled"] == "enabled"
    # The metrics timer is shipped, not enabled: only a host that runs node_exporter wants it.
    assert res["metrics_timer"] == "disabled"
    assert (res["show"]["ActiveState"], res["show"]["SubState"]) == ("active", "running")
    assert res["show"]["FragmentPath"] == "/lib/systemd/system/snapfs.service"
    # Its settings come from the packaged conffile.
    assert "argv[]=/usr/bin/snapfs mount --foreground --config /etc/snapfs/snapfs.conf " \
        "/run/snapfs ;" in res["exec_start"], res["exec_start"]
    assert res["served"]["mounts"] == ["fuse.snapfs"]
    assert res["version"]["out"] == f"snapfs {VERSION}\n"


def test_the_packaged_clients_publish_and_verify_on_the_packaged_mount(installed):
    res = step(installed, "clients")
    # Debian's python3, no environment: the module and the library it loads, as packaged.
    assert res["python"]["rc"] == 0, res["python"]
    where, binding = res["python"]["out"].splitlines()
    assert where == "/usr/lib/python3/dist-packages/snapfs_client/__init__.py"
    assert res["verify"]["rc"] == 0 and res["verify"]["out"] == binding + "\n", res["verify"]
    # The packaged Node.js package, no environment but NODE_PATH: its addon and the library.
    assert res["node"]["rc"] == 0, res["node"]
    where, binding = res["node"]["out"].splitlines()
    assert where == f"/{MULTIARCH}/nodejs/snapfs/lib/index.js"
    assert binding.startswith("sha256=") and " dev=" in binding
    # A C program from the packaged header and pkg-config file, linked with the packaged
    # library, publishes and verifies.
    assert res["pkg_config"]["out"].split() == ["-lsnapfs"], res["pkg_config"]
    assert res["cc"]["rc"] == 0, res["cc"]
    assert res["example"]["rc"] == 0, res["example"]
    assert res["example"]["out"].startswith("sha256="), res["example"]
    assert re.search(r"libsnapfs\.so\.0 => (/usr)?/lib/x86_64-linux-gnu/libsnapfs\.so\.0 ",
                     res["ldd"]), res["ldd"]
    assert res["man"]["out"] == "/usr/share/man/man1/snapfs.1.gz\n", res["man"]
    assert res["logrotate"]["rc"] == 0, res["logrotate"]
    assert "rotating pattern: /var/log/snapfs/*.log" in res["logrotate"]["out"] + \
        res["logrotate"]["err"]


def test_the_packaged_template_runs_an_instance(installed):
    res = step(installed, "template")
    assert res["enable"]["rc"] == 0, res["enable"]
    assert (res["show"]["ActiveState"], res["show"]["SubState"]) == ("active", "running")
    assert res["show"]["FragmentPath"] == "/lib/systemd/system/snapfs@.service"
    assert res["served"]["mounts"] == ["fuse.snapfs"]


def test_a_second_package_of_the_checkout_says_another_version(newer_deb):
    """What its daemon says (snapfs status) is judged after the upgrade below."""
    path, output = newer_deb
    assert os.path.basename(path) == f"snapfs_{NEWER}_amd64.deb"
    assert not re.search(r"^E: ", output, re.M), output
    r = run("dpkg-deb", "--field", path, "Version")
    assert (r.returncode, r.stdout) == (0, f"{NEWER}\n"), r


def test_an_upgrade_while_sandboxes_read_is_taken_over_and_no_reader_notices(installed):
    """docs/deployment.md, "Upgrading": dpkg -i of a package of another version while a
    reader on the mount and one in a bubblewrap sandbox (uid 1000, a scope's view bound at
    /run/snapfs) check every byte. The postinst restarts the unit and the running instance:
    each new daemon, of the new version, takes its mounts over."""
    res = step(installed, "upgrade")
    assert res["deb"] == [f"snapfs_{NEWER}_amd64.deb"]
    assert res["create"]["ok"] and res["grant"]["ok"] and res["remove"]["ok"], res
    assert res["dpkg"]["rc"] == 0, res["dpkg"]
    assert res["version"] == NEWER
    for unit in ("snapfs.service", "snapfs@pkg.service"):
        before, after = res["before"][unit], res["after"][unit]
        assert before["status"]["version"] == VERSION, (unit, before)
        # A new process of the new version, which took the mounts over (not a stop and a
        # start: that would have made new mounts, and counted no takeover).
        assert after["status"]["version"] == NEWER, (unit, after)
        assert after["pid"] != before["pid"] and after["status"]["pid"] == after["pid"]
        assert after["status"]["takeovers"] == before["status"]["takeovers"] + 1, (unit, after)
        assert (after["show"]["ActiveState"], after["show"]["SubState"]) == \
            ("active", "running"), (unit, after)
    # Requests failed, wrong bytes, ENOTCONN, bindings moved: 0; SIGBUS would have killed a
    # reader (exit -7 or 135).
    assert res["exit"] == [0, 0], res["exit"]
    for name in ("host", "box"):
        r = res[name]
        assert r["rounds"] > 2 and r["reads"] > 0, (name, r)
        assert r["failures"] == {} and r["wrong_bytes"] == 0 and r["bindings_moved"] == 0, \
            (name, r)
    assert res["ident_after"] == res["ident_before"]


def test_dpkg_purge_stops_everything_and_removes_what_it_made(installed):
    res = step(installed, "purge")
    # The daemons had made their stores and logs, the administrator the instance's config
    # file: the purge takes them too.
    assert res["state"] == {"/var/lib/snapfs": True, "/var/lib/snapfs-pkg": True,
                            "/var/log/snapfs/audit.log": True, "/etc/snapfs/pkg.conf": True}
    assert res["dpkg"]["rc"] == 0, res["dpkg"]
    # The config files went; the administrator's own key beside them stayed.
    assert res["kept"] == {"/etc/snapfs/release.pub": True, "/etc/snapfs/pkg.conf": False,
                           "/etc/snapfs/snapfs.conf": False}
    assert res["status"]["rc"] == 1, res["status"]  # dpkg-query: no such package
    for unit, show in res["units"].items():
        assert show == {"LoadState": "not-found", "ActiveState": "inactive"}, (unit, show)
    assert res["pids"] == [] and res["mounts"] == []
    assert res["mountinfo"] == {"/run/snapfs": [], "/run/snapfs-pkg": []}
    assert res["ldconfig"] == []
    assert res["named_snapfs"] == []


def test_install_then_purge_leaves_nothing_in_the_filesystem(installed):
    """Everything the install and the purge wrote lands in the overlay's upper directory:
    after the purge, every path there that was not there before is either a file of the
    host changed by dpkg's own bookkeeping, or something the package left."""
    res, before, after, upper = installed[:4]
    assert not res["errors"], res["errors"]
    new = {p: kind for p, kind in after.items()
           if p not in before and kind != "w" and not BOOKKEEPING.match(p)}
    # Paths the host did not have at all: created, and never removed.
    created = sorted(p for p in new if not os.path.lexists(p))
    assert created == [], created
    # Host files changed on the way (copied up): dpkg's bookkeeping only.
    changed = sorted(p for p, kind in new.items() if kind != "d")
    assert changed == [], changed
    # The bookkeeping forgot the package: dpkg's database, the loader's cache.
    for path in ("/var/lib/dpkg/status", "/etc/ld.so.cache"):
        with open(upper + path, "rb") as f:
            assert b"snapfs" not in f.read(), path
    # And nothing anywhere in the upper directory bears the package's name (but the test's
    # own files).
    named = sorted(p for p in after if "snapfs" in os.path.basename(p)
                   and not p.startswith(("/snapfs-test", "/snapfs-upper"))
                   and "snapfs-package-test" not in p)
    assert named == [], named
