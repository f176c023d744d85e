# SPDX-License-Identifier: MIT
"""Every refusal says what to do: one row per message, on real mounts. Each row runs the
refused command and asserts its exit status and the exact words that name the limit, the
option that changes it, or the command to run next (docs/design.md, "Every refusal says what
to do"); then its allowance shows that what the message says to do works."""
import json
import os
import signal
import subprocess

import pytest

from clients import CLIENTS, client_env, put
from snaptest import NOBODY_UID, SNAPFS, run, sha256_hex, start_snapfs

ROWS = {}


def row(key, *mount_opts):
    def register(fn):
        ROWS[key] = (mount_opts, fn)
        return fn
    return register


def snap(*args, **kw):
    return run(SNAPFS, *args, **kw)


def as_1000(*args, **kw):
    return run("setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
               SNAPFS, *args, **kw)


def write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)
    return path


def lines(text):
    return text.splitlines()


def signed_layout(fs, workdir):
    """A layout of one snapshot, signed: (layout, key)."""
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    assert snap("put", "--mount", fs.path, "--name", "cfg", "-", input="signed cfg").returncode == 0
    layout = os.path.join(workdir, "layout")
    assert snap("export", "--mount", fs.path, "--sign", key, f"oci:{layout}:v1").returncode == 0
    return layout, key


# ---- publishing: the limit, the option, the daemon's reason -------------------------------

@row("too-big-daemon", "--max-snapshot-size", "256K")
def _(fs, workdir):
    big = write(os.path.join(workdir, "big"), b"x" * 300000)
    r = snap("put", "--mount", fs.path, big)
    assert r.returncode == 1
    assert lines(r.stderr) == [
        f"snapfs put: {fs.path}: not published: too big",
        "too-big: 300000 bytes is over the daemon's limit of 256K (snapfs mount "
        "--max-snapshot-size, at most 1G)"]
    # A stream says no size before its end: the limit all the same.
    r = snap("put", "--mount", fs.path, "-", input="x" * 300000)
    assert r.returncode == 1 and lines(r.stderr)[1] == (
        "too-big: the content is over the daemon's limit of 256K (snapfs mount "
        "--max-snapshot-size, at most 1G)")
    assert snap("put", "--mount", fs.path, "-", input="x" * 262144).returncode == 0


@row("too-big-client")
def _(fs, workdir):
    # The client's own limit (Python max_size=, libsnapfs .max_size): named as the client's.
    src = write(os.path.join(workdir, "ten"), b"0123456789")
    r = run(*CLIENTS["python"], "publish", "--max-size", "4", fs.path, src, env=client_env())
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["error"] == "EFBIG"
    assert out["reasons"] == [{"code": "too-big", "message": "10 bytes is over the client's "
                               "limit of 4 bytes (the max_size option of the client library)"}]
    r = run(*CLIENTS["python"], "publish", "--max-size", "10", fs.path, src, env=client_env())
    assert r.returncode == 0, r.stdout


@row("trust-key-not-in-signed-manifest", "TRUSTKEY")
def _(fs, workdir):
    r = snap("put", "--mount", fs.path, "-", input="not signed")
    assert r.returncode == 1
    assert lines(r.stderr) == [
        f"snapfs put: {fs.path}: not published: the daemon refused it",
        "not-in-signed-manifest: the daemon (snapfs mount --trust-key) publishes only content "
        "that a manifest signed by one of its keys names: export it signed (snapfs export "
        "--sign KEY) and publish it with snapfs import"]
    rc = json.loads(snap("put", "--mount", fs.path, "--json", "-", input="not signed").stdout)
    assert rc["error"] == "EPERM" and rc["reasons"][0]["code"] == "not-in-signed-manifest"
    # The staging file went with the refusal.
    assert os.listdir(fs.p(".staging")) == []


@row("not-a-publisher", "--readers", "any")
def _(fs, workdir):
    r = as_1000("put", "--mount", fs.path, "--owner", "0", "-", input="by 1000")
    assert r.returncode == 1
    assert lines(r.stderr) == [
        f"snapfs put: {fs.path}: not published: this uid may not publish there",
        "staging: cannot create a staging file: this uid may not publish on this mount: only "
        "the mount's owner, root and the uids of the daemon's --publishers do"]
    assert snap("put", "--mount", fs.path, "-", input="by root").returncode == 0


