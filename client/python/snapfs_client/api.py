# SPDX-License-Identifier: MIT
"""The API: publish, verified opens, scopes, the control channel. Every function takes the
mount's path first and the trust keywords after it (or one Trust holding them); each call is
libsnapfs's own, so the checks are the C library's."""
from __future__ import annotations

import ctypes
import errno
import dataclasses
import json
import os
import re
from types import TracebackType
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Type, TypeVar,
                    Union)

from . import _abi
from .binding import ENTRY_NAME_RULE, Binding, entry_name_valid, name_valid
from .errors import SnapfsError, invalid, raise_for

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
BindingLike = Union[Binding, str, bytes]
KindLike = Union[str, Iterable[str]]


@dataclasses.dataclass(frozen=True)
class Trust:
    """Whom a call trusts, the one options object for the trust keywords: owner, the uid
    that must have mounted snapfs (None: root); insecure_own_mount, also trust a mount of your
    own uid (rootless development only: any process of your uid can replace it with a FUSE
    server of its own); trust_user_namespace, accept a mount whose owner user namespaces hide
    (a client inside a sandbox's own user namespace)."""
    owner: Optional[int] = None
    insecure_own_mount: bool = False
    trust_user_namespace: bool = False

    def merged(self, owner: Optional[int], insecure_own_mount: bool,
               trust_user_namespace: bool) -> "Trust":
        """This trust with the keywords of a call on top (a keyword given wins)."""
        return Trust(self.owner if owner is None else owner,
                     self.insecure_own_mount or insecure_own_mount,
                     self.trust_user_namespace or trust_user_namespace)


_Fd = TypeVar("_Fd", bound="_ClosingFd")


class _ClosingFd(int):
    """A descriptor the API opened: an int, that closes itself once (close(), or as a context
    manager)."""

    closed: bool

    def __new__(cls: Type[_Fd], fd: int) -> _Fd:
        self = super().__new__(cls, fd)
        self.closed = False
        return self

    def close(self) -> None:
        """Closes the descriptor, once."""
        if not self.closed:
            self.closed = True
            os.close(self)

    def __enter__(self: _Fd) -> _Fd:
        return self

    def __exit__(self, t: Optional[Type[BaseException]], v: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()


class VerifiedFd(_ClosingFd):
    """A verified read-only descriptor (close-on-exec). It is an int, so os.read, os.pread,
    pass_fds and /proc/self/fd/N take it as they are; as a context manager it closes itself:

        with snapfs.open_verified(mount, binding) as fd:
            subprocess.run(["cat", f"/proc/self/fd/{fd}"], pass_fds=[fd])
    """


def _call(fn: Callable[..., Any], *args: Any) -> int:
    """fn(*args, &report), a libsnapfs call: what it returned, or the SnapfsError of its
    refusal."""
    rep = _abi.CReport()
    r: int = fn(*args, ctypes.byref(rep))
    if r < 0:
        raise_for(r, rep)
    return r


def kind_flags(kind: KindLike) -> int:
    """kind: "content", "signature", "manifest", or an iterable of them."""
    names = (kind,) if isinstance(kind, str) else tuple(kind)
    if not names or any(n not in _abi.KIND_FLAGS for n in names):
        raise invalid(f"kind: {kind!r} is not content, signature or manifest")
    flags = 0
    for n in names:
        flags |= _abi.KIND_FLAGS[n]
    return flags


def options(trust: Optional[Trust], owner: Optional[int] = None, max_size: int = 0,
            insecure_own_mount: bool = False, trust_user_namespace: bool = False,
            kind: KindLike = "content") -> _abi.COptions:
    """struct snapfs_options of a call: its Trust with its keywords on top, its limit and the
    kinds it accepts."""
    t = (trust or Trust()).merged(owner, insecure_own_mount, trust_user_namespace)
    o = _abi.COptions()
    if t.owner is not None:
        o.flags, o.owner = _abi.Opt.OWNER, t.owner
    if t.insecure_own_mount:
        o.flags |= _abi.Opt.INSECURE_OWN_MOUNT
    if t.trust_user_namespace:
        o.flags |= _abi.Opt.TRUST_USER_NAMESPACE
    o.flags |= kind_flags(kind)
    o.max_size = max_size
    return o


def _path(p: PathLike) -> bytes:
    return os.fsencode(p)


def _name(text: Optional[PathLike]) -> Optional[bytes]:
    return None if text is None else os.fsencode(text)


def _name_arg(name: Optional[str]) -> Optional[bytes]:
    if name is None:
        return None
    if not name_valid(name):
        raise invalid(f"{name!r} is not a snapshot name: 1-64 of [A-Za-z0-9._-], starting "
                      "with neither '.' nor '_'")
    return name.encode()


_DIGEST = re.compile(r"[0-9a-f]{64}")


def _entry_arg(entry: Optional[str], digest_ok: bool = False) -> Optional[bytes]:
    """The entry as libsnapfs takes it, refused first when the daemon would refuse it (the
    same set: tests/vectors/names.json); digest_ok: a granted digest's own name (64 lowercase
    hex) too, as a view lists it."""
    if entry is None:
        return None
    if not entry_name_valid(entry) and not (digest_ok and _DIGEST.fullmatch(entry)):
        raise invalid(f"{entry!r} is not a valid entry name: {ENTRY_NAME_RULE}")
    return entry.encode()


def publish(mount: PathLike, data: Union[bytes, bytearray, memoryview], *,
            name: Optional[str] = None, trust: Optional[Trust] = None,
            owner: Optional[int] = None, max_size: int = 0, insecure_own_mount: bool = False,
            trust_user_namespace: bool = False, scope: Optional[str] = None,
            entry: Optional[str] = None) -> Binding:
    """Publishes bytes (b"" is allowed) -> Binding: the verified binding of the snapshot, with
    its name, publish time, publisher and kind as the daemon says them. .already_published
    tells whether the same bytes were there already (they keep their first name). name: the
    snapshot's name (None: none); max_size: 0 for the library's default. scope: publish for
    that scope alone (the mount owner and root): granted to it (under entry: an entry that
    exists moves), held by no uid, gone with its last grant; the binding is the main mount's
    (scope_binding() gives the view's)."""
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace)
    raw = bytes(data)
    lib, c = _abi.load(), _abi.CSnapshot()
    if entry is not None and scope is None:
        raise invalid("entry needs scope")
    if scope is not None:
        r = _call(lib.snapfs_publish_for_scope, _path(mount), scope.encode(), _name(entry),
                  _name_arg(name), raw, len(raw), ctypes.byref(o), ctypes.byref(c))
    else:
        r = _call(lib.snapfs_publish_named, _path(mount), _name_arg(name), raw, len(raw),
                  ctypes.byref(o), ctypes.byref(c))
    return Binding.from_snapshot(c, r == 1)


