# SPDX-License-Identifier: MIT
"""The Node.js package where TypeScript users take it from: tsc checks its sources, the types
it ships and a program written against them (and refuses one that misuses them); `npm pack`
builds it; `npm install` of its source directory, and of the tarball npm pack made, works
from a fresh directory, offline, and the package then publishes and reads on a real mount.
Without an addon anywhere it refuses to load, naming the command that installs one."""
import json
import os
import re
import shutil
import subprocess
import tarfile

import pytest

from clients import client_env
from snaptest import BUILD, ROOT, run, sha256_hex

NODE_DIR = ROOT / "client" / "node"
PACKAGE = BUILD / "client" / "node"
TSC = NODE_DIR / "node_modules" / ".bin" / "tsc"
ADDON = PACKAGE / "snapfs.node"
NPM = ("npm", "--offline", "--no-audit", "--no-fund", "--loglevel=error")


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    assert shutil.which("npm"), "npm missing: scripts/deps.sh installs it"
    assert TSC.exists(), f"{TSC} missing: scripts/deps.sh runs npm ci in client/node"
    assert ADDON.exists() and (PACKAGE / "lib" / "index.d.ts").exists(), \
        f"{PACKAGE} is not built: build with the Node-API headers (scripts/deps.sh)"


def tsc(*args):
    return run(TSC, *args, timeout=300)


def typecheck(workdir, name, program):
    """tsc --noEmit on program, resolving "snapfs" to the types the build ships."""
    src = os.path.join(workdir, name + ".ts")
    with open(src, "w") as f:
        f.write(program)
    config = os.path.join(workdir, name + ".tsconfig.json")
    with open(config, "w") as f:
        json.dump({"compilerOptions": {
            "target": "ES2021", "lib": ["ES2021"], "module": "commonjs",
            "moduleResolution": "node", "types": ["node"],
            "typeRoots": [str(NODE_DIR / "node_modules" / "@types")], "strict": True,
            "exactOptionalPropertyTypes": True, "noEmit": True, "baseUrl": workdir,
            "paths": {"snapfs": [str(PACKAGE / "lib" / "index.d.ts")]}},
            "files": [src]}, f)
    return tsc("-p", config)


def test_tsc_checks_the_sources_and_a_program_against_the_shipped_types(workdir):
    r = tsc("-p", NODE_DIR / "tsconfig.json", "--noEmit")
    assert r.returncode == 0, r.stdout + r.stderr
    # The README's example program, against the .d.ts files the build ships.
    example = (NODE_DIR / "examples" / "mcp.ts").read_text()
    r = typecheck(workdir, "example", example)
    assert r.returncode == 0, r.stdout + r.stderr


# Each line misuses the API the way the types must refuse.
MISUSES = {
    "publish(42)": "TS2345",                                     # not bytes
    'publish("x", { owner: "0" })': "TS2322",                    # a uid is a number
    'readVerified({ entry: 1 })': "TS2322",
    'spawnVerified("cat", ["{}"])': "TS2554",                    # the target is required
    'scopes.create("a", {})': "TS2345",                          # a view is required
    'publish("x").then((s) => s.size.toUpperCase())': "TS2339",  # size is a number
    'readVerified("b", { kind: "config" })': "TS2322",
}


def test_the_types_refuse_a_program_that_misuses_the_api(workdir):
    head = 'import { publish, readVerified, scopes, spawnVerified } from "snapfs";\n'
    program = head + "".join(f"{call};\n" for call in MISUSES)
    r = typecheck(workdir, "misuse", program)
    assert r.returncode != 0
    # One error on each line, of the kind each misuse is.
    errors = {}
    for line in r.stdout.splitlines():
        m = re.match(r".*misuse\.ts\((\d+),\d+\): error (TS\d+):", line)
        if m:
            errors.setdefault(int(m.group(1)), m.group(2))
    assert errors == {i + 2: code for i, code in enumerate(MISUSES.values())}, r.stdout
    # The same calls, used as the types say: accepted.
    r = typecheck(workdir, "use", 'import { publish, readVerified, scopes, spawnVerified } '
                  'from "snapfs";\n'
                  'void publish(new Uint8Array(1), { owner: 0 });\n'
                  'void readVerified({ entry: "mcp" }, { kind: ["content"] });\n'
                  'void spawnVerified("cat", ["{}"], { binding: "b", stdio: "inherit" });\n'
                  'void scopes.create("a", { view: "/run/views/a" });\n'
                  'void publish("x").then((s) => s.size.toFixed());\n'
                  # What a publish or a verified open binds has its binding and device.
                  'void publish("x").then((s) => s.binding.length + s.dev.length);\n'
                  'void spawnVerified("true", [], { entry: "e" })'
                  '.then((c) => c.snapshot.binding.length);\n')
    assert r.returncode == 0, r.stdout + r.stderr