@row("uid-quota", "--publishers", "any", "--max-uid-snapshots", "1")
def _(fs, workdir):
    assert as_1000("put", "--mount", fs.path, "--owner", "0", "-", input="one").returncode == 0
    r = as_1000("put", "--mount", fs.path, "--owner", "0", "-", input="two")
    assert r.returncode == 1
    assert lines(r.stderr)[0] == f"snapfs put: {fs.path}: not published: past a limit of your uid"
    assert lines(r.stderr)[1].startswith("quota: publishing ")
    assert ("your uid holds 1 snapshots of 3 bytes; the daemon allows 1 snapshots and "
            in lines(r.stderr)[1]) and "--max-uid-snapshots" in r.stderr
    # What it says to do: remove one (as the owner may), and the publish goes through.
    assert snap("rm", "--mount", fs.path, sha256_hex(b"one")).returncode == 0
    assert as_1000("put", "--mount", fs.path, "--owner", "0", "-", input="two").returncode == 0


@row("staging-files", "--max-staging", "1")
def _(fs, workdir):
    fs.stage(b"left behind", "stale")
    r = snap("put", "--mount", fs.path, "-", input="new")
    assert r.returncode == 1 and "--max-staging" in lines(r.stderr)[1]
    assert lines(r.stderr)[1].startswith("staging: cannot create a staging file: your uid has "
                                         "as many staging files as the daemon allows")
    os.unlink(fs.p(".staging/stale"))
    assert snap("put", "--mount", fs.path, "-", input="new").returncode == 0


@row("mount-full", "--max-snapshots", "1")
def _(fs, workdir):
    assert snap("put", "--mount", fs.path, "-", input="first").returncode == 0
    r = snap("put", "--mount", fs.path, "-", input="second")
    assert r.returncode == 1
    assert lines(r.stderr)[1] == (
        f"full: publishing {sha256_hex(b'second')[:12]}...: the mount is full (the daemon's "
        "--max-bytes or --max-snapshots): remove snapshots (snapfs rm, snapfs prune) or raise "
        "them")
    assert snap("prune", "--mount", fs.path, "--kind", "content").returncode == 0
    assert snap("put", "--mount", fs.path, "-", input="second").returncode == 0


# ---- the mount: the command to run next ---------------------------------------------------

@row("after-an-unmount")
def _(fs, workdir):
    assert fs.stop() == 0
    r = snap("put", "--mount", fs.path, "-", input="cfg")
    assert r.returncode == 1
    assert lines(r.stderr)[1] == (
        f"not-a-mount-point: {fs.path} is a directory inside the mount at /, not the root of a "
        f"mount; nothing is mounted there: run `snapfs mount {fs.path}`")
    r = snap("check", fs.path)
    assert r.returncode == 1 and f"run `snapfs mount {fs.path}`" in r.stdout
    r = snap("check", "--json", fs.path)
    assert r.returncode == 1
    assert json.loads(r.stdout)["reasons"][0]["message"].endswith(
        f"nothing is mounted there: run `snapfs mount {fs.path}`")
    # Doing what it says.
    again = start_snapfs(str(SNAPFS), fs.path)
    try:
        assert snap("put", "--mount", fs.path, "-", input="cfg").returncode == 0
    finally:
        assert again.stop() == 0


@row("no-such-directory")
def _(fs, workdir):
    where = os.path.join(workdir, "nowhere")
    r = snap("ls", "--mount", where)
    assert r.returncode == 1
    assert lines(r.stderr)[1] == (
        f"mount-check: cannot check the mount {where}: no such directory; create it and run "
        f"`snapfs mount {where}`")
    assert snap("ls", "--mount", fs.path).returncode == 0


@row("dead-daemon")
def _(fs, workdir):
    put(fs, b"cfg")
    fs.stop(signal.SIGKILL)
    r = snap("ls", "--mount", fs.path)
    assert r.returncode == 1
    assert lines(r.stderr)[1] == (
        "transport-not-connected: the filesystem's daemon is gone (ENOTCONN): nothing serves "
        f"this mount; clear the dead mount with `fusermount3 -u {fs.path}`, or `snapfs mount "
        f"--replace-stale {fs.path}`")
    again = start_snapfs(str(SNAPFS), fs.path, "--replace-stale")
    try:
        assert snap("ls", "--mount", fs.path).returncode == 0
    finally:
        assert again.stop() == 0


