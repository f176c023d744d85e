# SPDX-License-Identifier: MIT
"""The ctypes mirror of libsnapfs's ABI (client/snapfs.h): its constants, the flags as
IntFlags, the structs field for field, every prototype, and where the library is found.

A mirror is copied by hand, so it is only right for the library it was copied from: the
library's version (snapfs_version) must be this client's, or nothing is called."""
from __future__ import annotations

import ctypes
import enum
import os
import shutil
import subprocess
import threading
from typing import Any, List, Optional

__version__ = "0.1.0"

DIGEST_LEN = 32
NAME_MAX = 64
BINDING_TEXT_MAX = 160
REASONS_MAX = 40
CODE_MAX = 32
MESSAGE_MAX = 320


class Opt(enum.IntFlag):
    """SNAPFS_OPT_*: struct snapfs_options.flags."""
    OWNER = 1
    # INSECURE: also trust a mount of your own uid. Any process of your uid can unmount it and
    # mount its own FUSE server in its place (refused without it: "owner-is-caller").
    INSECURE_OWN_MOUNT = 2
    # Accept a mount whose owner user namespaces hide (refused without it: "user-namespace").
    TRUST_USER_NAMESPACE = 4
    # The kinds of snapshot a verified open hands over: content unless asked otherwise. A
    # signature envelope or a manifest is refused as content with ENOMSG (reason "kind").
    KIND_CONTENT = 8
    KIND_SIGNATURE = 16
    KIND_MANIFEST = 32


class ScopeFlag(enum.IntFlag):
    """SNAPFS_SCOPE_*: struct snapfs_scope(_spec).flags."""
    GID = 1
    PUBLISH = 2
    UNTIL_PID = 4
    UNMOUNTED = 8


class Seen(enum.IntFlag):
    """What snapfs_describe_view found of a snapshot."""
    DAEMON = 1  # name, published, publisher, kind: the main mount's daemon's word
    VIEW = 2    # the binding: found in the view as the daemon's record names it


KIND_FLAGS = {"content": Opt.KIND_CONTENT, "signature": Opt.KIND_SIGNATURE,
              "manifest": Opt.KIND_MANIFEST}
KIND_NAMES = {0: "content", 1: "signature", 2: "manifest"}


# The reserved words that end every struct but the binding and a reason (snapfs.h,
# SNAPFS_RESERVED): left zero, as ctypes makes them.
RESERVED = ctypes.c_uint64 * 4


class CBinding(ctypes.Structure):
    _fields_ = [("sha256", ctypes.c_uint8 * DIGEST_LEN), ("size", ctypes.c_uint64),
                ("dev", ctypes.c_uint64), ("ino", ctypes.c_uint64)]


class COptions(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint), ("owner", ctypes.c_uint32),
                ("max_size", ctypes.c_uint64), ("reserved", RESERVED)]


class CSnapshot(ctypes.Structure):
    _fields_ = [("binding", CBinding), ("name", ctypes.c_char * (NAME_MAX + 1)),
                ("published_sec", ctypes.c_int64), ("published_nsec", ctypes.c_uint32),
                ("publisher", ctypes.c_uint32), ("kind", ctypes.c_int), ("reserved", RESERVED)]


class CReason(ctypes.Structure):
    _fields_ = [("code", ctypes.c_char * CODE_MAX), ("message", ctypes.c_char * MESSAGE_MAX)]


class CReport(ctypes.Structure):
    _fields_ = [("error", ctypes.c_int), ("n_reasons", ctypes.c_uint),
                ("n_dropped", ctypes.c_uint), ("reasons", CReason * REASONS_MAX),
                ("reserved", RESERVED)]


class CScopeLimits(ctypes.Structure):
    _fields_ = [("max_snapshots", ctypes.c_uint64), ("max_bytes", ctypes.c_uint64),
                ("max_staging", ctypes.c_uint64), ("max_staging_bytes", ctypes.c_uint64)]


class CScopeUsage(ctypes.Structure):
    _fields_ = [("snapshots", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("staging", ctypes.c_uint64), ("staging_bytes", ctypes.c_uint64)]


class CScopeSpec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("view", ctypes.c_char_p),
                ("uids", ctypes.POINTER(ctypes.c_uint32)), ("n_uids", ctypes.c_size_t),
                ("flags", ctypes.c_uint), ("gid", ctypes.c_uint32),
                ("until_pid", ctypes.c_int32), ("limits", CScopeLimits),
                ("min_bytes", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 3)]


class CScope(ctypes.Structure):
    # view and uids are the library's allocations (c_void_p: ctypes must not convert them),
    # given back with snapfs_scope_free / snapfs_scopes_free.
    _fields_ = [("name", ctypes.c_char * (NAME_MAX + 1)), ("view", ctypes.c_void_p),
                ("dev", ctypes.c_uint64), ("uids", ctypes.c_void_p), ("n_uids", ctypes.c_size_t),
                ("flags", ctypes.c_uint), ("gid", ctypes.c_uint32), ("until_pid", ctypes.c_int32),
                ("limits", CScopeLimits), ("usage", CScopeUsage),
                ("n_grants", ctypes.c_uint64), ("min_bytes", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 3)]


