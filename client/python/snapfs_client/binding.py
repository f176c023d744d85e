# SPDX-License-Identifier: MIT
"""Bindings: (sha256, size, dev, ino) of one snapshot in one mount instance, and the one
snapshot object every `snapfs --json` prints."""
from __future__ import annotations

import ctypes
import dataclasses
import datetime
import errno as _errno
import os
from typing import Any, Dict, Optional, Union

from . import _abi
from .errors import SnapfsError


@dataclasses.dataclass(frozen=True)
class Binding:
    """(sha256, size, dev, ino) of one published snapshot in one mount instance, and what the
    daemon says of it where known (None where not: a Binding parsed from its text knows none
    of it). The identity is the four first fields alone."""
    sha256: str  # 64 lowercase hex
    size: int
    # st_dev, as os.makedev(major, minor); None only in a Grant's snapshot while its scope's
    # view is not mounted
    dev: Optional[int]
    ino: int
    # Set by publish(): the same bytes were published before (not part of the identity).
    already_published: bool = dataclasses.field(default=False, compare=False)
    # The staging NAME it was first published under (None: no name, or unknown).
    name: Optional[str] = dataclasses.field(default=None, compare=False)
    # Its first publish, in UTC (None when unknown).
    published: Optional[datetime.datetime] = dataclasses.field(default=None, compare=False)
    # The uid that first published it (None when unknown).
    publisher: Optional[int] = dataclasses.field(default=None, compare=False)
    # "content", "signature" or "manifest" as the daemon says it; None when unknown.
    kind: Optional[str] = dataclasses.field(default=None, compare=False)

    @classmethod
    def parse(cls, text: Union[str, bytes, "Binding"]) -> "Binding":
        """The strict one-line text form -> Binding (name, published, publisher, kind None);
        raises SnapfsError(EINVAL) for anything else."""
        if isinstance(text, Binding):
            return text
        c = _abi.CBinding()
        raw = text.encode() if isinstance(text, str) else bytes(text)
        if b"\0" in raw or _abi.load().snapfs_binding_parse(raw, ctypes.byref(c)) < 0:
            raise SnapfsError(_errno.EINVAL, [("invalid-argument", "not a binding")])
        return cls.from_c(c)

    @classmethod
    def from_c(cls, c: _abi.CBinding, already: bool = False) -> "Binding":
        return cls(bytes(c.sha256).hex(), c.size, c.dev, c.ino, already)

    @classmethod
    def from_snapshot(cls, s: _abi.CSnapshot, already: bool = False) -> "Binding":
        b = s.binding
        when = datetime.datetime.fromtimestamp(s.published_sec, datetime.timezone.utc)
        when = when.replace(microsecond=s.published_nsec // 1000)
        return cls(bytes(b.sha256).hex(), b.size, b.dev, b.ino, already,
                   s.name.decode() or None, when, s.publisher, _abi.KIND_NAMES.get(s.kind))

    # The names the module had before it was a package.
    _from_c = from_c
    _from_snapshot = from_snapshot

    def to_c(self) -> _abi.CBinding:
        c = _abi.CBinding()
        digest = bytes.fromhex(self.sha256)
        if len(digest) != _abi.DIGEST_LEN:
            raise SnapfsError(_errno.EINVAL, [("invalid-argument", "not a SHA-256")])
        c.sha256[:] = list(digest)
        c.size, c.dev, c.ino = self.size, self.dev or 0, self.ino
        return c

    _to_c = to_c

    def __str__(self) -> str:
        buf = ctypes.create_string_buffer(_abi.BINDING_TEXT_MAX)
        r = _abi.load().snapfs_binding_format(ctypes.byref(self.to_c()), buf, len(buf))
        if r < 0:
            raise SnapfsError(-r)
        return buf.value.decode()

    def as_dict(self) -> Dict[str, Any]:
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

    def as_result(self) -> Dict[str, Any]:
        """-> dict: what `snapfs put --json` prints for this publish, less its mount and
        read_view: ok, error, message, reasons, binding, snapshot (as_dict()),
        already_published."""
        return {"ok": True, "error": None, "message": None, "reasons": [],
                "binding": str(self), "snapshot": self.as_dict(),
                "already_published": self.already_published}


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


_HEX = frozenset("0123456789abcdefABCDEF")
ENTRY_NAME_RULE = ("1-64 of [A-Za-z0-9._-], starting with neither '.' nor '-', and not 64 "
                   "hexadecimal characters in any case (a digest's shape)")


def entry_name_valid(name: object) -> bool:
    """-> bool: whether name is an entry name of a scope's view, by the daemon's one grammar
    (docs/design.md, "Entry names"; the cases of tests/vectors/names.json): ENTRY_NAME_RULE.
    ASCII only, so no name that is not UTF-8, and no NUL that a C string would cut at."""
    return (isinstance(name, str) and 0 < len(name) <= _abi.NAME_MAX and name[0] not in ".-"
            and all(ch in _NAME_CHARS for ch in name)
            and not (len(name) == 64 and all(ch in _HEX for ch in name)))


def name_valid(name: object) -> bool:
    """-> bool: whether name is a snapshot name publish() takes: 1-64 of [A-Za-z0-9._-],
    starting with neither '.' nor '_'."""
    return (isinstance(name, str) and 0 < len(name) <= _abi.NAME_MAX and name[0] not in "._"
            and all(ch in _NAME_CHARS for ch in name))
