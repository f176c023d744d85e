# SPDX-License-Identifier: MIT
"""The Python client's units, with no mount: the trust options object and the flags it makes,
the kinds, the descriptor's context manager, bindings' text, refusals as objects, and the
ABI mirror against the C test driver's own layout. libsnapfs is loaded (the build's), no
daemon is asked anything."""
import errno
import json
import os
import re
import subprocess
import sys

import pytest

from clients import APICLIENT, LIBSNAPFS, PYCLIENT, client_env, exported_symbols
from snaptest import ROOT

os.environ.setdefault("SNAPFS_LIBRARY", str(LIBSNAPFS))
sys.path.insert(0, str(PYCLIENT.parent))
import snapfs_client as snapfs  # noqa: E402
from snapfs_client import api  # noqa: E402

BINDING = ("sha256=" + "ab" * 32 + " size=18 dev=0:42 ino=4")


def test_trust_keywords_and_a_trust_object_make_the_same_options():
    a = api.options(None, owner=1000, insecure_own_mount=True)
    b = api.options(snapfs.Trust(owner=1000, insecure_own_mount=True))
    assert (a.flags, a.owner) == (b.flags, b.owner)
    assert snapfs.Opt(a.flags) == snapfs.Opt.OWNER | snapfs.Opt.INSECURE_OWN_MOUNT | \
        snapfs.Opt.KIND_CONTENT
    # A keyword given wins over the object's; flags add up.
    c = api.options(snapfs.Trust(owner=5, trust_user_namespace=True), owner=7)
    assert c.owner == 7 and c.flags & snapfs.Opt.TRUST_USER_NAMESPACE
    # No owner at all: the library's default (root), no OWNER flag.
    assert not api.options(None).flags & snapfs.Opt.OWNER


def test_kinds_become_their_flags_and_anything_else_is_einval():
    assert api.kind_flags("content") == snapfs.Opt.KIND_CONTENT
    assert api.kind_flags(("signature", "manifest")) == \
        snapfs.Opt.KIND_SIGNATURE | snapfs.Opt.KIND_MANIFEST
    for bad in ("config", (), ["content", "x"]):
        with pytest.raises(snapfs.SnapfsError) as e:
            api.kind_flags(bad)
        assert e.value.errno == errno.EINVAL and e.value.finding == "invalid-argument"


def test_a_verified_fd_is_an_int_that_closes_itself_once():
    r, w = os.pipe()
    os.close(w)
    with snapfs.VerifiedFd(r) as fd:
        assert isinstance(fd, int) and fd == r and not fd.closed
        assert os.read(fd, 1) == b""
    assert fd.closed
    with pytest.raises(OSError) as e:
        os.fstat(r)
    assert e.value.errno == errno.EBADF
    fd.close()  # once only: a second close touches no descriptor


def test_a_binding_round_trips_through_its_one_text_and_nothing_else_parses():
    b = snapfs.Binding.parse(BINDING)
    assert str(b) == BINDING and b.dev == os.makedev(0, 42) and b.ino == 4
    assert b.as_dict()["dev"] == "0:42" and b.as_dict()["binding"] == BINDING
    assert snapfs.Binding.parse(b) is b
    for bad in (BINDING + "\n", BINDING.replace("ab", "AB", 1), BINDING + "\0", "sha256=x"):
        with pytest.raises(snapfs.SnapfsError) as e:
            snapfs.Binding.parse(bad)
        assert e.value.errno == errno.EINVAL


def test_a_refusal_is_the_json_object_every_client_prints():
    e = snapfs.SnapfsError(errno.EMEDIUMTYPE, [("stacked", "two mounts"), ("owner", "uid 5")],
                           raw_messages={1: b"uid \xff"})
    assert e.code == "EMEDIUMTYPE" and e.finding == "stacked"
    assert e.as_dict() == {"ok": False, "error": "EMEDIUMTYPE", "message": e.strerror,
                           "reasons": [{"code": "stacked", "message": "two mounts"},
                                       {"code": "owner", "message": "uid 5",
                                        "message_hex": "75696420ff"}]}
    assert str(e).splitlines()[1:] == ["stacked: two mounts", "owner: uid 5"]
    assert snapfs.SnapfsError(errno.EOPNOTSUPP).code == "EOPNOTSUPP"
    assert snapfs.SnapfsError(errno.EIO).finding is None


