#!/usr/bin/env bash
# Benchmarks, each measured side by side with its baseline in the same run and reported as
# medians and ratios (never a timed assertion in a test). Builds a release build in
# build-bench/ and runs every section, or only those named:
#
#   scripts/bench.sh [SECTION...]           sections: latency read scale mountcheck import
#                                           scopes takeover
#
# What is measured (items of the summary table):
#   1 publish + first verified open, 256 B .. 1 MiB: snapfs vs a sealed memfd, O_TMPFILE
#     reopened read-only, and a tmpfs file renamed into place (latency section)
#   2 verified open of a 4 KiB snapshot published earlier, vs memfd and tmpfs (latency)
#   3 sequential read of 256 MiB, first read after publishing and repeated, vs tmpfs (read)
#   4 verify throughput (snap_verify_fd, what `snapfs verify` calls) vs SHA-256 in memory (read)
#   5 lookup + open with 10 vs 100,000 snapshots, and the daemon's memory per snapshot (scale;
#     it writes 2 to /proc/sys/vm/drop_caches, dropping every unused dentry and inode of the
#     machine, before each of its 40 cold rounds)
#   6 mountcheck with 100 / 1,000 / 10,000 mounts, statmount vs mountinfo (mountcheck)
#   7 snapfs import of 100 snapshots of 4 KiB from an OCI image layout vs the same bytes
#     published with snapfs put, one process each (import)
#   8 scopes (scopes): 1,000 scopes in one daemon (median time to create one, the last 100
#     against the first 100, the daemon's memory and threads per scope); the sandbox-launch
#     path (create a scope, grant a 4 KiB snapshot, first verified open in the new view) vs a
#     sealed memfd created and verified, and vs a bare `bwrap --ro-bind / / true`; a verified
#     open in a scope view vs a memfd its holder has open; a waiter on an entry's watch woken by
#     a rotation, from the grant request's start, vs that request's reply. SCOPES=N changes the
#     1,000.
#   9 the takeover window (takeover): the longest time a reader checking every byte through
#     the main mount and the read view went without a whole round read right, across 200
#     kill -9 rounds of the serving process (its supervisor starts a successor that takes
#     the mounts over), vs a plain restart that remounts (`snapfs mount -f --replace-stale`
#     after each kill, 50 rounds); the requests that failed in the note. TAKEOVER_ROUNDS=N
#     changes the 200.
# "Verified" is docs/design.md's verified open: open, fstat identity checks, the descriptor's mount
# id against the judged mount, pread + SHA-256, fstat again. The latency section runs three
# times: client and daemon left to the scheduler ("free"), pinned to one CPU ("same"), and
# pinned to different CPUs ("split"); "free" rows say where the daemon actually ran.
#
# Output: the sections' own lines, then one table of every row (medians; ratio = snapfs /
# baseline, so for times lower is better and for throughputs higher is better), the CSV
# ($BENCH_OUT/results.csv) and a chart of the ratios ($BENCH_OUT/ratios.png).
# BENCH_OUT defaults to build-bench/results. SCALE=N changes item 5's 100,000.
#
# Adding a section: write a function section_<name> that runs one program inside
# `unshare -m --propagation private` (so nothing it mounts outlives it) and appends its rows
# to "$csv", and append <name> to the sections array.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
builddir="$top/build-bench"
out="${BENCH_OUT:-$builddir/results}"
csv="$out/results.csv"
png="$out/ratios.png"
scale="${SCALE:-100000}"

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/bench.sh: run as root (the benchmarks mount in private namespaces)" >&2
  exit 2
fi

build() {
  scripts/deps.sh --test
  if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Dbuildtype=release >/dev/null
  fi
  ninja -C "$builddir" >/dev/null
}

private() {
  unshare -m --propagation private -- "$@"
}

section_latency() {
  echo "== items 1-2: publish + first verified open, verified open of a published snapshot;"
  echo "   medians in us, ratio = snapfs / baseline (lower is better)"
  for p in free same split; do
    private "$builddir/tests/bench/bench_snapfs" --snapfs "$builddir/cli/snapfs" \
      --csv "$csv" --placement "$p" latency
  done
}

section_read() {
  echo "== items 3-4: 256 MiB sequential read and verify; GB/s (higher is better) or ms"
  private "$builddir/tests/bench/bench_snapfs" --snapfs "$builddir/cli/snapfs" \
    --csv "$csv" read
}

section_scale() {
  echo "== item 5: 10 vs $scale snapshots; lookup + open in us, daemon memory per snapshot"
  private "$builddir/tests/bench/bench_snapfs" --snapfs "$builddir/cli/snapfs" \
    --csv "$csv" --scale "$scale" scale
}

# mountcheck: latency of one check of a compliant tmpfs with 100, 1,000 and 10,000 other
# mounts in the namespace; statmount backend vs the mountinfo (libmount) baseline.
section_mountcheck() {
  echo "== item 6: mountcheck, one check, N other mounts; medians in ms,"
  echo "   ratio here = mountinfo/statmount (the summary table has statmount/mountinfo)"
  private "$builddir/tests/bench/bench_mountcheck" --csv "$csv" 100 1000 10000
}

