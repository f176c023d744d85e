# SPDX-License-Identifier: MIT
"""snapfs put, verify, exec, ls and audit on real mounts, each refusal beside its allowance;
every subcommand's --help, and the man page that must cover every option."""
import hashlib
import json
import os
import pwd
import pty
import re
import select
import shutil
import subprocess
import sys
import time

import pytest

from clients import (FAKESNAP, MOUNTTOOL, fakesnap, publish_many, put, slide_tmpfs_beneath,
                     tmpfs)
from snaptest import NOBODY_UID, ROOT, SNAPFS, run, sha256_hex

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
MANPAGE = ROOT / "cli" / "snapfs.1"
SUBCOMMANDS = ["mount", "check", "put", "verify", "exec", "wait", "ls", "rm", "prune", "audit",
               "version", "status", "metrics"]


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    for tool in (SNAPFS, FAKESNAP, MOUNTTOOL):
        assert tool.exists(), f"build first: {tool} missing"


def snap(*args, **kw):
    return run(SNAPFS, *args, **kw)


def xattr_binding(fs, digest):
    return os.getxattr(fs.p(digest), "user.snapfs.binding").decode()


def write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---- put ----------------------------------------------------------------------------------

def test_put_prints_the_binding_the_daemon_serves(snapfs, workdir):
    src = write(os.path.join(workdir, "cfg.json"), b'{"mcpServers": {}}')
    r = snap("put", "--mount", snapfs.path, src)
    assert r.returncode == 0, r.stderr
    digest = sha256_hex(b'{"mcpServers": {}}')
    assert r.stdout == xattr_binding(snapfs, digest) + "\n"
    assert os.listdir(snapfs.p(".staging")) == []


def test_put_reads_standard_input_and_json_describes_the_snapshot(snapfs):
    r = snap("put", "--mount", snapfs.path, "--json", "-", input="from stdin")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    digest = sha256_hex(b"from stdin")
    st = os.stat(snapfs.p(digest))
    binding = xattr_binding(snapfs, digest)
    # The one snapshot object, and put's own fields beside it; standard input gives no name.
    assert out == {"ok": True, "error": None, "message": None, "reasons": [],
                   "mount": snapfs.path, "already_published": False, "binding": binding,
                   "snapshot": {"sha256": digest, "size": 10,
                                "dev": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}",
                                "ino": st.st_ino, "name": None,
                                "published": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                           time.gmtime(st.st_mtime)),
                                "publisher": 0, "binding": binding},
                   "read_view": None, "scope": None}


def test_put_of_an_empty_file_publishes_the_empty_snapshot(snapfs, workdir):
    r = snap("put", "--mount", snapfs.path, write(os.path.join(workdir, "empty"), b""))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"sha256={EMPTY_SHA256} size=0 ")
    assert os.stat(snapfs.p(EMPTY_SHA256)).st_size == 0


def test_put_of_published_content_gives_the_existing_binding(snapfs):
    first = snap("put", "--mount", snapfs.path, "-", input="same")
    again = snap("put", "--mount", snapfs.path, "--json", "-", input="same")
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    out = json.loads(again.stdout)
    assert out["ok"] is True and out["already_published"] is True
    assert out["binding"] + "\n" == first.stdout
    # Idempotent, not a failure: said on standard error, exit 0, the same binding.
    text = snap("put", "--mount", snapfs.path, "-", input="same")
    assert text.returncode == 0 and text.stdout == first.stdout
    assert text.stderr == "snapfs put: already published\n" and first.stderr == ""


