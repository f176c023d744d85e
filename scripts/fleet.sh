#!/usr/bin/env bash
# One daemon per sandbox, or one shared daemon? Measures, on this machine, start-to-ready
# (from exec of `snapfs mount -f` to READY=1 on its $NOTIFY_SOCKET) and resident memory (RSS,
# and PSS, which splits shared pages fairly) of one instance and of N instances (default 100)
# started together, each with one 4 KiB snapshot published; then one shared daemon holding the
# same N snapshots. Not part of the suite: it times things. Run as root, after a build:
#   scripts/fleet.sh [BUILD_DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
n=${2:-100}
[ "$(id -u)" -eq 0 ] || { echo "scripts/fleet.sh: run as root" >&2; exit 2; }
exec unshare -m --propagation private -- /usr/bin/python3 - "$build/cli/snapfs" "$n" <<'PY'
import hashlib, os, select, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

snapfs, n = sys.argv[1], int(sys.argv[2])
top = tempfile.mkdtemp(prefix="snapfs-fleet-")


def mem_kib(pid):
    rss = pss = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def start(count):
    """Starts count daemons at once; returns [(proc, mnt, seconds to READY)]."""
    socks, procs = [], []
    for i in range(count):
        mnt = os.path.join(top, f"m{i}")
        os.makedirs(mnt, exist_ok=True)
        path = os.path.join(top, f"n{i}")
        if os.path.exists(path):
            os.unlink(path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path)
        socks.append(s)
        t0 = time.monotonic()
        p = subprocess.Popen([snapfs, "mount", "-f", "--audit-log", os.path.join(top, f"a{i}"),
                              mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, NOTIFY_SOCKET=path))
        procs.append((p, mnt, t0))
    # Each READY is timed when it arrives, whichever daemon sends first.
    ready = {}
    deadline = time.monotonic() + 120
    while len(ready) < count:
        left = [s for i, s in enumerate(socks) if i not in ready]
        r, _, _ = select.select(left, [], [], max(0.0, deadline - time.monotonic()))
        assert r, "daemons not ready within 120 s"
        now = time.monotonic()
        for s in r:
            i = socks.index(s)
            assert s.recv(64) == b"READY=1"
            ready[i] = now - procs[i][2]
    for s in socks:
        s.close()
    return [(p, mnt, ready[i]) for i, (p, mnt, _) in enumerate(procs)]


def publish(mnt, i):
    data = (f"snapshot {i} ".encode() * 400)[:4096]
    with open(os.path.join(mnt, ".staging", "c"), "wb") as f:
        f.write(data)
    os.rename(os.path.join(mnt, ".staging", "c"),
              os.path.join(mnt, hashlib.sha256(data).hexdigest()))


def stop(daemons):
    for p, _, _ in daemons:
        p.send_signal(signal.SIGTERM)
    for p, _, _ in daemons:
        p.wait(60)


def report(label, daemons, wall=None):
    ready = [t for _, _, t in daemons]
    mems = [mem_kib(p.pid) for p, _, _ in daemons]
    rss = sum(m[0] for m in mems)
    pss = sum(m[1] for m in mems)
    line = (f"{label:<34} ready median {statistics.median(ready) * 1000:7.1f} ms, "
            f"max {max(ready) * 1000:7.1f} ms")
    if wall is not None:
        line += f", all ready after {wall * 1000:7.1f} ms"
    print(line)
    print(f"{'':<34} RSS {rss / 1024:8.1f} MiB total ({rss / len(mems):7.0f} KiB each), "
          f"PSS {pss / 1024:8.1f} MiB total ({pss / len(mems):7.0f} KiB each)")


try:
    print(f"snapfs fleet: {os.cpu_count()} CPUs, kernel {os.uname().release}")
    singles = []
    for _ in range(5):  # one instance, five times: the median start
        d = start(1)
        publish(d[0][1], 0)
        singles.append(d[0][2])
        last = d
        if _ < 4:
            stop(d)
    print(f"{'1 daemon (5 starts)':<34} ready median {statistics.median(singles) * 1000:7.1f} ms")
    report("1 daemon, 1 snapshot", last)
    stop(last)

    t0 = time.monotonic()
    fleet = start(n)
    wall = time.monotonic() - t0
    for i, (_, mnt, _) in enumerate(fleet):
        publish(mnt, i)
    report(f"{n} daemons, 1 snapshot each", fleet, wall)
    stop(fleet)

    shared = start(1)
    for i in range(n):
        publish(shared[0][1], i)
    report(f"1 shared daemon, {n} snapshots", shared)
    stop(shared)
finally:
    subprocess.run(["sh", "-c", f"grep -o '{top}/m[0-9]*' /proc/self/mountinfo | "
                    "xargs -r -n1 umount -l"], check=False)
    shutil.rmtree(top, ignore_errors=True)
PY
