# SPDX-License-Identifier: MIT
"""Helpers for the integration tests: running commands, a real snapfs daemon, code run as
another uid, test FUSE servers, errno checks.

Tests import these by name (`from snaptest import ...`); conftest.py holds only the pytest
fixtures, which build on them.
"""
import contextlib
import errno as _errno
import hashlib
import json
import os
import pathlib
import select
import signal
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("SNAPFS_BUILD", ROOT / "build"))
SNAPFS = BUILD / "cli" / "snapfs"


def mount_ids():
    with open("/proc/self/mountinfo") as f:
        return {line.split()[0] for line in f}


def child_pids():
    me = str(os.getpid())
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            kids.append(int(entry))
    return kids


def open_fds():
    return set(os.listdir("/proc/self/fd"))


# scripts/test.sh points ASan/UBSan's log_path here, so every report lands in a file of its own
# (report.PID) whichever process made it: a daemon that daemonized (its stderr is /dev/null),
# a CLI run whose exit status a test does not look at, a helper.
SANITIZER_REPORTS = os.environ.get("SNAPFS_SANITIZER_REPORTS")

# What ASan, LSan and UBSan write on standard error. GCC's UBSan runtime ignores log_path when
# it is linked together with ASan, so its reports only ever reach standard error: the output
# of every CLI run and every daemon's PATH.stderr is searched for them.
SANITIZER_MARKERS = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "SUMMARY: UndefinedBehaviorSanitizer")


def has_sanitizer_report(text):
    return any(m in text for m in SANITIZER_MARKERS)


def sanitizer_reports():
    if not SANITIZER_REPORTS:
        return set()
    return set(os.listdir(SANITIZER_REPORTS))


