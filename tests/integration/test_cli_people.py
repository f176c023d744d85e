# SPDX-License-Identifier: MIT
"""The command line as a person meets it, on real mounts: names (put --name, FILE's own name,
none from standard input), snapfs ls (human columns, filters, sort, import's bookkeeping
hidden), snapfs rm and snapfs prune (by name, digest, binding, age, kind; refused with their
errno beside what is allowed), help and version, and bash completion."""
import json
import os
import re
import subprocess
import time

import pytest

from clients import put
from snaptest import NOBODY_UID, ROOT, SNAPFS, as_uid, run, sha256_hex

COMPLETION = ROOT / "dist" / "snapfs-completion.bash"


def snap(*args, **kw):
    return run(SNAPFS, *args, **kw)


def snap_json(*args, **kw):
    r = snap(*args, "--json", **kw)
    out = json.loads(r.stdout)
    assert list(out)[:4] == ["ok", "error", "message", "reasons"], out
    assert out["ok"] == (r.returncode == 0), out
    return r.returncode, out


def write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)
    return path


def names(fs):
    return {e["name"]: e for e in snap_json("ls", "--mount", fs.path, "--all")[1]["snapshots"]}


def listed(fs, *opts):
    rc, out = snap_json("ls", "--mount", fs.path, *opts)
    assert rc == 0, out
    return out


# ---- names --------------------------------------------------------------------------------

def test_put_names_the_snapshot_by_name_or_by_file_and_none_from_stdin(snapfs, workdir):
    src = write(os.path.join(workdir, "mcp.json"), b'{"mcpServers": {}}')
    assert snap("put", "--mount", snapfs.path, src).returncode == 0
    assert snap("put", "--mount", snapfs.path, "--name", "tokens.v2", "-",
                input="secret").returncode == 0
    assert snap("put", "--mount", snapfs.path, "-", input="anonymous").returncode == 0
    got = {e["sha256"]: e["name"] for e in listed(snapfs)["snapshots"]}
    assert got == {sha256_hex(b'{"mcpServers": {}}'): "mcp.json",
                   sha256_hex(b"secret"): "tokens.v2", sha256_hex(b"anonymous"): None}
    # The daemon keeps it: the xattr, as an export titles it.
    assert os.getxattr(snapfs.p(sha256_hex(b"secret")), "user.snapfs.name") == b"tokens.v2"
    assert b"user.snapfs.name" not in b"\0".join(
        n.encode() for n in os.listxattr(snapfs.p(sha256_hex(b"anonymous"))))


@pytest.mark.parametrize("name", ["", ".hidden", "_scratch", "a/b", "x" * 65, "sp ace"])
def test_put_refuses_a_name_outside_the_grammar_and_publishes_nothing(snapfs, name):
    rc, out = snap_json("put", "--mount", snapfs.path, "--name", name, "-", input="bytes")
    assert rc == 2 and out["error"] == "usage" and "--name" in out["message"], out
    assert sorted(os.listdir(snapfs.p())) == [".control", ".staging"]  # nothing published
    # The same bytes under a name of the grammar: published.
    rc, out = snap_json("put", "--mount", snapfs.path, "--name", "x" * 64, "-", input="bytes")
    assert rc == 0 and out["snapshot"]["name"] == "x" * 64, out


def test_content_published_before_keeps_its_first_name(snapfs):
    assert snap("put", "--mount", snapfs.path, "--name", "first", "-", input="same").returncode == 0
    r = snap("put", "--mount", snapfs.path, "--name", "second", "-", input="same")
    assert r.returncode == 0 and r.stderr == "snapfs put: already published, named first\n"
    rc, out = snap_json("put", "--mount", snapfs.path, "--name", "second", "-", input="same")
    assert rc == 0 and out["already_published"] and out["snapshot"]["name"] == "first", out


def test_a_name_taken_by_a_staging_file_is_ebusy_and_free_again_it_publishes(snapfs):
    snapfs.stage(b"half written", "cfg")
    rc, out = snap_json("put", "--mount", snapfs.path, "--name", "cfg", "-", input="new")
    assert rc == 1 and out["error"] == "EBUSY" and out["reasons"][0]["code"] == "staging", out
    assert "--staging-ttl" in out["reasons"][0]["message"]
    os.unlink(snapfs.p(".staging/cfg"))
    rc, out = snap_json("put", "--mount", snapfs.path, "--name", "cfg", "-", input="new")
    assert rc == 0 and out["snapshot"]["name"] == "cfg", out


