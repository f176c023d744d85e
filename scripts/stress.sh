#!/usr/bin/env bash
# Runs the integration tests many times in a row under CPU contention, in the normal build and
# in the ASan+UBSan build, to find tests that fail only sometimes. A busy loop runs on every CPU
# meanwhile (started here, stopped by pid at the end), so a test that samples a moment instead
# of waiting for a state gets every chance to fail.
#
#   scripts/stress.sh [-n RUNS] [-b normal|sanitize|both] [-- PYTEST-ARGS...]
#
# RUNS defaults to 20 per build. Builds go to build-stress-<name>. Prints one line per run and
# the failing tests of a failed run; each run's pytest output is kept in
# build-stress-<name>/run-<i>.log. Last line: "N passed, N failed" (runs). Root only, like
# scripts/test.sh; exits non-zero when any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

runs=20
builds=(normal sanitize)
while [ $# -gt 0 ]; do
  case $1 in
    -n) runs=$2; shift 2 ;;
    -b) case $2 in both) builds=(normal sanitize) ;; *) builds=("$2") ;; esac; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: scripts/stress.sh [-n RUNS] [-b normal|sanitize|both] [-- PYTEST-ARGS...]" >&2
       exit 2 ;;
  esac
done
case $runs in ''|*[!0-9]*|0) echo "scripts/stress.sh: -n wants a positive number" >&2; exit 2 ;; esac
if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/stress.sh: run as root (the tests mount in a private namespace)" >&2
  exit 2
fi
# shellcheck source=scripts/testlib.sh
. scripts/testlib.sh

hogs=()
stop_hogs() {
  local pid
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
for name in "${builds[@]}"; do
  dir="$top/build-stress-$name"
  # shellcheck disable=SC2046
  echo "== build: $name ($(build_options "$name"))"
  # shellcheck disable=SC2046
  fresh_build "$dir" $(build_options "$name")

  echo "== $runs runs of the integration tests ($name) with a busy loop on each of $(nproc) CPUs"
  for _ in $(seq "$(nproc)"); do
    ( while :; do :; done ) &
    hogs+=($!)
  done
  ok=0
  bad=0
  for i in $(seq "$runs"); do
    xml="$dir/run-$i.xml"
    rc=0
    start=$SECONDS
    run_integration "$dir" "$xml" "$@" >"$dir/run-$i.log" 2>&1 || rc=$?
    read -r t_ok t_bad < <(junit_counts "$xml")
    leftover=0
    unclaimed_reports "$dir" >>"$dir/run-$i.log" || leftover=1
    if [ "$rc" -eq 0 ] && [ "$t_bad" -eq 0 ] && [ "$leftover" -eq 0 ]; then
      echo "$name run $i/$runs: pass ($t_ok tests, $((SECONDS - start)) s)"
      ok=$((ok + 1))
    else
      echo "$name run $i/$runs: FAIL ($t_ok passed, $t_bad failed, pytest exit $rc, $((SECONDS - start)) s; log $dir/run-$i.log)"
      junit_failures "$xml" | sed 's/^/    /'
      [ "$leftover" -eq 0 ] || echo "    sanitizer reports not attributed to a test"
      bad=$((bad + 1))
    fi
  done
  stop_hogs
  echo "$name: $ok passed, $bad failed"
  passed=$((passed + ok))
  failed=$((failed + bad))
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