def run(*args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    r = subprocess.run([str(a) for a in args], **kw)
    err = r.stderr if isinstance(r.stderr, str) else (r.stderr or b"").decode(errors="replace")
    # Even where a test expects a failure and ignores the exit status, a sanitizer report fails.
    assert not has_sanitizer_report(err), f"sanitizer report from {list(args)}:\n{err}"
    return r


# The four fields every `snapfs ... --json` object starts with.
JSON_SHAPE = ("ok", "error", "message", "reasons")


def snap(*args, uid=None, **kw):
    """The snapfs command, as uid if given (setpriv, no supplementary groups)."""
    argv = [str(SNAPFS), *[str(a) for a in args]]
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    return run(*argv, **kw)


def jsnap(*args, **kw):
    """snapfs ... --json: (exit status, the one object), its four common fields first."""
    r = snap(*args, "--json", **kw)
    out = json.loads(r.stdout)
    assert tuple(out)[:4] == JSON_SHAPE, out
    assert out["ok"] is (r.returncode == 0), (r.returncode, out)
    return r.returncode, out


# ---- a real snapfs daemon -------------------------------------------------------------

# ---- a real snapfs daemon -------------------------------------------------------------

NOBODY_UID = 1000  # a non-root uid for multi-user tests (need not exist in /etc/passwd)


def is_sanitizer_build(binary=SNAPFS) -> bool:
    """True for the ASan+UBSan build of scripts/test.sh (its binaries load libasan)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True,
                         timeout=30).stdout
    return "libasan" in out


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_mounted(path) -> bool:
    path = str(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mnt = line.split()[4].replace("\\040", " ").replace("\\011", "\t")
            mnt = mnt.replace("\\012", "\n").replace("\\134", "\\")
            if mnt == path:
                return True
    return False


class Snapfs:
    """One running `snapfs mount -f` and helpers to publish through it like a client."""

    def __init__(self, binary, path, proc, audit_log, stderr_path):
        self.binary, self.path, self.proc = binary, str(path), proc
        self.audit_log, self.stderr_path = audit_log, stderr_path
        self.stopped = False  # the test ended it through stop()

    def p(self, name=""):
        return os.path.join(self.path, name)

    def stage(self, data: bytes, name="cfg", close=True):
        fd = os.open(self.p(".staging/" + name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if close:
            os.close(fd)
            return None
        return fd

    def publish(self, data: bytes, name="cfg") -> str:
        digest = sha256_hex(data)
        self.stage(data, name)
        os.rename(self.p(".staging/" + name), self.p(digest))
        return digest

    def audit_events(self):
        with open(self.audit_log) as f:
            return [line for line in f.read().splitlines() if line]

    def wait_audit(self, done, timeout=20):
        """The audit log's events, parsed, once done(events) holds (or the deadline passed):
        the daemon writes them from a thread of its own, after the request has its answer."""
        deadline = time.monotonic() + timeout
        while True:
            events = [json.loads(line) for line in self.audit_events()]
            if done(events) or time.monotonic() > deadline:
                return events
            time.sleep(0.02)

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        finally:
            if self.proc.stdout:
                self.proc.stdout.close()
        return rc


def start_snapfs(binary, path, *opts, audit_log=None, expect_ready=True):
    """Starts `snapfs mount -f`. Its standard error goes to PATH.stderr, so a sanitizer
    report from the daemon is kept for the assertion that its exit status fails."""
    args = [binary, "mount", "-f", *opts]
    if audit_log:
        args += ["--audit-log", str(audit_log)]
    args.append(str(path))
    if not expect_ready:
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr_path = str(path) + ".stderr"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()
    if not line.startswith("snapfs: serving"):
        rc = proc.wait(20)
        proc.stdout.close()
        with open(stderr_path) as f:
            raise AssertionError(f"snapfs mount did not start (exit {rc}): {line}{f.read()}")
    return Snapfs(binary, path, proc, audit_log, stderr_path)


def as_uid(uid, code, *args, check=True):
    """Runs Python code as another uid (real and effective), no supplementary groups."""
    r = subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
         "/usr/bin/python3", "-c", code, *[str(a) for a in args]],
        capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, f"as uid {uid}: {r.stdout}{r.stderr}"
    return r


# Prefix for Python code run as another uid (as_uid): argv[1] is the mount, and refused()
# returns the errno a call fails with, or exits non-zero when it succeeds.
UID_PRELUDE = r'''
import errno, hashlib, os, stat, sys
mnt = sys.argv[1]
def refused(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return e.errno
    raise SystemExit(f"{fn.__name__}{a} was not refused")
'''


@contextlib.contextmanager
def helper_fs(argv, mnt, name):
    """A test FUSE server (tinyfs, fakesnap: they print "mounted" once serving) at mnt;
    stopped, reaped and unmounted on exit, whatever happened."""
    os.makedirs(mnt, exist_ok=True)
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 20)
        line = p.stdout.readline() if ready else ""
        assert line.strip() == "mounted", f"{name} did not mount: {line!r}"
        yield p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # A killed server leaves its mount answering ENOTCONN: clear it.
        subprocess.run(["umount", "-l", mnt], capture_output=True, check=False)
        p.stdout.close()
        p.stderr.close()


def errno_of(fn, *args, **kw):
    """The errno an OS call fails with; fails the test if the call succeeds."""
    try:
        fn(*args, **kw)
    except OSError as e:
        return e.errno
    raise AssertionError(f"{getattr(fn, '__name__', fn)}{args} succeeded; expected a refusal")


E = _errno


# ---- the control channel (MNT/.control) -------------------------------------------------

def control(mnt, request, raw=None):
    """One request on MNT/.control: the reply, parsed. raw: bytes written instead of the
    request's JSON (the write's errno then propagates as OSError)."""
    fd = os.open(os.path.join(str(mnt), ".control"), os.O_RDWR | os.O_CLOEXEC)
    try:
        data = raw if raw is not None else json.dumps(request).encode()
        assert os.write(fd, data) == len(data)
        out = b""
        while True:
            chunk = os.pread(fd, 65536, len(out))
            if not chunk:
                break
            out += chunk
        return json.loads(out)
    finally:
        os.close(fd)


def control_ok(mnt, request):
    """A request that must succeed: the reply."""
    reply = control(mnt, request)
    assert reply["ok"] is True and reply["error"] is None, reply
    return reply


def wait_for(cond, what, timeout=20):
    """Waits until cond() holds (a state the daemon reaches by itself); fails naming what."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
