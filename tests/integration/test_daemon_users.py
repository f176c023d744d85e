# SPDX-License-Identifier: MIT
"""Several uids on one mount: a non-root publisher and reader, invisible staging, unlink
rights, and the --readers/--publishers policies."""
import os
import subprocess

from snaptest import NOBODY_UID, UID_PRELUDE, E, as_uid, errno_of, run, sha256_hex

# Runs as another uid: prints nothing on success; asserts otherwise.
CLIENT = UID_PRELUDE


def test_a_non_root_uid_publishes_and_reads_but_modifies_nothing(mount_snapfs):
    snapfs = mount_snapfs("--allow-other", "--publishers", "any", "--readers", "any")
    code = CLIENT + r'''
data = b"published by an ordinary uid"
d = hashlib.sha256(data).hexdigest()
fd = os.open(f"{mnt}/.staging/mine", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, data); os.close(fd)
os.rename(f"{mnt}/.staging/mine", f"{mnt}/{d}")
assert open(f"{mnt}/{d}", "rb").read() == data
st = os.stat(f"{mnt}/{d}")
assert st.st_uid == os.getuid() and st.st_mode & 0o7777 == 0
assert refused(os.open, f"{mnt}/{d}", os.O_WRONLY) == errno.EROFS
assert refused(os.chmod, f"{mnt}/{d}", 0o600) == errno.EROFS
assert refused(os.truncate, f"{mnt}/{d}", 0) == errno.EROFS
assert open(f"{mnt}/{d}", "rb").read() == data
print(d)
'''
    r = as_uid(NOBODY_UID, code, snapfs.path)
    digest = r.stdout.strip()
    assert digest == sha256_hex(b"published by an ordinary uid")
    assert os.stat(snapfs.p(digest)).st_uid == NOBODY_UID


def test_another_uids_staging_files_are_invisible(mount_snapfs):
    snapfs = mount_snapfs("--allow-other", "--publishers", "any")
    snapfs.stage(b"root's half-written token", "secret")
    code = CLIENT + r'''
assert os.listdir(f"{mnt}/.staging") == []
assert refused(os.stat, f"{mnt}/.staging/secret") == errno.ENOENT
assert refused(os.open, f"{mnt}/.staging/secret", os.O_RDONLY) == errno.ENOENT
assert refused(os.getxattr, f"{mnt}/.staging/secret", "user.snapfs.sha256") == errno.ENOENT
assert refused(os.unlink, f"{mnt}/.staging/secret") == errno.ENOENT
assert refused(os.rename, f"{mnt}/.staging/secret",
               f"{mnt}/" + hashlib.sha256(b"x").hexdigest()) == errno.ENOENT
# Its own file of the same name is its own.
fd = os.open(f"{mnt}/.staging/secret", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"mine"); os.close(fd)
assert os.listdir(f"{mnt}/.staging") == ["secret"]
os.unlink(f"{mnt}/.staging/secret")
'''
    as_uid(NOBODY_UID, code, snapfs.path)
    # Root's file is untouched.
    assert os.listdir(snapfs.p(".staging")) == ["secret"]
    assert os.getxattr(snapfs.p(".staging/secret"), "user.snapfs.sha256").decode() == \
        sha256_hex(b"root's half-written token")


# Runs as another uid: publishes argv[2] and prints its digest.
PUBLISH = CLIENT + r'''
data = sys.argv[2].encode()
fd = os.open(f"{mnt}/.staging/p", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, data); os.close(fd)
os.rename(f"{mnt}/.staging/p", f"{mnt}/" + hashlib.sha256(data).hexdigest())
print(hashlib.sha256(data).hexdigest())
'''


def cat_as(uid, path):
    """A real cat(1) as uid: (exit code, stdout bytes, stderr)."""
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                        "cat", path], capture_output=True, timeout=60)
    return r.returncode, r.stdout, r.stderr.decode()


# Another uid on a mount it may read: reads, and can neither publish nor remove.
READER = CLIENT + r'''
d = sys.argv[2]
assert open(f"{mnt}/{d}", "rb").read() == b"sandbox A's token"
assert refused(os.open, f"{mnt}/.staging/x", os.O_WRONLY | os.O_CREAT | os.O_EXCL) == errno.EACCES
assert refused(os.listdir, f"{mnt}/.staging") == errno.EACCES
assert refused(os.unlink, f"{mnt}/{d}") == errno.EPERM
'''


