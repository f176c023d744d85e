# SPDX-License-Identifier: MIT
"""libsnapfs as installed: `meson install` into a scratch directory, then pkg-config and a C
compiler build tests/pkgconfig/example.c against the installed header and library only, and
that program publishes and verifies on a real mount. scripts/install.sh: a second run with
another prefix takes it, the Python client lands where /usr/bin/python3 imports it and finds
libsnapfs with no environment variable, the logrotate snippet lands in /etc/logrotate.d
whatever the prefix, snapfs.service's config file lands in PREFIX/etc/snapfs only where there
is none and --uninstall removes it only unchanged, and --uninstall removes every installed
file. The clients built from the source find an install under a prefix of its own through
the loader install.sh told of it."""
import os
import re
import shutil
import subprocess

import pytest

from clients import exported_symbols, sanitized
from snaptest import BUILD, ROOT, run, sha256_hex

EXAMPLE = ROOT / "tests" / "pkgconfig" / "example.c"
INSTALL = ROOT / "scripts" / "install.sh"
# What the library exports: the one list, client/libsnapfs.sym.
EXPORTED = set(exported_symbols())


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    for tool in ("meson", "pkg-config", "cc", "nm"):
        assert shutil.which(tool), f"{tool} missing: scripts/deps.sh installs it"


@pytest.fixture
def installed(workdir):
    """The build installed under workdir/dest, and where its pieces landed."""
    dest = os.path.join(workdir, "dest")
    r = run("meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest, "--quiet",
            timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    found = {}
    for top, _, files in os.walk(dest):
        for f in files:
            found.setdefault(f, os.path.join(top, f))
    return dest, found


def test_install_puts_library_header_pkgconfig_man_page_and_python_client(installed):
    _, found = installed
    for name in ("libsnapfs.so.0", "snapfs.h", "snapfs.pc", "snapfs.1", "snapfs"):
        assert name in found, f"{name} not installed"
    # The Python client as a typed package, and the Node.js package.
    paths = [os.path.join(top, f) for top, _, files in os.walk(installed[0]) for f in files]
    for name in ("__init__.py", "_abi.py", "api.py", "cli.py", "py.typed"):
        assert any(p.endswith(f"/snapfs_client/{name}") for p in paths), name
    assert found["snapfs.node"].endswith("/nodejs/snapfs/snapfs.node")
    assert found["snapfs.1"].endswith("/man1/snapfs.1")


def test_the_installed_library_exports_only_the_public_functions(installed):
    _, found = installed
    r = run("nm", "-D", "--defined-only", found["libsnapfs.so.0"])
    assert r.returncode == 0, r.stderr
    symbols = {line.split()[-1].split("@")[0] for line in r.stdout.splitlines()
               if line.split()[1] in ("T", "W", "D", "B")}
    assert symbols == EXPORTED
    # Each under the version node of the release that brought it in.
    nodes = {line.split()[-1].split("@")[0]: line.split()[-1].split("@")[-1]
             for line in r.stdout.splitlines() if line.split()[1] in ("T", "W", "D", "B")}
    assert nodes == exported_symbols()
    with open(found["snapfs.h"]) as f:
        header = f.read()
    assert all(re.search(rf"\b{s}\(", header) for s in EXPORTED)


def test_a_program_built_with_pkg_config_publishes_and_verifies(installed, snapfs, workdir):
    dest, found = installed
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(found["snapfs.pc"]),
               PKG_CONFIG_SYSROOT_DIR=dest)
    r = run("pkg-config", "--cflags", "--libs", "snapfs", env=env)
    assert r.returncode == 0, r.stderr
    flags = r.stdout.split()
    assert f"-I{os.path.dirname(found['snapfs.h'])}" in flags and "-lsnapfs" in flags
    exe = os.path.join(workdir, "example")
    # A program linked against a sanitized library is built with the same sanitizers.
    extra = ["-fsanitize=address,undefined"] if sanitized() else []
    r = run("cc", "-std=c17", "-Wall", "-Wextra", "-Werror", *extra, str(EXAMPLE), "-o", exe,
            *flags, timeout=120)
    assert r.returncode == 0, r.stderr
    libdir = os.path.dirname(found["libsnapfs.so.0"])
    run_env = dict(os.environ, LD_LIBRARY_PATH=libdir)

    r = run(exe, snapfs.path, env=run_env)
    assert r.returncode == 0, r.stderr
    digest = sha256_hex(b'{"mcpServers": {}}\n')
    assert r.stdout == os.getxattr(snapfs.p(digest), "user.snapfs.binding").decode() + "\n"
    # It loaded the installed library, not the one in the build tree.
    r = run("ldd", exe, env=run_env)
    assert f"{libdir}/libsnapfs.so.0" in r.stdout

    # The same program on a directory that is not a snapfs mount: refused, with reasons.
    r = run(exe, workdir, env=run_env)
    assert r.returncode == 1
    assert re.search(r"^not-a-mount-point: ", r.stderr, re.M)
    assert r.stderr.endswith("\nnot a compliant snapfs mount\n")


