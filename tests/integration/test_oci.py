# SPDX-License-Identifier: MIT
"""snapfs export and import through an OCI image layout on real mounts: the round trip, and
each refusal (tampered blob, tampered manifest, wrong key, missing signature) beside its
accepted twin."""
import errno
import hashlib
import json
import os
import time

import pytest

from snaptest import SNAPFS, run, sha256_hex

CONFIG = b'{"mcpServers": {"fs": {"command": "npx"}}}\n'
OTHER = b"second snapshot\n"


def snap(*args):
    return run(SNAPFS, *args)


def snap_json(*args):
    r = snap(*args, "--json")
    out = json.loads(r.stdout)
    assert set(["ok", "error", "message", "reasons"]) <= set(out), out
    return r.returncode, out


def published(fs):
    return sorted(n for n in os.listdir(fs.p()) if not n.startswith("."))


def blob(layout, digest):
    return os.path.join(layout, "blobs", "sha256", digest.removeprefix("sha256:"))


def manifest_of(layout, tag):
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    entry = [m for m in index["manifests"]
             if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
    assert len(entry) == 1, index
    with open(blob(layout, entry[0]["digest"]), "rb") as f:
        return entry[0]["digest"], json.load(f)


@pytest.fixture
def two(mount_snapfs, workdir):
    """A source mount with two snapshots exported to a layout, and an empty second mount."""
    src = mount_snapfs(name="src")
    dst = mount_snapfs(name="dst")
    digests = [src.publish(CONFIG, "mcp.json"), src.publish(OTHER, "other")]
    layout = os.path.join(workdir, "layout")
    return src, dst, layout, sorted(digests)


def restore_then_import(path, good, dst, layout, digests):
    """Puts a blob's true bytes back: the same import then publishes every layer."""
    with open(path, "wb") as f:
        f.write(good)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0 and published(dst) == digests, out


def export(src, layout, tag="v1", *extra):
    """extra: options (starting with --) and their values, then digests."""
    opts = [a for a in extra if a.startswith("--") or os.sep in a]
    digests = [a for a in extra if a not in opts]
    r = snap("export", "--mount", src.path, *opts, f"oci:{layout}:{tag}", *digests)
    assert r.returncode == 0, r.stderr
    return r


def test_export_then_import_gives_the_same_digests_and_bytes(two):
    src, dst, layout, digests = two
    export(src, layout)
    digest, man = manifest_of(layout, "v1")
    assert man["artifactType"] == "application/vnd.snapfs.snapshots.v1"
    assert man["config"] == {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                             "digest": "sha256:" + sha256_hex(b"{}")}
    assert [layer["digest"] for layer in man["layers"]] == ["sha256:" + d for d in digests]
    with open(os.path.join(layout, "oci-layout")) as f:
        assert json.load(f) == {"imageLayoutVersion": "1.0.0"}

    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0 and out["ok"] and out["error"] is None, out
    assert out["manifest"] == digest and out["signed"] is False
    assert [s["sha256"] for s in out["snapshots"]] == digests
    assert published(dst) == digests
    for d in digests:
        with open(dst.p(d), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == d
    # The same manifest by its digest, published again: already there, same bindings.
    rc, again = snap_json("import", "--mount", dst.path, f"oci:{layout}:@{digest}")
    assert rc == 0 and [s["binding"] for s in again["snapshots"]] == \
        [s["binding"] for s in out["snapshots"]]
    assert all(s["already_published"] for s in again["snapshots"])


def test_the_first_publisher_names_a_snapshot_and_the_name_travels(two):
    src, dst, layout, digests = two
    config = sha256_hex(CONFIG)
    assert os.getxattr(src.p(config), "user.snapfs.name") == b"mcp.json"
    # The same bytes staged under another name: already published, the name stays.
    src.stage(CONFIG, "renamed.json")
    with pytest.raises(FileExistsError):
        os.rename(src.p(".staging/renamed.json"), src.p(config))
    os.unlink(src.p(".staging/renamed.json"))
    assert os.getxattr(src.p(config), "user.snapfs.name") == b"mcp.json"

    rc, out = snap_json("export", "--mount", src.path, f"oci:{layout}:v1")
    assert rc == 0 and {s["name"] for s in out["snapshots"]} == {"mcp.json", "other"}
    _, man = manifest_of(layout, "v1")
    titles = {layer["digest"]: layer["annotations"]["org.opencontainers.image.title"]
              for layer in man["layers"]}
    assert titles["sha256:" + config] == "mcp.json"
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0 and {s["name"] for s in out["snapshots"]} == {"mcp.json", "other"}
    assert os.getxattr(dst.p(config), "user.snapfs.name") == b"mcp.json"
    text = snap("import", "--mount", dst.path, f"oci:{layout}:v1").stdout
    assert f"sha256={config} " in text and "name=mcp.json" in text


def test_export_of_chosen_digests_exports_only_those(two):
    src, dst, layout, digests = two
    export(src, layout, "one", digests[1])
    _, man = manifest_of(layout, "one")
    assert [layer["digest"] for layer in man["layers"]] == ["sha256:" + digests[1]]
    # A digest the mount does not serve is refused, and nothing is tagged.
    missing = sha256_hex(b"never published")
    r = snap("export", "--mount", src.path, f"oci:{layout}:two", missing)
    assert r.returncode == 1 and "open" in r.stderr, r.stderr
    with open(os.path.join(layout, "index.json")) as f:
        assert "two" not in f.read()


def test_tampered_blob_publishes_nothing_and_is_named(two):
    src, dst, layout, digests = two
    export(src, layout)
    path = blob(layout, digests[1])
    with open(path, "rb") as f:
        good = f.read()
    with open(path, "wb") as f:
        f.write(bytes([good[0] ^ 1]) + good[1:])  # same size, other bytes
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 1 and out["error"] == "EBADMSG", out
    assert out["reasons"][0]["code"] == "blob-mismatch"
    assert digests[1] in out["reasons"][0]["message"]
    assert published(dst) == []  # not even the intact first layer
    # The accepted twin: the true bytes back, the same import publishes both.
    restore_then_import(path, good, dst, layout, digests)


def test_symlinked_or_missing_blob_publishes_nothing(two, workdir):
    src, dst, layout, digests = two
    export(src, layout)
    path = blob(layout, digests[0])
    outside = os.path.join(workdir, "outside")
    os.rename(path, outside)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 1 and out["error"] == "ENOENT" and out["reasons"][0]["code"] == "blob-missing"
    os.symlink(outside, path)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 1 and out["error"] == "ELOOP" and out["reasons"][0]["code"] == "blob"
    assert published(dst) == []
    os.unlink(path)
    os.rename(outside, path)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0 and published(dst) == digests


def test_tampered_manifest_publishes_nothing(two):
    src, dst, layout, digests = two
    export(src, layout)
    digest, man = manifest_of(layout, "v1")
    path = blob(layout, digest)
    with open(path, "rb") as f:
        good = f.read()
    # One layer dropped in place: index.json still names the original digest.
    man["layers"] = man["layers"][:1]
    with open(path, "w") as f:
        json.dump(man, f)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 1 and out["error"] == "EBADMSG" and out["reasons"][0]["code"] == "manifest"
    assert published(dst) == []
    restore_then_import(path, good, dst, layout, digests)


def test_signed_export_imports_only_with_its_key(two, workdir):
    src, dst, layout, digests = two
    key, wrong = os.path.join(workdir, "key"), os.path.join(workdir, "wrong")
    for k in (key, wrong):
        r = snap("keygen", k)
        assert r.returncode == 0, r.stderr
        assert os.stat(k).st_mode & 0o777 == 0o600
    rc, out = snap_json("export", "--mount", src.path, "--sign", key, f"oci:{layout}:v1")
    assert rc == 0 and out["signed"], out
    sig_digest, sig = manifest_of(layout, "v1.sig")
    assert sig["artifactType"] == "application/vnd.snapfs.signature.v1"
    assert sig["subject"]["digest"] == out["manifest"]
    # Another manifest, never signed. (The same snapshots exported unsigned would give the
    # same manifest digest, which the signature covers.)
    export(src, layout, "plain", digests[0])

    rc, bad = snap_json("import", "--mount", dst.path, "--verify-key", wrong + ".pub",
                        f"oci:{layout}:v1")
    assert rc == 1 and bad["error"] == "EKEYREJECTED", bad
    assert bad["reasons"][0]["code"] == "wrong-key"
    rc, bad = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                        f"oci:{layout}:plain")
    assert rc == 1 and bad["error"] == "ENOKEY" and bad["reasons"][0]["code"] == "unsigned"
    assert published(dst) == []

    rc, ok = snap_json("import", "--mount", dst.path, "--verify-key", wrong + ".pub",
                       "--verify-key", key + ".pub", f"oci:{layout}:v1")
    assert rc == 0 and ok["signed"] and ok["key"] == out["key"], ok
    # The layers, and the provenance: the signature envelope and the signed manifest.
    envelope = sig["layers"][0]["digest"].removeprefix("sha256:")
    assert published(dst) == sorted(digests + [out["manifest"].removeprefix("sha256:"),
                                               envelope])


def test_signature_moved_onto_another_manifest_is_refused(two, workdir):
    src, dst, layout, digests = two
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    export(src, layout, "v1", "--sign", key)
    export(src, layout, "one", digests[0])
    one_digest, _ = manifest_of(layout, "one")
    sig_digest, sig = manifest_of(layout, "v1.sig")
    # A signature manifest that claims "one" as its subject; its envelope signed "v1".
    sig["subject"]["digest"] = one_digest
    sig["subject"]["size"] = os.stat(blob(layout, one_digest)).st_size
    data = json.dumps(sig).encode()
    moved = "sha256:" + sha256_hex(data)
    with open(blob(layout, moved), "wb") as f:
        f.write(data)
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    index["manifests"].append({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "digest": moved, "size": len(data),
                               "annotations": {"org.opencontainers.image.ref.name": "one.sig"}})
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f)
    rc, bad = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                        f"oci:{layout}:one")
    assert rc == 1 and bad["error"] == "EBADMSG" and bad["reasons"][0]["code"] == "bad-signature"
    assert published(dst) == []
    rc, ok = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                       f"oci:{layout}:v1")
    assert rc == 0 and ok["signed"]


