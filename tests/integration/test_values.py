# SPDX-License-Identifier: MIT
"""The Python client reads a uid, a size and a duration by the grammars of every snapfs command
(common/values.h): tests/vectors/values.json, the very cases the C unit test runs
(tests/unit/test_values.c), give each input the same value, or the same refusal with the same
message, here. No mount: the client's own parsing, before any call into libsnapfs."""
import json
import subprocess
import sys

import pytest

from clients import PYCLIENT, client_env
from snaptest import ROOT

sys.path.insert(0, str(PYCLIENT.parent))
import snapfs_client  # noqa: E402

VECTORS = json.loads((ROOT / "tests" / "vectors" / "values.json").read_text())
# What the Python client parses itself; uid lists and counts are the daemon's.
PARSED = {"uid": snapfs_client.parse_owner, "size": snapfs_client.parse_size,
          "duration": snapfs_client.parse_duration}
U64 = (1 << 64) - 1


def cases(kind):
    return [c for c in VECTORS if c["type"] == kind]


def test_the_vectors_hold_cases_of_every_type_the_client_parses():
    assert {c["type"] for c in VECTORS} >= set(PARSED)
    for kind in PARSED:
        assert any("value" in c for c in cases(kind)) and any("error" in c for c in cases(kind))


@pytest.mark.parametrize("kind", sorted(PARSED))
def test_every_vector_gets_the_value_or_the_message_c_gives(kind):
    for c in cases(kind):
        lo, hi = c.get("min", 0), c.get("max", U64)
        message = snapfs_client.value_error(kind, c["input"], lo, hi)
        if "value" in c:
            assert PARSED[kind](c["input"]) == c["value"], c
            assert message is None, c
        else:
            assert message == c["message"], c
            if lo == 0 and hi == U64:  # refused by the grammar, not by a range
                assert PARSED[kind](c["input"]) is None, c


def test_the_script_refuses_a_bad_owner_and_size_with_the_same_message(workdir):
    """The script's --owner, $SNAPFS_OWNER and --max-size, beside the values it accepts."""
    def script(*argv, env=None):
        return subprocess.run([sys.executable, str(PYCLIENT), *argv], capture_output=True,
                              text=True, timeout=60, env=dict(client_env(), **(env or {})))
    want = next(c for c in cases("uid") if c["input"] == "007")["message"]
    r = script("open", "--owner", "007", workdir, "x")
    assert r.returncode == 2 and want in r.stderr, r.stderr
    r = script("open", workdir, "x", env={"SNAPFS_OWNER": "007"})
    assert r.returncode == 2 and f"SNAPFS_OWNER: {want}" in r.stderr, r.stderr
    want = next(c for c in cases("size") if c["input"] == "12Q")["message"]
    r = script("open", "--max-size", "12Q", workdir, "x")
    assert r.returncode == 2 and want in r.stderr, r.stderr
    # The allowance: the same options with good values get past the parsing, to the refusal
    # of "x" as a binding (exit 1, one JSON object).
    r = script("open", "--owner", "7", "--max-size", "64M", workdir, "x")
    assert r.returncode == 1 and json.loads(r.stdout)["error"] == "EINVAL", r.stdout + r.stderr