def test_the_clients_doc_shows_the_example_as_it_is():
    with open(ROOT / "docs" / "clients.md") as f:
        doc = f.read()
    with open(EXAMPLE) as f:
        example = f.read()
    assert example in doc, "docs/clients.md's libsnapfs example differs from tests/pkgconfig"


# ---- scripts/install.sh ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def release_build():
    """One build directory for scripts/install.sh, shared by the tests below: the one the
    documentation test's blocks use for this build under test (test_docs.py), so a release
    build made there is configured again, not compiled again (a prefix changes no compile
    command). The first test here installs with a prefix of its own, whatever was there."""
    return f"{BUILD}-install"


def install_sh(build, *args, **env):
    # LDCONFIG=true: the loader cache is the host's; these tests must not rewrite it.
    return run(INSTALL, *args, env=dict(os.environ, SNAPFS_INSTALL_BUILD=build, LDCONFIG="true",
                                        **env), timeout=600)


def configured_prefix(build):
    r = run("meson", "introspect", build, "--buildoptions")
    assert r.returncode == 0, r.stderr
    import json
    return {o["name"]: o["value"] for o in json.loads(r.stdout)}["prefix"]


def test_a_second_install_with_another_prefix_takes_it(release_build, workdir):
    one, two = os.path.join(workdir, "one"), os.path.join(workdir, "two")
    r = install_sh(release_build, "/opt/snapfs-a", DESTDIR=one)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(f"{one}/opt/snapfs-a/bin/snapfs")
    r = install_sh(release_build, "/opt/snapfs-b", DESTDIR=two)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(f"{two}/opt/snapfs-b/bin/snapfs")
    assert not os.path.exists(f"{two}/opt/snapfs-a")
    # The trap the script avoids: plain meson setup on that directory keeps the old prefix.
    r = run("meson", "setup", release_build, "--prefix=/opt/snapfs-c")
    assert "Directory already configured" in r.stdout + r.stderr
    assert configured_prefix(release_build) == "/opt/snapfs-b"
    # A relative prefix is refused before anything is built or installed.
    r = install_sh(release_build, "opt/snapfs", DESTDIR=two)
    assert r.returncode == 2 and "PREFIX must be an absolute path" in r.stderr


PUBLISH = """
import sys
import snapfs_client as snapfs
b = snapfs.publish(sys.argv[1], b"installed client", owner=0)
print(snapfs.__file__)
print(b)
"""


@pytest.fixture
def scratch_usr_local(workdir):
    """An empty /usr/local and a scratch /etc/logrotate.d (an overlay: the host's snippets
    below, writes in a tmpfs) for this test only (the suite runs in a private mount
    namespace): the install goes where a real one would, and vanishes with the mounts."""
    scratch = os.path.join(workdir, "etc-scratch")
    os.mkdir(scratch)
    mounted = []
    try:
        for argv in (["-t", "tmpfs", "-o", "mode=755", "tmpfs", "/usr/local"],
                     ["-t", "tmpfs", "tmpfs", scratch]):
            r = run("mount", *argv)
            assert r.returncode == 0, r.stderr
            mounted.insert(0, argv[-1])
        os.mkdir(os.path.join(scratch, "upper"))
        os.mkdir(os.path.join(scratch, "work"))
        r = run("mount", "-t", "overlay", "overlay", "-o",
                f"lowerdir=/etc/logrotate.d,upperdir={scratch}/upper,workdir={scratch}/work",
                "/etc/logrotate.d")
        assert r.returncode == 0, r.stderr
        mounted.insert(0, "/etc/logrotate.d")
        yield "/usr/local"
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", m], capture_output=True, check=False)