def test_import_brings_each_layer_title_back_as_the_name(mount_snapfs, workdir):
    src, dst = mount_snapfs(name="src"), mount_snapfs(name="dst")
    assert snap("put", "--mount", src.path, "--name", "mcp.json", "-", input="{}").returncode == 0
    layout = os.path.join(workdir, "layout")
    rc, out = snap_json("export", "--mount", src.path, f"oci:{layout}:v1")
    assert rc == 0 and [s["name"] for s in out["snapshots"]] == ["mcp.json"], out
    rc, out = snap_json("import", "--mount", dst.path, f"oci:{layout}:v1")
    assert rc == 0 and [s["name"] for s in out["snapshots"]] == ["mcp.json"], out
    assert set(out["snapshots"][0]) == {"sha256", "size", "dev", "ino", "name", "published",
                                        "publisher", "binding", "already_published"}
    assert list(names(dst)) == ["mcp.json"]


# ---- ls -----------------------------------------------------------------------------------

def test_ls_shows_name_human_size_age_and_publisher(mount_snapfs, workdir):
    fs = mount_snapfs("--max-snapshot-size", "1M")
    write(os.path.join(workdir, "big.bin"), b"b" * 300000)
    assert snap("put", "--mount", fs.path, os.path.join(workdir, "big.bin")).returncode == 0
    assert snap("put", "--mount", fs.path, "--name", "small", "-", input="s" * 1536).returncode == 0
    lines = snap("ls", "--mount", fs.path).stdout.split("\n\n")[0].splitlines()
    assert lines[0].split() == ["SHA256", "NAME", "SIZE", "AGE", "PUBLISHER"]
    rows = [line.split() for line in lines[1:]]
    assert [r[:3] for r in rows] == [[sha256_hex(b"b" * 300000)[:12], "big.bin", "293K"],
                                     [sha256_hex(b"s" * 1536)[:12], "small", "1.5K"]]
    assert all(re.fullmatch(r"[0-9]+[smhdw]", r[3]) for r in rows), rows
    assert [r[4] for r in rows] == ["root", "root"]
    full = snap("ls", "--mount", fs.path, "--no-trunc").stdout.splitlines()[1].split()[0]
    assert full == sha256_hex(b"b" * 300000)


def test_ls_filters_by_name_and_sorts_by_name_size_or_age(snapfs):
    for name, data in (("b-cfg", "22"), ("a-cfg", "333"), ("other", "1")):
        assert snap("put", "--mount", snapfs.path, "--name", name, "-", input=data).returncode == 0
    pick = lambda *o: [e["name"] for e in listed(snapfs, *o)["snapshots"]]  # noqa: E731
    assert pick() == ["b-cfg", "a-cfg", "other"]  # publishing order
    assert pick("--name", "*-cfg") == ["b-cfg", "a-cfg"]
    assert listed(snapfs, "--name", "*-cfg")["hidden"] == 1
    assert pick("--sort", "name") == ["a-cfg", "b-cfg", "other"]
    assert pick("--sort", "size") == ["a-cfg", "b-cfg", "other"]
    assert pick("--sort", "age") == ["other", "a-cfg", "b-cfg"]
    rc, out = snap_json("ls", "--mount", snapfs.path, "--sort", "colour")
    assert rc == 2 and out["error"] == "usage" and "name, size or age" in out["message"]


def test_ls_hides_what_an_import_keeps_for_itself_unless_asked(mount_snapfs, workdir):
    src, dst = mount_snapfs(name="src"), mount_snapfs(name="dst")
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    assert snap("put", "--mount", src.path, "--name", "mcp.json", "-", input="{}").returncode == 0
    layout = os.path.join(workdir, "layout")
    assert snap("export", "--mount", src.path, "--sign", key, f"oci:{layout}:v1").returncode == 0
    rc, out = snap_json("import", "--mount", dst.path, "--verify-key", key + ".pub",
                        f"oci:{layout}:v1")
    assert rc == 0, out
    kinds = lambda *o: sorted((e["name"], e["kind"])  # noqa: E731
                              for e in listed(dst, *o)["snapshots"])
    assert kinds() == [("mcp.json", "content")]
    assert listed(dst)["hidden"] == 2
    assert kinds("--all") == [("manifest.json", "manifest"), ("mcp.json", "content"),
                              ("signature.json", "signature")]
    assert kinds("--kind", "signature", "--kind", "manifest") == \
        [("manifest.json", "manifest"), ("signature.json", "signature")]
    r = snap("ls", "--mount", dst.path)
    assert "2 snapshots of other kinds" in r.stderr and "--all" in r.stderr
    assert "KIND" in snap("ls", "--mount", dst.path, "--all").stdout.splitlines()[0]
    # The daemon says the kind, by the one classifier every client uses.
    digest = [e for e in listed(dst, "--all")["snapshots"] if e["kind"] == "manifest"][0]
    assert os.getxattr(dst.p(digest["sha256"]), "user.snapfs.kind") == b"manifest"


