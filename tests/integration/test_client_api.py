# SPDX-License-Identifier: MIT
"""libsnapfs on real mounts, through both of its clients with the very same cases: the C API
(apiclient, linked against libsnapfs.so through snapfs.h) and the Python client (ctypes).

Publishing: 0 bytes, 1 byte, exactly the limit, limit + 1, twice. Verified open: every
refusal beside the good case it is paired with — a digest not published, an old inode, another
mount's device, a tmpfs made to look like the mount (a file, a symlink), an impostor FUSE
mount serving a symlink, a FIFO or a mode-0444 file at the name, a stacked snapfs mount, a
mount made by an untrusted uid."""
import json
import os
import re
import stat
import subprocess
import sys
import time

import pytest

from clients import (APICLIENT, CLIENTS, FAKESNAP, LIBSNAPFS, MOUNTTOOL, PYCLIENT, Client,
                     client_env, codes, fakesnap, slide_tmpfs_beneath, tmpfs)
from snaptest import NOBODY_UID, sha256_hex

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
BINDING_RE = re.compile(r"sha256=([0-9a-f]{64}) size=(\d+) dev=(\d+):(\d+) ino=(\d+)")


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    for tool in (APICLIENT, FAKESNAP, MOUNTTOOL, LIBSNAPFS, PYCLIENT):
        assert tool.exists(), f"build first: {tool} missing"


@pytest.fixture(params=["c", "python"])
def client(request):
    return Client(request.param)


def binding_of(path) -> str:
    """The binding a correct client must report, from the file's own stat."""
    st = os.stat(path)
    digest = os.path.basename(path)
    return (f"sha256={digest} size={st.st_size} dev={os.major(st.st_dev)}:"
            f"{os.minor(st.st_dev)} ino={st.st_ino}")


def with_field(binding, **fields) -> str:
    m = BINDING_RE.fullmatch(binding)
    assert m, binding
    f = dict(zip(("sha256", "size", "major", "minor", "ino"), m.groups()))
    f.update({k: str(v) for k, v in fields.items()})
    return f"sha256={f['sha256']} size={f['size']} dev={f['major']}:{f['minor']} ino={f['ino']}"


# ---- publishing ---------------------------------------------------------------------------

def test_publish_of_one_byte_returns_the_binding_of_the_published_snapshot(client, snapfs):
    out = client.publish(snapfs.path, b"x")
    digest = sha256_hex(b"x")
    assert out["binding"] == binding_of(snapfs.p(digest))
    assert out["already_published"] is False
    assert os.getxattr(snapfs.p(digest), "user.snapfs.binding").decode() == out["binding"]
    assert client.open(snapfs.path, out["binding"])["content_hex"] == b"x".hex()


def test_publishing_zero_bytes_gives_the_empty_snapshot(client, snapfs):
    out = client.publish(snapfs.path, b"")
    assert out["binding"] == binding_of(snapfs.p(EMPTY_SHA256))
    assert " size=0 " in out["binding"]
    assert client.open(snapfs.path, out["binding"])["content_hex"] == ""


@pytest.mark.parametrize("from_fd", [False, True], ids=["bytes", "fd"])
def test_publishing_exactly_the_limit_works(client, mount_snapfs, from_fd):
    fs = mount_snapfs("--max-snapshot-size", "4K")
    data = os.urandom(4096)
    out = client.publish(fs.path, data, from_fd=from_fd)
    assert out["binding"] == binding_of(fs.p(sha256_hex(data)))
    assert os.listdir(fs.p(".staging")) == []


@pytest.mark.parametrize("from_fd", [False, True], ids=["bytes", "fd"])
def test_publishing_one_byte_past_the_limit_is_efbig_and_leaves_nothing(client, mount_snapfs,
                                                                         from_fd):
    fs = mount_snapfs("--max-snapshot-size", "4K")
    data = os.urandom(4097)
    out = client.publish(fs.path, data, from_fd=from_fd)
    assert out["error"] == "EFBIG" and codes(out) == {"too-big"}
    assert os.listdir(fs.p(".staging")) == []
    assert sorted(os.listdir(fs.p())) == [".control", ".staging"]
    # The same bytes one shorter are published through the same mount.
    assert client.publish(fs.path, data[:4096], from_fd=from_fd)["ok"]