def test_put_uses_SNAPFS_MOUNT_when_no_mount_is_given(snapfs):
    r = snap("put", "-", input="via env", env=dict(os.environ, SNAPFS_MOUNT=snapfs.path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == xattr_binding(snapfs, sha256_hex(b"via env")) + "\n"


def test_put_to_a_mount_that_is_not_compliant_exits_1_with_every_reason(snapfs, workdir):
    with tmpfs(os.path.join(workdir, "fake")) as fake:
        os.mkdir(os.path.join(fake, ".staging"))
        r = snap("put", "--mount", fake, "-", input="secret")
        assert r.returncode == 1 and r.stdout == ""
        assert "not published: not a compliant snapfs mount" in r.stderr
        assert re.search(r"^fstype: .*tmpfs", r.stderr, re.M)
        assert re.search(r"^owner: ", r.stderr, re.M)
        assert os.listdir(os.path.join(fake, ".staging")) == []
    assert snap("put", "--mount", snapfs.path, "-", input="secret").returncode == 0


def test_put_past_the_snapshot_limit_exits_1_naming_it(mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "4K")
    r = snap("put", "--mount", fs.path, "-", input="x" * 4097)
    assert r.returncode == 1
    assert re.search(r"^too-big: .*limit", r.stderr, re.M)
    assert snap("put", "--mount", fs.path, "-", input="x" * 4096).returncode == 0


def test_put_of_an_unreadable_file_is_a_system_error(snapfs, workdir):
    r = snap("put", "--mount", snapfs.path, os.path.join(workdir, "missing"))
    assert r.returncode == 2 and "No such file or directory" in r.stderr
    ok = snap("put", "--mount", snapfs.path, write(os.path.join(workdir, "there"), b"x"))
    assert ok.returncode == 0, ok.stderr


# ---- verify -------------------------------------------------------------------------------

def test_verify_of_a_good_binding_exits_0_and_prints_it(snapfs):
    digest = put(snapfs, b"cfg")
    binding = xattr_binding(snapfs, digest)
    r = snap("verify", "--mount", snapfs.path, binding)
    assert r.returncode == 0 and r.stdout == binding + "\n", r.stderr


def test_verify_of_a_stale_binding_exits_1_with_its_reason(snapfs):
    digest = put(snapfs, b"cfg")
    binding = xattr_binding(snapfs, digest)
    stale = re.sub(r"ino=\d+", "ino=999999", binding)
    r = snap("verify", "--mount", snapfs.path, stale)
    assert r.returncode == 1
    assert r.stdout.splitlines()[0] == ("not verified: not the snapshot the binding names: "
                                        "dev, ino or size differ")
    assert re.search(r"^identity: .*ino=999999", r.stdout, re.M)
    assert snap("verify", "--mount", snapfs.path, binding).returncode == 0


def test_verify_of_a_snapshot_path_holds_it_to_its_name(snapfs):
    digest = put(snapfs, b"by path")
    r = snap("verify", snapfs.p(digest))
    assert r.returncode == 0 and r.stdout == xattr_binding(snapfs, digest) + "\n", r.stdout
    r = snap("verify", snapfs.p(sha256_hex(b"not published")))
    assert r.returncode == 1 and re.search(r"^open: no snapshot ", r.stdout, re.M)


def test_verify_json_lists_the_finding_of_a_stacked_mount(snapfs):
    binding = xattr_binding(snapfs, put(snapfs, b"cfg"))
    r = snap("verify", "--json", "--mount", snapfs.path, binding)
    assert r.returncode == 0 and json.loads(r.stdout)["ok"] is True
    slide_tmpfs_beneath(snapfs.path)
    try:
        r = snap("verify", "--json", "--mount", snapfs.path, binding)
        out = json.loads(r.stdout)
        assert r.returncode == 1 and out["ok"] is False
        assert out["error"] == "EMEDIUMTYPE"
        assert [x["code"] for x in out["reasons"]] == ["stacked"]
    finally:
        assert snapfs.stop() == 0
        subprocess.run(["umount", snapfs.path], capture_output=True, timeout=30)


@pytest.mark.parametrize("arg", ["sha256=abc size=1 dev=0:1 ino=1",
                                 "sha256=" + "a" * 64 + " size=1 dev=0:1 ino=1 "])
def test_verify_of_a_malformed_binding_is_a_usage_error(snapfs, arg):
    r = snap("verify", "--mount", snapfs.path, arg)
    assert r.returncode == 2 and "not a valid binding" in r.stderr


def test_verify_of_a_path_outside_the_given_mount_is_a_usage_error(snapfs, workdir):
    digest = put(snapfs, b"cfg")
    r = snap("verify", "--mount", workdir, snapfs.p(digest))
    assert r.returncode == 2 and "is not on --mount" in r.stderr
    assert snap("verify", "--mount", snapfs.path, snapfs.p(digest)).returncode == 0


# ---- exec ---------------------------------------------------------------------------------

CHILD = r"""
import fcntl, json, os, sys
def is_open(fd):
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
        return True
    except OSError:
        return False
fds = [int(x) for x in os.listdir("/proc/self/fd")]
fd = int(sys.argv[1])
with open(sys.argv[2], "rb") as f:
    data = f.read()
st = os.fstat(fd)
print(json.dumps({
    "fds": sorted(x for x in fds if is_open(x)),
    "path": sys.argv[2],
    "data": data.decode(),
    "ino": st.st_ino,
    "flags": fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE,
    "env": os.environ.get(sys.argv[3]),
    "literal": sys.argv[4],
}))
"""


def exec_child(fs, binding, *opts, fd="3", env="SNAPFS_BINDING", pass_fds=()):
    r = subprocess.run([str(SNAPFS), "exec", "--mount", fs.path, "--binding", binding, *opts,
                        "--", sys.executable, "-c", CHILD, fd, "{}", env, "--config={}"],
                       capture_output=True, text=True, timeout=60, pass_fds=pass_fds)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_exec_gives_the_child_the_verified_descriptor_and_nothing_else(snapfs):
    digest = put(snapfs, b'{"mcpServers": {}}')
    binding = xattr_binding(snapfs, digest)
    # A descriptor the caller lets its children inherit: exec must not pass it on.
    leak_r, leak_w = os.pipe()
    os.set_inheritable(leak_w, True)
    try:
        out = exec_child(snapfs, binding, pass_fds=(leak_w,))
    finally:
        os.close(leak_r)
        os.close(leak_w)
    assert out["fds"] == [0, 1, 2, 3]
    assert out["path"] == "/proc/self/fd/3"
    assert out["data"] == '{"mcpServers": {}}'
    assert out["ino"] == os.stat(snapfs.p(digest)).st_ino
    assert out["flags"] == os.O_RDONLY
    assert out["env"] == binding
    assert out["literal"] == "--config={}"  # only an argument that is exactly {} is replaced


def test_exec_places_the_snapshot_at_the_fd_and_variable_asked_for(snapfs):
    digest = put(snapfs, b"seven")
    binding = xattr_binding(snapfs, digest)
    out = exec_child(snapfs, binding, "--fd", "7", "--env", "CFG", fd="7", env="CFG")
    assert out["fds"] == [0, 1, 2, 7]
    assert out["path"] == "/proc/self/fd/7" and out["data"] == "seven"
    assert out["env"] == binding


def test_exec_never_starts_the_child_when_verification_fails(snapfs, workdir):
    digest = put(snapfs, b"cfg")
    binding = xattr_binding(snapfs, digest)
    marker = os.path.join(workdir, "child-ran")
    bad = binding.replace(digest, sha256_hex(b"tampered"))
    r = snap("exec", "--mount", snapfs.path, "--binding", bad, "--", "touch", marker)
    assert r.returncode == 125  # its own failure, never a status the child could give
    assert "not verified, not starting touch" in r.stderr
    assert re.search(r"^open: no snapshot ", r.stderr, re.M)
    assert not os.path.exists(marker)
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--", "touch", marker)
    assert r.returncode == 0 and os.path.exists(marker), r.stderr


def test_exec_of_a_missing_command_exits_127(snapfs):
    binding = xattr_binding(snapfs, put(snapfs, b"cfg"))
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--", "/nonexistent/cmd")
    assert r.returncode == 127 and "No such file or directory" in r.stderr
    assert snap("exec", "--mount", snapfs.path, "--binding", binding, "--",
                "true").returncode == 0


@pytest.mark.parametrize("opts,message", [
    (("--fd", "-1"), "--fd: invalid descriptor"),
    (("--fd", "3x"), "--fd: invalid descriptor"),
    (("--env", "1BAD"), "--env: '1BAD' is not a name"),
    (("--env", "A=B"), "--env: 'A=B' is not a name"),
])
def test_exec_refuses_bad_options_with_125(snapfs, opts, message):
    binding = xattr_binding(snapfs, put(snapfs, b"cfg"))
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, *opts, "--", "true")
    assert r.returncode == 125 and message in r.stderr
    assert snap("exec", "--mount", snapfs.path, "--binding", binding, "--",
                "true").returncode == 0


# ---- ls -----------------------------------------------------------------------------------

def user_name(uid):
    """What ls shows as the publisher: the user's name, or the uid when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def test_ls_lists_snapshots_in_publishing_order_with_publisher_and_time(mount_snapfs):
    snapfs = mount_snapfs("--allow-other", "--publishers", "any")
    first = put(snapfs, b"first by root")
    second = put(snapfs, b"second by 1000", uid=NOBODY_UID)
    r = snap("ls", "--mount", snapfs.path, "--json")
    assert r.returncode == 0, r.stderr
    top = json.loads(r.stdout)
    assert top["ok"] is True and top["mount"] == snapfs.path
    out = top["snapshots"]
    assert [e["sha256"] for e in out] == [first, second]
    assert [e["publisher"] for e in out] == [0, NOBODY_UID]
    for e in out:
        st = os.stat(snapfs.p(e["sha256"]))
        assert set(e) == {"sha256", "size", "dev", "ino", "name", "published", "publisher",
                          "binding", "kind"}
        assert e["size"] == st.st_size and e["ino"] == st.st_ino and e["kind"] == "content"
        assert e["dev"] == f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        assert e["published"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime))
        assert e["binding"] == xattr_binding(snapfs, e["sha256"])
        assert e["name"] is None  # published from standard input
    text = snap("ls", "--mount", snapfs.path).stdout.split("\n\n")[0].splitlines()
    assert text[0].split() == ["SHA256", "NAME", "SIZE", "AGE", "PUBLISHER"]
    assert [line.split()[0] for line in text[1:]] == [first[:12], second[:12]]
    assert [line.split()[-1] for line in text[1:]] == ["root", user_name(NOBODY_UID)]


def test_ls_of_a_mount_that_is_not_compliant_exits_1(snapfs, workdir):
    put(snapfs, b"cfg")
    with tmpfs(os.path.join(workdir, "fake")) as fake:
        write(os.path.join(fake, sha256_hex(b"cfg")), b"cfg")
        r = snap("ls", "--mount", fake)
        assert r.returncode == 1 and r.stdout == "" and "fstype: " in r.stderr
    r = snap("ls", "--mount", snapfs.path)
    assert r.returncode == 0 and sha256_hex(b"cfg")[:12] in r.stdout


# ---- audit --------------------------------------------------------------------------------

def test_audit_of_2000_snapshots_holds_until_a_mount_is_slid_beneath(snapfs):
    publish_many(snapfs, 2000)
    r = snap("audit", "--json", snapfs.path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] is True and out["compliant"] is True
    assert out["snapshots"] == 2000 and out["problems"] == []
    assert all(c["failed"] == 0 for c in out["checks"] if c["ran"])
    assert {c["check"]: c["passed"] for c in out["checks"]}["content hashes to name"] == 2000
    # No --store, no --verify-key: those checks did not run, and say so rather than "0, 0".
    assert {c["check"]: (c["passed"], c["failed"]) for c in out["checks"] if not c["ran"]} \
        == {"store blobs intact": (None, None), "in a signed manifest": (None, None),
            "signature, signed manifest": (None, None), "entry names a snapshot": (None, None)}
    text = snap("audit", snapfs.path).stdout
    assert re.search(r"^store blobs intact +no --store$", text, re.M), text
    assert re.search(r"^in a signed manifest +no --verify-key$", text, re.M), text
    assert re.search(r"^entry names a snapshot +not a scope view$", text, re.M), text
    assert re.search(r"^content hashes to name +2000 +0$", text, re.M), text

    slide_tmpfs_beneath(snapfs.path)
    try:
        r = snap("audit", snapfs.path)
        assert r.returncode == 1
        assert re.search(r"^stacked: .*beneath", r.stdout, re.M)
        assert "NOT compliant" in r.stdout and r.stdout.rstrip().endswith("audit: FAILED")
        out = json.loads(snap("audit", "--json", snapfs.path).stdout)
        assert out["ok"] is False and out["error"] == "EMEDIUMTYPE"
        assert [f["code"] for f in out["reasons"]] == ["stacked"]
    finally:
        assert snapfs.stop() == 0
        subprocess.run(["umount", snapfs.path], capture_output=True, timeout=30)


def test_audit_shows_progress_on_a_terminal_past_1000_snapshots(snapfs):
    publish_many(snapfs, 1001)
    primary, secondary = pty.openpty()
    try:
        p = subprocess.Popen([str(SNAPFS), "audit", snapfs.path], stdout=subprocess.PIPE,
                             stderr=secondary, text=True)
        os.close(secondary)
        secondary = -1
        out, _ = p.communicate(timeout=60)
        progress = b""
        while select.select([primary], [], [], 0)[0]:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            progress += chunk
    finally:
        os.close(primary)
        if secondary >= 0:
            os.close(secondary)
    assert p.returncode == 0, out
    # What takes the time is counted: bytes re-hashed, beside the entries (the 1001
    # snapshots, .staging and .control).
    assert re.search(rb"snapfs audit: [0-9.]+K? of [0-9.]+K re-hashed \([0-9]+ of 1003 entries\)",
                     progress), progress[:300]
    assert progress.endswith(b"\r\x1b[K")
    # Not a terminal: no progress line at all.
    r = snap("audit", snapfs.path)
    assert r.returncode == 0 and r.stderr == ""


def test_audit_of_an_impostor_names_each_broken_promise(workdir):
    good, bad = write(os.path.join(workdir, "good"), b"good"), write(os.path.join(workdir, "bad"),
                                                                     b"bad")
    fake = os.path.join(workdir, "impostor")
    entries = [
        f"{sha256_hex(b'good')}=reg:0444:{good}",        # readable mode
        f"{sha256_hex(b'other')}=reg:0:{bad}",           # content is not its name
        f"{sha256_hex(b'link')}=link:/etc/hostname",     # a symlink
        f"{sha256_hex(b'fifo')}=fifo",                    # a FIFO
        f"config.json=reg:0:{good}",                      # not a snapshot name
    ]
    with fakesnap(fake, *entries):
        r = snap("audit", "--json", fake)
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["compliant"] is True and out["ok"] is False and out["error"] == "EBADMSG"
    got = {(p["entry"], p["code"]) for p in out["problems"]}
    assert {(m["message"].split(": ")[0], m["code"]) for m in out["reasons"]} == got
    assert (sha256_hex(b"good"), "mode") in got
    assert (sha256_hex(b"other"), "digest-mismatch") in got
    assert (sha256_hex(b"link"), "open") in got
    assert (sha256_hex(b"fifo"), "not-regular") in got
    assert ("config.json", "unexpected-entry") in got
    assert (sha256_hex(b"good"), "xattr") in got  # the impostor serves none


def test_audit_of_a_real_mount_beside_the_impostor_holds(snapfs):
    put(snapfs, b"good")
    put(snapfs, b"other")
    r = snap("audit", snapfs.path)
    assert r.returncode == 0, r.stdout
    assert r.stdout.rstrip().endswith("audit: everything holds")


# ---- help and man page --------------------------------------------------------------------

@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_every_subcommand_has_help(cmd):
    r = snap(cmd, "--help")
    assert r.returncode == 0 and r.stdout.startswith(f"Usage: snapfs {cmd}"), r.stderr


def test_the_man_page_renders_without_warnings():
    assert shutil.which("man"), "man missing (scripts/deps.sh installs man-db)"
    r = run("man", "--warnings", "-l", MANPAGE, env=dict(os.environ, MANWIDTH="80",
                                                        MANPAGER="cat", PAGER="cat"))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # groff justifies by widening spaces, alternating sides line by line: compare words.
    text = re.sub(r"(?<=\S) {2,}", " ", r.stdout)
    for cmd in SUBCOMMANDS:
        assert re.search(rf"^ {{3}}snapfs {cmd}\b", text, re.M), f"no section for {cmd}"


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_the_man_page_covers_every_option_of(cmd):
    options = set(re.findall(r"(--[a-z][a-z-]+)", snap(cmd, "--help").stdout))
    assert options, "no options found in --help"
    with open(MANPAGE) as f:
        page = f.read().replace("\\-", "-")
    missing = {o for o in options if o not in page}
    assert not missing, f"snapfs {cmd}: options missing from the man page: {missing}"
