# SPDX-License-Identifier: MIT
"""One grammar for every client subcommand (--mount, $SNAPFS_MOUNT, a trailing slash, the old
audit operand), one JSON shape for every --json outcome (success, refusal, system and usage
errors), snapfs exec's exit statuses and refused --env names, and option pairs that cannot
work together. The contract is docs/design.md, "Command-line contract"."""
import json
import os
import re
import subprocess
import sys

import pytest

from clients import client_env, PYCLIENT, put, tmpfs
from snaptest import SNAPFS, run, sha256_hex

# Every client subcommand that prints --json, with the operands it needs after the options.
JSON_COMMANDS = ["check", "put", "verify", "ls", "audit"]
SHAPE = ("ok", "error", "message", "reasons")


def snap(*args, **kw):
    return run(SNAPFS, *args, **kw)


def binding_of(fs, digest):
    return os.getxattr(fs.p(digest), "user.snapfs.binding").decode()


def operands(cmd, fs, digest):
    return {"check": [], "put": ["-"], "verify": [binding_of(fs, digest)], "ls": [],
            "audit": []}[cmd]


def shaped(r, ok):
    """The one object on standard output, its four common fields first, ok as asked."""
    out = json.loads(r.stdout)
    assert isinstance(out, dict) and tuple(out)[:4] == SHAPE, out
    assert out["ok"] is ok and (out["error"] is None) == ok, out
    assert (out["message"] is None) == ok, out
    assert all(set(x) >= {"code", "message"} for x in out["reasons"]), out
    return out


def test_the_python_client_takes_snapfs_owner_as_the_command_does(snapfs):
    binding = binding_of(snapfs, put(snapfs, b"cfg"))
    argv = [sys.executable, str(PYCLIENT), "open", snapfs.path, binding]
    for bad in ("any", "00"):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                           env=dict(client_env(), SNAPFS_OWNER=bad))
        assert r.returncode == 2 and f"SNAPFS_OWNER: invalid uid '{bad}'" in r.stderr, r.stderr
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       env=dict(client_env(), SNAPFS_OWNER="0"))
    assert r.returncode == 0 and json.loads(r.stdout)["ok"], r.stderr


@pytest.mark.parametrize("cmd", JSON_COMMANDS)
def test_json_output_is_utf8_whatever_bytes_a_path_holds(cmd, snapfs, workdir):
    """A path that is not UTF-8 went into the JSON as its raw bytes, which strict readers
    refuse; now each bad byte is U+FFFD and the raw bytes are in <field>_hex, as in the audit
    log. Beside it, a path in UTF-8 is printed as it is, with no _hex field."""
    digest = put(snapfs, b"cfg")
    field = "path" if cmd == "check" else "mount"
    for name, text in ((b"not-\xff\xfe-utf8", "not-\ufffd\ufffd-utf8"),
                       ("caf\u00e9".encode(), "caf\u00e9")):
        path = os.path.join(workdir.encode(), name)
        os.mkdir(path)
        argv = [str(SNAPFS).encode(), cmd.encode(), b"--mount", path, b"--json",
                *[a.encode() for a in operands(cmd, snapfs, digest)]]
        r = subprocess.run(argv, input=b"cfg", capture_output=True, timeout=60)
        assert r.returncode == 1, r.stderr
        out = json.loads(r.stdout.decode("utf-8"))  # strict: no raw byte >= 0x80 alone
        assert out[field] == f"{workdir}/{text}", out
        if "\ufffd" not in text:
            assert f"{field}_hex" not in out, out
        else:
            assert out[f"{field}_hex"] == path.hex(), out
        for reason in out["reasons"]:
            if "message_hex" in reason:
                assert bytes.fromhex(reason["message_hex"]).decode(errors="replace") == \
                    reason["message"], reason


@pytest.mark.parametrize("cmd", JSON_COMMANDS)
def test_every_json_success_and_refusal_has_one_shape(cmd, snapfs, workdir):
    digest = put(snapfs, b"cfg")
    good = snap(cmd, "--mount", snapfs.path, "--json", *operands(cmd, snapfs, digest),
                input="cfg")
    assert good.returncode == 0, good.stderr
    shaped(good, True)
    # The same command against a directory that is no mount: refused, exit 1, EMEDIUMTYPE.
    d = os.path.join(workdir, "plain")
    os.mkdir(d)
    bad = snap(cmd, "--mount", d, "--json", *operands(cmd, snapfs, digest), input="cfg")
    assert bad.returncode == 1, bad.stderr
    out = shaped(bad, False)
    assert out["error"] == "EMEDIUMTYPE"
    assert "not-a-mount-point" in {x["code"] for x in out["reasons"]}