class CGrant(ctypes.Structure):
    _fields_ = [("sha256", ctypes.c_uint8 * DIGEST_LEN), ("size", ctypes.c_uint64),
                ("ino", ctypes.c_uint64), ("entry", ctypes.c_char * (NAME_MAX + 1)),
                ("reserved", RESERVED)]


def layout() -> "dict[str, int]":
    """Sizes and offsets of the mirrored structs, as the C test driver prints them (abi)."""
    out = {}
    for name, struct, fields in (
            ("snapfs_binding", CBinding, ("size", "dev", "ino")),
            ("snapfs_options", COptions, ("owner", "max_size", "reserved")),
            ("snapfs_reason", CReason, ("message",)),
            ("snapfs_report", CReport, ("n_reasons", "n_dropped", "reasons", "reserved")),
            ("snapfs_snapshot", CSnapshot, ("name", "published_sec", "published_nsec",
                                            "publisher", "kind", "reserved")),
            ("snapfs_scope_spec", CScopeSpec, ("n_uids", "until_pid", "limits", "min_bytes",
                                               "reserved")),
            ("snapfs_scope", CScope, ("view", "dev", "flags", "until_pid", "limits", "usage",
                                      "n_grants", "min_bytes", "reserved")),
            ("snapfs_grant", CGrant, ("size", "ino", "entry", "reserved"))):
        out[f"sizeof {name}"] = ctypes.sizeof(struct)
        for f in fields:
            out[f"{name}.{f}"] = getattr(struct, f).offset
    return out


# Where `meson install` put libsnapfs.so.0: the installed copy of this file carries its
# absolute path; None here, in the source tree.
_INSTALLED_LIBRARY = None

_lib: Optional[ctypes.CDLL] = None
_lib_lock = threading.Lock()

# The one command that puts a library where the loader finds it, whatever the prefix.
FIX = ("install snapfs: `sudo scripts/install.sh /usr/local` from its source (any prefix: "
       "it tells the loader where the library is) or its Debian package; or set "
       "SNAPFS_LIBRARY to the path of libsnapfs.so.0")


def _pkg_config_library() -> Optional[str]:
    """libsnapfs.so.0 in the libdir pkg-config names for snapfs, when it is there."""
    if not shutil.which("pkg-config"):
        return None
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir", "snapfs"], capture_output=True,
                           text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    path = os.path.join(r.stdout.strip(), "libsnapfs.so.0")
    return path if r.returncode == 0 and r.stdout.strip() and os.path.exists(path) else None


def _candidates() -> List[str]:
    env = os.environ.get("SNAPFS_LIBRARY")
    if env:
        return [env]
    out = []
    if _INSTALLED_LIBRARY and os.path.exists(_INSTALLED_LIBRARY):
        out.append(_INSTALLED_LIBRARY)
    # The loader's search (its cache, which ldconfig writes), then pkg-config's libdir.
    out.append("libsnapfs.so.0")
    found = _pkg_config_library()
    if found:
        out.append(found)
    return out


