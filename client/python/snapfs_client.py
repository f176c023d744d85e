#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Publish to snapfs and open snapshots verified, from Python, with the standard library only.

This module binds libsnapfs.so with ctypes, so every check is the C library's own code:
the mount check (fuse.snapfs, nosuid/nodev/noexec, private, exactly one mount, mounted by the
uid you trust: root unless owner= names another, never your own uid unless
insecure_own_mount=True), the open relative to the pinned mount root, the descriptor's mount
id, fstat against the binding, the whole content hashed. Same semantics as C, by construction.

    import subprocess, snapfs_client as snapfs

    binding = snapfs.publish("/run/snapfs", config_bytes)      # -> Binding (str() is its text)
    fd = snapfs.open_verified("/run/snapfs", binding)          # a verified, read-only descriptor
    try:
        subprocess.run(["mcp-client", "--config", f"/proc/self/fd/{fd}"], pass_fds=[fd])
    finally:
        os.close(fd)

Failures raise SnapfsError (an OSError): .errno is the library's errno, .reasons every
(code, message) pair it gave. SnapfsError.as_dict() gives the fields of every `snapfs --json`
refusal (ok, error, message, reasons) and Binding.as_dict() the one snapshot object every
`snapfs --json` prints (sha256, size, dev, ino, name, published, publisher, binding), so a
runtime can log the same objects whichever client it used. The library is found through
$SNAPFS_LIBRARY (a path), then the library `meson install` put in place (the installed copy
of this file carries its absolute path), then the dynamic linker's search for libsnapfs.so.0
(its cache, which `ldconfig` writes: what a copy installed with pip relies on).

As a script (same commands and JSON output as the C test driver):
    snapfs_client.py publish [TRUST] [--max-size SIZE] [--from-fd] [--name NAME] MNT FILE|-
    snapfs_client.py open [TRUST] [--max-size SIZE] [--kind KIND] MNT BINDING
    snapfs_client.py digest [TRUST] [--max-size SIZE] [--kind KIND] MNT HEX
    snapfs_client.py verify-fd [--max-size SIZE] [--kind KIND] PATH BINDING
    snapfs_client.py cat [TRUST] [--max-size SIZE] [--kind KIND] MNT BINDING   (bytes to stdout)
    snapfs_client.py describe [TRUST] MNT BINDING
    snapfs_client.py scope-create [TRUST] [--uid UID]... [--gid GID] [--publish]
                     [--until-pid PID] [--max-snapshots N] [--max-bytes SIZE] [--max-staging N]
                     [--max-staging-bytes SIZE] MNT NAME VIEW
    snapfs_client.py scope-list [TRUST] MNT
    snapfs_client.py scope-show|scope-remove [TRUST] MNT NAME
    snapfs_client.py grant [TRUST] [--entry ENTRY] MNT SCOPE DIGEST|BINDING
    snapfs_client.py revoke [TRUST] (--sha256 HEX | --entry ENTRY) MNT SCOPE
    snapfs_client.py scope-binding [TRUST] MNT SCOPE BINDING
    snapfs_client.py open-entry [TRUST] [--kind KIND] VIEW ENTRY
    snapfs_client.py control [TRUST] MNT JSON
TRUST: [--owner UID] [--insecure-own-mount] [--trust-user-namespace]; --owner defaults to
$SNAPFS_OWNER (a uid, never "any"), else 0. KIND: content (default), signature, manifest.
UID and SIZE as every snapfs command reads them (parse_owner, parse_size, value_error).
    snapfs_client.py abi
