# SPDX-License-Identifier: MIT
"""Scopes on real mounts, driven through the control channel (MNT/.control) the way a client
does: one JSON request per descriptor, the reply read back. Each refusal is asserted by its
errno beside the allowance that shows nothing else was refused."""
import errno
import json
import os
import signal
import struct
import subprocess

import pytest

from snaptest import (NOBODY_UID, UID_PRELUDE, as_uid, control, control_ok, errno_of,
                      is_mounted, sha256_hex, wait_for)


def scope(fs, workdir, name="sandbox-a", **fields):
    """Creates a scope whose view is WORKDIR/views/NAME: its reply's scope."""
    views = os.path.join(workdir, "views")
    os.makedirs(views, exist_ok=True)
    req = {"op": "scope-create", "name": name, "view": os.path.join(views, name), **fields}
    return control_ok(fs.path, req)["scope"]


def grant(fs, name, digest, entry=None):
    req = {"op": "grant", "scope": name, "sha256": digest}
    if entry:
        req["entry"] = entry
    return control_ok(fs.path, req)["grant"]


def names(view):
    return sorted(os.listdir(view))


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- the control channel ---------------------------------------------------------------


@pytest.mark.readers_any
def test_the_control_channel_is_the_owners_and_roots_alone(snapfs):
    st = os.stat(snapfs.p(".control"))
    assert (st.st_mode & 0o7777, st.st_uid) == (0o600, os.getuid())
    assert ".control" in os.listdir(snapfs.p())
    # Another uid: refused at open, and not listed; root (the owner here) is served.
    r = as_uid(NOBODY_UID, UID_PRELUDE + r'''
print(refused(os.open, f"{mnt}/.control", os.O_RDWR))
print(".control" in os.listdir(mnt))
''', snapfs.path)
    assert r.stdout.split() == [str(errno.EACCES), "False"]
    assert control(snapfs.path, {"op": "scope-list"}) == {
        "ok": True, "error": None, "message": None, "scopes": []}
    events = snapfs.wait_audit(lambda ev: any(e["op"] == "open" and e.get("error") == "EACCES"
                                              for e in ev))
    assert any(e["event"] == "refused" and e.get("name") == ".control" for e in events)


def test_a_write_that_is_no_json_object_fails_and_a_second_request_is_ebusy(snapfs):
    for bad in (b"not json", b"[1, 2]", b'{"op": "scope-list"} trailing', b'{"op":'):
        assert errno_of(control, snapfs.path, None, raw=bad) == errno.EINVAL
    # A well-formed object with an unknown op is a request: answered, refused.
    reply = control(snapfs.path, {"op": "no-such-op"})
    assert (reply["ok"], reply["error"]) == (False, "EINVAL")
    fd = os.open(snapfs.p(".control"), os.O_RDWR)
    try:
        request = json.dumps({"op": "scope-list"}).encode()
        assert os.write(fd, request) == len(request)
        assert errno_of(os.write, fd, request) == errno.EBUSY
        assert json.loads(os.pread(fd, 4096, 0))["ok"] is True
    finally:
        os.close(fd)


def test_a_field_an_operation_does_not_know_is_refused(snapfs, workdir):
    reply = control(snapfs.path, {"op": "scope-create", "name": "a",
                                  "view": os.path.join(workdir, "a"), "pubilsh": True})
    assert (reply["error"], "pubilsh" in reply["message"]) == ("EINVAL", True)
    assert control_ok(snapfs.path, {"op": "scope-list"})["scopes"] == []


# ---- views ------------------------------------------------------------------------------


def test_a_view_lists_and_opens_exactly_its_grants(snapfs, workdir):
    granted = snapfs.publish(b'{"token": "for a"}', "a.json")
    other = snapfs.publish(b'{"token": "for b"}', "b.json")
    s = scope(snapfs, workdir)
    view = s["view"]
    assert is_mounted(view) and s["dev"] and s["grants"] == 0
    g = grant(snapfs, "sandbox-a", granted, "mcp.json")
    assert g == {"sha256": granted, "size": 18, "ino": os.stat(os.path.join(view, granted)).st_ino,
                 "entry": "mcp.json"}
    assert names(view) == [granted, "mcp.json"]
    assert read(os.path.join(view, "mcp.json")) == b'{"token": "for a"}'
    # The other snapshot, published and readable on the main mount: absent here.
    assert errno_of(os.stat, os.path.join(view, other)) == errno.ENOENT
    assert read(snapfs.p(other)) == b'{"token": "for b"}'
    # An entry is the digest's own node, mode 0000, a regular file.
    a, b = os.stat(os.path.join(view, "mcp.json")), os.stat(os.path.join(view, granted))
    assert (a.st_ino, a.st_dev, a.st_mode) == (b.st_ino, b.st_dev, 0o100000)
    binding = os.getxattr(os.path.join(view, "mcp.json"), "user.snapfs.binding").decode()
    dev = os.stat(view).st_dev
    assert f"dev={os.major(dev)}:{os.minor(dev)} ino={a.st_ino}" in binding
    assert os.getxattr(view, "user.snapfs.scope") == b"sandbox-a"
    # The view is read-only unless its scope publishes: the kernel refuses writes.
    assert errno_of(os.open, os.path.join(view, "x"), os.O_WRONLY | os.O_CREAT) == errno.EROFS