def publish_fd(mount: PathLike, fd: int, *, name: Optional[str] = None,
               trust: Optional[Trust] = None, owner: Optional[int] = None, max_size: int = 0,
               insecure_own_mount: bool = False, trust_user_namespace: bool = False,
               scope: Optional[str] = None, entry: Optional[str] = None) -> Binding:
    """publish() of everything read from the descriptor fd until end of file -> Binding."""
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace)
    lib, c = _abi.load(), _abi.CSnapshot()
    if entry is not None and scope is None:
        raise invalid("entry needs scope")
    if scope is not None:
        r = _call(lib.snapfs_publish_fd_for_scope, _path(mount), scope.encode(), _name(entry),
                  _name_arg(name), fd, ctypes.byref(o), ctypes.byref(c))
    else:
        r = _call(lib.snapfs_publish_fd_named, _path(mount), _name_arg(name), fd,
                  ctypes.byref(o), ctypes.byref(c))
    return Binding.from_snapshot(c, r == 1)


def describe(mount: PathLike, binding: BindingLike, *, trust: Optional[Trust] = None,
             owner: Optional[int] = None, insecure_own_mount: bool = False,
             trust_user_namespace: bool = False) -> Binding:
    """-> Binding: the snapshot the binding names on the snapfs mount at mount, with its name,
    publish time, publisher and kind as the daemon says them. Judges the mount and checks the
    snapshot's identity; reads no content (open_verified() does)."""
    b = Binding.parse(binding)
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    c = _abi.CSnapshot()
    _call(_abi.load().snapfs_describe, _path(mount), ctypes.byref(b.to_c()), ctypes.byref(o),
          ctypes.byref(c))
    return Binding.from_snapshot(c)


