# SPDX-License-Identifier: MIT
"""Boundaries the code's layout promises (docs/design.md, "Components"), checked on the source
tree and the built library rather than trusted: every project include names its folder, no
two project headers share a name, snapfs_ names are the public ABI of snapfs.h alone, and
libsnapfs.so carries only what a client needs."""
import re

from snaptest import BUILD, ROOT, run

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
IDENT = re.compile(r"\b(?:snapfs|SNAPFS)_[A-Za-z0-9_]+")
# Programs built against the installed library, as outside users are: they include the public
# header by its bare name.
OUTSIDE_USERS = {"tests/pkgconfig/example.c", "tests/helpers/apiclient.c"}
# The one identifier spelled SNAPFS_ that is no name of libsnapfs: config.h's version macro.
NOT_ABI = {"SNAPFS_VERSION"}
PRODUCT = ("cli/", "client/", "common/", "fs/", "mountcheck/", "snapshot/")
FOLDERS = [p.rstrip("/") for p in PRODUCT] + ["tests"]


def sources(*suffixes):
    """The tree's files ending so, as paths from the top (a checkout or an unpacked source: no
    git needed, no build directory walked)."""
    out = []
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.name.endswith(suffixes):
                out.append(str(path.relative_to(ROOT)))
    return sorted(out)


def test_every_project_include_names_its_folder_and_reaches_a_file():
    headers = set(sources(".h"))
    bad = []
    for path in sources(".c", ".h"):
        if path in OUTSIDE_USERS:
            continue
        for name in INCLUDE.findall((ROOT / path).read_text()):
            if name == "config.h":  # generated at the top of the build tree
                continue
            if name not in headers:
                bad.append(f"{path}: #include \"{name}\"")
    assert not bad, "includes that do not name a header from the top of the tree:\n" + \
        "\n".join(bad)


def test_no_two_project_headers_share_a_name():
    seen = {}
    for path in sources(".h"):
        seen.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}


def test_snapfs_names_in_the_c_sources_are_the_public_headers_alone():
    public = set(IDENT.findall((ROOT / "client" / "snapfs.h").read_text()))
    # Strings and comments are prose ("$SNAPFS_OWNER", "snapfs_client.py"), not names.
    prose = re.compile(r'"(?:[^"\\\n]|\\.)*"|/\*.*?\*/|//[^\n]*', re.S)
    stray = {}
    for path in sources(".c", ".h"):
        if not path.startswith(PRODUCT):
            continue
        text = prose.sub(" ", (ROOT / path).read_text())
        for name in set(IDENT.findall(text)) - public - NOT_ABI:
            stray.setdefault(name, path)
    # Internal client names are sfc_: a snapfs_ name promises outside programs something.
    assert stray == {}


def test_libsnapfs_links_no_daemon_store():
    r = run("nm", str(BUILD / "client" / "libsnapfs.so"))
    assert r.returncode == 0, r.stderr
    names = [line.split()[-1] for line in r.stdout.splitlines() if line.strip()]
    assert [n for n in names if n.startswith("snap_store_")] == []
    # The allowance: what a client does need is there (the staging NAME check, the digest).
    assert "snap_name_valid" in names and "snap_sha256" in names
