# SPDX-License-Identifier: MIT
"""Publishing through a real snapfs mount: the protocol, its rename outcomes, names, limits."""
import hashlib
import json
import os
import stat
import subprocess

import pytest

from snaptest import E, errno_of, run, sha256_hex

CONFIG = json.dumps({"mcpServers": {"fs": {"command": "npx", "args": ["server", "/tmp"],
                                           "env": {"TOKEN": "s3cret"}}}}).encode()


def test_published_snapshot_reads_back_identically_with_real_clients(snapfs):
    digest = snapfs.publish(CONFIG)
    path = snapfs.p(digest)

    assert run("cat", path).stdout.encode() == CONFIG
    assert run("sha256sum", path).stdout.split()[0] == digest
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == digest
    st = os.stat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0
    assert st.st_nlink == 1 and st.st_size == len(CONFIG)
    assert os.getxattr(path, "user.snapfs.sha256").decode() == digest
    binding = os.getxattr(path, "user.snapfs.binding").decode()
    assert binding == (f"sha256={digest} size={len(CONFIG)} "
                       f"dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} ino={st.st_ino}")
    assert sorted(os.listxattr(path)) == ["user.snapfs.binding", "user.snapfs.kind",
                                          "user.snapfs.name", "user.snapfs.sha256"]
    assert os.getxattr(path, "user.snapfs.kind") == b"content"
    assert os.getxattr(path, "user.snapfs.name") == b"cfg"  # the staging NAME
    # ls shows mode ----------, and the staging entry is gone.
    assert run("ls", "-l", path).stdout.startswith("---------- 1 ")
    assert os.listdir(snapfs.p(".staging")) == []
    assert sorted(os.listdir(snapfs.p())) == [".control", ".staging", digest]


def test_staging_xattr_gives_the_digest_of_the_closed_file(snapfs):
    snapfs.stage(CONFIG, "cfg")
    staged = snapfs.p(".staging/cfg")
    assert os.getxattr(staged, "user.snapfs.sha256").decode() == sha256_hex(CONFIG)
    assert stat.S_IMODE(os.stat(staged).st_mode) == 0o200
    os.rename(staged, snapfs.p(sha256_hex(CONFIG)))


def test_staging_xattr_of_a_file_still_open_for_writing_is_busy(snapfs):
    fd = snapfs.stage(b"partial", "cfg", close=False)
    try:
        assert errno_of(os.getxattr, snapfs.p(".staging/cfg"), "user.snapfs.sha256") == E.EBUSY
    finally:
        os.close(fd)
    assert os.getxattr(snapfs.p(".staging/cfg"), "user.snapfs.sha256").decode() == \
        sha256_hex(b"partial")


def test_rename_with_wrong_digest_publishes_nothing(snapfs):
    snapfs.stage(b"the real bytes", "cfg")
    before = sorted(os.listdir(snapfs.p()))
    wrong = sha256_hex(b"other bytes")
    assert errno_of(os.rename, snapfs.p(".staging/cfg"), snapfs.p(wrong)) == E.EBADMSG
    assert sorted(os.listdir(snapfs.p())) == before
    assert errno_of(os.stat, snapfs.p(wrong)) == E.ENOENT
    # The right digest publishes the same staging file.
    os.rename(snapfs.p(".staging/cfg"), snapfs.p(sha256_hex(b"the real bytes")))


@pytest.mark.parametrize("target", ["config.json", "A" * 64, "0" * 63, "0" * 65,
                                    ".staging/" + "0" * 64])
def test_rename_to_a_malformed_target_is_invalid(snapfs, target):
    snapfs.stage(b"bytes", "cfg")
    assert errno_of(os.rename, snapfs.p(".staging/cfg"), snapfs.p(target)) == E.EINVAL
    os.rename(snapfs.p(".staging/cfg"), snapfs.p(sha256_hex(b"bytes")))


def test_rename_while_the_writer_is_open_is_busy(snapfs):
    fd = snapfs.stage(b"still writing", "cfg", close=False)
    digest = sha256_hex(b"still writing")
    try:
        assert errno_of(os.rename, snapfs.p(".staging/cfg"), snapfs.p(digest)) == E.EBUSY
    finally:
        os.close(fd)
    os.rename(snapfs.p(".staging/cfg"), snapfs.p(digest))
    assert open(snapfs.p(digest), "rb").read() == b"still writing"


