# SPDX-License-Identifier: MIT
"""The README's first command: its demo part runs end to end against this build and exits 0
(scripts/demo.sh adds only installing and building)."""
import os

from snaptest import BUILD, ROOT, run


def test_the_demo_runs_end_to_end_and_exits_zero():
    r = run(ROOT / "scripts" / "demo-run.sh", BUILD, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "---------- 1 " in out                       # mode 0000 in ls -l
    assert "write refused: EROFS" in out
    assert "chmod 600 refused" in out
    assert "compliant" in out
    assert '"event":"publish"' in out                   # the audit log
    assert r.stdout.rstrip().endswith("unmounted")
    # The daemon's one line at start says how snapshots are read (on its standard error).
    assert "snapshot reads: " in r.stderr
