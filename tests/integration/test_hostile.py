# SPDX-License-Identifier: MIT
"""Hostile input from a process that controls the sandbox user: each attempt refused with its
errno, and the tree exactly as it was afterwards."""
import ctypes
import fcntl
import os
import struct
import subprocess
import threading

import pytest

from snaptest import E, errno_of, sha256_hex

libc = ctypes.CDLL(None, use_errno=True)
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.getxattr.restype = ctypes.c_ssize_t

KEEP = b'{"mcpServers": {"kept": {"command": "true"}}}'


def tree_state(fs):
    """Everything a client can observe of the tree: names, bindings, bytes."""
    state = {}
    for name in sorted(os.listdir(fs.p())):
        if name == ".staging":
            state[name] = sorted(os.listdir(fs.p(".staging")))
            continue
        if name == ".control":  # the owner's control channel, not a snapshot
            continue
        st = os.stat(fs.p(name))
        with open(fs.p(name), "rb") as f:
            state[name] = (st.st_ino, st.st_size, st.st_mode, st.st_nlink,
                           os.getxattr(fs.p(name), "user.snapfs.binding"), f.read())
    return state


@pytest.fixture
def hostile(snapfs):
    snapfs.publish(KEEP, "keep")
    return snapfs, tree_state(snapfs)


@pytest.mark.parametrize("name", ["ctl\x01", "del\x7f", "esc\x1b[2J", "cr\r", "utf8-\u00e9",
                                  "sp ace", "a" * 65, "b" * 255])
def test_staging_names_outside_the_alphabet_are_einval(hostile, name):
    fs, before = hostile
    assert errno_of(os.open, fs.p(".staging/" + name), os.O_WRONLY | os.O_CREAT) == E.EINVAL
    assert tree_state(fs) == before


@pytest.mark.parametrize("length", [255, 256, 1024, 1025, 4000])
def test_long_names_are_einval(hostile, length):
    # FUSE hands the daemon names far longer than the VFS's usual 255: it refuses them all.
    fs, before = hostile
    assert errno_of(os.open, fs.p(".staging/" + "c" * length),
                    os.O_WRONLY | os.O_CREAT) == E.EINVAL
    assert tree_state(fs) == before


def test_a_path_past_path_max_is_enametoolong_from_the_kernel(hostile):
    fs, before = hostile
    assert errno_of(os.open, fs.p(".staging/" + "c" * 4096),
                    os.O_WRONLY | os.O_CREAT) == E.ENAMETOOLONG
    assert tree_state(fs) == before


def test_dotdot_out_of_staging_lands_in_the_root_and_is_eperm(hostile):
    fs, before = hostile
    assert errno_of(os.open, fs.p(".staging/../escape"), os.O_WRONLY | os.O_CREAT) == E.EPERM
    assert errno_of(os.open, fs.p(".staging/../" + sha256_hex(b"x")),
                    os.O_WRONLY | os.O_CREAT) == E.EPERM
    assert tree_state(fs) == before


def test_names_that_differ_from_a_digest_only_in_case_are_not_that_digest(hostile):
    fs, before = hostile
    digest = sha256_hex(KEEP)
    upper = digest.upper()
    assert errno_of(os.stat, fs.p(upper)) == E.ENOENT
    assert errno_of(os.open, fs.p(upper), os.O_RDONLY) == E.ENOENT
    fs.stage(KEEP, "again")
    assert errno_of(os.rename, fs.p(".staging/again"), fs.p(upper)) == E.EINVAL
    os.unlink(fs.p(".staging/again"))
    assert tree_state(fs) == before
    assert open(fs.p(digest), "rb").read() == KEEP


def test_renames_into_staging_into_the_root_by_name_and_onto_staging_are_refused(hostile):
    fs, before = hostile
    fs.stage(b"payload", "src")
    with_src = tree_state(fs)
    assert errno_of(os.rename, fs.p(".staging/src"), fs.p(".staging/dst")) == E.EINVAL
    assert errno_of(os.rename, fs.p(".staging/src"), fs.p("config.json")) == E.EINVAL
    # .staging is the source's parent: the VFS refuses a target that is an ancestor.
    assert errno_of(os.rename, fs.p(".staging/src"), fs.p(".staging")) == E.ENOTEMPTY
    assert errno_of(os.rename, fs.p(".staging"), fs.p(sha256_hex(b"payload"))) == E.EPERM
    assert tree_state(fs) == with_src
    os.unlink(fs.p(".staging/src"))
    assert tree_state(fs) == before