Installed with pip (client/python/pyproject.toml) it is also the command snapfs-client.
"""
import ctypes
import dataclasses
import datetime
import errno as _errno
import os
import sys
import threading

__all__ = ["Binding", "SnapfsError", "publish", "publish_fd", "open_verified", "open_digest",
           "describe", "view_binding", "verify_fd", "read_verified", "strerror", "parse_owner",
           "parse_size", "value_error", "name_valid", "KINDS", "__version__", "Scope", "Grant",
           "scope_create", "scope_list", "scope_show", "scope_remove", "grant", "revoke",
           "scope_binding", "open_entry", "control"]

__version__ = "0.1.0"

DIGEST_LEN = 32
NAME_MAX = 64
BINDING_TEXT_MAX = 160
REASONS_MAX = 40
CODE_MAX = 32
MESSAGE_MAX = 320
OPT_OWNER = 1
# INSECURE: also trust a mount of your own uid. Any process of your uid can unmount it and
# mount its own FUSE server in its place (refused without it: "owner-is-caller").
OPT_INSECURE_OWN_MOUNT = 2
# Accept a mount whose owner user namespaces hide (refused without it: "user-namespace").
OPT_TRUST_USER_NAMESPACE = 4
# The kinds of snapshot a verified open hands over (kind=): content unless asked otherwise.
# A signature envelope or a manifest, published so that a --trust-key daemon learns what it
# admits, is refused as content with ENOMSG (reason "kind").
OPT_KIND_CONTENT = 8
OPT_KIND_SIGNATURE = 16
OPT_KIND_MANIFEST = 32
KINDS = {"content": OPT_KIND_CONTENT, "signature": OPT_KIND_SIGNATURE,
         "manifest": OPT_KIND_MANIFEST}


class _CBinding(ctypes.Structure):
    _fields_ = [("sha256", ctypes.c_uint8 * DIGEST_LEN), ("size", ctypes.c_uint64),
                ("dev", ctypes.c_uint64), ("ino", ctypes.c_uint64)]


class _COptions(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint), ("owner", ctypes.c_uint32),
                ("max_size", ctypes.c_uint64)]


class _CSnapshot(ctypes.Structure):
    _fields_ = [("binding", _CBinding), ("name", ctypes.c_char * (NAME_MAX + 1)),
                ("published_sec", ctypes.c_int64), ("published_nsec", ctypes.c_uint32),
                ("publisher", ctypes.c_uint32), ("kind", ctypes.c_int)]


class _CReason(ctypes.Structure):
    _fields_ = [("code", ctypes.c_char * CODE_MAX), ("message", ctypes.c_char * MESSAGE_MAX)]


class _CReport(ctypes.Structure):
    _fields_ = [("error", ctypes.c_int), ("n_reasons", ctypes.c_uint),
                ("n_dropped", ctypes.c_uint), ("reasons", _CReason * REASONS_MAX)]


NAME_MAX = 64
SCOPE_GID = 1
SCOPE_PUBLISH = 2
SCOPE_UNTIL_PID = 4
SCOPE_UNMOUNTED = 8
# What snapfs_describe_view found of a snapshot.
SEEN_DAEMON = 1  # name, published, publisher, kind: the main mount's daemon's word
SEEN_VIEW = 2    # the binding: found in the view as the daemon's record names it


class _CScopeLimits(ctypes.Structure):
    _fields_ = [("max_snapshots", ctypes.c_uint64), ("max_bytes", ctypes.c_uint64),
                ("max_staging", ctypes.c_uint64), ("max_staging_bytes", ctypes.c_uint64)]


class _CScopeUsage(ctypes.Structure):
    _fields_ = [("snapshots", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("staging", ctypes.c_uint64), ("staging_bytes", ctypes.c_uint64)]


class _CScopeSpec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("view", ctypes.c_char_p),
                ("uids", ctypes.POINTER(ctypes.c_uint32)), ("n_uids", ctypes.c_size_t),
                ("flags", ctypes.c_uint), ("gid", ctypes.c_uint32),
                ("until_pid", ctypes.c_int32), ("limits", _CScopeLimits)]


class _CScope(ctypes.Structure):
    # view and uids are the library's allocations (c_void_p: ctypes must not convert them),
    # given back with snapfs_scope_free / snapfs_scopes_free.
    _fields_ = [("name", ctypes.c_char * (NAME_MAX + 1)), ("view", ctypes.c_void_p),
                ("dev", ctypes.c_uint64), ("uids", ctypes.c_void_p), ("n_uids", ctypes.c_size_t),
                ("flags", ctypes.c_uint), ("gid", ctypes.c_uint32), ("until_pid", ctypes.c_int32),
                ("limits", _CScopeLimits), ("usage", _CScopeUsage),
                ("n_grants", ctypes.c_uint64)]


class _CGrant(ctypes.Structure):
    _fields_ = [("sha256", ctypes.c_uint8 * DIGEST_LEN), ("size", ctypes.c_uint64),
                ("ino", ctypes.c_uint64), ("entry", ctypes.c_char * (NAME_MAX + 1))]


# Where `meson install` put libsnapfs.so.0: the installed copy of this file carries its
# absolute path; None here, in the source tree.
_INSTALLED_LIBRARY = None

_lib = None
_lib_lock = threading.Lock()


def _load():
    """libsnapfs, loaded once, with every prototype declared (ctypes guesses nothing)."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        name = os.environ.get("SNAPFS_LIBRARY")
        if not name and _INSTALLED_LIBRARY and os.path.exists(_INSTALLED_LIBRARY):
            name = _INSTALLED_LIBRARY
        name = name or "libsnapfs.so.0"
        try:
            lib = ctypes.CDLL(name, use_errno=False)
        except OSError as e:
            # The usual case from a virtual environment: the module came from pip, the
            # library from the system package or `meson install` without ldconfig.
            raise OSError(
                f"snapfs_client: cannot load {name} ({e}). Install snapfs (its Debian "
                "package, or `meson install` then `ldconfig`), or set SNAPFS_LIBRARY to the "
                "path of libsnapfs.so.0") from e
        P = ctypes.POINTER
        protos = {
            "snapfs_binding_format": [P(_CBinding), ctypes.c_char_p, ctypes.c_size_t],
            "snapfs_binding_parse": [ctypes.c_char_p, P(_CBinding)],
            "snapfs_publish": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, P(_COptions),
                               P(_CBinding), P(_CReport)],
            "snapfs_publish_fd": [ctypes.c_char_p, ctypes.c_int, P(_COptions), P(_CBinding),
                                  P(_CReport)],
            "snapfs_open_verified": [ctypes.c_char_p, P(_CBinding), P(_COptions), P(_CReport)],
            "snapfs_open_digest": [ctypes.c_char_p, ctypes.c_char_p, P(_COptions),
                                   P(_CBinding), P(_CReport)],
            "snapfs_verify_fd": [ctypes.c_int, P(_CBinding), P(_COptions), P(_CReport)],
            "snapfs_view_binding": [ctypes.c_char_p, P(_CBinding), P(_COptions),
                                    ctypes.c_char_p, ctypes.c_size_t, P(_CBinding),
                                    P(_CReport)],
            "snapfs_publish_named": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.c_size_t, P(_COptions), P(_CSnapshot),
                                     P(_CReport)],
            "snapfs_publish_fd_named": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                        P(_COptions), P(_CSnapshot), P(_CReport)],
            "snapfs_describe": [ctypes.c_char_p, P(_CBinding), P(_COptions), P(_CSnapshot),
                                P(_CReport)],
            "snapfs_describe_fd": [ctypes.c_int, P(_CBinding), P(_CSnapshot)],
            "snapfs_control": [ctypes.c_char_p, ctypes.c_char_p, P(_COptions),
                               P(ctypes.c_void_p), P(_CReport)],
            "snapfs_scope_create": [ctypes.c_char_p, P(_CScopeSpec), P(_COptions), P(_CScope),
                                    P(_CReport)],
            "snapfs_scope_list": [ctypes.c_char_p, P(_COptions), P(P(_CScope)),
                                  P(ctypes.c_size_t), P(_CReport)],
            "snapfs_scope_show": [ctypes.c_char_p, ctypes.c_char_p, P(_COptions), P(_CScope),
                                  P(P(_CGrant)), P(ctypes.c_size_t), P(_CReport)],
            "snapfs_scope_remove": [ctypes.c_char_p, ctypes.c_char_p, P(_COptions),
                                    P(_CReport)],
            "snapfs_grant": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                             P(_COptions), P(_CGrant), P(_CReport)],
            "snapfs_revoke": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                              ctypes.c_char_p, P(_COptions), P(_CReport)],
            "snapfs_scope_binding": [ctypes.c_char_p, ctypes.c_char_p, P(_CBinding),
                                     P(_COptions), ctypes.c_char_p, ctypes.c_size_t,
                                     P(_CBinding), P(_CReport)],
            "snapfs_open_entry": [ctypes.c_char_p, ctypes.c_char_p, P(_COptions),
                                  P(_CBinding), P(_CReport)],
            "snapfs_describe_view": [ctypes.c_char_p, ctypes.c_char_p, P(_CBinding),
                                     ctypes.c_size_t, P(_COptions), P(_CSnapshot),
                                     P(ctypes.c_uint), P(_CReport)],
        }
        for fn, args in protos.items():
            f = getattr(lib, fn)
            f.argtypes, f.restype = args, ctypes.c_int
        lib.snapfs_strerror.argtypes, lib.snapfs_strerror.restype = [ctypes.c_int], ctypes.c_char_p
        for fn, args in (("snapfs_scope_free", [P(_CScope)]),
                         ("snapfs_scopes_free", [P(_CScope), ctypes.c_size_t]),
                         ("snapfs_free", [ctypes.c_void_p])):
            f = getattr(lib, fn)
            f.argtypes, f.restype = args, None
        _lib = lib
        return lib


def strerror(err):
    """-> str: what an errno of this library means, in words (err may be negative or
    positive)."""
    return _load().snapfs_strerror(-abs(err)).decode()


# Where Python's errno module names a number by another of its aliases than the C library
# does (strerrorname_np, which the snapfs command and libsnapfs use).
_ERRNO_NAMES = {_errno.EOPNOTSUPP: "EOPNOTSUPP", _errno.EDEADLK: "EDEADLK"}


