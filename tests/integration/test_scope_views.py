# SPDX-License-Identifier: MIT
"""The client side of scopes on mounts a test controls: an impostor FUSE server (fakesnap,
mounted by root, so the mount check trusts it) plays a scope's view or a main mount's control
file, to reach every check a client makes about them.

The mount check knowing views: a writable view of a scope that does not publish is refused
(scope-writable) by snapfs check and by every client, beside the same view read-only, or
publishing; the scope's name is reported. The verified open through an entry: every refusal
(no digest, another digest, a symlink, a FIFO, a readable mode, a digest name that names
another snapshot) beside the good entry, through both libsnapfs clients and snapfs exec. The
control channel: the daemon's refusal mapped to its errno, and replies that are not the
protocol's refused with EPROTO, never believed."""
import json
import os
import subprocess

import pytest

from clients import APICLIENT, FAKESNAP, LIBSNAPFS, PYCLIENT, Client, codes, fakesnap
from snaptest import SNAPFS, run, sha256_hex

HEX_A = sha256_hex(b"a")


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    for tool in (APICLIENT, FAKESNAP, LIBSNAPFS, PYCLIENT, SNAPFS):
        assert tool.exists(), f"build first: {tool} missing"


@pytest.fixture(params=["c", "python"])
def client(request):
    return Client(request.param)


def snap(*args, **kw):
    return run(SNAPFS, *args, **kw)


def check_json(path, *opts):
    r = snap("check", "--json", *opts, path)
    return r.returncode, json.loads(r.stdout)


def source(workdir, name, data):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def finding_codes(out):
    return {x["code"] for x in out["reasons"]}


# ---- the mount check knows scope views -----------------------------------------------------

def test_a_writable_view_of_a_scope_that_does_not_publish_is_scope_writable(workdir):
    view = os.path.join(workdir, "view")
    with fakesnap(view, "scope=sandbox-a"):
        r = snap("check", view)
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert lines[0] == "scope sandbox-a"
        assert lines[1].startswith("scope-writable: the view of scope sandbox-a is read-write")
        rc, out = check_json(view)
        assert rc == 1 and finding_codes(out) == {"scope-writable"}
        assert out["scope"] == "sandbox-a" and out["scope_publishes"] is False
    # The same view mounted read-only is a compliant snapfs mount, and says whose it is.
    with fakesnap(view, "ro", "scope=sandbox-a"):
        r = snap("check", view)
        assert r.returncode == 0 and r.stdout == "scope sandbox-a\n", r.stdout + r.stderr
        rc, out = check_json(view)
        assert rc == 0 and out["ok"] and out["scope"] == "sandbox-a"


def test_a_writable_view_of_a_scope_that_publishes_is_compliant(workdir):
    view = os.path.join(workdir, "view")
    with fakesnap(view, "scope=sandbox-p", ".staging=dir"):
        rc, out = check_json(view)
        assert rc == 0 and out["ok"], out
        assert out["scope"] == "sandbox-p" and out["scope_publishes"] is True


def test_a_mount_that_names_no_scope_is_no_view(workdir):
    main = os.path.join(workdir, "main")
    with fakesnap(main, ".staging=dir"):
        r = snap("check", main)
        assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
        rc, out = check_json(main)
        assert rc == 0 and out["scope"] is None and out["scope_publishes"] is None
    # Without the probe nothing is asked of the daemon: a view is then not known as one.
    with fakesnap(main, "scope=sandbox-a"):
        rc, out = check_json(main, "--no-probe")
        assert rc == 0 and out["scope"] is None
        rc, out = check_json(main)
        assert rc == 1 and finding_codes(out) == {"scope-writable"}


