# SPDX-License-Identifier: MIT
"""The daemon's table of options (fs/config/options.c) is the one place its options, defaults and
ranges are written: `snapfs mount --help` is made from it at run time, and this file checks
what is written by hand or generated once against it, as tests/helpers/optdump dumps it:
the man page's option list (cli/snapfs.1), docs/design.md's limits table,
dist/snapfs.conf.example (equal to what the table makes, and to --help and the man page), and
dist/snapfs.conf, the config file snapfs.service reads (the same, with the service's settings
set). No mount."""
import json
import re
import subprocess

import pytest

from snaptest import BUILD, ROOT, SNAPFS, run

OPTDUMP = BUILD / "tests" / "helpers" / "optdump"
MAN = ROOT / "cli" / "snapfs.1"
DESIGN = ROOT / "docs" / "design.md"
EXAMPLE = ROOT / "dist" / "snapfs.conf.example"
SERVICE_CONF = ROOT / "dist" / "snapfs.conf"
UNIT_IN = ROOT / "dist" / "snapfs.service.in"
# What snapfs.service needs that is not a default: everything its command line said before
# the config file existed. The unit passes nothing else but --foreground and --config.
SERVICE_SETTINGS = {"store": "/var/lib/snapfs", "runtime-store": "/run/snapfs-scopes",
                    "audit-log": "/var/log/snapfs/audit.log", "allow-other": "yes",
                    "replace-stale": "yes"}


def table():
    r = run(OPTDUMP, "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["options"]


OPTIONS = table()
BY_NAME = {o["name"]: o for o in OPTIONS}


def words(text):
    return " ".join(text.split())


def help_rows():
    """--help's rows: {name: the row's text, wrapped lines joined}."""
    r = run(SNAPFS, "mount", "--help")
    assert r.returncode == 0, r.stderr
    rows, current = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"(?:  -\w, |      )--([a-z-]+)", line)
        if m:
            current = m.group(1)
            rows[current] = line
        elif current and line.startswith(" " * 29):
            rows[current] += " " + line.strip()
        else:
            current = None
    return {k: words(v) for k, v in rows.items()}