def mount_flags(path):
    """The view's per-mount flags and the superblock's options, from mountinfo."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                sep = fields.index("-")
                return set(fields[5].split(",")), set(fields[sep + 3].split(","))
    raise AssertionError(f"{path} is not mounted")


def test_a_view_lets_other_uids_in_only_when_its_scope_names_them(snapfs, workdir):
    """allow_other only for a user the kernel would not let in otherwise; ro unless the scope
    publishes; nosuid,nodev,noexec always."""
    cases = {
        "root-only": ({}, False, True),
        "uid-0": ({"uids": [0]}, False, True),
        "uid-1000": ({"uids": [1000]}, True, True),
        "gid-5": ({"gid": 5}, True, True),
        "publishes": ({"publish": True}, False, False),
    }
    for name, (fields, allow_other, ro) in cases.items():
        flags, options = mount_flags(scope(snapfs, workdir, name, **fields)["view"])
        assert {"nosuid", "nodev", "noexec"} <= flags, (name, flags)
        assert ("ro" in flags, "rw" in flags) == (ro, not ro), (name, flags)
        assert ("allow_other" in options) == allow_other, (name, options)


def test_scope_create_refuses_bad_names_paths_and_taken_ones(snapfs, workdir):
    views = os.path.join(workdir, "views")
    os.makedirs(views)
    os.symlink(views, os.path.join(workdir, "link"))
    cases = [
        ({"name": ".hidden", "view": f"{views}/x"}, "EINVAL"),
        ({"name": "a/b", "view": f"{views}/x"}, "EINVAL"),
        ({"name": "ok", "view": "relative/x"}, "EINVAL"),
        ({"name": "ok", "view": f"{views}/../x"}, "EINVAL"),
        ({"name": "ok", "view": f"{workdir}/link/x"}, "EINVAL"),   # a symlink on the way
        ({"name": "ok", "view": f"{workdir}/none/x"}, "EINVAL"),   # no parent
        ({"name": "ok", "view": snapfs.path}, "EBUSY"),             # a mount point
        ({"name": "ok", "view": snapfs.p(".staging")}, "EBUSY"),    # on the daemon's mount
        ({"name": "ok", "view": f"{views}/x", "uids": [-1]}, "EINVAL"),
        ({"name": "ok", "view": f"{views}/x", "limits": {"max_bytes": "1T"}}, "EINVAL"),
        ({"name": "ok", "view": f"{views}/x", "limits": {"max_snapshots": 0}}, "EINVAL"),
    ]
    for fields, err in cases:
        reply = control(snapfs.path, {"op": "scope-create", **fields})
        assert (reply["ok"], reply["error"]) == (False, err), (fields, reply)
    assert control_ok(snapfs.path, {"op": "scope-list"})["scopes"] == []
    # Beside them, the same request done right, and the name and view then taken.
    made = control_ok(snapfs.path, {"op": "scope-create", "name": "ok", "view": f"{views}/x",
                                    "limits": {"max_bytes": "1M", "max_snapshots": 3}})["scope"]
    assert made["limits"]["max_bytes"] == 1 << 20 and made["limits"]["max_snapshots"] == 3
    assert control(snapfs.path, {"op": "scope-create", "name": "ok",
                                 "view": f"{views}/y"})["error"] == "EEXIST"
    assert control(snapfs.path, {"op": "scope-create", "name": "other",
                                 "view": f"{views}/x"})["error"] == "EEXIST"
    assert control(snapfs.path, {"op": "scope-create", "name": "under",
                                 "view": f"{views}/x/y"})["error"] == "EBUSY"
    assert not os.path.exists(f"{views}/y")  # nothing left of the refused ones


def test_a_daemon_past_max_scopes_refuses_a_create_with_enospc_and_a_removal_makes_room(
        mount_snapfs, workdir):
    fs = mount_snapfs("--max-scopes", "2")
    scope(fs, workdir, "one")
    scope(fs, workdir, "two")
    reply = control(fs.path, {"op": "scope-create", "name": "three",
                              "view": os.path.join(workdir, "views", "three")})
    assert (reply["ok"], reply["error"]) == (False, "ENOSPC"), reply
    assert "--max-scopes" in reply["message"] and "snapfs scope rm" in reply["message"]
    assert not os.path.exists(os.path.join(workdir, "views", "three"))
    # Doing what it says: one removed, the same create is served.
    control_ok(fs.path, {"op": "scope-remove", "name": "one"})
    made = scope(fs, workdir, "three")
    assert is_mounted(made["view"])


def view_threads(pid):
    """The daemon's threads that serve scope views (named so: fs/fuse/scopeview.h)."""
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                n += f.read().strip() == "snapfs-view"
        except FileNotFoundError:
            pass  # a thread that just ended
    return n


