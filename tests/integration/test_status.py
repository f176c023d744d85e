# SPDX-License-Identifier: MIT
"""snapfs status and snapfs metrics on the real daemon (docs/design.md, "Health and metrics"):
what they report after known requests, each refusal beside its allowance (a uid other than
the mount owner and root is refused with EACCES while root is answered), and the metrics text
judged by Prometheus' own parsers: `promtool check metrics` for the text format 0.0.4, and
promtool's OpenMetrics parser (its `tsdb create-blocks-from openmetrics` backfill) for
OpenMetrics."""
import errno
import json
import os
import select
import shutil
import socket
import subprocess
import sys

import pytest

from clients import PYCLIENT, client_env, codes
from snaptest import NOBODY_UID, jsnap, run, snap

PROMTOOL = shutil.which("promtool")


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert os.geteuid() == 0, "these tests mount: run scripts/test.sh (root)"
    assert PROMTOOL, "promtool missing: scripts/deps.sh installs Debian's prometheus package"


def control(fs, request):
    """One raw request through MNT/.control, as root: the daemon's reply."""
    fd = os.open(fs.p(".control"), os.O_RDWR)
    try:
        os.write(fd, json.dumps(request).encode())
        out = b""
        while chunk := os.pread(fd, 65536, len(out)):
            out += chunk
    finally:
        os.close(fd)
    return json.loads(out)


def stamped(text):
    """OpenMetrics text with a timestamp on every sample: the backfill that parses it needs
    one (nothing else changes)."""
    return "".join(line if line.startswith("#") else line.rstrip("\n") + " 1700000000\n"
                   for line in text.splitlines(keepends=True))