class SnapfsError(OSError):
    """A refusal: errno and strerror as the library says them, and every reason it gave."""

    def __init__(self, err, reasons=(), dropped=0, raw_messages=None):
        super().__init__(err, strerror(err))
        self.reasons = list(reasons)
        self.dropped = dropped
        # The bytes of each message that is not UTF-8 (its text has U+FFFD in their place),
        # by index: as_dict() gives them as "message_hex", the rule of every --json.
        self._raw = dict(raw_messages or {})

    def __str__(self):
        lines = [f"[Errno {self.errno}] {self.strerror}"]
        lines += [f"{code}: {message}" for code, message in self.reasons]
        return "\n".join(lines)

    @property
    def code(self):
        """The errno's name ("EMEDIUMTYPE"), as `snapfs --json` gives it in "error"."""
        return _ERRNO_NAMES.get(self.errno) or _errno.errorcode.get(self.errno, "EIO")

    def as_dict(self):
        """The object `snapfs --json` prints for this refusal: ok, error, message, reasons."""
        reasons = []
        for i, (c, m) in enumerate(self.reasons):
            reasons.append({"code": c, "message": m})
            if i in self._raw:
                reasons[-1]["message_hex"] = self._raw[i].hex()
        return {"ok": False, "error": self.code, "message": self.strerror, "reasons": reasons}


def _raise_for(r, report):
    reasons, raw = [], {}
    for i in range(min(report.n_reasons, REASONS_MAX)):
        message = report.reasons[i].message
        try:
            text = message.decode()
        except UnicodeDecodeError:
            # A path that is not UTF-8 in a message: each bad byte becomes U+FFFD and the raw
            # bytes are kept, as the audit log and every --json of the snapfs command do.
            text, raw[i] = message.decode(errors="replace"), bytes(message)
        reasons.append((report.reasons[i].code.decode(errors="replace"), text))
    raise SnapfsError(-r, reasons, report.n_dropped, raw)


_KIND_NAMES = {0: "content", 1: "signature", 2: "manifest"}


