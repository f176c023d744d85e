# SPDX-License-Identifier: MIT
"""Publish to snapfs and open snapshots verified: the snapfs-client command, the test driver
that runs the same cases as the C one (tests/helpers/apiclient.c), with the same JSON.

    snapfs-client publish [TRUST] [--max-size SIZE] [--from-fd] [--name NAME] MNT FILE|-
    snapfs-client open [TRUST] [--max-size SIZE] [--kind KIND] MNT BINDING
    snapfs-client digest [TRUST] [--max-size SIZE] [--kind KIND] MNT HEX
    snapfs-client verify-fd [--max-size SIZE] [--kind KIND] PATH BINDING
    snapfs-client cat [TRUST] [--max-size SIZE] [--kind KIND] MNT BINDING   (bytes to stdout)
    snapfs-client describe [TRUST] MNT BINDING
    snapfs-client scope-create [TRUST] [--uid UID]... [--gid GID] [--publish]
                  [--until-pid PID] [--max-snapshots N] [--max-bytes SIZE] [--max-staging N]
                  [--max-staging-bytes SIZE] [--min-bytes SIZE] MNT NAME VIEW
    snapfs-client scope-list [TRUST] MNT
    snapfs-client scope-show|scope-remove [TRUST] MNT NAME
    snapfs-client grant [TRUST] [--entry ENTRY] MNT SCOPE DIGEST|BINDING
    snapfs-client revoke [TRUST] (--sha256 HEX | --entry ENTRY) MNT SCOPE
    snapfs-client scope-binding [TRUST] MNT SCOPE BINDING
    snapfs-client open-entry [TRUST] [--kind KIND] VIEW ENTRY
    snapfs-client wait-entry [TRUST] [--kind KIND] [--timeout SECONDS] VIEW ENTRY
    snapfs-client control [TRUST] MNT JSON
    snapfs-client abi
TRUST: [--owner UID] [--insecure-own-mount] [--trust-user-namespace]; --owner defaults to
$SNAPFS_OWNER (a uid, never "any"), else 0. KIND: content (default), signature, manifest.
UID and SIZE as every snapfs command reads them (values.py). Also `python -m snapfs_client`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional

from . import _abi
from .api import (control, describe, grant, open_digest, open_entry, open_verified, pread_all,
                  publish, publish_fd, read_verified, revoke, scope_binding, scope_create,
                  scope_list, scope_remove, scope_show, verify_fd, wait_entry)
from .binding import Binding
from .errors import SnapfsError
from .values import parse_owner, parse_size, value_error

KINDS = _abi.KIND_FLAGS


def _read_held(out: Dict[str, Any], fd: int, b: Binding) -> None:
    """The binding, snapshot and content of the snapshot opened as fd into out; fd closed."""
    try:
        out.update(binding=str(b), snapshot=b.as_dict(), content_hex=pread_all(fd).hex())
    finally:
        os.close(fd)


def run(argv: List[str]) -> int:
    """The driver: argv as the command line has it (without the program's name); the exit
    status."""
    ap = argparse.ArgumentParser(prog="snapfs-client", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    env_owner = os.environ.get("SNAPFS_OWNER") or None
    if env_owner is not None and parse_owner(env_owner) is None:
        ap.error(f"SNAPFS_OWNER: {value_error('uid', env_owner)}")

    def typed(kind: str, parse: Callable[[str], Optional[int]]) -> Callable[[str], int]:
        def arg(text: str) -> int:
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
    def command(name: str, parent: argparse.ArgumentParser,
                *operands: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[parent])
        for o in operands:
            p.add_argument(o)
        return p

    for name, last in (("open", "binding"), ("digest", "digest"), ("cat", "binding")):
        command(name, reading, "mount", last)
    command("verify-fd", reading, "path", "binding")
    command("describe", common, "mount", "binding")
    p = command("scope-create", common, "mount", "name", "view")
    p.add_argument("--uid", type=typed("uid", parse_owner), action="append", default=[])
    p.add_argument("--gid", type=typed("uid", parse_owner))
    p.add_argument("--publish", action="store_true")
    p.add_argument("--until-pid", type=int)
    for limit in ("max_snapshots", "max_bytes", "max_staging", "max_staging_bytes",
                  "min_bytes"):
        # Sizes as every snapfs command reads one (K, M or G); counts in decimal.
        p.add_argument("--" + limit.replace("_", "-"), dest=limit, default=0,
                       type=typed("size", parse_size) if limit.endswith("bytes") else int)
    command("scope-list", common, "mount")
    for name in ("scope-show", "scope-remove"):
        command(name, common, "mount", "name")
    command("grant", common, "mount", "scope", "snapshot").add_argument("--entry")
    p = command("revoke", common, "mount", "scope")
    p.add_argument("--sha256")
    p.add_argument("--entry")
    command("scope-binding", common, "mount", "scope", "binding")
    command("open-entry", reading, "view", "entry")
    command("wait-entry", reading, "view", "entry").add_argument("--timeout", type=int)
    command("control", common, "mount", "request")
    sub.add_parser("abi")
    a = ap.parse_args(argv)
    result = 0

    if a.cmd == "abi":
        print(json.dumps(_abi.layout()))
        return 0

    kw: Dict[str, Any] = {"owner": a.owner, "max_size": a.max_size, "insecure_own_mount": a.insecure_own_mount,
          "trust_user_namespace": a.trust_user_namespace}
    tkw: Dict[str, Any] = {"owner": a.owner, "insecure_own_mount": a.insecure_own_mount,
               "trust_user_namespace": a.trust_user_namespace}
    # Only a verified open hands something over: publishing takes no kind.
    rkw: Dict[str, Any] = {**kw, "kind": getattr(a, "kind", "content")}
    out: Dict[str, Any] = {}
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
                out["content_hex"] = pread_all(fd).hex()
            finally:
                os.close(fd)
            result = 0
        elif a.cmd == "digest":
            fd, b = open_digest(a.mount, a.digest, **rkw)
            _read_held(out, fd, b)
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
                              max_staging_bytes=a.max_staging_bytes,
                              min_bytes=a.min_bytes, **tkw)
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
        elif a.cmd in ("open-entry", "wait-entry"):
            if a.cmd == "open-entry":
                fd, b = open_entry(a.view, a.entry, max_size=a.max_size, kind=a.kind, **tkw)
            else:
                fd, b = wait_entry(a.view, a.entry, a.timeout, max_size=a.max_size,
                                   kind=a.kind, **tkw)
            _read_held(out, fd, b)
            result = 0
        elif a.cmd == "control":
            try:
                out["reply"] = control(a.mount, a.request, **tkw)
            except SnapfsError as e:
                out["reply"] = e.reply
                raise
            result = 0
        else:  # verify-fd
            plain = os.open(a.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                verify_fd(plain, a.binding, max_size=a.max_size, kind=a.kind)
            finally:
                os.close(plain)
            result = 0
    except SnapfsError as e:
        if a.cmd == "cat":  # standard output carries the bytes: the refusal goes elsewhere
            print(f"snapfs-client cat: {e}", file=sys.stderr)
            return 1
        print(json.dumps({**e.as_dict(), "result": -e.errno, "dropped": e.dropped, **out}))
        return 1
    print(json.dumps({"ok": True, "error": None, "message": None, "reasons": [],
                      "result": result, "dropped": 0, **out}))
    return 0


def main() -> int:
    """The snapfs-client command (pip's entry point)."""
    return run(sys.argv[1:])
