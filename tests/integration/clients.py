# SPDX-License-Identifier: MIT
"""The two libsnapfs clients the tests drive with the very same cases: apiclient (C, through
the public header and libsnapfs.so) and the Python client, client/python/snapfs_client
(ctypes; run as a directory, its __main__). Both take the same commands and print the same
JSON."""
import contextlib
import functools
import json
import os
import re
import select
import signal
import subprocess
import sys

from snaptest import BUILD, ROOT, SNAPFS, helper_fs, sha256_hex

LIBSNAPFS = BUILD / "client" / "libsnapfs.so.0"
APICLIENT = BUILD / "tests" / "helpers" / "apiclient"
# The package; `python PYCLIENT ...` runs its command, and PYCLIENT.parent is where it imports
# from.
PYCLIENT = ROOT / "client" / "python" / "snapfs_client"
FAKESNAP = BUILD / "tests" / "helpers" / "fakesnap"
MOUNTTOOL = BUILD / "tests" / "helpers" / "mounttool"
SYMBOL_FILE = ROOT / "client" / "libsnapfs.sym"


@functools.lru_cache(maxsize=None)
def exported_symbols() -> "dict[str, str]":
    """What libsnapfs exports, read from the one list of it (client/libsnapfs.sym): each
    function and the version node that brought it in."""
    with open(SYMBOL_FILE) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    out = {}
    for node, body in re.findall(r"([\w.]+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].split("global:")[-1]
        for name in re.findall(r"(\w+)\s*;", glob):
            out[name] = node
    return out


@functools.lru_cache(maxsize=None)
def sanitized() -> bool:
    """True when libsnapfs was built with ASan (the sanitize build of scripts/test.sh)."""
    r = subprocess.run(["ldd", str(LIBSNAPFS)], capture_output=True, text=True, timeout=30)
    return "libasan" in r.stdout


@functools.lru_cache(maxsize=None)
def asan_runtime() -> str:
    r = subprocess.run(["cc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                       timeout=30)
    return r.stdout.strip()


def client_env():
    """Environment for a process that loads libsnapfs.so: the library to load, and under the
    sanitize build the ASan runtime first in line (an uninstrumented python cannot load an
    instrumented library otherwise) with leak checking off for the interpreter's own
    allocations."""
    env = dict(os.environ, SNAPFS_LIBRARY=str(LIBSNAPFS))
    if sanitized():
        env["LD_PRELOAD"] = asan_runtime()
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


CLIENTS = {
    "c": [str(APICLIENT)],
    "python": [sys.executable, str(PYCLIENT)],
}


class Client:
    """Runs one client's command and returns its JSON, checking that the exit status agrees
    with "ok" and that a refusal carries its errno and at least one reason."""

    def __init__(self, name, uid=None):
        self.name, self.uid = name, uid

    def as_uid(self, uid):
        return Client(self.name, uid)

    def __call__(self, *args, input=None):
        argv = [*CLIENTS[self.name], *[str(a) for a in args]]
        if self.uid is not None:
            argv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                    *argv]
        r = subprocess.run(argv, input=input, capture_output=True, timeout=60,
                           env=client_env())
        assert r.returncode in (0, 1), f"{self.name} {args}: exit {r.returncode}: {r.stderr!r}"
        out = json.loads(r.stdout)
        assert out["ok"] == (r.returncode == 0), out
        assert "report_error_mismatch" not in out, f"report.error is not the return value: {out}"
        if not out["ok"]:
            assert out["error"] and out["reasons"], f"a refusal without its reasons: {out}"
        return out

    def publish(self, mnt, data: bytes, *opts, from_fd=False):
        extra = ["--from-fd"] if from_fd else []
        return self("publish", *opts, *extra, mnt, "-", input=data)

    def open(self, mnt, binding, *opts):
        return self("open", *opts, mnt, str(binding))


def codes(out):
    return {r["code"] for r in out["reasons"]}


def fakesnap(mnt, *entries):
    """The impostor mounted at mnt (by root: the owner a root client trusts by default)."""
    return helper_fs([FAKESNAP, mnt, *entries], mnt, "fakesnap")


@contextlib.contextmanager
def tmpfs(path, opts="rw,nosuid,nodev,noexec,mode=755,size=1m"):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], capture_output=True, check=False)


def slide_tmpfs_beneath(path):
    """Stacks a tmpfs under the mount at path (MOVE_MOUNT_BENEATH): the path still reaches
    the same top mount, which is no longer alone there."""
    r = subprocess.run([str(MOUNTTOOL), "beneath", path, "nodev,mode=1777,size=1m"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def put(fs, data: bytes, uid=None) -> str:
    """Publishes through `snapfs put` (libsnapfs) and returns the digest. The library, not a
    hand-written write-close-rename, so publishing here behaves as for any real client."""
    argv = [str(SNAPFS), "put", "--mount", fs.path, "--owner", "0", "-"]
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    r = subprocess.run(argv, input=data, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    digest = sha256_hex(data)
    assert r.stdout.decode().startswith(f"sha256={digest} ")
    return digest


PUBLISH_MANY = """
import sys
sys.path.insert(0, sys.argv[1])
import snapfs_client as snapfs
for i in range(int(sys.argv[3])):
    snapfs.publish(sys.argv[2], b"snapshot %d\\n" % i)
"""


def publish_many(fs, n):
    """n snapshots published by one Python client process (the library, in a loop)."""
    r = subprocess.run([sys.executable, "-c", PUBLISH_MANY, str(PYCLIENT.parent), fs.path,
                        str(n)], capture_output=True, text=True, timeout=300, env=client_env())
    assert r.returncode == 0, r.stderr