def openmetrics_parse(text, workdir):
    """promtool's OpenMetrics parser on text: (exit status, output)."""
    src = os.path.join(workdir, "metrics.om")
    with open(src, "w") as f:
        f.write(stamped(text))
    out = os.path.join(workdir, "blocks")
    r = run(PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", src, out)
    shutil.rmtree(out, ignore_errors=True)
    return r.returncode, r.stdout + r.stderr


def promtool_check(text):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def samples(text):
    """{"name{labels}": value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def test_status_names_the_daemon_its_mounts_and_counts_a_publish_and_a_refusal(
        mount_snapfs, workdir):
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    fs = mount_snapfs("--allow-other", "--readers", "any", "--read-view", view)
    rc, out = jsnap("scope", "create", "--mount", fs.path, "sandbox-a", "--view",
                    os.path.join(workdir, "scope-a"))
    assert rc == 0, out
    digest = fs.publish(b"hello\n")
    # A refused write (EROFS) beside the read of the same snapshot that works.
    with pytest.raises(OSError) as e:
        os.open(fs.p(digest), os.O_WRONLY)
    assert e.value.errno == errno.EROFS
    with open(fs.p(digest), "rb") as f:
        assert f.read() == b"hello\n"
    # Through the read view, whose pages nothing cached yet: a READ the daemon answers.
    with open(os.path.join(view, digest), "rb") as f:
        assert f.read() == b"hello\n"

    rc, out = jsnap("status", "--mount", fs.path)
    assert rc == 0, out
    s = out["status"]
    assert s["pid"] == fs.proc.pid
    assert s["version"] and s["started"].endswith("Z") and s["uptime_s"] >= 0
    assert s["mounts"]["main"]["path"] == fs.path
    assert s["mounts"]["main"]["dev"] == "%d:%d" % (os.major(os.stat(fs.path).st_dev),
                                                    os.minor(os.stat(fs.path).st_dev))
    assert s["mounts"]["read_view"]["path"] == view and s["mounts"]["read_view"]["read_only"]
    assert [(x["name"], x["view"]) for x in s["mounts"]["scopes"]] == [
        ("sandbox-a", os.path.join(workdir, "scope-a"))]
    assert s["store"] == {"dir": None, "blobs": 1, "bytes": 6, "corrupt": 0}
    assert s["usage"]["snapshots"] == 1 and s["usage"]["bytes"] == 6
    assert s["limits"]["max_snapshots"] == 4096 and s["limits"]["max_bytes"] == 64 << 20
    c = s["counters"]
    assert c["publishes"] == 1 and c["events"]["publish"] == 1
    assert c["refusals_by_reason"] == {"EROFS": 1} and c["refusals"] == 1
    assert c["bytes_read"] == 6 and c["requests"] > 0

    # The text form says the same.
    r = snap("status", "--mount", fs.path)
    assert r.returncode == 0, r.stderr
    assert f"pid        {fs.proc.pid}\n" in r.stdout
    assert "published  1\n" in r.stdout and "refused    1 (EROFS 1)\n" in r.stdout


@pytest.mark.readers_any
def test_a_uid_other_than_the_owner_and_root_is_refused_status_and_metrics(snapfs):
    rc, out = jsnap("status", "--mount", snapfs.path, uid=NOBODY_UID)
    assert rc == 1 and out["error"] == "EACCES" and codes(out) == {"control"}, out
    assert out["status"] is None
    r = snap("metrics", "--mount", snapfs.path, uid=NOBODY_UID)
    # The reason first: who may, not the errno's words.
    assert r.returncode == 1 and r.stdout == "" and r.stderr.splitlines()[0] == \
        f"snapfs metrics: {snapfs.path}: only the mount owner and root may use .control", r
    # The same uid reads the mount (the refusal is the control channel's, not the mount's),
    # and root, the owner here, is answered.
    r = snap("ls", "--mount", snapfs.path, uid=NOBODY_UID)
    assert r.returncode == 0, r.stderr
    rc, out = jsnap("status", "--mount", snapfs.path)
    assert rc == 0 and out["status"]["pid"] == snapfs.proc.pid, out
    r = snap("metrics", "--mount", snapfs.path)
    assert r.returncode == 0 and r.stdout.endswith("# EOF\n"), r.stderr


def test_openmetrics_text_is_taken_by_promtools_parser_and_a_cut_one_is_not(mount_snapfs,
                                                                              workdir):
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    snapfs = mount_snapfs("--allow-other", "--readers", "any", "--read-view", view)
    digest = snapfs.publish(b"x" * 1000)
    with open(os.path.join(view, digest), "rb") as f:
        assert len(f.read()) == 1000
    r = snap("metrics", "--mount", snapfs.path)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    rc, why = openmetrics_parse(text, workdir)
    assert rc == 0, why
    s = samples(text)
    assert s["snapfs_publishes_total"] == 1
    assert s["snapfs_snapshots"] == 1 and s["snapfs_content_bytes"] == 1000
    assert s['snapfs_events_total{event="publish"}'] == 1
    assert s["snapfs_read_bytes_total"] == 1000
    # A histogram per operation asked: buckets cumulative up to +Inf, which is the count.
    assert (s['snapfs_request_duration_seconds_bucket{op="read",le="+Inf"}'] ==
            s['snapfs_request_duration_seconds_count{op="read"}'] > 0)
    assert "# TYPE snapfs_publishes counter\n" in text
    assert "# UNIT snapfs_read_bytes bytes\n" in text
    # The parser is no rubber stamp: the same text cut before its "# EOF" is refused.
    rc, why = openmetrics_parse(text[:text.rindex("# EOF")], workdir)
    assert rc != 0 and "EOF" in why, why


def test_prometheus_text_passes_promtool_check_metrics_and_a_broken_line_does_not(snapfs):
    snapfs.publish(b"cfg\n")
    r = snap("metrics", "--mount", snapfs.path, "--format", "prometheus")
    assert r.returncode == 0, r.stderr
    rc, why = promtool_check(r.stdout)
    assert rc == 0 and why == "", why
    assert "# EOF" not in r.stdout and "# TYPE snapfs_publishes_total counter\n" in r.stdout
    assert samples(r.stdout)["snapfs_publishes_total"] == 1
    rc, why = promtool_check(r.stdout.replace('{version="', '{version="x', 1)
                             .replace('"} 1\n', ' 1\n', 1))
    assert rc != 0 and "parsing error" in why, why


def test_metrics_output_replaces_the_file_whole_and_a_missing_directory_writes_nothing(
        snapfs, workdir):
    dest = os.path.join(workdir, "textfile", "snapfs.prom")
    os.mkdir(os.path.dirname(dest))
    with open(dest, "w") as f:
        f.write("old\n")
    r = snap("metrics", "--mount", snapfs.path, "--format", "prometheus", "--output", dest)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert os.stat(dest).st_mode & 0o777 == 0o600
    with open(dest) as f:
        text = f.read()
    assert text.startswith("# HELP snapfs_build ") and promtool_check(text) == (0, "")
    assert os.listdir(os.path.dirname(dest)) == ["snapfs.prom"]  # no temporary file left
    missing = os.path.join(workdir, "nowhere", "snapfs.prom")
    r = snap("metrics", "--mount", snapfs.path, "--output", missing)
    assert r.returncode == 2 and "No such file or directory" in r.stderr, r
    assert not os.path.exists(os.path.dirname(missing))


def read_as(uid, gid, path):
    """cat(1) of path as uid with gid its only group: (exit code, stdout, stderr)."""
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "cat",
                        path], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_the_metrics_file_is_the_owners_and_the_group_it_names_no_other_uids(snapfs, workdir):
    """Every scope's publish, grant and refusal counts are in it: a tenant must not read
    them. 0600 by default, 0640 of --group GROUP for a collector of that group."""
    d = os.path.join(workdir, "textfile")
    os.mkdir(d)
    os.chmod(d, 0o755)
    dest = os.path.join(d, "snapfs.prom")
    r = snap("metrics", "--mount", snapfs.path, "--output", dest)
    assert r.returncode == 0, r.stderr
    st = os.stat(dest)
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o600, 0, 0)
    rc, out, err = read_as(NOBODY_UID, NOBODY_UID, dest)
    assert (rc, out) == (1, "") and "Permission denied" in err, err
    with open(dest) as f:  # the owner's read
        assert "snapfs_publishes_total" in f.read()
    # A group named by number (one nobody else is in): its member reads, others still not.
    r = snap("metrics", "--mount", snapfs.path, "--output", dest, "--group", "4321")
    assert r.returncode == 0, r.stderr
    st = os.stat(dest)
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o640, 0, 4321)
    rc, out, err = read_as(NOBODY_UID, 4321, dest)
    assert rc == 0 and "snapfs_publishes_total" in out, err
    rc, out, err = read_as(NOBODY_UID, NOBODY_UID, dest)
    assert (rc, out) == (1, "") and "Permission denied" in err, err
    # By name; a name no group has, or --group without --output, writes nothing.
    r = snap("metrics", "--mount", snapfs.path, "--output", dest, "--group", "root")
    assert r.returncode == 0 and os.stat(dest).st_gid == 0, r.stderr
    r = snap("metrics", "--mount", snapfs.path, "--output", dest + ".2", "--group", "no-such-g")
    assert r.returncode == 2 and "--group: no group 'no-such-g'" in r.stderr
    r = snap("metrics", "--mount", snapfs.path, "--group", "root")
    assert r.returncode == 2 and "--group: only with --output" in r.stderr and r.stdout == ""
    assert os.listdir(d) == ["snapfs.prom"]


def test_the_control_channel_refuses_an_unknown_field_or_format_and_takes_the_known(snapfs):
    out = control(snapfs, {"op": "metrics", "format": "xml"})
    assert out["ok"] is False and out["error"] == "EINVAL", out
    out = control(snapfs, {"op": "status", "verbose": True})
    assert out["ok"] is False and out["error"] == "EINVAL" and "verbose" in out["message"]
    out = control(snapfs, {"op": "metrics", "format": "prometheus"})
    assert out["ok"] is True and out["format"] == "prometheus" and "# EOF" not in out["text"]
    out = control(snapfs, {"op": "status"})
    assert out["ok"] is True and out["status"]["pid"] == snapfs.proc.pid


def test_status_goes_to_the_notify_socket_and_follows_a_publish_and_a_refusal(
        mount_snapfs, workdir, monkeypatch):
    path = os.path.join(workdir, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    sock.bind(path)
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        fs = mount_snapfs("--allow-other")
        monkeypatch.delenv("NOTIFY_SOCKET")

        def status_with(want):
            """The STATUS= datagrams until one holds want (each waited for, bounded)."""
            seen = []
            while True:
                ready, _, _ = select.select([sock], [], [], 60)
                assert ready, f"no STATUS= holding {want!r}; seen {seen}"
                msg = sock.recv(4096).decode()
                seen.append(msg)
                if msg.startswith("STATUS=") and want in msg:
                    return msg

        # The first comes as the daemon starts; what it counts depends on whether it was sent
        # before the publish below or after, so only its shape is asserted.
        first = status_with("serving ")
        assert first.startswith(f"STATUS=serving {fs.path}: "), first
        digest = fs.publish(b"status\n")
        with pytest.raises(OSError) as e:
            os.truncate(fs.p(digest), 0)
        assert e.value.errno == errno.EROFS
        msg = status_with("1 refused")
        assert msg == (f"STATUS=serving {fs.path}: 1 snapshots (7 B of 64.0 MiB), 0 scopes, "
                       "1 published, 1 refused"), msg
    finally:
        sock.close()


PY_STATUS = """
import errno, sys
import snapfs_client as s
mount = sys.argv[1]
try:
    s.status(mount)
    print("allowed")
except s.SnapfsError as e:
    print(errno.errorcode[e.errno])
"""


def test_the_python_client_asks_status_and_metrics_and_a_non_owner_gets_eacces(snapfs):
    env = dict(client_env(), PYTHONPATH=str(PYCLIENT.parent))
    code = ("import json, sys, snapfs_client as s; st = s.status(sys.argv[1]); "
            "print(json.dumps([st['pid'], s.metrics(sys.argv[1], 'prometheus')]))")
    r = run(sys.executable, "-c", code, snapfs.path, env=env)
    assert r.returncode == 0, r.stderr
    pid, text = json.loads(r.stdout)
    assert pid == snapfs.proc.pid and promtool_check(text) == (0, "")
    r = run("setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups",
            sys.executable, "-c", PY_STATUS, snapfs.path, env=env)
    assert (r.returncode, r.stdout) == (0, "EACCES\n"), r.stderr
    r = run(sys.executable, "-c", PY_STATUS, snapfs.path, env=env)
    assert (r.returncode, r.stdout) == (0, "allowed\n"), r.stderr