def test_openssl_keys_work_as_well(two, workdir):
    src, dst, layout, digests = two
    key = os.path.join(workdir, "ossl.pem")
    assert run("openssl", "genpkey", "-algorithm", "ed25519", "-out", key).returncode == 0
    assert run("openssl", "pkey", "-in", key, "-pubout", "-out", key + ".pub").returncode == 0
    export(src, layout, "v1", "--sign", key)
    rc, ok = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                       f"oci:{layout}:v1")
    assert rc == 0 and ok["signed"], ok


def test_usage_and_layout_errors(two, workdir):
    src, dst, layout, digests = two
    rc, out = snap_json("import", "--mount", dst.path, "docker://x")
    assert rc == 2 and out == {"ok": False, "error": "usage", "message": out["message"],
                               "reasons": []}
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{workdir}/nothing:v1")
    assert rc == 2 and out["error"] == "ENOENT" and out["reasons"][0]["code"] == "layout"
    export(src, layout)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v2")
    assert rc == 2 and out["error"] == "ENOENT"
    rc, out = snap_json("export", "--mount", src.path, f"oci:{layout}:bad/tag")
    assert rc == 2 and out["error"] == "EINVAL"
    assert published(dst) == []


def refusal(fs, n):
    """The n-th publish-refused audit event (from 1), waited for: the audit log is written by
    a thread of its own, after the refusal was answered."""
    end = time.monotonic() + 60
    while True:
        events = [json.loads(line) for line in fs.audit_events()]
        refused = [e for e in events if e["event"] == "publish-refused"]
        if len(refused) >= n:
            return refused[n - 1]
        assert time.monotonic() < end, f"no refusal #{n} in the audit log: {events}"
        time.sleep(0.02)