def test_a_publisher_that_may_not_read_gets_the_binding_a_reader_verifies(client,
                                                                          mount_snapfs):
    runtime = NOBODY_UID + 1
    fs = mount_snapfs("--allow-other", "--publishers", str(runtime), "--readers",
                      str(NOBODY_UID))
    publisher = client.as_uid(runtime)
    out = publisher.publish(fs.path, b"for the sandbox", "--owner", "0")
    assert out["binding"] == binding_of(fs.p(sha256_hex(b"for the sandbox")))
    # The publisher itself may not read the content back; the reader uid may, verified, and
    # so may root (the mount's owner here): the main mount is theirs whatever --readers says.
    refused = publisher.open(fs.path, out["binding"], "--owner", "0")
    assert refused["error"] == "EACCES" and codes(refused) == {"open"}
    reader = client.as_uid(NOBODY_UID)
    assert reader.open(fs.path, out["binding"], "--owner", "0")["content_hex"] == \
        b"for the sandbox".hex()
    assert client.open(fs.path, out["binding"])["content_hex"] == b"for the sandbox".hex()


def test_a_client_size_limit_refuses_before_writing(client, snapfs):
    out = client.publish(snapfs.path, b"12345", "--max-size", "4")
    assert out["error"] == "EFBIG" and codes(out) == {"too-big"}
    assert sorted(os.listdir(snapfs.p())) == [".control", ".staging"]
    assert client.publish(snapfs.path, b"1234", "--max-size", "4")["ok"]


def test_publishing_twice_reports_already_published_with_the_same_binding(client, snapfs):
    first = client.publish(snapfs.path, b"config")
    second = client.publish(snapfs.path, b"config")
    assert first["already_published"] is False and second["already_published"] is True
    assert second["binding"] == first["binding"]
    assert os.listdir(snapfs.p(".staging")) == []  # the second staging file is removed too


def test_publishing_to_a_tmpfs_that_looks_like_the_mount_writes_nothing(client, workdir):
    with tmpfs(os.path.join(workdir, "fake")) as fake:
        os.mkdir(os.path.join(fake, ".staging"), 0o1777)
        out = client.publish(fake, b"token=s3cret")
        assert out["error"] == "EMEDIUMTYPE" and "fstype" in codes(out)
        assert os.listdir(os.path.join(fake, ".staging")) == []
        assert sorted(os.listdir(fake)) == [".staging"]


def test_publishing_to_a_real_mount_beside_it_works(client, snapfs):
    # The allowance for the refusal above: the same bytes go to a real snapfs mount.
    assert client.publish(snapfs.path, b"token=s3cret")["ok"]


# ---- verified open ------------------------------------------------------------------------

def test_open_refuses_a_digest_that_is_not_published_and_accepts_the_real_one(client, snapfs):
    good = client.publish(snapfs.path, b"published")["binding"]
    other = with_field(good, sha256=sha256_hex(b"never published"))
    out = client.open(snapfs.path, other)
    assert out["error"] == "ENOENT" and codes(out) == {"open"}
    assert client.open(snapfs.path, good)["content_hex"] == b"published".hex()


def test_verify_fd_refuses_a_binding_with_another_digest(client, snapfs):
    good = client.publish(snapfs.path, b"held bytes")["binding"]
    path = snapfs.p(sha256_hex(b"held bytes"))
    other = with_field(good, sha256=sha256_hex(b"other bytes!"))  # same size, dev, ino
    out = client("verify-fd", path, other)
    assert out["error"] == "EBADMSG" and codes(out) == {"digest-mismatch"}
    assert client("verify-fd", path, good)["ok"]


def test_verify_fd_refuses_a_file_whose_mode_is_not_0000(client, workdir):
    path = os.path.join(workdir, sha256_hex(b"plain"))
    with open(path, "wb") as f:
        f.write(b"plain")
    out = client("verify-fd", path, binding_of(path))
    assert out["error"] == "EPERM" and codes(out) == {"mode"}
    os.chmod(path, 0)
    assert client("verify-fd", path, binding_of(path))["ok"]


