# SPDX-License-Identifier: MIT
"""snapfs check on real tmpfs and FUSE mounts, every case under both backends.

Each case is a generator: it builds a setup inside a scratch tmpfs and yields the checks to
run against it, each with the exact set of finding codes expected (an empty set: accepted,
exit 0). Every refusal sits beside the same setup made compliant and accepted. The same cases
drive test_backends_agree, which asserts that statmount and mountinfo reach the same codes.

Needs root in a private mount namespace (scripts/test.sh runs pytest under
`unshare -m --propagation private`); a missing prerequisite fails the module, never skips it.
"""
import contextlib
import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile

import pytest

from snaptest import BUILD, SNAPFS, helper_fs, run

HELPERS = BUILD / "tests" / "helpers"
TINYFS = HELPERS / "tinyfs"
MOUNTTOOL = HELPERS / "mounttool"
MCRACE = HELPERS / "mcrace"
BACKENDS = ["statmount", "mountinfo"]

COMPLIANT = "rw,nosuid,nodev,noexec,mode=1777,size=1m"
FUSE_OK = "fsname=tiny,subtype=snapfs,nosuid,nodev,noexec"


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "mount tests need root (run scripts/test.sh)"
    private = ("mount tests must run in a private mount namespace: "
               "unshare -m --propagation private (scripts/test.sh does)")
    try:
        assert os.readlink("/proc/self/ns/mnt") != os.readlink("/proc/1/ns/mnt"), private
    except PermissionError:
        pass  # pid 1 is out of sight (a sandbox): the propagation check below still holds
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] in ("/", "/tmp"):
                assert not any(x.startswith("shared:") for x in fields[6:fields.index("-")]), private
    for tool in (SNAPFS, TINYFS, MOUNTTOOL, MCRACE):
        assert tool.exists(), f"build first: {tool} missing"
    for tool in ("mount", "umount"):
        assert shutil.which(tool), f"{tool} missing (util-linux / mount packages)"
    assert os.path.exists("/dev/fuse"), "/dev/fuse missing: FUSE cases cannot run"


# --- setup helpers -----------------------------------------------------------------------

def sh(*args):
    r = run(*args)
    assert r.returncode == 0, f"{args}: {r.stderr.strip()}"
    return r


def mount_tmpfs(path, opts=COMPLIANT, fstype="tmpfs"):
    os.makedirs(path, exist_ok=True)
    sh("mount", "-t", fstype, "-o", opts, fstype, path)


@contextlib.contextmanager
def scratch():
    """A fresh tmpfs to build in; unmounting it lazily takes every mount below with it."""
    d = os.path.realpath(tempfile.mkdtemp(prefix="mc-", dir="/tmp"))
    sh("mount", "-t", "tmpfs", "-o", "size=4m,mode=755", "tmpfs", d)
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d], capture_output=True, check=False)
        os.rmdir(d)


def tinyfs(mnt, opts=FUSE_OK, *extra):
    """tinyfs mounted at mnt; stopped, reaped and unmounted on exit, whatever happened."""
    return helper_fs([TINYFS, *extra, mnt, "-o", opts], mnt, "tinyfs")


@dataclasses.dataclass
class Check:
    path: str
    expect: set
    args: tuple = ("--preset", "tmpfs")
    named: tuple = ()  # (code, word): some finding with that code names word
    cwd: str = None


def snapfs_check(backend, c):
    r = run(SNAPFS, "check", "--backend", backend, "--json", *c.args, c.path, cwd=c.cwd)
    assert r.returncode in (0, 1), f"exit {r.returncode}: {r.stderr.strip()}"
    out = json.loads(r.stdout)
    assert out["backend"] == backend, "a named backend must never fall back"
    assert out["path"] == c.path
    assert out["ok"] == (r.returncode == 0) == (not out["reasons"])
    assert out["error"] == (None if out["ok"] else "EMEDIUMTYPE")
    assert out["reasons_dropped"] == 0
    return out


def codes(out):
    return {f["code"] for f in out["reasons"]}


def assert_check(backend, c):
    out = snapfs_check(backend, c)
    assert codes(out) == c.expect, f"{c.path} {c.args}: {out['reasons']}"
    for code, word in c.named:
        assert any(word in f["message"] for f in out["reasons"] if f["code"] == code), \
            f"no {code} finding names {word!r}: {out['reasons']}"
    if not c.expect:
        assert isinstance(out["mount_id"], int)


# --- the cases ----------------------------------------------------------------------------

CASES = {}


def case(fn):
    CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


