# SPDX-License-Identifier: MIT
from snaptest import run


def test_version_names_the_program(snapfs_bin):
    r = run(snapfs_bin, "--version")
    assert r.returncode == 0
    assert r.stdout.startswith("snapfs ")


def test_unknown_command_is_a_usage_error(snapfs_bin):
    r = run(snapfs_bin, "no-such-command")
    assert r.returncode == 2
    assert "unknown command" in r.stderr
    ok = run(snapfs_bin, "--help")
    assert ok.returncode == 0 and "Usage: snapfs" in ok.stdout