def test_a_binding_from_before_an_unlink_and_republish_is_stale(client, snapfs):
    old = client.publish(snapfs.path, b"A")["binding"]
    os.unlink(snapfs.p(sha256_hex(b"A")))
    client.publish(snapfs.path, b"B")
    new = client.publish(snapfs.path, b"A")["binding"]
    assert new != old  # a new inode: numbers are never reused
    out = client.open(snapfs.path, old)
    assert out["error"] == "ESTALE" and codes(out) == {"identity"}
    assert client.open(snapfs.path, new)["content_hex"] == b"A".hex()


def test_a_binding_of_another_snapfs_mount_is_stale(client, mount_snapfs):
    a, b = mount_snapfs(name="a"), mount_snapfs(name="b")
    on_a = client.publish(a.path, b"same bytes")["binding"]
    on_b = client.publish(b.path, b"same bytes")["binding"]
    assert on_a.split(" dev=")[1] != on_b.split(" dev=")[1]
    out = client.open(b.path, on_a)
    assert out["error"] == "ESTALE" and codes(out) == {"identity"}
    assert client.open(b.path, on_b)["content_hex"] == b"same bytes".hex()


def test_a_file_on_tmpfs_with_the_right_name_and_content_is_refused(client, snapfs, workdir):
    real = client.publish(snapfs.path, b"cfg")["binding"]
    with tmpfs(os.path.join(workdir, "fake")) as fake:
        path = os.path.join(fake, sha256_hex(b"cfg"))
        with open(path, "wb") as f:
            f.write(b"cfg")
        os.chmod(path, 0)
        out = client.open(fake, binding_of(path))
        assert out["error"] == "EMEDIUMTYPE" and "fstype" in codes(out)
    assert client.open(snapfs.path, real)["ok"]


def test_a_symlink_on_a_tmpfs_made_to_look_like_the_mount_is_refused(client, snapfs, workdir):
    real = client.publish(snapfs.path, b"cfg")["binding"]
    with tmpfs(os.path.join(workdir, "fake")) as fake:
        # The link leads to the genuine snapshot: only the mount it sits on is wrong.
        os.symlink(snapfs.p(sha256_hex(b"cfg")), os.path.join(fake, sha256_hex(b"cfg")))
        out = client.open(fake, real)
        assert out["error"] == "EMEDIUMTYPE" and "fstype" in codes(out)
    assert client.open(snapfs.path, real)["ok"]


def test_on_an_impostor_mount_a_symlink_is_refused_never_followed(client, snapfs, workdir):
    real = client.publish(snapfs.path, b"cfg")["binding"]
    good = os.path.join(workdir, "good")
    with open(good, "wb") as f:
        f.write(b"good")
    fake = os.path.join(workdir, "impostor")
    link_name, good_name = sha256_hex(b"cfg"), sha256_hex(b"good")
    with fakesnap(fake, f"{link_name}=link:{snapfs.p(link_name)}", f"{good_name}=reg:0:{good}"):
        # The mount check passes (the impostor names itself fuse.snapfs and root mounted it):
        # the open's own refusal of a symlink is what stops this.
        out = client.open(fake, real)
        assert out["error"] == "ELOOP" and codes(out) == {"open"}
        # The same mount's regular mode-0000 file with the right bytes is accepted.
        assert client.open(fake, binding_of(os.path.join(fake, good_name)))["ok"]


def test_on_an_impostor_mount_a_fifo_is_refused_without_blocking(client, workdir):
    fake = os.path.join(workdir, "impostor")
    name = sha256_hex(b"fifo")
    good = os.path.join(workdir, "good")
    with open(good, "wb") as f:
        f.write(b"good")
    with fakesnap(fake, f"{name}=fifo", f"{sha256_hex(b'good')}=reg:0:{good}"):
        st = os.lstat(os.path.join(fake, name))
        assert stat.S_ISFIFO(st.st_mode)
        binding = (f"sha256={name} size=0 dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} "
                   f"ino={st.st_ino}")
        out = client.open(fake, binding)  # a blocking open would hit the 60 s timeout
        assert out["error"] == "EINVAL" and codes(out) == {"not-regular"}
        assert client.open(fake, binding_of(os.path.join(fake, sha256_hex(b"good"))))["ok"]