@pytest.mark.parametrize("cmd", JSON_COMMANDS)
@pytest.mark.parametrize("args,word", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--mount"], "option '--mount' needs a value"),
    (["--owner", "-1"], "--owner"),
])
def test_every_usage_error_is_json_too_when_json_was_asked_for(cmd, args, word, snapfs):
    digest = put(snapfs, b"cfg")
    r = snap(cmd, "--json", *operands(cmd, snapfs, digest), *args, input="cfg")
    assert r.returncode == 2
    out = shaped(r, False)
    assert out["error"] == "usage" and word in out["message"], out
    assert word in r.stderr  # a person reading the terminal sees it too
    ok = snap(cmd, "--json", "--mount", snapfs.path, *operands(cmd, snapfs, digest),
              input="cfg")
    assert ok.returncode == 0 and shaped(ok, True)


def test_system_errors_are_json_with_the_errno_name(snapfs, workdir):
    r = snap("put", "--mount", snapfs.path, "--json", "/nonexistent")
    assert r.returncode == 2 and shaped(r, False)["error"] == "ENOENT"
    r = snap("check", "--json", "/nonexistent")
    assert r.returncode == 2 and shaped(r, False)["error"] == "ENOENT"
    r = snap("ls", "--mount", "/tmp", "--json")
    assert r.returncode == 1 and shaped(r, False)["error"] == "EMEDIUMTYPE"
    src = os.path.join(workdir, "cfg")
    with open(src, "wb") as f:
        f.write(b"there")
    r = snap("put", "--mount", snapfs.path, "--json", src)
    assert r.returncode == 0 and shaped(r, True)["snapshot"]["sha256"] == sha256_hex(b"there")


OCI_COMMANDS = ["export", "import"]


def exported(fs, workdir):
    """An OCI layout holding the mount's snapshots, for import to read."""
    ref = f"oci:{workdir}/layout:v1"
    r = snap("export", "--mount", fs.path, ref)
    assert r.returncode == 0, r.stderr
    return ref


@pytest.mark.parametrize("cmd", OCI_COMMANDS)
def test_export_and_import_share_the_grammar_and_the_json_shape(cmd, snapfs, workdir):
    put(snapfs, b"cfg")
    ref = exported(snapfs, workdir) if cmd == "import" else f"oci:{workdir}/out:v1"
    env = dict(os.environ, SNAPFS_MOUNT=snapfs.path + "/")  # a trailing slash, from the env
    good = snap(cmd, "--json", ref, env=env)
    assert good.returncode == 0, good.stderr
    shaped(good, True)
    plain = os.path.join(workdir, "plain")
    os.mkdir(plain)
    bad = snap(cmd, "--json", "--mount", plain, ref)
    assert bad.returncode == 1, bad.stderr
    assert shaped(bad, False)["error"] == "EMEDIUMTYPE"
    usage = snap(cmd, "--json", ref, "--bogus")
    assert usage.returncode == 2
    out = shaped(usage, False)
    assert out["error"] == "usage" and "unknown option '--bogus'" in out["message"]


def test_ls_json_is_an_object_holding_the_list(snapfs):
    digest = put(snapfs, b"listed")
    out = shaped(snap("ls", "--mount", snapfs.path, "--json"), True)
    assert out["mount"] == snapfs.path
    assert [e["sha256"] for e in out["snapshots"]] == [digest]


# ---- one grammar ---------------------------------------------------------------------------

def argv_for(cmd, fs, digest):
    if cmd == "exec":
        return ["--binding", binding_of(fs, digest), "--", "true"]
    return operands(cmd, fs, digest)


@pytest.mark.parametrize("cmd", JSON_COMMANDS + ["exec"])
def test_every_client_subcommand_takes_mount_with_a_trailing_slash(cmd, snapfs):
    digest = put(snapfs, b"cfg")
    r = snap(cmd, "--mount", snapfs.path + "/", *argv_for(cmd, snapfs, digest), input="cfg")
    assert r.returncode == 0, r.stdout + r.stderr
    # Not every spelling: a symlink to the mount is refused as ever, slash or not.
    link = snapfs.path + "-link"
    os.symlink(snapfs.path, link)
    try:
        r = snap(cmd, "--mount", link + "/", *argv_for(cmd, snapfs, digest), input="cfg")
        assert r.returncode == (125 if cmd == "exec" else 1), r.stdout + r.stderr
        assert "symlink-in-path" in r.stdout + r.stderr
    finally:
        os.unlink(link)