def test_install_sh_puts_the_logrotate_snippet_where_logrotate_reads_it_then_removes_it(
        release_build, scratch_usr_local):
    assert not os.path.exists("/etc/logrotate.d/snapfs")
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    # /etc/logrotate.d whatever the prefix: logrotate reads nothing under /usr/local/etc.
    with open(os.path.join(release_build, "meson-logs", "install-log.txt")) as f:
        files = [line.strip() for line in f if line.startswith("/")]
    assert "/etc/logrotate.d/snapfs" in files
    assert not os.path.exists("/usr/local/etc/logrotate.d")
    assert oct(os.stat("/etc/logrotate.d/snapfs").st_mode & 0o777) == "0o644"
    # Debian's logrotate, from its own configuration, reads it.
    r = run("logrotate", "--debug", "/etc/logrotate.conf")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rotating pattern: /var/log/snapfs/*.log" in r.stdout + r.stderr
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not os.path.exists("/etc/logrotate.d/snapfs")
    # Only the snippet went: the directory, and the host's snippets in it, are still there.
    assert os.path.exists("/etc/logrotate.d/dpkg")


def test_installed_client_imports_in_debian_python_with_no_environment_then_uninstalls(
        release_build, scratch_usr_local, snapfs):
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(release_build, "meson-logs", "install-log.txt")) as f:
        files = [line.strip() for line in f if line.startswith("/")]
    assert files and all(os.path.lexists(p) for p in files)
    # Debian's interpreter, an empty environment: no PYTHONPATH, no SNAPFS_LIBRARY, no
    # LD_LIBRARY_PATH, and no loader cache entry (ldconfig was not run).
    clean = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run(["/usr/bin/python3", "-c", PUBLISH, snapfs.path], capture_output=True,
                       text=True, timeout=60, env=clean)
    assert r.returncode == 0, r.stderr
    where, binding = r.stdout.splitlines()
    assert where.startswith("/usr/local/lib/python3") and where in files
    digest = sha256_hex(b"installed client")
    assert binding == os.getxattr(snapfs.p(digest), "user.snapfs.binding").decode()
    r = subprocess.run(["/usr/local/bin/snapfs", "verify", "--mount", snapfs.path, binding],
                       capture_output=True, text=True, timeout=60, env=clean)
    assert r.returncode == 0 and r.stdout == binding + "\n", r.stderr

    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [p for p in files if os.path.lexists(p)] == []
    r = subprocess.run(["/usr/bin/python3", "-c", "import snapfs_client"], capture_output=True,
                       text=True, timeout=60, env=clean)
    assert r.returncode == 1 and "No module named 'snapfs_client'" in r.stderr
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 1 and "nothing installed" in r.stderr


def test_install_sh_installs_the_config_file_only_where_none_is_and_uninstalls_it_only_unchanged(
        release_build, scratch_usr_local):
    conf = "/usr/local/etc/snapfs/snapfs.conf"
    shipped = (ROOT / "dist" / "snapfs.conf").read_text()
    # Installed where the installed unit reads it, as shipped, 0644.
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"installed {conf}" in r.stdout
    with open(conf) as f:
        assert f.read() == shipped
    assert oct(os.stat(conf).st_mode & 0o777) == "0o644"
    with open("/usr/local/lib/systemd/system/snapfs.service") as f:
        assert f"--config {conf} /run/snapfs\n" in f.read()
    # Unchanged: --uninstall removes it, and the directories made for it.
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not os.path.exists("/usr/local/etc")

    # An operator's file, there before the install: never overwritten, never removed.
    os.makedirs("/usr/local/etc/snapfs")
    with open(conf, "w") as f:
        f.write("max-bytes = 1M\n")
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"kept {conf} (already there)" in r.stdout
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    with open(conf) as f:
        assert f.read() == "max-bytes = 1M\n"
    os.unlink(conf)

    # The installed file, edited: a second install keeps the edit, --uninstall keeps the file
    # and says so.
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0 and f"installed {conf}" in r.stdout, r.stdout + r.stderr
    with open(conf, "a") as f:
        f.write("max-snapshot-size = 1M\n")
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0 and f"kept {conf} (already there)" in r.stdout, r.stdout + r.stderr
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"kept {conf}: changed since it was installed" in r.stdout
    with open(conf) as f:
        assert f.read() == shipped + "max-snapshot-size = 1M\n"


def installed_files(root):
    return sorted(os.path.join(top, f) for top, _, files in os.walk(root) for f in files)


def test_each_run_configures_exactly_its_options_and_uninstall_cleans_every_install(
        release_build, scratch_usr_local, workdir):
    one = os.path.join(workdir, "one")
    r = install_sh(release_build, "/opt/snapfs-a", "-Dlogrotatedir=/opt/snapfs-a/logrotate.d",
                   DESTDIR=one)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(f"{one}/opt/snapfs-a/logrotate.d/snapfs")
    first = installed_files(one)
    # Another prefix and no -D: the defaults, the snippet where logrotate reads it included.
    assert not os.path.exists("/etc/logrotate.d/snapfs")
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists("/etc/logrotate.d/snapfs")
    assert os.path.exists("/usr/local/lib/x86_64-linux-gnu/nodejs/snapfs/snapfs.node")
    assert installed_files(one) == first
    assert len(os.listdir(f"{release_build}.installs")) == 2

    # A prefix it cannot write: named, with why, and nothing of it is forgotten; the other
    # install is removed all the same.
    r = run("mount", "--bind", "-o", "ro", one, one)
    assert r.returncode == 0, r.stderr
    try:
        r = install_sh(release_build, "--uninstall")
    finally:
        subprocess.run(["umount", "-l", one], capture_output=True, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"cannot clean {one}/opt/snapfs-a: " in r.stderr and "Read-only file system" in r.stderr
    assert installed_files(one) == first
    assert "files installed under /usr/local" in r.stdout
    assert installed_files("/usr/local") == []
    assert not os.path.exists("/etc/logrotate.d/snapfs")
    # Writable again, with a file an operator changed: every other file of both installs
    # goes, that one stays and is named.
    page = next(p for p in first if p.endswith("/man1/snapfs.1"))
    with open(page, "a") as f:
        f.write(".\\\" local note\n")
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"kept {page}: changed since it was installed" in r.stdout
    assert f"files installed under {one}/opt/snapfs-a" in r.stdout
    assert installed_files(one) == [page]
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 1 and "nothing installed" in r.stderr


NODE_USE = r"""
const snapfs = require("snapfs");
(async () => {
  const s = await snapfs.publish("installed node client", { mount: process.argv[1] });
  console.log(require.resolve("snapfs"));
  console.log(s.binding);
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


def test_the_installed_node_package_installs_with_npm_and_runs_with_no_environment(
        release_build, scratch_usr_local, snapfs, workdir):
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    pkg = "/usr/local/lib/x86_64-linux-gnu/nodejs/snapfs"
    with open(os.path.join(pkg, "package.json")) as f:
        import json
        meta = json.load(f)
    assert meta["name"] == "snapfs" and "scripts" not in meta and meta["types"] == "lib/index.d.ts"
    app = os.path.join(workdir, "app")
    os.mkdir(app)
    r = run("npm", "install", "--offline", "--no-audit", "--no-fund", pkg, cwd=app, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # No SNAPFS_NODE_ADDON, no LD_LIBRARY_PATH, no loader cache entry: the addon beside the
    # package finds the installed library by its run path.
    clean = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run(["node", "-e", NODE_USE, snapfs.path], capture_output=True, text=True,
                       timeout=60, env=clean, cwd=app)
    assert r.returncode == 0, r.stderr
    where, binding = r.stdout.splitlines()
    assert where == os.path.join(pkg, "lib", "index.js")
    assert binding == os.getxattr(snapfs.p(sha256_hex(b"installed node client")),
                                  "user.snapfs.binding").decode()
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["node", "-e", NODE_USE, snapfs.path], capture_output=True, text=True,
                       timeout=60, env=clean, cwd=app)
    assert r.returncode == 1 and "Cannot find module" in r.stderr


def test_the_python_client_installed_from_source_finds_the_library_install_sh_put_in_place(
        release_build, scratch_usr_local, snapfs, workdir):
    """pip install client/python carries no library path: the client finds the library that
    scripts/install.sh put in place all the same (here through pkg-config: ldconfig is not
    run, the host's cache stays as it is), and without one it names the command that
    installs it."""
    src = os.path.join(workdir, "python")
    shutil.copytree(ROOT / "client" / "python", src, ignore=shutil.ignore_patterns("__pycache__"))
    venv = os.path.join(workdir, "venv")
    assert run("/usr/bin/python3", "-m", "venv", venv, timeout=120).returncode == 0
    r = run(os.path.join(venv, "bin", "pip"), "install", "--no-index", src, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    clean = {"PATH": "/usr/bin:/bin"}
    python = os.path.join(venv, "bin", "python")
    # Nothing installed yet: refused, with the one command that fixes it.
    r = subprocess.run([python, "-c", PUBLISH, snapfs.path], capture_output=True, text=True,
                       timeout=60, env=clean)
    assert r.returncode == 1 and "`sudo scripts/install.sh /usr/local`" in r.stderr, r.stderr
    r = install_sh(release_build, scratch_usr_local)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([python, "-c", PUBLISH, snapfs.path], capture_output=True, text=True,
                       timeout=60, env=clean)
    assert r.returncode == 0, r.stderr
    where, binding = r.stdout.splitlines()
    assert where.startswith(venv + "/")
    assert binding == os.getxattr(snapfs.p(sha256_hex(b"installed client")),
                                  "user.snapfs.binding").decode()
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def scratch_opt_and_etc(workdir):
    """An empty /opt and a scratch /etc (an overlay: the host's files below, writes in a
    tmpfs) for this test only: an install under a prefix of its own writes its file in
    /etc/ld.so.conf.d and ldconfig its cache, /etc/ld.so.cache, as on a real host, and both
    vanish with the mounts."""
    scratch = os.path.join(workdir, "etc-scratch")
    os.mkdir(scratch)
    mounted = []
    try:
        for argv in (["-t", "tmpfs", "-o", "mode=755", "tmpfs", "/opt"],
                     ["-t", "tmpfs", "tmpfs", scratch]):
            r = run("mount", *argv)
            assert r.returncode == 0, r.stderr
            mounted.insert(0, argv[-1])
        os.mkdir(os.path.join(scratch, "upper"))
        os.mkdir(os.path.join(scratch, "work"))
        r = run("mount", "-t", "overlay", "overlay", "-o",
                f"lowerdir=/etc,upperdir={scratch}/upper,workdir={scratch}/work", "/etc")
        assert r.returncode == 0, r.stderr
        mounted.insert(0, "/etc")
        yield "/opt"
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", m], capture_output=True, check=False)


WHICH_LIBRARY = """
import sys
import snapfs_client as snapfs
b = snapfs.publish(sys.argv[1], b"client of a prefix of its own", owner=0)
print(next(line.split()[-1] for line in open("/proc/self/maps") if "libsnapfs.so" in line))
print(b)
"""

NODE_WHICH_ADDON = r"""
const snapfs = require(process.argv[1]);
(async () => {
  const s = await snapfs.publish("node client of a prefix of its own", { mount: process.argv[2] });
  const maps = require("fs").readFileSync("/proc/self/maps", "utf8").split("\n");
  for (const name of ["snapfs.node", "libsnapfs.so"])
    console.log(maps.find((l) => l.includes(name)).split(/\s+/).pop());
  console.log(s.binding);
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


def test_the_clients_from_source_find_an_install_under_a_prefix_of_its_own(
        release_build, scratch_opt_and_etc, snapfs, workdir):
    """The Python client pip installed from the source and the Node.js package built from it
    (no library path, no addon beside it) find libsnapfs and the addon that install.sh put
    under /opt/snapfs-x, through the loader it told of them (/etc/ld.so.conf.d, ldconfig);
    with the install gone, each names what to run."""
    src = os.path.join(workdir, "python")
    shutil.copytree(ROOT / "client" / "python", src, ignore=shutil.ignore_patterns("__pycache__"))
    venv = os.path.join(workdir, "venv")
    assert run("/usr/bin/python3", "-m", "venv", venv, timeout=120).returncode == 0
    r = run(os.path.join(venv, "bin", "pip"), "install", "--no-index", src, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    python = os.path.join(venv, "bin", "python")
    # The Node.js package as `npm install client/node` builds it: lib/ and package.json only.
    node_pkg = os.path.join(workdir, "node-from-source")
    shutil.copytree(BUILD / "client" / "node" / "lib", os.path.join(node_pkg, "lib"))
    shutil.copy(BUILD / "client" / "node" / "package.json", node_pkg)
    clean = {"PATH": "/usr/bin:/bin"}

    def clients():
        py = subprocess.run([python, "-c", WHICH_LIBRARY, snapfs.path], capture_output=True,
                            text=True, timeout=60, env=clean)
        node = subprocess.run(["node", "-e", NODE_WHICH_ADDON, node_pkg, snapfs.path],
                              capture_output=True, text=True, timeout=60, env=clean)
        return py, node

    r = run(INSTALL, "/opt/snapfs-x", env=dict(os.environ, SNAPFS_INSTALL_BUILD=release_build),
            timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    libdir = "/opt/snapfs-x/lib/x86_64-linux-gnu"
    assert f"installed /etc/ld.so.conf.d/snapfs-opt-snapfs-x.conf (the loader searches " \
        f"{libdir})" in r.stdout
    py, node = clients()
    assert py.returncode == 0, py.stderr
    library, binding = py.stdout.splitlines()
    assert library.startswith(f"{libdir}/libsnapfs.so.0"), library
    assert binding == os.getxattr(snapfs.p(sha256_hex(b"client of a prefix of its own")),
                                  "user.snapfs.binding").decode()
    assert node.returncode == 0, node.stderr
    addon, library, binding = node.stdout.splitlines()
    assert addon == f"{libdir}/nodejs/snapfs/snapfs.node", addon
    assert library.startswith(f"{libdir}/libsnapfs.so.0"), library
    assert binding == os.getxattr(snapfs.p(sha256_hex(b"node client of a prefix of its own")),
                                  "user.snapfs.binding").decode()

    r = run(INSTALL, "--uninstall", env=dict(os.environ, SNAPFS_INSTALL_BUILD=release_build))
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.listdir("/opt") == [] and not os.path.exists(
        "/etc/ld.so.conf.d/snapfs-opt-snapfs-x.conf")
    py, node = clients()
    assert py.returncode == 1 and "`sudo scripts/install.sh /usr/local`" in py.stderr, py.stderr
    assert node.returncode == 1 and "no Node-API addon (snapfs.node)" in node.stderr and \
        "`scripts/install.sh /usr/local`" in node.stderr, node.stderr


def test_an_install_that_stops_half_way_is_recorded_and_uninstalls(
        release_build, scratch_opt_and_etc):
    """A prefix whose loader file cannot be written (here /etc/ld.so.conf.d read-only; a user
    without root, elsewhere): the run fails saying so, and what it had put in place is in its
    manifest all the same, so --uninstall removes every file of it."""
    r = run("mount", "--bind", "-o", "ro", "/etc/ld.so.conf.d", "/etc/ld.so.conf.d")
    assert r.returncode == 0, r.stderr
    try:
        r = run(INSTALL, "/opt/snapfs-y",
                env=dict(os.environ, SNAPFS_INSTALL_BUILD=release_build), timeout=600)
    finally:
        subprocess.run(["umount", "-l", "/etc/ld.so.conf.d"], capture_output=True, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "cannot write /etc/ld.so.conf.d/snapfs-opt-snapfs-y.conf, so the loader will not " \
        "find /opt/snapfs-y/lib/x86_64-linux-gnu/libsnapfs.so.0 (run as root)" in r.stderr
    assert os.path.exists("/opt/snapfs-y/bin/snapfs")
    records = []
    for name in os.listdir(f"{release_build}.installs"):
        with open(os.path.join(f"{release_build}.installs", name)) as f:
            if f.readline() == "prefix /opt/snapfs-y\n":
                records.append(name)
    assert len(records) == 1 and records[0].endswith(".manifest"), records
    r = install_sh(release_build, "--uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "files installed under /opt/snapfs-y" in r.stdout
    assert installed_files("/opt") == [] and os.listdir("/opt") == []


def test_uninstall_names_a_snapfs_it_has_no_manifest_of(scratch_usr_local, workdir):
    """A build directory with no manifest: nothing to remove; and a snapfs installed from
    elsewhere (here copied into /usr/local/bin) is named, with why it is not cleaned here."""
    nowhere = os.path.join(workdir, "no-build")
    env = {"PATH": f"/usr/local/bin:{os.environ['PATH']}"}
    r = install_sh(nowhere, "--uninstall", **env)
    assert r.returncode == 1 and "nothing installed from" in r.stderr, r.stderr
    assert "cannot clean" not in r.stderr, r.stderr
    os.makedirs("/usr/local/bin", exist_ok=True)
    shutil.copy(BUILD / "cli" / "snapfs", "/usr/local/bin/snapfs")
    r = install_sh(nowhere, "--uninstall", **env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "scripts/install.sh: cannot clean /usr/local/bin/snapfs: no manifest of it here " \
        "(installed from another checkout or build directory, or its manifest was removed " \
        "with the build); run scripts/install.sh --uninstall where it was installed from" \
        in r.stderr, r.stderr
    assert os.path.exists("/usr/local/bin/snapfs")