@case
def case_compliant_tmpfs(d):
    p = f"{d}/m"
    mount_tmpfs(p)
    yield Check(p, set())
    yield Check(p, {"fstype", "owner"}, args=("--preset", "snapfs", "--no-probe"))


@case
def case_noncompliant_upper_on_compliant_lower(d):
    p = f"{d}/m"
    mount_tmpfs(p)
    yield Check(p, set())
    mount_tmpfs(p, "nosuid,nodev,mode=1777,size=1m")
    yield Check(p, {"stacked", "missing-option"}, named=(("missing-option", "noexec"),))


@case
def case_compliant_upper_on_noncompliant_lower(d):
    p = f"{d}/m"
    mount_tmpfs(p, "nosuid,nodev,mode=1777,size=1m")
    yield Check(p, {"missing-option"}, named=(("missing-option", "noexec"),))
    mount_tmpfs(p)
    yield Check(p, {"stacked"})


def missing_option_case(missing):
    def fn(d):
        opts = ",".join(o for o in ("rw", "nosuid", "nodev", "noexec") if o != missing)
        bad, good = f"{d}/without-{missing}", f"{d}/with-{missing}"
        mount_tmpfs(bad, opts + ",mode=1777,size=1m")
        mount_tmpfs(good)
        yield Check(bad, {"missing-option"}, named=(("missing-option", missing),))
        yield Check(good, set())
    fn.__name__ = f"case_missing_{missing}"
    return case(fn)


for _opt in ("nosuid", "nodev", "noexec"):
    missing_option_case(_opt)


@case
def case_wrong_type(d):
    p = f"{d}/m"
    mount_tmpfs(p, "nosuid,nodev,noexec,mode=1777", fstype="ramfs")
    yield Check(p, {"fstype"}, args=("--preset", "tmpfs", "--max-size", "any"),
                named=(("fstype", "ramfs"),))
    yield Check(p, set(), args=("--preset", "tmpfs", "--max-size", "any", "--fstype", "ramfs"))


@case
def case_tmpfs_mode_0755(d):
    p = f"{d}/m"
    mount_tmpfs(p, "rw,nosuid,nodev,noexec,mode=0755,size=1m")
    yield Check(p, {"mode"}, named=(("mode", "0755"),))
    os.chmod(p, 0o1777)
    yield Check(p, set())


@case
def case_tmpfs_of_2_mib(d):
    big, small = f"{d}/big", f"{d}/small"
    mount_tmpfs(big, "rw,nosuid,nodev,noexec,mode=1777,size=2m")
    mount_tmpfs(small)
    yield Check(big, {"size"})
    yield Check(big, set(), args=("--preset", "tmpfs", "--max-size", "2M"))
    yield Check(small, set())


@case
def case_shared_propagation(d):
    p = f"{d}/m"
    mount_tmpfs(p)
    sh(MOUNTTOOL, "propagation", p, "shared")
    yield Check(p, {"propagation"}, named=(("propagation", "shared"),))
    sh(MOUNTTOOL, "propagation", p, "private")
    yield Check(p, set())


@case
def case_slave_propagation(d):
    master, slave = f"{d}/master", f"{d}/slave"
    mount_tmpfs(master)
    sh(MOUNTTOOL, "propagation", master, "shared")
    os.makedirs(slave)
    sh("mount", "--bind", master, slave)
    sh(MOUNTTOOL, "propagation", slave, "slave")
    yield Check(slave, {"propagation"}, named=(("propagation", "slave"),))
    sh(MOUNTTOOL, "propagation", slave, "private")
    yield Check(slave, set())


@case
def case_bind_of_subdirectory(d):
    p, sub, whole = f"{d}/m", f"{d}/sub", f"{d}/whole"
    mount_tmpfs(p)
    os.makedirs(f"{p}/inner")
    os.chmod(f"{p}/inner", 0o1777)  # the same mode as the root: only the bind differs
    os.makedirs(sub)
    os.makedirs(whole)
    sh("mount", "--bind", f"{p}/inner", sub)
    sh("mount", "--bind", p, whole)
    yield Check(sub, {"bind-of-subdirectory"}, named=(("bind-of-subdirectory", "/inner"),))
    yield Check(whole, set())


@case
def case_ancestor_overmounted(d):
    a = f"{d}/a"
    p = f"{a}/m"
    os.makedirs(p)
    mount_tmpfs(p)
    yield Check(p, set())
    mount_tmpfs(a, "size=1m")  # the path is gone: the old mount is listed but unreachable
    yield Check(p, {"ancestor-overmounted"})
    os.makedirs(p)  # re-created inside the upper mount: a plain directory now
    yield Check(p, {"not-a-mount-point", "ancestor-overmounted"})


