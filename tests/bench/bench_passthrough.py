# SPDX-License-Identifier: MIT
"""Item 10 of scripts/bench.sh: snapshot reads by FUSE passthrough vs through the daemon
(--no-passthrough), each against the same bytes on tmpfs, in one run. Reader: bench_preader
(C), cold (the file's page cache dropped first): a 256 MiB sequential read in 1 MiB calls,
and 4 KiB random preads. Beside each row, the READ requests the daemon answered during it
(its metrics: requests of op "read", less the ones the metrics query itself costs) and the
content bytes they carried (status: counters.bytes_read). Then memory: 100 snapshots of 1 MiB
published and read once; what the daemon holds of them (RssAnon: heap copies; its sealed
copies: their allocated size) and the mount's own page cache (mincore: resident pages of the
FUSE files; with passthrough the pages a mapping shows are the sealed copy's, counted once).
Measured, never asserted.

    bench_passthrough.py SNAPFS PREADER CSV [ROUNDS]"""
import ctypes
import hashlib
import json
import mmap
import os
import statistics
import subprocess
import sys
import tempfile

BIG = 256 << 20
RAND_OPS = 100000
MEM_N, MEM_SIZE = 100, 1 << 20

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident(path):
    """Bytes of path in the page cache its mapping shows (mincore)."""
    size = os.stat(path).st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vec = (ctypes.c_ubyte * pages)()
        LIBC.mincore(addr, size, vec)
        LIBC.munmap(addr, size)
        return sum(v & 1 for v in vec) * mmap.PAGESIZE
    finally:
        os.close(fd)


class Daemon:
    def __init__(self, snapfs, mnt, *opts):
        self.snapfs, self.mnt = snapfs, mnt
        os.makedirs(mnt)
        self.proc = subprocess.Popen(
            [snapfs, "mount", "-f", "--max-snapshot-size", "256M", "--max-bytes", "2G",
             "--max-uid-bytes", "2G", *opts, mnt],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("snapfs: serving"):
            raise SystemExit(f"bench_passthrough: snapfs did not start: {line}")

    def publish(self, data):
        subprocess.run([self.snapfs, "put", "--mount", self.mnt, "-"], input=data, check=True,
                       capture_output=True)
        return os.path.join(self.mnt, hashlib.sha256(data).hexdigest())

    def status(self):
        r = subprocess.run([self.snapfs, "status", "--json", "--mount", self.mnt],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout)["status"]

    def reads(self):
        """(READ requests answered so far, content bytes they carried)."""
        r = subprocess.run([self.snapfs, "metrics", "--mount", self.mnt], capture_output=True,
                           text=True, check=True)
        n = 0
        for line in r.stdout.splitlines():
            if line.startswith('snapfs_request_duration_seconds_count{op="read"}'):
                n = int(float(line.split()[-1]))
        return n, self.status()["counters"]["bytes_read"]

    def rss(self, field):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def sealed_bytes(self):
        total = 0
        for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
            p = f"/proc/{self.proc.pid}/fd/{fd}"
            try:
                if os.readlink(p).startswith("/memfd:snapfs-snapshot"):
                    total += os.stat(p).st_blocks * 512
            except FileNotFoundError:
                pass
        return total

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)
        self.proc.stdout.close()


def run(preader, how, path):
    r = subprocess.run([preader, how, path, str(RAND_OPS)], capture_output=True, text=True,
                       check=True)
    return int(r.stdout)


def measure(d, preader, tmpfs_file, path, rounds):
    """Medians of seq GB/s and rand IOPS for path and tmpfs_file (alternating who goes first),
    and the READs (requests, bytes) the daemon answered during path's rounds."""
    res = {k: [] for k in ("seq", "seq_tmpfs", "rand", "rand_tmpfs")}
    q0 = d.reads()
    q1 = d.reads()  # what one query costs in READs of .control
    per_query = q1[0] - q0[0]
    reads, nbytes = 0, 0
    for i in range(rounds):
        for how in ("seq", "rand"):
            order = [(path, how), (tmpfs_file, how + "_tmpfs")]
            if i % 2:
                order.reverse()
            for p, key in order:
                before = d.reads() if p == path else None
                ns = run(preader, how, p)
                if before:
                    after = d.reads()
                    reads += after[0] - before[0] - per_query
                    nbytes += after[1] - before[1]
                res[key].append(BIG / ns if how == "seq" else RAND_OPS / (ns / 1e9))
    return {k: statistics.median(v) for k, v in res.items()}, reads, nbytes