def test_removed_views_held_open_keep_no_threads_count_against_max_scopes_and_are_named(
        mount_snapfs, workdir):
    """The attack: create, hold a descriptor in the view, remove, again: every removed view
    kept its session and its workers (3,084 threads after 1,023 cycles), and the next create
    failed EIO for every tenant. Now a removed view held open keeps no thread of its own (the
    reaper answers it), counts against --max-scopes, and the refusal names it."""
    fs = mount_snapfs("--max-scopes", "3")
    pid = fs.proc.pid
    digest = fs.publish(b"held open across the remove", "d")
    held = []
    try:
        for i in range(2):
            # A uid's view: OPEN reaches the daemon, which counts what is open.
            s = scope(fs, workdir, f"c{i}", uids=[NOBODY_UID])
            grant(fs, f"c{i}", digest, "cfg")
            assert view_threads(pid) > 0  # a live view has workers of its own
            held.append(os.open(os.path.join(s["view"], "cfg"), os.O_RDONLY))
            control_ok(fs.path, {"op": "scope-remove", "name": f"c{i}"})
            assert view_threads(pid) == 0  # removed: none left, though it is held open
        # What is open reads on, answered by the reaper.
        for fd in held:
            assert os.pread(fd, 100, 0) == b"held open across the remove"
        # Two held views and one scope fill --max-scopes 3: ENOSPC naming the held ones.
        scope(fs, workdir, "live")
        reply = control(fs.path, {"op": "scope-create", "name": "more",
                                  "view": os.path.join(workdir, "views", "more")})
        assert (reply["ok"], reply["error"]) == (False, "ENOSPC"), reply
        for i in range(2):
            assert f"{workdir}/views/c{i} (1 open)" in reply["message"], reply
        assert "2 removed scopes' views still held open" in reply["message"], reply
        assert not os.path.exists(os.path.join(workdir, "views", "more"))
        # Beside it: closing one frees its place, and the same create is served.
        os.close(held.pop(0))
        wait_for(lambda: control(fs.path, {"op": "scope-create", "name": "more",
                                           "view": os.path.join(workdir, "views", "more")}
                                 )["ok"], "the closed view's place")
        assert view_threads(pid) > 0
    finally:
        for fd in held:
            os.close(fd)


def test_a_view_in_a_directory_another_uid_can_change_is_refused(snapfs, workdir):
    shared = os.path.join(workdir, "shared")
    os.makedirs(shared)
    os.chmod(shared, 0o777)  # anyone could swap the view's directory for a link
    reply = control(snapfs.path, {"op": "scope-create", "name": "a", "view": f"{shared}/a"})
    # The refusal names the directory and what is wrong with it.
    assert (reply["error"], f"refused: {shared} is writable by group or others (mode 0777)"
            in reply["message"]) == ("EPERM", True), reply
    os.chmod(shared, 0o1777)  # sticky: only the owner of an entry may move it
    control_ok(snapfs.path, {"op": "scope-create", "name": "a", "view": f"{shared}/a"})


def test_a_non_user_gets_eacces_a_user_reads(snapfs, workdir):
    digest = snapfs.publish(b"for uid 1000 alone", "c")
    s = scope(snapfs, workdir, uids=[NOBODY_UID])
    grant(snapfs, "sandbox-a", digest, "cfg")
    view = s["view"]
    assert s["uids"] == [NOBODY_UID]
    code = UID_PRELUDE + r'''
view = sys.argv[2]
if os.getuid() == 1000:
    print(open(f"{view}/cfg", "rb").read().decode(),
          sorted(os.listdir(view)) == sorted(["cfg", sys.argv[3]]))
else:
    print(refused(os.listdir, view), refused(os.open, f"{view}/cfg", os.O_RDONLY),
          refused(os.statvfs, view), refused(os.getxattr, view, "user.snapfs.usage"))
'''
    assert as_uid(NOBODY_UID, code, snapfs.path, view, digest).stdout.split() == [
        "for", "uid", "1000", "alone", "True"]
    assert as_uid(NOBODY_UID + 1, code, snapfs.path, view, digest).stdout.split() == [
        str(errno.EACCES)] * 4
    # Root is always a user.
    assert read(os.path.join(view, "cfg")) == b"for uid 1000 alone"


# A reader of a moving entry: opens and reads the entry until STOP exists, counting in a shared
# file (mmap, 5 int64: reads, reads of the first content, of the second, errors, other bytes)
# so the test can wait for every reader to have read after each move.
ROTATION_READER = r'''
import mmap, os, struct, sys
path, counters, stop = sys.argv[1:4]
a, b = open(sys.argv[4], "rb").read(), open(sys.argv[5], "rb").read()
fd = os.open(counters, os.O_RDWR)
m = mmap.mmap(fd, 40)
n = [0, 0, 0, 0, 0]
while not os.path.exists(stop):
    try:
        with open(path, "rb") as f:
            data = f.read()
        n[1 if data == a else 2 if data == b else 4] += 1
    except OSError:
        n[3] += 1
    n[0] += 1
    m[:40] = struct.pack("<5q", *n)
'''


