# SPDX-License-Identifier: MIT
"""The read view (--read-view): a second, read-only mount of the same snapshots where the
daemon declines OPEN, so an open costs no round trip. The kernel, not the daemon, refuses
writes there: every refusal is checked next to a read of the same bytes."""
import mmap
import os
import stat
import subprocess

import pytest

from snaptest import E, errno_of, is_mounted, run, sha256_hex, start_snapfs

DATA = b'{"mcpServers": {"view": {"command": "true"}}}\n'


@pytest.fixture
def viewed(mount_snapfs, workdir):
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    fs = mount_snapfs("--allow-other", "--readers", "any", "--read-view", view)
    digest = fs.publish(DATA)
    return fs, view, digest


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_a_published_snapshot_reads_back_through_the_view_with_its_own_binding(snapfs_bin,
                                                                                 viewed):
    fs, view, digest = viewed
    path = os.path.join(view, digest)
    assert read(path) == DATA
    assert run("sha256sum", path).stdout.split()[0] == digest
    st, main = os.stat(path), os.stat(fs.p(digest))
    assert stat.S_IMODE(st.st_mode) == 0 and st.st_ino == main.st_ino
    assert st.st_dev != main.st_dev  # another mount: bindings are per mount
    assert os.getxattr(path, "user.snapfs.binding").decode() == (
        f"sha256={digest} size={len(DATA)} dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} "
        f"ino={st.st_ino}")
    assert os.listdir(view) == [digest]  # no .staging/ in the view
    assert errno_of(os.stat, os.path.join(view, ".staging")) == E.ENOENT
    chk = run(snapfs_bin, "check", "--preset", "snapfs", "--ro", view)
    assert chk.returncode == 0, chk.stdout
    ver = run(snapfs_bin, "verify", path)
    assert ver.returncode == 0 and f"dev={os.major(st.st_dev)}:" in ver.stdout


@pytest.mark.parametrize("flags", [os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC,
                                   os.O_WRONLY | os.O_APPEND])
def test_write_intent_opens_in_the_view_are_erofs(viewed, flags):
    fs, view, digest = viewed
    assert errno_of(os.open, os.path.join(view, digest), flags) == E.EROFS
    assert read(os.path.join(view, digest)) == DATA


def test_every_other_change_in_the_view_is_erofs(viewed):
    fs, view, digest = viewed
    path = os.path.join(view, digest)
    assert errno_of(os.truncate, path, 0) == E.EROFS
    assert errno_of(os.chmod, path, 0o600) == E.EROFS
    assert errno_of(os.chown, path, 1000, 1000) == E.EROFS
    assert errno_of(os.utime, path, (0, 0)) == E.EROFS
    assert errno_of(os.setxattr, path, "user.x", b"1") == E.EROFS
    assert errno_of(os.removexattr, path, "user.snapfs.sha256") == E.EROFS
    assert errno_of(os.unlink, path) == E.EROFS
    assert errno_of(os.rename, path, os.path.join(view, sha256_hex(b"x"))) == E.EROFS
    assert errno_of(os.link, path, os.path.join(view, "alias")) == E.EROFS
    assert errno_of(os.symlink, digest, os.path.join(view, "alias")) == E.EROFS
    assert errno_of(os.mkdir, os.path.join(view, "d")) == E.EROFS
    assert errno_of(os.open, os.path.join(view, "new"), os.O_WRONLY | os.O_CREAT) == E.EROFS
    assert read(path) == DATA and read(fs.p(digest)) == DATA


def test_a_writable_shared_mapping_in_the_view_is_refused_and_a_private_one_reads(viewed):
    fs, view, digest = viewed
    fd = os.open(os.path.join(view, digest), os.O_RDONLY)
    try:
        assert errno_of(mmap.mmap, fd, len(DATA), mmap.MAP_SHARED,
                        mmap.PROT_READ | mmap.PROT_WRITE) == E.EACCES
        with mmap.mmap(fd, len(DATA), mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE) as m:
            m[0:1] = b"X"  # private copy-on-write: nobody else sees it
        assert os.pread(fd, len(DATA), 0) == DATA
    finally:
        os.close(fd)
    assert read(fs.p(digest)) == DATA


