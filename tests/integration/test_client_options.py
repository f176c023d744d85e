# SPDX-License-Identifier: MIT
"""One parser for the client options (cli/clientopts.c, cli_parse), checked by one table: every
client subcommand is run with every option and variable that says which mount to judge and
which owner to trust — --mount, $SNAPFS_MOUNT, --owner, $SNAPFS_OWNER, --insecure-own-mount,
--trust-user-namespace — and each takes effect: a refusal beside the run the same option
lets through. The table must name every subcommand `snapfs --help` lists, or say why it takes
no mount: a subcommand added to the command table and not here fails the first test. The
contract is docs/design.md, "Command-line contract"."""
import json
import os
import re
import stat
import subprocess

import pytest

from snaptest import ROOT, SNAPFS, run

VECTORS = json.loads((ROOT / "tests" / "vectors" / "values.json").read_text())
NOT_CLIENTS = {"mount": "serves a mount", "keygen": "writes a key pair, judges no mount",
               "help": "prints a command's help", "version": "prints the version"}
ATTACKER = 1000


class Target:
    """What the commands are run against: a mount, a snapshot on it and its binding, and an
    OCI layout holding that snapshot (for import)."""

    def __init__(self, path, digest, binding, layout, workdir, as_user=(), own=()):
        self.path, self.digest, self.binding = path, digest, binding
        self.layout, self.workdir, self.exports = layout, workdir, 0
        # Who manages the daemon's scopes, and the trust options that user needs.
        self.as_user, self.own = as_user, own
        self.scope = None

    def out(self):
        self.exports += 1
        return os.path.join(self.workdir, f"out-{self.exports}")

    def in_scope(self):
        """The name of a scope of the daemon, made once (its view in the work directory)."""
        if not self.scope:
            view = os.path.join(self.workdir, "scope-view")
            # Read by the uid that manages it (snapfs wait judges its view as that uid).
            users = ["--uid", str(ATTACKER)] if self.as_user else []
            r = run(*self.as_user, SNAPFS, "scope", "create", "--mount", self.path, *self.own,
                    "clients", "--view", view, *users)
            assert r.returncode == 0, r.stderr
            self.scope = "clients"
        return self.scope

    def entry(self):
        """A scope and an entry granted in it now (revoke takes it away again)."""
        r = run(*self.as_user, SNAPFS, "grant", "--mount", self.path, *self.own,
                self.in_scope(), self.digest, "--as", "cfg")
        assert r.returncode == 0, r.stderr
        return [self.scope, "cfg"]

    def view(self):
        """The view of a scope of the daemon with the entry cfg granted in it: the mount
        snapfs wait judges."""
        self.entry()
        return os.path.join(self.workdir, "scope-view")

    def close(self):
        """Removes the scope (its view unmounted with it)."""
        if self.scope:
            r = run(*self.as_user, SNAPFS, "scope", "rm", "--mount", self.path, *self.own,
                    self.scope)
            assert r.returncode == 0, r.stderr
            self.scope = None


# How each client subcommand runs against a target: its operands after the options, what it
# reads on standard input, and its exit status for a refusal (exec's own failures are 125,
# as env(1)'s, for a usage error too).
CLIENTS = {
    "check": dict(argv=lambda t: [], refused=1, usage=2),
    "put": dict(argv=lambda t: ["-"], refused=1, usage=2),
    "verify": dict(argv=lambda t: [t.binding], refused=1, usage=2),
    "exec": dict(argv=lambda t: ["--binding", t.binding, "--", "true"], refused=125,
                 usage=125),
    "ls": dict(argv=lambda t: [], refused=1, usage=2),
    # rm and prune judge the mount before they look for anything to remove: a dry run of rm
    # (the target stays for the next run), and a prune that finds nothing a day old.
    "rm": dict(argv=lambda t: ["--dry-run", t.digest], refused=1, usage=2),
    "prune": dict(argv=lambda t: ["--older-than", "24h"], refused=1, usage=2),
    "audit": dict(argv=lambda t: [], refused=1, usage=2),
    "export": dict(argv=lambda t: [f"oci:{t.out()}:v1", t.digest], refused=1, usage=2),
    "import": dict(argv=lambda t: [f"oci:{t.layout}:v1"], refused=1, usage=2),
    # Scopes, through the main mount's control file: `scope` takes its subcommand first.
    "scope": dict(sub=["ls"], argv=lambda t: [t.in_scope()], refused=1, usage=2),
    "grant": dict(argv=lambda t: [t.in_scope(), t.digest, "--as", "cfg"], refused=1, usage=2),
    "revoke": dict(argv=lambda t: t.entry(), refused=1, usage=2),
    # The daemon's health, through the same control file (its owner and root only).
    "status": dict(argv=lambda t: [], refused=1, usage=2),
    "metrics": dict(argv=lambda t: [], refused=1, usage=2),
    # A scope's view, not the main mount: what passes the check is watched, and at once
    # (--timeout 0) found not moved, which is exit 1 with its own words.
    "wait": dict(mount=lambda t: t.view(), argv=lambda t: ["--entry", "cfg", "--timeout", "0"],
                 ok=1, ok_text="timeout: cfg did not move within 0 ms", refused=1, usage=2),
}


