# SPDX-License-Identifier: MIT
"""The clients can do what the command can: every `snapfs` subcommand, as the command itself
lists them (`snapfs --help`, `snapfs scope --help`), has its row in COUNTERPARTS, naming what
does the same in libsnapfs, in the Python client and in the Node.js package, or why there is
nothing to name. A new subcommand without a row, a row naming a subcommand that is gone, or a
counterpart that is not there fails. Then the Python client's remove() on a real mount, by
digest, binding and name, each refusal beside its allowance."""
import errno
import os
import re
import subprocess
import sys

import pytest

from clients import LIBSNAPFS, PYCLIENT
from snaptest import ROOT, SNAPFS, as_uid, run, sha256_hex

os.environ.setdefault("SNAPFS_LIBRARY", str(LIBSNAPFS))
sys.path.insert(0, str(PYCLIENT.parent))
import snapfs_client as client  # noqa: E402

HEADER = ROOT / "client" / "snapfs.h"
NODE_SRC = ROOT / "client" / "node" / "src"

# subcommand: (libsnapfs functions, Python client functions, Node.js functions as
# "module.name" of client/node/src), or a str in place of a tuple: why that client has no
# counterpart. A Node.js None: the package has none yet (it is a subset: docs/clients.md).
NOT_A_CALL = "the command is the interface"
COUNTERPARTS = {
    "mount": "serving snapshots is the daemon's (snapfs mount), not a library call's",
    "check": ("the mount check runs first in every libsnapfs call, by the same mountcheck "
              "code; its verdict alone, each finding listed, is snapfs check's"),
    "put": (("snapfs_publish", "snapfs_publish_fd", "snapfs_publish_named",
             "snapfs_publish_fd_named", "snapfs_publish_for_scope",
             "snapfs_publish_fd_for_scope"), ("publish", "publish_fd"), ("index.publish",)),
    "ls": (("snapfs_list", "snapfs_describe"), ("snapshots", "describe"), None),
    "rm": (("snapfs_remove",), ("remove",), ("index.remove",)),
    # A program picks by age or kind from the list itself, then removes what it picked.
    "prune": (("snapfs_list", "snapfs_remove"), ("snapshots", "remove"), None),
    "verify": (("snapfs_describe", "snapfs_verify_fd", "snapfs_view_binding"),
               ("describe", "verify_fd", "view_binding"), ("index.openVerified",)),
    "exec": (("snapfs_open_verified", "snapfs_open_digest", "snapfs_open_entry"),
             ("open_verified", "open_digest", "open_entry"), ("index.spawnVerified",)),
    # Every snapshot listed and each read back hashed against its digest.
    "audit": (("snapfs_list", "snapfs_open_verified"), ("snapshots", "read_verified"),
              ("index.readVerified",)),
    "export": ("an OCI image layout written to a directory, signed with a key file: a "
               "transfer between hosts that an operator runs, not a runtime's call"),
    "import": ("the layout's snapshots published one by one, each checked against its "
               "manifest and signature: what a runtime does with publish() per snapshot"),
    "keygen": "writes a key pair to files for export --sign: an operator's step, no snapshot",
    "scope create": (("snapfs_scope_create",), ("scope_create",), ("scopes.create",)),
    "scope ls": (("snapfs_scope_list", "snapfs_scope_show"), ("scope_list", "scope_show"),
                 ("scopes.list", "scopes.show")),
    "scope rm": (("snapfs_scope_remove",), ("scope_remove",), ("scopes.remove",)),
    "grant": (("snapfs_grant", "snapfs_scope_binding"), ("grant", "scope_binding"),
              ("scopes.grant",)),
    "revoke": (("snapfs_revoke",), ("revoke",), ("scopes.revoke",)),
    "status": (("snapfs_control",), ("status", "control"), ("index.status",)),
    "metrics": (("snapfs_control",), ("metrics",), ("index.control",)),
    "wait": (("snapfs_watch_entry", "snapfs_watch_wait", "snapfs_wait_entry"),
             ("watch_entry", "wait_entry"), ("index.wait",)),
    "help": "prints the command's own usage",
    "version": (("snapfs_version",), ("__version__",), ("index.versions",)),
}


def subcommands():
    """What the command lists: `snapfs --help`'s commands, and each of `snapfs scope`'s."""
    r = run(SNAPFS, "--help")
    assert r.returncode == 0, r.stderr
    block = r.stdout.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    names = [line.split()[0] for line in block.splitlines()]
    assert len(names) > 10 and "rm" in names, block
    r = run(SNAPFS, "scope", "--help")
    assert r.returncode == 0, r.stderr
    verbs = re.findall(r"^\s*(?:Usage:)?\s*snapfs scope ([a-z]+) ", r.stdout, re.M)
    assert verbs, r.stdout
    return [n for n in names if n != "scope"] + [f"scope {v}" for v in verbs]


