# SPDX-License-Identifier: MIT
"""The documentation runs as written. Every shell block of README.md and docs/*.md is marked:
```sh runnable (run here) or ```sh example (shown only: it needs what a test cannot give, a
registry host, systemd as PID 1, or it is the suite itself). Each runnable block runs as root
with `bash -euo pipefail`, from the repository's top directory, in a mount and pid namespace
of its own where /run and /usr/local are empty tmpfs and /etc is a scratch overlay (so an
install and its ldconfig touch nothing outside), with the build under test first on PATH.
No block may cite a file the repository does not have."""
import os
import re
import subprocess

import pytest

from snaptest import BUILD, ROOT

DOCS = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
SHELLS = {"sh", "bash", "shell", "console"}
MARKS = {"runnable", "example"}

# Every runnable block gets this world; the block itself is the last line's script.
SETUP = r"""
set -eu
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=755 tmpfs /usr/local
scratch=$(mktemp -d)
mount -t tmpfs tmpfs "$scratch"
mkdir "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$scratch/upper,workdir=$scratch/work" /etc
cd "$SNAPFS_DOC_ROOT"
export PATH="$SNAPFS_DOC_BUILD/cli:$PATH"
unset SNAPFS_MOUNT SNAPFS_OWNER
exec bash -euo pipefail "$1"
"""


def blocks():
    """(doc, line, info, text) of every fenced block."""
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield doc.relative_to(ROOT), line, m.group(1).split(), m.group(2)


def shell_blocks():
    return [b for b in blocks() if b[2] and b[2][0] in SHELLS]


RUNNABLE = [b for b in shell_blocks() if "runnable" in b[2]]


def test_every_shell_block_is_marked_runnable_or_example():
    unmarked = [f"{doc}:{line}" for doc, line, info, _ in shell_blocks()
                if not MARKS & set(info[1:])]
    assert not unmarked, f"shell blocks neither runnable nor example: {unmarked}"
    assert RUNNABLE, "no runnable block found"


def test_no_document_cites_a_file_that_is_not_in_the_repository():
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            if not (doc.parent / target).exists():
                missing.append(f"{doc.relative_to(ROOT)} -> {target}")
        for word in ("DESIGN.md", "FIELD-NOTES"):
            if word in text:
                missing.append(f"{doc.relative_to(ROOT)} cites {word}")
    assert not missing, missing


@pytest.mark.parametrize("doc,line,info,text", RUNNABLE,
                         ids=[f"{b[0]}:{b[1]}" for b in RUNNABLE])
def test_runnable_block_runs_as_written(doc, line, info, text, workdir):
    script = os.path.join(workdir, "block.sh")
    with open(script, "w") as f:
        f.write(text)
    # scripts/install.sh builds in build-release of the checkout by default: two suites run
    # from one checkout (the normal and the sanitizer build, side by side) would build there
    # at once. Each build under test gets a release build of its own beside it.
    env = dict(os.environ, SNAPFS_DOC_ROOT=str(ROOT), SNAPFS_DOC_BUILD=str(BUILD),
               SNAPFS_INSTALL_BUILD=f"{BUILD}-install")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "--pid", "--fork",
                        "--mount-proc", "--", "bash", "-c", SETUP, "setup", script],
                       capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert r.returncode == 0, f"{doc}:{line} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
