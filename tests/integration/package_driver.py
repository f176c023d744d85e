# SPDX-License-Identifier: MIT
"""Runs inside a throwaway copy of this host booted with a real systemd (test_package.py
boots it): installs the snapfs .deb with dpkg, uses what it installed as an operator and a
client would, upgrades to the newer .deb while readers check every byte, purges it, and
writes what happened as one JSON object.

Usage (as the container's oneshot unit): python3 package_driver.py DIR OUT

DIR holds the .deb, the newer one (DIR/newer), tests/pkgconfig/example.c and this file's
helpers (systemd_driver.py, takeover_reader.py);
UPPER (/snapfs-upper) is the root overlay's upper directory, where every file the container
writes lands: its listing just before `dpkg -i` and just after `dpkg -P` goes to OUT, for the
test to find what the package left. OUT/result.json gets one entry per step; a step that
raised has its error under "errors". Nothing here asserts: test_package.py does.
"""
import glob
import json
import os
import stat
import sys
import traceback

from systemd_driver import (control, dead_fuse_mount, fstype, ident, main_pid, make_instance_conf,
                            mountinfo, publish, reader_reports, readers_go_on, served, sh, show,
                            snapfs_pids, start_reader, stop_readers)

UPPER = "/snapfs-upper"
# A client's environment: nothing that would point Python or the loader elsewhere.
CLEAN = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}

PUBLISH = """
import sys
import snapfs_client as snapfs
b = snapfs.publish("/run/snapfs", b"published through the packaged client")
print(snapfs.__file__)
print(b)
"""

# The packaged Node.js package, from where Debian keeps a node module of an architecture.
NODE_PUBLISH = """
const snapfs = require("snapfs");
snapfs.publish("published through the packaged node package", { mount: "/run/snapfs" })
  .then((s) => { console.log(require.resolve("snapfs")); console.log(s.binding); })
  .catch((e) => { console.error(e.message); process.exit(1); });
"""


def upper_listing():
    """Every path in the overlay's upper directory, with its type: d, f, l, or w (a
    whiteout: a file of the lower layer deleted)."""
    found = {}
    for top, dirs, files in os.walk(UPPER):
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            kind = ("d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else
                    "w" if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0 else "f")
            found[path[len(UPPER):]] = kind
    return found


def step_install_refused(cfg, res):
    """A dead fuse.hello at /run/snapfs: the unit cannot start there, and dpkg -i returned 0
    all the same (and the unit's ExecStopPost unmounted that foreign mount). The install
    fails, saying why; the foreign mount stays."""
    deb = glob.glob(os.path.join(cfg["dir"], "snapfs_*.deb"))
    os.makedirs("/run/snapfs", exist_ok=True)
    dead_fuse_mount("/run/snapfs")
    try:
        res["dpkg"] = sh("dpkg", "--install", *deb)
        res["status"] = sh("dpkg-query", "--show", "--showformat=${Status}", "snapfs")["out"]
        res["mounts"] = [fstype(l) for l in mountinfo("/run/snapfs")]
    finally:
        sh("umount", "--lazy", "/run/snapfs")
        sh("systemctl", "reset-failed", "snapfs.service")


def step_install(cfg, res):
    deb = glob.glob(os.path.join(cfg["dir"], "snapfs_*.deb"))
    res["deb"] = [os.path.basename(d) for d in deb]
    res["dpkg"] = sh("dpkg", "--install", *deb)
    res["status"] = sh("dpkg-query", "--show", "--showformat=${Status} ${Version}", "snapfs")
    res["files"] = sorted(sh("dpkg-query", "--listfiles", "snapfs")["out"].split())
    res["conffiles"] = sh("dpkg-query", "--showformat=${Conffiles}", "--show",
                          "snapfs")["out"].split()


