# SPDX-License-Identifier: MIT
"""The value grammars of every snapfs command (common/values.h), for what this client reads
from a person: a uid (owner=, --owner, $SNAPFS_OWNER), a size (--max-size) and a duration.
The same input gets the same answer and the same message as in C: tests/vectors/values.json
holds the cases both sides are tested on."""
from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

UID_MAX = 4294967294
U64_MAX = (1 << 64) - 1
KINDS = ("uid", "size", "duration")
_FORMS = {
    "uid": "a decimal uid below 4294967295, without sign or leading zero",
    "size": "digits with an optional K, M or G suffix (binary units: 4096, 256K, 64M, 1G)",
    "duration": "digits with an optional s, m, h, d or w suffix (90, 90s, 15m, 2h, 7d, 2w; "
                "seconds without one)",
}
_SIZE_UNITS: Dict[str, int] = {"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "m": 1 << 20,
                               "G": 1 << 30, "g": 1 << 30}
# Milliseconds, largest first (value_format takes the largest that divides): a day is 24 h, a
# week 7 d, as common/values.c says them.
_DURATION_UNITS: Dict[str, int] = {"w": 7 * 86400 * 1000, "d": 86400 * 1000,
                                   "h": 3600 * 1000, "m": 60 * 1000, "s": 1000}


def _digits(text: str) -> Optional[int]:
    """The value of text when it is only ASCII digits (str.isdigit() takes others), else None."""
    if not text or any(c not in "0123456789" for c in text):
        return None
    return int(text)


def _scaled(text: str, units: Dict[str, int], plain: int) -> Tuple[Optional[int], Optional[str]]:
    mult = plain
    if text and text[-1] in units:
        text, mult = text[:-1], units[text[-1]]
    v = _digits(text)
    if v is None:
        return None, "EINVAL"
    return (v * mult, None) if v * mult <= U64_MAX else (None, "ERANGE")


def parse_value(kind: str, text: str) -> Tuple[Optional[int], Optional[str]]:
    """(value, None), or (None, "EINVAL" | "ERANGE") as the C parser of kind answers; a
    duration in milliseconds."""
    if kind == "uid":
        v = _digits(text)
        if v is None or (len(text) > 1 and text[0] == "0"):
            return None, "EINVAL"
        return (v, None) if v <= UID_MAX else (None, "ERANGE")
    if kind == "size":
        return _scaled(text, _SIZE_UNITS, 1)
    if kind == "duration":
        return _scaled(text, _DURATION_UNITS, 1000)
    raise ValueError(f"no value type {kind!r}")


def _quote(text: str) -> str:
    """text as the C messages quote it: control bytes as \\xHH, cut after 64 bytes."""
    raw = os.fsencode(text)
    out = "".join(f"\\x{b:02x}" if b < 0x20 or b == 0x7F else bytes([b]).decode("latin-1")
                  for b in raw[:64])
    out = out.encode("latin-1").decode("utf-8", "surrogateescape")
    return out + ("..." if len(raw) > 64 else "")


def format_value(kind: str, v: int) -> str:
    """v as the type's shortest text, as value_format() writes it: 64M, 2w, 90s."""
    if kind == "size":
        units = {"G": 1 << 30, "M": 1 << 20, "K": 1 << 10}
    elif kind == "duration":
        units = _DURATION_UNITS
    else:
        return str(v)
    for suffix, mult in units.items():
        if v and v % mult == 0:
            return f"{v // mult}{suffix}"
    return str(v // 1000 if kind == "duration" else v)


def value_error(kind: str, text: str, minimum: int = 0,
                maximum: int = U64_MAX) -> Optional[str]:
    """Why text is not a value of kind ("uid", "size" or "duration") within [minimum,
    maximum], in the words every snapfs command uses ("invalid size '12Q': expected digits
    with ..."); None when it is one."""
    v, err = parse_value(kind, text)
    if err is None and v is not None and minimum <= v <= maximum:
        return None
    q = _quote(text)
    if err == "EINVAL":
        return f"invalid {kind} '{q}': expected {_FORMS[kind]}"
    if kind == "uid":
        return f"invalid uid '{q}': out of range (a uid is at most 4294967294)"
    if maximum == U64_MAX:
        if err is None:
            return f"invalid {kind} '{q}': out of range (at least {format_value(kind, minimum)})"
        return f"invalid {kind} '{q}': out of range (too large)"
    return f"invalid {kind} '{q}': out of range ({format_value(kind, minimum)} to " \
           f"{format_value(kind, maximum)})"


def parse_owner(text: Optional[str]) -> Optional[int]:
    """-> int | None: a uid as every snapfs command reads --owner and $SNAPFS_OWNER: decimal,
    no sign, no leading zero, below 4294967295 (the kernel's "no uid"); None for anything else
    ("any" included: no command takes it from the environment). value_error("uid", text) says
    why."""
    return parse_value("uid", text or "")[0]


def parse_size(text: Optional[str]) -> Optional[int]:
    """-> int | None: a size as every snapfs command reads one: digits with an optional K, M or
    G suffix (binary units); None for anything else. value_error("size", text) says why."""
    return parse_value("size", text or "")[0]


def parse_duration(text: Optional[str]) -> Optional[int]:
    """-> int | None: a duration in milliseconds as every snapfs command reads one (prune
    --older-than, --staging-ttl): digits with an optional s, m, h, d (24 h) or w (7 d) suffix,
    seconds without one; None for anything else. value_error("duration", text) says why."""
    return parse_value("duration", text or "")[0]