def open_verified(mount: PathLike, binding: BindingLike, *, trust: Optional[Trust] = None,
                  owner: Optional[int] = None, max_size: int = 0,
                  insecure_own_mount: bool = False, trust_user_namespace: bool = False,
                  kind: KindLike = "content") -> VerifiedFd:
    """-> VerifiedFd: the verified read-only descriptor (close-on-exec; yours to close, or a
    context manager) of the snapshot the binding names on the snapfs mount at mount. kind:
    what it must be, "content" (the default), "signature" or "manifest", or an iterable of
    them; anything else raises SnapfsError(ENOMSG) with the reason "kind"."""
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    b = Binding.parse(binding)
    return VerifiedFd(_call(_abi.load().snapfs_open_verified, _path(mount),
                            ctypes.byref(b.to_c()), ctypes.byref(o)))


def _described(lib: Any, fd: int, c: _abi.CBinding) -> Binding:
    """The Binding of a verified descriptor, with what the daemon says of it when it says."""
    s = _abi.CSnapshot()
    if lib.snapfs_describe_fd(fd, ctypes.byref(c), ctypes.byref(s)) < 0:
        return Binding.from_c(c)
    return Binding.from_snapshot(s)


def open_digest(mount: PathLike, digest: str, *, trust: Optional[Trust] = None,
                owner: Optional[int] = None, max_size: int = 0,
                insecure_own_mount: bool = False, trust_user_namespace: bool = False,
                kind: KindLike = "content") -> Tuple[VerifiedFd, Binding]:
    """-> (VerifiedFd, Binding): the verified descriptor of the snapshot named digest (64
    lowercase hex), verified against its own name, and its Binding, with name, publish time,
    publisher and kind read through that descriptor; kind as open_verified() takes it."""
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    lib, c = _abi.load(), _abi.CBinding()
    r = _call(lib.snapfs_open_digest, _path(mount), digest.encode(), ctypes.byref(o),
              ctypes.byref(c))
    return VerifiedFd(r), _described(lib, r, c)


def view_binding(mount: PathLike, binding: BindingLike, *, trust: Optional[Trust] = None,
                 owner: Optional[int] = None, max_size: int = 0,
                 insecure_own_mount: bool = False,
                 trust_user_namespace: bool = False) -> Optional[Tuple[str, Binding]]:
    """-> (str, Binding) or None: where a sandbox reads: the view's path and the binding of
    the snapshot as seen through the read view the mount's daemon serves beside it (snapfs
    mount --read-view), judged and verified there like any mount, with the name, publish time,
    publisher and kind the main mount's daemon says of it; None without a read view."""
    b = Binding.parse(binding)
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace)
    c, rep, view = _abi.CBinding(), _abi.CReport(), ctypes.create_string_buffer(4096)
    r = _abi.load().snapfs_view_binding(_path(mount), ctypes.byref(b.to_c()), ctypes.byref(o),
                                        view, len(view), ctypes.byref(c), ctypes.byref(rep))
    if r == -errno.ENODATA:  # the mount has no read view
        return None
    if r < 0:
        raise_for(r, rep)
    # Verified in the view already: what the daemon says of the digest is asked of the main
    # mount, where the view of a sandbox would not say it.
    return os.fsdecode(view.value), _describe_view(mount, None, [c], o)[0][0]


def verify_fd(fd: int, binding: BindingLike, *, max_size: int = 0,
              kind: KindLike = "content") -> None:
    """-> None: re-verifies a held descriptor against the binding before a use; raises
    SnapfsError on a refusal (kind as open_verified() takes it)."""
    b = Binding.parse(binding)
    _call(_abi.load().snapfs_verify_fd, fd, ctypes.byref(b.to_c()),
          ctypes.byref(options(None, None, max_size, kind=kind)))


def pread_all(fd: int) -> bytes:
    """Everything fd holds, from offset 0 (its file position untouched)."""
    chunks: List[bytes] = []
    off = 0
    while True:
        chunk = os.pread(fd, 1 << 16, off)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        off += len(chunk)


def read_verified(mount: PathLike, binding: BindingLike, *, trust: Optional[Trust] = None,
                  owner: Optional[int] = None, max_size: int = 0,
                  insecure_own_mount: bool = False, trust_user_namespace: bool = False,
                  kind: KindLike = "content") -> bytes:
    """-> bytes: the content of the snapshot, read through a verified descriptor (the
    arguments of open_verified())."""
    with open_verified(mount, binding, trust=trust, owner=owner, max_size=max_size,
                       insecure_own_mount=insecure_own_mount,
                       trust_user_namespace=trust_user_namespace, kind=kind) as fd:
        return pread_all(fd)


