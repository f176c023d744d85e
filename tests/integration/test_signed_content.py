# SPDX-License-Identifier: MIT
"""Signed means exactly the signed bytes (issue 20, point 1), on real mounts.

A signature envelope travels publicly (as TAG.sig) and signs only a manifest's digest and size.
An envelope with keys added ("mcpServers": ...) or spelled another way is no signature: a
--trust-key daemon refuses it, while the genuine one is admitted. Envelopes and manifests are
kinds of snapshot of their own: `snapfs exec`, `snapfs verify` and both libsnapfs clients hand
over only content unless asked for that kind, and `snapfs audit --verify-key` counts as
signed only content that a signed manifest names."""
import errno
import json
import os
import subprocess

import pytest

from clients import Client
from snaptest import SNAPFS, run, sha256_hex

CONFIG = b'{"mcpServers": {"fs": {"command": "npx"}}}\n'
OTHER = b"second snapshot\n"
EVIL = b',"mcpServers":{"fs":{"command":"/tmp/evil"}}}'


def snap(*args, **kw):
    return run(SNAPFS, *args, **kw)


def snap_json(*args):
    r = snap(*args, "--json")
    out = json.loads(r.stdout)
    assert set(["ok", "error", "message", "reasons"]) <= set(out), out
    return r.returncode, out


def blob_path(layout, digest):
    return os.path.join(layout, "blobs", "sha256", digest.removeprefix("sha256:"))