def test_on_an_impostor_mount_a_readable_mode_is_refused(client, workdir):
    fake = os.path.join(workdir, "impostor")
    src = os.path.join(workdir, "src")
    with open(src, "wb") as f:
        f.write(b"bytes")
    name = sha256_hex(b"bytes")
    with fakesnap(fake, f"{name}=reg:0444:{src}"):
        out = client.open(fake, binding_of(os.path.join(fake, name)))
        assert out["error"] == "EPERM" and codes(out) == {"mode"}
    with fakesnap(fake, f"{name}=reg:0:{src}"):
        assert client.open(fake, binding_of(os.path.join(fake, name)))["ok"]


def test_on_an_impostor_mount_content_that_does_not_hash_to_the_name_is_refused(client,
                                                                               workdir):
    fake = os.path.join(workdir, "impostor")
    src = os.path.join(workdir, "src")
    with open(src, "wb") as f:
        f.write(b"other")
    name = sha256_hex(b"bytes")
    with fakesnap(fake, f"{name}=reg:0:{src}", f"{sha256_hex(b'other')}=reg:0:{src}"):
        out = client.open(fake, binding_of(os.path.join(fake, name)))
        assert out["error"] == "EBADMSG" and codes(out) == {"digest-mismatch"}
        assert client.open(fake, binding_of(os.path.join(fake, sha256_hex(b"other"))))["ok"]


def test_a_stacked_snapfs_mount_is_refused(client, snapfs):
    binding = client.publish(snapfs.path, b"cfg")["binding"]
    assert client.open(snapfs.path, binding)["ok"]
    slide_tmpfs_beneath(snapfs.path)
    try:
        out = client.open(snapfs.path, binding)
        assert out["error"] == "EMEDIUMTYPE" and codes(out) == {"stacked"}
        out = client.publish(snapfs.path, b"more")
        assert out["error"] == "EMEDIUMTYPE" and codes(out) == {"stacked"}
    finally:
        assert snapfs.stop() == 0
        subprocess.run(["umount", snapfs.path], capture_output=True, timeout=30)


@pytest.mark.readers_any
def test_a_root_mount_is_trusted_by_default_and_refused_when_another_owner_is_named(client, snapfs):
    binding = client.publish(snapfs.path, b"cfg")["binding"]
    other = client.as_uid(NOBODY_UID)
    # Root mounted it; the caller is uid 1000 and names no owner: root is the trust root.
    assert other.open(snapfs.path, binding)["content_hex"] == b"cfg".hex()
    out = other.open(snapfs.path, binding, "--owner", "4242")
    assert out["error"] == "EMEDIUMTYPE" and codes(out) == {"owner"}


def test_open_digest_binds_a_snapshot_known_only_by_name(client, snapfs):
    binding = client.publish(snapfs.path, b"by name")["binding"]
    out = client("digest", snapfs.path, sha256_hex(b"by name"))
    assert out["binding"] == binding and out["content_hex"] == b"by name".hex()
    out = client("digest", snapfs.path, sha256_hex(b"absent"))
    assert out["error"] == "ENOENT" and codes(out) == {"open"}


@pytest.mark.parametrize("text", [
    "sha256=" + "A" * 64 + " size=1 dev=0:1 ino=1",
    "sha256=" + "a" * 64 + " size=01 dev=0:1 ino=1",
    "sha256=" + "a" * 64 + " size=1 dev=0:1 ino=1\n",
    "size=1 dev=0:1 ino=1",
])
def test_a_malformed_binding_is_invalid(client, snapfs, text):
    out = client.open(snapfs.path, text)
    assert out["error"] == "EINVAL" and codes(out) == {"invalid-argument"}