def step_service(cfg, res):
    """dpkg started and enabled the unit: it serves at /run/snapfs."""
    res["is_enabled"] = sh("systemctl", "is-enabled", "snapfs.service")["out"].strip()
    res["metrics_timer"] = sh("systemctl", "is-enabled", "snapfs-metrics.timer")["out"].strip()
    res["show"] = show("snapfs.service", "ActiveState", "SubState", "FragmentPath", "MainPID")
    res["exec_start"] = show("snapfs.service", "ExecStart")["ExecStart"]
    res["served"] = served("/run/snapfs")
    res["version"] = sh("snapfs", "--version", env=CLEAN)


def step_clients(cfg, res):
    """The packaged Python client and a C program built with the packaged header and
    pkg-config file publish and verify on the packaged daemon's mount."""
    r = sh("/usr/bin/python3", "-c", PUBLISH, env=CLEAN)
    res["python"] = r
    if r["rc"] == 0:
        binding = r["out"].splitlines()[1]
        res["verify"] = sh("snapfs", "verify", "--mount", "/run/snapfs", binding, env=CLEAN)
    res["node"] = sh("node", "-e", NODE_PUBLISH,
                     env=dict(CLEAN, NODE_PATH="/usr/lib/x86_64-linux-gnu/nodejs"))
    r = sh("pkg-config", "--cflags", "--libs", "snapfs", env=CLEAN)
    res["pkg_config"] = r
    exe = "/tmp/snapfs-example"
    res["cc"] = sh("cc", "-std=c17", "-Wall", "-Wextra", "-Werror",
                   os.path.join(cfg["dir"], "example.c"), "-o", exe, *r["out"].split(),
                   env=CLEAN)
    res["example"] = sh(exe, "/run/snapfs", env=CLEAN)
    res["ldd"] = sh("ldd", exe)["out"]
    os.unlink(exe)
    res["man"] = sh("man", "--where", "snapfs", env=dict(CLEAN, MANPATH="/usr/share/man"))
    res["logrotate"] = sh("logrotate", "--debug", "/etc/logrotate.conf")


def step_template(cfg, res):
    make_instance_conf("/etc/snapfs", "pkg")
    res["enable"] = sh("systemctl", "enable", "--now", "snapfs@pkg.service")
    res["show"] = show("snapfs@pkg.service", "ActiveState", "SubState", "FragmentPath")
    res["served"] = served("/run/snapfs-pkg")


def daemon_status(mnt):
    r = sh("snapfs", "status", "--json", "--mount", mnt, env=CLEAN)
    if r["rc"] != 0:
        raise RuntimeError(f"snapfs status {mnt}: {r}")
    return json.loads(r["out"])["status"]


def step_upgrade(cfg, res):
    """docs/deployment.md, "Upgrading": dpkg -i of the newer package (DIR/newer) while two
    readers check every byte (takeover_reader.py): root on /run/snapfs, and uid 1000 in a
    bubblewrap sandbox on a scope's view bound there. Its postinst restarts snapfs.service and
    the running instance (systemctl restart): each new daemon takes the mounts over."""
    mnt, view, outdir = "/run/snapfs", "/run/snapfs-upgrade", "/run/upgrade-out"
    units = {"snapfs.service": mnt, "snapfs@pkg.service": "/run/snapfs-pkg"}
    deb = glob.glob(os.path.join(cfg["dir"], "newer", "snapfs_*.deb"))
    res["deb"] = [os.path.basename(d) for d in deb]
    digest = publish(mnt, os.urandom(200000), "upgrade")
    res["create"] = control(mnt, {"op": "scope-create", "name": "upgrade", "view": view,
                                  "uids": [1000]})
    res["grant"] = control(mnt, {"op": "grant", "scope": "upgrade", "sha256": digest})
    os.mkdir(outdir)
    os.chmod(outdir, 0o777)
    paths = (mnt, view, f"{mnt}/{digest}", f"{view}/{digest}")
    res["ident_before"] = [ident(p) for p in paths]
    res["before"] = {u: {"pid": main_pid(u), "status": daemon_status(m)} for u, m in units.items()}
    outs = (f"{outdir}/host.json", f"{outdir}/box.json")
    procs = [start_reader([f"{mnt}/{digest}={digest}"], outs[0])]
    procs.append(start_reader([f"/run/snapfs/{digest}={digest}"], outs[1], uid=1000,
                              sandbox=(view, outdir)))
    try:
        readers_go_on(outs)
        res["dpkg"] = sh("dpkg", "--install", *deb, timeout=300)
        readers_go_on(outs)
    finally:
        stop_readers(outs, procs, res)
    res["host"], res["box"] = reader_reports(outs)
    res["ident_after"] = [ident(p) for p in paths]
    res["after"] = {u: {"pid": main_pid(u), "status": daemon_status(m),
                        "show": show(u, "ActiveState", "SubState", "NRestarts")}
                    for u, m in units.items()}
    res["version"] = sh("dpkg-query", "--show", "--showformat=${Version}", "snapfs")["out"]
    res["remove"] = control(mnt, {"op": "scope-remove", "name": "upgrade"})
    for d in (view, outdir):  # the test's own directories: the purge judges the package's
        sh("rm", "-rf", "--one-file-system", d)