@case
def case_submount_below_the_path(d):
    p = f"{d}/m"
    mount_tmpfs(p)
    yield Check(p, set())
    mount_tmpfs(f"{p}/sub", "size=1m")
    yield Check(p, {"submount"}, named=(("submount", f"{p}/sub"),))


@case
def case_final_component_symlink(d):
    p, link = f"{d}/m", f"{d}/link"
    mount_tmpfs(p)
    os.symlink(p, link)
    yield Check(link, {"symlink-in-path"})
    yield Check(p, set())


@case
def case_intermediate_component_symlink(d):
    p = f"{d}/real/m"
    mount_tmpfs(p)
    os.symlink(f"{d}/real", f"{d}/alias")
    yield Check(f"{d}/alias/m", {"symlink-in-path"})
    yield Check(p, set())


@case
def case_non_canonical_paths(d):
    p = f"{d}/x/m"
    mount_tmpfs(p)
    for spelled in (f"{d}/x//m", f"{d}//x/m", f"{d}/x/./m", f"{d}/x/../x/m", f"{p}/"):
        yield Check(spelled, {"non-canonical-path"})
    yield Check("x/m", {"non-canonical-path"}, cwd=d)
    yield Check(p, set())


@case
def case_path_with_space_newline_and_backslash(d):
    # mountinfo escapes these as \040 \012 \134; statmount reports them raw.
    for name in ("with space", "new\nline", "back\\slash"):
        p = f"{d}/{name}/m"
        mount_tmpfs(p)
        yield Check(p, set())
        mount_tmpfs(p)
        yield Check(p, {"stacked"})


@case
def case_directory_not_a_mount_point(d):
    p = f"{d}/plain"
    os.makedirs(p)
    yield Check(p, {"not-a-mount-point"})
    mount_tmpfs(p)
    yield Check(p, set())


@case
def case_fsmount_made_early_moved_on_top(d):
    # The top mount has the older id: mountinfo lists it before the mount it covers.
    top_ok, top_bad = f"{d}/top-ok", f"{d}/top-bad"
    os.makedirs(top_ok)
    os.makedirs(top_bad)
    sh(MOUNTTOOL, "early-on-top", top_ok, COMPLIANT, "nosuid,nodev,mode=1777,size=1m")
    yield Check(top_ok, {"stacked"})
    sh(MOUNTTOOL, "early-on-top", top_bad, "nosuid,nodev,mode=1777,size=1m", COMPLIANT)
    yield Check(top_bad, {"stacked", "missing-option"}, named=(("missing-option", "noexec"),))
    alone = f"{d}/alone"
    mount_tmpfs(alone)
    yield Check(alone, set())


@case
def case_mount_slid_beneath(d):
    p = f"{d}/m"
    mount_tmpfs(p)
    yield Check(p, set())
    sh(MOUNTTOOL, "beneath", p, "nodev,mode=1777,size=1m")
    yield Check(p, {"stacked"})


@case
def case_idmapped_tmpfs(d):
    p, mapped = f"{d}/m", f"{d}/mapped"
    mount_tmpfs(p)
    os.makedirs(mapped)
    sh(MOUNTTOOL, "idmap", p, mapped)
    yield Check(mapped, {"idmapped"})
    yield Check(p, set())


SNAPFS_ARGS = ("--preset", "snapfs")


@case
def case_fuse_snapfs_accepted(d):
    p = f"{d}/fuse"
    with tinyfs(p):
        yield Check(p, set(), args=SNAPFS_ARGS)
        yield Check(p, {"owner"}, args=SNAPFS_ARGS + ("--owner", "4242"),
                    named=(("owner", "4242"),))


@case
def case_fuse_other_subtype(d):
    p = f"{d}/fuse"
    with tinyfs(p, "fsname=snapfs,subtype=other,nosuid,nodev,noexec"):
        yield Check(p, {"fstype"}, args=SNAPFS_ARGS, named=(("fstype", "fuse.other"),))
        yield Check(p, set(), args=SNAPFS_ARGS + ("--fstype", "fuse.other"))


@case
def case_fuse_without_noexec(d):
    p = f"{d}/fuse"
    # libfuse adds nosuid,nodev by itself, never noexec.
    with tinyfs(p, "fsname=tiny,subtype=snapfs"):
        yield Check(p, {"missing-option"}, args=SNAPFS_ARGS, named=(("missing-option", "noexec"),))
        yield Check(p, set(), args=SNAPFS_ARGS + ("--require", "nosuid,nodev"))


