# SPDX-License-Identifier: MIT
"""The daemon's fast paths keep every byte exact and every refusal in place: the page cache
pre-filled at publish, the larger readahead the daemon sets on its mount, and listings that
carry attributes (readdirplus). Nothing here measures time (scripts/bench.sh does, side by
side with its baselines). The first three are fast paths of reads the daemon answers: they run
with --no-passthrough (with passthrough no READ reaches the daemon: test_passthrough.py)."""
import ctypes
import hashlib
import mmap
import os
import stat

from snaptest import NOBODY_UID, UID_PRELUDE, as_uid, sha256_hex

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
    fs = mount_snapfs("--max-snapshot-size", "4M", "--no-passthrough")
    data = content(3 * 1024 * 1024 + 123, b"prefilled")
    digest = fs.publish(data)
    path = fs.p(digest)

    resident, pages = resident_pages(path)
    assert resident == pages  # every page stored at publish, before anything read it
    assert read_all(path, 1 << 20) == data
    assert sha256_hex(read_all(path, 4096)) == digest


def test_snapshot_with_a_handle_open_at_publish_is_not_prefilled_and_still_reads_exactly(
        mount_snapfs):
    fs = mount_snapfs("--max-snapshot-size", "4M", "--no-passthrough")
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
    fs = mount_snapfs("--max-snapshot-size", "8M", "--no-passthrough")
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


def test_listing_with_attributes_gives_each_snapshot_its_own_stat(snapfs):
    # Enough entries that the listing takes several replies.
    published = {snapfs.publish(b"listed %d" % i, name=f"l{i}"): b"listed %d" % i
                 for i in range(60)}
    seen = {}
    with os.scandir(snapfs.path) as it:
        for e in it:
            seen[e.name] = (e.inode(), e.stat(follow_symlinks=False))
    assert sorted(seen) == sorted([".control", ".staging", *published])
    assert stat.S_ISDIR(seen[".staging"][1].st_mode)
    for digest, data in published.items():
        ino, st = seen[digest]
        again = os.stat(snapfs.p(digest))
        assert ino == st.st_ino == again.st_ino
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0
        assert st.st_size == len(data) == again.st_size and st.st_nlink == 1
        assert read_all(snapfs.p(digest), 4096) == data


# Runs as another uid.
LIST = UID_PRELUDE


def test_staging_listing_with_attributes_shows_each_uid_only_its_own_files(mount_snapfs):
    snapfs = mount_snapfs("--allow-other", "--publishers", "any")
    snapfs.stage(b"root's half-written token", "secret")
    code = LIST + r'''
fd = os.open(f"{mnt}/.staging/mine", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"mine"); os.close(fd)
with os.scandir(f"{mnt}/.staging") as it:
    entries = {e.name: e.stat(follow_symlinks=False) for e in it}
assert list(entries) == ["mine"], entries
assert stat.S_IMODE(entries["mine"].st_mode) == 0o200 and entries["mine"].st_size == 4
assert refused(os.stat, f"{mnt}/.staging/secret") == errno.ENOENT
os.unlink(f"{mnt}/.staging/mine")
'''
    as_uid(NOBODY_UID, code, snapfs.path)
    with os.scandir(snapfs.p(".staging")) as it:
        entries = {e.name: e.stat(follow_symlinks=False) for e in it}
    assert list(entries) == ["secret"]
    assert entries["secret"].st_size == len(b"root's half-written token")


def test_an_admitted_uids_listing_leaves_nothing_an_excluded_uid_can_use(mount_snapfs):
    # Both policies restrict: the kernel may cache no entry, since its cache is not per uid.
    fs = mount_snapfs("--allow-other", "--readers", f"0,{NOBODY_UID}", "--publishers", "0")
    digest = fs.publish(b"for admitted readers")
    admitted = LIST + r'''
with os.scandir(mnt) as it:
    sizes = {e.name: e.stat(follow_symlinks=False).st_size for e in it if not e.name.startswith(".")}
assert sizes == {sys.argv[2]: len(b"for admitted readers")}, sizes
assert open(f"{mnt}/{sys.argv[2]}", "rb").read() == b"for admitted readers"
'''
    as_uid(NOBODY_UID, admitted, fs.path, digest)
    # A reader that may not publish listed the root (.staging included) and was refused
    # nothing it did not ask for. The log is written in order: once a later publish is in
    # it, so is any refusal of that listing.
    marker = fs.publish(b"marker")
    events = fs.wait_audit(lambda ev: any(e.get("digest") == marker for e in ev))
    assert any(e.get("digest") == marker for e in events)
    assert not [e for e in events if e["event"] == "refused"]
    excluded = LIST + r'''
assert refused(os.stat, f"{mnt}/{sys.argv[2]}") == errno.EACCES
assert refused(os.open, f"{mnt}/{sys.argv[2]}", os.O_RDONLY) == errno.EACCES
assert refused(os.listdir, mnt) == errno.EACCES
'''
    as_uid(NOBODY_UID + 1, excluded, fs.path, digest)
