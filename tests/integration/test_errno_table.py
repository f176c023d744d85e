# SPDX-License-Identifier: MIT
"""docs/design.md's table "Every errno of the mount", one test per row: each row's key maps
to a case below that asserts the row's exact errno on a real mount, beside the allowance that
shows the same snapshot (or staging file) still works. A row without a case, or a case without
a row, fails test_every_row_of_the_table_has_its_case."""
import base64
import ctypes
import fcntl
import hashlib
import json
import mmap
import os
import re
import select
import subprocess

import pytest

from snaptest import (E, NOBODY_UID, ROOT, UID_PRELUDE, as_uid, control, control_ok, errno_of,
                      sha256_hex)

DESIGN = ROOT / "docs" / "design.md"
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
_libc = ctypes.CDLL(None, use_errno=True)


def renameat2(old, new, flags):
    if _libc.renameat2(-100, os.fsencode(old), -100, os.fsencode(new), flags) < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def fallocate(fd, offset, length):
    """The system call itself: glibc's posix_fallocate writes zeros when it is refused."""
    if _libc.fallocate(fd, 0, ctypes.c_long(offset), ctypes.c_long(length)) < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def table_keys():
    with open(DESIGN) as f:
        text = f.read()
    section = text.split("## Every errno of the mount", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z-]+)` \|", section, re.M)


def read(fs, digest):
    with open(fs.p(digest), "rb") as f:
        return f.read()


def binding(fs, digest):
    return os.getxattr(fs.p(digest), "user.snapfs.binding")


def unchanged(fs, digest, data, before):
    assert read(fs, digest) == data and binding(fs, digest) == before


CASES = {}


def case(key, *mount_opts):
    def register(fn):
        CASES[key] = (fn, mount_opts)
        return fn
    return register


# ---- rename (publishing) --------------------------------------------------------------------

@case("rename-published")
def _(fs, workdir):
    digest = fs.publish(b"published")
    assert read(fs, digest) == b"published"
    assert os.listdir(fs.p(".staging")) == []


@case("rename-bad-target")
def _(fs, workdir):
    fs.stage(b"cfg", "a")
    for target in ("config.json", "A" * 64, "0" * 63, ".staging/b"):
        assert errno_of(os.rename, fs.p(".staging/a"), fs.p(target)) == E.EINVAL
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"cfg")))


@case("rename-wrong-digest")
def _(fs, workdir):
    fs.stage(b"forged", "a")
    assert errno_of(os.rename, fs.p(".staging/a"), fs.p(sha256_hex(b"vetted"))) == E.EBADMSG
    assert not os.path.exists(fs.p(sha256_hex(b"vetted")))
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"forged")))


@case("rename-busy")
def _(fs, workdir):
    fd = fs.stage(b"still writing", "a", close=False)
    try:
        assert errno_of(os.rename, fs.p(".staging/a"), fs.p(sha256_hex(b"still writing"))) \
            == E.EBUSY
    finally:
        os.close(fd)
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"still writing")))


@case("rename-exists")
def _(fs, workdir):
    digest = fs.publish(b"same", "first")
    before = binding(fs, digest)
    fs.stage(b"same", "again")
    assert errno_of(os.rename, fs.p(".staging/again"), fs.p(digest)) == E.EEXIST
    unchanged(fs, digest, b"same", before)
    assert os.listdir(fs.p(".staging")) == ["again"]  # left for the caller to unlink
    os.unlink(fs.p(".staging/again"))
    events = fs.wait_audit(lambda ev: any(e["event"] == "publish-exists" for e in ev))
    kinds = [e["event"] for e in events if e.get("op") == "rename"]
    assert kinds == ["publish", "publish-exists"], kinds


@case("rename-not-publisher", "--allow-other", "--publishers", "0")
def _(fs, workdir):
    r = as_uid(NOBODY_UID, UID_PRELUDE + """
fd = os.open(f"{mnt}/.staging/a", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
""", fs.path, check=False)
    assert r.returncode == 1 and "PermissionError" in r.stderr, r.stderr
    fs.publish(b"root publishes")


@case("rename-full", "--max-snapshots", "1")
def _(fs, workdir):
    fs.publish(b"one")
    fs.stage(b"two", "a")
    assert errno_of(os.rename, fs.p(".staging/a"), fs.p(sha256_hex(b"two"))) == E.ENOSPC
    assert read(fs, sha256_hex(b"one")) == b"one"


@case("rename-quota", "--allow-other", "--publishers", f"0,{NOBODY_UID}",
      "--max-uid-snapshots", "1")
def _(fs, workdir):
    theirs = fs.publish(b"the owner's", "o")
    as_uid(NOBODY_UID, UID_PRELUDE + """
import hashlib
def stage(data):
    fd = os.open(f"{mnt}/.staging/a", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, data)
    os.close(fd)
    return f"{mnt}/" + hashlib.sha256(data).hexdigest()
os.rename(f"{mnt}/.staging/a", stage(b"one"))
assert refused(os.rename, f"{mnt}/.staging/a", stage(b"two")) == errno.EDQUOT
# A hold on what the owner published counts as much as a snapshot of its own.
os.unlink(f"{mnt}/.staging/a")
assert refused(os.rename, f"{mnt}/.staging/a", stage(b"the owner's")) == errno.EDQUOT
assert sys.argv[2] == hashlib.sha256(b"the owner's").hexdigest()
""", fs.path, theirs)
    assert read(fs, sha256_hex(b"one")) == b"one"
    fs.publish(b"two", "b")  # the owner is not held by it


def signed_envelope(key, manifest):
    """The signature envelope of docs/distribution.md, made with the openssl command line, in
    its canonical encoding (these keys in this order, no whitespace): the only one admitted."""
    digest, size = sha256_hex(manifest), len(manifest)
    message = f"snapfs-signature-v1\nsha256:{digest}\n{size}\n".encode()
    # Ed25519 signs in one shot: openssl needs the message as a file, not a stream.
    with open(key + ".msg", "wb") as f:
        f.write(message)
    sig = subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key, "-rawin",
                          "-in", key + ".msg"], capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-outform", "DER"],
                         capture_output=True, check=True).stdout
    return json.dumps({"mediaType": "application/vnd.snapfs.signature.v1+json",
                       "algorithm": "ed25519",
                       "manifest": {"digest": "sha256:" + digest, "size": size},
                       "key": "sha256:" + hashlib.sha256(der).hexdigest(),
                       "signature": base64.b64encode(sig).decode()},
                      separators=(",", ":")).encode()


@case("rename-unsigned", "--trust-key", "TRUSTKEY")
def _(fs, workdir):
    fs.stage(b"not in any manifest", "a")
    assert errno_of(os.rename, fs.p(".staging/a"), fs.p(sha256_hex(b"not in any manifest"))) \
        == E.EPERM
    events = fs.wait_audit(lambda ev: any(e["event"] == "publish-refused" for e in ev))
    assert [e["reason"] for e in events if e["event"] == "publish-refused"] == \
        ["not-in-signed-manifest"]
    # The allowance: an envelope signed by the trusted key, its manifest, then its layer.
    layer = b"in a signed manifest"
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                   "digest": "sha256:" + sha256_hex(b"{}")},
        "layers": [{"mediaType": "application/vnd.snapfs.snapshot.v1", "size": len(layer),
                    "digest": "sha256:" + sha256_hex(layer)}]}).encode()
    fs.publish(signed_envelope(os.path.join(workdir, "trusted"), manifest), "sig")
    fs.publish(manifest, "manifest")
    assert read(fs, fs.publish(layer, "layer")) == layer
    os.unlink(fs.p(".staging/a"))


# ---- published snapshots ----------------------------------------------------------------------

@case("snapshot-open-write")
def _(fs, workdir):
    digest = fs.publish(b"cfg")
    before = binding(fs, digest)
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND,
                  os.O_RDONLY | os.O_APPEND):
        assert errno_of(os.open, fs.p(digest), flags) == E.EROFS, flags
    unchanged(fs, digest, b"cfg", before)


@case("snapshot-truncate")
def _(fs, workdir):
    digest = fs.publish(b"cfg")
    before = binding(fs, digest)
    assert errno_of(os.truncate, fs.p(digest), 0) == E.EROFS
    unchanged(fs, digest, b"cfg", before)


@case("snapshot-ftruncate")
def _(fs, workdir):
    digest = fs.publish(b"cfg")
    before = binding(fs, digest)
    fd = os.open(fs.p(digest), os.O_RDONLY)
    try:
        assert errno_of(os.ftruncate, fd, 0) == E.EINVAL
        assert os.pread(fd, 16, 0) == b"cfg"
    finally:
        os.close(fd)
    unchanged(fs, digest, b"cfg", before)


@case("snapshot-metadata")
def _(fs, workdir):
    digest = fs.publish(b"cfg")
    before = binding(fs, digest)
    assert errno_of(os.chmod, fs.p(digest), 0o600) == E.EROFS
    assert errno_of(os.chown, fs.p(digest), NOBODY_UID, NOBODY_UID) == E.EROFS
    assert errno_of(os.utime, fs.p(digest), (0, 0)) == E.EROFS
    unchanged(fs, digest, b"cfg", before)
    assert os.stat(fs.p(digest)).st_mode & 0o7777 == 0


@case("snapshot-xattr")
def _(fs, workdir):
    digest = fs.publish(b"cfg")
    before = binding(fs, digest)
    assert errno_of(os.setxattr, fs.p(digest), "user.x", b"1") == E.EROFS
    assert errno_of(os.removexattr, fs.p(digest), "user.snapfs.binding") == E.EROFS
    unchanged(fs, digest, b"cfg", before)


@case("tree-create")
def _(fs, workdir):
    digest = fs.publish(b"cfg")
    assert errno_of(os.link, fs.p(digest), fs.p("hard")) == E.EPERM
    assert errno_of(os.symlink, digest, fs.p("soft")) == E.EPERM
    assert errno_of(os.mknod, fs.p("fifo"), 0o600 | 0o010000) == E.EPERM
    assert errno_of(os.mkdir, fs.p("dir")) == E.EPERM
    assert errno_of(os.open, fs.p("new"), os.O_WRONLY | os.O_CREAT) == E.EPERM
    assert sorted(os.listdir(fs.p())) == sorted([".control", ".staging", digest])
    fs.stage(b"x", "allowed")  # creating inside .staging/ works


@case("snapshot-rename")
def _(fs, workdir):
    a, b = fs.publish(b"a", "a"), fs.publish(b"b", "b")
    before = binding(fs, a)
    assert errno_of(os.rename, fs.p(a), fs.p(b)) == E.EPERM
    assert errno_of(renameat2, fs.p(a), fs.p(b), RENAME_EXCHANGE) == E.EPERM
    assert errno_of(renameat2, fs.p(a), fs.p("f" * 64), RENAME_NOREPLACE) == E.EPERM
    assert errno_of(os.rename, fs.p(a), fs.p(".staging/back")) == E.EPERM
    unchanged(fs, a, b"a", before)


@case("snapshot-rename-noreplace")
def _(fs, workdir):
    a, b = fs.publish(b"a", "a"), fs.publish(b"b", "b")
    before = binding(fs, a)
    assert errno_of(renameat2, fs.p(a), fs.p(b), RENAME_NOREPLACE) == E.EEXIST
    unchanged(fs, a, b"a", before)
    assert read(fs, b) == b"b"


@case("snapshot-unlink-other", "--allow-other", "--publishers", f"0,{NOBODY_UID}")
def _(fs, workdir):
    digest = fs.publish(b"root's")
    r = as_uid(NOBODY_UID, UID_PRELUDE + """
assert refused(os.unlink, f"{mnt}/{sys.argv[2]}") == errno.EPERM
""", fs.path, digest, check=False)
    assert r.returncode == 0, r.stderr
    assert read(fs, digest) == b"root's"
    os.unlink(fs.p(digest))  # root may
    assert not os.path.exists(fs.p(digest))


@case("snapshot-unlink-own-hold", "--allow-other", "--publishers", f"0,{NOBODY_UID}",
      "--unlink-own")
def _(fs, workdir):
    r = as_uid(NOBODY_UID, UID_PRELUDE + """
import hashlib
fd = os.open(f"{mnt}/.staging/a", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"held twice"); os.close(fd)
os.rename(f"{mnt}/.staging/a", f"{mnt}/" + hashlib.sha256(b"held twice").hexdigest())
""", fs.path, check=False)
    assert r.returncode == 0, r.stderr
    digest = sha256_hex(b"held twice")
    fs.stage(b"held twice", "b")
    assert errno_of(os.rename, fs.p(".staging/b"), fs.p(digest)) == E.EEXIST  # root holds it too
    before = binding(fs, digest)
    r = as_uid(NOBODY_UID, UID_PRELUDE + """
os.unlink(f"{mnt}/{sys.argv[2]}")
""", fs.path, digest, check=False)
    assert r.returncode == 0, r.stderr
    unchanged(fs, digest, b"held twice", before)  # root's hold keeps it
    os.unlink(fs.p(digest))
    assert not os.path.exists(fs.p(digest))


@case("staging-unlink")
def _(fs, workdir):
    assert errno_of(os.unlink, fs.p(".staging")) == E.EISDIR
    fs.stage(b"x", "still-there")
    assert os.listdir(fs.p(".staging")) == ["still-there"]


@case("staging-rmdir")
def _(fs, workdir):
    assert errno_of(os.rmdir, fs.p(".staging")) == E.EPERM
    fs.stage(b"x", "still-there")
    assert os.listdir(fs.p(".staging")) == ["still-there"]


@case("policy", "--allow-other", "--readers", "0")
def _(fs, workdir):
    digest = fs.publish(b"for root only")
    r = as_uid(NOBODY_UID, UID_PRELUDE + """
assert refused(os.open, f"{mnt}/{sys.argv[2]}", os.O_RDONLY) == errno.EACCES
assert refused(os.statvfs, mnt) == errno.EACCES
""", fs.path, digest, check=False)
    assert r.returncode == 0, r.stderr
    assert read(fs, digest) == b"for root only"
    assert os.statvfs(fs.path).f_files == 4096


@case("snapshot-exec")
def _(fs, workdir):
    digest = fs.publish(b"#!/bin/sh\necho ran\n")
    r = subprocess.run(["sh", "-c", f'exec "{fs.p(digest)}"'], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 126 and "Permission denied" in r.stderr
    assert errno_of(os.execv, fs.p(digest), [fs.p(digest)]) == E.EACCES
    assert read(fs, digest) == b"#!/bin/sh\necho ran\n"


def mmap_shared_write_is_eacces_and_read_works(path, data):
    fd = os.open(path, os.O_RDONLY)
    try:
        assert errno_of(mmap.mmap, fd, len(data), mmap.MAP_SHARED,
                        mmap.PROT_READ | mmap.PROT_WRITE) == E.EACCES
        m = mmap.mmap(fd, len(data), mmap.MAP_SHARED, mmap.PROT_READ)
        assert m[:] == data
        m.close()
    finally:
        os.close(fd)


@case("snapshot-mmap-shared-write")
def _(fs, workdir):
    digest = fs.publish(b"c" * 4096)
    mmap_shared_write_is_eacces_and_read_works(fs.p(digest), b"c" * 4096)


# ---- staging files ------------------------------------------------------------------------

@case("staging-other-uid", "--allow-other", "--publishers", f"0,{NOBODY_UID}")
def _(fs, workdir):
    fs.stage(b"root's", "mine")
    r = as_uid(NOBODY_UID, UID_PRELUDE + """
assert refused(os.stat, f"{mnt}/.staging/mine") == errno.ENOENT
assert os.listdir(f"{mnt}/.staging") == []
""", fs.path, check=False)
    assert r.returncode == 0, r.stderr
    assert os.listdir(fs.p(".staging")) == ["mine"]


@case("staging-bad-name")
def _(fs, workdir):
    for name in (".hidden", "a" * 65, "sp ace", "new\nline"):
        assert errno_of(os.open, fs.p(".staging/" + name),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL) == E.EINVAL, name
    fs.stage(b"x", "A.b-c_" + "d" * 58)


@case("staging-open-flags")
def _(fs, workdir):
    for flag in (os.O_APPEND, os.O_DIRECT):
        assert errno_of(os.open, fs.p(".staging/a"),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag) == E.EINVAL
    fs.stage(b"x", "a")


@case("staging-fcntl-flags")
def _(fs, workdir):
    fd = fs.stage(b"first", "a", close=False)
    try:
        for flag in (os.O_APPEND, os.O_DIRECT):
            fcntl.fcntl(fd, fcntl.F_SETFL, flag)  # the kernel lets it; the daemon is not asked
            assert errno_of(os.pwrite, fd, b"more", 5) == E.EINVAL
            fcntl.fcntl(fd, fcntl.F_SETFL, 0)
        os.pwrite(fd, b" and more", 5)  # without the flag, the same descriptor writes
    finally:
        os.close(fd)
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"first and more")))


@case("staging-too-big", "--max-snapshot-size", "4K")
def _(fs, workdir):
    fd = fs.stage(b"x" * 4096, "a", close=False)
    try:
        assert errno_of(os.write, fd, b"x") == E.EFBIG
    finally:
        os.close(fd)
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"x" * 4096)))


@case("staging-no-space", "--max-bytes", "64K", "--max-snapshot-size", "64K")
def _(fs, workdir):
    kept = fs.publish(b"k" * 40000, "kept")
    fd = fs.stage(b"g" * 20000, "greedy", close=False)
    try:
        assert errno_of(os.write, fd, b"g" * 8000) == E.ENOSPC
    finally:
        os.close(fd)
    assert read(fs, kept) == b"k" * 40000
    os.rename(fs.p(".staging/greedy"), fs.p(sha256_hex(b"g" * 20000)))


@case("staging-quota", "--max-staging", "1", "--max-staging-bytes", "4K",
      "--max-snapshot-size", "8K")
def _(fs, workdir):
    fd = fs.stage(b"q" * 4096, "a", close=False)
    try:
        assert errno_of(os.write, fd, b"q") == E.EDQUOT
        assert errno_of(os.open, fs.p(".staging/b"),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL) == E.EDQUOT
    finally:
        os.close(fd)
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"q" * 4096)))
    fs.stage(b"x", "b")  # the slot came back


@case("staging-fallocate")
def _(fs, workdir):
    fd = fs.stage(b"x", "a", close=False)
    try:
        assert errno_of(fallocate, fd, 0, 4096) == E.EOPNOTSUPP
        os.write(fd, b"y")
    finally:
        os.close(fd)
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"xy")))


@case("staging-metadata")
def _(fs, workdir):
    fs.stage(b"x", "a")
    assert errno_of(os.chmod, fs.p(".staging/a"), 0o644) == E.EPERM
    assert errno_of(os.chown, fs.p(".staging/a"), NOBODY_UID, NOBODY_UID) == E.EPERM
    os.utime(fs.p(".staging/a"), (0, 0))  # times are accepted and ignored
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"x")))


# ---- the read view --------------------------------------------------------------------------

def with_view(fn):
    """Runs fn(fs, view) on a mount with a read view beside it."""
    def run_case(fs, workdir):
        return fn(fs, os.path.join(workdir, "view"))
    return run_case


@case("view-change", "--readers", "any", "--read-view", "VIEW")
@with_view
def _(fs, view):
    digest = fs.publish(b"cfg")
    v = os.path.join(view, digest)
    assert errno_of(os.open, v, os.O_WRONLY) == E.EROFS
    assert errno_of(os.truncate, v, 0) == E.EROFS
    assert errno_of(os.chmod, v, 0o600) == E.EROFS
    assert errno_of(os.setxattr, v, "user.x", b"1") == E.EROFS
    assert errno_of(os.link, v, os.path.join(view, "hard")) == E.EROFS
    assert errno_of(os.symlink, digest, os.path.join(view, "soft")) == E.EROFS
    assert errno_of(os.mkdir, os.path.join(view, "dir")) == E.EROFS
    assert errno_of(os.unlink, v) == E.EROFS
    assert errno_of(os.rename, v, os.path.join(view, "f" * 64)) == E.EROFS
    with open(v, "rb") as f:
        assert f.read() == b"cfg"


@case("view-open-append", "--readers", "any", "--read-view", "VIEW")
@with_view
def _(fs, view):
    digest = fs.publish(b"cfg")
    fd = os.open(os.path.join(view, digest), os.O_RDONLY | os.O_APPEND)
    try:
        assert errno_of(os.write, fd, b"x") == E.EBADF
        assert os.pread(fd, 16, 0) == b"cfg"
    finally:
        os.close(fd)
    assert read(fs, digest) == b"cfg"


@case("view-mmap-shared-write", "--readers", "any", "--read-view", "VIEW")
@with_view
def _(fs, view):
    digest = fs.publish(b"v" * 4096)
    mmap_shared_write_is_eacces_and_read_works(os.path.join(view, digest), b"v" * 4096)


# ---- scopes and the control channel -----------------------------------------------------------

def scope_view(fs, workdir, **fields):
    """A scope named "s" whose view is WORKDIR/s: its view's path."""
    view = os.path.join(workdir, "s")
    control_ok(fs.path, {"op": "scope-create", "name": "s", "view": view, **fields})
    return view


def publish_in(view, data, name="cfg"):
    digest = sha256_hex(data)
    with open(os.path.join(view, ".staging", name), "wb") as f:
        f.write(data)
    os.rename(os.path.join(view, ".staging", name), os.path.join(view, digest))
    return digest


@case("scope-not-granted")
def _(fs, workdir):
    granted, other = fs.publish(b"granted", "g"), fs.publish(b"not granted", "n")
    view = scope_view(fs, workdir)
    control_ok(fs.path, {"op": "grant", "scope": "s", "sha256": granted})
    assert errno_of(os.stat, os.path.join(view, other)) == E.ENOENT
    assert errno_of(os.open, os.path.join(view, sha256_hex(b"never")), os.O_RDONLY) == E.ENOENT
    with open(os.path.join(view, granted), "rb") as f:
        assert f.read() == b"granted"
    assert read(fs, other) == b"not granted"


@case("scope-non-user", "--allow-other")
def _(fs, workdir):
    digest = fs.publish(b"the user's", "u")
    unseen = fs.publish(b"never looked up", "n")
    view = scope_view(fs, workdir, uids=[NOBODY_UID])
    control_ok(fs.path, {"op": "grant", "scope": "s", "sha256": digest, "entry": "cfg"})
    control_ok(fs.path, {"op": "grant", "scope": "s", "sha256": unseen})
    code = UID_PRELUDE + r'''
view = sys.argv[2]
if os.getuid() == 1000:
    print(open(f"{view}/cfg", "rb").read().decode())
else:
    # cfg's entry is in the kernel's cache now (the user looked it up): only the requests
    # that reach the daemon are asserted; a name nobody looked up is one of them.
    print(refused(os.stat, f"{view}/{sys.argv[3]}"), refused(os.open, f"{view}/cfg", os.O_RDONLY),
          refused(os.listdir, view), refused(os.getxattr, f"{view}/cfg", "user.snapfs.sha256"),
          refused(os.statvfs, view))
'''
    assert as_uid(NOBODY_UID, code, fs.path, view, unseen).stdout.strip() == "the user's"
    assert as_uid(NOBODY_UID + 1, code, fs.path, view, unseen).stdout.split() == [
        str(E.EACCES)] * 5


@case("scope-view-change")
def _(fs, workdir):
    digest = fs.publish(b"granted", "g")
    view = scope_view(fs, workdir)
    control_ok(fs.path, {"op": "grant", "scope": "s", "sha256": digest, "entry": "cfg"})
    v = os.path.join(view, "cfg")
    assert errno_of(os.open, v, os.O_WRONLY) == E.EROFS
    assert errno_of(os.unlink, v) == E.EROFS
    assert errno_of(os.mkdir, os.path.join(view, "dir")) == E.EROFS
    assert errno_of(os.open, os.path.join(view, "new"), os.O_WRONLY | os.O_CREAT) == E.EROFS
    with open(v, "rb") as f:
        assert f.read() == b"granted"


@case("scope-unlink-granted")
def _(fs, workdir):
    digest = fs.publish(b"the operator's", "o")
    view = scope_view(fs, workdir, publish=True)
    control_ok(fs.path, {"op": "grant", "scope": "s", "sha256": digest, "entry": "cfg"})
    assert errno_of(os.unlink, os.path.join(view, digest)) == E.EPERM
    assert errno_of(os.unlink, os.path.join(view, "cfg")) == E.EPERM
    own = publish_in(view, b"its own")
    os.unlink(os.path.join(view, own))
    with open(os.path.join(view, "cfg"), "rb") as f:
        assert f.read() == b"the operator's"


@case("scope-publish-exists")
def _(fs, workdir):
    elsewhere = fs.publish(b"on the main mount", "m")
    view = scope_view(fs, workdir, publish=True)
    # Published elsewhere: published here too, as new content would be.
    assert publish_in(view, b"on the main mount") == elsewhere
    with open(os.path.join(view, ".staging", "again"), "wb") as f:
        f.write(b"on the main mount")
    assert errno_of(os.rename, os.path.join(view, ".staging", "again"),
                    os.path.join(view, elsewhere)) == E.EEXIST
    assert os.listdir(os.path.join(view, ".staging")) == ["again"]


@case("scope-quota")
def _(fs, workdir):
    view = scope_view(fs, workdir, publish=True, limits={"max_snapshots": 1, "max_bytes": 8})
    publish_in(view, b"one")
    with open(os.path.join(view, ".staging", "big"), "wb") as f:
        f.write(b"0123456789")
    assert errno_of(os.rename, os.path.join(view, ".staging", "big"),
                    os.path.join(view, sha256_hex(b"0123456789"))) == E.EDQUOT
    os.unlink(os.path.join(view, sha256_hex(b"one")))
    with open(os.path.join(view, ".staging", "small"), "wb") as f:
        f.write(b"two")
    os.rename(os.path.join(view, ".staging", "small"), os.path.join(view, sha256_hex(b"two")))


@case("scope-watch")
def _(fs, workdir):
    digest = fs.publish(b"watched", "w")
    view = scope_view(fs, workdir, publish=True)
    control_ok(fs.path, {"op": "grant", "scope": "s", "sha256": digest, "entry": "cfg"})
    w = os.path.join(view, ".watch.cfg")
    assert errno_of(os.open, os.path.join(view, ".watch.absent"), os.O_RDONLY) == E.ENOENT
    assert errno_of(os.open, os.path.join(view, ".watch." + digest), os.O_RDONLY) == E.ENOENT
    assert errno_of(os.open, w, os.O_WRONLY) == E.EROFS
    fd = os.open(w, os.O_RDONLY)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN | select.POLLPRI)
        assert os.read(fd, 16) == b"" and p.poll(0) == []
    finally:
        os.close(fd)
    with open(os.path.join(view, "cfg"), "rb") as f:
        assert f.read() == b"watched"


@case("main-granted-only", "--allow-other", "--readers", "any")
def _(fs, workdir):
    view = scope_view(fs, workdir, publish=True)
    digest = publish_in(view, b"published in the scope")
    assert digest not in os.listdir(fs.p())
    r = as_uid(NOBODY_UID, UID_PRELUDE + r'''
print(refused(os.stat, f"{mnt}/{sys.argv[2]}"), refused(os.open, f"{mnt}/{sys.argv[2]}", os.O_RDONLY))
''', fs.path, digest)
    assert r.stdout.split() == [str(E.ENOENT)] * 2
    assert read(fs, digest) == b"published in the scope"  # the owner's (root's)


@case("control-other-uid", "--allow-other")
def _(fs, workdir):
    r = as_uid(NOBODY_UID, UID_PRELUDE + r'''
print(refused(os.open, f"{mnt}/.control", os.O_RDWR))
''', fs.path)
    assert r.stdout.strip() == str(E.EACCES)
    assert control(fs.path, {"op": "scope-list"})["ok"] is True


@case("control-bad-request")
def _(fs, workdir):
    assert errno_of(control, fs.path, None, raw=b"not one JSON object") == E.EINVAL
    assert errno_of(control, fs.path, None, raw=b"x" * (64 * 1024 + 1)) == E.EINVAL
    assert control(fs.path, {"op": "scope-list"})["ok"] is True


@case("control-second-request")
def _(fs, workdir):
    fd = os.open(fs.p(".control"), os.O_RDWR)
    try:
        request = b'{"op": "scope-list"}'
        assert os.write(fd, request) == len(request)
        assert errno_of(os.pwrite, fd, request, 0) == E.EBUSY
        assert json.loads(os.pread(fd, 4096, 0))["scopes"] == []
    finally:
        os.close(fd)


def test_every_row_of_the_table_has_its_case():
    keys = table_keys()
    assert len(keys) == len(set(keys)), "a key twice in the table"
    assert sorted(keys) == sorted(CASES)


@pytest.mark.parametrize("key", sorted(CASES))
def test_row(key, mount_snapfs, workdir):
    fn, opts = CASES[key]
    if "VIEW" in opts:
        view = os.path.join(workdir, "view")
        os.mkdir(view)
        opts = tuple(view if o == "VIEW" else o for o in opts)
    if "TRUSTKEY" in opts:
        key = os.path.join(workdir, "trusted")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", key], check=True)
        # The daemon takes the public key (a private one is refused by name).
        subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-out", key + ".pub"],
                       check=True)
        opts = tuple(key + ".pub" if o == "TRUSTKEY" else o for o in opts)
    fs = mount_snapfs(*opts)
    fn(fs, workdir)