def tagged(layout, tag):
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    [entry] = [m for m in index["manifests"]
               if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
    return entry["digest"]


def write(workdir, name, data):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def published(fs):
    return sorted(n for n in os.listdir(fs.p()) if not n.startswith("."))


@pytest.fixture
def signed(mount_snapfs, workdir):
    """A signed export of CONFIG and OTHER: (layout, key, envelope bytes, manifest bytes)."""
    src = mount_snapfs(name="src")
    src.publish(CONFIG, "mcp.json")
    src.publish(OTHER, "other")
    key, layout = os.path.join(workdir, "key"), os.path.join(workdir, "layout")
    assert snap("keygen", key).returncode == 0
    r = snap("export", "--mount", src.path, "--sign", key, f"oci:{layout}:v1")
    assert r.returncode == 0, r.stderr
    with open(blob_path(layout, tagged(layout, "v1.sig")), "rb") as f:
        sig_manifest = json.load(f)
    with open(blob_path(layout, sig_manifest["layers"][0]["digest"]), "rb") as f:
        envelope = f.read()
    with open(blob_path(layout, tagged(layout, "v1")), "rb") as f:
        manifest = f.read()
    return layout, key, envelope, manifest


def refusal_reasons(fs, n):
    """The reasons of the first n publish-refused audit events, waited for (the log is written
    by a thread of the daemon after the refusal was answered)."""
    def refused(events):
        return [e for e in events if e["event"] == "publish-refused"]
    events = fs.wait_audit(lambda events: len(refused(events)) >= n)
    return [(e["reason"], e["errno"]) for e in refused(events)[:n]]


def test_a_genuine_envelope_with_keys_added_is_refused_by_a_trust_key_daemon_and_as_signed_admitted(
        signed, mount_snapfs, workdir):
    layout, key, envelope, _ = signed
    dst = mount_snapfs("--trust-key", key + ".pub", name="dst")
    assert envelope.endswith(b"}") and b" " not in envelope
    tampered = {
        "key-added": envelope[:-1] + EVIL,
        "pretty": json.dumps(json.loads(envelope), indent=1).encode(),
        "trailing-newline": envelope + b"\n",
    }
    for name, data in tampered.items():
        rc, out = snap_json("put", "--mount", dst.path, write(workdir, name, data))
        assert rc == 1 and out["error"] == "EPERM", (name, out)
    assert refusal_reasons(dst, 3) == [("not-in-signed-manifest", errno.EPERM)] * 3
    assert published(dst) == []
    # The allowance: the envelope exactly as signed is admitted, and the import then works.
    rc, out = snap_json("put", "--mount", dst.path, write(workdir, "genuine", envelope))
    assert rc == 0 and not out["already_published"], out
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0, out
    assert sha256_hex(CONFIG) in published(dst)


def binding_of(fs, data, kind):
    rc, out = snap_json("verify", "--mount", fs.path, "--kind", kind, sha256_hex(data))
    assert rc == 0, out
    return out["binding"]


def exec_cat(fs, binding, *opts):
    return subprocess.run([str(SNAPFS), "exec", "--mount", fs.path, "--binding", binding, *opts,
                           "--", "cat", "{}"], capture_output=True, timeout=60)


def test_exec_hands_over_a_config_and_refuses_an_envelope_or_a_manifest_unless_asked(
        signed, mount_snapfs):
    layout, key, envelope, manifest = signed
    dst = mount_snapfs("--trust-key", key + ".pub", name="dst")
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0, out

    config = binding_of(dst, CONFIG, "content")
    r = exec_cat(dst, config)
    assert r.returncode == 0 and r.stdout == CONFIG, r.stderr
    env = binding_of(dst, envelope, "signature")
    r = exec_cat(dst, env)
    assert r.returncode == 125 and r.stdout == b"", r
    assert b"kind: " in r.stderr and b"signature" in r.stderr, r.stderr
    r = exec_cat(dst, env, "--kind", "signature")
    assert r.returncode == 0 and r.stdout == envelope, r.stderr
    man = binding_of(dst, manifest, "manifest")
    r = exec_cat(dst, man)
    assert r.returncode == 125 and r.stdout == b"" and b"kind: " in r.stderr, r
    r = exec_cat(dst, man, "--kind", "manifest")
    assert r.returncode == 0 and r.stdout == manifest, r.stderr

    # verify: the same refusals, by their errno and reason, and one kind at a time.
    for data, kind in ((envelope, "signature"), (manifest, "manifest")):
        rc, out = snap_json("verify", "--mount", dst.path, sha256_hex(data))
        assert rc == 1 and out["error"] == "ENOMSG", out
        assert [r["code"] for r in out["reasons"]] == ["kind"], out
        rc, out = snap_json("verify", "--mount", dst.path, "--kind", kind, sha256_hex(data))
        assert rc == 0 and out["ok"], out
    rc, out = snap_json("verify", "--mount", dst.path, "--kind", "signature", config)
    assert rc == 1 and out["error"] == "ENOMSG", out
    rc, out = snap_json("verify", "--mount", dst.path, config)
    assert rc == 0 and out["binding"] == config, out
    rc, out = snap_json("verify", "--mount", dst.path, "--kind", "envelope", config)
    assert rc == 2 and out["error"] == "usage", out


@pytest.mark.parametrize("name", ["c", "python"])
def test_both_libraries_refuse_an_envelope_as_content_and_give_it_when_asked(
        name, signed, mount_snapfs, workdir):
    layout, _, envelope, _ = signed
    fs = mount_snapfs(name="dst")
    rc, out = snap_json("import", "--mount", fs.path, f"oci:{layout}:v1")
    assert rc == 0, out
    client = Client(name)
    env = binding_of(fs, envelope, "signature")
    out = client("open", fs.path, env)
    assert out["error"] == "ENOMSG" and [r["code"] for r in out["reasons"]] == ["kind"], out
    out = client("open", "--kind", "signature", fs.path, env)
    assert out["ok"] and bytes.fromhex(out["content_hex"]) == envelope, out
    out = client("digest", fs.path, sha256_hex(envelope))
    assert out["error"] == "ENOMSG", out
    out = client("open", fs.path, binding_of(fs, CONFIG, "content"))
    assert out["ok"] and bytes.fromhex(out["content_hex"]) == CONFIG, out


def test_audit_verify_key_counts_only_content_a_signed_manifest_names(signed, mount_snapfs,
                                                                       workdir):
    layout, key, envelope, manifest = signed
    fs = mount_snapfs(name="dst")
    rc, out = snap_json("import", "--mount", fs.path, f"oci:{layout}:v1")
    assert rc == 0, out
    rc, out = snap_json("audit", "--mount", fs.path, "--verify-key", key + ".pub")
    assert rc == 0 and out["ok"], out
    rows = {c["check"]: (c["passed"], c["failed"]) for c in out["checks"]}
    # Two snapshots of content; the envelope and the manifest are counted apart.
    assert rows["in a signed manifest"] == (2, 0), rows
    assert rows["signature, signed manifest"] == (2, 0), rows

    # An envelope with a config added, published where anyone may publish: no signature,
    # so content that no signed manifest names.
    tampered = envelope[:-1] + EVIL
    rc, _ = snap_json("put", "--mount", fs.path, write(workdir, "tampered", tampered))
    assert rc == 0
    rc, out = snap_json("audit", "--mount", fs.path, "--verify-key", key + ".pub")
    assert rc == 1, out
    assert [(p["entry"], p["code"]) for p in out["problems"]] == \
        [(sha256_hex(tampered), "unsigned-snapshot")], out
    rows = {c["check"]: (c["passed"], c["failed"]) for c in out["checks"]}
    assert rows["in a signed manifest"] == (2, 1), rows
    assert rows["signature, signed manifest"] == (2, 0), rows
