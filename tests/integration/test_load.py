# SPDX-License-Identifier: MIT
"""A short run of the load driver (scripts/load.sh runs the full one): concurrent clients of
different uids publish, verify and read back while unlinkers and greedy uids interfere."""
import os

from snaptest import BUILD, run


def load_driver():
    path = BUILD / "tests" / "load" / "load"
    assert path.exists(), f"{path} was not built"
    return str(path)


def test_concurrent_clients_never_see_a_mismatch_or_an_unexpected_error(mount_snapfs):
    # Every client uid reads what the others publish: --readers any.
    fs = mount_snapfs("--allow-other", "--readers", "any", "--publishers", "any", "--unlink-own",
                      "--max-snapshots", "10000", "--max-bytes", "256M")
    r = run(load_driver(), "--clients", "8", "--cycles", "60", "--unlinkers", "2",
            "--uid-base", "30000", fs.path, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "unexpected errors      none" in r.stdout
    assert "byte mismatches        0" in r.stdout
    assert "cycles                 480 " in r.stdout


def test_greedy_uids_are_stopped_by_quotas_while_others_keep_succeeding(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--readers", "any", "--publishers", "any", "--unlink-own",
                      "--max-bytes", "16M", "--max-snapshot-size", "1M",
                      "--max-staging", "4", "--max-staging-bytes", "2M")
    r = run(load_driver(), "--clients", "4", "--cycles", "60", "--unlinkers", "1",
            "--greedy", "2", "--max-size", "65536", "--uid-base", "31000", fs.path,
            timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "greedy stopped         2 of 2" in r.stdout
    assert "unexpected errors      none" in r.stdout
    assert "cycles                 240 " in r.stdout
    # The greedy uids' staging files are gone again.
    assert os.listdir(fs.p(".staging")) == []
