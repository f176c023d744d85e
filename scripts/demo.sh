#!/usr/bin/env bash
# The main job, end to end on a fresh machine: install dependencies, build, and show snapfs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
meson setup build --buildtype=debugoptimized >/dev/null 2>&1 || meson setup --reconfigure build >/dev/null
ninja -C build >/dev/null
build/cli/snapfs --version
