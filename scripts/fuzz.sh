#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) in build-fuzz/ and runs each one
# for SECONDS (default 60), starting from its committed seed corpus. Prints the executions per
# target; exits 1 if any target crashed (its input is saved and the report printed).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      fuzz; new inputs kept in build-fuzz/fuzz-corpus/
#   scripts/fuzz.sh --smoke SECONDS [TARGET...] first replay every committed input, then fuzz
#                                               from a scratch corpus (what scripts/test.sh runs)
#
# FUZZ_BUILD overrides the build directory. A crash found here is fixed, and its input is
# copied into tests/fuzz/corpus/TARGET/ as a regression.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

usage() {
  echo "usage: scripts/fuzz.sh [--smoke] [SECONDS] [TARGET...]" >&2
  exit 2
}

smoke=0
if [ "${1:-}" = "--smoke" ]; then
  smoke=1
  shift
fi
secs=${1:-60}
[[ $secs =~ ^[1-9][0-9]*$ ]] || usage
[ $# -gt 0 ] && shift

all=()
for src in tests/fuzz/fuzz_*.c; do
  name=${src#tests/fuzz/fuzz_}
  all+=("${name%.c}")
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.c" ] || { echo "scripts/fuzz.sh: no target '$t' (have: ${all[*]})" >&2; exit 2; }
  [ -d "tests/fuzz/corpus/$t" ] || { echo "scripts/fuzz.sh: no seed corpus tests/fuzz/corpus/$t" >&2; exit 2; }
done

if [ "$(id -u)" -eq 0 ]; then
  scripts/deps.sh --test
fi

dir=${FUZZ_BUILD:-$top/build-fuzz}
echo "== fuzz build: $dir"
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang meson setup "$dir" -Dfuzz=true -Dbuildtype=debugoptimized -Db_lundef=false >/dev/null
fi
ninja -C "$dir" fuzz >/dev/null

# Leaks count as crashes (LSan runs after every input); a report must not be swallowed by
# settings inherited from the caller.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

scratch=$(mktemp -d /tmp/snapfs-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

printf '%-10s %-7s %8s %12s %9s %7s\n' target result replayed executions exec/s corpus
crashed=0
for t in "${targets[@]}"; do
  exe="$dir/tests/fuzz/fuzz_$t"
  seeds="$top/tests/fuzz/corpus/$t"
  log="$scratch/$t.log"
  art="$dir/fuzz-artifacts/$t"
  mkdir -p "$art"
  result=ok
  replayed=-

  if [ "$smoke" -eq 1 ]; then
    # Every committed input once, each on its own: a regression input crashes here.
    replayed=$(find "$seeds" -type f | wc -l)
    if ! find "$seeds" -type f -print0 | xargs -0 "$exe" -runs=1 >"$log" 2>&1; then
      result=CRASH
    fi
    work="$scratch/corpus-$t"
  else
    work="$dir/fuzz-corpus/$t"
  fi
  mkdir -p "$work"

  execs=0
  if [ "$result" = ok ]; then
    # New inputs go into the first directory only: the committed seeds are read, never written.
    if ! "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" "$work" "$seeds" >"$log" 2>&1; then
      result=CRASH
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    execs=${execs:-0}
  fi
  corpus=$(find "$work" -type f | wc -l)
  printf '%-10s %-7s %8s %12s %9s %7s\n' "$t" "$result" "$replayed" "$execs" \
    "$((execs / secs))" "$corpus"
  if [ "$result" != ok ]; then
    crashed=$((crashed + 1))
    echo "---- fuzz_$t report (saved inputs in $art/):"
    grep -E 'invariant broken|ERROR|SUMMARY|runtime error|#[0-9]+ 0x' "$log" | head -40 || true
    tail -5 "$log"
    echo "----"
  fi
done
echo "fuzz: ${#targets[@]} targets, $crashed crashed, ${secs}s each"
[ "$crashed" -eq 0 ]
