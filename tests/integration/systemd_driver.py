# SPDX-License-Identifier: MIT
"""Runs inside a container booted with a real systemd (test_systemd.py boots it): drives the
installed snapfs units as an operator would, and writes what happened as one JSON object.

Usage (as the container's oneshot unit): python3 systemd_driver.py CONFIG OUT

CONFIG (JSON) holds the fstab line, the read-view drop-in and the sed script that sets the read
view as docs/deployment.md shows them, and the directory of the installed config files.
OUT/result.json gets one entry per step; a step that raised has its error under
"errors" and the steps after it still run. OUT/journal.txt is the whole journal, for whoever
reads a failure. Nothing here asserts: test_systemd.py does, on the result.
"""
import ctypes
import errno
import grp
import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

DEADLINE = 60.0
LOG_DIR = "/var/log/snapfs"
SANITIZER_MARKERS = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "SUMMARY: UndefinedBehaviorSanitizer")


def sh(*args, timeout=120, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, **kw)
    return {"rc": r.returncode, "out": r.stdout, "err": r.stderr}


def wait_for(pred, what, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


def show(unit, *props):
    r = sh("systemctl", "show", unit, *[f"--property={p}" for p in props])
    return dict(line.split("=", 1) for line in r["out"].splitlines() if "=" in line)


def mountinfo(path):
    """The mountinfo lines at path (a stacked or dead mount is still listed)."""
    with open("/proc/self/mountinfo") as f:
        return [line.strip() for line in f if line.split()[4] == path]


def fstype(line):
    return line.split(" - ", 1)[1].split()[0]


def snapfs_pids():
    pids = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/comm") as f:
                    if f.read().strip() == "snapfs":
                        pids.append(int(e))
            except OSError:
                pass
    return sorted(pids)


def errno_name(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return errno.errorcode[e.errno]
    return "OK"


def publish(mnt, data, name):
    digest = hashlib.sha256(data).hexdigest()
    fd = os.open(os.path.join(mnt, ".staging", name), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.rename(os.path.join(mnt, ".staging", name), os.path.join(mnt, digest))
    return digest


def listing(mnt):
    return sorted(n for n in os.listdir(mnt) if not n.startswith("."))


def served(mnt):
    """(fstype, listing) of what answers at mnt, or the errno it fails with."""
    lines = mountinfo(mnt)
    try:
        names = listing(mnt)
    except OSError as e:
        return {"mounts": [fstype(l) for l in lines], "error": errno.errorcode[e.errno]}
    return {"mounts": [fstype(l) for l in lines], "listing": names,
            "flags": lines[-1].split()[5] if lines else None}


def writes_to(pid, path):
    """True once one of pid's descriptors is the file now at path (not a renamed one)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fst = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def audit_lines(base):
    """Every audit event in base and its rotated files (compressed or not), by file."""
    found = {}
    for name in sorted(os.listdir(os.path.dirname(base))):
        path = os.path.join(os.path.dirname(base), name)
        if name != os.path.basename(base) and not name.startswith(os.path.basename(base) + "."):
            continue
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt") as f:
            found[name] = [json.loads(line) for line in f if line.strip()]
    return found


def published_in(base, digests):
    """How often each digest's publish event appears across base and its rotated files."""
    counts = {d: 0 for d in digests}
    for events in audit_lines(base).values():
        for e in events:
            if e.get("event") == "publish" and e.get("digest") in counts:
                counts[e["digest"]] += 1
    return counts


def in_live_log(base, digests):
    """True once the publish event of one of digests is in base itself (not a rotated file).
    A line the daemon is writing at this moment is not there yet."""
    wanted = set(digests)
    try:
        with open(base) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("event") == "publish" and e.get("digest") in wanted:
                    return True
    except FileNotFoundError:
        pass
    return False


def main_pid(unit):
    return int(show(unit, "MainPID")["MainPID"])


def running_again(unit, old_pid):
    """True once unit runs (READY=1 came) with a main pid other than old_pid. One query: two
    would see two moments, say "running" from before a SIGKILL was noticed and a new pid of
    0 from after."""
    s = show(unit, "ActiveState", "SubState", "MainPID")
    return (s["ActiveState"], s["SubState"]) == ("active", "running") and \
        s["MainPID"] not in ("0", str(old_pid))


def journal(unit):
    return sh("journalctl", "--no-pager", "-o", "cat", "-u", unit)["out"]


def make_instance_conf(confdir, name):
    """NAME.conf of snapfs@NAME.service, made from the service's file as docs/deployment.md
    says: the same settings, with a store, a runtime store and an audit log of its own."""
    with open(os.path.join(confdir, "snapfs.conf")) as f:
        text = f.read()
    text = re.sub(r"(?m)^store = .*$", f"store = /var/lib/snapfs-{name}", text)
    text = re.sub(r"(?m)^runtime-store = .*$", f"runtime-store = /run/snapfs-{name}-scopes",
                  text)
    text = re.sub(r"(?m)^audit-log = .*$", f"audit-log = {LOG_DIR}/audit-{name}.log", text)
    path = os.path.join(confdir, f"{name}.conf")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def daemon_reload():
    r = sh("systemctl", "daemon-reload")
    if r["rc"] != 0:
        raise RuntimeError(f"daemon-reload: {r}")


# ---- the steps --------------------------------------------------------------------------

def step_fstab_on_a_fresh_host(cfg, res):
    """The documented fstab line, mount -a, before anything made /var/log/snapfs."""
    res["before"] = {"log_dir": os.path.exists(LOG_DIR), "mountpoint": os.path.exists("/run/snapfs")}
    with open("/etc/fstab", "w") as f:
        f.write(cfg["fstab"] + "\n")
    try:
        res["mount"] = sh("mount", "-a")
        res["served"] = served("/run/snapfs")
        if res["mount"]["rc"] != 0:
            return
        res["pids"] = snapfs_pids()
        with open("/run/snapfs.pid") as f:
            res["pidfile"] = f.read()
        digest = publish("/run/snapfs", b"published through fstab", "fstab")
        res["digest"] = digest
        log = os.path.join(LOG_DIR, "audit.log")
        wait_for(lambda: published_in(log, [digest])[digest], "the publish in the audit log")
        st = os.stat(LOG_DIR)
        res["log_dir_mode"] = oct(st.st_mode & 0o7777)
        # The service started where this daemon serves: refused, and what the unit does
        # after a failure (ExecStopPost=) leaves the live mount serving.
        res["service_on_top"] = sh("systemctl", "start", "snapfs.service")
        res["service_show"] = show("snapfs.service", "ActiveState", "Result", "NRestarts")
        res["service_exit"] = exits("snapfs.service")
        res["service_journal"] = journal("snapfs.service")
        sh("systemctl", "reset-failed", "snapfs.service")
        res["still_served"] = served("/run/snapfs")
        res["umount"] = sh("umount", "/run/snapfs")
        wait_for(lambda: not snapfs_pids(), "the daemon to exit")
        res["after"] = {"mounts": mountinfo("/run/snapfs"), "pids": snapfs_pids()}
    finally:
        os.unlink("/etc/fstab")


def step_start_status_journal(cfg, res):
    r = sh("systemctl", "start", "snapfs.service")
    # Nothing in between: start has returned, so the mount must serve now.
    res["served"] = served("/run/snapfs")
    res["start"] = r
    res["show"] = show("snapfs.service", "ActiveState", "SubState", "MainPID", "Type",
                       "NRestarts")
    res["status"] = sh("systemctl", "status", "--no-pager", "--lines=20", "snapfs.service")
    pid = res["show"]["MainPID"]
    want = f"snapfs: serving /run/snapfs (pid {pid})"
    # journald may store the line a moment after the daemon wrote it.
    wait_for(lambda: want in journal("snapfs.service"), "the journal line")
    res["journal"] = journal("snapfs.service")
    res["modes"] = {p: oct(os.stat(p).st_mode & 0o7777)
                    for p in (LOG_DIR, "/var/lib/snapfs", os.path.join(LOG_DIR, "audit.log"))}


TEXTFILE = "/var/lib/prometheus/node-exporter/snapfs.prom"


def step_status_and_metrics(cfg, res):
    """STATUS= in systemctl status, following a publish; snapfs status; the metrics service
    and its timer writing node_exporter's file."""
    mnt, snapfs = "/run/snapfs", os.path.join(cfg["bindir"], "snapfs")

    def status_text(want):
        text = show("snapfs.service", "StatusText").get("StatusText", "")
        return text if want in text else None

    res["first"] = wait_for(lambda: status_text("serving /run/snapfs: "), "a STATUS=")
    res["digest"] = publish(mnt, b"counted in STATUS=", "status")
    res["status_text"] = wait_for(lambda: status_text("1 published"), "the publish in STATUS=")
    res["systemctl_status"] = sh("systemctl", "status", "--no-pager", "--lines=0",
                                 "snapfs.service")
    res["main_pid"] = main_pid("snapfs.service")
    res["status"] = sh(snapfs, "status", "--mount", mnt, "--json")
    # The unit writes the file for the group node_exporter runs as (--group prometheus), which
    # Debian's prometheus-node-exporter makes; this fresh root has none: made as it would.
    try:
        grp.getgrnam("prometheus")
    except KeyError:
        sh("groupadd", "--system", "prometheus")
    res["metrics_service"] = sh("systemctl", "start", "snapfs-metrics.service")
    with open(TEXTFILE) as f:
        res["textfile"] = f.read()
    st = os.stat(TEXTFILE)
    res["textfile_mode"] = oct(st.st_mode & 0o7777)
    res["textfile_group"] = grp.getgrgid(st.st_gid).gr_name
    os.unlink(TEXTFILE)
    # The timer runs the service at once when started, then every 15 s.
    res["timer"] = sh("systemctl", "start", "snapfs-metrics.timer")
    wait_for(lambda: os.path.exists(TEXTFILE), "the timer's run of the metrics service")
    with open(TEXTFILE) as f:
        res["timer_textfile"] = f.read()
    res["timer_show"] = show("snapfs-metrics.timer", "ActiveState", "Triggers")
    sh("systemctl", "stop", "snapfs-metrics.timer")


def rotate(res):
    r = sh("logrotate", "--force", "--state", "/tmp/logrotate.state",
           "/etc/logrotate.d/snapfs")
    res.setdefault("logrotate", []).append(r)
    return r


def step_reload_and_logrotate(cfg, res):
    """A stream of publishes while logrotate rotates twice: every line is somewhere."""
    mnt, log = "/run/snapfs", os.path.join(LOG_DIR, "audit.log")
    pid = main_pid("snapfs.service")
    res["reload"] = sh("systemctl", "reload", "snapfs.service")
    res["reload_show"] = show("snapfs.service", "ActiveState", "SubState", "MainPID")
    digests, stop, failures = [], threading.Event(), []

    def publisher():
        i = 0
        while not stop.is_set():
            try:
                digests.append(publish(mnt, b"line %d of the stream" % i, f"s{i}"))
            except OSError as e:
                failures.append(f"{i}: {e}")
                return
            i += 1

    def logged(since):
        # 20 publishes since `since`, and the line of one of them already in the live file:
        # the daemon's audit writer is a thread of its own, so a line may still be queued when
        # its publish returns. Rotating only then gives each file a line, whatever the load.
        return len(digests) >= since + 20 and in_live_log(log, digests[since:])

    t = threading.Thread(target=publisher)
    t.start()
    try:
        for n in (1, 2):
            before = len(digests)
            wait_for(lambda: logged(before), "publishes logged before a rotation")
            rotate(res)
            # The daemon writes to the new file: the reload (SIGHUP) reached it.
            wait_for(lambda: writes_to(pid, log), f"the reopen after rotation {n}")
        before = len(digests)
        wait_for(lambda: logged(before), "publishes logged after the rotations")
    finally:
        stop.set()
        t.join()
    res["failures"] = failures
    res["published"] = len(digests)
    wait_for(lambda: all(published_in(log, digests).values()), "every line written")
    counts = published_in(log, digests)
    res["counts"] = sorted(set(counts.values()))
    res["files"] = {name: sum(1 for e in events if e.get("digest") in counts)
                    for name, events in audit_lines(log).items()}
    res["same_pid"] = main_pid("snapfs.service") == pid
    # Each rotation reached the daemon through systemctl reload (ExecReload=), as did ours.
    res["reloaded"] = journal("snapfs.service").count("Reloaded snapfs.service")


def step_kill_9_restarts(cfg, res):
    mnt = "/run/snapfs"
    res["before"] = listing(mnt)
    pid = main_pid("snapfs.service")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: running_again("snapfs.service", pid), "the restart")
    res["show"] = show("snapfs.service", "ActiveState", "SubState", "NRestarts", "MainPID")
    res["exit"] = exits("snapfs.service")[-1:]
    res["old_pid"] = pid
    res["served"] = served(mnt)


READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "takeover_reader.py")


def control(mnt, request):
    fd = os.open(os.path.join(mnt, ".control"), os.O_RDWR)
    try:
        os.write(fd, json.dumps(request).encode())
        out = b""
        while True:
            chunk = os.pread(fd, 65536, len(out))
            if not chunk:
                return json.loads(out)
            out += chunk
    finally:
        os.close(fd)


SANDBOX_VIEW = "/run/snapfs"  # where a sandbox sees its scope's view


def sandboxed(argv, view, outdir):
    """argv in a bubblewrap sandbox: this host's /usr and /etc, the readers' files and view
    (at SANDBOX_VIEW) read-only, outdir read-write; pid, ipc and uts namespaces of its own.
    No network namespace: under nspawn bwrap cannot bring its loopback up (RTM_NEWADDR
    fails), and a reader needs none."""
    here = os.path.dirname(READER)
    return ["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--dir", "/run", "--ro-bind", here, here,
            "--bind", outdir, outdir, "--ro-bind", view, SANDBOX_VIEW, "--", *argv]


def start_reader(pairs, out, uid=None, sandbox=None):
    """takeover_reader.py on pairs (PATH=SHA256), as uid if given, in a sandboxed() one if
    sandbox is (view, outdir): then each PATH is under SANDBOX_VIEW."""
    argv = ["/usr/bin/python3", READER, out, out + ".stop", *pairs]
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    if sandbox is not None:
        argv = sandboxed(argv, *sandbox)
    return subprocess.Popen(argv, stderr=subprocess.DEVNULL)


def reader_progress(out):
    try:
        with open(out + ".progress") as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


def readers_go_on(outs):
    """Returns once every reader reporting to outs has read another whole round."""
    before = [reader_progress(o) for o in outs]
    wait_for(lambda: all(reader_progress(o) > b for o, b in zip(outs, before)),
             "the readers to go on")


def stop_readers(outs, procs, res):
    """Stops the readers; res gets their exit statuses ("exit")."""
    for o, p in zip(outs, procs):
        open(o + ".stop", "w").close()
        res.setdefault("exit", []).append(p.wait(60))


def reader_reports(outs):
    """What each reader reported, in the order of outs."""
    reports = []
    for o in outs:
        with open(o) as f:
            reports.append(json.load(f))
    return reports


def ident(path):
    st = os.stat(path)
    return [st.st_dev, st.st_ino]


def step_takeover(cfg, res):
    """Two readers checking every byte (takeover_reader.py), root on /run/snapfs and uid
    1000 on a scope's view, through systemctl restart, kill -9 and a stall past WatchdogSec=:
    each time a successor takes the mounts over from the unit's file-descriptor store."""
    mnt, view, outdir = "/run/snapfs", "/run/snapfs-box", "/run/takeover-out"
    digest = publish(mnt, os.urandom(200000), "takeover")
    res["create"] = control(mnt, {"op": "scope-create", "name": "box", "view": view,
                                  "uids": [1000]})
    res["grant"] = control(mnt, {"op": "grant", "scope": "box", "sha256": digest})
    os.mkdir(outdir)
    os.chmod(outdir, 0o777)
    paths = (mnt, view, f"{mnt}/{digest}", f"{view}/{digest}")
    res["ident_before"] = [ident(p) for p in paths]
    host = start_reader([f"{mnt}/{digest}={digest}"], f"{outdir}/host.json")
    box = start_reader([f"{view}/{digest}={digest}"], f"{outdir}/box.json", uid=1000)
    outs = (f"{outdir}/host.json", f"{outdir}/box.json")
    try:
        readers_go_on(outs)
        res["actions"] = []
        for action in ("restart", "kill-9", "stall"):
            pid = main_pid("snapfs.service")
            if action == "restart":
                r = sh("systemctl", "restart", "snapfs.service")
                if r["rc"] != 0:
                    raise RuntimeError(f"restart: {r}")
            else:
                os.kill(pid, signal.SIGKILL if action == "kill-9" else signal.SIGSTOP)
            wait_for(lambda: running_again("snapfs.service", pid), f"the {action} taken over")
            readers_go_on(outs)
            res["actions"].append([action, exits("snapfs.service")[-1:]])
    finally:
        stop_readers(outs, (host, box), res)
    res["host"], res["box"] = reader_reports(outs)
    res["ident_after"] = [ident(p) for p in paths]
    res["show"] = show("snapfs.service", "NRestarts")
    res["remove"] = control(mnt, {"op": "scope-remove", "name": "box"})
    # Three starts in a few seconds: the unit's start limit (5 in 10 s, which stops a crash
    # loop) is reset, so the steps after this one start afresh.
    sh("systemctl", "reset-failed", "snapfs.service")


def holds(top, needle):
    """Whether any file under top holds the bytes needle (grep -r)."""
    for d, _, files in os.walk(top):
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                if needle in f.read():
                    return True
    return False


def step_scope_content_lives_in_ram(cfg, res):
    """put --scope under the shipped unit: the token in its runtime store (/run, a tmpfs),
    never in its store under /var/lib; systemctl restart keeps the scope and the grant's
    content."""
    mnt, snap, view = "/run/snapfs", "/usr/local/bin/snapfs", "/run/snapfs-test-views/a"
    os.makedirs(os.path.dirname(view), exist_ok=True)
    token = "TOKEN-unit-" + os.urandom(16).hex()
    res["create"] = sh(snap, "scope", "create", "--mount", mnt, "unit-a", "--view", view)
    res["put"] = sh(snap, "put", "--mount", mnt, "--scope", "unit-a", "--as", "cfg", "-",
                    input=token)
    res["fstype"] = sh("stat", "-f", "-c", "%T", "/run/snapfs-scopes")["out"].strip()
    res["store"] = holds("/var/lib/snapfs", token.encode())
    res["runtime"] = holds("/run/snapfs-scopes", token.encode())
    pid = main_pid("snapfs.service")
    res["restart"] = sh("systemctl", "restart", "snapfs.service")
    wait_for(lambda: running_again("snapfs.service", pid), "the restart")
    try:
        with open(os.path.join(view, "cfg")) as f:
            res["read"] = f.read() == token
    except OSError as e:
        res["read"] = errno.errorcode[e.errno]
    res["store_after"] = holds("/var/lib/snapfs", token.encode())
    res["remove"] = sh(snap, "scope", "rm", "--mount", mnt, "unit-a")
    res["runtime_after_rm"] = holds("/run/snapfs-scopes", token.encode())


EXITS = "/run/snapfs-exits"
# systemctl show forgets the main process's exit status once the unit is inactive; an
# ExecStopPost= of the test's own (a drop-in in /run, beside the shipped unit) is told it.
EXIT_DROPIN = ("[Service]\nExecStopPost=/bin/sh -c 'echo $$SERVICE_RESULT $$EXIT_CODE "
               "$$EXIT_STATUS >>" + EXITS + "/%n'\n")


def exits(unit):
    """What the main process of each run of unit ended with: [result, code, status]."""
    try:
        with open(os.path.join(EXITS, unit)) as f:
            return [line.split() for line in f]
    except FileNotFoundError:
        return []


def step_stop_leaves_nothing(cfg, res, unit="snapfs.service", mnts=("/run/snapfs",)):
    res["stop"] = sh("systemctl", "stop", unit)
    res["show"] = show(unit, "ActiveState", "Result", "MainPID")
    res["exit"] = exits(unit)[-1:]
    res["mounts"] = {m: mountinfo(m) for m in mnts}
    res["pids"] = snapfs_pids()


def dead_fuse_mount(path, subtype="hello"):
    """A FUSE mount of another filesystem whose server is gone: mounted on a /dev/fuse
    descriptor that is closed at once, it answers ENOTCONN, as a crashed server's does."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    try:
        opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
        if libc.mount(subtype.encode(), path.encode(), f"fuse.{subtype}".encode(), 0, opts):
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def step_a_foreign_dead_mount_survives(cfg, res):
    """A dead fuse.hello at the unit's mount point: the start is refused, and the unit's
    ExecStopPost unmounted that foreign mount anyway."""
    mnt = "/run/snapfs"
    os.makedirs(mnt, exist_ok=True)
    dead_fuse_mount(mnt)
    try:
        res["start"] = sh("systemctl", "start", "snapfs.service")
        res["show"] = show("snapfs.service", "ActiveState", "Result", "ExecMainStatus",
                           "NRestarts")
        res["after_start"] = [fstype(l) for l in mountinfo(mnt)]
        res["stop"] = sh("systemctl", "stop", "snapfs.service")
        res["after_stop"] = [fstype(l) for l in mountinfo(mnt)]
        res["journal"] = journal("snapfs.service")[-3000:]
    finally:
        sh("umount", "--lazy", mnt)
        sh("systemctl", "reset-failed", "snapfs.service")
    # Beside it: once the foreign mount is gone, the same unit starts and serves; killed,
    # its own dead mount is cleared by ExecStopPost (the restart finds the point free).
    res["fixed"] = sh("systemctl", "start", "snapfs.service")
    res["fixed_show"] = show("snapfs.service", "ActiveState", "SubState")
    pid = main_pid("snapfs.service")
    sh("systemctl", "kill", "--signal=SIGKILL", "--kill-who=main", "snapfs.service")
    wait_for(lambda: running_again("snapfs.service", pid), "the restart")
    res["restarted"] = [fstype(l) for l in mountinfo(mnt)]
    res["fixed_stop"] = sh("systemctl", "stop", "snapfs.service")
    res["after"] = {"mounts": mountinfo(mnt), "pids": snapfs_pids()}


def write_dropin(unit, name, text):
    d = f"/run/systemd/system/{unit}.d"
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def remove_dropin(unit, name):
    os.unlink(f"/run/systemd/system/{unit}.d/{name}")


def start_failing(unit, exec_start, prevent_reset):
    """Starts unit with ExecStart replaced: what systemd did with the failure."""
    text = f"[Service]\nExecStart=\nExecStart={exec_start}\n"
    if prevent_reset:
        text += "RestartPreventExitStatus=\n"
    write_dropin(unit, "bad.conf", text)
    daemon_reload()
    out = {"start": sh("systemctl", "start", unit)}
    if prevent_reset:
        # Without the prevention, the same failure is restarted: wait for the first retry.
        wait_for(lambda: int(show(unit, "NRestarts")["NRestarts"]) >= 1, "a restart")
    out["show"] = show(unit, "ActiveState", "SubState", "Result", "ExecMainStatus",
                       "NRestarts")
    out["journal"] = journal(unit)[-2000:]
    sh("systemctl", "stop", unit)
    sh("systemctl", "reset-failed", unit)
    remove_dropin(unit, "bad.conf")
    daemon_reload()
    return out


def step_configuration_errors_do_not_restart(cfg, res):
    bin_ = cfg["bindir"] + "/snapfs"
    os.symlink("/dev/null", "/run/snapfs-audit-link")
    try:
        # 2: a usage error (a size that is not one).
        res["usage"] = start_failing(
            "snapfs.service", f"{bin_} mount --foreground --max-bytes lots /run/snapfs", False)
        # 1: a refusal (an audit log that is a symbolic link).
        res["refused"] = start_failing(
            "snapfs.service",
            f"{bin_} mount --foreground --audit-log /run/snapfs-audit-link /run/snapfs", False)
        # The same refusal without RestartPreventExitStatus=: systemd retries it.
        res["refused_restarted"] = start_failing(
            "snapfs.service",
            f"{bin_} mount --foreground --audit-log /run/snapfs-audit-link /run/snapfs", True)
    finally:
        os.unlink("/run/snapfs-audit-link")
    res["after"] = {"mounts": mountinfo("/run/snapfs"), "pids": snapfs_pids()}


def publish_errno(mnt, data, name):
    """"OK" and the digest, or the errno name a publish of data failed with (its staging
    file removed)."""
    try:
        fd = os.open(os.path.join(mnt, ".staging", name), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        digest = hashlib.sha256(data).hexdigest()
        os.rename(os.path.join(mnt, ".staging", name), os.path.join(mnt, digest))
        return "OK", digest
    except OSError as e:
        try:
            os.unlink(os.path.join(mnt, ".staging", name))
        except OSError:
            pass
        return errno.errorcode[e.errno], None


def edit_conf(conf, sed_script):
    """The operator's edit: sed -i, as docs/deployment.md shows it."""
    r = sh("sed", "-i", sed_script, conf)
    if r["rc"] != 0:
        raise RuntimeError(f"sed: {r}")


def step_operator_edits_a_limit(cfg, res):
    """The shipped config file, edited: max-snapshot-size 64K instead of the default 256K,
    then systemctl restart: a publish of 64K + 1 bytes, taken before, is now refused, one of
    64K is taken."""
    mnt, conf = "/run/snapfs", os.path.join(cfg["confdir"], "snapfs.conf")
    with open(conf) as f:
        original = f.read()
    try:
        res["start"] = sh("systemctl", "start", "snapfs.service")
        res["before"] = publish_errno(mnt, b"b" * (64 * 1024 + 1), "before")[0]
        pid = main_pid("snapfs.service")
        edit_conf(conf, "s/^#max-snapshot-size = .*/max-snapshot-size = 64K/")
        with open(conf) as f:
            res["line"] = [l for l in f.read().splitlines() if "max-snapshot-size =" in l]
        res["restart"] = sh("systemctl", "restart", "snapfs.service")
        res["restarted"] = main_pid("snapfs.service") != pid
        res["over"] = publish_errno(mnt, b"o" * (64 * 1024 + 1), "over")[0]
        res["at"] = publish_errno(mnt, b"a" * (64 * 1024), "at")[0]
        res["stop"] = sh("systemctl", "stop", "snapfs.service")
    finally:
        with open(conf, "w") as f:
            f.write(original)


def step_a_bad_config_file_fails_once(cfg, res):
    """A bad line in the service's file, and an instance with no file: each start fails
    once, naming the file (and the line), and is not restarted; the fixed file serves."""
    conf = os.path.join(cfg["confdir"], "snapfs.conf")
    with open(conf) as f:
        original = f.read()
    try:
        edit_conf(conf, "s/^#max-bytes = .*/max-bytes = lots/")
        with open(conf) as f:
            lines = f.read().splitlines()
        res["lineno"] = lines.index("max-bytes = lots") + 1
        res["start"] = sh("systemctl", "start", "snapfs.service")
        res["show"] = show("snapfs.service", "ActiveState", "SubState", "Result",
                           "ExecMainStatus", "NRestarts")
        want = f"{conf}:{res['lineno']}: max-bytes:"
        wait_for(lambda: want in journal("snapfs.service"), "the journal line")
        res["journal"] = journal("snapfs.service")[-3000:]
        res["exits"] = exits("snapfs.service")[-1:]
    finally:
        with open(conf, "w") as f:
            f.write(original)
    sh("systemctl", "reset-failed", "snapfs.service")
    # The template, for an instance whose file nobody made.
    unit = "snapfs@gamma.service"
    res["missing"] = {"exists": os.path.exists(os.path.join(cfg["confdir"], "gamma.conf")),
                      "start": sh("systemctl", "start", unit)}
    res["missing"]["show"] = show(unit, "ActiveState", "SubState", "Result", "ExecMainStatus",
                                  "NRestarts")
    want = f"--config {cfg['confdir']}/gamma.conf: No such file or directory"
    wait_for(lambda: want in journal(unit), "the journal line")
    res["missing"]["journal"] = journal(unit)[-3000:]
    sh("systemctl", "reset-failed", unit)
    # Beside them, the file as shipped serves.
    res["fixed"] = {"start": sh("systemctl", "start", "snapfs.service")}
    res["fixed"]["show"] = show("snapfs.service", "ActiveState", "SubState", "NRestarts")
    res["fixed"]["stop"] = sh("systemctl", "stop", "snapfs.service")
    res["after"] = {"mounts": mountinfo("/run/snapfs") + mountinfo("/run/snapfs-gamma"),
                    "pids": snapfs_pids()}


def step_read_view_dropin(cfg, res):
    """The documented read-view drop-in and config line: started, killed, restarted,
    stopped."""
    d = "/etc/systemd/system/snapfs.service.d"
    conf = os.path.join(cfg["confdir"], "snapfs.conf")
    with open(conf) as f:
        original = f.read()
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "read-view.conf"), "w") as f:
        f.write(cfg["read_view_dropin"])
    try:
        edit_conf(conf, cfg["read_view_sed"])
        daemon_reload()
        res["view_dir_before"] = os.path.exists("/run/snapfs-view")
        res["start"] = sh("systemctl", "start", "snapfs.service")
        digest = publish("/run/snapfs", b"seen through the view", "view")
        res["digest"] = digest
        res["main"] = served("/run/snapfs")
        res["view"] = served("/run/snapfs-view")
        res["view_write"] = errno_name(os.open, os.path.join("/run/snapfs-view", digest),
                                       os.O_WRONLY)
        pid = main_pid("snapfs.service")
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: running_again("snapfs.service", pid), "the restart")
        res["restarted"] = {"main": served("/run/snapfs"), "view": served("/run/snapfs-view")}
        stopped = {}
        step_stop_leaves_nothing(cfg, stopped, mnts=("/run/snapfs", "/run/snapfs-view"))
        res["stopped"] = stopped
    finally:
        with open(conf, "w") as f:
            f.write(original)
        os.unlink(os.path.join(d, "read-view.conf"))
        os.rmdir(d)
        daemon_reload()


