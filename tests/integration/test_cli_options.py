# SPDX-License-Identifier: MIT
"""Each command's options are declared once, in its table (struct cli_option, cli/cmd-*.c):
getopt_long's table, --help's rows and `snapfs help --options CMD` come from it. This file
holds the rest to that list: --help names exactly the declared options, the man page's section
of each command has an item for every option of the command's own and none it does not take,
and the bash completion's value lists (what follows --kind, --mount, --sign...) say of each
option what its declaration says. mount's options are the daemon's table (fs/config/options.c),
which test_options_doc.py holds to the man page."""
import re

import pytest

from snaptest import ROOT, SNAPFS, run

MAN = ROOT / "cli" / "snapfs.1"
COMPLETION = ROOT / "dist" / "snapfs-completion.bash"
# What every client command shares: named once in the man page's DESCRIPTION.
TRUST = {"owner", "insecure-own-mount", "trust-user-namespace"}
# Named in the section, as an item or in its text (the synopsis included).
COMMON = {"mount", "json", "kind"}


def commands():
    listed = run(SNAPFS, "--help").stdout.split("Commands:\n", 1)[1].split("\n\n")[0]
    return [line.split()[0] for line in listed.splitlines()]


COMMANDS = commands()
CLIENT = [c for c in COMMANDS if c != "mount"]


def declared(cmd):
    """{name: (kind, [words])} from snapfs help --options CMD."""
    r = run(SNAPFS, "help", "--options", cmd)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    out = {}
    for line in r.stdout.splitlines():
        name, kind, *words = line.split(" ")
        assert re.fullmatch(r"--[a-z][a-z0-9-]*", name) and name[2:] not in out, line
        assert kind in ("flag", "value", "file", "dir", "choice"), line
        assert bool(words) == (kind == "choice"), line
        out[name[2:]] = (kind, words)
    return out


def help_rows(cmd):
    """The long options --help's rows name (a row's label: up to two spaces)."""
    names = []
    for line in run(SNAPFS, cmd, "--help").stdout.splitlines():
        m = re.match(r"^ {2,6}(-\w, )?(--[a-z].*?)(?: {2,}|$)", line)
        if m:
            names += re.findall(r"--([a-z][a-z0-9-]*)", m.group(2))
    return names


def man_sections():
    """{command: text of its .SS sections (scope's three as one)}."""
    page = MAN.read_text().replace("\\-", "-")
    out = {}
    for sec in re.split(r"^\.S[SH] ", page, flags=re.M):
        if sec.startswith("snapfs "):
            cmd = sec.split()[1]
            out[cmd] = out.get(cmd, "") + sec
    return out


def man_items(text):
    """The options the .TP items of a section name."""
    items = re.findall(r"^\.TP\n(\.[A-Z]+ .*)$", text, re.M)
    return {n for it in items for n in re.findall(r"--([a-z][a-z0-9-]*)", it)}


def test_the_list_is_the_command_s_and_refuses_what_is_no_command():
    assert declared("rm") == {
        "mount": ("dir", []), "owner": ("value", []), "insecure-own-mount": ("flag", []),
        "trust-user-namespace": ("flag", []), "all": ("flag", []), "dry-run": ("flag", []),
        "json": ("flag", []), "help": ("flag", [])}
    assert declared("ls")["kind"] == ("choice", ["content", "signature", "manifest"])
    r = run(SNAPFS, "help", "--options", "nosuch")
    assert r.returncode == 2 and r.stdout == "" and r.stderr == (
        "snapfs help: unknown command 'nosuch'; run 'snapfs help' for the list\n")
    r = run(SNAPFS, "help", "--options")
    assert r.returncode == 2 and r.stderr.startswith("snapfs help: --options: which COMMAND?")


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_shows_every_declared_option_once_and_no_other(cmd):
    rows = help_rows(cmd)
    assert len(rows) == len(set(rows)), rows
    assert set(rows) == set(declared(cmd))


@pytest.mark.parametrize("cmd", CLIENT)
def test_the_man_page_has_an_item_for_each_option_and_none_the_command_lacks(cmd):
    sections = man_sections()
    assert cmd in sections, f"no section for snapfs {cmd}"
    text, options = sections[cmd], declared(cmd)
    items = man_items(text)
    stale = items - set(options)
    assert not stale, f"items for options snapfs {cmd} lacks: {stale}"
    own = set(options) - TRUST - COMMON - {"help"}
    assert not own - items, f"snapfs {cmd}: no item for {own - items}"
    for name in COMMON & set(options):
        assert f"--{name}" in text, f"snapfs {cmd}: --{name} not in its section"
    if TRUST & set(options):
        assert TRUST <= set(options)


def test_the_man_page_lists_the_trust_options_every_client_command_takes():
    page = MAN.read_text().replace("\\-", "-")
    desc = page.split("\n.SH DESCRIPTION\n", 1)[1].split("\n.SH ", 1)[0]
    listed = desc.split("Every client command takes these three options:\n", 1)[1]
    assert man_items(listed.split("\n.P", 1)[0].split("\n.SH", 1)[0]) >= TRUST


def completion_cases():
    """{option: what the completion's `case $prev` does after it}: a word list, "dir",
    "file" or "value"."""
    script = COMPLETION.read_text()
    block = script.split("    case $prev in\n", 1)[1].split("\n    esac\n", 1)[0]
    out = {}
    for m in re.finditer(r"^    (--[^)]*)\)(.*?)(?=^    --|\Z)", block, re.M | re.S):
        pats = [p.strip() for p in m.group(1).replace("\\\n", "").split("|")]
        body = m.group(2)
        w = re.search(r'words="([^"]*)"', body)
        what = (w.group(1).split() if w else "dir" if "compgen -d" in body
                else "file" if "compgen -f" in body else "value")
        for p in pats:
            out[p] = what
    return out


def completion_of(option, cases):
    for pat, what in cases.items():
        if pat == option or (pat.endswith("*") and option.startswith(pat[:-1])):
            return what
    return None


@pytest.mark.parametrize("cmd", CLIENT)
def test_the_completion_offers_for_each_value_what_its_declaration_says(cmd):
    cases = completion_cases()
    for name, (kind, words) in declared(cmd).items():
        got = completion_of("--" + name, cases)
        if name == "scope":
            # The scope names of the mount: completed apart (_snapfs_scopes).
            assert got is None and "--scope" in COMPLETION.read_text()
        elif kind == "flag":
            assert got is None, f"snapfs {cmd} --{name} is a flag, completed as {got}"
        elif kind == "choice":
            assert got == words, f"snapfs {cmd} --{name}: {got} for {words}"
        else:
            assert got == kind, f"snapfs {cmd} --{name} takes a {kind}, completed as {got}"


def test_the_completion_names_no_option_that_no_command_declares():
    every = {n for cmd in COMMANDS for n in declared(cmd)}
    for pat in completion_cases():
        if pat.endswith("*"):
            assert any(n.startswith(pat[2:-1]) for n in every), pat
        else:
            assert pat[2:] in every, f"the completion completes {pat}, which no command takes"
