# SPDX-License-Identifier: MIT
"""The daemon's fast paths keep every byte exact: the page cache pre-filled at publish, and
the larger readahead the daemon sets on its mount. Nothing here measures time
(scripts/bench.sh does, side by side with its baselines)."""
import ctypes
import hashlib
import mmap
import os

from conftest import sha256_hex

PAGE = mmap.PAGESIZE
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_pages(path):
    """How many pages of the file are in the page cache, without reading any (mincore on a
    read-only private mapping faults nothing in)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        addr = LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            pages = (size + PAGE - 1) // PAGE
            vec = (ctypes.c_ubyte * pages)()
            assert LIBC.mincore(addr, size, vec) == 0, os.strerror(ctypes.get_errno())
            return sum(b & 1 for b in vec), pages
        finally:
            LIBC.munmap(addr, size)
    finally:
        os.close(fd)


def drop_page_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_all(path, chunk):
    out = bytearray()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, chunk)
            if not b:
                return bytes(out)
            out += b
    finally:
        os.close(fd)


def content(n, seed):
    """n bytes no two tests share, not a multiple of the page size."""
    return hashlib.shake_256(seed).digest(n)


def test_published_snapshot_is_in_the_page_cache_and_reads_back_identically(mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "4M")
    data = content(3 * 1024 * 1024 + 123, b"prefilled")
    digest = fs.publish(data)
    path = fs.p(digest)

    resident, pages = resident_pages(path)
    assert resident == pages  # every page stored at publish, before anything read it
    assert read_all(path, 1 << 20) == data
    assert sha256_hex(read_all(path, 4096)) == digest


def test_snapshot_with_a_handle_open_at_publish_is_not_prefilled_and_still_reads_exactly(
        mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "4M")
    data = content(1024 * 1024 + 7, b"held open")
    fs.stage(data, "held")
    # The owner keeps a read-only descriptor on the staging file across the rename: a page
    # fault through it could wait on the daemon, so the daemon stores nothing then.
    held = os.open(fs.p(".staging/held"), os.O_RDONLY)
    try:
        os.rename(fs.p(".staging/held"), fs.p(sha256_hex(data)))
        path = fs.p(sha256_hex(data))
        assert resident_pages(path)[0] == 0
        assert read_all(path, 1 << 20) == data
        assert resident_pages(path)[0] == resident_pages(path)[1]
    finally:
        os.close(held)
    assert read_all(path, 65536) == data


def test_mount_reads_ahead_one_mib_and_cold_reads_stay_exact(mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "8M")
    st = os.stat(fs.path)
    bdi = f"/sys/class/bdi/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/read_ahead_kb"
    with open(bdi) as f:
        assert f.read().strip() == "1024"

    data = content(5 * 1024 * 1024 + 4095, b"readahead")
    digest = fs.publish(data)
    path = fs.p(digest)
    drop_page_cache(path)
    assert resident_pages(path)[0] == 0  # every byte below comes through READ requests
    assert read_all(path, 1 << 20) == data
    drop_page_cache(path)
    assert read_all(path, 3000) == data  # reads that straddle requests and pages
    drop_page_cache(path)
    with open(path, "rb") as f:  # and backwards, past readahead windows
        f.seek(len(data) - 100)
        assert f.read() == data[-100:]
        f.seek(4 * 1024 * 1024 - 1)
        assert f.read(2) == data[4 * 1024 * 1024 - 1:4 * 1024 * 1024 + 1]