def test_publishing_identical_content_again_is_eexist_with_the_same_inode(snapfs):
    digest = snapfs.publish(CONFIG, "first")
    ino = os.stat(snapfs.p(digest)).st_ino
    snapfs.stage(CONFIG, "second")
    assert errno_of(os.rename, snapfs.p(".staging/second"), snapfs.p(digest)) == E.EEXIST
    assert os.stat(snapfs.p(digest)).st_ino == ino
    # The staging file stays for the caller to remove.
    os.unlink(snapfs.p(".staging/second"))
    assert os.listdir(snapfs.p(".staging")) == []


def test_a_lookup_that_missed_does_not_hide_a_later_publish(snapfs):
    digest = sha256_hex(CONFIG)
    for _ in range(3):
        assert errno_of(os.stat, snapfs.p(digest)) == E.ENOENT
    snapfs.publish(CONFIG)
    assert os.stat(snapfs.p(digest)).st_size == len(CONFIG)


def test_the_shell_recipe_publishes(snapfs, workdir):
    src = os.path.join(workdir, "config.json")
    with open(src, "wb") as f:
        f.write(CONFIG)
    script = (f'cat "$1" > "$2/.staging/cfg" && d=$(sha256sum < "$1" | cut -c1-64) && '
              f'mv "$2/.staging/cfg" "$2/$d" && echo "$d"')
    r = run("sh", "-c", script, "sh", src, snapfs.path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == sha256_hex(CONFIG)


@pytest.mark.parametrize("name", [".hidden", "x" * 65, "tab\tname", "new\nline", "bell\x07"])
def test_invalid_staging_names_are_refused(snapfs, name):
    assert errno_of(os.open, snapfs.p(".staging/" + name),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL) == E.EINVAL
    assert os.listdir(snapfs.p(".staging")) == []
    snapfs.stage(b"ok", "x" * 64)  # the longest valid name works
    os.unlink(snapfs.p(".staging/" + "x" * 64))


def test_an_empty_staging_name_never_reaches_the_daemon(snapfs):
    # ".staging/" names the directory itself: the kernel refuses before asking snapfs.
    assert errno_of(os.open, snapfs.p(".staging/"), os.O_WRONLY | os.O_CREAT) == E.EISDIR


def test_a_write_past_the_snapshot_size_limit_is_efbig(mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "4K")
    fd = os.open(fs.p(".staging/big"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        assert os.write(fd, b"a" * 4096) == 4096
        assert errno_of(os.write, fd, b"b") == E.EFBIG
        assert errno_of(os.pwrite, fd, b"c", 1 << 30) == E.EFBIG
    finally:
        os.close(fd)
    digest = sha256_hex(b"a" * 4096)
    os.rename(fs.p(".staging/big"), fs.p(digest))  # exactly the limit publishes
    assert os.stat(fs.p(digest)).st_size == 4096


def test_bytes_limit_gives_enospc_while_readers_keep_reading(mount_snapfs):
    fs = mount_snapfs("--max-bytes", "64K", "--max-snapshot-size", "64K")
    kept = fs.publish(b"k" * 10000, "kept")
    fd = os.open(fs.p(".staging/greedy"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, b"g" * 50000)
        # 58,000 bytes would fit one snapshot, but not beside the 10,000 already kept.
        assert errno_of(os.write, fd, b"g" * 8000) == E.ENOSPC
        assert open(fs.p(kept), "rb").read() == b"k" * 10000
    finally:
        os.close(fd)
    os.unlink(fs.p(".staging/greedy"))
    fs.publish(b"x" * 8000, "after")  # the space came back


def test_staging_quota_per_uid_is_edquot(mount_snapfs):
    fs = mount_snapfs("--max-staging", "2")
    fs.stage(b"1", "a")
    fs.stage(b"2", "b")
    assert errno_of(os.open, fs.p(".staging/c"), os.O_WRONLY | os.O_CREAT | os.O_EXCL) \
        == E.EDQUOT
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"1")))  # publishing frees a slot
    fs.stage(b"3", "c")


def test_snapshot_count_limit_is_enospc(mount_snapfs):
    fs = mount_snapfs("--max-snapshots", "2")
    fs.publish(b"one", "a")
    fs.publish(b"two", "b")
    fs.stage(b"three", "c")
    assert errno_of(os.rename, fs.p(".staging/c"), fs.p(sha256_hex(b"three"))) == E.ENOSPC
    assert open(fs.p(sha256_hex(b"one")), "rb").read() == b"one"


def test_zero_byte_snapshot_publishes(snapfs):
    digest = snapfs.publish(b"", "empty")
    assert digest == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert os.stat(snapfs.p(digest)).st_size == 0
    assert open(snapfs.p(digest), "rb").read() == b""


def test_statfs_reports_use_against_the_limits(mount_snapfs):
    fs = mount_snapfs("--max-bytes", "1M", "--max-snapshots", "100")
    before = os.statvfs(fs.p())
    assert before.f_blocks * before.f_frsize == 1 << 20
    assert before.f_files == 100
    fs.publish(b"z" * 8192, "a")
    after = os.statvfs(fs.p())
    assert before.f_bfree - after.f_bfree == 2
    assert before.f_ffree - after.f_ffree == 1


def test_large_snapshot_reads_back_intact(mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "8M", "--max-bytes", "32M")
    data = os.urandom(5 * 1024 * 1024 + 123)
    digest = fs.publish(data, "big")
    with open(fs.p(digest), "rb") as f:
        assert f.read() == data
    assert run("sha256sum", fs.p(digest)).stdout.split()[0] == digest


def test_staging_bytes_per_uid_are_limited_while_another_uid_stages(mount_snapfs):
    from snaptest import NOBODY_UID, as_uid
    fs = mount_snapfs("--allow-other", "--publishers", "any", "--max-staging-bytes", "64K",
                      "--max-snapshot-size", "256K")
    fd = os.open(fs.p(".staging/a"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, b"r" * 65536)
        assert errno_of(os.write, fd, b"r") == E.EDQUOT
    finally:
        os.close(fd)
    assert errno_of(os.truncate, fs.p(".staging/a"), 65537) == E.EDQUOT
    # Another uid has its own quota.
    as_uid(NOBODY_UID, "import os, sys\n"
                       "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)\n"
                       "assert os.write(fd, b'u' * 65536) == 65536\nos.close(fd)",
           fs.p(".staging/b"))
    # Publishing takes the bytes out of staging: the quota is free again.
    os.rename(fs.p(".staging/a"), fs.p(sha256_hex(b"r" * 65536)))
    fs.stage(b"s" * 65536, "c")


def test_close_then_rename_publishes_even_while_a_dup_stays_open(snapfs):
    """close() is what ends writing (it reaches the daemon synchronously; the kernel's RELEASE
    comes later, asynchronously). A descriptor still open through dup() does not block the
    publish, and cannot change the snapshot afterwards."""
    fd = os.open(snapfs.p(".staging/d"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, b"published through a dup")
    keep = os.dup(fd)
    try:
        os.close(fd)
        digest = sha256_hex(b"published through a dup")
        os.rename(snapfs.p(".staging/d"), snapfs.p(digest))
        assert errno_of(os.pwrite, keep, b"X", 0) == E.EBADF
        assert open(snapfs.p(digest), "rb").read() == b"published through a dup"
    finally:
        os.close(keep)


def test_writing_again_through_a_dup_makes_it_a_writer_again(snapfs):
    fd = os.open(snapfs.p(".staging/d"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, b"first")
    keep = os.dup(fd)
    try:
        os.close(fd)
        os.write(keep, b" and more")
        assert errno_of(os.rename, snapfs.p(".staging/d"),
                        snapfs.p(sha256_hex(b"first and more"))) == E.EBUSY
    finally:
        os.close(keep)
    os.rename(snapfs.p(".staging/d"), snapfs.p(sha256_hex(b"first and more")))
