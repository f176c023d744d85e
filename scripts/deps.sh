#!/usr/bin/env bash
# Installs everything a fresh Debian 12 machine lacks to build, test, benchmark and demo
# snapfs. Idempotent: packages already present are left alone by apt-get.
set -euo pipefail

pkgs=(
  # build
  build-essential meson ninja-build pkg-config
  # libraries: FUSE, SHA-256, mount table, unit tests, JSON output
  libfuse3-dev fuse3 libssl-dev libmount-dev libcmocka-dev libjson-c-dev
  # sanitizers and fuzzing (clang's libFuzzer and ASan runtimes)
  clang llvm libclang-rt-14-dev valgrind
  # integration tests: unshare/setpriv/mount, xattr tools, python, procps, sandbox
  util-linux mount attr python3 python3-pytest procps psmisc bubblewrap libseccomp-dev
  # the Python client installed with pip into a virtual environment, offline: venv, and the
  # wheels pip builds it with (/usr/share/python-wheels)
  python3-venv python3-pip-whl python3-setuptools-whl python3-wheel-whl
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

need=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
# Node.js (for the MCP end-to-end test): keep a newer one if the machine has it.
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)

if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# The real MCP client and server of the end-to-end test (tests/integration/test_mcp_delivery.py),
# exactly as pinned by tests/mcp/package-lock.json. npm ci reinstalls from scratch, so it runs
# only when the lock file changed since the last install. --ignore-scripts: no package needs
# an install script, and none gets to run one as root.
mcp="$(cd "$(dirname "$0")/.." && pwd)/tests/mcp"
if ! cmp -s "$mcp/package-lock.json" "$mcp/node_modules/.snapfs-installed-lock"; then
  (cd "$mcp" && timeout 900 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  cp "$mcp/package-lock.json" "$mcp/node_modules/.snapfs-installed-lock"
fi
