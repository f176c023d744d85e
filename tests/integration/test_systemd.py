# SPDX-License-Identifier: MIT
"""The shipped units under a real systemd. One container is booted for the whole module:
systemd 252 (PID 1 there) over this host's own /usr with a volatile root, so it starts as a
fresh host (empty /etc, no /var/log/snapfs, no /run/snapfs); the build is installed by
`meson install --destdir` and that tree is bound over the container's /usr/local, where
systemd reads units and mount(8) finds snapfs. systemd_driver.py, run there as a oneshot
unit, drives the units as an operator would and writes what happened; the tests below judge
it, one behaviour each:

the fstab line of docs/deployment.md mounts with `mount -a` before anything made its
directories, and the service started while that daemon serves is refused without taking its
mount away; `systemctl start` returns with the mount serving (READY=1), and `status` and the
journal show it; `systemctl status` shows the daemon's STATUS=, updated after a publish, and
`snapfs status` names the same daemon; the metrics service and its timer write
node_exporter's textfile, which `promtool check metrics` takes; `reload` reopens the audit log and a forced logrotate (twice, during a
stream of publishes) loses no line; after `kill -9` of the main pid, Restart= brings the
mount back with its snapshots; `stop` leaves no mount and no process; a dead FUSE mount of
another filesystem at the mount point survives the refused start and the stop; the operator
lowers a
limit in the shipped config file and `systemctl restart` applies it; a bad line in that file,
or an instance with no file, fails the start once, naming the file (and the line); a usage
error or a refusal is not restarted (and is, once RestartPreventExitStatus= is reset); the
documented read view (a config line and a drop-in) makes its directory and survives a kill -9
too; the template `snapfs@.service` runs two instances side by side, each from its own config
file with its own store and log; a scope's content put under the unit lives in its runtime
directory on /run, never under /var/lib, and a restart keeps it.

Runnable by hand: SNAPFS_BUILD=build unshare -m --propagation private -- python3 -m pytest
tests/integration/test_systemd.py (needs systemd-container: scripts/deps.sh installs it)."""
import json
import os
import re
import shutil
import subprocess

import pytest

from snaptest import BUILD, ROOT, run

HERE = os.path.dirname(os.path.abspath(__file__))
BOOT_DEADLINE = 300  # seconds for the whole boot, every step and the poweroff: a bound

DRIVER_UNIT = """[Unit]
Description=snapfs operator scenarios (test_systemd.py)
After=multi-user.target
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /snapfs-test/systemd_driver.py /snapfs-test/config.json /out
StandardOutput=file:/out/driver.log
StandardError=inherit
"""


def documented_fstab_line():
    with open(ROOT / "docs" / "deployment.md") as f:
        lines = [l.strip() for l in f if re.match(r"snapfs\s+/run/snapfs\s+fuse\.snapfs\s", l)]
    assert len(lines) == 1, lines
    return lines[0]


def documented_dropin(first_line):
    """The fenced block of docs/deployment.md that starts with first_line."""
    with open(ROOT / "docs" / "deployment.md") as f:
        text = f.read()
    blocks = [b for b in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
              if b.startswith(first_line + "\n")]
    assert len(blocks) == 1, f"docs/deployment.md has no single block {first_line!r}"
    return blocks[0]


def documented_read_view_sed():
    """The sed script of docs/deployment.md that sets read-view in the config file."""
    with open(ROOT / "docs" / "deployment.md") as f:
        found = re.findall(r"^sed -i '([^']*read-view[^']*)' /etc/snapfs/snapfs\.conf$", f.read(),
                           re.M)
    assert len(found) == 1, found
    return found[0]


