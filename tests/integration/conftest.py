# SPDX-License-Identifier: MIT
"""Shared fixtures for the integration tests; the helpers they use live in snaptest.py.

The suite runs inside `unshare -m --propagation private` (scripts/test.sh), so every mount a
test makes dies with the namespace even if the test crashes. Each test still checks that it
left no mount, no child process and no open descriptor behind.
"""
import os
import subprocess
import tempfile

import pytest

from snaptest import (SANITIZER_REPORTS, SNAPFS, child_pids, has_sanitizer_report, is_mounted,
                      mount_ids, open_fds, sanitizer_reports, start_snapfs)


@pytest.fixture(autouse=True)
def leaves_nothing_behind():
    """Fail a test that leaves a mount, a child process or a descriptor behind, or during
    which any process wrote a sanitizer report."""
    mounts, fds, reports = mount_ids(), open_fds(), sanitizer_reports()
    yield
    left_mounts = mount_ids() - mounts
    left_kids = child_pids()
    left_fds = {fd for fd in open_fds() - fds if os.path.exists(f"/proc/self/fd/{fd}")}
    new_reports = sorted(sanitizer_reports() - reports)
    texts = []
    for name in new_reports:
        with open(os.path.join(SANITIZER_REPORTS, name), errors="replace") as f:
            texts.append(f"---- {name}\n{f.read()}")
    assert not new_reports, "sanitizer reports during the test:\n" + "\n".join(texts)
    assert not left_mounts, f"test left mounts behind: {left_mounts}"
    assert not left_kids, f"test left child processes behind: {left_kids}"
    assert not left_fds, f"test left descriptors behind: {left_fds}"


@pytest.fixture
def snapfs_bin():
    assert SNAPFS.exists(), f"build snapfs first ({SNAPFS} missing)"
    return str(SNAPFS)


@pytest.fixture
def workdir():
    """A world-traversable directory, so tests can act as a non-root uid under it."""
    d = tempfile.mkdtemp(prefix="snapfs-test-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    # Daemons started under d write their standard error to d/NAME.stderr: read them before
    # they go, so a sanitizer report from any daemon of the test fails it.
    reports = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".stderr"):
            with open(os.path.join(d, name), errors="replace") as f:
                text = f.read()
            if has_sanitizer_report(text):
                reports.append(f"---- {name}\n{text}")
    subprocess.run(["rm", "-rf", "--one-file-system", d], check=False)
    assert not reports, "sanitizer reports from daemons:\n" + "\n".join(reports)


@pytest.fixture
def runtime_dir():
    """A private directory on a RAM filesystem (/dev/shm, a tmpfs) for --runtime-store."""
    d = tempfile.mkdtemp(prefix="snapfs-runtime-", dir="/dev/shm")
    yield d
    subprocess.run(["rm", "-rf", "--one-file-system", d], check=False)


@pytest.fixture
def mount_snapfs(snapfs_bin, workdir):
    """Factory: mount_snapfs(*options) -> Snapfs, unmounted (SIGTERM, exit 0) at the end."""
    started = []

    def start(*opts, name="mnt"):
        path = os.path.join(workdir, name)
        os.makedirs(path, exist_ok=True)
        fs = start_snapfs(snapfs_bin, path, *opts, audit_log=os.path.join(workdir, name + ".audit"))
        started.append(fs)
        return fs

    yield start
    # Last started first: a daemon restarted at an earlier one's path must be stopped before
    # the earlier entry's "still mounted?" check, or that check's lazy unmount ends the live
    # daemon's session and the SIGTERM sent next lands after it removed its handlers.
    for fs in reversed(started):
        died = None
        if fs.proc.poll() is None:
            rc = fs.stop()
            assert rc == 0, f"snapfs exited {rc} on SIGTERM:\n{fs.stderr()}"
            assert not is_mounted(fs.path), "snapfs left its mount behind"
        else:
            rc = fs.proc.returncode
            if fs.proc.stdout:
                fs.proc.stdout.close()
            # Ended by itself, not by the test: only a clean exit (an unmount) is fine. 86 and
            # 87 are the sanitizers' exit codes; a negative code is a signal nobody sent.
            if not fs.stopped and rc != 0:
                died = f"snapfs died during the test (exit {rc}):\n{fs.stderr()}"
        if is_mounted(fs.path):  # a test that killed the daemon leaves ENOTCONN
            subprocess.run(["umount", "-l", fs.path], check=False)
        assert died is None, died


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "readers_any: the snapfs fixture's mount is read by every uid (--readers "
        "any): the test's subject is what another uid meets as a reader")


@pytest.fixture
def snapfs(request, mount_snapfs):
    """A default mount, reachable by other uids; its content the owner's and root's alone
    (no --readers), or every uid's for a test marked readers_any."""
    if request.node.get_closest_marker("readers_any"):
        return mount_snapfs("--allow-other", "--readers", "any")
    return mount_snapfs("--allow-other")