# ---- scopes -------------------------------------------------------------------------------
#
# A scope is what one sandbox may see: a mount of its own, the view, that lists and opens only
# the snapshots granted to it. The mount owner and root control scopes through the main mount:
# each call judges it, writes one JSON request to its .control file and reads the reply. A
# refusal raises SnapfsError with the daemon's errno (ENOENT no such scope, snapshot or grant;
# EEXIST name or view taken; EINVAL; EACCES not the owner or root; EDQUOT/ENOSPC; EBUSY) and
# its message as the reason "refused"; EOPNOTSUPP: the mount has no .control for the caller.

def _devtext(dev: Optional[int]) -> Optional[str]:
    return None if dev is None else f"{os.major(dev)}:{os.minor(dev)}"


@dataclasses.dataclass(frozen=True)
class Scope:
    """A scope as the daemon reports it."""
    name: str
    view: str                 # where its view is mounted
    dev: Optional[int]        # the view's st_dev: its bindings' dev; None while not mounted
    uids: Tuple[int, ...]     # uids that may use the view (uid 0 always may)
    gid: Optional[int]
    publish: bool             # processes in the scope may publish in its view
    until_pid: Optional[int]  # the scope goes when that process exits
    limits: Dict[str, Optional[int]]  # max_snapshots, max_bytes, max_staging,
                                      # max_staging_bytes, min_bytes (None: unset)
    usage: Dict[str, int]     # snapshots, bytes, staging, staging_bytes (in the view itself)
    grants: int               # how many grants it has

    @classmethod
    def from_c(cls, c: _abi.CScope) -> "Scope":
        uids = ctypes.cast(c.uids, ctypes.POINTER(ctypes.c_uint32)) if c.uids else None
        view = ctypes.string_at(c.view) if c.view else b""
        return cls(name=c.name.decode(), view=os.fsdecode(view),
                   dev=None if c.flags & _abi.ScopeFlag.UNMOUNTED else c.dev,
                   uids=tuple(uids[i] for i in range(c.n_uids)) if uids else (),
                   gid=c.gid if c.flags & _abi.ScopeFlag.GID else None,
                   publish=bool(c.flags & _abi.ScopeFlag.PUBLISH),
                   until_pid=c.until_pid if c.flags & _abi.ScopeFlag.UNTIL_PID else None,
                   limits={**{k: getattr(c.limits, k) or None
                              for k, _ in _abi.CScopeLimits._fields_},
                           "min_bytes": c.min_bytes or None},
                   usage={k: getattr(c.usage, k) for k, _ in _abi.CScopeUsage._fields_},
                   grants=c.n_grants)

    _from_c = from_c

    def as_dict(self) -> Dict[str, Any]:
        """The scope object of `snapfs scope ls --json` (and of create)."""
        return {"name": self.name, "view": self.view, "dev": _devtext(self.dev),
                "uids": list(self.uids), "gid": self.gid, "publish": self.publish,
                "until_pid": self.until_pid, "limits": dict(self.limits),
                "usage": dict(self.usage), "grants": self.grants}


@dataclasses.dataclass(frozen=True)
class Grant:
    """A snapshot granted to a scope, by digest, or under an entry name."""
    sha256: str            # 64 lowercase hex
    size: int
    ino: int               # in the scope's view (with Scope.dev, the binding there)
    entry: Optional[str]   # None for a grant by digest
    # The granted snapshot as the one snapshot object shows it: its Binding in the scope's
    # view (dev None while the view is not mounted), with the name, publish time, publisher
    # and kind the main mount's daemon says of its digest (None where it could not be asked).
    snapshot: Optional[Binding] = dataclasses.field(default=None, compare=False)
    # Whether that binding was found in the view (judged like any mount): False when the view
    # could not be reached from here, so it is the daemon's record alone.
    seen_in_view: bool = dataclasses.field(default=False, compare=False)

    @classmethod
    def from_c(cls, c: _abi.CGrant, snapshot: Optional[Binding] = None,
               seen_in_view: bool = False) -> "Grant":
        return cls(bytes(c.sha256).hex(), c.size, c.ino, c.entry.decode() or None, snapshot,
                   seen_in_view)

    def as_dict(self) -> Dict[str, Any]:
        """The grant object of `snapfs grant --json` and `snapfs scope ls NAME --json`: the one
        snapshot object (Binding.as_dict()) with the grant's entry beside it."""
        b = self.snapshot or Binding(self.sha256, self.size, None, self.ino)
        return {**b.as_dict(), "entry": self.entry}