def mount_of(cmd, target):
    """The mount cmd judges: the main mount, or what the table says."""
    return CLIENTS[cmd].get("mount", lambda t: t.path)(target)


def label(cmd):
    """How the command names itself in its messages: "snapfs scope ls: "."""
    return " ".join([cmd, *CLIENTS[cmd].get("sub", [])])


def commands():
    r = run(SNAPFS, "--help")
    assert r.returncode == 0, r.stderr
    section = r.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return {line.split()[0] for line in section.splitlines() if line.strip()}


def test_every_subcommand_is_in_the_table_or_said_to_take_no_mount():
    listed = commands()
    assert listed == set(CLIENTS) | set(NOT_CLIENTS), (
        f"add {sorted(listed - set(CLIENTS) - set(NOT_CLIENTS))} to CLIENTS (how it runs on a "
        "mount) or NOT_CLIENTS (why it judges none)")


def snap(cmd, target, *opts, mount=True, env=None, prefix=()):
    """snapfs CMD [--mount MNT] OPTS OPERANDS, with env added to the environment (None values
    removed), under prefix (setpriv, unshare)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SNAPFS_")}
    for k, v in (env or {}).items():
        if v is not None:
            environ[k] = v
    argv = [*prefix, SNAPFS, cmd, *CLIENTS[cmd].get("sub", []),
            *(["--mount", mount_of(cmd, target)] if mount is True else
                                    ["--mount", mount] if mount else []),
            *opts, *CLIENTS[cmd]["argv"](target)]
    return run(*argv, input="cfg", env=environ)


def status(cmd, r, want):
    """Whether r ended as want says: "ok", "refused" (the mount or the snapshot did not pass),
    "usage"."""
    if want == "ok":
        return (r.returncode == CLIENTS[cmd].get("ok", 0) and
                CLIENTS[cmd].get("ok_text", "") in r.stdout + r.stderr)
    return r.returncode == CLIENTS[cmd][want]


def expect(cmd, r, want, *texts):
    assert status(cmd, r, want), (want, r.returncode, r.stdout, r.stderr)
    for text in texts:
        assert text in r.stdout + r.stderr, (text, r.stdout, r.stderr)


@pytest.fixture
def target(mount_snapfs, workdir):
    fs = mount_snapfs("--allow-other")
    r = run(SNAPFS, "put", "--mount", fs.path, "-", input="cfg")
    assert r.returncode == 0, r.stderr
    binding = r.stdout.splitlines()[0]
    digest = re.match(r"sha256=([0-9a-f]{64}) ", binding).group(1)
    layout = os.path.join(workdir, "layout")
    r = run(SNAPFS, "export", "--mount", fs.path, f"oci:{layout}:v1", digest)
    assert r.returncode == 0, r.stderr
    plain = os.path.join(workdir, "plain")
    os.mkdir(plain)
    t = Target(fs.path, digest, binding, layout, workdir)
    t.plain = plain
    yield t
    t.close()


def vector(kind, text):
    return next(c["message"] for c in VECTORS if c["type"] == kind and c["input"] == text)


@pytest.mark.parametrize("cmd", sorted(CLIENTS))
def test_mount_names_the_mount_judged(cmd, target):
    expect(cmd, snap(cmd, target), "ok")
    # A plain directory is no snapfs mount: refused by the mount check, whatever the command.
    expect(cmd, snap(cmd, target, mount=target.plain), "refused", "not-a-mount-point")


@pytest.mark.parametrize("cmd", sorted(CLIENTS))
def test_snapfs_mount_names_the_mount_and_mount_wins_over_it(cmd, target):
    expect(cmd, snap(cmd, target, mount=None, env={"SNAPFS_MOUNT": mount_of(cmd, target)}),
           "ok")
    expect(cmd, snap(cmd, target, mount=None, env={"SNAPFS_MOUNT": target.plain}), "refused",
           "not-a-mount-point")
    expect(cmd, snap(cmd, target, env={"SNAPFS_MOUNT": target.plain}), "ok")


@pytest.mark.parametrize("cmd", sorted(CLIENTS))
def test_owner_names_the_uid_trusted_by_one_grammar(cmd, target):
    expect(cmd, snap(cmd, target, "--owner", "0"), "ok")
    # Root's mount, another owner trusted: refused by its finding.
    expect(cmd, snap(cmd, target, "--owner", "4101"), "refused", "owner")
    # One grammar, one message, in every command: check took "007" and ls refused it.
    for bad in ("007", "+0", "4294967295", "root"):
        expect(cmd, snap(cmd, target, "--owner", bad), "usage",
               f"snapfs {label(cmd)}: --owner: {vector('uid', bad)}")


@pytest.mark.parametrize("cmd", sorted(CLIENTS))
def test_snapfs_owner_names_the_uid_trusted_and_owner_wins_over_it(cmd, target):
    expect(cmd, snap(cmd, target, env={"SNAPFS_OWNER": "0"}), "ok")
    expect(cmd, snap(cmd, target, env={"SNAPFS_OWNER": "4101"}), "refused", "owner")
    expect(cmd, snap(cmd, target, "--owner", "0", env={"SNAPFS_OWNER": "4101"}), "ok")
    # Never "any" from the environment, not even for check, which takes it on its command line.
    for bad in ("any", "00", "+0", "4294967295"):
        expect(cmd, snap(cmd, target, env={"SNAPFS_OWNER": bad}), "usage",
               f"snapfs {label(cmd)}: SNAPFS_OWNER: {vector('uid', bad)}")


@pytest.fixture
def user_fuse(workdir):
    """/dev/fuse is 0600 here: a 0666 node bound over it in this test's namespace lets uid
    1000 mount through fusermount3. Unbound at the end."""
    node = os.path.join(workdir, "fuse")
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(10, 229))
    os.chmod(node, 0o666)
    assert run("mount", "--bind", node, "/dev/fuse").returncode == 0
    try:
        yield
    finally:
        run("umount", "/dev/fuse")


AS_ATTACKER = ("setpriv", f"--reuid={ATTACKER}", f"--regid={ATTACKER}", "--clear-groups")


@pytest.mark.parametrize("cmd", sorted(CLIENTS))
def test_insecure_own_mount_trusts_a_mount_of_the_caller_s_own_uid(cmd, workdir, user_fuse):
    """A rootless daemon of uid 1000, and the client of that uid naming itself the owner."""
    home = os.path.join(workdir, "home")
    os.mkdir(home)
    os.chown(home, ATTACKER, ATTACKER)
    mnt = os.path.join(home, "mnt")
    os.mkdir(mnt)
    os.chown(mnt, ATTACKER, ATTACKER)
    daemon = subprocess.Popen([*AS_ATTACKER, str(SNAPFS), "mount", "-f", mnt],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout.readline().startswith("snapfs: serving"), daemon.stderr.read()
        own = ("--owner", str(ATTACKER), "--insecure-own-mount")
        r = run(*AS_ATTACKER, SNAPFS, "put", "--mount", mnt, *own, "-", input="cfg")
        assert r.returncode == 0, r.stderr
        binding = r.stdout.splitlines()[0]
        digest = re.match(r"sha256=([0-9a-f]{64}) ", binding).group(1)
        layout = os.path.join(home, "layout")
        r = run(*AS_ATTACKER, SNAPFS, "export", "--mount", mnt, *own, f"oci:{layout}:v1", digest)
        assert r.returncode == 0, r.stderr
        t = Target(mnt, digest, binding, layout, home, as_user=AS_ATTACKER, own=own)
        try:
            for how in (("--owner", str(ATTACKER)), ()):
                env = {} if how else {"SNAPFS_OWNER": str(ATTACKER)}
                expect(cmd, snap(cmd, t, *how, env=env, prefix=AS_ATTACKER), "refused",
                       "owner-is-caller")
                expect(cmd, snap(cmd, t, *how, "--insecure-own-mount", env=env,
                                 prefix=AS_ATTACKER), "ok")
        finally:
            t.close()
    finally:
        daemon.terminate()
        daemon.wait(timeout=20)
        daemon.stdout.close()
        daemon.stderr.close()
        run("umount", "-l", mnt)


@pytest.mark.parametrize("cmd", sorted(CLIENTS))
def test_trust_user_namespace_trusts_a_mount_seen_from_another_user_namespace(cmd, target):
    """A client run inside a user namespace of its own sees no host uid: every FUSE mount is
    refused (user-namespace) unless it trusts the namespace."""
    inside = ("unshare", "--user", "--map-root-user")
    expect(cmd, snap(cmd, target, prefix=inside), "refused", "user-namespace")
    expect(cmd, snap(cmd, target, "--trust-user-namespace", prefix=inside), "ok")