@row("unknown-mount-option")
def _(fs, workdir):
    other = os.path.join(workdir, "other")
    os.mkdir(other)
    r = snap("mount", "-o", "allow_other,bogus=1", other)
    assert r.returncode == 2 and r.stderr == "snapfs: unknown mount option 'bogus=1'\n"
    r = snap("mount", "--bogus", other)
    assert r.returncode == 2 and lines(r.stderr) == [
        "snapfs mount: unknown option '--bogus'", "Run 'snapfs mount --help' for its options."]


@row("mount-option-after-the-mountpoint")
def _(fs, workdir):
    other = os.path.join(workdir, "other")
    os.mkdir(other)
    r = snap("mount", other, "--max-snapshot-size", "1M")
    assert r.returncode == 2 and lines(r.stderr) == [
        "snapfs mount: '--max-snapshot-size' after the MOUNTPOINT: options go before it "
        "(snapfs mount [OPTIONS] MOUNTPOINT)", "Run 'snapfs mount --help' for its options."]
    # Where it says: the same option before the mount point serves.
    again = start_snapfs(str(SNAPFS), other, "--max-snapshot-size", "1M")
    assert again.stop() == 0


# ---- keys: a private key where a public one is expected -----------------------------------

@row("private-key-to-import")
def _(fs, workdir):
    layout, key = signed_layout(fs, workdir)
    r = snap("import", "--mount", fs.path, "--verify-key", key, f"oci:{layout}:v1")
    assert r.returncode == 2
    assert lines(r.stderr) == [
        f"snapfs import: {key} is a private key; give its public key instead (snapfs keygen "
        f"wrote it to {key}.pub; `openssl pkey -in {key} -pubout` prints it)"]
    out = json.loads(snap("import", "--mount", fs.path, "--verify-key", key, "--json",
                          f"oci:{layout}:v1").stdout)
    assert out["error"] == "EKEYREJECTED" and out["reasons"][0]["code"] == "key"
    r = snap("import", "--mount", fs.path, "--verify-key", key + ".pub", f"oci:{layout}:v1")
    assert r.returncode == 0, r.stderr
    r = snap("audit", "--mount", fs.path, "--verify-key", key)
    assert r.returncode == 2 and "is a private key; give its public key" in r.stderr


@row("private-key-to-the-daemon")
def _(fs, workdir):
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    other = os.path.join(workdir, "other")
    os.mkdir(other)
    p = start_snapfs(str(SNAPFS), other, "--trust-key", key, expect_ready=False)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and lines(err) == [
        f"snapfs mount: --trust-key: {key} is a private key; give its public key instead "
        f"(snapfs keygen wrote it to {key}.pub; `openssl pkey -in {key} -pubout` prints it)"]
    again = start_snapfs(str(SNAPFS), other, "--trust-key", key + ".pub")
    assert again.stop() == 0


# ---- import and export: what failed, in words ---------------------------------------------

@row("import-key-file-missing")
def _(fs, workdir):
    layout, key = signed_layout(fs, workdir)
    missing = os.path.join(workdir, "nokey.pub")
    r = snap("import", "--mount", fs.path, "--verify-key", missing, f"oci:{layout}:v1")
    assert r.returncode == 2
    assert lines(r.stderr) == [f"snapfs import: cannot read the key file {missing}: no such file"]


@row("import-layout-missing")
def _(fs, workdir):
    where = os.path.join(workdir, "nolayout")
    r = snap("import", "--mount", fs.path, f"oci:{where}:v1")
    assert r.returncode == 2
    assert lines(r.stderr) == [
        "snapfs import: cannot read the OCI image layout; nothing was published",
        f"layout: {where}: not an OCI image layout"]