def test_moving_an_entry_is_seen_whole_by_four_readers(snapfs, workdir):
    v1, v2 = b"version one " * 100, b"version two " * 100
    d1, d2 = snapfs.publish(v1, "v1"), snapfs.publish(v2, "v2")
    s = scope(snapfs, workdir)
    grant(snapfs, "sandbox-a", d1, "token")
    path = os.path.join(s["view"], "token")
    want = []
    for i, data in enumerate((v1, v2)):
        want.append(os.path.join(workdir, f"want{i}"))
        with open(want[-1], "wb") as f:
            f.write(data)
    stop = os.path.join(workdir, "stop")
    counters = []
    for i in range(4):
        counters.append(os.path.join(workdir, f"reader{i}"))
        with open(counters[-1], "wb") as f:
            f.write(bytes(40))

    def counts():
        out = []
        for c in counters:
            with open(c, "rb") as f:
                out.append(struct.unpack("<5q", f.read(40)))
        return out

    procs = [subprocess.Popen(["/usr/bin/python3", "-c", ROTATION_READER, path, c, stop, *want])
             for c in counters]
    try:
        wait_for(lambda: all(n[1] > 0 for n in counts()), "every reader to read the entry")
        # Each move, while the four read on: then wait until every reader has read the new
        # content at least once (the state, never a sleep), so each reader reads across every
        # move, both contents, concurrently with the next one.
        moves = 30
        for i in range(moves):
            new = 2 if i % 2 == 0 else 1
            before = [n[new] for n in counts()]
            grant(snapfs, "sandbox-a", d2 if new == 2 else d1, "token")
            wait_for(lambda: all(n[new] > b for n, b in zip(counts(), before)),
                     f"every reader to read move {i}")
    finally:
        with open(stop, "w"):
            pass
        results = [p.wait(60) for p in procs]
    final = counts()
    assert results == [0] * 4
    for reads, first, second, errors, other in final:
        # Every read was one content or the other, byte for byte; none failed.
        assert (errors, other) == (0, 0) and reads == first + second, final
        assert first >= moves // 2 and second >= moves // 2, final
    # 30 moves end on the first content: the second digest left the view with the entry.
    assert names(s["view"]) == sorted([d1, "token"])


def test_a_revoked_grant_is_enoent_for_new_opens_while_an_open_descriptor_reads_on(snapfs, workdir):
    digest = snapfs.publish(b"revoked while open", "r")
    s = scope(snapfs, workdir)
    grant(snapfs, "sandbox-a", digest, "cfg")
    fd = os.open(os.path.join(s["view"], "cfg"), os.O_RDONLY)
    try:
        control_ok(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "sha256": digest})
        assert errno_of(os.open, os.path.join(s["view"], "cfg"), os.O_RDONLY) == errno.ENOENT
        assert errno_of(os.stat, os.path.join(s["view"], digest)) == errno.ENOENT
        assert os.pread(fd, 100, 0) == b"revoked while open"
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)
    # Revoking again: nothing to revoke. The snapshot stays on the main mount, which holds it.
    reply = control(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "sha256": digest})
    assert reply["error"] == "ENOENT"
    reply = control(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "sha256": digest,
                                  "entry": "cfg"})
    assert reply["error"] == "EINVAL"
    assert read(snapfs.p(digest)) == b"revoked while open"


def test_grant_refuses_what_is_not_published_or_no_scope(snapfs, workdir):
    digest = snapfs.publish(b"published", "p")
    scope(snapfs, workdir)
    assert control(snapfs.path, {"op": "grant", "scope": "sandbox-a",
                                 "sha256": sha256_hex(b"never")})["error"] == "ENOENT"
    assert control(snapfs.path, {"op": "grant", "scope": "nobody",
                                 "sha256": digest})["error"] == "ENOENT"
    assert control(snapfs.path, {"op": "grant", "scope": "sandbox-a", "sha256": digest,
                                 "entry": digest})["error"] == "EINVAL"
    assert control(snapfs.path, {"op": "grant", "scope": "sandbox-a",
                                 "sha256": digest.upper()})["error"] == "EINVAL"
    grant(snapfs, "sandbox-a", digest)


# ---- publishing in a scope ----------------------------------------------------------------


def publish_in(view, data, name="cfg"):
    digest = sha256_hex(data)
    with open(os.path.join(view, ".staging", name), "wb") as f:
        f.write(data)
    os.rename(os.path.join(view, ".staging", name), os.path.join(view, digest))
    return digest


@pytest.mark.readers_any
def test_what_a_scope_publishes_is_its_own_and_the_owners(snapfs, workdir):
    a = scope(snapfs, workdir, "sandbox-a", publish=True, uids=[NOBODY_UID])
    b = scope(snapfs, workdir, "sandbox-b", publish=True, uids=[NOBODY_UID])
    digest = publish_in(a["view"], b"published in a")
    assert digest in os.listdir(a["view"])
    # Not in the other scope of the same uid, not in the main mount's listing, not for
    # another uid there; the owner (root) finds it by digest.
    assert errno_of(os.stat, os.path.join(b["view"], digest)) == errno.ENOENT
    assert digest not in os.listdir(snapfs.p())
    assert as_uid(NOBODY_UID, UID_PRELUDE + r'''
print(refused(os.stat, f"{mnt}/{sys.argv[2]}"))
''', snapfs.path, digest).stdout.strip() == str(errno.ENOENT)
    assert read(snapfs.p(digest)) == b"published in a"
    # Published again in b: b cannot tell a had it.
    assert publish_in(b["view"], b"published in a", "again") == digest
    # And again in a: already published there.
    with open(os.path.join(a["view"], ".staging", "third"), "wb") as f:
        f.write(b"published in a")
    assert errno_of(os.rename, os.path.join(a["view"], ".staging", "third"),
                    os.path.join(a["view"], digest)) == errno.EEXIST


