# SPDX-License-Identifier: MIT
"""Noisy neighbours: what one uid does to the daemon must not stop it serving another. The
audit log first: which files it accepts, what a flood of refusals costs it, and the bytes of
hostile names."""
import json
import os
import signal

import pytest

from snaptest import E, NOBODY_UID, UID_PRELUDE, as_uid, errno_of, is_mounted, start_snapfs


def refused_start(snapfs_bin, path, log):
    proc = start_snapfs(snapfs_bin, path, audit_log=log, expect_ready=False)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, err


@pytest.mark.parametrize("kind", ["fifo", "fifo-with-reader", "group-writable", "symlink"])
def test_an_audit_log_that_is_not_a_private_regular_file_is_refused_and_nothing_mounted(
        snapfs_bin, workdir, kind):
    path = os.path.join(workdir, "mnt")
    os.mkdir(path)
    log = os.path.join(workdir, "audit")
    reader = None
    if kind.startswith("fifo"):
        # The attack: the log path pre-created as a FIFO nobody reads would block the writer
        # while it holds the kernel's directory lock, hanging every other uid's requests.
        os.mkfifo(log, 0o600)
        if kind == "fifo-with-reader":
            reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
        want = "not a regular file"
    elif kind == "group-writable":
        os.close(os.open(log, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(log, 0o620)
        want = "writable by group or others"
    else:
        os.close(os.open(os.path.join(workdir, "elsewhere"), os.O_WRONLY | os.O_CREAT, 0o600))
        os.symlink(os.path.join(workdir, "elsewhere"), log)
        want = "a symbolic link"
    try:
        rc, err = refused_start(snapfs_bin, path, log)
    finally:
        if reader is not None:
            os.close(reader)
    assert rc == 1, err
    assert f"--audit-log {log}: refused: {want}" in err and "nothing mounted" in err
    assert not is_mounted(path)
    # The same path as a private regular file is accepted and written.
    os.unlink(log)
    fs = start_snapfs(snapfs_bin, path, audit_log=log)
    try:
        digest = fs.publish(b"logged")
        events = fs.wait_audit(lambda ev: any(e["event"] == "publish" for e in ev))
        assert [e["digest"] for e in events if e["event"] == "publish"] == [digest]
    finally:
        assert fs.stop() == 0
    assert not is_mounted(path)
    assert os.stat(log).st_mode & 0o777 == 0o600


def test_names_that_are_not_utf8_are_logged_as_valid_utf8_with_their_bytes(snapfs):
    raw = b"caf\xe9-\xff\xfe"
    assert errno_of(os.mkdir, os.path.join(snapfs.path.encode(), raw)) == E.EPERM
    # The same refusal of a valid UTF-8 name is logged as it is.
    assert errno_of(os.mkdir, snapfs.p("café")) == E.EPERM
    events = snapfs.wait_audit(lambda ev: len(ev) >= 2)
    with open(snapfs.audit_log, "rb") as f:
        f.read().decode("utf-8")  # strictly valid: raises otherwise
    assert [(e["event"], e["op"], e["errno"]) for e in events] == [
        ("refused", "mkdir", E.EPERM), ("refused", "mkdir", E.EPERM)]
    assert events[0]["name"] == "caf\ufffd-\ufffd\ufffd"
    assert bytes.fromhex(events[0]["name_hex"]) == raw
    assert events[1]["name"] == "café" and "name_hex" not in events[1]


FLOOD = UID_PRELUDE + r'''
n = int(sys.argv[2])
for i in range(n):
    assert refused(os.mkdir, f"{mnt}/{'x' * 200}{i}") == errno.EPERM
print("done")
'''


def test_a_flood_of_refusals_is_coalesced_and_another_uids_refusal_still_logged(snapfs):
    as_uid(NOBODY_UID, FLOOD, snapfs.path, 20000)
    # Another uid's refusal after the flood still gets its own line.
    as_uid(NOBODY_UID + 1, UID_PRELUDE + "assert refused(os.mkdir, mnt + '/mine') == "
           "errno.EPERM", snapfs.path)

    def counted(ev):
        return sum(c["count"] for e in ev if e["event"] == "refused-coalesced"
                   for c in e["refusals"] if c["uid"] == NOBODY_UID)

    def flood_logged(ev):
        one_by_one = sum(1 for e in ev if e["event"] == "refused" and e["uid"] == NOBODY_UID)
        return one_by_one + counted(ev) == 20000

    events = snapfs.wait_audit(lambda ev: flood_logged(ev) and any(
        e["event"] == "refused" and e["uid"] == NOBODY_UID + 1 for e in ev))
    assert flood_logged(events)
    assert [e["name"] for e in events
            if e["event"] == "refused" and e["uid"] == NOBODY_UID + 1] == ["mine"]
    # Every refusal is accounted for, in far fewer lines (and bytes) than one each.
    assert len(events) < 1000
    assert os.stat(snapfs.audit_log).st_size < 1 << 20
    co = [c for e in events if e["event"] == "refused-coalesced" for c in e["refusals"]]
    assert {(c["uid"], c["op"], c["errno"], c["error"]) for c in co} == {
        (NOBODY_UID, "mkdir", E.EPERM, "EPERM")}