def test_a_named_publish_keeps_the_name_and_describes_the_snapshot(client, snapfs):
    out = client.publish(snapfs.path, b"named", "--name", "mcp.json")
    digest = sha256_hex(b"named")
    st = os.stat(snapfs.p(digest))
    assert out["snapshot"] == {
        "sha256": digest, "size": 5, "dev": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}",
        "ino": st.st_ino, "name": "mcp.json",
        "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime)),
        "publisher": 0, "binding": binding_of(snapfs.p(digest))}
    described = client("describe", snapfs.path, out["binding"])
    assert described["snapshot"] == out["snapshot"] and described["kind"] == "content"
    # The same bytes under another name: already published, with its first name.
    again = client.publish(snapfs.path, b"named", "--name", "other")
    assert again["already_published"] and again["snapshot"]["name"] == "mcp.json"
    # Without a name, none (a scratch staging name is kept by nobody).
    assert client.publish(snapfs.path, b"anonymous")["snapshot"]["name"] is None


@pytest.mark.parametrize("name", ["_scratch", ".hidden", "a/b", ""])
def test_a_name_outside_the_grammar_is_einval_and_publishes_nothing(client, snapfs, name):
    out = client.publish(snapfs.path, b"bytes", "--name", name)
    assert out["error"] == "EINVAL" and codes(out) == {"invalid-argument"}, out
    assert sorted(os.listdir(snapfs.p())) == [".control", ".staging"]  # nothing published
    assert client.publish(snapfs.path, b"bytes", "--name", "ok")["ok"]


def test_a_name_held_by_a_staging_file_is_ebusy_until_it_goes(client, snapfs):
    snapfs.stage(b"interrupted", "cfg")
    out = client.publish(snapfs.path, b"new", "--name", "cfg")
    assert out["error"] == "EBUSY" and codes(out) == {"staging"}, out
    os.unlink(snapfs.p(".staging/cfg"))
    assert client.publish(snapfs.path, b"new", "--name", "cfg")["snapshot"]["name"] == "cfg"


def test_describe_of_a_stale_binding_is_estale_and_of_the_real_one_describes(client, snapfs):
    out = client.publish(snapfs.path, b"x")
    stale = with_field(out["binding"], ino=999999)
    refused = client("describe", snapfs.path, stale)
    assert refused["error"] == "ESTALE" and codes(refused) == {"identity"}, refused
    assert client("describe", snapfs.path, out["binding"])["snapshot"] == out["snapshot"]


def test_both_clients_agree_on_the_abi():
    c = subprocess.run([str(APICLIENT), "abi"], capture_output=True, text=True, timeout=30,
                       env=client_env())
    py = subprocess.run([*CLIENTS["python"], "abi"], capture_output=True, text=True, timeout=30,
                        env=client_env())
    assert c.returncode == 0 and py.returncode == 0, c.stderr + py.stderr
    assert json.loads(c.stdout) == json.loads(py.stdout)


def test_a_python_runtime_uses_the_client_in_ten_lines(snapfs, workdir):
    # docs/clients.md's Python example: publish, open verified, hand the fd to a child.
    program = f"""
import os, subprocess, sys
sys.path.insert(0, {str(PYCLIENT.parent)!r})
import snapfs_client as snapfs
binding = snapfs.publish({snapfs.path!r}, b'{{"mcpServers": {{}}}}', owner=0)
fd = snapfs.open_verified({snapfs.path!r}, binding, owner=0)
try:
    subprocess.run(["cat", f"/proc/self/fd/{{fd}}"], pass_fds=[fd], check=True)
finally:
    os.close(fd)
"""
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=60,
                       env=client_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b'{"mcpServers": {}}'
    # And the refusal comes back as an exception carrying every reason.
    bad = program.replace("binding, owner=0)", "str(binding).replace('ino=', 'ino=9'), owner=0)")
    r = subprocess.run([sys.executable, "-c", bad], capture_output=True, timeout=60,
                       env=client_env(), text=True)
    assert r.returncode == 1 and "SnapfsError" in r.stderr and "identity:" in r.stderr
