#!/usr/bin/env bash
# Builds a release of snapfs and installs it under PREFIX (default /usr/local): the snapfs
# command, libsnapfs (header, library, pkg-config file), the man page, the Python client (in
# the directory of sys.path that /usr/bin/python3 reads for that prefix, carrying the
# library's absolute path, and as a wheel under PREFIX/share/snapfs/python), the Node.js
# package (PREFIX/LIBDIR/nodejs/snapfs), the systemd units (PREFIX/lib/systemd/system), the
# logrotate snippet (/etc/logrotate.d/snapfs whatever the prefix: logrotate reads nothing
# else) and snapfs.service's config file, SYSCONFDIR/snapfs/snapfs.conf (PREFIX/etc, or /etc
# for the prefix /usr), only where there is none: an operator's file is never overwritten.
# A library directory the loader does not search gets a file in /etc/ld.so.conf.d, so that
# every client finds libsnapfs.so.0 there.
#
#   scripts/install.sh [PREFIX [MESON OPTIONS...]]   build and install (as root for a
#                                                     system prefix), e.g.
#                                                     -Dsystemdsystemunitdir=DIR
#   scripts/install.sh --uninstall     remove what every install from this checkout's build
#                                      directory put in place (with none, name a snapfs
#                                      installed otherwise, and why it is not cleaned)
#
# Each run configures exactly the options it is given: a run with other -D options than the
# last one starts from a fresh build directory, so none of the last run's options stays; a
# run with another PREFIX reconfigures the directory (a plain `meson setup` would keep the
# old prefix). Every install is recorded in a manifest (BUILD.installs/: each file with its
# SHA-256, each directory the install made), which --uninstall goes through, install by
# install: it removes each file still as installed and the directories left empty, keeps
# and names a file changed since, and says which prefix it cannot clean and why.
# The build directory is $SNAPFS_INSTALL_BUILD (default build-release); $DESTDIR stages the
# install elsewhere, as for meson install. After installing, ldconfig refreshes the loader's
# cache ($LDCONFIG names another command, e.g. true to skip it).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${SNAPFS_INSTALL_BUILD:-build-release}
log=$dir/meson-logs/install-log.txt
manifests=$dir.installs
# The -D options of the last run that configured $dir.
optrec=$dir/snapfs-install-options