def test_every_client_refuses_a_writable_view_of_a_scope_that_does_not_publish(client,
                                                                               workdir):
    view = os.path.join(workdir, "view")
    src = source(workdir, "a", b"a")
    with fakesnap(view, "scope=sandbox-a", f"{HEX_A}=reg:0:{src}"):
        out = client("digest", view, HEX_A)
        assert out["error"] == "EMEDIUMTYPE" and codes(out) == {"scope-writable"}
        r = snap("verify", "--mount", view, HEX_A)
        assert r.returncode == 1 and "scope-writable" in r.stdout + r.stderr
        r = snap("exec", "--mount", view, "--entry", HEX_A, "--", "true")
        assert r.returncode == 125 and "scope-writable" in r.stderr
    # Read-only, the same view serves the same snapshot to every client.
    with fakesnap(view, "ro", "scope=sandbox-a", f"{HEX_A}=reg:0:{src}"):
        assert client("digest", view, HEX_A)["content_hex"] == b"a".hex()
        assert snap("verify", "--mount", view, HEX_A).returncode == 0


# ---- the verified open through an entry ----------------------------------------------------

def test_open_entry_verifies_the_snapshot_an_entry_names_against_its_own_digest(client,
                                                                                workdir):
    view = os.path.join(workdir, "view")
    src = source(workdir, "cfg", b'{"mcpServers": {}}')
    digest = sha256_hex(b'{"mcpServers": {}}')
    with fakesnap(view, "ro", "scope=sandbox-a", f"mcp=reg:0:{src}", f"sha256:mcp={digest}"):
        st = os.stat(os.path.join(view, "mcp"))
        out = client("open-entry", view, "mcp")
        assert out["content_hex"] == b'{"mcpServers": {}}'.hex()
        assert out["binding"] == (f"sha256={digest} size={st.st_size} "
                                  f"dev={os.major(st.st_dev)}:{os.minor(st.st_dev)} "
                                  f"ino={st.st_ino}")
        # snapfs exec hands the child that very descriptor, the binding in its variable.
        r = snap("exec", "--mount", view, "--entry", "mcp", "--", "sh", "-c",
                 'cat "$1"; printf "\\n%s" "$SNAPFS_BINDING"', "sh", "{}")
        assert r.returncode == 0, r.stderr
        assert r.stdout == '{"mcpServers": {}}\n' + out["binding"]


def test_an_entry_whose_content_is_not_its_digest_is_refused(client, workdir):
    view = os.path.join(workdir, "view")
    src = source(workdir, "cfg", b"served bytes")
    with fakesnap(view, "ro", f"mcp=reg:0:{src}", f"sha256:mcp={sha256_hex(b'other bytes')}",
                  f"good=reg:0:{src}", f"sha256:good={sha256_hex(b'served bytes')}"):
        out = client("open-entry", view, "mcp")
        assert out["error"] == "EBADMSG" and codes(out) == {"digest-mismatch"}
        r = snap("exec", "--mount", view, "--entry", "mcp", "--", "true")
        assert r.returncode == 125 and "digest-mismatch" in r.stderr
        assert client("open-entry", view, "good")["content_hex"] == b"served bytes".hex()


@pytest.mark.parametrize("digest", [None, "not-a-digest", HEX_A.upper()],
                         ids=["none", "text", "uppercase"])
def test_an_entry_without_a_digest_of_its_own_is_ebadmsg(client, workdir, digest):
    view = os.path.join(workdir, "view")
    src = source(workdir, "a", b"a")
    entries = [f"mcp=reg:0:{src}", f"good=reg:0:{src}", f"sha256:good={HEX_A}"]
    if digest:
        entries.append(f"sha256:mcp={digest}")
    with fakesnap(view, "ro", *entries):
        out = client("open-entry", view, "mcp")
        assert out["error"] == "EBADMSG" and codes(out) == {"entry"}
        assert client("open-entry", view, "good")["content_hex"] == b"a".hex()