def test_ls_ages_from_the_first_publish_and_keeps_it_across_a_restart(mount_snapfs, workdir):
    store = os.path.join(workdir, "store")
    fs = mount_snapfs("--store", store)
    assert snap("put", "--mount", fs.path, "--name", "cfg", "-", input="kept").returncode == 0
    before = listed(fs)["snapshots"]
    published = os.stat(fs.p(sha256_hex(b"kept"))).st_mtime
    assert fs.stop() == 0
    # Wait for the state that tells them apart: a restart now is seconds after the publish.
    while time.time() < published + 2.5:
        time.sleep(0.05)
    again = mount_snapfs("--store", store)
    after = listed(again)["snapshots"]
    assert [(e["name"], e["published"]) for e in after] == \
        [(e["name"], e["published"]) for e in before] == \
        [("cfg", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published)))]
    age = snap("ls", "--mount", again.path).stdout.splitlines()[1].split()[3]
    assert re.fullmatch(r"[2-9]s|[1-9][0-9]+s|[0-9]+[mhdw]", age), age


# ---- rm -----------------------------------------------------------------------------------

def test_rm_by_name_digest_prefix_and_binding(snapfs):
    for name, data in (("one", "1"), ("two", "2"), ("three", "3")):
        assert snap("put", "--mount", snapfs.path, "--name", name, "-", input=data).returncode == 0
    binding = os.getxattr(snapfs.p(sha256_hex(b"3")), "user.snapfs.binding").decode()
    rc, out = snap_json("rm", "--mount", snapfs.path, "one", sha256_hex(b"2")[:12], binding)
    assert rc == 0 and sorted(s["name"] for s in out["snapshots"]) == ["one", "three", "two"]
    assert all(s["removed"] and s["error"] is None for s in out["snapshots"]), out
    assert listed(snapfs)["snapshots"] == []


def test_rm_of_a_name_of_several_is_enotuniq_unless_all(snapfs):
    for data in ("a", "b"):
        assert snap("put", "--mount", snapfs.path, "--name", "cfg", "-", input=data).returncode == 0
    assert snap("put", "--mount", snapfs.path, "--name", "keep", "-", input="k").returncode == 0
    rc, out = snap_json("rm", "--mount", snapfs.path, "cfg")
    assert rc == 1 and out["error"] == "ENOTUNIQ" and out["reasons"][0]["code"] == "ambiguous"
    assert "--all" in out["message"] and out["snapshots"] == []
    assert len(listed(snapfs)["snapshots"]) == 3  # nothing removed
    rc, out = snap_json("rm", "--mount", snapfs.path, "--all", "cfg")
    assert rc == 0 and len(out["snapshots"]) == 2, out
    assert [e["name"] for e in listed(snapfs)["snapshots"]] == ["keep"]


def test_rm_of_a_target_that_names_nothing_removes_nothing(snapfs):
    assert snap("put", "--mount", snapfs.path, "--name", "real", "-", input="r").returncode == 0
    r = snap("rm", "--mount", snapfs.path, "real", "nosuch")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("snapfs rm: nothing removed: no snapshot named nosuch")
    rc, out = snap_json("rm", "--mount", snapfs.path, "real", "nosuch")
    assert rc == 1 and out["error"] == "ENOENT" and out["reasons"][0]["code"] == "no-such-snapshot"
    assert [e["name"] for e in listed(snapfs)["snapshots"]] == ["real"]
    # A binding of the same digest at another inode names another snapshot: ESTALE.
    binding = os.getxattr(snapfs.p(sha256_hex(b"r")), "user.snapfs.binding").decode()
    stale = re.sub(r"ino=\d+", "ino=999999", binding)
    rc, out = snap_json("rm", "--mount", snapfs.path, stale)
    assert rc == 1 and out["error"] == "ESTALE", out
    rc, out = snap_json("rm", "--mount", snapfs.path, "--dry-run", binding)
    assert rc == 0 and out["dry_run"] and out["snapshots"][0]["removed"] is False, out
    assert snap("rm", "--mount", snapfs.path, binding).stdout.startswith("removed ")


