# SPDX-License-Identifier: MIT
"""Publish to snapfs and open snapshots verified, from Python, with the standard library only.

This package binds libsnapfs.so with ctypes, so every check is the C library's own code:
the mount check (fuse.snapfs, nosuid/nodev/noexec, private, exactly one mount, mounted by the
uid you trust: root unless owner= names another, never your own uid unless
insecure_own_mount=True), the open relative to the pinned mount root, the descriptor's mount
id, fstat against the binding, the whole content hashed. Same semantics as C, by construction.

    import subprocess, snapfs_client as snapfs

    binding = snapfs.publish("/run/snapfs", config_bytes)      # -> Binding (str() is its text)
    with snapfs.open_verified("/run/snapfs", binding) as fd:   # a verified, read-only descriptor
        subprocess.run(["mcp-client", "--config", f"/proc/self/fd/{fd}"], pass_fds=[fd])

Failures raise SnapfsError (an OSError): .errno is the library's errno, .code its name,
.finding the first reason's code, .reasons every (code, message) pair it gave.
SnapfsError.as_dict() gives the fields of every `snapfs --json` refusal (ok, error, message,
reasons) and Binding.as_dict() the one snapshot object every `snapfs --json` prints (sha256,
size, dev, ino, name, published, publisher, binding), so a runtime can log the same objects
whichever client it used. The trust keywords (owner, insecure_own_mount,
trust_user_namespace) can be given one by one or as one Trust.

The library is found through $SNAPFS_LIBRARY (a path), then the library `meson install` put
in place (the installed copy carries its absolute path), then the dynamic linker's search for
libsnapfs.so.0 (its cache, which `ldconfig` writes: scripts/install.sh tells it of any
prefix), then pkg-config's libdir for snapfs; it must be of this client's version.

Modules: _abi (the ctypes mirror of snapfs.h), errors, binding, values (the value grammars),
api, cli (the snapfs-client command, also `python -m snapfs_client`).
"""
from ._abi import (BINDING_TEXT_MAX, CODE_MAX, DIGEST_LEN, KIND_FLAGS, MESSAGE_MAX, NAME_MAX,
                   REASONS_MAX, Opt, ScopeFlag, Seen, __version__)
from ._abi import _INSTALLED_LIBRARY  # noqa: F401 (where the installed copy finds its library)
from .api import (EntryWatch, Grant, Scope, Trust, VerifiedFd, control, describe, grant,
                  metrics, open_digest, open_entry, open_verified, publish, publish_fd,
                  read_verified, remove, revoke, scope_binding, scope_create, scope_list,
                  scope_remove, scope_show, snapshots, status, verify_fd, view_binding,
                  wait_entry, watch_entry)
from .binding import Binding, entry_name_valid, name_valid
from .cli import main
from .errors import SnapfsError, strerror
from .values import parse_duration, parse_owner, parse_size, value_error

# The flags by their C names, as the module had them before it was a package.
OPT_OWNER = Opt.OWNER
OPT_INSECURE_OWN_MOUNT = Opt.INSECURE_OWN_MOUNT
OPT_TRUST_USER_NAMESPACE = Opt.TRUST_USER_NAMESPACE
OPT_KIND_CONTENT = Opt.KIND_CONTENT
OPT_KIND_SIGNATURE = Opt.KIND_SIGNATURE
OPT_KIND_MANIFEST = Opt.KIND_MANIFEST
SCOPE_GID = ScopeFlag.GID
SCOPE_PUBLISH = ScopeFlag.PUBLISH
SCOPE_UNTIL_PID = ScopeFlag.UNTIL_PID
SCOPE_UNMOUNTED = ScopeFlag.UNMOUNTED
SEEN_DAEMON = Seen.DAEMON
SEEN_VIEW = Seen.VIEW
KINDS = KIND_FLAGS

__all__ = ["Binding", "SnapfsError", "Trust", "VerifiedFd", "publish", "publish_fd",
           "open_verified", "open_digest", "describe", "view_binding", "verify_fd",
           "read_verified", "remove", "snapshots", "strerror", "parse_owner", "parse_size",
           "parse_duration", "value_error", "name_valid", "entry_name_valid", "KINDS",
           "__version__", "Scope", "Grant", "scope_create", "scope_list", "scope_show",
           "scope_remove", "grant", "revoke",
           "scope_binding", "open_entry", "control", "status", "metrics", "Opt", "ScopeFlag",
           "Seen", "main", "DIGEST_LEN", "NAME_MAX", "BINDING_TEXT_MAX", "REASONS_MAX",
           "CODE_MAX", "MESSAGE_MAX", "EntryWatch", "watch_entry", "wait_entry"]