def test_an_entry_that_is_a_symlink_fifo_or_readable_file_is_refused(client, workdir):
    view = os.path.join(workdir, "view")
    src = source(workdir, "a", b"a")
    with fakesnap(view, "ro", "link=link:/etc/hostname", "fifo=fifo",
                  f"readable=reg:0444:{src}", f"sha256:readable={HEX_A}",
                  f"good=reg:0:{src}", f"sha256:good={HEX_A}"):
        out = client("open-entry", view, "link")
        assert out["error"] == "ELOOP" and codes(out) == {"open"}
        out = client("open-entry", view, "fifo")  # a blocking open would hit the timeout
        assert out["error"] == "EINVAL" and codes(out) == {"not-regular"}
        out = client("open-entry", view, "readable")
        assert out["error"] == "EPERM" and codes(out) == {"mode"}
        out = client("open-entry", view, "absent")
        assert out["error"] == "ENOENT" and codes(out) == {"open"}
        assert client("open-entry", view, "good")["ok"]


def test_an_entry_named_as_a_digest_must_be_that_snapshot(client, workdir):
    view = os.path.join(workdir, "view")
    src = source(workdir, "a", b"a")
    other = sha256_hex(b"b")
    with fakesnap(view, "ro", f"{other}=reg:0:{src}", f"sha256:{other}={HEX_A}",
                  f"{HEX_A}=reg:0:{src}", f"sha256:{HEX_A}={HEX_A}"):
        out = client("open-entry", view, other)
        assert out["error"] == "ESTALE" and codes(out) == {"identity"}
        assert client("open-entry", view, HEX_A)["content_hex"] == b"a".hex()


def test_audit_refuses_an_entry_that_names_no_snapshot_the_view_lists(workdir):
    view = os.path.join(workdir, "view")
    src = source(workdir, "a", b"a")
    with fakesnap(view, "ro", "scope=sandbox-a", f"{HEX_A}=reg:0:{src}",
                  f"sha256:{HEX_A}={HEX_A}", f"mcp=reg:0:{src}",
                  f"sha256:mcp={sha256_hex(b'elsewhere')}"):
        r = snap("audit", "--mount", view, "--json")
        out = json.loads(r.stdout)
        assert r.returncode == 1
        rows = {c["check"]: (c["passed"], c["failed"]) for c in out["checks"]}
        assert rows["entry names a snapshot"] == (0, 1), rows
        assert any(p["entry"] == "mcp" and p["code"] == "entry" for p in out["problems"]), out
    # Outside a scope's view the same name is no entry: a name that is not a snapshot's.
    with fakesnap(view, "ro", f"{HEX_A}=reg:0:{src}", f"mcp=reg:0:{src}"):
        out = json.loads(snap("audit", "--mount", view, "--json").stdout)
        assert any(p["entry"] == "mcp" and p["code"] == "unexpected-entry"
                   for p in out["problems"]), out


@pytest.mark.parametrize("entry", ["../etc", "a/b", ".staging", "", "x" * 65])
def test_an_entry_outside_the_name_grammar_is_einval_before_the_mount(client, workdir, entry):
    out = client("open-entry", os.path.join(workdir, "nowhere"), entry)
    assert out["error"] == "EINVAL" and codes(out) == {"invalid-argument"}
    r = snap("exec", "--mount", workdir, "--entry", entry, "--", "true")
    assert r.returncode == 125 and "invalid-argument" in r.stderr


# ---- the control channel, answered by a daemon the test writes -----------------------------

GRANT_A = {"sha256": HEX_A, "size": 1, "ino": 7, "entry": None}
SCOPE_A = {"name": "sandbox-a", "view": "/run/views/a", "dev": "0:99", "uids": [1000],
           "gid": None, "publish": False, "until_pid": None,
           "limits": {"max_snapshots": 4, "max_bytes": None, "max_staging": None,
                      "max_staging_bytes": None, "min_bytes": 2048},
           "usage": {"snapshots": 0, "bytes": 0, "staging": 0, "staging_bytes": 0},
           "grants": 1}


def unseen(grant, dev=None):
    """A grant the clients could not look up (no such view here, no such snapshot on the
    main mount): the one snapshot object from the daemon's record alone, the view's dev when
    the daemon names one; what nobody said null."""
    binding = (f"sha256={grant['sha256']} size={grant['size']} dev={dev} ino={grant['ino']}"
               if dev else None)
    return {"sha256": grant["sha256"], "size": grant["size"], "dev": dev, "ino": grant["ino"],
            "name": None, "published": None, "publisher": None, "binding": binding,
            "entry": grant["entry"]}


