# SPDX-License-Identifier: MIT
"""Every refused modification of docs/design.md's table, each with its exact errno, and after each
one a read of the same snapshot showing the same binding and the same bytes."""
import ctypes
import mmap
import os
import stat
import subprocess

import pytest

from snaptest import E, errno_of, sha256_hex

DATA = b'{"mcpServers": {"x": {"command": "true", "env": {"TOKEN": "t0k3n"}}}}\n'

libc = ctypes.CDLL(None, use_errno=True)


def binding(fs, digest):
    st = os.stat(fs.p(digest))
    return (st.st_dev, st.st_ino, st.st_size, stat.S_IMODE(st.st_mode), st.st_nlink,
            os.getxattr(fs.p(digest), "user.snapfs.binding"))


def unchanged(fs, digest, before):
    assert binding(fs, digest) == before
    with open(fs.p(digest), "rb") as f:
        assert f.read() == DATA


def c_call(fn, *args):
    if fn(*args) == 0:
        raise AssertionError("call succeeded; expected a refusal")
    return ctypes.get_errno()


@pytest.fixture
def published(snapfs):
    digest = snapfs.publish(DATA)
    return snapfs, digest, binding(snapfs, digest)


@pytest.mark.parametrize("flags", [os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC,
                                   os.O_WRONLY | os.O_TRUNC, os.O_RDONLY | os.O_APPEND,
                                   os.O_WRONLY | os.O_APPEND])
def test_write_intent_opens_are_erofs(published, flags):
    fs, digest, before = published
    assert errno_of(os.open, fs.p(digest), flags) == E.EROFS
    unchanged(fs, digest, before)


def test_truncate_is_erofs(published):
    fs, digest, before = published
    assert errno_of(os.truncate, fs.p(digest), 0) == E.EROFS
    assert errno_of(os.truncate, fs.p(digest), len(DATA)) == E.EROFS
    unchanged(fs, digest, before)


def test_chmod_chown_utimens_are_erofs_even_for_root(published):
    fs, digest, before = published
    assert os.geteuid() == 0
    assert errno_of(os.chmod, fs.p(digest), 0o600) == E.EROFS
    assert errno_of(os.chown, fs.p(digest), 1000, 1000) == E.EROFS
    assert errno_of(os.utime, fs.p(digest), (0, 0)) == E.EROFS
    assert errno_of(os.utime, fs.p(digest)) == E.EROFS
    unchanged(fs, digest, before)


def test_setxattr_and_removexattr_are_erofs(published):
    fs, digest, before = published
    assert errno_of(os.setxattr, fs.p(digest), "user.snapfs.sha256", b"0" * 64) == E.EROFS
    assert errno_of(os.setxattr, fs.p(digest), "user.note", b"x") == E.EROFS
    assert errno_of(os.removexattr, fs.p(digest), "user.snapfs.sha256") == E.EROFS
    unchanged(fs, digest, before)


def test_link_symlink_mknod_mkdir_rmdir_are_eperm(published):
    fs, digest, before = published
    assert errno_of(os.link, fs.p(digest), fs.p("alias")) == E.EPERM
    assert errno_of(os.link, fs.p(digest), fs.p(".staging/alias")) == E.EPERM
    assert errno_of(os.symlink, digest, fs.p("alias")) == E.EPERM
    assert errno_of(os.symlink, digest, fs.p(".staging/alias")) == E.EPERM
    assert errno_of(os.mknod, fs.p("fifo"), stat.S_IFIFO | 0o600) == E.EPERM
    assert errno_of(os.mkdir, fs.p("dir")) == E.EPERM
    assert errno_of(os.mkdir, fs.p(".staging/dir")) == E.EPERM
    assert errno_of(os.rmdir, fs.p(".staging")) == E.EPERM
    unchanged(fs, digest, before)