def test_rm_by_a_uid_that_may_not_remove_is_eperm_and_the_owner_removes(mount_snapfs):
    fs = mount_snapfs("--allow-other", "--publishers", "any")
    put(fs, b"held by 1000", uid=NOBODY_UID)
    r = subprocess.run(["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}",
                        "--clear-groups", str(SNAPFS), "rm", "--mount", fs.path, "--owner", "0",
                        "--json", sha256_hex(b"held by 1000")],
                       capture_output=True, text=True, timeout=60)
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["error"] == "EPERM", out
    assert out["snapshots"][0]["error"] == "EPERM"
    assert "owner and root" in out["reasons"][0]["message"] == out["snapshots"][0]["message"]
    assert os.path.exists(fs.p(sha256_hex(b"held by 1000")))
    rc, out = snap_json("rm", "--mount", fs.path, sha256_hex(b"held by 1000"))
    assert rc == 0 and not os.path.exists(fs.p(sha256_hex(b"held by 1000")))


# ---- prune --------------------------------------------------------------------------------

def test_prune_by_kind_removes_an_imports_bookkeeping_and_keeps_content(mount_snapfs, workdir):
    src, dst = mount_snapfs(name="src"), mount_snapfs(name="dst")
    key = os.path.join(workdir, "key")
    assert snap("keygen", key).returncode == 0
    assert snap("put", "--mount", src.path, "--name", "cfg", "-", input="{}").returncode == 0
    layout = os.path.join(workdir, "layout")
    assert snap("export", "--mount", src.path, "--sign", key, f"oci:{layout}:v1").returncode == 0
    assert snap("import", "--mount", dst.path, f"oci:{layout}:v1").returncode == 0
    rc, out = snap_json("prune", "--mount", dst.path, "--dry-run", "--kind", "signature",
                        "--kind", "manifest")
    assert rc == 0 and sorted(s["kind"] for s in out["snapshots"]) == ["manifest", "signature"]
    assert len(listed(dst, "--all")["snapshots"]) == 3
    r = snap("prune", "--mount", dst.path, "--kind", "signature", "--kind", "manifest")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2, r.stdout
    assert [(e["name"], e["kind"]) for e in listed(dst, "--all")["snapshots"]] == \
        [("cfg", "content")]


def test_prune_older_than_removes_only_what_is_older(snapfs):
    assert snap("put", "--mount", snapfs.path, "--name", "old", "-", input="old").returncode == 0
    published = os.stat(snapfs.p(sha256_hex(b"old"))).st_mtime
    # Wait for the state asserted: the clock past the first publish by more than a second.
    while time.time() < published + 1.5:
        time.sleep(0.05)
    assert snap("put", "--mount", snapfs.path, "--name", "new", "-", input="new").returncode == 0
    # Days and weeks, the units people prune by, as every duration takes them.
    for age in ("1h", "7d", "2w"):
        rc, out = snap_json("prune", "--mount", snapfs.path, "--older-than", age)
        assert rc == 0 and out["snapshots"] == [], (age, out)
    rc, out = snap_json("prune", "--mount", snapfs.path, "--older-than", "1")
    assert rc == 0 and [s["name"] for s in out["snapshots"]] == ["old"], out
    assert [e["name"] for e in listed(snapfs)["snapshots"]] == ["new"]


@pytest.mark.parametrize("args,words", [
    ([], "--older-than DURATION, --kind KIND"),
    (["--older-than", "7D"], "--older-than: invalid duration '7D': expected digits"),
    (["--kind", "config"], "not content, signature or manifest"),
])
def test_prune_without_a_criterion_or_with_a_bad_one_is_a_usage_error(snapfs, args, words):
    assert snap("put", "--mount", snapfs.path, "-", input="stays").returncode == 0
    rc, out = snap_json("prune", "--mount", snapfs.path, *args)
    assert rc == 2 and out["error"] == "usage" and words in out["message"], out
    assert len(listed(snapfs)["snapshots"]) == 1


# ---- help, version, completion ------------------------------------------------------------