def test_an_unlink_on_the_main_mount_reaches_the_view_and_holders_keep_reading(viewed):
    fs, view, digest = viewed
    path = os.path.join(view, digest)
    assert read(path) == DATA  # the view has the name cached now
    fd = os.open(path, os.O_RDONLY)
    try:
        os.unlink(fs.p(digest))
        assert errno_of(os.open, path, os.O_RDONLY) == E.ENOENT
        assert os.pread(fd, len(DATA) + 1, 0) == DATA
    finally:
        os.close(fd)
    # Publishing again shows up in the view at once, under a new inode number.
    fs.publish(DATA, "again")
    assert read(path) == DATA


def test_a_read_view_with_a_reader_policy_is_refused(snapfs_bin, workdir):
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    r = run(snapfs_bin, "mount", "-f", "--readers", "0", "--read-view", view,
            os.path.join(workdir))
    assert r.returncode == 2 and "--read-view" in r.stderr and "--readers" in r.stderr
    assert not is_mounted(view) and not is_mounted(workdir)


def test_a_read_view_needs_readers_any_said_and_serves_with_it(snapfs_bin, mount_snapfs,
                                                                workdir):
    """Every-uid reads are an explicit choice: the default readers (the owner and root) refuse
    the view, and the same command with --readers any serves it."""
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    r = run(snapfs_bin, "mount", "-f", "--read-view", view, os.path.join(workdir))
    assert r.returncode == 2, r.stderr
    assert "--read-view needs every uid to be a reader (--readers any)" in r.stderr
    assert not is_mounted(view) and not is_mounted(workdir)
    fs = mount_snapfs("--readers", "any", "--read-view", view)
    assert read(os.path.join(view, fs.publish(DATA))) == DATA


def test_a_view_stacked_on_another_mount_is_refused_and_nothing_stays_mounted(snapfs_bin,
                                                                               workdir):
    main, view = os.path.join(workdir, "main"), os.path.join(workdir, "view")
    os.mkdir(main)
    os.mkdir(view)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", view], check=True)
    try:
        proc = start_snapfs(snapfs_bin, main, "--readers", "any", "--read-view", view, expect_ready=False)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 1 and "stacked:" in err
        assert not is_mounted(main)
    finally:
        subprocess.run(["umount", view], check=True)
    # The same view path, made free, is served; SIGTERM takes both mounts away.
    fs = start_snapfs(snapfs_bin, main, "--readers", "any", "--read-view", view)
    digest = fs.publish(DATA)
    assert read(os.path.join(view, digest)) == DATA
    assert fs.stop() == 0
    assert not is_mounted(main) and not is_mounted(view)


def test_a_view_that_cannot_be_mounted_stops_the_daemon_and_an_existing_one_serves(snapfs_bin,
                                                                                    workdir):
    main, view = os.path.join(workdir, "main"), os.path.join(workdir, "view")
    os.mkdir(main)
    # No directory there: the daemon must not go on serving the main mount without the view
    # the caller asked for.
    proc = start_snapfs(snapfs_bin, main, "--readers", "any", "--read-view", view, expect_ready=False)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "mounting the read view failed" in err
    assert not is_mounted(main)
    os.mkdir(view)
    fs = start_snapfs(snapfs_bin, main, "--readers", "any", "--read-view", view)
    digest = fs.publish(DATA)
    assert read(os.path.join(view, digest)) == DATA
    assert fs.stop() == 0
    assert not is_mounted(main) and not is_mounted(view)


def mount_flags(path):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4] == path:
                return set(line.split()[5].split(","))
    raise AssertionError(f"{path} is not mounted")


def test_generic_flags_asked_for_are_kept_on_the_mount_and_on_its_view(mount_snapfs, workdir):
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    fs = mount_snapfs("--allow-other", "--nosymfollow", "--noatime", "--nodiratime",
                      "--readers", "any", "--read-view", view)
    asked = {"nosymfollow", "noatime", "nodiratime", "nosuid", "nodev", "noexec"}
    assert asked <= mount_flags(fs.path), mount_flags(fs.path)
    assert asked | {"ro"} <= mount_flags(view), mount_flags(view)
    digest = fs.publish(DATA)
    assert read(os.path.join(view, digest)) == DATA
    # The allowance: without them neither mount carries them, and both serve the same.
    plain_view = os.path.join(workdir, "plain-view")
    os.mkdir(plain_view)
    plain = mount_snapfs("--allow-other", "--readers", "any", "--read-view", plain_view, name="plain")
    for path in (plain.path, plain_view):
        assert not {"nosymfollow", "noatime", "nodiratime"} & mount_flags(path)
    assert read(os.path.join(plain_view, plain.publish(DATA))) == DATA