def test_rename_of_a_snapshot_is_eperm(published):
    fs, digest, before = published
    other = sha256_hex(b"elsewhere")
    assert errno_of(os.rename, fs.p(digest), fs.p(other)) == E.EPERM
    assert errno_of(os.rename, fs.p(digest), fs.p(".staging/back")) == E.EPERM
    assert errno_of(os.rename, fs.p(".staging"), fs.p("staging2")) == E.EPERM
    unchanged(fs, digest, before)


def test_creating_a_file_outside_staging_is_eperm(published):
    fs, digest, before = published
    assert errno_of(os.open, fs.p("new-file"), os.O_WRONLY | os.O_CREAT | os.O_EXCL) == E.EPERM
    assert errno_of(os.open, fs.p(sha256_hex(b"new")), os.O_WRONLY | os.O_CREAT) == E.EPERM
    # O_CREAT on the existing snapshot is an open for writing.
    assert errno_of(os.open, fs.p(digest), os.O_WRONLY | os.O_CREAT) == E.EROFS
    unchanged(fs, digest, before)


def test_execve_of_a_snapshot_is_eacces(published):
    fs, digest, before = published
    assert errno_of(os.execv, fs.p(digest), [digest]) == E.EACCES
    unchanged(fs, digest, before)


def test_mmap_shared_writable_is_refused_and_private_readonly_works(published):
    fs, digest, before = published
    fd = os.open(fs.p(digest), os.O_RDONLY)
    try:
        with mmap.mmap(fd, len(DATA), mmap.MAP_PRIVATE, mmap.PROT_READ) as m:
            assert m[:] == DATA
        assert errno_of(mmap.mmap, fd, len(DATA), mmap.MAP_SHARED,
                        mmap.PROT_READ | mmap.PROT_WRITE) == E.EACCES
    finally:
        os.close(fd)
    unchanged(fs, digest, before)


def test_the_anonymous_file_tamper_recipe_fails_at_its_first_step(published):
    """chmod 0600, reopen read-write through /proc/self/fd/N, pwrite one byte, chmod 0: this
    rewrites a mode-000 O_TMPFILE in place. On snapfs the first step already fails."""
    fs, digest, before = published
    fd = os.open(fs.p(digest), os.O_RDONLY)
    try:
        assert errno_of(os.fchmod, fd, 0o600) == E.EROFS
        assert errno_of(os.chmod, f"/proc/self/fd/{fd}", 0o600) == E.EROFS
        # Even skipping the chmod, the reopen for writing is refused.
        assert errno_of(os.open, f"/proc/self/fd/{fd}", os.O_RDWR) == E.EROFS
        assert errno_of(os.pwrite, fd, b"X", 0) == E.EBADF
    finally:
        os.close(fd)
    unchanged(fs, digest, before)


def test_fallocate_and_ftruncate_on_a_readonly_descriptor_change_nothing(published):
    fs, digest, before = published
    fd = os.open(fs.p(digest), os.O_RDONLY)
    try:
        assert errno_of(os.ftruncate, fd, 0) in (E.EINVAL, E.EBADF)
        assert errno_of(os.posix_fallocate, fd, 0, 1 << 20) in (E.EBADF, E.EOPNOTSUPP)
    finally:
        os.close(fd)
    unchanged(fs, digest, before)


def test_unlink_then_the_holder_still_reads_and_new_opens_fail(published):
    fs, digest, before = published
    old_ino = before[1]
    fd = os.open(fs.p(digest), os.O_RDONLY)
    try:
        os.unlink(fs.p(digest))
        assert errno_of(os.open, fs.p(digest), os.O_RDONLY) == E.ENOENT
        assert os.pread(fd, len(DATA) + 10, 0) == DATA
        assert os.fstat(fd).st_nlink == 0
        # Republishing, other content and the same: always a new inode number.
        new_digest = fs.publish(b"different content", "again")
        assert os.stat(fs.p(new_digest)).st_ino > old_ino
        fs.publish(DATA, "same")
        assert os.stat(fs.p(digest)).st_ino not in (old_ino,)
        assert os.pread(fd, len(DATA), 0) == DATA
    finally:
        os.close(fd)
