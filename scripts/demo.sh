#!/usr/bin/env bash
# The main job, end to end on a fresh Debian 12 machine: install dependencies, build, then in a
# private mount namespace mount snapfs, publish an MCP config, show its binding and the mount,
# read it back, show a refused write, check the mount, and unmount.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/demo.sh: run as root (it installs packages and mounts in a private namespace)" >&2
  exit 2
fi
scripts/deps.sh
if [ ! -d build ]; then
  meson setup build --buildtype=debugoptimized >/dev/null
fi
ninja -C build >/dev/null

exec scripts/demo-run.sh build
