# SPDX-License-Identifier: MIT
"""A scope's guaranteed minimum (limits.min_bytes, snapfs scope create --min-bytes): what it
does not use of it is kept from every other scope and the main mount's uids but the owner, so a
scope flooding within its own limit never leaves another scope ENOSPC below its minimum. Each
refusal by its errno, beside the allowance that still works."""
import errno
import os
import subprocess

import pytest

from clients import Client
from snaptest import NOBODY_UID, SNAPFS, control, control_ok, is_mounted, run, sha256_hex, \
    wait_for

K, M = 1 << 10, 1 << 20
SETPRIV = ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
           "/usr/bin/python3", "-c"]

# A tenant of a scope: publishes CHUNK bytes at a time through its view, keeps each published
# snapshot open and unlinks it (as a hostile tenant would, so that nothing it holds shows in
# the view), until the daemon refuses; prints "i step errno", then holds its descriptors until
# its standard input closes.
FLOOD = r'''
import errno, hashlib, os, sys
view, chunk = sys.argv[1], int(sys.argv[2])
held, out = [], "none"
for i in range(64):
    data = bytes([i]) * chunk
    path = os.path.join(view, ".staging", f"f{i}")
    step = "write"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        finally:
            os.close(fd)
        step = "rename"
        digest = os.path.join(view, hashlib.sha256(data).hexdigest())
        os.rename(path, digest)
    except OSError as e:
        out = f"{i} {step} {e.errno}"
        break
    held.append(os.open(digest, os.O_RDONLY))
    os.unlink(digest)
print(out, flush=True)
sys.stdin.read()
'''

# One publish through a view as the tenant: "ok DIGEST BYTES-READ-BACK-MATCH", or
# "refused STEP ERRNO REFUSAL" (what the daemon says on the staging file).
PUBLISH = r'''
import hashlib, os, sys
view, size, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = (name.encode() * size)[:size]
path = os.path.join(view, ".staging", name)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
try:
    done = 0
    while done < len(data):
        done += os.write(fd, data[done:])
except OSError as e:
    why = os.getxattr(path, "user.snapfs.refusal").decode()
    print("refused write", e.errno, why)
    raise SystemExit(0)
finally:
    os.close(fd)
digest = os.path.join(view, hashlib.sha256(data).hexdigest())
try:
    os.rename(path, digest)
except OSError as e:
    print("refused rename", e.errno, "-")
    raise SystemExit(0)
with open(digest, "rb") as f:
    print("ok", os.path.basename(digest), f.read() == data)
'''


def create(fs, workdir, name, **limits):
    views = os.path.join(workdir, "views")
    os.makedirs(views, exist_ok=True)
    return control(fs.path, {"op": "scope-create", "name": name, "publish": True,
                             "uids": [NOBODY_UID], "view": os.path.join(views, name),
                             "limits": limits})


def created(fs, workdir, name, **limits):
    reply = create(fs, workdir, name, **limits)
    assert reply["ok"], reply
    return reply["scope"]