def _describe_view(mount: PathLike, view: Optional[str], bindings: Sequence[_abi.CBinding],
                   o: _abi.COptions) -> List[Tuple[Binding, int]]:
    """[(Binding, Seen flags)] for the CBinding list as snapfs_describe_view finds them: the
    main mount's word on each digest, each binding checked in view (None: not mounted). What
    could not be asked stays as given."""
    n = len(bindings)
    arr, out = (_abi.CBinding * max(n, 1))(*bindings), (_abi.CSnapshot * max(n, 1))()
    seen, rep = (ctypes.c_uint * max(n, 1))(), _abi.CReport()
    r = _abi.load().snapfs_describe_view(_path(mount), _name(view), arr, n, ctypes.byref(o),
                                         out, seen, ctypes.byref(rep))
    if r < 0:
        return [(Binding.from_c(b), 0) for b in bindings]
    return [(Binding.from_snapshot(out[i]) if seen[i] & _abi.Seen.DAEMON
             else Binding.from_c(out[i].binding), seen[i]) for i in range(n)]


def _described_grants(mount: PathLike, scope: Optional[Scope], grants: Sequence[_abi.CGrant],
                      o: _abi.COptions) -> List[Grant]:
    """The CGrant list of scope as Grant, each with its snapshot object."""
    mounted = scope is not None and scope.dev is not None
    bindings = []
    for g in grants:
        c = _abi.CBinding(size=g.size, dev=scope.dev if mounted and scope else 0, ino=g.ino)
        c.sha256[:] = list(bytes(g.sha256))
        bindings.append(c)
    found = _describe_view(mount, scope.view if mounted and scope else None, bindings, o)
    out = []
    for g, (b, seen) in zip(grants, found):
        if not mounted:
            b = dataclasses.replace(b, dev=None)
        out.append(Grant.from_c(g, b, bool(seen & _abi.Seen.VIEW)))
    return out


def _digest_of(what: BindingLike) -> str:
    """64 lowercase hex from a digest, a Binding or a binding's text."""
    if isinstance(what, Binding):
        return what.sha256
    if isinstance(what, str) and len(what) == 64:
        return what
    return Binding.parse(what).sha256


def scope_create(mount: PathLike, name: str, view: PathLike, *, uids: Iterable[int] = (),
                 gid: Optional[int] = None, publish: bool = False,
                 until_pid: Optional[int] = None, max_snapshots: int = 0, max_bytes: int = 0,
                 max_staging: int = 0, max_staging_bytes: int = 0, min_bytes: int = 0,
                 trust: Optional[Trust] = None, owner: Optional[int] = None,
                 insecure_own_mount: bool = False, trust_user_namespace: bool = False) -> Scope:
    """Creates the scope name with its view mounted at view (an absolute path where the
    daemon runs) and returns it as the daemon reports it. uids and/or gid may use the view
    (neither: root only); publish lets processes in the scope publish there; until_pid ties
    the scope to a process of this pid namespace (the daemon's); a limit of 0 is unset.
    min_bytes are guaranteed to the scope (kept from every other scope and uid but the
    owner; ENOSPC when the daemon cannot keep them); 0: none, it shares what is free."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    ids = list(uids)
    arr = (ctypes.c_uint32 * max(len(ids), 1))(*ids)
    spec = _abi.CScopeSpec(name=_name(name), view=_name(view), uids=arr, n_uids=len(ids))
    if gid is not None:
        spec.flags |= _abi.ScopeFlag.GID
        spec.gid = gid
    if publish:
        spec.flags |= _abi.ScopeFlag.PUBLISH
    if until_pid is not None:
        spec.flags |= _abi.ScopeFlag.UNTIL_PID
        spec.until_pid = until_pid
    spec.limits = _abi.CScopeLimits(max_snapshots, max_bytes, max_staging, max_staging_bytes)
    spec.min_bytes = min_bytes
    lib, c = _abi.load(), _abi.CScope()
    r = _call(lib.snapfs_scope_create, _path(mount), ctypes.byref(spec), ctypes.byref(o),
              ctypes.byref(c))
    try:
        return Scope.from_c(c)
    finally:
        lib.snapfs_scope_free(ctypes.byref(c))


_Item = TypeVar("_Item")


def _listed(ctype: Any, call: Callable[[Any, Any, Any], Any], item: Callable[[Any], _Item],
            free: Callable[[Any, Any], Any]) -> List[_Item]:
    """What a libsnapfs call that hands out an array of ctype (call(&array, &count, &report))
    lists, each element made an item; the array freed with free(array, count)."""
    v, n = ctypes.POINTER(ctype)(), ctypes.c_size_t()
    r = _call(call, ctypes.byref(v), ctypes.byref(n))
    try:
        return [item(v[i]) for i in range(n.value)]
    finally:
        free(v, n)


def scope_list(mount: PathLike, *, trust: Optional[Trust] = None, owner: Optional[int] = None,
               insecure_own_mount: bool = False,
               trust_user_namespace: bool = False) -> List[Scope]:
    """Every scope of the mount's daemon: a list of Scope."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    lib = _abi.load()
    return _listed(_abi.CScope,
                   lambda v, n, rep: lib.snapfs_scope_list(_path(mount), ctypes.byref(o), v, n,
                                                           rep),
                   Scope.from_c, lib.snapfs_scopes_free)