@dataclasses.dataclass(frozen=True)
class Binding:
    """(sha256, size, dev, ino) of one published snapshot in one mount instance, and what the
    daemon says of it where known (None where not: a Binding parsed from its text knows none
    of it). The identity is the four first fields alone."""
    sha256: str  # 64 lowercase hex
    size: int
    dev: int     # st_dev, as os.makedev(major, minor); None only in a Grant's snapshot
                 # while its scope's view is not mounted
    ino: int
    # Set by publish(): the same bytes were published before (not part of the identity).
    already_published: bool = dataclasses.field(default=False, compare=False)
    # The staging NAME it was first published under: str, or None (no name, or unknown).
    name: "str | None" = dataclasses.field(default=None, compare=False)
    # Its first publish: a datetime in UTC, or None when unknown.
    published: "datetime.datetime | None" = dataclasses.field(default=None, compare=False)
    # The uid that first published it: int, or None when unknown.
    publisher: "int | None" = dataclasses.field(default=None, compare=False)
    # "content", "signature" or "manifest" as the daemon says it; None when unknown.
    kind: "str | None" = dataclasses.field(default=None, compare=False)

    @classmethod
    def parse(cls, text):
        """The strict one-line text form -> Binding (name, published, publisher, kind None);
        raises SnapfsError(EINVAL) for anything else."""
        if isinstance(text, Binding):
            return text
        c = _CBinding()
        raw = text.encode() if isinstance(text, str) else bytes(text)
        if b"\0" in raw or _load().snapfs_binding_parse(raw, ctypes.byref(c)) < 0:
            raise SnapfsError(_errno.EINVAL, [("invalid-argument", "not a binding")])
        return cls._from_c(c)

    @classmethod
    def _from_c(cls, c, already=False):
        return cls(bytes(c.sha256).hex(), c.size, c.dev, c.ino, already)

    @classmethod
    def _from_snapshot(cls, s, already=False):
        b = s.binding
        when = datetime.datetime.fromtimestamp(s.published_sec, datetime.timezone.utc)
        when = when.replace(microsecond=s.published_nsec // 1000)
        return cls(bytes(b.sha256).hex(), b.size, b.dev, b.ino, already,
                   s.name.decode() or None, when, s.publisher, _KIND_NAMES.get(s.kind))

    def _to_c(self):
        c = _CBinding()
        digest = bytes.fromhex(self.sha256)
        if len(digest) != DIGEST_LEN:
            raise SnapfsError(_errno.EINVAL, [("invalid-argument", "not a SHA-256")])
        c.sha256[:] = list(digest)
        c.size, c.dev, c.ino = self.size, self.dev, self.ino
        return c

    def __str__(self):
        buf = ctypes.create_string_buffer(BINDING_TEXT_MAX)
        r = _load().snapfs_binding_format(ctypes.byref(self._to_c()), buf, len(buf))
        if r < 0:
            raise SnapfsError(-r)
        return buf.value.decode()

    def as_dict(self):
        """-> dict: the one snapshot object every `snapfs --json` prints (docs/design.md, "One
        snapshot object"): sha256, size, dev ("major:minor"), ino, name, published (RFC 3339
        UTC, to the second), publisher, binding; None (null) where unknown (dev and binding
        while a scope's view is not mounted)."""
        return {"sha256": self.sha256, "size": self.size,
                "dev": None if self.dev is None else f"{os.major(self.dev)}:{os.minor(self.dev)}",
                "ino": self.ino, "name": self.name,
                "published": (self.published.strftime("%Y-%m-%dT%H:%M:%SZ")
                              if self.published else None),
                "publisher": self.publisher,
                "binding": None if self.dev is None else str(self)}

    def as_result(self):
        """-> dict: what `snapfs put --json` prints for this publish, less its mount and
        read_view: ok, error, message, reasons, binding, snapshot (as_dict()),
        already_published."""
        return {"ok": True, "error": None, "message": None, "reasons": [],
                "binding": str(self), "snapshot": self.as_dict(),
                "already_published": self.already_published}


def name_valid(name):
    """-> bool: whether name is a snapshot name publish() takes: 1-64 of [A-Za-z0-9._-],
    starting with neither '.' nor '_'."""
    ok = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
    return (isinstance(name, str) and 0 < len(name) <= NAME_MAX and name[0] not in "._"
            and all(ch in ok for ch in name))


def _kind_flags(kind):
    """kind: "content", "signature", "manifest", or an iterable of them."""
    names = (kind,) if isinstance(kind, str) else tuple(kind)
    if not names or any(n not in KINDS for n in names):
        raise SnapfsError(_errno.EINVAL, [("invalid-argument",
                                           f"kind: {kind!r} is not content, signature or "
                                           "manifest")])
    flags = 0
    for n in names:
        flags |= KINDS[n]
    return flags


def _options(owner, max_size, insecure_own_mount=False, trust_user_namespace=False,
             kind="content"):
    o = _COptions()
    if owner is not None:
        o.flags, o.owner = OPT_OWNER, owner
    if insecure_own_mount:
        o.flags |= OPT_INSECURE_OWN_MOUNT
    if trust_user_namespace:
        o.flags |= OPT_TRUST_USER_NAMESPACE
    o.flags |= _kind_flags(kind)
    o.max_size = max_size
    return o


# The value grammars of every snapfs command (common/values.h), for what this client reads
# from a person: a uid (owner=, --owner, $SNAPFS_OWNER) and a size (--max-size). The same
# input gets the same answer and the same message as in C: tests/vectors/values.json holds
# the cases both sides are tested on.
_UID_MAX = 4294967294
_U64_MAX = (1 << 64) - 1
_FORMS = {
    "uid": "a decimal uid below 4294967295, without sign or leading zero",
    "size": "digits with an optional K, M or G suffix (binary units: 4096, 256K, 64M, 1G)",
}
_SIZE_UNITS = {"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "m": 1 << 20, "G": 1 << 30,
               "g": 1 << 30}


def _digits(text):
    """The value of text when it is only ASCII digits (str.isdigit() takes others), else None."""
    if not text or any(c not in "0123456789" for c in text):
        return None
    return int(text)


def _parse_value(kind, text):
    """(value, None), or (None, "EINVAL" | "ERANGE") as the C parser of kind answers."""
    if kind == "uid":
        v = _digits(text)
        if v is None or (len(text) > 1 and text[0] == "0"):
            return None, "EINVAL"
        return (v, None) if v <= _UID_MAX else (None, "ERANGE")
    if kind == "size":
        mult = 1
        if text and text[-1] in _SIZE_UNITS:
            text, mult = text[:-1], _SIZE_UNITS[text[-1]]
        v = _digits(text)
        if v is None:
            return None, "EINVAL"
        return (v * mult, None) if v * mult <= _U64_MAX else (None, "ERANGE")
    raise ValueError(f"no value type {kind!r}")


def _quote(text):
    """text as the C messages quote it: control bytes as \\xHH, cut after 64 bytes."""
    raw = os.fsencode(text)
    out = "".join(f"\\x{b:02x}" if b < 0x20 or b == 0x7F else bytes([b]).decode("latin-1")
                  for b in raw[:64])
    out = out.encode("latin-1").decode("utf-8", "surrogateescape")
    return out + ("..." if len(raw) > 64 else "")


def value_error(kind, text, minimum=0, maximum=_U64_MAX):
    """Why text is not a value of kind ("uid" or "size") within [minimum, maximum], in the
    words every snapfs command uses ("invalid size '12Q': expected digits with ..."); None
    when it is one."""
    v, err = _parse_value(kind, text)
    if err is None and minimum <= v <= maximum:
        return None
    q = _quote(text)
    if err == "EINVAL":
        return f"invalid {kind} '{q}': expected {_FORMS[kind]}"
    if kind == "uid":
        return f"invalid uid '{q}': out of range (a uid is at most 4294967294)"
    if maximum == _U64_MAX:
        if err is None:
            return f"invalid {kind} '{q}': out of range (at least {_format_size(minimum)})"
        return f"invalid {kind} '{q}': out of range (too large)"
    return f"invalid {kind} '{q}': out of range ({_format_size(minimum)} to " \
           f"{_format_size(maximum)})"


def _format_size(v):
    for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v and v % mult == 0:
            return f"{v // mult}{suffix}"
    return str(v)


def parse_owner(text):
    """-> int | None: a uid as every snapfs command reads --owner and $SNAPFS_OWNER: decimal,
    no sign, no leading zero, below 4294967295 (the kernel's "no uid"); None for anything else
    ("any" included: no command takes it from the environment). value_error("uid", text) says
    why."""
    v, _ = _parse_value("uid", text or "")
    return v


def parse_size(text):
    """-> int | None: a size as every snapfs command reads one: digits with an optional K, M or
    G suffix (binary units); None for anything else. value_error("size", text) says why."""
    v, _ = _parse_value("size", text or "")
    return v


def _name_arg(name):
    if name is None:
        return None
    if not name_valid(name):
        raise SnapfsError(_errno.EINVAL, [("invalid-argument",
                                           f"{name!r} is not a snapshot name: 1-64 of "
                                           "[A-Za-z0-9._-], starting with neither '.' nor '_'")])
    return name.encode()


def publish(mount, data, *, name=None, owner=None, max_size=0, insecure_own_mount=False,
            trust_user_namespace=False):
    """Publishes bytes (b"" is allowed) -> Binding: the verified binding of the snapshot, with
    its name, publish time, publisher and kind as the daemon says them. .already_published
    tells whether the same bytes were there already (they keep their first name). name: the
    snapshot's name (None: none). owner: the uid that must have mounted snapfs (default:
    root); insecure_own_mount=True also trusts a mount of your own uid, which any process of
    your uid can replace with a FUSE server of its own; max_size: 0 for the library's
    default."""
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace)
    data = bytes(data)
    lib, c, rep = _load(), _CSnapshot(), _CReport()
    r = lib.snapfs_publish_named(os.fsencode(mount), _name_arg(name), data, len(data),
                                 ctypes.byref(o), ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    return Binding._from_snapshot(c, r == 1)


def publish_fd(mount, fd, *, name=None, owner=None, max_size=0, insecure_own_mount=False,
               trust_user_namespace=False):
    """publish() of everything read from the descriptor fd until end of file -> Binding."""
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace)
    lib, c, rep = _load(), _CSnapshot(), _CReport()
    r = lib.snapfs_publish_fd_named(os.fsencode(mount), _name_arg(name), fd, ctypes.byref(o),
                                    ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    return Binding._from_snapshot(c, r == 1)


def describe(mount, binding, *, owner=None, insecure_own_mount=False,
             trust_user_namespace=False):
    """-> Binding: the snapshot the binding (a Binding or its text) names on the snapfs mount
    at mount, with its name, publish time, publisher and kind as the daemon says them. Judges
    the mount and checks the snapshot's identity; reads no content (open_verified() does)."""
    b = Binding.parse(binding)
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    c, rep = _CSnapshot(), _CReport()
    r = _load().snapfs_describe(os.fsencode(mount), ctypes.byref(b._to_c()), ctypes.byref(o),
                                ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    return Binding._from_snapshot(c)


def open_verified(mount, binding, *, owner=None, max_size=0, insecure_own_mount=False,
        trust_user_namespace=False, kind="content"):
    """-> int: the verified read-only descriptor (close-on-exec; yours to close) of the
    snapshot the binding (a Binding or its text) names on the snapfs mount at mount. kind:
    what it must be, "content" (the default), "signature" or "manifest", or an iterable of
    them; anything else raises SnapfsError(ENOMSG) with the reason "kind"."""
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    b = Binding.parse(binding)
    rep = _CReport()
    r = _load().snapfs_open_verified(os.fsencode(mount), ctypes.byref(b._to_c()),
                                     ctypes.byref(o), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    return r


def open_digest(mount, digest, *, owner=None, max_size=0, insecure_own_mount=False,
        trust_user_namespace=False, kind="content"):
    """-> (int, Binding): the verified read-only descriptor (close-on-exec; yours to close) of
    the snapshot named digest (64 lowercase hex), verified against its own name, and its
    Binding, with name, publish time, publisher and kind read through that descriptor; kind
    as open_verified() takes it."""
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    lib, c, rep, s = _load(), _CBinding(), _CReport(), _CSnapshot()
    r = lib.snapfs_open_digest(os.fsencode(mount), digest.encode(), ctypes.byref(o),
                               ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    if lib.snapfs_describe_fd(r, ctypes.byref(c), ctypes.byref(s)) < 0:
        return r, Binding._from_c(c)
    return r, Binding._from_snapshot(s)


def view_binding(mount, binding, *, owner=None, max_size=0, insecure_own_mount=False,
                 trust_user_namespace=False):
    """-> (str, Binding) or None: where a sandbox reads: the view's path and the binding of
    the snapshot as seen through the read view the mount's daemon serves beside it (snapfs
    mount --read-view), judged and verified there like any mount, with the name, publish time,
    publisher and kind the main mount's daemon says of it; None when the mount has no read
    view."""
    b = Binding.parse(binding)
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace)
    c, rep, view = _CBinding(), _CReport(), ctypes.create_string_buffer(4096)
    r = _load().snapfs_view_binding(os.fsencode(mount), ctypes.byref(b._to_c()), ctypes.byref(o),
                                    view, len(view), ctypes.byref(c), ctypes.byref(rep))
    if r == -_errno.ENODATA:
        return None
    if r < 0:
        _raise_for(r, rep)
    # Verified in the view already: what the daemon says of the digest is asked of the main
    # mount, where the view of a sandbox would not say it.
    return os.fsdecode(view.value), _describe_view(mount, None, [c], o)[0][0]


def verify_fd(fd, binding, *, max_size=0, kind="content"):
    """-> None: re-verifies a held descriptor against the binding before a use; raises
    SnapfsError on a refusal (kind as open_verified() takes it)."""
    b = Binding.parse(binding)
    rep = _CReport()
    r = _load().snapfs_verify_fd(fd, ctypes.byref(b._to_c()),
                                 ctypes.byref(_options(None, max_size, kind=kind)),
                                 ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)


def _pread_all(fd):
    chunks, off = [], 0
    while True:
        chunk = os.pread(fd, 1 << 16, off)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        off += len(chunk)


def read_verified(mount, binding, *, owner=None, max_size=0, insecure_own_mount=False,
        trust_user_namespace=False, kind="content"):
    """-> bytes: the content of the snapshot, read through a verified descriptor (the
    arguments of open_verified())."""
    fd = open_verified(mount, binding, owner=owner, max_size=max_size,
                       insecure_own_mount=insecure_own_mount,
                       trust_user_namespace=trust_user_namespace, kind=kind)
    try:
        return _pread_all(fd)
    finally:
        os.close(fd)


# ---- scopes -------------------------------------------------------------------------------
#
# A scope is what one sandbox may see: a mount of its own, the view, that lists and opens only
# the snapshots granted to it. The mount owner and root control scopes through the main mount:
# each call judges it, writes one JSON request to its .control file and reads the reply. A
# refusal raises SnapfsError with the daemon's errno (ENOENT no such scope, snapshot or grant;
# EEXIST name or view taken; EINVAL; EACCES not the owner or root; EDQUOT/ENOSPC; EBUSY) and
# its message as the reason "refused"; EOPNOTSUPP: the mount has no .control for the caller.

@dataclasses.dataclass(frozen=True)
class Scope:
    """A scope as the daemon reports it."""
    name: str
    view: str            # where its view is mounted
    dev: object          # the view's st_dev, os.makedev(major, minor): its bindings' dev;
                         # None while the view is not mounted (unmounted from outside)
    uids: tuple          # uids that may use the view (uid 0 always may)
    gid: object          # int, or None
    publish: bool        # processes in the scope may publish in its view
    until_pid: object    # int, or None: the scope goes when that process exits
    limits: dict         # max_snapshots, max_bytes, max_staging, max_staging_bytes (None: unset)
    usage: dict          # snapshots, bytes, staging, staging_bytes
    grants: int          # how many grants it has

    @classmethod
    def _from_c(cls, c):
        uids = ctypes.cast(c.uids, ctypes.POINTER(ctypes.c_uint32)) if c.uids else None
        return cls(name=c.name.decode(), view=os.fsdecode(ctypes.string_at(c.view)),
                   dev=None if c.flags & SCOPE_UNMOUNTED else c.dev, uids=tuple(uids[i] for i in range(c.n_uids)) if uids else (),
                   gid=c.gid if c.flags & SCOPE_GID else None,
                   publish=bool(c.flags & SCOPE_PUBLISH),
                   until_pid=c.until_pid if c.flags & SCOPE_UNTIL_PID else None,
                   limits={k: getattr(c.limits, k) or None for k, _ in _CScopeLimits._fields_},
                   usage={k: getattr(c.usage, k) for k, _ in _CScopeUsage._fields_},
                   grants=c.n_grants)

    def as_dict(self) -> dict:
        """The scope object of `snapfs scope ls --json` (and of create)."""
        return {"name": self.name, "view": self.view,
                "dev": None if self.dev is None else f"{os.major(self.dev)}:{os.minor(self.dev)}",
                "uids": list(self.uids),
                "gid": self.gid, "publish": self.publish, "until_pid": self.until_pid,
                "limits": dict(self.limits), "usage": dict(self.usage), "grants": self.grants}


@dataclasses.dataclass(frozen=True)
class Grant:
    """A snapshot granted to a scope, by digest, or under an entry name."""
    sha256: str          # 64 lowercase hex
    size: int
    ino: int             # in the scope's view (with Scope.dev, the binding there)
    entry: object        # str, or None for a grant by digest
    # The granted snapshot as the one snapshot object shows it: its Binding in the scope's
    # view (dev None while the view is not mounted), with the name, publish time, publisher
    # and kind the main mount's daemon says of its digest (None where it could not be asked).
    snapshot: "Binding | None" = dataclasses.field(default=None, compare=False)
    # Whether that binding was found in the view (judged like any mount, the snapshot looked
    # up there): False when the view could not be reached from here, so it is the daemon's
    # record alone.
    seen_in_view: bool = dataclasses.field(default=False, compare=False)

    @classmethod
    def _from_c(cls, c, snapshot=None, seen_in_view=False):
        return cls(bytes(c.sha256).hex(), c.size, c.ino, c.entry.decode() or None, snapshot,
                   seen_in_view)

    def as_dict(self) -> dict:
        """The grant object of `snapfs grant --json` and `snapfs scope ls NAME --json`: the one
        snapshot object (Binding.as_dict()) with the grant's entry beside it."""
        b = self.snapshot or Binding(self.sha256, self.size, None, self.ino)
        return {**b.as_dict(), "entry": self.entry}


def _describe_view(mount, view, bindings, o):
    """[(Binding, seen flags)] for the _CBinding list as snapfs_describe_view finds them: the
    main mount's word on each digest, each binding checked in view (None: not mounted). What
    could not be asked stays as given."""
    n = len(bindings)
    arr, out = (_CBinding * max(n, 1))(*bindings), (_CSnapshot * max(n, 1))()
    seen, rep = (ctypes.c_uint * max(n, 1))(), _CReport()
    r = _load().snapfs_describe_view(os.fsencode(mount),
                                     None if view is None else os.fsencode(view), arr, n,
                                     ctypes.byref(o), out, seen, ctypes.byref(rep))
    if r < 0:
        return [(Binding._from_c(b), 0) for b in bindings]
    return [(Binding._from_snapshot(out[i]) if seen[i] & SEEN_DAEMON
             else Binding._from_c(out[i].binding), seen[i]) for i in range(n)]


def _described_grants(mount, scope, grants, o):
    """The _CGrant list of scope (a Scope) as Grant, each with its snapshot object."""
    mounted = scope is not None and scope.dev is not None
    bindings = []
    for g in grants:
        b = _CBinding(size=g.size, dev=scope.dev if mounted else 0, ino=g.ino)
        b.sha256[:] = list(bytes(g.sha256))
        bindings.append(b)
    found = _describe_view(mount, scope.view if mounted else None, bindings, o)
    out = []
    for g, (b, seen) in zip(grants, found):
        if not mounted:
            b = dataclasses.replace(b, dev=None)
        out.append(Grant._from_c(g, b, bool(seen & SEEN_VIEW)))
    return out


def _name(text):
    return None if text is None else os.fsencode(text)


def _digest_of(what):
    """64 lowercase hex from a digest, a Binding or a binding's text."""
    if isinstance(what, Binding):
        return what.sha256
    if isinstance(what, str) and len(what) == 64:
        return what
    return Binding.parse(what).sha256


def scope_create(mount, name, view, *, uids=(), gid=None, publish=False, until_pid=None,
                 max_snapshots=0, max_bytes=0, max_staging=0, max_staging_bytes=0, owner=None,
                 insecure_own_mount=False, trust_user_namespace=False) -> Scope:
    """Creates the scope name with its view mounted at view (an absolute path where the
    daemon runs) and returns it as the daemon reports it. uids and/or gid may use the view
    (neither: root only); publish lets processes in the scope publish there; until_pid ties
    the scope to a process of this pid namespace (the daemon's); a limit of 0 is unset."""
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    uids = list(uids)
    arr = (ctypes.c_uint32 * max(len(uids), 1))(*uids)
    spec = _CScopeSpec(name=_name(name), view=_name(view), uids=arr, n_uids=len(uids))
    if gid is not None:
        spec.flags |= SCOPE_GID
        spec.gid = gid
    if publish:
        spec.flags |= SCOPE_PUBLISH
    if until_pid is not None:
        spec.flags |= SCOPE_UNTIL_PID
        spec.until_pid = until_pid
    spec.limits = _CScopeLimits(max_snapshots, max_bytes, max_staging, max_staging_bytes)
    lib, c, rep = _load(), _CScope(), _CReport()
    r = lib.snapfs_scope_create(os.fsencode(mount), ctypes.byref(spec), ctypes.byref(o),
                                ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    try:
        return Scope._from_c(c)
    finally:
        lib.snapfs_scope_free(ctypes.byref(c))


def scope_list(mount, *, owner=None, insecure_own_mount=False,
               trust_user_namespace=False) -> list:
    """Every scope of the mount's daemon: a list of Scope."""
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    lib, rep = _load(), _CReport()
    v, n = ctypes.POINTER(_CScope)(), ctypes.c_size_t()
    r = lib.snapfs_scope_list(os.fsencode(mount), ctypes.byref(o), ctypes.byref(v),
                              ctypes.byref(n), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    try:
        return [Scope._from_c(v[i]) for i in range(n.value)]
    finally:
        lib.snapfs_scopes_free(v, n)


def scope_show(mount, name, *, owner=None, insecure_own_mount=False,
               trust_user_namespace=False) -> tuple:
    """(Scope, [Grant, ...]): one scope and its grants, each with its snapshot object (the
    binding in the scope's view, what the daemon says of its digest)."""
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    lib, c, rep = _load(), _CScope(), _CReport()
    g, n = ctypes.POINTER(_CGrant)(), ctypes.c_size_t()
    r = lib.snapfs_scope_show(os.fsencode(mount), _name(name), ctypes.byref(o), ctypes.byref(c),
                              ctypes.byref(g), ctypes.byref(n), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    try:
        sc = Scope._from_c(c)
        return sc, _described_grants(mount, sc, [g[i] for i in range(n.value)], o)
    finally:
        lib.snapfs_scope_free(ctypes.byref(c))
        lib.snapfs_free(ctypes.cast(g, ctypes.c_void_p))


def scope_remove(mount, name, *, owner=None, insecure_own_mount=False,
                 trust_user_namespace=False) -> None:
    """Deletes the scope: its grants go, its view is detached (open descriptors keep
    reading)."""
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    rep = _CReport()
    r = _load().snapfs_scope_remove(os.fsencode(mount), _name(name), ctypes.byref(o),
                                    ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)


def grant(mount, scope, snapshot, *, entry=None, owner=None, insecure_own_mount=False,
          trust_user_namespace=False) -> Grant:
    """Grants the published snapshot (its digest, a Binding or a binding's text) to the scope,
    under the entry name when given: an entry that exists moves to it atomically. The Grant
    has its snapshot object (the scope asked for again: its view as the daemon names it)."""
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    c, rep = _CGrant(), _CReport()
    r = _load().snapfs_grant(os.fsencode(mount), _name(scope), _digest_of(snapshot).encode(),
                             _name(entry), ctypes.byref(o), ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    lib, sc, srep = _load(), _CScope(), _CReport()
    if lib.snapfs_scope_show(os.fsencode(mount), _name(scope), ctypes.byref(o), ctypes.byref(sc),
                             None, None, ctypes.byref(srep)) < 0:
        return _described_grants(mount, None, [c], o)[0]
    try:
        return _described_grants(mount, Scope._from_c(sc), [c], o)[0]
    finally:
        lib.snapfs_scope_free(ctypes.byref(sc))


def revoke(mount, scope, *, sha256=None, entry=None, owner=None, insecure_own_mount=False,
           trust_user_namespace=False) -> None:
    """Revokes from the scope every grant of sha256 (its entries included), or the one
    entry: exactly one of them. New lookups get ENOENT; open descriptors keep reading."""
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    rep = _CReport()
    digest = None if sha256 is None else _digest_of(sha256).encode()
    r = _load().snapfs_revoke(os.fsencode(mount), _name(scope), digest, _name(entry),
                              ctypes.byref(o), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)


def scope_binding(mount, scope, binding, *, owner=None, max_size=0, insecure_own_mount=False,
                  trust_user_namespace=False) -> tuple:
    """Where a sandbox of the scope reads: (view path, Binding) of the snapshot the binding
    names as seen through the scope's view, judged and verified there like any mount, with
    the name, publish time, publisher and kind the main mount's daemon says of it."""
    b = Binding.parse(binding)
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace)
    c, rep, view = _CBinding(), _CReport(), ctypes.create_string_buffer(4096)
    r = _load().snapfs_scope_binding(os.fsencode(mount), _name(scope), ctypes.byref(b._to_c()),
                                     ctypes.byref(o), view, len(view), ctypes.byref(c),
                                     ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    return os.fsdecode(view.value), _describe_view(mount, None, [c], o)[0][0]


def open_entry(view, entry, *, owner=None, max_size=0, insecure_own_mount=False,
               trust_user_namespace=False, kind="content") -> tuple:
    """(descriptor, Binding): verified open through the entry of a scope's view. The entry is
    opened below the judged view's root, its digest read from that descriptor, its content
    hashed against it; the descriptor (close-on-exec, yours to close) holds the snapshot the
    entry named at the open, whatever it is moved to later. The Binding has name, publish
    time, publisher and kind read through that descriptor, as open_digest()'s. kind as
    open_verified() takes it."""
    o = _options(owner, max_size, insecure_own_mount, trust_user_namespace, kind)
    lib, c, rep, s = _load(), _CBinding(), _CReport(), _CSnapshot()
    r = lib.snapfs_open_entry(os.fsencode(view), _name(entry), ctypes.byref(o),
                              ctypes.byref(c), ctypes.byref(rep))
    if r < 0:
        _raise_for(r, rep)
    if lib.snapfs_describe_fd(r, ctypes.byref(c), ctypes.byref(s)) < 0:
        return r, Binding._from_c(c)
    return r, Binding._from_snapshot(s)


def control(mount, request, *, owner=None, insecure_own_mount=False,
            trust_user_namespace=False) -> dict:
    """One raw request (a dict, or its JSON text) on the main mount's control file: the
    daemon's reply, parsed. A refusal raises SnapfsError with the daemon's errno and keeps its
    reply in .reply."""
    import json
    o = _options(owner, 0, insecure_own_mount, trust_user_namespace)
    text = request if isinstance(request, (str, bytes)) else json.dumps(request)
    text = text.encode() if isinstance(text, str) else bytes(text)
    lib, reply, rep = _load(), ctypes.c_void_p(), _CReport()
    r = lib.snapfs_control(os.fsencode(mount), text, ctypes.byref(o), ctypes.byref(reply),
                           ctypes.byref(rep))
    parsed = None
    if reply.value:
        try:
            parsed = json.loads(ctypes.string_at(reply.value).decode())
        finally:
            lib.snapfs_free(reply)
    if r < 0:
        try:
            _raise_for(r, rep)
        except SnapfsError as e:
            e.reply = parsed
            raise
    return parsed


def status(mount, **trust) -> dict:
    """The daemon's status (docs/design.md, "Health and metrics"): pid, version, mounts,
    store, limits, usage, counters. The mount owner and root only (EACCES otherwise)."""
    return control(mount, {"op": "status"}, **trust)["status"]


def metrics(mount, fmt="openmetrics", **trust) -> str:
    """The daemon's metrics as text: fmt "openmetrics" (OpenMetrics 1.0) or "prometheus"
    (the text format node_exporter's textfile collector reads)."""
    return control(mount, {"op": "metrics", "format": fmt}, **trust)["text"]


# ---- the script -------------------------------------------------------------------------

def _main(argv):
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="snapfs_client.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    env_owner = os.environ.get("SNAPFS_OWNER") or None
    if env_owner is not None and parse_owner(env_owner) is None:
        ap.error(f"SNAPFS_OWNER: {value_error('uid', env_owner)}")

    def typed(kind, parse):
        def arg(text):
            v = parse(text)
            if v is None:
                raise argparse.ArgumentTypeError(value_error(kind, text))
            return v
        return arg
    owner_arg = typed("uid", parse_owner)

    common.add_argument("--owner", type=owner_arg,
                        default=parse_owner(env_owner) if env_owner else None,
                        help="uid that must have mounted snapfs (default: $SNAPFS_OWNER, else 0)")
    common.add_argument("--insecure-own-mount", action="store_true",
                        help="INSECURE: also trust a mount of your own uid; any process of "
                             "your uid can unmount it and mount its own FUSE server there")
    common.add_argument("--trust-user-namespace", action="store_true",
                        help="accept a mount whose owner user namespaces hide")
    common.add_argument("--max-size", type=typed("size", parse_size), default=0,
                        help="largest snapshot (K, M or G: binary units)")
    reading = argparse.ArgumentParser(add_help=False, parents=[common])
    reading.add_argument("--kind", choices=sorted(KINDS), default="content",
                         help="the kind of snapshot to accept (default: content)")
    p = sub.add_parser("publish", parents=[common], help="publish FILE (or - for stdin)")
    p.add_argument("--from-fd", action="store_true", help="stream from the descriptor")
    p.add_argument("--name", default=None, help="the snapshot's name")
    p.add_argument("mount")
    p.add_argument("file")
    for name, last in (("open", "binding"), ("digest", "digest"), ("cat", "binding")):
        p = sub.add_parser(name, parents=[reading])
        p.add_argument("mount")
        p.add_argument(last)
    p = sub.add_parser("verify-fd", parents=[reading])
    p.add_argument("path")
    p.add_argument("binding")
    p = sub.add_parser("describe", parents=[common])
    p.add_argument("mount")
    p.add_argument("binding")
    p = sub.add_parser("scope-create", parents=[common])
    p.add_argument("--uid", type=typed("uid", parse_owner), action="append", default=[])
    p.add_argument("--gid", type=typed("uid", parse_owner))
    p.add_argument("--publish", action="store_true")
    p.add_argument("--until-pid", type=int)
    for limit in ("max_snapshots", "max_bytes", "max_staging", "max_staging_bytes"):
        # Sizes as every snapfs command reads one (K, M or G); counts in decimal.
        p.add_argument("--" + limit.replace("_", "-"), dest=limit, default=0,
                       type=typed("size", parse_size) if limit.endswith("bytes") else int)
    p.add_argument("mount")
    p.add_argument("name")
    p.add_argument("view")
    p = sub.add_parser("scope-list", parents=[common])
    p.add_argument("mount")
    for name in ("scope-show", "scope-remove"):
        p = sub.add_parser(name, parents=[common])
        p.add_argument("mount")
        p.add_argument("name")
    p = sub.add_parser("grant", parents=[common])
    p.add_argument("--entry")
    p.add_argument("mount")
    p.add_argument("scope")
    p.add_argument("snapshot")
    p = sub.add_parser("revoke", parents=[common])
    p.add_argument("--sha256")
    p.add_argument("--entry")
    p.add_argument("mount")
    p.add_argument("scope")
    p = sub.add_parser("scope-binding", parents=[common])
    p.add_argument("mount")
    p.add_argument("scope")
    p.add_argument("binding")
    p = sub.add_parser("open-entry", parents=[reading])
    p.add_argument("view")
    p.add_argument("entry")
    p = sub.add_parser("control", parents=[common])
    p.add_argument("mount")
    p.add_argument("request")
    sub.add_parser("abi")
    a = ap.parse_args(argv)

    if a.cmd == "abi":
        print(json.dumps({
            "sizeof snapfs_binding": ctypes.sizeof(_CBinding),
            "snapfs_binding.size": _CBinding.size.offset,
            "snapfs_binding.dev": _CBinding.dev.offset,
            "snapfs_binding.ino": _CBinding.ino.offset,
            "sizeof snapfs_options": ctypes.sizeof(_COptions),
            "snapfs_options.owner": _COptions.owner.offset,
            "snapfs_options.max_size": _COptions.max_size.offset,
            "sizeof snapfs_reason": ctypes.sizeof(_CReason),
            "snapfs_reason.message": _CReason.message.offset,
            "sizeof snapfs_report": ctypes.sizeof(_CReport),
            "snapfs_report.n_reasons": _CReport.n_reasons.offset,
            "snapfs_report.n_dropped": _CReport.n_dropped.offset,
            "snapfs_report.reasons": _CReport.reasons.offset,
            "sizeof snapfs_snapshot": ctypes.sizeof(_CSnapshot),
            "snapfs_snapshot.name": _CSnapshot.name.offset,
            "snapfs_snapshot.published_sec": _CSnapshot.published_sec.offset,
            "snapfs_snapshot.published_nsec": _CSnapshot.published_nsec.offset,
            "snapfs_snapshot.publisher": _CSnapshot.publisher.offset,
            "snapfs_snapshot.kind": _CSnapshot.kind.offset,
            "sizeof snapfs_scope_spec": ctypes.sizeof(_CScopeSpec),
            "snapfs_scope_spec.n_uids": _CScopeSpec.n_uids.offset,
            "snapfs_scope_spec.until_pid": _CScopeSpec.until_pid.offset,
            "snapfs_scope_spec.limits": _CScopeSpec.limits.offset,
            "sizeof snapfs_scope": ctypes.sizeof(_CScope),
            "snapfs_scope.view": _CScope.view.offset,
            "snapfs_scope.dev": _CScope.dev.offset,
            "snapfs_scope.flags": _CScope.flags.offset,
            "snapfs_scope.until_pid": _CScope.until_pid.offset,
            "snapfs_scope.limits": _CScope.limits.offset,
            "snapfs_scope.usage": _CScope.usage.offset,
            "snapfs_scope.n_grants": _CScope.n_grants.offset,
            "sizeof snapfs_grant": ctypes.sizeof(_CGrant),
            "snapfs_grant.size": _CGrant.size.offset,
            "snapfs_grant.ino": _CGrant.ino.offset,
            "snapfs_grant.entry": _CGrant.entry.offset,
        }))
        return 0

    kw = {"owner": a.owner, "max_size": a.max_size, "insecure_own_mount": a.insecure_own_mount,
          "trust_user_namespace": a.trust_user_namespace}
    tkw = {"owner": a.owner, "insecure_own_mount": a.insecure_own_mount,
               "trust_user_namespace": a.trust_user_namespace}
    # Only a verified open hands something over: publishing takes no kind.
    rkw = {**kw, "kind": getattr(a, "kind", "content")}
    out = {}
    try:
        if a.cmd == "publish":
            src = sys.stdin.buffer if a.file == "-" else open(a.file, "rb")
            with src:
                if a.from_fd:
                    b = publish_fd(a.mount, src.fileno(), name=a.name, **kw)
                else:
                    b = publish(a.mount, src.read(), name=a.name, **kw)
            out.update(binding=str(b), snapshot=b.as_dict(),
                       already_published=b.already_published)
            result = 1 if b.already_published else 0
        elif a.cmd == "cat":
            sys.stdout.buffer.write(read_verified(a.mount, a.binding, **rkw))
            return 0
        elif a.cmd == "open":
            b = Binding.parse(a.binding)
            fd = open_verified(a.mount, b, **rkw)
            try:
                out["binding"] = str(b)
                # re-verifying the held one must pass
                verify_fd(fd, b, max_size=a.max_size, kind=a.kind)
                out["content_hex"] = _pread_all(fd).hex()
            finally:
                os.close(fd)
            result = 0
        elif a.cmd == "digest":
            fd, b = open_digest(a.mount, a.digest, **rkw)
            try:
                out.update(binding=str(b), snapshot=b.as_dict(),
                           content_hex=_pread_all(fd).hex())
            finally:
                os.close(fd)
            result = 0
        elif a.cmd == "describe":
            kw.pop("max_size")
            b = describe(a.mount, a.binding, **kw)
            out.update(binding=str(b), snapshot=b.as_dict(), kind=b.kind)
            result = 0
        elif a.cmd == "scope-create":
            sc = scope_create(a.mount, a.name, a.view, uids=a.uid, gid=a.gid, publish=a.publish,
                              until_pid=a.until_pid, max_snapshots=a.max_snapshots,
                              max_bytes=a.max_bytes, max_staging=a.max_staging,
                              max_staging_bytes=a.max_staging_bytes, **tkw)
            out["scope"] = sc.as_dict()
            result = 0
        elif a.cmd == "scope-list":
            out["scopes"] = [sc.as_dict() for sc in scope_list(a.mount, **tkw)]
            result = 0
        elif a.cmd == "scope-show":
            sc, grants = scope_show(a.mount, a.name, **tkw)
            out.update(scope=sc.as_dict(), grants=[g.as_dict() for g in grants])
            result = 0
        elif a.cmd == "scope-remove":
            scope_remove(a.mount, a.name, **tkw)
            result = 0
        elif a.cmd == "grant":
            out["grant"] = grant(a.mount, a.scope, a.snapshot, entry=a.entry, **tkw).as_dict()
            result = 0
        elif a.cmd == "revoke":
            revoke(a.mount, a.scope, sha256=a.sha256, entry=a.entry, **tkw)
            result = 0
        elif a.cmd == "scope-binding":
            view, b = scope_binding(a.mount, a.scope, a.binding, max_size=a.max_size, **tkw)
            out.update(view=view, binding=str(b), snapshot=b.as_dict())
            result = 0
        elif a.cmd == "open-entry":
            fd, b = open_entry(a.view, a.entry, max_size=a.max_size, kind=a.kind, **tkw)
            try:
                out.update(binding=str(b), snapshot=b.as_dict(),
                           content_hex=_pread_all(fd).hex())
            finally:
                os.close(fd)
            result = 0
        elif a.cmd == "control":
            try:
                out["reply"] = control(a.mount, a.request, **tkw)
            except SnapfsError as e:
                out["reply"] = e.reply
                raise
            result = 0
        else:  # verify-fd
            fd = os.open(a.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                verify_fd(fd, a.binding, max_size=a.max_size, kind=a.kind)
            finally:
                os.close(fd)
            result = 0
    except SnapfsError as e:
        if a.cmd == "cat":  # standard output carries the bytes: the refusal goes elsewhere
            print(f"snapfs_client.py cat: {e}", file=sys.stderr)
            return 1
        print(json.dumps({**e.as_dict(), "result": -e.errno, "dropped": e.dropped, **out}))
        return 1
    print(json.dumps({"ok": True, "error": None, "message": None, "reasons": [],
                      "result": result, "dropped": 0, **out}))
    return 0


def main():
    """The snapfs-client command (pip's entry point): the script above."""
    return _main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