def test_trust_key_mount_publishes_only_what_a_trusted_signature_names(mount_snapfs, workdir):
    src = mount_snapfs(name="src")
    digests = sorted([src.publish(CONFIG, "mcp.json"), src.publish(OTHER, "other")])
    key, other = os.path.join(workdir, "key"), os.path.join(workdir, "other")
    for k in (key, other):
        assert snap("keygen", k).returncode == 0
    layout = os.path.join(workdir, "layout")
    export(src, layout, "foreign", digests[0], "--sign", other)
    export(src, layout, "unsigned", digests[1])
    dst = mount_snapfs("--trust-key", key + ".pub", name="dst")

    # A digest published outside any manifest: refused by the daemon itself, audited.
    stray = os.path.join(workdir, "stray")
    with open(stray, "wb") as f:
        f.write(b"published outside any manifest\n")
    rc, out = snap_json("put", "--mount", dst.path, stray)
    assert rc == 1 and out["error"] == "EPERM", out
    event = refusal(dst, 1)
    assert event["reason"] == "not-in-signed-manifest" and event["errno"] == errno.EPERM
    # Unsigned, and signed by a key the daemon does not trust: refused, nothing published.
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:unsigned")
    assert rc == 1 and out["error"] == "EPERM", out
    assert refusal(dst, 2)["reason"] == "not-in-signed-manifest"
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:foreign")
    assert rc == 1 and out["error"] == "EPERM", out
    assert refusal(dst, 3)["reason"] == "untrusted-key"
    assert published(dst) == []

    # The accepted twin: the manifest signed by the trusted key publishes its layers, even
    # with a second signature beside it by a key the daemon does not trust (refused alone).
    rc, foreign = snap_json("export", "--mount", src.path, "--sign", other,
                            f"oci:{layout}:signed")
    assert rc == 0, foreign
    export(src, layout, "signed", "--sign", key)  # retags signed.sig: the trusted one
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    index["manifests"].insert(0, {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": foreign["signature"],
        "size": os.stat(blob(layout, foreign["signature"])).st_size,
        "annotations": {"org.opencontainers.image.ref.name": "signed.sig-other"}})
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:signed")
    assert rc == 0, out
    assert refusal(dst, 5)["reason"] == "untrusted-key"
    assert set(digests) <= set(published(dst))
    for d in digests:
        with open(dst.p(d), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == d
    # Now admitted: the same bytes through put are "already published", the stray still not.
    again = os.path.join(workdir, "again")
    with open(again, "wb") as f:
        f.write(OTHER)
    rc, out = snap_json("put", "--mount", dst.path, again)
    assert rc == 0 and out["already_published"], out
    rc, out = snap_json("put", "--mount", dst.path, stray)
    assert rc == 1 and out["error"] == "EPERM"


def test_trust_key_daemon_restarted_on_its_store_learns_again_from_the_same_import(
        mount_snapfs, workdir):
    src = mount_snapfs(name="src")
    digests = sorted([src.publish(CONFIG, "mcp.json"), src.publish(OTHER, "other")])
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    layout, store = os.path.join(workdir, "layout"), os.path.join(workdir, "store")
    export(src, layout, "v1", "--sign", key)
    opts = ("--store", store, "--trust-key", key + ".pub")
    dst = mount_snapfs(*opts, name="dst")
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0, out
    os.unlink(dst.p(digests[1]))
    assert dst.stop() == 0

    # Restarted: the envelope and the manifest come back from the store, already published;
    # what they admitted is learned again when the import publishes them again. (Another
    # mount point: the fixture's cleanup of the first one must not touch this one.)
    dst = mount_snapfs(*opts, name="dst2")
    assert digests[1] not in published(dst)
    stray = os.path.join(workdir, "stray")
    with open(stray, "wb") as f:
        f.write(b"outside\n")
    rc, out = snap_json("put", "--mount", dst.path, stray)
    assert rc == 1 and out["error"] == "EPERM"
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0, out
    assert set(digests) <= set(published(dst))


def test_audit_verify_key_fails_on_a_snapshot_in_no_signed_manifest(two, workdir):
    src, dst, layout, digests = two
    key, other = os.path.join(workdir, "key"), os.path.join(workdir, "other")
    for k in (key, other):
        assert snap("keygen", k).returncode == 0
    export(src, layout, "v1", "--sign", key)
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0, out
    # Every snapshot served is a layer of the signed manifest, the manifest or its signature.
    rc, out = snap_json("audit", "--mount", dst.path, "--verify-key", key + ".pub")
    assert rc == 0 and out["ok"], out
    # By a key that signed nothing here, none is.
    rc, out = snap_json("audit", "--mount", dst.path, "--verify-key", other + ".pub")
    assert rc == 1 and {p["code"] for p in out["problems"]} == {"unsigned-snapshot"}, out
    assert len(out["problems"]) == len(published(dst))

    stray = dst.publish(b"published outside any manifest\n", "stray")
    rc, out = snap_json("audit", "--mount", dst.path, "--verify-key", key + ".pub")
    assert rc == 1, out
    assert [(p["entry"], p["code"]) for p in out["problems"]] == [(stray, "unsigned-snapshot")]
    r = snap("audit", "--mount", dst.path, "--verify-key", key + ".pub")
    assert r.returncode == 1 and f"{stray}: unsigned-snapshot" in r.stdout, r.stdout
    # The allowance: without --verify-key the same mount audits clean.
    rc, out = snap_json("audit", "--mount", dst.path)
    assert rc == 0 and out["ok"], out
    # A key file that is no key: a usage of the command gone wrong, not a verdict.
    rc, out = snap_json("audit", "--mount", dst.path, "--verify-key", blob(layout, digests[0]))
    assert rc == 2 and out["error"] == "EINVAL", out


def big_manifest(layer_digest, layer_size, under):
    """A valid OCI manifest of one layer padded with annotations to just under `under` bytes
    (each value at most the 1024 bytes an annotation may hold)."""
    base = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": "application/vnd.snapfs.snapshots.v1",
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                       "digest": "sha256:" + sha256_hex(b"{}")},
            "layers": [{"mediaType": "application/vnd.snapfs.snapshot.v1",
                        "digest": "sha256:" + layer_digest, "size": layer_size}],
            "annotations": {}}
    one = len(json.dumps({"k000000": "x" * 1000}, separators=(",", ":"))) - 1
    for i in range((under - 4096) // one):
        base["annotations"][f"k{i:06d}"] = "x" * 1000
    data = json.dumps(base, separators=(",", ":")).encode()
    assert under - 8192 < len(data) < under
    return data


def test_an_index_naming_one_4mib_manifest_26000_times_imports_or_is_refused_at_once(
        two, workdir):
    """The layout of issue 20: index.json names one 4 MiB manifest 26,000 times, within every
    per-document limit. Each entry used to be read, hashed and parsed before any key decided
    (about an hour). Now the referrers are looked for within bounds, so every import below
    ends well within the run's 60-second guard: the signed tag imports, the big one is
    refused unsigned with a key and imports without one."""
    src, dst, layout, digests = two
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    export(src, layout, "v1", "--sign", key)
    big = big_manifest(sha256_hex(CONFIG), len(CONFIG), 4 << 20)
    big_digest = "sha256:" + sha256_hex(big)
    with open(blob(layout, big_digest), "wb") as f:
        f.write(big)
    with open(os.path.join(layout, "index.json")) as f:
        index = json.load(f)
    entry = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": big_digest,
             "size": len(big)}
    index["manifests"] += [dict(entry) for _ in range(26000)]
    index["manifests"][-1]["annotations"] = {"org.opencontainers.image.ref.name": "big"}
    text = json.dumps(index, separators=(",", ":")).encode()
    assert len(text) <= 4 << 20, len(text)
    with open(os.path.join(layout, "index.json"), "wb") as f:
        f.write(text)

    rc, out = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                        f"oci:{layout}:big")
    assert rc == 1 and out["error"] == "ENOKEY", out
    assert [r["code"] for r in out["reasons"]] == ["unsigned"], out
    assert published(dst) == []
    rc, out = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                        f"oci:{layout}:v1")
    assert rc == 0 and out["signed"], out
    assert set(digests) <= set(published(dst))
    # Without a key nothing decides on a signature: the big manifest is read once, its one
    # layer published (already there: the same bytes).
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:big")
    assert rc == 0 and out["manifest"] == big_digest, out
    assert [s["sha256"] for s in out["snapshots"]] == [sha256_hex(CONFIG)], out