# import: one `snapfs import` of 100 snapshots of 4 KiB vs 100 `snapfs put` of the same bytes.
section_import() {
  echo "== item 7: import 100 x 4 KiB from an OCI layout vs snapfs put x 100; medians in ms"
  private "$builddir/tests/bench/bench_import" --snapfs "$builddir/cli/snapfs" --csv "$csv"
}

# scopes: N scopes in one daemon, the sandbox-launch path, a verified open in a view, a wait
# woken by a rotation.
section_scopes() {
  echo "== item 8: ${SCOPES:-1000} scopes in one daemon; the sandbox-launch path; a verified"
  echo "   open in a scope view; a wait woken by a rotation; medians, ratio = snapfs / baseline"
  echo "   (lower is better)"
  private "$builddir/tests/bench/bench_scopes" --snapfs "$builddir/cli/snapfs" --csv "$csv" \
    --scopes "${SCOPES:-1000}"
}

# takeover: kill -9 rounds of a supervised daemon under a byte-checking reader, vs a remount.
section_takeover() {
  echo "== item 9: the takeover window, ${TAKEOVER_ROUNDS:-200} kill -9 rounds; the longest wait"
  echo "   in ms, vs a restart that remounts (lower is better)"
  private /usr/bin/python3 tests/bench/bench_takeover.py "$builddir/cli/snapfs" "$csv" \
    "${TAKEOVER_ROUNDS:-200}"
}

sections=(latency read scale mountcheck import scopes takeover)

# One table of every row in the CSV, in the order measured.
table() {
  echo "== summary: medians; ratio = snapfs / baseline (times: lower is better;"
  echo "   throughputs: higher is better); target from issue 6; 'met' compares ratio to target"
  awk -F, 'function num(x) { return x == "-" ? x : sprintf("%.4g", x) }
    NR == 1 { printf "%-2s %-27s %-6s %-5s %-16s %9s  %-17s %9s %-4s %7s %-6s %-3s %s\n",
                "#", "what", "size", "cpus", "snapfs", "median", "baseline", "median", "unit",
                "ratio", "target", "met", "note"; next }
    { printf "%-2s %-27s %-6s %-5s %-16s %9s  %-17s %9s %-4s %7s %-6s %-3s %s\n",
        $1, $2, $3, $4, $5, num($7), $6, num($8), $9, $10, $11, $12, $14 }' "$csv"
}

# A horizontal bar per ratio against the main baseline, on a log scale around 1 (parity):
# green when its target is met, red when missed, grey without a target; the diamond marks
# the target.
chart() {
  local data="$out/ratios.dat"
  awk -F, 'NR == 1 || $10 == "-" { next }
    ($1 == "1" && ($6 != "memfd" || ($4 != "free" && $3 != "4KiB" && $3 != "1MiB"))) { next }
    ($1 == "2" && $6 != "memfd") { next }
    ($1 == "3" && $4 != "free") { next }
    {
      better = ($9 == "GB/s") ? "higher is better" : "lower is better"
      place = ($4 == "free" || $4 == "-") ? "" : " [" $4 " CPU]"
      size = ($3 == "-") ? "" : " " $3
      who = ($5 == "snapfs") ? "" : ", " $5
      label = $1 ": " $2 size place who " vs " $6 " (" better ")"
      target = ($11 == "-") ? "NaN" : substr($11, 3)
      color = ($12 == "yes") ? "0x2e8b57" : ($12 == "no") ? "0xcc3333" : "0x888888"
      lo = ($10 < 1) ? $10 : 1; hi = ($10 < 1) ? 1 : $10
      printf "%d\t\"%s\"\t%s\t%s\t%s\t%s\t%s\n", n++, label, $10, lo, hi, target, color
    }' "$csv" > "$data"
  local rows
  rows=$(wc -l < "$data")
  [ "$rows" -gt 0 ] || return 0
  gnuplot <<EOF
set terminal pngcairo size 1400,$((160 + 26 * rows)) font "DejaVu Sans,10"
set output "$png"
set title "snapfs / baseline, medians of one run of scripts/bench.sh \\
($(date -u +%Y-%m-%d), $(nproc) CPUs)"
set logscale x 10
set xrange [0.001:100]
set format x "%g"
set xlabel "ratio snapfs / baseline (log scale; 1 = parity)"
set yrange [$rows - 0.3:-0.7]
set ytics scale 0 font ",9"
set grid xtics
set key off
set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb "black" lw 1.5
plot "$data" using 3:1:4:5:(\$1 - 0.35):(\$1 + 0.35):7:ytic(2) \\
       with boxxyerror fs solid 0.8 lc rgb variable, \\
     "$data" using 6:1 with points pt 13 ps 1.6 lc rgb "black"
EOF
}

build
mkdir -p "$out"
: > "$csv"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
mem=$(free -g | awk '/Mem:/ {print $2}')
echo "snapfs bench: $(uname -r), $(nproc) CPUs ($cpu), $mem GiB, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "(other work on the machine skews every figure)"
selected=("$@")
[ ${#selected[@]} -gt 0 ] || selected=("${sections[@]}")
for s in "${selected[@]}"; do
  if ! declare -F "section_$s" >/dev/null; then
    echo "scripts/bench.sh: unknown section '$s' (have: ${sections[*]})" >&2
    exit 2
  fi
done
for s in "${selected[@]}"; do
  echo
  "section_$s"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
table
chart
echo
echo "CSV:   $csv"
[ -f "$png" ] && echo "chart: $png"