def scope_show(mount: PathLike, name: str, *, trust: Optional[Trust] = None,
               owner: Optional[int] = None, insecure_own_mount: bool = False,
               trust_user_namespace: bool = False) -> Tuple[Scope, List[Grant]]:
    """(Scope, [Grant, ...]): one scope and its grants, each with its snapshot object (the
    binding in the scope's view, what the daemon says of its digest)."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    lib, c = _abi.load(), _abi.CScope()
    g, n = ctypes.POINTER(_abi.CGrant)(), ctypes.c_size_t()
    r = _call(lib.snapfs_scope_show, _path(mount), _name(name), ctypes.byref(o), ctypes.byref(c),
              ctypes.byref(g), ctypes.byref(n))
    try:
        sc = Scope.from_c(c)
        return sc, _described_grants(mount, sc, [g[i] for i in range(n.value)], o)
    finally:
        lib.snapfs_scope_free(ctypes.byref(c))
        lib.snapfs_free(ctypes.cast(g, ctypes.c_void_p))


def remove(mount: PathLike, target: BindingLike, *, all_named: bool = False,
           trust: Optional[Trust] = None, owner: Optional[int] = None,
           insecure_own_mount: bool = False,
           trust_user_namespace: bool = False) -> Tuple[int, int]:
    """Removes through the mount what target names, as `snapfs rm` does: a Binding or its
    text (exactly that snapshot), a name (as snapshots() shows it; a name several snapshots
    have only with all_named=True), else a digest or its first 12 or more hex characters.
    -> (removed, kept): kept counts snapshots that stay for their other holders (the
    caller's hold went: a daemon with --unlink-own). Raises SnapfsError: ENOENT (names
    nothing), ENOTUNIQ, EPERM (only the mount's owner and root remove), ESTALE."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    text = str(target) if isinstance(target, Binding) else target
    raw = text.encode() if isinstance(text, str) else bytes(text)
    removed, kept = ctypes.c_size_t(), ctypes.c_size_t()
    r = _call(_abi.load().snapfs_remove, _path(mount), raw, 1 if all_named else 0, ctypes.byref(o),
              ctypes.byref(removed), ctypes.byref(kept))
    return removed.value, kept.value


def snapshots(mount: PathLike, *, trust: Optional[Trust] = None, owner: Optional[int] = None,
              insecure_own_mount: bool = False,
              trust_user_namespace: bool = False) -> List[Binding]:
    """Every snapshot of the mount, as `snapfs ls --all` lists them (publishing order), each
    with its name, publish time, publisher and kind as the daemon says them."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    lib = _abi.load()
    return _listed(_abi.CSnapshot,
                   lambda v, n, rep: lib.snapfs_list(_path(mount), ctypes.byref(o), v, n, rep),
                   Binding.from_snapshot,
                   lambda v, n: lib.snapfs_free(ctypes.cast(v, ctypes.c_void_p)))


def scope_remove(mount: PathLike, name: str, *, trust: Optional[Trust] = None,
                 owner: Optional[int] = None, insecure_own_mount: bool = False,
                 trust_user_namespace: bool = False) -> None:
    """Deletes the scope: its grants go, its view is detached (open descriptors keep
    reading)."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    _call(_abi.load().snapfs_scope_remove, _path(mount), _name(name), ctypes.byref(o))


def grant(mount: PathLike, scope: str, snapshot: BindingLike, *, entry: Optional[str] = None,
          trust: Optional[Trust] = None, owner: Optional[int] = None,
          insecure_own_mount: bool = False, trust_user_namespace: bool = False) -> Grant:
    """Grants the published snapshot (its digest, a Binding or a binding's text) to the scope,
    under the entry name when given: an entry that exists moves to it atomically. The Grant
    has its snapshot object (the scope asked for again: its view as the daemon names it)."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    lib, c = _abi.load(), _abi.CGrant()
    r = _call(lib.snapfs_grant, _path(mount), _name(scope), _digest_of(snapshot).encode(),
              _entry_arg(entry), ctypes.byref(o), ctypes.byref(c))
    sc, srep = _abi.CScope(), _abi.CReport()
    if lib.snapfs_scope_show(_path(mount), _name(scope), ctypes.byref(o), ctypes.byref(sc),
                             None, None, ctypes.byref(srep)) < 0:
        return _described_grants(mount, None, [c], o)[0]
    try:
        return _described_grants(mount, Scope.from_c(sc), [c], o)[0]
    finally:
        lib.snapfs_scope_free(ctypes.byref(sc))


def revoke(mount: PathLike, scope: str, *, sha256: Optional[BindingLike] = None,
           entry: Optional[str] = None, trust: Optional[Trust] = None,
           owner: Optional[int] = None, insecure_own_mount: bool = False,
           trust_user_namespace: bool = False) -> None:
    """Revokes from the scope every grant of sha256 (its entries included), or the one
    entry: exactly one of them. New lookups get ENOENT; open descriptors keep reading."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    digest = None if sha256 is None else _digest_of(sha256).encode()
    _call(_abi.load().snapfs_revoke, _path(mount), _name(scope), digest, _entry_arg(entry),
          ctypes.byref(o))


def scope_binding(mount: PathLike, scope: str, binding: BindingLike, *,
                  trust: Optional[Trust] = None, owner: Optional[int] = None,
                  max_size: int = 0, insecure_own_mount: bool = False,
                  trust_user_namespace: bool = False) -> Tuple[str, Binding]:
    """Where a sandbox of the scope reads: (view path, Binding) of the snapshot the binding
    names as seen through the scope's view, judged and verified there like any mount, with
    the name, publish time, publisher and kind the main mount's daemon says of it."""
    b = Binding.parse(binding)
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace)
    c, view = _abi.CBinding(), ctypes.create_string_buffer(4096)
    _call(_abi.load().snapfs_scope_binding, _path(mount), _name(scope), ctypes.byref(b.to_c()),
          ctypes.byref(o), view, len(view), ctypes.byref(c))
    return os.fsdecode(view.value), _describe_view(mount, None, [c], o)[0][0]