def source_copy(workdir):
    """client/node's tracked files in a directory of their own (npm builds in the directory it
    is given: the checkout stays as it is), its node_modules (tsc, @types/node) linked."""
    dst = os.path.join(workdir, "client-node")
    os.mkdir(dst)
    for name in ("package.json", "package-lock.json", "tsconfig.json", "README.md", "src",
                 "native"):
        src = NODE_DIR / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, os.path.join(dst, name))
    os.symlink(NODE_DIR / "node_modules", os.path.join(dst, "node_modules"))
    return dst


USE = r"""
const snapfs = require("snapfs");
(async () => {
  const s = await snapfs.publish("from a fresh directory", { mount: process.argv[1], name: "fresh" });
  const back = await snapfs.readVerified(s, { mount: process.argv[1] });
  console.log(JSON.stringify({ where: require.resolve("snapfs"), snapshot: s, back: back.toString() }));
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


def use(app, mount, **env):
    return run("node", "-e", USE, mount, cwd=app, env={**client_env(), **env}, timeout=120)


def test_npm_pack_builds_it_and_npm_install_works_from_a_fresh_directory(workdir, snapfs):
    src = source_copy(workdir)
    out = os.path.join(workdir, "packed")
    os.mkdir(out)
    r = run(*NPM, "pack", "--pack-destination", out, cwd=src, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    tgz = os.path.join(out, "snapfs-0.1.0.tgz")
    with tarfile.open(tgz) as t:
        names = set(t.getnames())
    assert {"package/package.json", "package/README.md", "package/lib/index.js",
            "package/lib/index.d.ts", "package/lib/scopes.d.ts"} <= names, names
    assert not any(n.startswith(("package/src/", "package/test/", "package/native/"))
                   for n in names), names

    for name, spec in (("from-source", src), ("from-tarball", tgz)):
        app = os.path.join(workdir, name)
        os.mkdir(app)
        r = run(*NPM, "install", spec, cwd=app, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        r = use(app, snapfs.path, SNAPFS_NODE_ADDON=str(ADDON))
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert got["back"] == "from a fresh directory"
        assert got["snapshot"]["sha256"] == sha256_hex(b"from a fresh directory")
        assert got["snapshot"]["name"] == "fresh"
        assert got["where"].startswith(os.path.join(app, "node_modules", "snapfs") + "/") or \
            got["where"].startswith(src + "/"), got["where"]

    # No addon beside it, none installed (an empty /usr/local here, no snapfs.pc on the
    # pkg-config path), no $SNAPFS_NODE_ADDON: refused with the command that installs one.
    assert not os.path.exists("/usr/lib/x86_64-linux-gnu/nodejs/snapfs"), \
        "a snapfs package is installed on this host: the refusal below cannot be shown"
    app = os.path.join(workdir, "from-tarball")
    r = run("unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs tmpfs /usr/local && exec "$@"', "sh", "node", "-e", USE,
            snapfs.path, cwd=app, env={**client_env(), "PKG_CONFIG_PATH": workdir,
                                       "PKG_CONFIG_LIBDIR": workdir}, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no Node-API addon (snapfs.node)" in r.stderr
    assert "`scripts/install.sh /usr/local`" in r.stderr and "SNAPFS_NODE_ADDON" in r.stderr
    assert not os.path.exists(snapfs.p(sha256_hex(b"from a fresh directory")) + "x")