def test_by_default_another_uids_cat_of_the_main_mount_is_eacces_and_the_owners_reads(
        mount_snapfs):
    """The main mount is its owner's: a local user with no scope that reaches it (here
    --allow-other, as the shipped config has it; or a sandbox given the host's root) reads
    nothing there, not even the names. The owner (root, whose daemon this is) reads."""
    fs = mount_snapfs("--allow-other")
    digest = fs.publish(b"sandbox A's token")
    rc, out, err = cat_as(NOBODY_UID, fs.p(digest))
    assert (rc, out) == (1, b"") and "Permission denied" in err, err
    code = CLIENT + r'''
d = sys.argv[2]
print(refused(os.open, f"{mnt}/{d}", os.O_RDONLY), refused(os.stat, f"{mnt}/{d}"),
      refused(os.listdir, mnt))
'''
    r = as_uid(NOBODY_UID, code, fs.path, digest)
    assert r.stdout.split() == [str(E.EACCES)] * 3
    # The allowance: the owner's and root's read of the same snapshot.
    rc, out, err = cat_as(0, fs.p(digest))
    assert (rc, out) == (0, b"sandbox A's token"), err
    assert digest in os.listdir(fs.path)


def test_readers_any_or_a_named_uid_reads_the_main_mount_and_still_modifies_nothing(
        mount_snapfs):
    for readers in ("any", str(NOBODY_UID)):
        fs = mount_snapfs("--allow-other", "--readers", readers, name=f"readers-{readers}")
        digest = fs.publish(b"sandbox A's token")
        rc, out, err = cat_as(NOBODY_UID, fs.p(digest))
        assert (rc, out) == (0, b"sandbox A's token"), err
        as_uid(NOBODY_UID, READER, fs.path, digest)
        assert open(fs.p(digest), "rb").read() == b"sandbox A's token"
        # A uid the list does not name is refused as by default; any names every uid.
        rc, out, err = cat_as(NOBODY_UID + 1, fs.p(digest))
        if readers == "any":
            assert (rc, out) == (0, b"sandbox A's token"), err
        else:
            assert (rc, out) == (1, b"") and "Permission denied" in err, err
        os.unlink(fs.p(digest))  # the owner may


def test_a_listed_publisher_publishes_but_removes_nothing_without_unlink_own(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", str(NOBODY_UID), "--readers",
                      str(NOBODY_UID))
    mine = as_uid(NOBODY_UID, PUBLISH, fs.path, "published by 1000").stdout.strip()
    assert mine == sha256_hex(b"published by 1000")
    # Removal is the owner's and root's: the runtime may publish under the sandbox's uid.
    code = CLIENT + r'''
assert refused(os.unlink, f"{mnt}/{sys.argv[2]}") == errno.EPERM
assert open(f"{mnt}/{sys.argv[2]}", "rb").read() == b"published by 1000"
'''
    as_uid(NOBODY_UID, code, fs.path, mine)
    os.unlink(fs.p(mine))  # the owner may


