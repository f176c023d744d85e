#!/usr/bin/env bash
# Builds a release of snapfs and installs it under PREFIX (default /usr/local): the snapfs
# command, libsnapfs (header, library, pkg-config file), the man page, the Python client (in
# the directory of sys.path that /usr/bin/python3 reads for that prefix, carrying the
# library's absolute path), the systemd units (PREFIX/lib/systemd/system), the logrotate
# snippet (/etc/logrotate.d/snapfs whatever the prefix: logrotate reads nothing else) and
# snapfs.service's config file, SYSCONFDIR/snapfs/snapfs.conf (PREFIX/etc, or /etc for the
# prefix /usr), only where there is none: an operator's file is never overwritten. --uninstall
# removes that file only if it is still the one installed (same SHA-256), and says so when it
# keeps it.
#
#   scripts/install.sh [PREFIX [MESON OPTIONS...]]   build and install (as root for a
#                                                     system prefix), e.g.
#                                                     -Dsystemdsystemunitdir=DIR
#   scripts/install.sh --uninstall     remove every file the last install put in place
#
# Run it again with another PREFIX and that prefix applies: an existing build directory is
# reconfigured, never silently kept. The build directory is $SNAPFS_INSTALL_BUILD (default
# build-release); $DESTDIR stages the install elsewhere, as for meson install. After
# installing, ldconfig refreshes the loader's cache so C programs find libsnapfs ($LDCONFIG
# names another command, e.g. true to skip it).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${SNAPFS_INSTALL_BUILD:-build-release}
log=$dir/meson-logs/install-log.txt
# The config file this script installed: "sha256 PATH", then "dir DIR" for each directory it
# made for it.
conflog=$dir/meson-logs/install-config.txt

if [ "${1:-}" = --uninstall ]; then
  [ $# -eq 1 ] || { echo "usage: scripts/install.sh --uninstall" >&2; exit 2; }
  if [ ! -f "$log" ]; then
    echo "scripts/install.sh: nothing installed from $dir" >&2
    exit 1
  fi
  # What python3 compiled from the installed client is no file of the install: remove it
  # first, so that the directories the install created are empty again.
  grep '/snapfs_client\.py$' "$log" | while read -r py; do
    rm -f "$(dirname "$py")"/__pycache__/snapfs_client.*.pyc
    rmdir "$(dirname "$py")/__pycache__" 2>/dev/null || true
  done
  # meson's uninstall removes exactly what its install log lists (files, then directories
  # left empty).
  ninja -C "$dir" uninstall >/dev/null
  rm -f "$log"
  # The config file only if nobody changed it since: an operator's settings are not ours to
  # delete. Then the directories made for it, if empty.
  if [ -f "$conflog" ]; then
    read -r sum conf <"$conflog"
    if [ -f "$conf" ] && [ ! -L "$conf" ] && echo "$sum  $conf" | sha256sum --check --status; then
      rm -f "$conf"
      sed -n 's/^dir //p' "$conflog" | tac | while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done
    elif [ -e "$conf" ] || [ -L "$conf" ]; then
      echo "kept $conf: changed since it was installed"
    fi
    rm -f "$conflog"
  fi
  [ -n "${DESTDIR:-}" ] || "${LDCONFIG:-ldconfig}"
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

# meson would install the config file over the operator's: this script installs it below.
if [ -f "$dir/meson-private/coredata.dat" ]; then
  # "meson setup" on a configured directory only says "Directory already configured" and
  # keeps the old prefix: reconfigure it with this one.
  meson setup --reconfigure "$dir" --prefix="$prefix" --buildtype=release "$@" \
    -Dinstall_config=false >/dev/null
else
  meson setup "$dir" --prefix="$prefix" --buildtype=release "$@" -Dinstall_config=false >/dev/null
fi
ninja -C "$dir" >/dev/null
meson install -C "$dir" --quiet --no-rebuild

# SYSCONFDIR/snapfs/snapfs.conf, as the installed units name it (dist/meson.build).
sysconfdir=$(meson introspect "$dir" --buildoptions |
  python3 -c 'import json, os, sys
o = {b["name"]: b["value"] for b in json.load(sys.stdin)}
print(os.path.join(o["prefix"], o["sysconfdir"]))')
conf=${DESTDIR:-}$sysconfdir/snapfs/snapfs.conf
if [ -e "$conf" ] || [ -L "$conf" ]; then
  # Ours from an earlier run (its record stays: --uninstall compares), an operator's, or
  # anything else: left as it is.
  if [ -f "$conflog" ] && ! { read -r _ old <"$conflog" && [ "$old" = "$conf" ]; }; then
    rm -f "$conflog"
  fi
  echo "kept $conf (already there)"
else
  made=$(mkdir -p -v -m 0755 "$(dirname "$conf")" | sed -n "s/^mkdir: created directory '\(.*\)'$/dir \1/p")
  install -m 0644 dist/snapfs.conf "$conf"
  { sha256sum "$conf" | sed 's/  / /'; [ -z "$made" ] || echo "$made"; } >"$conflog"
  echo "installed $conf"
fi
[ -n "${DESTDIR:-}" ] || "${LDCONFIG:-ldconfig}"
echo "snapfs installed under ${DESTDIR:-}$prefix"