def boot(workdir, installed):
    """Boots the container once; returns the driver's result and the journal."""
    test_dir, out = os.path.join(workdir, "test"), os.path.join(workdir, "out")
    os.mkdir(test_dir)
    os.mkdir(out)
    shutil.copy(os.path.join(HERE, "systemd_driver.py"), test_dir)
    shutil.copy(os.path.join(HERE, "takeover_reader.py"), test_dir)
    dropin = documented_dropin("# /etc/systemd/system/snapfs.service.d/read-view.conf")
    assert "ExecStart=" not in dropin, "the read view is a config line, not a command line"
    with open(os.path.join(test_dir, "config.json"), "w") as f:
        json.dump({"fstab": documented_fstab_line(), "bindir": "/usr/local/bin",
                   # This install's sysconfdir: PREFIX/etc (/etc for the package).
                   "confdir": "/usr/local/etc/snapfs",
                   "read_view_dropin": dropin, "read_view_sed": documented_read_view_sed()},
                  f)
    unit = os.path.join(test_dir, "snapfs-test.service")
    with open(unit, "w") as f:
        f.write(DRIVER_UNIT)
    # A first boot enables what the presets say, and Debian's enable everything (snapfs.service
    # too, which would take /run/snapfs before the fstab step): enable nothing, start only the
    # driver.
    preset = os.path.join(test_dir, "00-nothing.preset")
    with open(preset, "w") as f:
        f.write("disable *\n")
    argv = ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--volatile=yes",
            "-D", "/", "--bind=/dev/fuse", f"--bind={out}:/out",
            f"--bind-ro={installed}/usr/local:/usr/local",
            # The config files, which the operator edits there.
            f"--bind={installed}/usr/local/etc:/usr/local/etc",
            f"--bind-ro={installed}/etc/logrotate.d:/etc/logrotate.d",
            f"--bind-ro={test_dir}:/snapfs-test",
            f"--bind-ro={unit}:/etc/systemd/system/snapfs-test.service",
            f"--bind-ro={preset}:/etc/systemd/system-preset/00-nothing.preset",
            "-b", "--", "systemd.firstboot=off", "systemd.wants=snapfs-test.service"]
    # nspawn keeps its propagation directory under /run/systemd/nspawn: on this host /run is
    # no tmpfs, so a tmpfs of this namespace takes what it writes there.
    script = 'mount -t tmpfs -o mode=755 tmpfs /run/systemd && exec "$@"'
    with open(os.path.join(workdir, "nspawn.log"), "w") as log:
        p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
                              script, "sh", *argv], stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(BOOT_DEADLINE)
        except subprocess.TimeoutExpired:
            p.terminate()  # nspawn powers the container off
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            rc = "timeout"
    with open(os.path.join(workdir, "nspawn.log")) as f:
        boot_log = f.read()
    journal = ""
    if os.path.exists(os.path.join(out, "journal.txt")):
        with open(os.path.join(out, "journal.txt")) as f:
            journal = f.read()
    assert os.path.exists(os.path.join(out, "result.json")), \
        f"the driver wrote no result (nspawn: {rc})\n{boot_log[-4000:]}\n{journal[-8000:]}"
    with open(os.path.join(out, "result.json")) as f:
        return json.load(f), journal