@pytest.mark.parametrize("cmd", JSON_COMMANDS + ["exec"])
def test_every_client_subcommand_honours_SNAPFS_MOUNT(cmd, snapfs, workdir):
    digest = put(snapfs, b"cfg")
    env = dict(os.environ, SNAPFS_MOUNT=snapfs.path)
    r = snap(cmd, *argv_for(cmd, snapfs, digest), input="cfg", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    # --mount wins over the environment.
    elsewhere = os.path.join(workdir, "elsewhere")
    os.mkdir(elsewhere)
    r = snap(cmd, "--mount", elsewhere, *argv_for(cmd, snapfs, digest), input="cfg", env=env)
    assert r.returncode == (125 if cmd == "exec" else 1)
    assert "not-a-mount-point" in r.stdout + r.stderr


def test_audit_keeps_its_mount_operand_as_an_alias_and_refuses_two_different_mounts(snapfs,
                                                                                     workdir):
    put(snapfs, b"cfg")
    assert snap("audit", snapfs.path).returncode == 0
    assert snap("audit", "--mount", snapfs.path, snapfs.path + "/").returncode == 0
    r = snap("audit", "--mount", snapfs.path, workdir)
    assert r.returncode == 2
    assert f"the mount operand '{workdir}' and --mount '{snapfs.path}' differ" in r.stderr


def test_check_takes_mount_like_the_others_and_judges_a_path_operand_as_written(snapfs):
    assert snap("check", "--mount", snapfs.path + "/").returncode == 0
    r = snap("check", snapfs.path + "/")
    assert r.returncode == 1 and r.stdout.startswith("non-canonical-path: ")
    assert snap("check", snapfs.path).returncode == 0


def test_verify_reports_an_argument_that_is_no_binding_as_such(snapfs):
    digest = put(snapfs, b"cfg")
    r = snap("verify", "--mount", snapfs.path, "cfg.json")
    assert r.returncode == 2
    assert "'cfg.json' is neither a binding" in r.stderr and "not on --mount" not in r.stderr
    # A bare digest names that snapshot on the mount; a full path is held to its own name.
    r = snap("verify", "--mount", snapfs.path, digest)
    assert r.returncode == 0 and r.stdout == binding_of(snapfs, digest) + "\n", r.stderr


# ---- snapfs exec ---------------------------------------------------------------------------

@pytest.mark.parametrize("status", [0, 1, 2, 3, 124])
def test_exec_passes_the_childs_own_status_through(snapfs, status):
    binding = binding_of(snapfs, put(snapfs, b"cfg"))
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--",
             "sh", "-c", f"exit {status}")
    assert r.returncode == status, r.stderr


def test_exec_uses_125_for_its_own_failures_and_126_127_as_env_does(snapfs, workdir):
    digest = put(snapfs, b"cfg")
    binding = binding_of(snapfs, digest)
    stale = re.sub(r"ino=\d+", "ino=999999", binding)
    r = snap("exec", "--mount", snapfs.path, "--binding", stale, "--", "true")
    assert r.returncode == 125 and re.search(r"^identity: ", r.stderr, re.M)
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--bogus", "--", "true")
    assert r.returncode == 125 and "unknown option '--bogus'" in r.stderr
    r = snap("exec", "--mount", snapfs.path, "--binding", binding)
    assert r.returncode == 125 and "no COMMAND given" in r.stderr
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--", "/nonexistent/cmd")
    assert r.returncode == 127
    plain = os.path.join(workdir, "not-executable")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(plain, 0o644)
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--", plain)
    assert r.returncode == 126
    os.chmod(plain, 0o755)
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--", plain)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "IFS",
                                  "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4",
                                  "GCONV_PATH", "NLSPATH", "GLIBC_TUNABLES", "BASH_FUNC_x%%",
                                  "HOSTALIASES", "SNAPFS_FD_PATH", "PYTHONPATH",
                                  "NODE_OPTIONS", "PERL5LIB", "RUBYOPT", "JAVA_TOOL_OPTIONS"])
def test_exec_refuses_env_names_the_loader_libc_or_a_shell_interpret(snapfs, name):
    binding = binding_of(snapfs, put(snapfs, b"cfg"))
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--env", name, "--",
             "sh", "-c", 'echo "$PATH"')
    assert r.returncode == 125 and f"--env: '{name}' is not a name" in r.stderr
    # The allowance: an ordinary name carries the binding, and PATH is the caller's.
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--env", "MY_CFG", "--",
             "sh", "-c", 'printf "%s\\n%s\\n" "$PATH" "$MY_CFG"')
    assert r.returncode == 0 and r.stdout == f"{os.environ['PATH']}\n{binding}\n", r.stderr


