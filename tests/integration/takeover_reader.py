# SPDX-License-Identifier: MIT
"""A reader that checks every byte, in a loop, until a stop file appears; used by
test_takeover.py (on the host and inside a bubblewrap sandbox) and scripts/bench.sh.

    takeover_reader.py OUT STOP PATH=SHA256 [PATH=SHA256 ...]

Each PATH is opened once and held (its device and inode number noted); each round then, for
every PATH: a fresh open, the page cache dropped (posix_fadvise DONTNEED) and the whole file
read with pread, hashed and its fstat compared; the same through the held descriptor (a file
handle the daemon gave before any takeover); the same through an mmap of the held descriptor
(a fault the kernel must serve: a dead connection would raise SIGBUS and kill this process);
and a listing of PATH's directory. Every request therefore reaches the daemon. OUT gets one
JSON object: rounds, failures by errno name, wrong bytes, bindings moved (device or inode
number changed), the longest round, the longest time without a whole round read right and the
longest time without a fresh open read right of every PATH, in milliseconds (measured, never
a pass mark)."""
import errno
import hashlib
import json
import mmap
import os
import sys
import time


def main():
    out, stop, pairs = sys.argv[1], sys.argv[2], [a.split("=", 1) for a in sys.argv[3:]]
    held = []
    for path, sha in pairs:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        st = os.fstat(fd)
        held.append((path, sha, fd, (st.st_dev, st.st_ino), st.st_size))
    res = {"rounds": 0, "failures": {}, "wrong_bytes": 0, "bindings_moved": 0,
           "longest_round_ms": 0.0, "longest_gap_ms": 0.0, "longest_fresh_gap_ms": 0.0,
           "reads": 0}
    last_ok = last_fresh = time.monotonic()

    def failed(e):
        name = errno.errorcode.get(e.errno, str(e.errno))
        res["failures"][name] = res["failures"].get(name, 0) + 1

    def check(fd, sha, ident, size):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        data = os.pread(fd, size + 1, 0)
        st = os.fstat(fd)
        res["reads"] += 1
        if hashlib.sha256(data).hexdigest() != sha:
            res["wrong_bytes"] += 1
            return False
        if (st.st_dev, st.st_ino) != ident:
            res["bindings_moved"] += 1
        return True

    while not os.path.exists(stop):
        t0 = time.monotonic()
        bad = (sum(res["failures"].values()), res["wrong_bytes"])
        fresh = 0
        for path, sha, hfd, ident, size in held:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    fresh += check(fd, sha, ident, size)
                finally:
                    os.close(fd)
                check(hfd, sha, ident, size)
                if size:
                    os.posix_fadvise(hfd, 0, 0, os.POSIX_FADV_DONTNEED)
                    with mmap.mmap(hfd, size, prot=mmap.PROT_READ) as m:
                        if hashlib.sha256(m[:]).hexdigest() != sha:
                            res["wrong_bytes"] += 1
                if os.path.basename(path) not in os.listdir(os.path.dirname(path)):
                    res["wrong_bytes"] += 1
            except OSError as e:
                failed(e)
        res["rounds"] += 1
        now = time.monotonic()
        res["longest_round_ms"] = max(res["longest_round_ms"], (now - t0) * 1000)
        if fresh == len(held):
            res["longest_fresh_gap_ms"] = max(res["longest_fresh_gap_ms"],
                                              (now - last_fresh) * 1000)
            last_fresh = now
        if (sum(res["failures"].values()), res["wrong_bytes"]) == bad:
            res["longest_gap_ms"] = max(res["longest_gap_ms"], (now - last_ok) * 1000)
            last_ok = now
        with open(out + ".progress", "w") as f:
            f.write(str(res["rounds"]))
    for h in held:
        os.close(h[2])
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