def memory(snapfs, root, name, *opts):
    d = Daemon(snapfs, os.path.join(root, name + "-mem"), *opts)
    try:
        anon0 = d.rss("RssAnon")
        paths = [d.publish(os.urandom(MEM_SIZE)) for _ in range(MEM_N)]
        for p in paths:
            with open(p, "rb") as f:
                while f.read(1 << 20):
                    pass
        anon = d.rss("RssAnon") - anon0
        sealed = d.sealed_bytes()
        cache = 0 if sealed else sum(resident(p) for p in paths)
        return anon, sealed, cache
    finally:
        d.stop()


def main():
    snapfs, preader, csv = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    root = tempfile.mkdtemp(prefix="bench-pt-")
    tmp = os.path.join(root, "tmpfs")
    os.makedirs(tmp)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400M", "tmpfs", tmp], check=True)
    data = os.urandom(BIG)
    tmpfs_file = os.path.join(tmp, "big")
    with open(tmpfs_file, "wb") as f:
        f.write(data)
    rows = []
    try:
        for name, opts in (("passthrough", ()), ("daemon", ("--no-passthrough",))):
            d = Daemon(snapfs, os.path.join(root, name), *opts)
            try:
                path = d.publish(data)
                mode = d.status()["reads"]["mode"]
                med, reads, nbytes = measure(d, preader, tmpfs_file, path, rounds)
            finally:
                d.stop()
            print(f"{name} (mode {mode}): cold 256 MiB sequential {med['seq']:.2f} GB/s vs "
                  f"tmpfs {med['seq_tmpfs']:.2f} ({med['seq'] / med['seq_tmpfs']:.2f}x); "
                  f"cold 4 KiB random {med['rand'] / 1e3:.0f}k IOPS vs tmpfs "
                  f"{med['rand_tmpfs'] / 1e3:.0f}k ({med['rand'] / med['rand_tmpfs']:.2f}x); "
                  f"READs the daemon answered: {reads} ({nbytes} bytes) in {rounds} rounds")
            note = f"mode={mode} daemon READs={reads} bytes={nbytes}"
            rows.append(f"10,cold sequential read 256 MiB ({name}),-,-,snapfs,tmpfs,"
                        f"{med['seq']:.4g},{med['seq_tmpfs']:.4g},GB/s,"
                        f"{med['seq'] / med['seq_tmpfs']:.3f},-,-,{rounds},{note}\n")
            rows.append(f"10,cold 4 KiB random read ({name}),-,-,snapfs,tmpfs,"
                        f"{med['rand'] / 1e3:.4g},{med['rand_tmpfs'] / 1e3:.4g},kIOPS,"
                        f"{med['rand'] / med['rand_tmpfs']:.3f},-,-,{rounds},{note}\n")
        for name, opts in (("passthrough", ()), ("daemon", ("--no-passthrough",))):
            anon, sealed, cache = memory(snapfs, root, name, *opts)
            total = anon + sealed + cache
            print(f"{name}: {MEM_N} x 1 MiB published and read: daemon heap +{anon >> 20} MiB, "
                  f"sealed copies {sealed >> 20} MiB, mount page cache {cache >> 20} MiB: "
                  f"{total >> 20} MiB for {MEM_N * MEM_SIZE >> 20} MiB of content")
            rows.append(f"10,memory for 100 MiB of snapshots ({name}),-,-,held,content,"
                        f"{total / 2**20:.4g},{MEM_N * MEM_SIZE / 2**20:.4g},MiB,"
                        f"{total / (MEM_N * MEM_SIZE):.3f},-,-,1,"
                        f"heap={anon >> 20} sealed={sealed >> 20} cache={cache >> 20}\n")
    finally:
        subprocess.run(["umount", tmp], check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", root], check=False)
    with open(csv, "a") as f:
        f.writelines(rows)


if __name__ == "__main__":
    main()