def step_template_instances(cfg, res):
    units = ["snapfs@alpha.service", "snapfs@beta.service"]
    for n in ("alpha", "beta"):
        make_instance_conf(cfg["confdir"], n)
    res["start"] = sh("systemctl", "start", *units)
    res["show"] = {u: show(u, "ActiveState", "SubState", "MainPID") for u in units}
    a, b = "/run/snapfs-alpha", "/run/snapfs-beta"
    digest = publish(a, b"alpha only", "alpha")
    res["digest"] = digest
    res["alpha"], res["beta"] = served(a), served(b)
    res["stores"] = {u: os.path.exists(f"/var/lib/snapfs-{n}/blobs/sha256/{digest}")
                     for u, n in zip(units, ("alpha", "beta"))}
    logs = {n: os.path.join(LOG_DIR, f"audit-{n}.log") for n in ("alpha", "beta")}
    wait_for(lambda: published_in(logs["alpha"], [digest])[digest], "alpha's audit line")
    res["logs"] = {n: published_in(p, [digest])[digest] for n, p in logs.items()}
    # One logrotate run reloads every instance: each then writes to its new file.
    pids = {n: main_pid(f"snapfs@{n}.service") for n in logs}
    rotate(res)
    # beta's log is empty (notifempty): only alpha's is rotated.
    wait_for(lambda: writes_to(pids["alpha"], logs["alpha"]), "alpha's reopen")
    res["rotated"] = sorted(n for n in os.listdir(LOG_DIR) if n.startswith("audit-"))
    res["reloaded"] = "Reloaded snapfs" in journal("snapfs@alpha.service")
    res["stop"] = sh("systemctl", "stop", *units)
    res["after"] = {"shows": {u: show(u, "ActiveState", "Result") for u in units},
                    "exits": {u: exits(u) for u in units},
                    "mounts": mountinfo(a) + mountinfo(b), "pids": snapfs_pids()}


