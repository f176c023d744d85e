# SPDX-License-Identifier: MIT
"""The round trip through a real registry: snapfs export -> skopeo copy into Debian's
docker-registry on the loopback address -> skopeo copy back into another layout -> snapfs
import on another mount: same digests, same bytes, the signature along."""
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.request

import pytest

from snaptest import SNAPFS, run

CONFIG = b'{"mcpServers": {"fs": {"command": "npx", "args": ["server"]}}}\n'
DEADLINE = 60  # seconds to wait for the registry to answer: a bound, not a timing


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def registry(workdir):
    """docker-registry serving a filesystem root in workdir on a free loopback port; stopped
    and reaped on exit. Another process may take the port between our probe and its bind:
    then it exits, and we draw another port."""
    for _attempt in range(5):
        port = free_port()
        config = os.path.join(workdir, "registry.yml")
        with open(config, "w") as f:
            f.write("version: 0.1\n"
                    "log:\n  level: warn\n"
                    f"storage:\n  filesystem:\n    rootdirectory: {workdir}/registry\n"
                    f"http:\n  addr: 127.0.0.1:{port}\n")
        with open(os.path.join(workdir, "registry.log"), "w") as log:
            proc = subprocess.Popen(["docker-registry", "serve", config], stdout=log,
                                    stderr=subprocess.STDOUT)
        try:
            end = time.monotonic() + DEADLINE
            while proc.poll() is None and not answers(port):
                assert time.monotonic() < end, "docker-registry never answered"
                time.sleep(0.05)
            if proc.poll() is None:
                yield port
                return
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.wait(30)
    raise AssertionError("docker-registry did not start on any port")


def skopeo(*args):
    r = run("skopeo", "--insecure-policy", *args, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def test_round_trip_through_a_registry_keeps_digests_bytes_and_signature(mount_snapfs,
                                                                         workdir):
    for tool in ("skopeo", "docker-registry"):
        assert subprocess.run(["which", tool], capture_output=True).returncode == 0, \
            f"{tool} missing: run scripts/deps.sh"
    src = mount_snapfs(name="src")
    dst = mount_snapfs(name="dst")
    digests = sorted([src.publish(CONFIG, "mcp.json"), src.publish(os.urandom(4096), "blob")])
    key = os.path.join(workdir, "key")
    assert run(SNAPFS, "keygen", key).returncode == 0
    out_layout, in_layout = os.path.join(workdir, "out"), os.path.join(workdir, "in")
    r = run(SNAPFS, "export", "--mount", src.path, "--sign", key, f"oci:{out_layout}:v1",
            "--json")
    assert r.returncode == 0, r.stderr
    exported = json.loads(r.stdout)

    with registry(workdir) as port:
        for tag in ("v1", "v1.sig"):
            skopeo("copy", "--dest-tls-verify=false", f"oci:{out_layout}:{tag}",
                   f"docker://127.0.0.1:{port}/snapfs/configs:{tag}")
        raw = skopeo("inspect", "--raw", "--tls-verify=false",
                     f"docker://127.0.0.1:{port}/snapfs/configs:v1").stdout
        assert "sha256:" + hashlib.sha256(raw.encode()).hexdigest() == exported["manifest"]
        for tag in ("v1", "v1.sig"):
            skopeo("copy", "--src-tls-verify=false",
                   f"docker://127.0.0.1:{port}/snapfs/configs:{tag}", f"oci:{in_layout}:{tag}")

    r = run(SNAPFS, "import", "--mount", dst.path, "--verify-key", key + ".pub",
            f"oci:{in_layout}:v1", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    imported = json.loads(r.stdout)
    assert imported["manifest"] == exported["manifest"] and imported["signed"]
    assert [s["sha256"] for s in imported["snapshots"]] == digests
    for d in digests:
        with open(src.p(d), "rb") as a, open(dst.p(d), "rb") as b:
            assert a.read() == b.read()
