# SPDX-License-Identifier: MIT
"""The daemon's config file (snapfs mount --config FILE, -o config=FILE): KEY = VALUE lines
named as the long options, the command line winning, an unknown key or a bad value refused
with its line number and nothing mounted, the file itself an untrusted path. Each refusal
beside the same file, fixed, that mounts and serves. The contract is docs/design.md, "The
daemon's options"."""
import os
import re
import time

import pytest

from snaptest import E, ROOT, errno_of, is_mounted, run

EXAMPLE = ROOT / "dist" / "snapfs.conf.example"


def conf(workdir, text, name="snapfs.conf", mode=0o644):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def refused_start(snapfs_bin, workdir, *opts):
    """`snapfs mount -f OPTS MNT` that must refuse: (exit status, standard error), with
    nothing mounted at MNT."""
    mnt = os.path.join(workdir, "never")
    os.makedirs(mnt, exist_ok=True)
    r = run(snapfs_bin, "mount", "-f", *opts, mnt)
    assert not is_mounted(mnt), r.stderr
    assert "nothing mounted" in r.stderr, r.stderr
    return r.returncode, r.stderr


def test_the_file_sets_options_and_the_command_line_wins(mount_snapfs, workdir):
    path = conf(workdir, "# limits\n"
                         "max-snapshot-size = 1K\n"
                         "max_staging = 1\n"
                         "\n"
                         "unlink-own = yes\n")
    fs = mount_snapfs("--config", path, "--max-snapshot-size", "4K")
    # The command line's 4K, not the file's 1K: 2 KiB publishes, 5 KiB is too big.
    fs.publish(b"x" * 2048, "two")
    fd = fs.stage(b"", "big", close=False)
    try:
        assert errno_of(os.write, fd, b"y" * 5000) == E.EFBIG
        # The file's max_staging = 1: this uid's one staging file is open, a second is not.
        assert errno_of(os.open, fs.p(".staging/second"),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL) == E.EDQUOT
    finally:
        os.close(fd)


def test_an_unknown_key_is_refused_with_its_line_and_nothing_is_mounted(snapfs_bin, workdir,
                                                                        mount_snapfs):
    path = conf(workdir, "max-bytes = 64M\n# comment\nmax-byte = 64M\n")
    rc, err = refused_start(snapfs_bin, workdir, "--config", path)
    assert rc == 2 and f"{path}:3: unknown key 'max-byte'" in err, err
    # The allowance: the same file with the key spelled right mounts and serves.
    path = conf(workdir, "max-bytes = 64M\n# comment\n")
    assert mount_snapfs("--config", path).publish(b"served")


def test_a_bad_value_is_refused_with_its_line_and_the_units_it_takes(snapfs_bin, workdir,
                                                                     mount_snapfs):
    path = conf(workdir, "\n\nmax-bytes = 12Q\n")
    rc, err = refused_start(snapfs_bin, workdir, "--config", path)
    assert rc == 2, err
    assert (f"{path}:3: max-bytes: invalid size '12Q': expected digits with an optional K, "
            "M or G suffix (binary units: 4096, 256K, 64M, 1G)") in err, err
    # Overridden on the command line, a bad line is still refused: the file is wrong.
    rc, err = refused_start(snapfs_bin, workdir, "--config", path, "--max-bytes", "64M")
    assert rc == 2 and f"{path}:3:" in err, err
    path = conf(workdir, "\n\nmax-bytes = 12M\n")
    assert mount_snapfs("--config", path).publish(b"served")


def test_rules_between_options_hold_whichever_gave_them(snapfs_bin, workdir):
    """The daemon checks them when it starts: from the file, from the command line, or one
    from each."""
    path = conf(workdir, "max-bytes = 1K\n")
    rc, err = refused_start(snapfs_bin, workdir, "--config", path)
    assert rc == 2 and "--max-snapshot-size (256K by default) is larger than --max-bytes 1K" \
        in err, err
    path = conf(workdir, "readers = 0\n", name="readers.conf")
    view = os.path.join(workdir, "view")
    os.mkdir(view)
    rc, err = refused_start(snapfs_bin, workdir, "--config", path, "--read-view", view)
    assert rc == 2 and "--read-view needs every uid to be a reader" in err, err


@pytest.mark.parametrize("line", ["foreground = yes", "debug = yes", "config = /etc/x.conf"])
def test_what_belongs_on_the_command_line_is_refused_in_a_file(snapfs_bin, workdir, line):
    path = conf(workdir, line + "\n")
    rc, err = refused_start(snapfs_bin, workdir, "--config", path)
    assert rc == 2 and f"{path}:1: " in err and "not in a configuration file" in err, err