def open_entry(view: PathLike, entry: str, *, trust: Optional[Trust] = None,
               owner: Optional[int] = None, max_size: int = 0,
               insecure_own_mount: bool = False, trust_user_namespace: bool = False,
               kind: KindLike = "content") -> Tuple[VerifiedFd, Binding]:
    """(VerifiedFd, Binding): verified open through the entry of a scope's view. The entry is
    opened below the judged view's root, its digest read from that descriptor, its content
    hashed against it; the descriptor holds the snapshot the entry named at the open,
    whatever it is moved to later. kind as open_verified() takes it."""
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    lib, c = _abi.load(), _abi.CBinding()
    r = _call(lib.snapfs_open_entry, _path(view), _entry_arg(entry, True), ctypes.byref(o),
              ctypes.byref(c))
    return VerifiedFd(r), _described(lib, r, c)


class EntryWatch(_ClosingFd):
    """A watch of an entry of a scope's view (watch_entry()): a descriptor that polls readable
    (POLLIN, and POLLPRI) once the entry moved from what it named when the watch was made. It
    is an int, so select.poll(), selectors and asyncio's add_reader take it as it is; wait()
    blocks on it; as a context manager it closes itself."""

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the entry moved, False when timeout seconds (None: no limit) passed
        first. The daemon wakes the wait; nothing polls on a timer."""
        ms = -1 if timeout is None else max(0, min(int(timeout * 1000), 2**31 - 1))
        r = _abi.load().snapfs_watch_wait(int(self), ms)
        if r == -errno.ETIMEDOUT:
            return False
        if r < 0:
            raise SnapfsError(-r)
        return True


def watch_entry(view: PathLike, entry: str, *, trust: Optional[Trust] = None,
                owner: Optional[int] = None, insecure_own_mount: bool = False,
                trust_user_namespace: bool = False) -> EntryWatch:
    """EntryWatch: a descriptor that polls readable once the entry of the scope's view moves
    (rotated to another snapshot, or removed). The view is judged like any mount; make the
    watch before reading the entry, so a move in between is never missed."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    r = _call(_abi.load().snapfs_watch_entry, _path(view), _name(entry), ctypes.byref(o))
    return EntryWatch(r)