def publish(view, size, name):
    r = subprocess.run(SETPRIV + [PUBLISH, view, str(size), name], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_another_scopes_publish_within_its_minimum_succeeds_when_a_flooding_scope_is_refused(
        mount_snapfs, workdir):
    # 8M: the owner's reserve is 512K, sb's minimum 2M. sa may hold 7M by its own limit, and
    # took 7M before sb's first publish, which then got ENOSPC; only 5.5M is left to it now.
    fs = mount_snapfs("--allow-other", "--max-bytes", "8M", "--max-snapshot-size", "2M")
    sa = created(fs, workdir, "sa", max_bytes="7M")
    sb = created(fs, workdir, "sb", max_bytes="4M", min_bytes="2M")
    sc = created(fs, workdir, "sc", max_bytes="4M")
    assert (sa["limits"]["min_bytes"], sb["limits"]["min_bytes"]) == (0, 2 * M)
    tenant = subprocess.Popen(SETPRIV + [FLOOD, sa["view"], str(512 * K)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = tenant.stdout.readline().split()
        # Eleven chunks (5.5M) held, the twelfth refused at its first write: ENOSPC, the rest
        # is kept, not sa's limit (EDQUOT at 7M).
        assert line == ["11", "write", str(errno.ENOSPC)], line
        usage = control_ok(fs.path, {"op": "scope-show", "name": "sa"})["scope"]["usage"]
        assert (usage["snapshots"], usage["bytes"]) == (11, 11 * 512 * K), usage
        # At that moment sb publishes 1.5M within its minimum: it succeeds, read back right.
        ok, digest, same = publish(sb["view"], 1536 * K, "sb")
        assert (ok, same) == ("ok", "True")
        assert digest == sha256_hex((b"sb" * (1536 * K))[:1536 * K])
        # Beside it, sc (no minimum) is refused: the rest is kept for sb's minimum.
        refused = publish(sc["view"], 4 * K, "sc")
        assert refused == ["refused", "write", str(errno.ENOSPC), "reserved", f"kept={512 * K}"]
        # ... which sb may still use.
        assert publish(sb["view"], 256 * K, "sb2")[0] == "ok"
    finally:
        tenant.stdin.close()
        try:
            tenant.wait(timeout=30)
        finally:
            if tenant.poll() is None:
                tenant.kill()
                tenant.wait(timeout=30)
            tenant.stdout.close()
    # sa's descriptors closed: its room is back, and sc publishes.
    wait_for(lambda: control_ok(fs.path, {"op": "scope-show", "name": "sa"})["scope"]["usage"]
             ["bytes"] == 0, "sa's usage once its descriptors are closed")
    assert publish(sc["view"], 4 * K, "sc2")[0] == "ok"


def test_a_minimum_the_daemon_cannot_guarantee_is_refused_before_anything_is_made(
        mount_snapfs, workdir):
    fs = mount_snapfs("--allow-other", "--max-bytes", "8M", "--max-snapshot-size", "2M")
    created(fs, workdir, "sb", max_bytes="4M", min_bytes="2M")
    # 2M kept for sb and 512K for the owner: 6M more cannot be guaranteed; 5.5M can.
    reply = create(fs, workdir, "sd", max_bytes="6M", min_bytes="6M")
    assert (reply["ok"], reply["error"]) == (False, "ENOSPC"), reply
    assert "min_bytes 6291456 cannot be guaranteed" in reply["message"], reply
    assert "--max-bytes (8388608)" in reply["message"] and "2097152" in reply["message"]
    view = os.path.join(workdir, "views", "sd")
    assert not os.path.exists(view)
    assert [s["name"] for s in control_ok(fs.path, {"op": "scope-list"})["scopes"]] == ["sb"]
    sd = created(fs, workdir, "sd", max_bytes="6M", min_bytes="5632K")
    assert sd["limits"]["min_bytes"] == 5632 * K and is_mounted(sd["view"])
    control_ok(fs.path, {"op": "scope-remove", "name": "sd"})
    # More than is free now: what the owner holds is not there to keep.
    fs.publish(b"o" * (2 * M), "owner")
    fs.publish(b"p" * (2 * M), "owner2")
    reply = create(fs, workdir, "se", max_bytes="4M", min_bytes="2M")
    assert (reply["ok"], reply["error"]) == (False, "ENOSPC"), reply
    assert "are free for a scope now" in reply["message"]
    assert created(fs, workdir, "se", max_bytes="4M", min_bytes="1M")["limits"]["min_bytes"] \
        == M


def test_a_minimum_above_the_scopes_max_bytes_is_einval_naming_it(snapfs, workdir):
    reply = create(snapfs, workdir, "s", max_bytes="1M", min_bytes="2M")
    assert (reply["ok"], reply["error"]) == (False, "EINVAL"), reply
    assert "limits.min_bytes" in reply["message"] and "max_bytes" in reply["message"]
    reply = create(snapfs, workdir, "s", max_bytes="1M", min_bytes=0)
    assert (reply["ok"], reply["error"]) == (False, "EINVAL"), reply
    assert "limits.min_bytes is out of range" in reply["message"]
    assert created(snapfs, workdir, "s", max_bytes="1M", min_bytes="1M")["limits"][
        "min_bytes"] == M


def test_a_minimum_survives_a_restart_and_is_kept_again(mount_snapfs, workdir, runtime_dir):
    store = os.path.join(workdir, "store")
    args = ("--store", store, "--runtime-store", runtime_dir, "--allow-other",
            "--max-bytes", "8M", "--max-snapshot-size", "2M")
    fs = mount_snapfs(*args)
    sb = created(fs, workdir, "sb", max_bytes="4M", min_bytes="2M")
    assert publish(sb["view"], 1536 * K, "sb")[0] == "ok"
    assert fs.stop() == 0
    fs2 = mount_snapfs(*args, name="mnt")
    # Brought back with its file, its own content not held against it.
    shown = control_ok(fs2.path, {"op": "scope-show", "name": "sb"})["scope"]
    assert (shown["limits"]["min_bytes"], shown["usage"]["bytes"]) == (2 * M, 1536 * K)
    assert publish(sb["view"], 256 * K, "sb2")[0] == "ok"
    # Kept again: a minimum past what is left beside it is refused, one that fits is not.
    reply = create(fs2, workdir, "sd", max_bytes="6M", min_bytes="6M")
    assert (reply["ok"], reply["error"]) == (False, "ENOSPC"), reply
    assert created(fs2, workdir, "sd", max_bytes="6M", min_bytes="5632K")["limits"][
        "min_bytes"] == 5632 * K


@pytest.mark.parametrize("name", ["c", "python"])
def test_each_client_and_the_cli_ask_for_a_minimum_and_show_it(mount_snapfs, workdir, name):
    fs = mount_snapfs("--max-bytes", "8M", "--max-snapshot-size", "2M")
    client, views = Client(name), os.path.join(workdir, "views")
    os.makedirs(views)
    out = client("scope-create", "--publish", "--max-bytes", 4 * M, "--min-bytes", 2 * M,
                 fs.path, "sb", os.path.join(views, "sb"))
    assert out["scope"]["limits"]["min_bytes"] == 2 * M, out
    out = client("scope-create", "--max-bytes", 6 * M, "--min-bytes", 6 * M, fs.path, "sd",
                 os.path.join(views, "sd"))
    assert out["error"] == "ENOSPC" and "cannot be guaranteed" in out["reasons"][0]["message"]
    r = run(SNAPFS, "scope", "create", "--mount", fs.path, "sd", "--view",
            os.path.join(views, "sd"), "--max-bytes", "6M", "--min-bytes", "6M")
    assert r.returncode == 1 and "limits.min_bytes 6291456 cannot be guaranteed" in r.stderr
    r = run(SNAPFS, "scope", "create", "--mount", fs.path, "sd", "--view",
            os.path.join(views, "sd"), "--max-bytes", "6M", "--min-bytes", "5632K")
    assert r.returncode == 0 and " min-bytes=5767168\n" in r.stdout, r.stderr