def test_names_as_the_daemon_takes_them():
    assert snapfs.name_valid("mcp.json") and snapfs.name_valid("a" * 64)
    for bad in ("", ".hidden", "_scratch", "a" * 65, "a/b", "é", 7):
        assert not snapfs.name_valid(bad), bad


def test_the_mirrored_structs_are_laid_out_as_the_c_driver_compiled_them():
    r = subprocess.run([str(APICLIENT), "abi"], capture_output=True, text=True, timeout=60,
                       env=client_env())
    assert r.returncode == 0, r.stderr
    assert snapfs._abi.layout() == json.loads(r.stdout)


def test_the_client_declares_every_function_the_library_exports_and_no_other():
    # client/libsnapfs.sym is the one list: a function added there and not declared here
    # (or declared here and never exported) fails.
    assert set(snapfs._abi.SYMBOLS) == set(exported_symbols())


def test_a_library_of_another_version_is_refused_before_any_call(monkeypatch):
    monkeypatch.setattr(snapfs._abi, "__version__", "9.9.9")
    monkeypatch.setattr(snapfs._abi, "_lib", None)
    with pytest.raises(OSError) as e:
        snapfs._abi.load()
    assert "is libsnapfs 0.1.0, this client is 9.9.9" in str(e.value)
    monkeypatch.undo()
    assert snapfs._abi.load() is not None  # the right version loads


NAMES = json.loads((ROOT / "tests" / "vectors" / "names.json").read_text())


DIGEST = re.compile(r"[0-9a-f]{64}")


def _vector_entry(c):
    """The vector's entry as Python holds it: text, or bytes that are no text decoded as
    os.fsdecode would (surrogate escapes)."""
    if "entry" in c:
        return c["entry"]
    return bytes.fromhex(c["entry_hex"]).decode("utf-8", "surrogateescape")


def test_entry_names_are_judged_as_every_vector_says():
    assert sum(c["valid"] for c in NAMES) >= 5 and sum(not c["valid"] for c in NAMES) >= 10
    for c in NAMES:
        assert snapfs.entry_name_valid(_vector_entry(c)) is c["valid"], c["why"]


def test_every_refused_entry_is_einval_before_anything_is_asked_and_libsnapfs_refuses_it_too():
    """grant, revoke and open_entry refuse the set the daemon refuses, before asking: the
    mount does not exist, so a request that went out would fail otherwise (ENOENT). libsnapfs,
    called directly with the same bytes, refuses them the same way."""
    lib, digest = api._abi.load(), b"ab" * 32
    for c in NAMES:
        entry = _vector_entry(c)
        if c["valid"]:
            with pytest.raises(snapfs.SnapfsError) as e:
                snapfs.grant("/nonexistent/mnt", "s", digest.decode(), entry=entry)
            assert e.value.errno != errno.EINVAL, c["why"]
            continue
        calls = [lambda: snapfs.grant("/nonexistent/mnt", "s", digest.decode(), entry=entry),
                 lambda: snapfs.revoke("/nonexistent/mnt", "s", entry=entry)]
        # A view lists granted digests by their own names: open_entry takes those as well.
        if not DIGEST.fullmatch(entry):
            calls.append(lambda: snapfs.open_entry("/nonexistent/view", entry))
        for call in calls:
            with pytest.raises(snapfs.SnapfsError) as e:
                call()
            assert e.value.errno == errno.EINVAL, c["why"]
            assert "not a valid entry name" in str(e.value), c["why"]
        raw = os.fsencode(entry)
        if b"\0" in raw:
            continue  # no C string carries it: the Python check is the only one that can
        o, g, rep = api.options(None), api._abi.CGrant(), api._abi.CReport()
        r = lib.snapfs_grant(b"/nonexistent/mnt", b"s", digest, raw, api.ctypes.byref(o),
                             api.ctypes.byref(g), api.ctypes.byref(rep))
        assert r == -errno.EINVAL, c["why"]
        r = lib.snapfs_open_entry(b"/nonexistent/view", raw, api.ctypes.byref(o),
                                  api.ctypes.byref(api._abi.CBinding()),
                                  api.ctypes.byref(rep))
        assert (r == -errno.EINVAL) is not bool(DIGEST.fullmatch(entry)), c["why"]
