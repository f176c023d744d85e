# SPDX-License-Identifier: MIT
"""Refusals: SnapfsError, as every snapfs client reports one."""
from __future__ import annotations

import errno as _errno
from typing import Any, Dict, Iterable, List, Mapping, NoReturn, Optional, Tuple

from . import _abi

# Where Python's errno module names a number by another of its aliases than the C library
# does (strerrorname_np, which the snapfs command and libsnapfs use).
_ERRNO_NAMES = {_errno.EOPNOTSUPP: "EOPNOTSUPP", _errno.EDEADLK: "EDEADLK"}


def strerror(err: int) -> str:
    """-> str: what an errno of this library means, in words (err may be negative or
    positive)."""
    text: bytes = _abi.load().snapfs_strerror(-abs(err))
    return text.decode()


class SnapfsError(OSError):
    """A refusal: errno and strerror as the library says them, and every reason it gave as
    (code, message) pairs; .finding is the first reason's code."""

    reply: Any

    def __init__(self, err: int, reasons: Iterable[Tuple[str, str]] = (), dropped: int = 0,
                 raw_messages: Optional[Mapping[int, bytes]] = None) -> None:
        super().__init__(err, strerror(err))
        self.reasons: List[Tuple[str, str]] = list(reasons)
        self.dropped = dropped
        self.reply = None
        # The bytes of each message that is not UTF-8 (its text has U+FFFD in their place),
        # by index: as_dict() gives them as "message_hex", the rule of every --json.
        self._raw: Dict[int, bytes] = dict(raw_messages or {})

    def __str__(self) -> str:
        lines = [f"[Errno {self.errno}] {self.strerror}"]
        lines += [f"{code}: {message}" for code, message in self.reasons]
        return "\n".join(lines)

    @property
    def code(self) -> str:
        """The errno's name ("EMEDIUMTYPE"), as `snapfs --json` gives it in "error"."""
        err = self.errno or 0
        name = _ERRNO_NAMES.get(err)
        return name if name is not None else _errno.errorcode.get(err, "EIO")

    @property
    def finding(self) -> Optional[str]:
        """The first reason's code: the mount check's finding or the step that refused."""
        return self.reasons[0][0] if self.reasons else None

    def as_dict(self) -> Dict[str, Any]:
        """The object `snapfs --json` prints for this refusal: ok, error, message, reasons."""
        reasons: List[Dict[str, str]] = []
        for i, (c, m) in enumerate(self.reasons):
            reasons.append({"code": c, "message": m})
            if i in self._raw:
                reasons[-1]["message_hex"] = self._raw[i].hex()
        return {"ok": False, "error": self.code, "message": self.strerror, "reasons": reasons}


def invalid(message: str) -> SnapfsError:
    """EINVAL for bad input, before anything is asked of the library."""
    return SnapfsError(_errno.EINVAL, [("invalid-argument", message)])


def raise_for(r: int, report: _abi.CReport) -> NoReturn:
    """Raises the SnapfsError of a call that returned r (< 0) and filled report."""
    reasons, raw = [], {}
    for i in range(min(report.n_reasons, _abi.REASONS_MAX)):
        message = bytes(report.reasons[i].message)
        try:
            text = message.decode()
        except UnicodeDecodeError:
            # A path that is not UTF-8 in a message: each bad byte becomes U+FFFD and the raw
            # bytes are kept, as the audit log and every --json of the snapfs command do.
            text, raw[i] = message.decode(errors="replace"), message
        reasons.append((bytes(report.reasons[i].code).decode(errors="replace"), text))
    raise SnapfsError(-r, reasons, report.n_dropped, raw)