@row("import-blob-mismatch")
def _(fs, workdir):
    layout, _ = signed_layout(fs, workdir)
    path = os.path.join(layout, "blobs", "sha256", sha256_hex(b"signed cfg"))
    with open(path, "r+b") as f:
        f.write(b"S")
    r = snap("import", "--mount", fs.path, f"oci:{layout}:v1")
    assert r.returncode == 1
    assert lines(r.stderr)[0] == ("snapfs import: a layer's blob does not match its digest and "
                                  "size; nothing was published")
    assert lines(r.stderr)[1].startswith("blob-mismatch: layer 0 (cfg) blob sha256:")
    write(path, b"signed cfg")
    assert snap("import", "--mount", fs.path, f"oci:{layout}:v1").returncode == 0


@row("import-unsigned")
def _(fs, workdir):
    layout, key = signed_layout(fs, workdir)
    # Another manifest (one more snapshot), exported unsigned.
    put(fs, b"one more")
    assert snap("export", "--mount", fs.path, f"oci:{layout}:plain").returncode == 0
    r = snap("import", "--mount", fs.path, "--verify-key", key + ".pub", f"oci:{layout}:plain")
    assert r.returncode == 1
    assert lines(r.stderr)[0] == ("snapfs import: the manifest carries no signature "
                                  "(--verify-key); nothing was published")
    r = snap("import", "--mount", fs.path, "--verify-key", key + ".pub", f"oci:{layout}:v1")
    assert r.returncode == 0, r.stderr


@row("export-key-file-missing")
def _(fs, workdir):
    put(fs, b"cfg")
    missing = os.path.join(workdir, "nokey")
    r = snap("export", "--mount", fs.path, "--sign", missing, f"oci:{workdir}/l:v1")
    assert r.returncode == 2
    assert lines(r.stderr) == [f"snapfs export: cannot read the key file {missing}: no such file"]


# ---- removing -----------------------------------------------------------------------------

@row("rm-not-permitted", "--allow-other", "--publishers", "any")
def _(fs, workdir):
    put(fs, b"mine", uid=NOBODY_UID)
    r = as_1000("rm", "--mount", fs.path, "--owner", "0", sha256_hex(b"mine"))
    assert r.returncode == 1
    assert lines(r.stderr) == [
        f"snapfs rm: {sha256_hex(b'mine')[:12]} -: not removed: {sha256_hex(b'mine')[:12]}...: "
        "only the mount's owner and root remove snapshots (a holder drops its own hold when "
        "the daemon runs with --unlink-own)"]


@row("rm-ambiguous-name")
def _(fs, workdir):
    for data in ("a", "b"):
        assert snap("put", "--mount", fs.path, "--name", "cfg", "-", input=data).returncode == 0
    r = snap("rm", "--mount", fs.path, "cfg")
    assert r.returncode == 1 and lines(r.stderr) == [
        "snapfs rm: nothing removed: 2 snapshots are named cfg: give a digest, or --all to "
        "remove them all"]
    assert snap("rm", "--mount", fs.path, "--all", "cfg").returncode == 0


# ---- scopes: what is missing, and the command that makes it --------------------------------

def scope_view(workdir, name):
    return os.path.join(workdir, "views", name)


@row("scope-missing")
def _(fs, workdir):
    digest = sha256_hex(b"cfg")
    put(fs, b"cfg")
    r = snap("grant", "--mount", fs.path, "sandbox", digest)
    assert r.returncode == 1
    assert lines(r.stderr)[1:] == [
        "refused: no scope named sandbox: snapfs scope ls lists the scopes; snapfs scope "
        "create sandbox --view PATH makes it"]
    assert lines(r.stderr)[0].startswith(f"snapfs grant: {fs.path}: not granted: ")
    rc = json.loads(snap("revoke", "--mount", fs.path, "--json", "sandbox", digest).stdout)
    assert rc["error"] == "ENOENT" and rc["reasons"][0]["message"].startswith(
        "no scope named sandbox: snapfs scope ls")
    # Doing what it says.
    os.makedirs(os.path.dirname(scope_view(workdir, "sandbox")), exist_ok=True)
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view",
                scope_view(workdir, "sandbox")).returncode == 0
    try:
        assert snap("grant", "--mount", fs.path, "sandbox", digest).returncode == 0
    finally:
        assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0


