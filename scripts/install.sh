#!/usr/bin/env bash
# Builds a release of snapfs and installs it under PREFIX (default /usr/local): the snapfs
# command, libsnapfs (header, library, pkg-config file), the man page, the Python client (in
# the directory of sys.path that /usr/bin/python3 reads for that prefix, carrying the
# library's absolute path), the systemd units (PREFIX/lib/systemd/system) and the logrotate
# snippet (/etc/logrotate.d/snapfs whatever the prefix: logrotate reads nothing else).
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

if [ -f "$dir/meson-private/coredata.dat" ]; then
  # "meson setup" on a configured directory only says "Directory already configured" and
  # keeps the old prefix: reconfigure it with this one.
  meson setup --reconfigure "$dir" --prefix="$prefix" --buildtype=release "$@" >/dev/null
else
  meson setup "$dir" --prefix="$prefix" --buildtype=release "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
meson install -C "$dir" --quiet --no-rebuild
[ -n "${DESTDIR:-}" ] || "${LDCONFIG:-ldconfig}"
echo "snapfs installed under ${DESTDIR:-}$prefix"