def step_purge(cfg, res):
    res["state"] = {p: os.path.exists(p) for p in ("/var/lib/snapfs", "/var/lib/snapfs-pkg",
                                                   "/var/log/snapfs/audit.log",
                                                   "/etc/snapfs/pkg.conf")}
    # The administrator's trust key beside the config files is not the package's to remove.
    with open("/etc/snapfs/release.pub", "w") as f:
        f.write("an operator's key\n")
    res["dpkg"] = sh("dpkg", "--purge", "snapfs")
    res["kept"] = {p: os.path.exists(p) for p in ("/etc/snapfs/release.pub",
                                                  "/etc/snapfs/pkg.conf",
                                                  "/etc/snapfs/snapfs.conf")}
    # The key was the test's: gone with it, so the rest judges what the package left.
    os.unlink("/etc/snapfs/release.pub")
    os.rmdir("/etc/snapfs")
    res["status"] = sh("dpkg-query", "--show", "snapfs")
    res["units"] = {u: show(u, "LoadState", "ActiveState")
                    for u in ("snapfs.service", "snapfs@pkg.service")}
    res["pids"] = snapfs_pids()
    res["mounts"] = [l for l in open("/proc/self/mountinfo") if "fuse.snapfs" in l]
    res["ldconfig"] = [l for l in sh("ldconfig", "-p")["out"].splitlines() if "snapfs" in l]
    res["named_snapfs"] = sorted(
        os.path.join(d, n) for top in ("/etc", "/usr", "/var", "/run", "/opt", "/srv")
        for d, dirs, files in os.walk(top) for n in dirs + files
        if "snapfs" in n and "snapfs-package-test" not in n)
    # The mounts serving a moment ago, for the record: nothing is left at either.
    res["mountinfo"] = {m: mountinfo(m) for m in ("/run/snapfs", "/run/snapfs-pkg")}


STEPS = [step_install_refused, step_install, step_service, step_clients, step_template,
         step_upgrade, step_purge]


def main():
    dir_, out = sys.argv[1:]
    cfg = {"dir": dir_}
    result = {"errors": {}}
    with open(os.path.join(out, "upper-before.json"), "w") as f:
        json.dump(upper_listing(), f)
    for step in STEPS:
        name = step.__name__[len("step_"):]
        res = result.setdefault(name, {})
        try:
            step(cfg, res)
        except Exception:
            result["errors"][name] = traceback.format_exc()
    with open(os.path.join(out, "upper-after.json"), "w") as f:
        json.dump(upper_listing(), f)
    with open(os.path.join(out, "journal.txt"), "w") as f:
        f.write(sh("journalctl", "--no-pager", "-o", "short-monotonic", "--boot")["out"])
    tmp = os.path.join(out, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.rename(tmp, os.path.join(out, "result.json"))


if __name__ == "__main__":
    main()