if [ "${1:-}" = --uninstall ]; then
  [ $# -eq 1 ] || { echo "usage: scripts/install.sh --uninstall" >&2; exit 2; }
  shopt -s nullglob
  found=("$manifests"/*.manifest)
  if [ ${#found[@]} -eq 0 ]; then
    echo "scripts/install.sh: nothing installed from $dir (no manifest in $manifests)" >&2
    # A snapfs this checkout has no record of (installed from another checkout or build
    # directory, by a package, or its manifests gone with the build, e.g. git clean -x): named
    # with why it is not cleaned here, never guessed at.
    { command -v snapfs || true; ldconfig -p 2>/dev/null |
        sed -n 's|^[[:space:]]*libsnapfs\.so\.0 (.*) => \(/.*\)$|\1|p'; } |
      while IFS= read -r f; do
        case $(realpath -m "$f") in "$PWD"/*) continue ;; esac  # this checkout's own builds
        if pkg=$(dpkg-query -S "$f" 2>/dev/null); then
          echo "scripts/install.sh: cannot clean $f: the Debian package ${pkg%%:*} installed" \
            "it (apt-get remove ${pkg%%:*})" >&2
        else
          echo "scripts/install.sh: cannot clean $f: no manifest of it here (installed from" \
            "another checkout or build directory, or its manifest was removed with the" \
            "build); run scripts/install.sh --uninstall where it was installed from" >&2
        fi
      done
    exit 1
  fi
  rc=0
  for m in "${found[@]}"; do
    # One install: its files (removed when still as installed), then the directories it
    # made, deepest first, when empty. A file changed since is the operator's: kept, named.
    python3 - "$m" <<'PY' || rc=1
import hashlib, os, sys
manifest = sys.argv[1]
prefix, files, dirs = "?", [], []
with open(manifest) as f:
    for line in f:
        kind, _, rest = line.rstrip("\n").partition(" ")
        if kind == "prefix":
            prefix = rest
        elif kind in ("file", "link"):
            files.append((kind, *rest.split(" ", 1)))
        elif kind == "dir":
            dirs.append(rest)
where = prefix
def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()
kept, failed, removed = [], [], 0
for kind, what, path in files:
    try:
        if kind == "link":
            if os.path.islink(path) and os.readlink(path) == what:
                os.unlink(path)
                removed += 1
            elif os.path.lexists(path):
                kept.append(path)
            continue
        if not os.path.lexists(path):
            continue
        if os.path.islink(path) or not os.path.isfile(path) or sha(path) != what:
            kept.append(path)
            continue
        os.unlink(path)
        removed += 1
        if path.endswith(".py"):
            # What python3 compiled from it is no file of the install.
            cache = os.path.join(os.path.dirname(path), "__pycache__")
            stem = os.path.basename(path)[:-3] + "."
            for c in os.listdir(cache) if os.path.isdir(cache) else ():
                if c.startswith(stem) and c.endswith(".pyc"):
                    os.unlink(os.path.join(cache, c))
            if os.path.isdir(cache) and not os.listdir(cache):
                os.rmdir(cache)
    except OSError as e:
        failed.append(f"{path}: {e.strerror}")
for d in sorted(dirs, key=len, reverse=True):
    try:
        os.rmdir(d)
    except OSError:
        pass  # not empty (another's files, or what was kept), or gone already
for path in kept:
    print(f"kept {path}: changed since it was installed")
if failed:
    print(f"scripts/install.sh: cannot clean {where}: " + "; ".join(failed[:3]) +
          (" (run as root)" if os.geteuid() else ""), file=sys.stderr)
    sys.exit(1)
os.unlink(manifest)
print(f"removed {removed} files installed under {where}")
PY
  done
  [ -n "${DESTDIR:-}" ] || "${LDCONFIG:-ldconfig}"
  [ "$rc" -eq 0 ] || exit 1
  rm -f "$log"
  rmdir "$manifests" 2>/dev/null || true
  echo "snapfs uninstalled"
  exit 0
fi

prefix=${1:-/usr/local}
case $prefix in
  /*) ;;
  *) echo "scripts/install.sh: PREFIX must be an absolute path: $prefix" >&2; exit 2 ;;
esac
[ $# -eq 0 ] || shift
for o in "$@"; do
  case $o in
    -D*=*) ;;
    *) echo "scripts/install.sh: not a meson option (-Dname=value): $o" >&2; exit 2 ;;
  esac
done

# A reconfigure keeps every -D of the last run that this one does not name. This project's
# own options (meson_options.txt) change no compile command: each one not given here is set
# back to its default. Meson's own (-Dlibdir=, -Db_...) may: when those differ from the last
# run's, the build starts from a fresh directory instead.
# (A command substitution, not a process substitution: its failure stops the script.)
defaults=$(meson introspect --buildoptions meson.build)
reset_text=$(
  printf '%s' "$defaults" | python3 -c '
import json, sys
given = {a[2:].split("=", 1)[0] for a in sys.argv[1:]}
for o in json.load(sys.stdin):
    if o["section"] == "user" and o["name"] not in given and o["name"] != "install_config":
        name, v = o["name"], o["value"]
        print(f"-D{name}=" + (str(v).lower() if isinstance(v, bool) else str(v)))
' "$@")
resets=()
[ -z "$reset_text" ] || mapfile -t resets <<<"$reset_text"
builtin=$(printf '%s\n' "$@" | grep -v -E "^-D($(printf '%s' "$defaults" |
  python3 -c 'import json, sys; print("|".join(o["name"] for o in json.load(sys.stdin) if o["section"] == "user"))'))=" || true)
# meson would install the config file over the operator's: this script installs it below.
if [ -f "$dir/meson-private/coredata.dat" ] && [ "$(cat "$optrec" 2>/dev/null)" = "$builtin" ]; then
  # "meson setup" on a configured directory only says "Directory already configured" and
  # keeps the old prefix: reconfigure it with this one.
  meson setup --reconfigure "$dir" --prefix="$prefix" --buildtype=release "$@" \
    ${resets[@]+"${resets[@]}"} -Dinstall_config=false >/dev/null
else
  rm -rf "$dir"
  meson setup "$dir" --prefix="$prefix" --buildtype=release "$@" -Dinstall_config=false >/dev/null
fi
printf '%s\n' "$builtin" >"$optrec"
ninja -C "$dir" >/dev/null

# The directories this install will make: each installed path's parents that are not there
# yet (the manifest's "dir" lines).
made=$(meson introspect "$dir" --installed | DESTDIR=${DESTDIR:-} python3 -c '
import json, os, sys
dest = os.environ["DESTDIR"]
seen = set()
for path in json.load(sys.stdin).values():
    d = os.path.dirname(path)
    while d not in ("/", "") and d not in seen:
        seen.add(d)
        if not os.path.exists(dest + d):
            print(dest + d)
        d = os.path.dirname(d)
')
meson install -C "$dir" --quiet --no-rebuild

# The manifest of this install: one per destination (DESTDIR and prefix), replaced by a new
# install to the same one.
mkdir -p "$manifests"
key=$(printf '%s' "${DESTDIR:-}$prefix" | sha256sum | cut -c1-16)
manifest=$manifests/$key.manifest
# The manifest in place: this run's record, and what an earlier install to the same
# destination put in place and this one did not (a snippet of a -D directory this run does
# not name, the config file kept), and the directories it made.
record_manifest() {
  [ -f "$manifest.new" ] || return 0
  python3 - "$manifest.new" "$manifest" <<'PY'
import os, sys
new, old = sys.argv[1], sys.argv[2]
with open(new) as f:
    lines = f.read().splitlines()
paths = {line.split(" ", 2)[2] for line in lines if line.startswith(("file ", "link "))}
have = set(lines)
if os.path.exists(old):
    with open(old) as f:
        for line in f.read().splitlines():
            if line.startswith(("file ", "link ")) and line.split(" ", 2)[2] not in paths or \
                    line.startswith("dir ") and line not in have:
                lines.append(line)
                have.add(line)
with open(new, "w") as f:
    f.write("\n".join(lines) + "\n")
PY
  mv "$manifest.new" "$manifest"
}
# A run that stops half-way (a loader file it may not write) still records what it put in
# place, so that --uninstall removes it.
trap record_manifest EXIT
{
  echo "prefix ${DESTDIR:-}$prefix"
  grep '^/' "$log" | while IFS= read -r f; do
    if [ -L "$f" ]; then echo "link $(readlink "$f") $f"
    elif [ -f "$f" ]; then echo "file $(sha256sum <"$f" | cut -c1-64) $f"
    elif [ -d "$f" ]; then echo "dir $f"  # meson made it
    fi
  done
  [ -z "$made" ] || printf 'dir %s\n' "$made"
} >"$manifest.new"

# SYSCONFDIR/snapfs/snapfs.conf, as the installed units name it (dist/meson.build).
{ read -r sysconfdir; read -r libdir; } < <(meson introspect "$dir" --buildoptions |
  python3 -c 'import json, os, sys
o = {b["name"]: b["value"] for b in json.load(sys.stdin)}
print(os.path.join(o["prefix"], o["sysconfdir"]))
print(os.path.join(o["prefix"], o["libdir"]))')
[ -n "$libdir" ] || { echo "scripts/install.sh: cannot read the build's options" >&2; exit 2; }
conf=${DESTDIR:-}$sysconfdir/snapfs/snapfs.conf
if [ -e "$conf" ] || [ -L "$conf" ]; then
  # Ours from an earlier install to here (its record stays, merged below: --uninstall
  # compares), an operator's, or anything else: left as it is.
  echo "kept $conf (already there)"
else
  mkdir -p -v -m 0755 "$(dirname "$conf")" |
    sed -n "s/^mkdir: created directory '\(.*\)'$/dir \1/p" >>"$manifest.new"
  install -m 0644 dist/snapfs.conf "$conf"
  echo "file $(sha256sum <"$conf" | cut -c1-64) $conf" >>"$manifest.new"
  echo "installed $conf"
fi

# A library directory the loader does not search: told where libsnapfs.so.0 is, so that the
# Python client installed with pip and the Node.js addon find it under any prefix.
if [ -z "${DESTDIR:-}" ]; then
  case $libdir in
    /lib | /usr/lib | /usr/local/lib | /lib/*-linux-gnu* | /usr/lib/*-linux-gnu* | \
      /usr/local/lib/*-linux-gnu*) ;;
    *)
      ldconf=/etc/ld.so.conf.d/snapfs$(printf '%s' "$prefix" | tr -c 'A-Za-z0-9\n' '-').conf
      if ! { echo "$libdir" >"$ldconf"; } 2>/dev/null; then
        echo "scripts/install.sh: cannot write $ldconf, so the loader will not find" \
          "$libdir/libsnapfs.so.0 (run as root); what is installed is recorded:" \
          "scripts/install.sh --uninstall removes it" >&2
        exit 1
      fi
      echo "file $(sha256sum <"$ldconf" | cut -c1-64) $ldconf" >>"$manifest.new"
      echo "installed $ldconf (the loader searches $libdir)"
      ;;
  esac
fi
record_manifest
trap - EXIT
[ -n "${DESTDIR:-}" ] || "${LDCONFIG:-ldconfig}"
echo "snapfs installed under ${DESTDIR:-}$prefix"