@pytest.mark.parametrize("name", ["OPENSSL_CONF", "OPENSSL_MODULES", "OPENSSL_ENGINES",
                                  "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_SSH", "GIT_ASKPASS",
                                  "GCONV_PATH", "npm_config_node_options", "EDITOR", "PAGER",
                                  "SSH_ASKPASS", "SYSTEMD_PAGER", "SUDO_EDITOR", "LESSOPEN",
                                  "XDG_CONFIG_HOME", "GTK_MODULES", "QT_PLUGIN_PATH",
                                  "DOTNET_STARTUP_HOOKS", "Ld_Preload"])
def test_exec_refuses_env_names_that_make_a_library_or_tool_load_code_or_run_commands(
        snapfs, name):
    binding = binding_of(snapfs, put(snapfs, b"cfg"))
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--env", name, "--", "true")
    assert r.returncode == 125 and f"--env: '{name}' is not a name" in r.stderr, r.stderr
    # The allowance: a variable that only names data (SSL_CERT_FILE: which CA bundle to read)
    # is not refused, by the documented rule, and carries the binding.
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--env", "SSL_CERT_FILE",
             "--", "sh", "-c", 'printf "%s" "$SSL_CERT_FILE"')
    assert r.returncode == 0 and r.stdout == binding, r.stderr


def test_exec_offers_the_descriptor_path_in_SNAPFS_FD_PATH(snapfs):
    binding = binding_of(snapfs, put(snapfs, b"via the variable"))
    r = snap("exec", "--mount", snapfs.path, "--binding", binding, "--fd", "5", "--",
             "sh", "-c", 'echo "$SNAPFS_FD_PATH"; cat "$SNAPFS_FD_PATH"')
    assert r.returncode == 0, r.stderr
    assert r.stdout == "/proc/self/fd/5\nvia the variable"


# ---- options that cannot work together ----------------------------------------------------

def test_mount_refuses_a_snapshot_limit_above_the_byte_limit_naming_both(mount_snapfs,
                                                                        workdir):
    target = os.path.join(workdir, "never")
    os.mkdir(target)
    r = snap("mount", "-f", "--max-snapshot-size", "1G", "--max-bytes", "1k", target)
    assert r.returncode == 2
    assert ("--max-snapshot-size 1G is larger than --max-bytes 1K" in r.stderr), r.stderr
    r = snap("mount", "-f", "--max-bytes", "100K", target)  # the default 256K snapshot limit
    assert r.returncode == 2 and "--max-snapshot-size (256K by default)" in r.stderr
    # The allowance: the same limits the other way round mount and serve.
    fs = mount_snapfs("--max-snapshot-size", "1k", "--max-bytes", "1G")
    assert fs.publish(b"x" * 1024, "fits")


# ---- the Python client gives the CLI's fields ---------------------------------------------

PY_FIELDS = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import snapfs_client as snapfs
mnt, data, other = sys.argv[2], sys.argv[3].encode(), sys.argv[4]
b = snapfs.publish(mnt, data, owner=0)
out = {"put": b.as_result(), "snapshot": b.as_dict(),
       "described": snapfs.describe(mnt, str(b), owner=0).as_dict()}
try:
    snapfs.open_digest(other, "0" * 64, owner=0)
except snapfs.SnapfsError as e:
    out["refused"] = e.as_dict()
print(json.dumps(out))
"""


def test_the_python_client_returns_the_fields_of_the_cli(snapfs, workdir):
    put(snapfs, b"same bytes")
    plain = os.path.join(workdir, "plain")
    os.mkdir(plain)
    r = subprocess.run([sys.executable, "-c", PY_FIELDS, str(PYCLIENT.parent), snapfs.path,
                        "same bytes", plain], capture_output=True, text=True, timeout=60,
                       env=client_env())
    assert r.returncode == 0, r.stderr
    py = json.loads(r.stdout)
    cli = json.loads(snap("put", "--mount", snapfs.path, "--json", "-",
                          input="same bytes").stdout)
    del cli["mount"]
    assert cli.pop("read_view") is None  # Python asks for it apart: view_binding()
    assert cli.pop("scope") is None  # and for a scope's: grant(), then scope_binding()
    assert py["put"] == cli
    # The one snapshot object, from Binding.as_dict() as from every --json.
    assert py["snapshot"] == cli["snapshot"] == py["described"]
    listed = json.loads(snap("ls", "--mount", snapfs.path, "--json").stdout)["snapshots"]
    assert [{k: v for k, v in e.items() if k != "kind"} for e in listed] == [py["snapshot"]]
    refused = json.loads(snap("verify", "--mount", plain, "--json", "0" * 64).stdout)
    assert py["refused"] == {k: refused[k] for k in SHAPE}