@case
def case_fuse_daemon_killed(d):
    p = f"{d}/fuse"
    with tinyfs(p) as daemon:
        yield Check(p, set(), args=SNAPFS_ARGS)
        daemon.kill()
        daemon.wait()
        yield Check(p, {"transport-not-connected"}, args=SNAPFS_ARGS)
        # The daemon's own switch: no probe, no round trip, nothing to notice.
        yield Check(p, set(), args=SNAPFS_ARGS + ("--no-probe",))


# --- the tests ----------------------------------------------------------------------------

def drive(name, each):
    with scratch() as d:
        gen = CASES[name](d)
        try:
            for c in gen:
                each(c)
        finally:
            gen.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name, backend):
    drive(name, lambda c: assert_check(backend, c))


@pytest.mark.parametrize("name", sorted(CASES))
def test_backends_agree(name):
    def both(c):
        outs = {b: snapfs_check(b, c) for b in BACKENDS}
        assert codes(outs["statmount"]) == codes(outs["mountinfo"]), outs
    drive(name, both)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mount_on_top_during_the_check_is_changed_during_check(backend):
    with scratch() as d:
        p = f"{d}/m"
        mount_tmpfs(p)
        calm = run(MCRACE, backend, p, "calm")
        assert (calm.returncode, calm.stdout) == (0, ""), calm.stderr
        raced = run(MCRACE, backend, p, "race")
        assert raced.returncode == 1, raced.stderr
        assert set(raced.stdout.split()) == {"stacked", "changed-during-check"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_check_without_probe_sends_no_fuse_request(backend, tmp_path_factory):
    """The daemon's situation: its mount exists, its loop has not started, INIT is unanswered.
    Any FUSE request would block; the check without the probe must finish and the daemon
    must have received nothing. Beside it: the probe is exactly one GETATTR once it serves."""
    with scratch() as d:
        p, log = f"{d}/fuse", f"{d}/requests.log"
        with tinyfs(p, FUSE_OK, "--wait-signal", "--log", log) as daemon:
            r = run(SNAPFS, "check", "--backend", backend, "--no-probe", p, timeout=20)
            assert r.returncode == 0, r.stderr
            assert open(log).read() == ""
            with pytest.raises(subprocess.TimeoutExpired):
                run(SNAPFS, "check", "--backend", backend, p, timeout=2)  # the probe blocks
            daemon.send_signal(signal.SIGUSR1)
            r = run(SNAPFS, "check", "--backend", backend, p, timeout=20)
            assert r.returncode == 0, r.stderr
            assert open(log).read().split() == ["getattr"]
            r = run(SNAPFS, "check", "--backend", backend, "--no-probe", p, timeout=20)
            assert r.returncode == 0, r.stderr
            assert open(log).read().split() == ["getattr"]


def test_text_output_is_one_code_and_message_a_line():
    with scratch() as d:
        p = f"{d}/m"
        mount_tmpfs(p)
        ok = run(SNAPFS, "check", "--preset", "tmpfs", p)
        assert (ok.returncode, ok.stdout) == (0, "")
        mount_tmpfs(p, "nosuid,nodev")
        r = run(SNAPFS, "check", "--preset", "tmpfs", p)
        assert r.returncode == 1
        lines = r.stdout.splitlines()
        assert [line.split(":", 1)[0] for line in lines] == ["stacked", "missing-option", "size"]
        assert all(": " in line for line in lines)


def test_usage_and_system_errors_exit_2_naming_the_problem():
    cases = [
        (["--max-size", "12X", "/"], "--max-size"),
        (["--mode", "8", "/"], "--mode"),
        (["--owner", "-1", "/"], "--owner"),
        (["--require", "nosuid,bogus", "/"], "--require"),
        (["--forbid", "noexec", "/"], "--forbid"),
        (["--fstype", "a b", "/"], "--fstype"),
        (["--preset", "ext4", "/"], "--preset"),
        (["--backend", "proc", "/"], "--backend"),
        (["--mount", "/a", "/b"], "--mount"),
        (["/a", "/b"], "PATH"),
        (["/nonexistent-mountcheck-path"], "No such file"),
    ]
    for args, word in cases:
        r = run(SNAPFS, "check", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert word in r.stderr, (args, r.stderr)
        assert r.stdout == ""


def test_help_explains_every_option_and_code():
    r = run(SNAPFS, "check", "--help")
    assert r.returncode == 0
    for word in ("--preset", "--fstype", "--require", "--forbid", "--ro", "--mode",
                 "--max-size", "--owner", "--no-probe", "--backend", "--json",
                 "snapfs", "tmpfs", "auto", "statmount", "mountinfo",
                 "stacked", "transport-not-connected", "changed-during-check"):
        assert word in r.stdout, word
    top = run(SNAPFS, "--help")
    assert "check" in top.stdout