@pytest.fixture(scope="module")
def booted(tmp_path_factory):
    assert shutil.which("systemd-nspawn"), \
        "systemd-nspawn missing: scripts/deps.sh installs systemd-container"
    workdir = str(tmp_path_factory.mktemp("systemd"))
    dest = os.path.join(workdir, "dest")
    r = run("meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", dest, "--quiet",
            timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        yield boot(workdir, dest)
    finally:
        shutil.rmtree(workdir)


def step(booted, name):
    res, journal = booted
    assert name not in res["errors"], f"{res['errors'][name]}\n---- journal\n{journal[-8000:]}"
    return res[name]


def test_nothing_from_snapfs_is_left_and_no_sanitizer_spoke(booted):
    res, _ = booted
    assert res["errors"] == {}, "\n".join(res["errors"].values())
    assert res["end"] == {"pids": [], "mounts": []}, res["end"]
    assert res["sanitizer"] == []


def test_the_fstab_line_mounts_with_mount_a_on_a_fresh_host(booted):
    res = step(booted, "fstab_on_a_fresh_host")
    # Nothing had made the audit log's directory, nor the mount point.
    assert res["before"] == {"log_dir": False, "mountpoint": False}
    assert res["mount"]["rc"] == 0, res["mount"]
    assert res["served"]["mounts"] == ["fuse.snapfs"]
    assert set(res["served"]["flags"].split(",")) >= {"nosuid", "nodev", "noexec"}
    # The pid file names the supervisor; the serving process is its child (docs/deployment.md,
    # "mount(8) and fstab").
    assert res["pidfile"] == f"{res['pids'][0]}\n" and len(res["pids"]) == 2
    # snapfs made the directory (0750) and logged the publish there.
    assert res["log_dir_mode"] == "0o750"
    # The service, started while this daemon serves there (and holds the same store), is
    # refused and not restarted; and what the unit does after a failure leaves the fstab
    # daemon's live mount alone: still there, serving what it served.
    assert res["service_on_top"]["rc"] != 0
    assert (res["service_show"]["ActiveState"], res["service_show"]["NRestarts"]) == \
        ("failed", "0"), res["service_show"]
    assert res["service_exit"] == [["exit-code", "exited", "1"]]
    assert "refused" in res["service_journal"], res["service_journal"]
    assert res["still_served"]["mounts"] == ["fuse.snapfs"], res["still_served"]
    assert res["still_served"]["listing"] == [res["digest"]]
    assert res["umount"]["rc"] == 0
    assert res["after"] == {"mounts": [], "pids": []}


def test_start_returns_with_the_mount_serving_and_status_and_journal_show_it(booted):
    res = step(booted, "start_status_journal")
    assert res["start"]["rc"] == 0, res["start"]
    # Served when start returned: the one mount there answers, with what the fstab
    # daemon published into the same store before.
    fstab = step(booted, "fstab_on_a_fresh_host")
    assert res["served"]["mounts"] == ["fuse.snapfs"]
    assert res["served"]["listing"] == [fstab["digest"]]
    show = res["show"]
    assert (show["ActiveState"], show["SubState"], show["Type"]) == ("active", "running",
                                                                    "notify")
    status = res["status"]["out"]
    assert "Active: active (running)" in status
    assert f"Main PID: {show['MainPID']} (snapfs)" in status
    assert f"snapfs: serving /run/snapfs (pid {show['MainPID']})" in res["journal"]
    # The directories systemd makes, private, and the log the daemon made.
    assert res["modes"] == {"/var/log/snapfs": "0o750", "/var/lib/snapfs": "0o700",
                            "/var/log/snapfs/audit.log": "0o600"}


def test_status_shows_in_systemctl_status_and_the_metrics_timer_writes_the_textfile(booted):
    res = step(booted, "status_and_metrics")
    # STATUS=: the summary systemd shows, updated after the publish (this daemon's first).
    text = res["status_text"]
    assert text.startswith("serving /run/snapfs: ") and text.endswith(", 1 published, 0 refused")
    assert f'Status: "{text}"' in res["systemctl_status"]["out"], res["systemctl_status"]
    # snapfs status, as root (the owner): the daemon systemd runs.
    assert res["status"]["rc"] == 0, res["status"]
    status = json.loads(res["status"]["out"])["status"]
    assert status["pid"] == res["main_pid"]
    assert status["mounts"]["main"]["path"] == "/run/snapfs"
    assert status["store"]["dir"] == "/var/lib/snapfs" and status["counters"]["publishes"] == 1
    # The metrics service wrote node_exporter's file, which Prometheus' own linter takes;
    # then the timer, started, ran it again by itself.
    assert res["metrics_service"]["rc"] == 0, res["metrics_service"]
    # Every scope's counts: the operator's and the collector's group's, no other uid's.
    assert (res["textfile_mode"], res["textfile_group"]) == ("0o640", "prometheus")
    r = subprocess.run(["promtool", "check", "metrics"], input=res["textfile"],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout + r.stderr) == (0, ""), r
    assert "\nsnapfs_publishes_total 1\n" in res["textfile"]
    assert res["timer"]["rc"] == 0, res["timer"]
    assert res["timer_show"] == {"ActiveState": "active", "Triggers": "snapfs-metrics.service"}
    assert res["timer_textfile"].startswith("# HELP snapfs_build ")


def test_reload_reopens_the_log_and_a_forced_logrotate_loses_no_line(booted):
    res = step(booted, "reload_and_logrotate")
    assert res["reload"]["rc"] == 0, res["reload"]
    assert res["reload_show"]["SubState"] == "running"
    assert [r["rc"] for r in res["logrotate"]] == [0, 0], res["logrotate"]
    assert res["failures"] == []
    # Every publish of the stream is in exactly one line, across the live log, the rotated
    # one and the compressed one; each of the three got some of them.
    assert res["counts"] == [1], res
    assert sum(res["files"].values()) == res["published"]
    assert set(res["files"]) == {"audit.log", "audit.log.1", "audit.log.2.gz"}, res["files"]
    assert all(res["files"].values()), res["files"]
    assert res["same_pid"], "the daemon was restarted, not reloaded"
    # Our reload and one by each rotation's postrotate (no pid file under the service).
    assert res["reloaded"] == 3, res


def test_kill_9_of_the_main_pid_is_restarted_with_its_snapshots(booted):
    res = step(booted, "kill_9_restarts")
    assert res["exit"] == [["signal", "killed", "KILL"]]
    assert res["show"]["NRestarts"] == "1", res["show"]
    assert res["show"]["MainPID"] != str(res["old_pid"])
    assert res["served"]["mounts"] == ["fuse.snapfs"], res["served"]
    assert res["served"]["listing"] == res["before"]
    # Every snapshot: the fstab one, the one counted in STATUS= and the whole stream.
    stream = step(booted, "reload_and_logrotate")
    assert step(booted, "status_and_metrics")["digest"] in res["before"]
    assert len(res["before"]) == 2 + stream["published"]


def test_restart_kill_9_and_a_stall_are_taken_over_and_no_reader_notices(booted):
    """docs/deployment.md, "Restarts and upgrades": readers (root on the mount, uid 1000 on a
    scope's view) see no failure, no wrong byte, no binding moved."""
    res = step(booted, "takeover")
    assert res["create"]["ok"] and res["grant"]["ok"] and res["remove"]["ok"], res
    assert [a for a, _ in res["actions"]] == ["restart", "kill-9", "stall"]
    exits = [e for _, e in res["actions"]]
    # The restart handed over (exit 75, a success); kill -9 and the watchdog killed.
    assert exits == [[["success", "exited", "75"]], [["signal", "killed", "KILL"]],
                     [["watchdog", "killed", "KILL"]]], exits
    assert res["exit"] == [0, 0]
    for name in ("host", "box"):
        r = res[name]
        assert r["failures"] == {} and r["wrong_bytes"] == 0 and r["bindings_moved"] == 0, r
    assert res["ident_after"] == res["ident_before"]


def test_a_scopes_content_lives_in_the_units_runtime_directory_and_survives_a_restart(booted):
    res = step(booted, "scope_content_lives_in_ram")
    assert res["create"]["rc"] == 0 and res["put"]["rc"] == 0, res
    # RuntimeDirectory= on /run, a tmpfs: the token is there, and nowhere under /var/lib.
    assert res["fstype"] == "tmpfs"
    assert (res["runtime"], res["store"]) == (True, False)
    # systemctl restart (RuntimeDirectoryPreserve=restart): the grant still reads it, and it
    # is still not on the disk; scope rm takes it from RAM too.
    assert res["restart"]["rc"] == 0, res["restart"]
    assert res["read"] is True, res["read"]
    assert res["store_after"] is False
    assert res["remove"]["rc"] == 0 and res["runtime_after_rm"] is False


def test_stop_leaves_no_mount_and_no_process(booted):
    res = step(booted, "stop_leaves_nothing")
    assert res["stop"]["rc"] == 0, res["stop"]
    # The daemon unmounted and exited 0 on SIGTERM (systemd would call death by SIGTERM a
    # success too: the exit status says which).
    assert res["show"] == {"ActiveState": "inactive", "Result": "success", "MainPID": "0"}
    assert res["exit"] == [["success", "exited", "0"]]
    assert res["mounts"] == {"/run/snapfs": []}
    assert res["pids"] == []


def test_a_foreign_dead_mount_at_the_mount_point_survives_a_refused_start_and_stop(booted):
    res = step(booted, "a_foreign_dead_mount_survives")
    # Refused (exit 1, not restarted): the daemon clears only a dead snapfs mount...
    assert res["start"]["rc"] != 0
    assert (res["show"]["ActiveState"], res["show"]["ExecMainStatus"],
            res["show"]["NRestarts"]) == ("failed", "1", "0"), res["show"]
    assert "/run/snapfs: the dead mount there is not a snapfs mount; not clearing it" in \
        res["journal"]
    # ...and so does the unit: the foreign mount is still there after the failed start and
    # after stop, and the journal says why it was left.
    assert res["after_start"] == ["fuse.hello"], res
    assert res["after_stop"] == ["fuse.hello"], res
    assert ("/run/snapfs: a mount that is not a snapfs mount (fuse.hello); left as it is"
            in res["journal"]), res["journal"]
    # The allowance: without it, the unit starts and serves, and its own dead mount after a
    # kill -9 is cleared for the restart.
    assert res["fixed"]["rc"] == 0, res["fixed"]
    assert res["fixed_show"] == {"ActiveState": "active", "SubState": "running"}
    assert res["restarted"] == ["fuse.snapfs"], res
    assert res["fixed_stop"]["rc"] == 0
    assert res["after"] == {"mounts": [], "pids": []}


def test_the_operator_lowers_a_limit_in_the_config_file_and_restart_applies_it(booted):
    res = step(booted, "operator_edits_a_limit")
    assert res["start"]["rc"] == 0, res["start"]
    # 64K + 1 bytes, under the shipped default (256K): published.
    assert res["before"] == "OK"
    assert res["line"] == ["max-snapshot-size = 64K"]
    assert res["restart"]["rc"] == 0 and res["restarted"], res
    # The same size after the edit: refused; 64K, the new limit itself: published.
    assert res["over"] == "EFBIG"
    assert res["at"] == "OK"
    assert res["stop"]["rc"] == 0


def test_a_bad_config_file_fails_the_start_once_naming_its_file_and_line(booted):
    res = step(booted, "a_bad_config_file_fails_once")
    conf = "/usr/local/etc/snapfs/snapfs.conf"
    assert res["start"]["rc"] != 0
    # Failed at once with exit 2, never restarted (RestartPreventExitStatus=), the file and
    # the line in the journal.
    assert res["show"] == {"ActiveState": "failed", "SubState": "failed", "Result": "exit-code",
                           "ExecMainStatus": "2", "NRestarts": "0"}, res["show"]
    assert res["exits"] == [["exit-code", "exited", "2"]]
    assert f"{conf}:{res['lineno']}: max-bytes: invalid size 'lots'" in res["journal"]
    assert res["journal"].count("max-bytes: invalid size 'lots'") == 1, res["journal"]
    # An instance whose NAME.conf nobody made: the same, naming the file it looked for.
    missing = res["missing"]
    assert missing["exists"] is False and missing["start"]["rc"] != 0
    assert missing["show"] == {"ActiveState": "failed", "SubState": "failed",
                               "Result": "exit-code", "ExecMainStatus": "2",
                               "NRestarts": "0"}, missing["show"]
    assert "/usr/local/etc/snapfs/gamma.conf: No such file or directory; nothing mounted" in \
        missing["journal"]
    # The file as shipped, put back: the service starts and serves.
    assert res["fixed"]["start"]["rc"] == 0, res["fixed"]
    assert (res["fixed"]["show"]["ActiveState"], res["fixed"]["show"]["SubState"]) == \
        ("active", "running")
    assert res["fixed"]["stop"]["rc"] == 0
    assert res["after"] == {"mounts": [], "pids": []}


def test_a_configuration_error_is_not_restarted(booted):
    res = step(booted, "configuration_errors_do_not_restart")
    for case, status in (("usage", "2"), ("refused", "1")):
        show = res[case]["show"]
        assert res[case]["start"]["rc"] != 0
        assert (show["ActiveState"], show["Result"], show["ExecMainStatus"],
                show["NRestarts"]) == ("failed", "exit-code", status, "0"), (case, res[case])
    assert "'lots'" in res["usage"]["journal"], res["usage"]["journal"]
    assert "/run/snapfs-audit-link is a symbolic link: the daemon follows no link on a path it " \
        "trusts" in res["refused"]["journal"], res["refused"]["journal"]
    # Beside it, the same refusal without RestartPreventExitStatus= is retried.
    assert int(res["refused_restarted"]["show"]["NRestarts"]) >= 1
    assert res["after"] == {"mounts": [], "pids": []}


def test_the_read_view_dropin_makes_its_directory_and_survives_kill_9(booted):
    res = step(booted, "read_view_dropin")
    assert res["view_dir_before"] is False
    assert res["start"]["rc"] == 0, res["start"]
    assert res["main"]["mounts"] == ["fuse.snapfs"] and res["view"]["mounts"] == ["fuse.snapfs"]
    assert res["view"]["flags"].startswith("ro,")
    assert res["digest"] in res["view"]["listing"]
    assert res["view_write"] == "EROFS"
    # kill -9: both mounts are back, one each, with the same snapshots.
    assert res["restarted"]["main"]["mounts"] == ["fuse.snapfs"], res["restarted"]
    assert res["restarted"]["view"]["mounts"] == ["fuse.snapfs"], res["restarted"]
    assert res["restarted"]["view"]["listing"] == res["view"]["listing"]
    stopped = res["stopped"]
    assert stopped["stop"]["rc"] == 0 and stopped["exit"] == [["success", "exited", "0"]], \
        stopped
    assert stopped["mounts"] == {"/run/snapfs": [], "/run/snapfs-view": []}
    assert stopped["pids"] == []


def test_two_template_instances_run_side_by_side(booted):
    res = step(booted, "template_instances")
    assert res["start"]["rc"] == 0, res["start"]
    for unit, show in res["show"].items():
        assert (show["ActiveState"], show["SubState"]) == ("active", "running"), unit
    pids = {s["MainPID"] for s in res["show"].values()}
    assert len(pids) == 2
    # Published in alpha: served, stored and logged there only.
    assert res["alpha"]["mounts"] == ["fuse.snapfs"] and res["beta"]["mounts"] == ["fuse.snapfs"]
    assert res["alpha"]["listing"] == [res["digest"]] and res["beta"]["listing"] == []
    assert res["stores"] == {"snapfs@alpha.service": True, "snapfs@beta.service": False}
    assert res["logs"] == {"alpha": 1, "beta": 0}
    # The shipped logrotate snippet reloads instances too.
    assert "audit-alpha.log.1" in res["rotated"], res["rotated"]
    assert res["reloaded"]
    assert res["stop"]["rc"] == 0
    assert all(s == {"ActiveState": "inactive", "Result": "success"}
               for s in res["after"]["shows"].values()), res["after"]
    assert all(e == [["success", "exited", "0"]] for e in res["after"]["exits"].values()), \
        res["after"]
    assert res["after"]["mounts"] == [] and res["after"]["pids"] == []