def wait_entry(view: PathLike, entry: str, timeout: Optional[float] = None, *,
               trust: Optional[Trust] = None, owner: Optional[int] = None, max_size: int = 0,
               insecure_own_mount: bool = False, trust_user_namespace: bool = False,
               kind: KindLike = "content") -> Tuple[VerifiedFd, Binding]:
    """(VerifiedFd, Binding): waits until the entry of the scope's view moves, at most
    timeout seconds (None: no limit), then opens what it names as open_entry() does. Raises
    SnapfsError ETIMEDOUT (finding "timeout") when it did not move in time, ENOENT (finding
    "removed") when it was removed."""
    o = options(trust, owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    ms = -1 if timeout is None else max(0, min(int(timeout * 1000), 2**31 - 1))
    lib, c = _abi.load(), _abi.CBinding()
    r = _call(lib.snapfs_wait_entry, _path(view), _name(entry), ms, ctypes.byref(o),
              ctypes.byref(c))
    return VerifiedFd(r), _described(lib, r, c)


def control(mount: PathLike, request: Union[str, bytes, Dict[str, Any]], *,
            trust: Optional[Trust] = None, owner: Optional[int] = None,
            insecure_own_mount: bool = False, trust_user_namespace: bool = False) -> Any:
    """One raw request (a dict, or its JSON text) on the main mount's control file: the
    daemon's reply, parsed. A refusal raises SnapfsError with the daemon's errno and keeps its
    reply in .reply."""
    o = options(trust, owner, 0, insecure_own_mount, trust_user_namespace)
    text = request if isinstance(request, (str, bytes)) else json.dumps(request)
    raw = text.encode() if isinstance(text, str) else bytes(text)
    lib, reply, rep = _abi.load(), ctypes.c_void_p(), _abi.CReport()
    r = lib.snapfs_control(_path(mount), raw, ctypes.byref(o), ctypes.byref(reply),
                           ctypes.byref(rep))
    parsed = None
    if reply.value:
        try:
            parsed = json.loads(ctypes.string_at(reply.value).decode())
        finally:
            lib.snapfs_free(reply)
    if r < 0:
        try:
            raise_for(r, rep)
        except SnapfsError as e:
            e.reply = parsed
            raise
    return parsed


def status(mount: PathLike, *, trust: Optional[Trust] = None, owner: Optional[int] = None,
           insecure_own_mount: bool = False,
           trust_user_namespace: bool = False) -> Dict[str, Any]:
    """The daemon's status (docs/design.md, "Health and metrics"): pid, version, mounts,
    store, limits, usage, counters. The mount owner and root only (EACCES otherwise)."""
    reply = control(mount, {"op": "status"}, trust=trust, owner=owner,
                    insecure_own_mount=insecure_own_mount,
                    trust_user_namespace=trust_user_namespace)
    out: Dict[str, Any] = reply["status"]
    return out


def metrics(mount: PathLike, fmt: str = "openmetrics", *, trust: Optional[Trust] = None,
            owner: Optional[int] = None, insecure_own_mount: bool = False,
            trust_user_namespace: bool = False) -> str:
    """The daemon's metrics as text: fmt "openmetrics" (OpenMetrics 1.0) or "prometheus"
    (the text format node_exporter's textfile collector reads)."""
    reply = control(mount, {"op": "metrics", "format": fmt}, trust=trust, owner=owner,
                    insecure_own_mount=insecure_own_mount,
                    trust_user_namespace=trust_user_namespace)
    text: str = reply["text"]
    return text