STEPS = [
    step_fstab_on_a_fresh_host,
    step_start_status_journal,
    step_status_and_metrics,
    step_reload_and_logrotate,
    step_kill_9_restarts,
    step_takeover,
    step_scope_content_lives_in_ram,
    step_stop_leaves_nothing,
    step_a_foreign_dead_mount_survives,
    step_operator_edits_a_limit,
    step_a_bad_config_file_fails_once,
    step_configuration_errors_do_not_restart,
    step_read_view_dropin,
    step_template_instances,
]


def main():
    config, out = sys.argv[1:]
    with open(config) as f:
        cfg = json.load(f)
    result = {"errors": {}}
    os.mkdir(EXITS)
    for unit in ("snapfs.service", "snapfs@.service"):
        write_dropin(unit, "00-exit.conf", EXIT_DROPIN)
    daemon_reload()
    for step in STEPS:
        name = step.__name__[len("step_"):]
        res = result.setdefault(name, {})
        try:
            step(cfg, res)
        except Exception:
            result["errors"][name] = traceback.format_exc()
    whole = sh("journalctl", "--no-pager", "-o", "short-monotonic")["out"]
    with open(os.path.join(out, "journal.txt"), "w") as f:
        f.write(whole)
    result["sanitizer"] = [line for line in whole.splitlines()
                           if any(m in line for m in SANITIZER_MARKERS)]
    result["end"] = {"pids": snapfs_pids(),
                     "mounts": [l for l in open("/proc/self/mountinfo") if "fuse.snapfs" in l]}
    tmp = os.path.join(out, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.rename(tmp, os.path.join(out, "result.json"))


if __name__ == "__main__":
    main()