def test_help_and_version_say_what_a_newcomer_asks():
    r = snap("help", "put")
    assert r.returncode == 0 and r.stdout == snap("put", "--help").stdout
    assert snap("help").stdout.startswith("Usage: snapfs ")
    for cmd in ("rm", "prune", "ls", "version"):
        assert f"\n  {cmd} " in snap("help").stdout
    r = snap("help", "nosuch")
    assert r.returncode == 2 and r.stderr == (
        "snapfs help: unknown command 'nosuch'; run 'snapfs help' for the list\n")
    assert snap("version").stdout == snap("--version").stdout
    assert re.fullmatch(r"snapfs [0-9]+\.[0-9]+\.[0-9]+\n", snap("version").stdout)
    rc, out = snap_json("version")
    assert rc == 0 and "snapfs " + out["version"] + "\n" == snap("version").stdout


def test_a_usage_error_is_one_line_and_points_at_help(snapfs):
    r = snap("ls", "--mount", snapfs.path, "--colour")
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["snapfs ls: unknown option '--colour'",
                                     "Run 'snapfs ls --help' for its options."]


def complete(*words):
    """COMPREPLY of the installed completion for the command line words (the last one being
    completed), as bash computes it."""
    script = (f"source {COMPLETION}\n"
              "COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _snapfs\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = run("bash", "-c", script, "bash", *words)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_bash_completion_completes_commands_options_values_and_names(snapfs):
    r = run("bash", "-c", f"source {COMPLETION}; complete -p snapfs")
    assert r.stdout.strip() == "complete -F _snapfs snapfs"
    assert complete("snapfs", "pr") == ["prune"]
    # Every command the command lists, read from it: one added later completes too.
    listed = run(SNAPFS, "--help").stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    assert complete(str(SNAPFS), "") == [line.split()[0] for line in listed.splitlines()] + [
        "--help", "--version"]
    assert complete("snapfs", "help", "ve") == ["verify", "version"]
    assert complete(str(SNAPFS), "ls", "--so") == ["--sort"]
    assert complete(str(SNAPFS), "prune", "--older") == ["--older-than"]
    assert complete("snapfs", "ls", "--kind", "") == ["content", "signature", "manifest"]
    assert complete("snapfs", "ls", "--sort", "a") == ["age"]
    for name in ("mcp.json", "mcp.yaml", "other"):
        assert snap("put", "--mount", snapfs.path, "--name", name, "-",
                    input=name).returncode == 0
    assert complete(str(SNAPFS), "rm", "--mount", snapfs.path, "mcp") == ["mcp.json", "mcp.yaml"]


def test_bash_completion_completes_scopes_and_their_names(snapfs, workdir):
    assert complete("snapfs", "scope", "") == ["create", "ls", "rm"]
    assert complete(str(SNAPFS), "scope", "create", "--vi") == ["--view"]
    assert complete(str(SNAPFS), "put", "--sc") == ["--scope"]
    view = os.path.join(workdir, "views", "sandbox-a")
    os.makedirs(os.path.dirname(view))
    assert snap("scope", "create", "--mount", snapfs.path, "sandbox-a", "--view",
                view).returncode == 0
    try:
        # The scopes snapfs scope ls shows on this mount: what each scope operand takes.
        m = ("--mount", snapfs.path)
        assert complete(str(SNAPFS), "scope", "rm", *m, "sand") == ["sandbox-a"]
        assert complete(str(SNAPFS), "grant", *m, "") == ["sandbox-a"]
        assert complete(str(SNAPFS), "put", *m, "--scope", "s") == ["sandbox-a"]
        # After the scope, a digest or an entry of the user's own.
        assert complete(str(SNAPFS), "revoke", *m, "sandbox-a", "") == []
    finally:
        assert snap("scope", "rm", "--mount", snapfs.path, "sandbox-a").returncode == 0


def test_bash_completion_is_installed_with_the_command(workdir):
    dest = os.path.join(workdir, "dest")
    r = run("meson", "install", "-C", os.environ.get("SNAPFS_BUILD", ROOT / "build"),
            "--no-rebuild", "--destdir", dest, "--quiet", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    found = [os.path.join(top, f) for top, _, files in os.walk(dest) for f in files
             if top.endswith("/share/bash-completion/completions")]
    assert [os.path.basename(f) for f in found] == ["snapfs"]
    with open(found[0]) as a, open(COMPLETION) as b:
        assert a.read() == b.read()