def test_with_unlink_own_a_publisher_removes_its_own_and_nothing_else(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", "any", "--unlink-own")
    roots = fs.publish(b"root's config")
    mine = as_uid(NOBODY_UID, PUBLISH, fs.path, "its own").stdout.strip()
    code = CLIENT + r'''
assert refused(os.unlink, f"{mnt}/{sys.argv[2]}") == errno.EPERM
os.unlink(f"{mnt}/{sys.argv[3]}")
assert not os.path.exists(f"{mnt}/{sys.argv[3]}")
'''
    as_uid(NOBODY_UID, code, fs.path, roots, mine)
    assert open(fs.p(roots), "rb").read() == b"root's config"


def test_with_unlink_own_a_sandbox_cannot_remove_what_the_runtime_also_published(
        mount_snapfs, snapfs_bin):
    # The attack: the sandbox's uid pre-publishes the runtime's predictable config, the
    # runtime publishes the same bytes ("already published", exit 0), the sandbox removes
    # it, and the runtime's `snapfs exec` fails with ENOENT.
    fs = mount_snapfs("--allow-other", "--publishers", "any", "--unlink-own")
    config = b'{"mcpServers": {}}\n'
    digest = as_uid(NOBODY_UID, PUBLISH, fs.path, config.decode()).stdout.strip()
    r = run(snapfs_bin, "put", "--mount", fs.path, "-", input=config.decode())
    assert r.returncode == 0 and "already published" in r.stderr, r.stderr
    binding = r.stdout.splitlines()[0]
    code = CLIENT + r'''
os.unlink(f"{mnt}/{sys.argv[2]}")  # its own hold: 0
assert refused(os.unlink, f"{mnt}/{sys.argv[2]}") == errno.EPERM  # it holds nothing now
'''
    as_uid(NOBODY_UID, code, fs.path, digest)
    r = run(snapfs_bin, "exec", "--mount", fs.path, "--binding", binding, "--", "cat", "{}")
    assert r.returncode == 0 and r.stdout.encode() == config, r.stdout + r.stderr
    # Beside it: what only the sandbox holds goes with its unlink, and a uid that holds
    # nothing on the runtime's snapshot removes nothing.
    mine = as_uid(NOBODY_UID, PUBLISH, fs.path, "the sandbox's alone").stdout.strip()
    code = CLIENT + r'''
assert refused(os.unlink, f"{mnt}/{sys.argv[2]}") == errno.EPERM
'''
    as_uid(NOBODY_UID + 1, code, fs.path, digest)
    as_uid(NOBODY_UID, CLIENT + "os.unlink(f\"{mnt}/{sys.argv[2]}\")", fs.path, mine)
    assert not os.path.exists(fs.p(mine))
    # The runtime's last hold: then the snapshot goes.
    os.unlink(fs.p(digest))
    assert not os.path.exists(fs.p(digest))


def test_statfs_is_eacces_outside_the_readers_while_a_reader_gets_the_limits(mount_snapfs):
    # The attack: every other request of a uid outside --readers was EACCES, statfs told it
    # the global free blocks and files.
    fs = mount_snapfs("--allow-other", "--readers", f"0,{NOBODY_UID}", "--publishers", "0")
    denied = CLIENT + r'''
assert refused(os.statvfs, mnt) == errno.EACCES
'''
    as_uid(NOBODY_UID + 1, denied, fs.path)
    allowed = CLIENT + r'''
sv = os.statvfs(mnt)
assert sv.f_files == 4096 and sv.f_bsize == 4096, sv
'''
    as_uid(NOBODY_UID, allowed, fs.path)
    assert os.statvfs(fs.path).f_files == 4096


def test_readers_policy_excludes_a_uid_while_an_admitted_uid_reads(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--readers", f"0,{NOBODY_UID}", "--publishers", "0")
    digest = fs.publish(b"for admitted readers")
    ok = CLIENT + r'''
assert open(f"{mnt}/{sys.argv[2]}", "rb").read() == b"for admitted readers"
'''
    as_uid(NOBODY_UID, ok, fs.path, digest)
    denied = CLIENT + r'''
assert refused(os.open, f"{mnt}/{sys.argv[2]}", os.O_RDONLY) == errno.EACCES
assert refused(os.stat, f"{mnt}/{sys.argv[2]}") == errno.EACCES
assert refused(os.listdir, mnt) == errno.EACCES
'''
    as_uid(NOBODY_UID + 1, denied, fs.path, digest)


def test_a_publisher_outside_the_readers_sees_metadata_but_not_content(mount_snapfs):
    # Publishers may learn the binding of what they publish; content is for readers only.
    fs = mount_snapfs("--allow-other", "--readers", "0", "--publishers", f"0,{NOBODY_UID}")
    digest = fs.publish(b"content for root only")
    code = CLIENT + r'''
d = sys.argv[2]
assert os.stat(f"{mnt}/{d}").st_size == len(b"content for root only")
assert os.getxattr(f"{mnt}/{d}", "user.snapfs.sha256").decode() == d
assert refused(os.open, f"{mnt}/{d}", os.O_RDONLY) == errno.EACCES
'''
    as_uid(NOBODY_UID, code, fs.path, digest)
    assert open(fs.p(digest), "rb").read() == b"content for root only"


def test_publishers_policy_excludes_a_uid_while_an_admitted_uid_publishes(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", str(NOBODY_UID))
    publish = CLIENT + r'''
data = sys.argv[2].encode()
fd = os.open(f"{mnt}/.staging/p", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, data); os.close(fd)
os.rename(f"{mnt}/.staging/p", f"{mnt}/" + hashlib.sha256(data).hexdigest())
'''
    as_uid(NOBODY_UID, publish, fs.path, "admitted")
    assert open(fs.p(sha256_hex(b"admitted")), "rb").read() == b"admitted"
    denied = CLIENT + r'''
assert refused(os.open, f"{mnt}/.staging/p", os.O_WRONLY | os.O_CREAT) == errno.EACCES
assert refused(os.listdir, f"{mnt}/.staging") == errno.EACCES
'''
    as_uid(NOBODY_UID + 1, denied, fs.path)
    assert errno_of(os.open, fs.p(".staging/p"), os.O_WRONLY | os.O_CREAT) == E.EACCES
