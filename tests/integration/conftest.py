# SPDX-License-Identifier: MIT
"""Shared fixtures for the integration tests.

The suite runs inside `unshare -m --propagation private` (scripts/test.sh), so every mount a
test makes dies with the namespace even if the test crashes. Each test still checks that it
left no mount, no child process and no open descriptor behind.
"""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SNAPFS_BUILD", ROOT / "build"))
SNAPFS = BUILD / "cli" / "snapfs"


def mount_ids():
    with open("/proc/self/mountinfo") as f:
        return {line.split()[0] for line in f}


def child_pids():
    me = str(os.getpid())
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            kids.append(int(entry))
    return kids


def open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def leaves_nothing_behind():
    """Fail a test that leaves a mount, a child process or a descriptor behind."""
    mounts, fds = mount_ids(), open_fds()
    yield
    left_mounts = mount_ids() - mounts
    left_kids = child_pids()
    left_fds = {fd for fd in open_fds() - fds if os.path.exists(f"/proc/self/fd/{fd}")}
    assert not left_mounts, f"test left mounts behind: {left_mounts}"
    assert not left_kids, f"test left child processes behind: {left_kids}"
    assert not left_fds, f"test left descriptors behind: {left_fds}"


@pytest.fixture
def snapfs_bin():
    assert SNAPFS.exists(), f"build snapfs first ({SNAPFS} missing)"
    return str(SNAPFS)


def run(*args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    return subprocess.run([str(a) for a in args], **kw)