P = ctypes.POINTER
_PROTOS: "dict[str, List[Any]]" = {
    "snapfs_binding_format": [P(CBinding), ctypes.c_char_p, ctypes.c_size_t],
    "snapfs_binding_parse": [ctypes.c_char_p, P(CBinding)],
    "snapfs_publish": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, P(COptions),
                       P(CBinding), P(CReport)],
    "snapfs_publish_fd": [ctypes.c_char_p, ctypes.c_int, P(COptions), P(CBinding), P(CReport)],
    "snapfs_open_verified": [ctypes.c_char_p, P(CBinding), P(COptions), P(CReport)],
    "snapfs_open_digest": [ctypes.c_char_p, ctypes.c_char_p, P(COptions), P(CBinding),
                           P(CReport)],
    "snapfs_verify_fd": [ctypes.c_int, P(CBinding), P(COptions), P(CReport)],
    "snapfs_view_binding": [ctypes.c_char_p, P(CBinding), P(COptions), ctypes.c_char_p,
                            ctypes.c_size_t, P(CBinding), P(CReport)],
    "snapfs_publish_named": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                             P(COptions), P(CSnapshot), P(CReport)],
    "snapfs_publish_fd_named": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, P(COptions),
                                P(CSnapshot), P(CReport)],
    "snapfs_publish_for_scope": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, P(COptions),
                                 P(CSnapshot), P(CReport)],
    "snapfs_publish_fd_for_scope": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                    ctypes.c_char_p, ctypes.c_int, P(COptions), P(CSnapshot),
                                    P(CReport)],
    "snapfs_describe": [ctypes.c_char_p, P(CBinding), P(COptions), P(CSnapshot), P(CReport)],
    "snapfs_describe_fd": [ctypes.c_int, P(CBinding), P(CSnapshot)],
    "snapfs_control": [ctypes.c_char_p, ctypes.c_char_p, P(COptions), P(ctypes.c_void_p),
                       P(CReport)],
    "snapfs_scope_create": [ctypes.c_char_p, P(CScopeSpec), P(COptions), P(CScope), P(CReport)],
    "snapfs_scope_list": [ctypes.c_char_p, P(COptions), P(P(CScope)), P(ctypes.c_size_t),
                          P(CReport)],
    "snapfs_scope_show": [ctypes.c_char_p, ctypes.c_char_p, P(COptions), P(CScope),
                          P(P(CGrant)), P(ctypes.c_size_t), P(CReport)],
    "snapfs_scope_remove": [ctypes.c_char_p, ctypes.c_char_p, P(COptions), P(CReport)],
    "snapfs_grant": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                     P(COptions), P(CGrant), P(CReport)],
    "snapfs_revoke": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                      P(COptions), P(CReport)],
    "snapfs_scope_binding": [ctypes.c_char_p, ctypes.c_char_p, P(CBinding), P(COptions),
                             ctypes.c_char_p, ctypes.c_size_t, P(CBinding), P(CReport)],
    "snapfs_open_entry": [ctypes.c_char_p, ctypes.c_char_p, P(COptions), P(CBinding),
                          P(CReport)],
    "snapfs_remove": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint, P(COptions),
                      P(ctypes.c_size_t), P(ctypes.c_size_t), P(CReport)],
    "snapfs_list": [ctypes.c_char_p, P(COptions), P(P(CSnapshot)), P(ctypes.c_size_t),
                    P(CReport)],
    "snapfs_describe_view": [ctypes.c_char_p, ctypes.c_char_p, P(CBinding), ctypes.c_size_t,
                             P(COptions), P(CSnapshot), P(ctypes.c_uint), P(CReport)],
    "snapfs_watch_entry": [ctypes.c_char_p, ctypes.c_char_p, P(COptions), P(CReport)],
    "snapfs_watch_wait": [ctypes.c_int, ctypes.c_int],
    "snapfs_wait_entry": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, P(COptions),
                          P(CBinding), P(CReport)],
}


_STRINGS: "dict[str, List[Any]]" = {"snapfs_strerror": [ctypes.c_int], "snapfs_version": []}
_FREES: "dict[str, List[Any]]" = {"snapfs_scope_free": [P(CScope)],
                                  "snapfs_scopes_free": [P(CScope), ctypes.c_size_t],
                                  "snapfs_free": [ctypes.c_void_p]}
# Every function this client declares: the test suite holds it equal to what the library
# exports (client/libsnapfs.sym), so a function added there is declared here too.
SYMBOLS = frozenset(_PROTOS) | frozenset(_STRINGS) | frozenset(_FREES)


def _declare(lib: ctypes.CDLL) -> None:
    """Every prototype declared: ctypes guesses nothing."""
    for fn, args in _PROTOS.items():
        f = getattr(lib, fn)
        f.argtypes, f.restype = args, ctypes.c_int
    for fn, args in _STRINGS.items():
        f = getattr(lib, fn)
        f.argtypes, f.restype = args, ctypes.c_char_p
    for fn, args in _FREES.items():
        f = getattr(lib, fn)
        f.argtypes, f.restype = args, None


def load() -> Any:
    """libsnapfs, loaded once and checked to be of this client's version. Raises OSError
    saying the one command that fixes it when there is none to load, or one of another
    version."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        tried = _candidates()
        errors = []
        for name in tried:
            try:
                lib = ctypes.CDLL(name, use_errno=False)
                break
            except OSError as e:
                errors.append(str(e))
        else:
            # The usual case from a virtual environment: the module came from pip, the
            # library from an install the loader was not told of.
            raise OSError(f"snapfs_client: cannot load {' or '.join(tried)} "
                          f"({'; '.join(errors)}): {FIX}")
        version = getattr(lib, "snapfs_version", None)
        if version is None:
            raise OSError(f"snapfs_client: {name} has no snapfs_version: it is older than "
                          f"this client ({__version__}); {FIX}")
        version.argtypes, version.restype = [], ctypes.c_char_p
        have = version().decode()
        if have != __version__:
            # The structs above are copied from one version's snapfs.h: another library may
            # lay them out otherwise, and a call would read fields at the wrong offsets.
            raise OSError(f"snapfs_client: {name} is libsnapfs {have}, this client is "
                          f"{__version__}: install the client of that version (the wheel "
                          f"PREFIX/share/snapfs/python/snapfs_client-{have}-py3-none-any.whl "
                          "of the same install)")
        _declare(lib)
        _lib = lib
        return lib