def control_mount(workdir, reply):
    """A main mount whose .control answers every request with reply (bytes or an object)."""
    data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
    return fakesnap(os.path.join(workdir, "main"), ".staging=dir",
                    f".control=ctl:{source(workdir, 'reply', data)}")


def test_a_refusal_by_the_daemon_is_its_errno_and_message(client, workdir):
    with control_mount(workdir, {"ok": False, "error": "EEXIST",
                                 "message": "scope sandbox-a exists"}) as _:
        main = os.path.join(workdir, "main")
        out = client("scope-create", main, "sandbox-a", "/run/views/a")
        assert out["error"] == "EEXIST"
        assert out["reasons"] == [{"code": "refused", "message": "scope sandbox-a exists"}]
        r = snap("scope", "create", "--mount", main, "sandbox-a", "--view", "/run/views/a",
                 "--json")
        assert r.returncode == 1
        got = json.loads(r.stdout)
        assert got["error"] == "EEXIST" and got["scope"] is None
        assert got["reasons"] == [{"code": "refused", "message": "scope sandbox-a exists"}]


@pytest.mark.parametrize("reply", [
    b"not json", b"", b'{"ok": true} {"ok": true}', b"[]",
    json.dumps({"ok": False, "error": "ENOSUCHERRNO", "message": "x"}).encode(),
    json.dumps({"ok": True, "scopes": [{**SCOPE_A, "name": "../a"}]}).encode(),
    json.dumps({"ok": True, "scopes": {"a": 1}}).encode(),
], ids=["text", "empty", "two-objects", "array", "unknown-errno", "bad-name", "not-a-list"])
def test_a_reply_that_is_not_the_protocols_is_eproto(client, workdir, reply):
    with control_mount(workdir, reply):
        main = os.path.join(workdir, "main")
        out = client("scope-list", main)
        assert out["error"] == "EPROTO" and codes(out) == {"reply"}
        r = snap("scope", "ls", "--mount", main, "--json")
        assert r.returncode == 1 and json.loads(r.stdout)["error"] == "EPROTO"
    # The same channel with a reply of the protocol's is read and printed.
    with control_mount(workdir, {"ok": True, "error": None, "message": None,
                                 "scopes": [SCOPE_A]}):
        out = client("scope-list", os.path.join(workdir, "main"))
        assert out["scopes"] == [SCOPE_A]


def test_a_grant_reply_naming_another_grant_is_not_believed(client, workdir):
    other = {**GRANT_A, "sha256": sha256_hex(b"other")}
    main = os.path.join(workdir, "main")
    with control_mount(workdir, {"ok": True, "grant": other}):
        out = client("grant", main, "sandbox-a", HEX_A)
        assert out["error"] == "EPROTO" and codes(out) == {"reply"}
        r = snap("grant", "--mount", main, "sandbox-a", HEX_A)
        assert r.returncode == 1 and "reply:" in r.stderr
    with control_mount(workdir, {"ok": True, "grant": {**GRANT_A, "entry": "mcp"}}):
        out = client("grant", main, "sandbox-a", HEX_A)  # asked without the entry
        assert out["error"] == "EPROTO"
        out = client("grant", "--entry", "mcp", main, "sandbox-a", HEX_A)
        # This daemon answers the scope-show that finds the view with a grant: no view.
        assert out["grant"] == unseen({**GRANT_A, "entry": "mcp"})
    with control_mount(workdir, {"ok": True, "grant": GRANT_A}):
        assert client("grant", main, "sandbox-a", HEX_A)["grant"] == unseen(GRANT_A)
        out = json.loads(snap("grant", "--mount", main, "sandbox-a", HEX_A, "--json").stdout)
        assert out["ok"] and out["grant"] == unseen(GRANT_A)
        r = snap("grant", "--mount", main, "sandbox-a", HEX_A)
        assert r.returncode == 0 and r.stdout == f"sha256={HEX_A} size=1 ino=7\n", r.stderr