def man_items():
    """The man page's items of `snapfs mount`, rendered: {option name: its text}."""
    r = subprocess.run(["groff", "-man", "-Tutf8", "-rLL=3000n", "-rHY=0", "-P-c", "-P-b",
                        "-P-u", str(MAN)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    # The subsection (indented 3), not the synopsis.
    start = re.search(r"^   snapfs mount \[OPTIONS\] MOUNTPOINT$", text, re.M).end()
    section = text[start:re.search(r"^   snapfs check ", text[start:], re.M).start() + start]
    items, heads = {}, list(re.finditer(r"^ {7}(-.*)$", section, re.M))
    for i, m in enumerate(heads):
        body = section[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(section)]
        for name in re.findall(r"--([a-z][a-z-]*)", m.group(1)):
            items[name] = words(m.group(1) + " " + body)
    return items


def test_the_table_has_every_option_once_with_what_each_kind_needs():
    assert len(BY_NAME) == len(OPTIONS) > 20
    for o in OPTIONS:
        assert (o["metavar"] is None) == (o["arg"] == "flag"), o
        assert o["help"] and not o["help"].endswith("."), o


def test_help_lists_every_option_with_its_default_and_range():
    rows = help_rows()
    assert set(rows) == set(BY_NAME)
    for name, o in BY_NAME.items():
        row = rows[name]
        if o["metavar"]:
            assert f"--{name} {o['metavar']}" in row, row
        if o["default"]:
            assert f"default: {o['default']}" in row, row
        if o["max"]:
            assert f"at most {o['max']}" in row, row


def test_the_man_page_has_an_item_for_every_option_and_no_other():
    items = man_items()
    assert set(items) == set(BY_NAME), set(items) ^ set(BY_NAME)
    for name, o in BY_NAME.items():
        item = items[name]
        if o["metavar"]:
            assert f"--{name} {o['metavar']}" in item, item
        if o["default"]:
            assert o["default"] in item, (name, o["default"], item)
        if o["max"]:
            assert f"at most {o['max']}" in item, (name, o["max"], item)


def limits_rows():
    text = DESIGN.read_text()
    section = text[text.index("\n## Limits\n"):]
    section = section[:section.index("\n## ", 1)]
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]
    assert rows[0] == ["limit", "option", "default", "at most", "past it"], rows[0]
    return rows[1:]


def test_the_limits_of_the_design_are_the_table_s():
    seen = set()
    for limit, option, default, most, _ in limits_rows():
        m = re.fullmatch(r"`--([a-z-]+)`", option)
        if not m:
            assert option == "—", option
            continue
        o = BY_NAME[m.group(1)]
        seen.add(o["name"])
        assert o["limit"], f"{o['name']} is in the limits table but not a limit of the table"
        assert default == o["default"], (o["name"], default, o["default"])
        assert most == (o["max"] or "—"), (o["name"], most, o["max"])
    assert seen == {o["name"] for o in OPTIONS if o["limit"]}


def test_the_example_file_is_what_the_table_makes():
    r = run(OPTDUMP, "example")
    assert r.returncode == 0, r.stderr
    assert EXAMPLE.read_text() == r.stdout, \
        "dist/snapfs.conf.example is stale: build/tests/helpers/optdump example > it"


def example_keys():
    """{key: (value or "", the comment above it, joined)} of the example's commented-out
    KEY = [VALUE] lines."""
    keys, comment = {}, []
    for line in EXAMPLE.read_text().splitlines():
        m = re.fullmatch(r"#([a-z-]+) =(?: (.*))?", line)
        if m:
            keys[m.group(1)] = (m.group(2) or "", words(" ".join(comment)))
            comment = []
        elif line.startswith("# "):
            comment.append(line[2:])
        else:
            comment = []
    return keys


def test_the_example_has_every_key_a_file_takes_and_agrees_with_help_and_the_man_page():
    keys, rows, items = example_keys(), help_rows(), man_items()
    assert set(keys) == {o["name"] for o in OPTIONS if o["in_file"]}
    for key, (value, comment) in keys.items():
        o = BY_NAME[key]
        default = o["default"] or ""
        if o["arg"] == "flag":
            assert value == "no", (key, value)
        elif value:
            # A value given as the default is the very default --help and the man page give.
            assert value == default, (key, value, default)
        elif default:
            assert f"default: {default}" in comment, (key, comment)
        if default:
            assert f"default: {default}" in rows[key], rows[key]
            assert default in items[key], items[key]


@pytest.mark.parametrize("name", [o["name"] for o in OPTIONS if o["command_line_only"]])
def test_what_only_the_command_line_takes_is_in_no_file_and_no_o_word(name):
    assert name not in example_keys()
    assert not BY_NAME[name]["in_file"]


def service_settings():
    """The uncommented KEY = VALUE lines of dist/snapfs.conf, in order."""
    found = []
    for line in SERVICE_CONF.read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = (w.strip() for w in line.split("=", 1))
            found.append((key, value))
    return found


def test_the_service_s_config_file_is_the_example_with_the_service_s_settings():
    settings = service_settings()
    assert dict(settings) == SERVICE_SETTINGS and len(settings) == len(SERVICE_SETTINGS)
    args = [f"{k}={v}" for k, v in SERVICE_SETTINGS.items()]
    r = run(OPTDUMP, "example", *args)
    assert r.returncode == 0, r.stderr
    assert SERVICE_CONF.read_text() == r.stdout, \
        "dist/snapfs.conf is stale: build/tests/helpers/optdump example " + " ".join(args) + \
        " > it"
    # Every other key is there commented out, as in the example: the example's lines but the
    # set ones.
    example = [l for l in EXAMPLE.read_text().splitlines()
               if re.fullmatch(r"#([a-z-]+) =.*", l)
               and l[1:].split(" =")[0] not in SERVICE_SETTINGS]
    commented = [l for l in SERVICE_CONF.read_text().splitlines()
                 if re.fullmatch(r"#([a-z-]+) =.*", l)]
    assert commented == example


def test_optdump_refuses_a_setting_that_names_no_key():
    r = run(OPTDUMP, "example", "foreground=yes")
    assert r.returncode == 2 and "names no key" in r.stderr
    r = run(OPTDUMP, "example", "max-bytes=1M")
    assert r.returncode == 0 and "\nmax-bytes = 1M\n" in r.stdout


def test_the_unit_passes_only_what_the_file_cannot_say():
    """The command line wins over the file: anything else on the unit's ExecStart= could not
    be changed in the file."""
    lines = [l for l in UNIT_IN.read_text().splitlines() if l.startswith("ExecStart=")]
    assert lines == ["ExecStart=@bindir@/snapfs mount --foreground --config @config@ "
                     "@mountpoint@"], lines