@row("scope-bad-name")
def _(fs, workdir):
    # Headed "not a regular file, or an invalid argument", the reason second, and exit 1: a
    # usage error is 2, its first line the cause and the grammar to follow.
    view = scope_view(workdir, "sandbox")
    os.makedirs(os.path.dirname(view), exist_ok=True)
    r = snap("scope", "create", "--mount", fs.path, "bad/name", "--view", view)
    assert r.returncode == 2 and lines(r.stderr) == [
        f"snapfs scope create: {fs.path}: not a valid scope name: 1-64 of [A-Za-z0-9._-], not "
        "starting with '.'",
        "invalid-argument: not a valid scope name: 1-64 of [A-Za-z0-9._-], not starting with "
        "'.'"], r.stderr
    # The name it asks for: created.
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view).returncode == 0
    assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0


@row("scope-view-parent-missing")
def _(fs, workdir):
    view = os.path.join(workdir, "nowhere", "sandbox")
    r = snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view)
    assert r.returncode == 1 and lines(r.stderr) == [
        f"snapfs scope create: {fs.path}: {view}: nowhere does not exist (a view's parent "
        "directory must)",
        f"refused: {view}: nowhere does not exist (a view's parent directory must)"], r.stderr
    # Made, as it says: the view is mounted there.
    os.mkdir(os.path.dirname(view))
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view).returncode == 0
    assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0


@row("scope-exists")
def _(fs, workdir):
    view = scope_view(workdir, "sandbox")
    os.makedirs(os.path.dirname(view), exist_ok=True)
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view).returncode == 0
    try:
        r = snap("scope", "create", "--mount", fs.path, "sandbox", "--view",
                 scope_view(workdir, "other"))
        assert r.returncode == 1 and lines(r.stderr)[1:] == [
            "refused: a scope named sandbox exists: choose another name, or delete it first "
            "(snapfs scope rm sandbox)"]
        r = snap("scope", "create", "--mount", fs.path, "other", "--view", view)
        assert r.returncode == 1 and lines(r.stderr)[1:] == [
            f"refused: {view} is the view of scope sandbox: give another view, or delete that "
            "scope first (snapfs scope rm sandbox)"]
        assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0
    finally:
        snap("scope", "rm", "--mount", fs.path, "sandbox")
    # Where it says: deleted, the name and the view are free again.
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view).returncode == 0
    assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0


@row("grant-not-published")
def _(fs, workdir):
    view = scope_view(workdir, "sandbox")
    os.makedirs(os.path.dirname(view), exist_ok=True)
    assert snap("scope", "create", "--mount", fs.path, "sandbox", "--view", view).returncode == 0
    try:
        digest = sha256_hex(b"not yet")
        r = snap("grant", "--mount", fs.path, "sandbox", digest)
        assert r.returncode == 1 and lines(r.stderr)[1:] == [
            "refused: no such snapshot published on the main mount: publish it first (snapfs "
            "put); snapfs ls lists what is"]
        r = snap("revoke", "--mount", fs.path, "sandbox", "mcp")
        assert r.returncode == 1 and lines(r.stderr)[1:] == [
            "refused: no such grant in scope sandbox: snapfs scope ls sandbox lists its grants"]
        # Publish it, as it says: the grant goes through, and so does the revoke of its entry.
        put(fs, b"not yet")
        assert snap("grant", "--mount", fs.path, "sandbox", digest, "--as",
                    "mcp").returncode == 0
        assert snap("revoke", "--mount", fs.path, "sandbox", "mcp").returncode == 0
    finally:
        assert snap("scope", "rm", "--mount", fs.path, "sandbox").returncode == 0


def test_every_row_is_a_case():
    assert len(ROWS) >= 20


@pytest.mark.parametrize("key", sorted(ROWS))
def test_message(key, mount_snapfs, workdir):
    opts, fn = ROWS[key]
    if "TRUSTKEY" in opts:
        k = os.path.join(workdir, "trusted")
        assert snap("keygen", k).returncode == 0
        opts = tuple(k + ".pub" if o == "TRUSTKEY" else o for o in opts)
        opts = ("--trust-key",) + opts
    fs = mount_snapfs("--allow-other", *opts)
    fn(fs, workdir)