@pytest.mark.readers_any  # the last check is another uid reading the main mount
def test_a_tenant_never_names_nor_publishes_what_the_operator_sees(snapfs, workdir):
    """The attack: a tenant published the bytes in its view as "totally-legit"; the operator's
    later put of the same bytes said "already published, named totally-legit" and snapfs ls
    showed the tenant's uid as the publisher. Now the name and publisher the main mount shows
    are the operator's, the scope keeps its own, and the put says who else holds it."""
    data = b"the operator's configuration"
    s = scope(snapfs, workdir, "sandbox-a", publish=True, uids=[NOBODY_UID])
    as_uid(NOBODY_UID, UID_PRELUDE + r'''
with open(f"{mnt}/.staging/totally-legit", "wb") as f:
    f.write(sys.argv[2].encode())
os.rename(f"{mnt}/.staging/totally-legit", f"{mnt}/{hashlib.sha256(sys.argv[2].encode()).hexdigest()}")
''', s["view"], data.decode())
    digest = sha256_hex(data)
    main = snapfs.p(digest)
    # Before the operator's put: the main mount shows the owner's, unnamed.
    assert os.stat(main).st_uid == 0
    assert errno_of(os.getxattr, main, "user.snapfs.name") == errno.ENODATA
    src = os.path.join(workdir, "operator.json")
    with open(src, "wb") as f:
        f.write(data)
    r = subprocess.run([snapfs.binary, "put", "--mount", snapfs.path, "--name", "operator",
                        src], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "snapfs put: already published, named operator; granted to 1 scope\n", \
        r.stderr
    assert "totally-legit" not in r.stderr
    assert os.getxattr(main, "user.snapfs.name") == b"operator"
    assert os.stat(main).st_uid == 0
    # Beside it: the scope's own record is untouched, its name and its publisher.
    in_view = os.path.join(s["view"], digest)
    assert os.getxattr(in_view, "user.snapfs.name") == b"totally-legit"
    assert os.stat(in_view).st_uid == NOBODY_UID
    # Who else holds it is the owner's and root's to read, not a reader's (who reads its name).
    assert as_uid(NOBODY_UID, UID_PRELUDE + r'''
print(os.getxattr(f"{mnt}/{sys.argv[2]}", "user.snapfs.name").decode(),
      refused(os.getxattr, f"{mnt}/{sys.argv[2]}", "user.snapfs.holders"))
''', snapfs.path, digest).stdout.split() == ["operator", str(errno.EACCES)]


def test_a_scopes_limits_give_edquot_and_its_unlink_makes_room(snapfs, workdir):
    s = scope(snapfs, workdir, publish=True, limits={"max_snapshots": 1, "max_staging": 1})
    view = s["view"]
    first = publish_in(view, b"one")
    with open(os.path.join(view, ".staging", "two"), "wb") as f:
        f.write(b"two")
    assert errno_of(os.rename, os.path.join(view, ".staging", "two"),
                    os.path.join(view, sha256_hex(b"two"))) == errno.EDQUOT
    # The staging file counts: a second one is past max_staging.
    assert errno_of(os.open, os.path.join(view, ".staging", "three"),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL) == errno.EDQUOT
    usage = os.getxattr(view, "user.snapfs.usage").decode()
    assert "scope=sandbox-a snapshots=1 bytes=3 staging=1 staging-bytes=3" in usage
    os.unlink(os.path.join(view, first))
    os.rename(os.path.join(view, ".staging", "two"), os.path.join(view, sha256_hex(b"two")))
    assert control_ok(snapfs.path, {"op": "scope-show", "name": "sandbox-a"})["scope"]["usage"] == {
        "snapshots": 1, "bytes": 3, "staging": 0, "staging_bytes": 0}


def test_a_flooding_scope_gets_edquot_at_its_limit_while_another_and_the_owner_publish(
        mount_snapfs, workdir):
    """The attack: publish, keep a descriptor, unlink, again. The scope's usage read 0 while
    it held most of the daemon; another scope got ENOSPC and the main mount was full. What a
    scope's processes hold open counts in its usage until the last descriptor goes."""
    fs = mount_snapfs("--allow-other", "--max-bytes", "1M", "--max-snapshot-size", "64K")
    sa = scope(fs, workdir, "sa", publish=True, uids=[NOBODY_UID],
               limits={"max_bytes": "256K"})
    sb = scope(fs, workdir, "sb", publish=True, uids=[NOBODY_UID],
               limits={"max_bytes": "256K"})
    held, refused_at, err = [], None, None
    try:
        # 40 KiB each: six fit in sa's 256 KiB, the seventh does not. Thirty would pass the
        # daemon's 1 MiB, which is where the flood used to end.
        for i in range(30):
            data = bytes([i]) * (40 << 10)
            with open(os.path.join(sa["view"], ".staging", f"f{i}"), "wb") as f:
                f.write(data)
            fd = os.open(os.path.join(sa["view"], ".staging", f"f{i}"), os.O_RDONLY)
            held.append(fd)
            try:
                os.rename(os.path.join(sa["view"], ".staging", f"f{i}"),
                          os.path.join(sa["view"], sha256_hex(data)))
            except OSError as e:
                refused_at, err = i, e.errno
                break
            os.unlink(os.path.join(sa["view"], sha256_hex(data)))
        assert (refused_at, err) == (6, errno.EDQUOT)
        usage = control_ok(fs.path, {"op": "scope-show", "name": "sa"})["scope"]["usage"]
        assert (usage["snapshots"], usage["bytes"]) == (6, 6 * (40 << 10)), usage
        # At that moment another scope publishes, and so does the owner on the main mount.
        publish_in(sb["view"], b"b" * (40 << 10), "b")
        fs.publish(b"o" * (40 << 10), "owner")
    finally:
        for fd in held:
            os.close(fd)
    # Its descriptors closed, sa's room is back.
    wait_for(lambda: control_ok(fs.path, {"op": "scope-show", "name": "sa"})["scope"]["usage"]
             ["bytes"] == 0, "sa's usage once its descriptors are closed")
    publish_in(sa["view"], b"a" * (40 << 10), "again")


def test_a_scopes_staging_files_unlinked_while_open_count_until_closed(snapfs, workdir):
    sa = scope(snapfs, workdir, "sa", publish=True, uids=[NOBODY_UID],
               limits={"max_staging": 2, "max_staging_bytes": "100K"})
    fds = []
    try:
        for i in range(2):
            path = os.path.join(sa["view"], ".staging", f"s{i}")
            fds.append(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.write(fds[-1], b"x" * (40 << 10))
            os.unlink(path)
        usage = control_ok(snapfs.path, {"op": "scope-show", "name": "sa"})["scope"]["usage"]
        assert (usage["staging"], usage["staging_bytes"]) == (2, 80 << 10), usage
        assert errno_of(os.open, os.path.join(sa["view"], ".staging", "s2"),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600) == errno.EDQUOT
    finally:
        for fd in fds:
            os.close(fd)
    wait_for(lambda: control_ok(snapfs.path, {"op": "scope-show", "name": "sa"})["scope"]
             ["usage"]["staging"] == 0, "the closed staging files out of sa's usage")
    os.close(os.open(os.path.join(sa["view"], ".staging", "s2"),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def test_what_a_scope_unpublishes_or_revokes_last_frees_its_room_in_the_store(snapfs, workdir):
    # The store's room is the daemon's, shared by every scope and the main mount: statfs on
    # the main mount counts its snapshots (f_files - f_ffree). What leaves a scope for good
    # must give that room back, or a scope publishing and unlinking within its own limits
    # fills the daemon's (ENOSPC for everyone).
    def used():
        st = os.statvfs(snapfs.path)
        return st.f_files - st.f_ffree
    s = scope(snapfs, workdir, publish=True)
    before = used()
    digests = [publish_in(s["view"], b"unpublished %d" % i, f"u{i}") for i in range(5)]
    for d in digests:
        assert read(os.path.join(s["view"], d)).startswith(b"unpublished")
    assert used() == before + 5
    for d in digests:
        os.unlink(os.path.join(s["view"], d))
    # The kernel forgets the unlinked nodes on its own time: wait for that state.
    wait_for(lambda: used() == before, "the unpublished snapshots to leave the store")
    # A snapshot the main mount dropped every hold of, kept by its grant alone: the revoke of
    # that grant takes it out of the store; one the main mount still holds stays.
    kept = snapfs.publish(b"kept by its grant", "k")
    held = snapfs.publish(b"held on the main mount", "h")
    grant(snapfs, "sandbox-a", kept, "cfg")
    grant(snapfs, "sandbox-a", held)
    os.unlink(snapfs.p(kept))
    assert used() == before + 2
    control_ok(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "entry": "cfg"})
    control_ok(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "sha256": held})
    wait_for(lambda: used() == before + 1, "the revoked snapshot to leave the store")
    assert read(snapfs.p(held)) == b"held on the main mount"
    assert errno_of(os.stat, snapfs.p(kept)) == errno.ENOENT


def test_a_view_unlinks_what_it_published_not_what_it_was_granted(snapfs, workdir):
    granted = snapfs.publish(b"the runtime's", "r")
    s = scope(snapfs, workdir, publish=True)
    grant(snapfs, "sandbox-a", granted, "cfg")
    own = publish_in(s["view"], b"its own")
    assert errno_of(os.unlink, os.path.join(s["view"], granted)) == errno.EPERM
    assert errno_of(os.unlink, os.path.join(s["view"], "cfg")) == errno.EPERM
    assert read(os.path.join(s["view"], "cfg")) == b"the runtime's"
    os.unlink(os.path.join(s["view"], own))
    assert errno_of(os.stat, os.path.join(s["view"], own)) == errno.ENOENT


# ---- lifecycle --------------------------------------------------------------------------


def test_scope_remove_detaches_lazily_and_an_open_descriptor_reads_on(snapfs, workdir):
    digest = snapfs.publish(b"read after the delete", "d")
    s = scope(snapfs, workdir)
    grant(snapfs, "sandbox-a", digest, "cfg")
    fd = os.open(os.path.join(s["view"], "cfg"), os.O_RDONLY)
    try:
        control_ok(snapfs.path, {"op": "scope-remove", "name": "sandbox-a"})
        assert not is_mounted(s["view"])
        assert not os.path.exists(s["view"])  # the daemon made it, the daemon removed it
        assert os.pread(fd, 100, 0) == b"read after the delete"
    finally:
        os.close(fd)
    assert control(snapfs.path, {"op": "scope-remove", "name": "sandbox-a"})["error"] == "ENOENT"
    assert control_ok(snapfs.path, {"op": "scope-list"})["scopes"] == []
    # A new scope may take the name and the path at once.
    scope(snapfs, workdir)


def test_a_scope_tied_to_a_process_goes_when_it_exits(snapfs, workdir):
    child = subprocess.Popen(["sleep", "600"])
    try:
        # A client_pid that is not the caller's: refused (another pid namespace).
        reply = control(snapfs.path, {"op": "scope-create", "name": "tied",
                                      "view": os.path.join(workdir, "tied"),
                                      "until_pid": child.pid, "client_pid": child.pid})
        assert reply["error"] == "EINVAL"
        s = control_ok(snapfs.path, {"op": "scope-create", "name": "tied",
                                     "view": os.path.join(workdir, "tied"),
                                     "until_pid": child.pid,
                                     "client_pid": os.getpid()})["scope"]
        assert s["until_pid"] == child.pid and is_mounted(s["view"])
    finally:
        child.kill()
        child.wait()
    wait_for(lambda: control_ok(snapfs.path, {"op": "scope-list"})["scopes"] == [],
             "the scope to go with its process")
    assert not is_mounted(os.path.join(workdir, "tied"))
    events = snapfs.wait_audit(lambda ev: any(e["event"] == "scope-remove" for e in ev))
    assert [e.get("reason") for e in events if e["event"] == "scope-remove"] == ["until-pid exited"]
    # A process that is already gone cannot be tied to.
    reply = control(snapfs.path, {"op": "scope-create", "name": "late",
                                  "view": os.path.join(workdir, "late"),
                                  "until_pid": child.pid, "client_pid": os.getpid()})
    assert reply["error"] == "ESRCH"


def test_every_change_is_audited(snapfs, workdir):
    digest = snapfs.publish(b"audited", "a")
    s = scope(snapfs, workdir)
    grant(snapfs, "sandbox-a", digest, "cfg")
    control_ok(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "entry": "cfg"})
    control(snapfs.path, {"op": "revoke", "scope": "sandbox-a", "entry": "cfg"})
    control_ok(snapfs.path, {"op": "scope-remove", "name": "sandbox-a"})
    want = ["scope-create", "grant", "revoke", "refused", "scope-remove"]
    events = snapfs.wait_audit(lambda ev: [e["event"] for e in ev if e.get("scope")] == want)
    scoped = [e for e in events if e.get("scope")]
    assert [e["event"] for e in scoped] == want
    assert scoped[0]["view"] == s["view"] and scoped[1]["digest"] == digest
    assert scoped[1]["entry"] == "cfg" and scoped[3]["error"] == "ENOENT"


# ---- --store ------------------------------------------------------------------------------


def test_scopes_and_grants_survive_a_restart_with_store(mount_snapfs, workdir, runtime_dir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    held = fs.publish(b"held by the owner", "h")
    dropped = fs.publish(b"kept by its grant alone", "k")
    s = scope(fs, workdir, publish=True)
    grant(fs, "sandbox-a", held)
    grant(fs, "sandbox-a", dropped, "cfg")
    own = publish_in(s["view"], b"published in the scope")
    os.unlink(fs.p(dropped))  # every hold gone: the grant keeps it
    assert fs.stop() == 0
    assert not is_mounted(s["view"])

    fs2 = mount_snapfs("--store", store, "--runtime-store", runtime_dir, name="mnt")
    assert is_mounted(s["view"])
    assert names(s["view"]) == sorted([".staging", held, dropped, own, "cfg"])
    assert read(os.path.join(s["view"], "cfg")) == b"kept by its grant alone"
    assert sorted(n for n in os.listdir(fs2.p()) if not n.startswith(".")) == [held]
    shown = control_ok(fs2.path, {"op": "scope-show", "name": "sandbox-a"})
    assert shown["scope"]["usage"]["snapshots"] == 1
    assert sorted((g["sha256"], g["entry"]) for g in shown["grants"]) == sorted(
        [(held, None), (own, None), (dropped, "cfg")])


def inos(view, names_):
    return {n: os.stat(os.path.join(view, n)).st_ino for n in names_}


def test_a_views_inode_numbers_are_its_own_unmoved_by_others_and_the_same_after_a_restart(
        mount_snapfs, workdir, runtime_dir):
    """Nothing a tenant can count: B's numbers (of its digests and entries, and of its next
    new grant) do not move when A publishes or the operator publishes and grants, where the
    main mount's (the store's) do; and a restart with --store serves B's under the same
    numbers, its counter going on from where it was (a revoked number is not given again)."""
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    a = scope(fs, workdir, "sandbox-a", publish=True)
    b = scope(fs, workdir, "sandbox-b")
    first = fs.publish(b"b's first", "b1")
    grant(fs, "sandbox-b", first, "cfg")
    before = inos(b["view"], [first, "cfg"])
    assert before[first] == before["cfg"]
    main_before = os.stat(fs.p(first)).st_ino
    # A and the operator busy in between.
    for i in range(5):
        publish_in(a["view"], f"a's {i}".encode(), f"a{i}")
        other = fs.publish(f"the operator's {i}".encode(), f"o{i}")
        grant(fs, "sandbox-a", other)
    assert inos(b["view"], [first, "cfg"]) == before
    second = fs.publish(b"b's second", "b2")
    # The main mount counted all of it; B's next grant is B's next number.
    assert os.stat(fs.p(second)).st_ino >= main_before + 11
    assert grant(fs, "sandbox-b", second)["ino"] == before[first] + 1
    assert os.stat(os.path.join(b["view"], second)).st_ino == before[first] + 1
    after = inos(b["view"], [first, "cfg", second])
    # Its last number revoked: never handed out again, after the restart either.
    control_ok(fs.path, {"op": "revoke", "scope": "sandbox-b", "sha256": second})
    assert fs.stop() == 0

    fs2 = mount_snapfs("--store", store, "--runtime-store", runtime_dir, name="mnt")
    assert inos(b["view"], [first, "cfg"]) == {n: after[n] for n in (first, "cfg")}
    third = fs2.publish(b"b's third", "b3")
    assert grant(fs2, "sandbox-b", third)["ino"] == after[second] + 1
    # A's view kept its own as well: the same names, numbered from the same start as B's.
    assert sorted(inos(a["view"], [n for n in os.listdir(a["view"])
                                   if n != ".staging"]).values())[0] == before[first]


def test_the_last_grant_of_a_snapshot_takes_its_blob_out_of_the_store(mount_snapfs, workdir,
                                                                     runtime_dir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    s = scope(fs, workdir, publish=True)
    digest = publish_in(s["view"], b"only this scope's")
    # What the scope published is in the runtime store (RAM), never in --store (a disk).
    blob = os.path.join(runtime_dir, "blobs", "sha256", digest)
    assert not os.path.exists(os.path.join(store, "blobs", "sha256", digest))
    assert os.path.exists(blob)
    kept = fs.publish(b"held as well", "k")
    grant(fs, "sandbox-a", kept)
    control_ok(fs.path, {"op": "scope-remove", "name": "sandbox-a"})
    assert not os.path.exists(blob)
    assert os.path.exists(os.path.join(store, "blobs", "sha256", kept))
    assert not os.path.exists(os.path.join(runtime_dir, "scopes", "sandbox-a.json"))


def test_content_in_two_scopes_is_one_blob_gone_with_its_last_grant_read_on_by_a_descriptor(
        mount_snapfs, workdir, runtime_dir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    a = scope(fs, workdir, "sandbox-a", publish=True)
    scope(fs, workdir, "sandbox-b")
    digest = publish_in(a["view"], b"one blob for two scopes")
    grant(fs, "sandbox-b", digest, "cfg")
    blob = os.path.join(runtime_dir, "blobs", "sha256", digest)
    blobs = os.listdir(os.path.join(runtime_dir, "blobs", "sha256"))
    assert blobs.count(digest) == 1
    fd = os.open(os.path.join(a["view"], digest), os.O_RDONLY)
    try:
        # Scope a goes: b's grant keeps the snapshot, its blob, and b's view of it.
        control_ok(fs.path, {"op": "scope-remove", "name": "sandbox-a"})
        assert os.path.exists(blob)
        assert read(os.path.join(workdir, "views", "sandbox-b", "cfg")) == \
            b"one blob for two scopes"
        # b's last grant of it revoked: the blob leaves the store, the main mount forgets it,
        # and the descriptor opened before reads the same bytes on.
        control_ok(fs.path, {"op": "revoke", "scope": "sandbox-b", "entry": "cfg"})
        assert not os.path.exists(blob)
        assert errno_of(os.stat, fs.p(digest)) == errno.ENOENT
        assert os.pread(fd, 100, 0) == b"one blob for two scopes"
    finally:
        os.close(fd)
    # The store still serves what it holds after a restart, and nothing of the collected one.
    assert fs.stop() == 0
    fs2 = mount_snapfs("--store", store, "--runtime-store", runtime_dir, name="mnt")
    assert errno_of(os.stat, fs2.p(digest)) == errno.ENOENT
    assert names(os.path.join(workdir, "views", "sandbox-b")) == []


def test_a_killed_daemons_view_is_cleared_and_mounted_again(mount_snapfs, workdir, runtime_dir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    digest = fs.publish(b"after a crash", "c")
    s = scope(fs, workdir)
    grant(fs, "sandbox-a", digest, "cfg")
    assert fs.stop(signal.SIGKILL) == -signal.SIGKILL
    assert errno_of(os.stat, os.path.join(s["view"], "cfg")) == errno.ENOTCONN
    subprocess.run(["umount", "-l", fs.path], check=True)
    fs2 = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    assert read(os.path.join(s["view"], "cfg")) == b"after a crash"
    assert "cleared a dead snapfs view" in fs2.stderr()


def test_a_scope_whose_process_ended_while_the_daemon_was_down_is_gone(mount_snapfs, workdir,
                                                                      runtime_dir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    child = subprocess.Popen(["sleep", "600"])
    try:
        control_ok(fs.path, {"op": "scope-create", "name": "tied",
                             "view": os.path.join(workdir, "tied"), "until_pid": child.pid,
                             "client_pid": os.getpid()})
        scope(fs, workdir, "untied")
        assert fs.stop() == 0
    finally:
        child.kill()
        child.wait()
    fs2 = mount_snapfs("--store", store, "--runtime-store", runtime_dir)
    assert [x["name"] for x in control_ok(fs2.path, {"op": "scope-list"})["scopes"]] == ["untied"]
    assert not os.path.exists(os.path.join(runtime_dir, "scopes", "tied.json"))
