#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and run snapfs: the compiler and
# meson, the libraries, fuse3, and Node.js with the TypeScript compiler for the Node.js
# package (client/node). Idempotent: what is there already is left alone.
#
#   scripts/deps.sh          build and run snapfs (what scripts/demo.sh and install.sh need)
#   scripts/deps.sh --test   also what the test suite, the benchmark, the Debian package and
#                            the registry tests use (scripts/test.sh runs this)
#
# Says what it installed, and prints nothing else when everything is there.
set -euo pipefail
top="$(cd "$(dirname "$0")/.." && pwd)"

test=false
case ${1:-} in
  "") ;;
  --test) test=true ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac

pkgs=(
  # build
  build-essential meson ninja-build pkg-config
  # libraries: FUSE, SHA-256, mount table, JSON; cmocka: the default build has the unit tests
  libfuse3-dev fuse3 libssl-dev libmount-dev libjson-c-dev libcmocka-dev
  # running: unshare and mount (the demo's private namespace), getfattr (bindings as xattrs),
  # python3 (meson, the Python client)
  util-linux mount attr python3
)
if $test; then
  pkgs+=(
    # sanitizers and fuzzing (clang's libFuzzer and ASan runtimes)
    clang llvm libclang-rt-14-dev valgrind
    # integration tests: setpriv, procps, a sandbox, pytest (with a per-test time bound, so a
    # hang fails one test instead of stalling the run); mypy over the Python client
    python3-pytest python3-pytest-timeout python3-mypy procps psmisc bubblewrap libseccomp-dev
    # a btrfs subvolume: a directory on a device of its own that is no mount point
    # (tests/unit/test_viewpath.c)
    btrfs-progs
    # the Python client installed with pip into virtual environments (venv, and pip's wheel)
    python3-venv python3-pip-whl
    # the service tests: systemd-analyze verify on the unit, logrotate on the snippet, and a
    # rootless container runtime for the deployment recipe
    systemd logrotate podman crun uidmap
    # the units under a real systemd, booted in a container (tests/integration/test_systemd.py)
    systemd-container
    # the Debian package: Debian's own tooling builds it, lintian judges it (scripts/package.sh)
    dpkg-dev debhelper dh-python lintian
    # distribution through OCI registries (tests/integration/test_oci_registry.py; curl waits
    # for the registry of docs/distribution.md)
    skopeo docker-registry curl
    # the metrics text judged by Prometheus' own parsers (promtool; tests/integration/test_status.py)
    prometheus
    # bench chart
    gnuplot-nox
    # the man page: man -l renders cli/snapfs.1 (the tests check it renders without warnings)
    man-db groff-base
  )
fi

need=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
# Node.js and npm for the Node.js package: keep a newer Node.js if the machine has one. Its
# addon needs Node-API's headers: Debian's libnode-dev, unless the nodejs there ships them.
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -f /usr/include/node/node_api.h ] || need+=(libnode-dev)

installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | sed -n 's/^ii  *//p' | sort; }
if [ ${#need[@]} -gt 0 ]; then
  before=$(installed)
  echo "scripts/deps.sh: installing ${need[*]} (with what they depend on)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  added=$(comm -13 <(printf '%s\n' "$before") <(installed))
  echo "scripts/deps.sh: installed $(printf '%s\n' "$added" | grep -c .) Debian packages:" \
    "$(printf '%s\n' "$added" | tr '\n' ' ')"
fi

# npm packages, exactly as each package-lock.json pins them. npm ci reinstalls from scratch,
# so it runs only when the lock file changed since the last install. --ignore-scripts: no
# package needs an install script, and none gets to run one as root.
npm_ci() { # $1 = directory, $2 = what it is for
  local dir=$1
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.snapfs-installed-lock"; then
    (cd "$dir" && timeout 900 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    cp "$dir/package-lock.json" "$dir/node_modules/.snapfs-installed-lock"
    echo "scripts/deps.sh: installed $2 in ${dir#"$top"/}/node_modules:" \
      "$(cd "$dir" && npm ls --omit=optional --depth=0 --parseable 2>/dev/null |
         sed -n 's|.*/node_modules/||p' | tr '\n' ' ')"
  fi
}
# The TypeScript compiler and Node's types, which build the Node.js package.
npm_ci "$top/client/node" "what builds the Node.js package"
# The real MCP client and server of the end-to-end test (tests/integration/test_mcp_delivery.py).
if $test; then
  npm_ci "$top/tests/mcp" "the MCP client and server of the tests"
fi