def exported():
    r = subprocess.run(["nm", "-D", "--defined-only", str(LIBSNAPFS)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {line.split()[-1].split("@")[0] for line in r.stdout.splitlines()}


def node_exports(module):
    text = (NODE_SRC / f"{module}.ts").read_text()
    return set(re.findall(r"^export (?:async )?function (\w+)", text, re.M))


def test_every_subcommand_has_a_row_and_every_row_a_subcommand():
    listed = subcommands()
    missing = [c for c in listed if c not in COUNTERPARTS]
    assert not missing, f"subcommands without a row in COUNTERPARTS: {missing}"
    gone = [c for c in COUNTERPARTS if c not in listed]
    assert not gone, f"rows naming no subcommand of snapfs: {gone}"


@pytest.mark.parametrize("command", sorted(COUNTERPARTS))
def test_each_counterpart_is_there_in_every_client(command):
    row = COUNTERPARTS[command]
    if isinstance(row, str):
        assert len(row) > 20, "a row without counterparts says why"
        return
    lib, py, node = row
    symbols, header = exported(), HEADER.read_text()
    for fn in lib:
        assert fn in symbols, f"{command}: {fn} is not exported by libsnapfs.so"
        assert re.search(rf"\b{fn}\(", header), f"{command}: {fn} is not in snapfs.h"
    for name in py:
        assert name in client.__all__, f"{command}: snapfs_client.{name} is not exported"
        obj = getattr(client, name)
        assert callable(obj) or isinstance(obj, str), f"{command}: snapfs_client.{name}"
    for qual in node or ():
        module, name = qual.split(".")
        assert name in node_exports(module), f"{command}: {qual} is not in client/node/src"


def test_a_counterpart_that_is_not_there_is_found_missing():
    """The checks above can fail: a name that no client has is caught by each of them."""
    assert "snapfs_no_such_call" not in exported()
    assert "no_such_call" not in client.__all__
    assert "noSuchCall" not in node_exports("index")
    assert "publish" in node_exports("index") and "snapfs_remove" in exported()


# ---- remove(): what snapfs rm does ---------------------------------------------------------

def listed(fs):
    return [(b.sha256, b.name) for b in client.snapshots(fs.path)]


def refusal(fn, *args, **kw):
    with pytest.raises(client.SnapfsError) as e:
        fn(*args, **kw)
    return e.value.errno, e.value.finding


def test_remove_by_name_digest_and_binding_each_refusal_beside_its_allowance(snapfs):
    a, b, c = (snapfs.publish(data, name) for data, name in
               ((b"alpha", "shared"), (b"beta", "shared"), (b"gamma", "solo")))
    assert listed(snapfs) == [(a, "shared"), (b, "shared"), (c, "solo")]  # publishing order
    # A name two snapshots have: refused, nothing removed; with all_named both go.
    assert refusal(client.remove, snapfs.path, "shared") == (errno.ENOTUNIQ, "ambiguous")
    assert len(listed(snapfs)) == 3
    assert client.remove(snapfs.path, "shared", all_named=True) == (2, 0)
    assert listed(snapfs) == [(c, "solo")]
    # A digest's first 12 characters (as snapfs ls shows it), and a whole digest.
    d = snapfs.publish(b"delta", "d")
    assert client.remove(snapfs.path, c[:12]) == (1, 0)
    assert client.remove(snapfs.path, d) == (1, 0)
    assert listed(snapfs) == []
    # A binding names exactly its snapshot: the same bytes published again are another
    # snapshot (another inode), which the old binding does not remove (ESTALE).
    snapfs.publish(b"epsilon", "e")
    old = client.snapshots(snapfs.path)[0]
    assert client.remove(snapfs.path, old) == (1, 0)
    snapfs.publish(b"epsilon", "e")
    assert refusal(client.remove, snapfs.path, str(old)) == (errno.ESTALE, "identity")
    new = client.snapshots(snapfs.path)[0]
    assert new.ino != old.ino and client.remove(snapfs.path, str(new)) == (1, 0)
    # What names nothing removes nothing.
    snapfs.publish(b"zeta", "z")
    assert refusal(client.remove, snapfs.path, "no-such-name") == \
        (errno.ENOENT, "no-such-snapshot")
    assert [name for _, name in listed(snapfs)] == ["z"]


REMOVE_AS = """
import sys
sys.path.insert(0, sys.argv[3])
import snapfs_client as s
try:
    s.remove(sys.argv[1], sys.argv[2])
except s.SnapfsError as e:
    print(e.code, e.finding)
    raise SystemExit(0)
raise SystemExit("removed")
"""


def test_remove_is_the_owner_s_another_uid_gets_eperm_and_the_owner_removes(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--readers", "any")
    digest = fs.publish(b"the owner's", "cfg")
    assert digest == sha256_hex(b"the owner's")
    r = as_uid(1000, REMOVE_AS, fs.path, digest, PYCLIENT.parent)
    assert r.stdout.split() == ["EPERM", "not-permitted"], r.stdout + r.stderr
    assert [d for d, _ in listed(fs)] == [digest]
    assert client.remove(fs.path, digest) == (1, 0)
    assert listed(fs) == []