def test_sparse_pwrite_past_the_limit_is_efbig(hostile):
    fs, before = hostile
    fd = os.open(fs.p(".staging/sparse"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        for off in (256 * 1024, 1 << 30, (1 << 62)):
            assert errno_of(os.pwrite, fd, b"x", off) == E.EFBIG
        assert os.fstat(fd).st_size == 0
        assert os.pwrite(fd, b"y", 256 * 1024 - 1) == 1  # the last byte within the limit
    finally:
        os.close(fd)
    os.unlink(fs.p(".staging/sparse"))
    assert tree_state(fs) == before


@pytest.mark.parametrize("flag", [os.O_APPEND, os.O_DIRECT])
def test_append_and_direct_opens_of_staging_files_are_einval(hostile, flag):
    fs, before = hostile
    assert errno_of(os.open, fs.p(".staging/f"), os.O_WRONLY | os.O_CREAT | flag) == E.EINVAL
    fs.stage(b"existing", "g")
    assert errno_of(os.open, fs.p(".staging/g"), os.O_WRONLY | flag) == E.EINVAL
    os.unlink(fs.p(".staging/g"))
    assert tree_state(fs) == before


def test_fallocate_of_a_staging_file_is_eopnotsupp(hostile):
    fs, before = hostile
    fd = os.open(fs.p(".staging/f"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        # The raw syscall: glibc's posix_fallocate would fall back to writing zeros.
        assert libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(1 << 20)) == -1
        assert ctypes.get_errno() == E.EOPNOTSUPP
        assert os.fstat(fd).st_size == 0
    finally:
        os.close(fd)
    os.unlink(fs.p(".staging/f"))
    assert tree_state(fs) == before


def test_copy_file_range_into_staging_delivers_exactly_the_bytes_or_nothing(hostile, workdir):
    """snapfs has no copy_file_range op: the kernel either refuses or copies through ordinary
    writes, which the daemon hashes like any other. Either way the digest must be exact."""
    fs, before = hostile
    src = os.path.join(workdir, "src")
    payload = os.urandom(100000)
    with open(src, "wb") as f:
        f.write(payload)
    sfd = os.open(src, os.O_RDONLY)
    dfd = os.open(fs.p(".staging/copy"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        copied = 0
        try:
            while copied < len(payload):
                n = os.copy_file_range(sfd, dfd, len(payload) - copied)
                assert n > 0
                copied += n
        except OSError as e:
            assert e.errno in (E.EOPNOTSUPP, E.EXDEV, E.EINVAL), e
    finally:
        os.close(sfd)
        os.close(dfd)
    if copied:
        assert copied == len(payload)
        assert os.getxattr(fs.p(".staging/copy"), "user.snapfs.sha256").decode() == \
            sha256_hex(payload)
        os.rename(fs.p(".staging/copy"), fs.p(sha256_hex(payload)))
        assert open(fs.p(sha256_hex(payload)), "rb").read() == payload
        os.unlink(fs.p(sha256_hex(payload)))
    else:
        os.unlink(fs.p(".staging/copy"))
    assert tree_state(fs) == before


RACER = r'''
import errno, os, sys
src, dst, go = sys.argv[1], sys.argv[2], sys.argv[3]
os.read(int(go), 1)
try:
    os.rename(src, dst)
    print("won")
except OSError as e:
    print("lost", errno.errorcode[e.errno])
'''


def test_two_processes_renaming_one_staging_file_exactly_one_wins(hostile):
    fs, _ = hostile
    for i in range(40):
        data = f"race {i}".encode()
        fs.stage(data, "contested")
        r, w = os.pipe()
        procs = [subprocess.Popen(["/usr/bin/python3", "-c", RACER, fs.p(".staging/contested"),
                                   fs.p(sha256_hex(data)), str(r)], pass_fds=(r,),
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        os.close(r)
        os.write(w, b"xx")  # both start at once
        os.close(w)
        results = sorted(p.communicate(timeout=30)[0].strip() for p in procs)
        assert results == ["lost ENOENT", "won"], results
        assert open(fs.p(sha256_hex(data)), "rb").read() == data
        os.unlink(fs.p(sha256_hex(data)))
    assert os.listdir(fs.p(".staging")) == []


def test_publish_racing_unlink_of_the_same_digest_stays_consistent(hostile):
    fs, before = hostile
    data = b"contested digest"
    digest = sha256_hex(data)
    outcomes = {"publish": set(), "unlink": set()}
    errors = []

    def publisher():
        for i in range(300):
            name = f"p{i % 8}"
            try:
                fs.stage(data, name)
                try:
                    os.rename(fs.p(".staging/" + name), fs.p(digest))
                    outcomes["publish"].add(0)
                except OSError as e:
                    outcomes["publish"].add(e.errno)
                    os.unlink(fs.p(".staging/" + name))
            except OSError as e:
                errors.append(("stage", e))

    def unlinker():
        for _ in range(600):
            try:
                os.unlink(fs.p(digest))
                outcomes["unlink"].add(0)
            except OSError as e:
                outcomes["unlink"].add(e.errno)

    threads = [threading.Thread(target=publisher), threading.Thread(target=unlinker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert outcomes["publish"] <= {0, E.EEXIST} and 0 in outcomes["publish"]
    assert outcomes["unlink"] <= {0, E.ENOENT} and 0 in outcomes["unlink"]
    # Whatever the last step was, stat, open and the listing agree.
    listed = digest in os.listdir(fs.p())
    if listed:
        assert open(fs.p(digest), "rb").read() == data
        os.unlink(fs.p(digest))
    else:
        assert errno_of(os.stat, fs.p(digest)) == E.ENOENT
    assert os.listdir(fs.p(".staging")) == []
    assert tree_state(fs) == before


CHURN = r'''
import hashlib, os, sys
mnt = sys.argv[1]
for i in range(1000):
    data = b"churn %d" % i
    d = hashlib.sha256(data).hexdigest()
    fd = os.open(f"{mnt}/.staging/c", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, data); os.close(fd)
    os.rename(f"{mnt}/.staging/c", f"{mnt}/{d}")
    if i % 2:
        os.unlink(f"{mnt}/{d}")
'''


def test_readdir_while_1000_snapshots_come_and_go_never_repeats_or_tears(
        mount_snapfs):
    fs = mount_snapfs("--max-snapshots", "2000")
    proc = subprocess.Popen(["/usr/bin/python3", "-c", CHURN, fs.path])
    hexdigits = set("0123456789abcdef")
    listings = 0
    try:
        while proc.poll() is None or listings < 5:
            names = os.listdir(fs.p())
            listings += 1
            assert len(names) == len(set(names)), "a listing repeated an entry"
            for n in names:
                assert n in (".staging", ".control") or (len(n) == 64 and set(n) <= hexdigits), repr(n)
    finally:
        assert proc.wait(120) == 0
    names = set(os.listdir(fs.p()))
    assert len(names) == 2 + 500  # .staging, .control and every even-numbered snapshot
    assert listings > 5


def test_getxattr_with_tiny_and_huge_buffers(hostile):
    fs, before = hostile
    path = fs.p(sha256_hex(KEEP)).encode()
    name = b"user.snapfs.sha256"
    assert libc.getxattr(path, name, None, 0) == 64
    tiny = ctypes.create_string_buffer(1)
    assert libc.getxattr(path, name, tiny, 1) == -1 and ctypes.get_errno() == E.ERANGE
    assert libc.getxattr(path, name, tiny, 63) == -1 and ctypes.get_errno() == E.ERANGE
    huge = ctypes.create_string_buffer(1 << 20)
    assert libc.getxattr(path, name, huge, 1 << 20) == 64
    assert huge.raw[:64].decode() == sha256_hex(KEEP)
    assert libc.getxattr(path, b"user.snapfs.binding", huge, 1 << 20) > 64
    assert libc.getxattr(path, b"user.nothing", huge, 1 << 20) == -1
    assert ctypes.get_errno() == E.ENODATA
    assert tree_state(fs) == before


FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_IOC_FSGETXATTR = 0x801C581F
FS_IMMUTABLE_FL = 0x10


def test_ioctls_the_daemon_does_not_implement_are_enotty(hostile):
    fs, before = hostile
    fd = os.open(fs.p(sha256_hex(KEEP)), os.O_RDONLY)
    try:
        assert errno_of(fcntl.ioctl, fd, FS_IOC_GETFLAGS, b"\0" * 8) == E.ENOTTY
        flags = struct.pack("l", FS_IMMUTABLE_FL)
        assert errno_of(fcntl.ioctl, fd, FS_IOC_SETFLAGS, flags) == E.ENOTTY
        assert errno_of(fcntl.ioctl, fd, FS_IOC_FSGETXATTR, b"\0" * 28) == E.ENOTTY
    finally:
        os.close(fd)
    assert tree_state(fs) == before
