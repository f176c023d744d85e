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


def fs_layers():
    """docs/design.md's "Layout of fs/" folder table, top layer first: [(folder, [files])]."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("\n## Layout of fs/\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `fs/([a-z]+)/` \| [^|]+ \| ([^|]+) \|$", section, re.M)
    return [(folder, re.findall(r"`([^`]+)`", files)) for folder, files in rows]


def test_the_layout_table_names_every_file_of_fs_and_nothing_else():
    layers = fs_layers()
    assert len(layers) >= 8, layers
    # A header belongs to its .c file's row; a header without one (lockorder.h) is named.
    named = set()
    for folder, files in layers:
        for f in files:
            named.add(f"fs/{folder}/{f}")
            if f.endswith(".c"):
                named.add(f"fs/{folder}/{f[:-2]}.h")
    on_disk = {p for p in sources(".c", ".h") if p.startswith("fs/")}
    internal = {p for p in on_disk if p.endswith("-internal.h")}
    assert on_disk - internal - named == set(), "files of fs/ the layout table does not name"
    assert {p for p in named if p.endswith(".c")} - on_disk == set(), \
        "files the layout table names that do not exist"


def test_no_file_of_fs_includes_a_folder_above_its_own():
    order = {folder: i for i, (folder, _) in enumerate(fs_layers())}
    up = []
    for path in sources(".c", ".h"):
        if not path.startswith("fs/"):
            continue
        mine = path.split("/")[1]
        for name in INCLUDE.findall((ROOT / path).read_text()):
            if name.startswith("fs/"):
                theirs = name.split("/")[1]
                if theirs not in order or order[theirs] < order[mine]:
                    up.append(f"{path}: #include \"{name}\"")
    assert up == [], "includes that go up a layer (docs/design.md, Layout of fs/):\n" + \
        "\n".join(up)


def test_only_the_fuse_glue_and_the_daemon_see_libfuse():
    fuse = re.compile(r'^\s*#\s*include\s+[<"](?:fuse[^>"]*|fs/fuse/[^>"]*)[>"]', re.M)
    seen = sorted(p for p in sources(".c", ".h") if p.startswith("fs/")
                  and fuse.search((ROOT / p).read_text()))
    assert seen and all(p.startswith(("fs/fuse/", "fs/daemon/")) for p in seen), seen


def product_sources(*suffixes):
    return [p for p in sources(*suffixes) if p.startswith(PRODUCT)]


def test_no_two_product_sources_share_a_name():
    """A name says one thing: two control.c files made a reader open the wrong one."""
    seen = {}
    for path in product_sources(".c"):
        seen.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}


def long_functions(text, limit=80):
    """(name, lines) of each function over limit lines: the kernel style here opens a function's
    body with "{" in the first column and closes it with "}" there."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("{"):
            head = i - 1
            while head > 0 and not re.match(r"[A-Za-z_]", lines[head]):
                head -= 1
            end = i
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            name = re.search(r"(\w+)\s*\(", lines[head])
            if end - i - 1 > limit:
                out.append((name.group(1) if name else lines[head], end - i - 1))
            i = end
        i += 1
    return out


def test_no_product_function_over_80_lines():
    """docs/hacking.md: a function a reader can hold. Counted between the braces; the counter is
    shown to count."""
    assert long_functions("int f(void)\n{\n" + "x;\n" * 81 + "}\n") == [("f", 81)]
    assert long_functions("int f(void)\n{\n" + "x;\n" * 80 + "}\n") == []
    found = {path: long_functions((ROOT / path).read_text(errors="replace"))
             for path in product_sources(".c")}
    assert {k: v for k, v in found.items() if v} == {}


PROTOTYPE = re.compile(r"^(?!#|typedef|static|struct \w+ \{)[A-Za-z_][\w *]*?\b(\w+)\(", re.M)


def test_every_function_a_header_declares_is_called():
    """No dead function: each function a product header declares is named somewhere besides its
    declaration and its definition (a call in product code or a test, a macro that calls it, or
    libsnapfs's export list for the outside)."""
    declared = {}
    for path in product_sources(".h"):
        for name in PROTOTYPE.findall((ROOT / path).read_text(errors="replace")):
            declared.setdefault(name, path)
    assert "snap_store_put" in declared  # the reader reads prototypes
    exported = set(re.findall(r"snapfs_\w+", (ROOT / "client/libsnapfs.sym").read_text()))
    text = "\n".join((ROOT / p).read_text(errors="replace") for p in sources(".c", ".cc", ".h"))
    uses = {}
    for name in re.findall(r"\b[A-Za-z_]\w*\b", text):
        uses[name] = uses.get(name, 0) + 1
    dead = {n: h for n, h in declared.items() if n not in exported and uses.get(n, 0) <= 2}
    assert dead == {}
