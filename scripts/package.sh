#!/usr/bin/env bash
# Builds the Debian package of snapfs with Debian's own tooling (dpkg-buildpackage; debhelper
# driving meson) from this checkout, then checks it with lintian: any error fails the build.
#
#   scripts/package.sh [OUTDIR]    default OUTDIR: build-deb; the last line printed is the
#                                  path of the .deb
#
# The package's files live in dist/debian; the debian/ directory is assembled in a build copy
# (OUTDIR/src/snapfs-VERSION: the checkout's tracked and untracked, not ignored, files), with
# a changelog entry whose version is meson.build's and whose date is the last commit's (two
# builds of one commit say the same). $DEBFULLNAME and $DEBEMAIL name who built it
# (default: dist/debian/control's maintainer). DEB_BUILD_OPTIONS passes through: nocheck
# skips the unit tests at build time. SNAPFS_PACKAGE_VERSION=X.Y.Z packages the checkout as
# version X.Y.Z: every file that carries the version says it in the build copy (the binary's
# --version and status, the library, the clients, the man page, the package), which is how
# test_package.py builds a second package to upgrade to. Needs what scripts/deps.sh --test
# installs (debhelper, dh-python, lintian, and the build dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

out=${1:-build-deb}
[ $# -le 1 ] || { echo "usage: scripts/package.sh [OUTDIR]" >&2; exit 2; }
case $out in /*) ;; *) out=$top/$out ;; esac
git rev-parse --git-dir >/dev/null 2>&1 ||
  { echo "scripts/package.sh: not a git checkout: it packages the checkout's files" >&2; exit 2; }

version=$(meson introspect --projectinfo meson.build |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
from=$version
version=${SNAPFS_PACKAGE_VERSION:-$version}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
  echo "scripts/package.sh: SNAPFS_PACKAGE_VERSION: '$version' is not X.Y.Z (the library's" \
    "version is the project's)" >&2
  exit 2
}
src=$out/src/snapfs-$version

rm -rf "$out/src"
mkdir -p "$src"
# Files that exist, so a tracked file deleted in the working tree is simply not there.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done | tar --null -T - -cf - | tar -xf - -C "$src"
cp -a dist/debian "$src/debian"
# Each place that says the version, and how many times: a file that changed shape fails the
# build rather than ship two versions.
if [ "$version" != "$from" ]; then
  python3 - "$src" "$from" "$version" <<'PY'
import sys
src, old, new = sys.argv[1:]
places = {"meson.build": ("  version: '{}',", 1),
          "client/python/pyproject.toml": ('version = "{}"', 1),
          "client/python/snapfs_client/_abi.py": ('__version__ = "{}"', 1),
          "client/node/package.json": ('"version": "{}"', 1),
          "client/node/package-lock.json": ('"version": "{}"', 2),
          "cli/snapfs.1": ('"snapfs {}"', 1)}
for path, (form, count) in places.items():
    with open(f"{src}/{path}") as f:
        text = f.read()
    found = text.count(form.format(old))
    if found != count:
        sys.exit(f"scripts/package.sh: {path} says version {old} {found} times, not {count}")
    with open(f"{src}/{path}", "w") as f:
        f.write(text.replace(form.format(old), form.format(new)))
PY
fi
# The Node.js package is built by the tsc that package-lock.json pins (scripts/deps.sh puts it
# in client/node/node_modules, which git ignores): the build copy gets it too.
if [ -d client/node/node_modules ]; then
  cp -a client/node/node_modules "$src/client/node/node_modules"
fi

maintainer=$(sed -n 's/^Maintainer: //p' dist/debian/control)
if [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then
  maintainer="$DEBFULLNAME <$DEBEMAIL>"
fi
when=$(date -R -u -d "@$(git log -1 --format=%ct)")
cat >"$src/debian/changelog" <<EOF
snapfs ($version) bookworm; urgency=medium

  * snapfs $version, packaged from its source tree by scripts/package.sh.

 -- $maintainer  $when
EOF

(cd "$src" && dpkg-buildpackage -b -us -uc -jauto) >"$out/build.log" 2>&1 || {
  tail -n 60 "$out/build.log" >&2
  echo "scripts/package.sh: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
}
changes=snapfs_${version}_${arch}.changes
deb=snapfs_${version}_${arch}.deb
# The package, its debug symbols (snapfs-dbgsym), the .buildinfo and the .changes naming them.
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mv "$out/src"/*.deb "$out/src"/*.buildinfo "$out/src/$changes" "$out/"

# lintian refuses to judge a package as root without saying so first; what it finds is printed
# either way, and an error fails the build.
lintian --fail-on error --allow-root "$out/$changes" >"$out/lintian.log" 2>&1 || {
  cat "$out/lintian.log" >&2
  echo "scripts/package.sh: lintian found errors" >&2
  exit 1
}
cat "$out/lintian.log"
echo "$out/$deb"
