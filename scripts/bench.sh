#!/usr/bin/env bash
# Benchmarks, each measured side by side with its baseline in the same run and reported as
# medians and ratios (never a timed assertion in a test). Builds a release build in
# build-bench/ and runs every section, or only those named:
#
#   sudo scripts/bench.sh [SECTION...]      sections: see "sections=" below
#
# Adding a section: write a function section_<name> that prints one table, and append
# <name> to the sections array. Each section runs its own mounts inside
# `unshare -m --propagation private`, so nothing it mounts outlives it.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
builddir="$top/build-bench"

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/bench.sh: run as root (the benchmarks mount in private namespaces)" >&2
  exit 2
fi

build() {
  scripts/deps.sh
  if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Dbuildtype=release >/dev/null
  fi
  ninja -C "$builddir" >/dev/null
}

# mountcheck: latency of one check of a compliant tmpfs with 100, 1,000 and 10,000 other
# mounts in the namespace; statmount backend vs the mountinfo (libmount) baseline.
section_mountcheck() {
  echo "== mountcheck: one check, N other mounts; medians in ms, ratio = mountinfo/statmount"
  unshare -m --propagation private -- "$builddir/tests/bench/bench_mountcheck" 100 1000 10000
}

sections=(mountcheck)

build
echo "snapfs bench: $(uname -r), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
selected=("$@")
[ ${#selected[@]} -gt 0 ] || selected=("${sections[@]}")
for s in "${selected[@]}"; do
  if ! declare -F "section_$s" >/dev/null; then
    echo "scripts/bench.sh: unknown section '$s' (have: ${sections[*]})" >&2
    exit 2
  fi
  echo
  "section_$s"
done