def test_scope_ls_prints_what_the_daemon_reports(workdir):
    main = os.path.join(workdir, "main")
    with control_mount(workdir, {"ok": True, "scopes": [SCOPE_A]}):
        r = snap("scope", "ls", "--mount", main)
        assert r.returncode == 0, r.stderr
        header, row = r.stdout.splitlines()
        assert header.split() == ["NAME", "VIEW", "DEV", "PUBLISH", "GRANTS", "PUBLISHED",
                                  "PUBLISHED-BYTES", "USERS"]
        assert row.split() == ["sandbox-a", "/run/views/a", "0:99", "no", "1", "0", "0", "1000"]
        out = json.loads(snap("scope", "ls", "--mount", main, "--json").stdout)
        assert out["ok"] and out["scopes"] == [SCOPE_A]
    with control_mount(workdir, {"ok": True, "scope": SCOPE_A, "grants": [GRANT_A]}):
        r = snap("scope", "ls", "--mount", main, "sandbox-a")
        assert r.returncode == 0, r.stderr
        assert "view       /run/views/a\n" in r.stdout
        assert ("limits     snapshots=4 bytes=- staging=- staging-bytes=- min-bytes=2048\n"
                in r.stdout)
        assert r.stdout.endswith(f"sha256={HEX_A} size=1 ino=7\n")
        out = json.loads(snap("scope", "ls", "--mount", main, "sandbox-a", "--json").stdout)
        # The view the daemon names is not there: the grant is its record, with its dev.
        assert out["scope"] == SCOPE_A and out["grants"] == [unseen(GRANT_A, "0:99")]


def test_a_scope_binding_through_a_view_the_daemon_does_not_serve_the_scope_on_is_stale(
        client, workdir):
    """The daemon names the scope's view, its device and the grant's inode number there (a
    view numbers its own); a mount of the same trusted owner at that path with another device
    (another daemon's view, say), or serving the digest under another number, binds nothing
    of it, and a digest the scope has no grant of is ENOENT."""
    view = os.path.join(workdir, "view")
    src = source(workdir, "a", b"a")
    with fakesnap(view, "ro", "scope=sandbox-a", f"{HEX_A}=reg:0:{src}"):
        st = os.stat(os.path.join(view, HEX_A))
        # The main mount's binding: its own device and number, not the view's.
        binding = f"sha256={HEX_A} size=1 dev=0:1 ino=77"
        served = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        for dev, ino, want in (("0:999", st.st_ino, "ESTALE"), (served, st.st_ino + 1, "ESTALE"),
                               (served, None, "ENOENT"), (served, st.st_ino, None)):
            grants = [] if ino is None else [{"sha256": HEX_A, "size": 1, "ino": ino}]
            with control_mount(workdir, {"ok": True, "grants": grants,
                                         "scope": {**SCOPE_A, "view": view, "dev": dev}}):
                out = client("scope-binding", os.path.join(workdir, "main"), "sandbox-a",
                             binding)
                if want is None:
                    assert out["view"] == view and out["binding"] == (
                        f"sha256={HEX_A} size=1 dev={served} ino={st.st_ino}")
                elif want == "ESTALE":
                    assert out["error"] == "ESTALE" and codes(out) == {"identity"}, out
                else:
                    assert out["error"] == "ENOENT" and codes(out) == {"open"}, out
            os.unlink(os.path.join(workdir, "reply"))


def test_a_mount_without_a_control_file_is_eopnotsupp(client, workdir):
    main = os.path.join(workdir, "main")
    with fakesnap(main, ".staging=dir"):
        out = client("scope-list", main)
        assert out["error"] == "EOPNOTSUPP" and codes(out) == {"control"}
        r = snap("scope", "ls", "--mount", main, "--json")
        assert r.returncode == 1 and json.loads(r.stdout)["error"] == "EOPNOTSUPP"
    with control_mount(workdir, {"ok": True, "scopes": []}):
        assert client("scope-list", main)["scopes"] == []