def test_a_file_others_may_write_or_a_symlink_is_refused(snapfs_bin, workdir, mount_snapfs):
    good = conf(workdir, "max-bytes = 32M\n", name="good.conf")
    path = conf(workdir, "max-bytes = 32M\n", name="open.conf", mode=0o646)
    rc, err = refused_start(snapfs_bin, workdir, "--config", path)
    assert rc == 1 and f"--config {path}: refused: writable by group or others" in err, err
    os.chown(good, 1000, 1000)  # another uid's file: it could choose root's options
    rc, err = refused_start(snapfs_bin, workdir, "--config", good)
    assert rc == 1 and "refused: owned by uid 1000, neither this uid nor root" in err, err
    os.chown(good, 0, 0)
    link = os.path.join(workdir, "link.conf")
    os.symlink(good, link)
    rc, err = refused_start(snapfs_bin, workdir, "--config", link)
    assert rc == 1 and f"--config {link}: refused: {link} is a symbolic link" in err, err
    # The allowance: the very file the link names, root's and private, mounts.
    assert mount_snapfs("--config", good).publish(b"served")


def read(path):
    with open(path) as f:
        return f.read()


def as_uid(uid, fn):
    """Runs fn in a child process with uid and gid set to uid: its exit status."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            fn()
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_config_reached_through_a_directory_another_uid_can_change_is_refused(
        snapfs_bin, workdir, mount_snapfs):
    """The attack: uid 4701 may write a directory on the config's path; it swaps etc/ for a
    link to a directory holding an empty root-owned snapfs.conf, and the daemon mounted on
    defaults (the operator's readers and max-bytes gone). The whole path is judged, as sshd's
    StrictModes does: nothing is mounted, and the refusal names the directory."""
    layout = {}
    for name, mode in (("safe", 0o755), ("open", 0o777)):
        top = os.path.join(workdir, name)
        os.mkdir(top)
        os.chmod(top, mode)
        os.mkdir(os.path.join(top, "etc"), 0o755)
        layout[name] = conf(os.path.join(top, "etc"), "max-bytes = 32M\nreaders = 0\n")
    # The root-owned 0644 file in a 0777 directory: its directory's writer can replace it.
    opened = os.path.join(workdir, "open")
    rc, err = refused_start(snapfs_bin, workdir, "--config", layout["open"])
    assert rc == 1 and (f"--config {layout['open']}: refused: {opened} is writable by group "
                        "or others (mode 0777)") in err, err
    # 4701 does what it may there: etc/ becomes a link to a directory of an empty config.
    decoy = os.path.join(workdir, "decoy")
    os.mkdir(decoy, 0o755)
    conf(decoy, "")

    def swap():
        os.rename(os.path.join(opened, "etc"), os.path.join(opened, "etc.old"))
        os.symlink(decoy, os.path.join(opened, "etc"))
    assert as_uid(4701, swap) == 0
    rc, err = refused_start(snapfs_bin, workdir, "--config", layout["open"])
    assert rc == 1 and f"refused: {opened}/etc is a symbolic link" in err, err
    # A link on the path is refused on its own, in a directory nobody else may write.
    linked = os.path.join(workdir, "linked")
    os.mkdir(linked, 0o755)
    os.symlink(os.path.join(workdir, "safe", "etc"), os.path.join(linked, "etc"))
    via_link = os.path.join(linked, "etc", "snapfs.conf")
    rc, err = refused_start(snapfs_bin, workdir, "--config", via_link)
    assert rc == 1 and (f"--config {via_link}: refused: {linked}/etc is a symbolic link"
                        in err), err
    # The allowance: the config in root-owned 0755 directories loads (its readers = 0 and
    # max-bytes hold: the owner publishes).
    assert mount_snapfs("--config", layout["safe"]).publish(b"served")


@pytest.mark.parametrize("option", ["store", "runtime-store", "audit-log", "pid-file",
                                    "trust-key"])
def test_every_path_the_daemon_trusts_is_judged_along_its_whole_path(snapfs_bin, workdir,
                                                                     option):
    opened = os.path.join(workdir, "open")
    os.mkdir(opened)
    os.chmod(opened, 0o777)
    name = {"store": "store", "runtime-store": "runtime", "audit-log": "audit.log",
            "pid-file": "snapfs.pid", "trust-key": "key.pub"}[option]
    path = os.path.join(opened, name)
    if option == "trust-key":
        run("openssl", "genpkey", "-algorithm", "ed25519", "-out",
            os.path.join(workdir, "key.pem"), check=True)
        run("openssl", "pkey", "-in", os.path.join(workdir, "key.pem"), "-pubout", "-out",
            path, check=True)
    rc, err = refused_start(snapfs_bin, workdir, f"--{option}", path)
    assert rc == 1 and (f"--{option} {path}: refused: {opened} is writable by group or "
                        "others (mode 0777)") in err, err
    if option == "trust-key":
        os.unlink(path)
    assert not os.path.exists(path), f"{path} was made"
    # The allowance: the same name in a 0755 directory passes this judgement (the start goes
    # on to the rules between options: here --max-bytes 1K refuses it, after every path).
    os.chmod(opened, 0o755)
    if option == "trust-key":
        run("openssl", "pkey", "-in", os.path.join(workdir, "key.pem"), "-pubout", "-out",
            path, check=True)
    rc, err = refused_start(snapfs_bin, workdir, f"--{option}", path, "--max-bytes", "1K")
    assert rc == 2 and "--max-snapshot-size (256K by default) is larger than --max-bytes" in \
        err, err


def test_a_pid_file_another_uid_planted_in_a_sticky_directory_is_refused(snapfs_bin, workdir,
                                                                         mount_snapfs):
    """A sticky directory (/tmp) protects only what the daemon's uid (or root) owns there:
    uid 4701's file under the pid file's name would choose what the daemon truncates."""
    sticky = os.path.join(workdir, "sticky")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    pidfile = os.path.join(sticky, "snapfs.pid")
    with open(pidfile, "w") as f:
        f.write("4701's\n")
    os.chown(pidfile, 4701, 4701)
    rc, err = refused_start(snapfs_bin, workdir, "--pid-file", pidfile)
    assert rc == 1 and (f"--pid-file {pidfile}: refused: {sticky} is writable by others (mode "
                        "1777) and what the path reaches there is owned by uid 4701") in err, err
    with open(pidfile) as f:
        assert f.read() == "4701's\n"  # untouched
    # The allowance: the name free, the daemon makes its own pid file there.
    os.unlink(pidfile)
    fs = mount_snapfs("--pid-file", pidfile)
    deadline = time.monotonic() + 60  # written once the mount answers INIT
    while read(pidfile) != f"{fs.proc.pid}\n" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert read(pidfile) == f"{fs.proc.pid}\n"
    assert os.stat(pidfile).st_uid == 0


def test_a_kernel_file_is_refused_as_the_audit_log_as_it_is_as_the_pid_file(
        snapfs_bin, workdir, mount_snapfs):
    # /proc/PID/status opens for appending as root and takes no line: every refusal audited
    # there was lost. (/proc/self/status is refused before: /proc/self is a link.)
    status = f"/proc/{os.getpid()}/status"
    for option in ("--audit-log", "--pid-file"):
        rc, err = refused_start(snapfs_bin, workdir, option, status)
        assert rc == 1 and f"{option} {status}: refused: a kernel interface" in err, err
    rc, err = refused_start(snapfs_bin, workdir, "--audit-log", "/proc/self/status")
    assert rc == 1 and "refused: /proc/self is a symbolic link" in err, err
    # The allowance: a log in a private directory takes the mount's lines.
    fs = mount_snapfs()
    digest = fs.publish(b"served")
    assert any(e.get("digest") == digest
               for e in fs.wait_audit(lambda ev: any(e.get("digest") == digest for e in ev)))


def test_the_example_file_as_shipped_mounts_with_every_default(mount_snapfs, workdir):
    """Every key of the example is commented out: it must parse, and change nothing."""
    path = conf(workdir, EXAMPLE.read_text())
    fs = mount_snapfs("--config", path)
    usage = os.getxattr(fs.p(), "user.snapfs.usage").decode().splitlines()[0]
    assert usage.startswith("limits uid-snapshots=1024 uid-bytes=16777216 "), usage


def test_the_example_file_with_every_key_set_to_its_default_mounts(mount_snapfs, workdir):
    """Each line of the example with a value, uncommented, is a valid line."""
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        if re.match(r"#[a-z-]+ = .", line):
            lines.append(line[1:])
    assert any(x.startswith("max-bytes = ") for x in lines), lines
    fs = mount_snapfs("--config", conf(workdir, "\n".join(lines) + "\n"))
    assert fs.publish(b"served")
