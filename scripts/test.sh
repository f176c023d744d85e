#!/usr/bin/env bash
# The test command: installs what a fresh Debian 12 machine lacks, then builds snapfs twice
# (a normal build and an ASan+UBSan build) and runs every test against each build:
# the cmocka unit suites and the integration tests on real mounts in a private mount namespace.
# Beside them, once the normal build is there: the release tests (the documentation,
# scripts/install.sh, pip and npm installs), against the normal build.
# Once, beside the normal build: the Debian package, built by scripts/package.sh, checked by
# lintian, installed and purged in a booted copy of this host.
# Then valgrind over every unit test binary of the normal build; a fuzz smoke, in which each
# libFuzzer target replays its committed corpus and runs for a few seconds; and the unit tests
# built by clang with its sanitizers.
# Exits non-zero when anything fails. Last line: "total: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/test.sh: run as root (it installs packages and mounts in a private namespace)" >&2
  exit 2
fi
scripts/deps.sh --test
# shellcheck source=scripts/testlib.sh
. scripts/testlib.sh

passed=0
failed=0
count() { # $1 = passed, $2 = failed
  passed=$((passed + $1)); failed=$((failed + $2))
}

run_build() { # $1 = the build; the rest goes to pytest
  local name=$1
  local dir="$top/build-test-$name"
  shift
  local opts
  opts=$(build_options "$name")
  echo "== build: $name ($opts)"
  # The state of the build, for run_release, which waits for it.
  # shellcheck disable=SC2086
  if ! fresh_build "$dir" $opts; then
    echo failed >"$top/build-test-logs/$name.build"
    return 1
  fi
  echo built >"$top/build-test-logs/$name.build"

  echo "== unit tests: $name"
  local out rc=0
  out=$(meson test -C "$dir" --suite unit --print-errorlogs 2>&1) || rc=$?
  printf '%s\n' "$out" | grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Timeout):'
  local ok bad
  ok=$(printf '%s\n' "$out" | grep -oE '[0-9]+ subtests passed' | awk '{s+=$1} END {print s+0}')
  bad=$(printf '%s\n' "$out" | grep -E '^ *[0-9]+/[0-9]+ ' | grep -cvE ' OK ' || true)
  [ "$rc" -eq 0 ] || { [ "$bad" -gt 0 ] || bad=1; printf '%s\n' "$out" | tail -40; }
  count "$ok" "$bad"

  echo "== integration tests: $name"
  rc=0
  local xml="$dir/pytest.xml" counts
  run_integration "$dir" "$xml" "$@" || rc=$?
  counts=$(junit_counts "$xml")
  # shellcheck disable=SC2086
  count $counts
  [ "$rc" -eq 0 ] || { [ "${counts#* }" != 0 ] || count 0 1; }
  # A report written outside any test's window (after its checks ran) still fails the run.
  unclaimed_reports "$dir" || count 0 1
}

# The normal and the sanitizer build share nothing (their own build directory, mount namespace
# and sanitizer reports), so they are built and tested side by side, and their output printed
# one after the other. The sanitizer run leaves out the tests whose subject is a build of their
# own or the documentation: scripts/install.sh's release build, pip's wheel, npm's package,
# the booted unit's package, the Python client's own units (they load the library into
# pytest's uninstrumented interpreter), deps.sh and every README/docs block are checked once,
# with the normal build; running them
# again would test the same release build, not the sanitized one, and would race the normal
# run for the release build directory. It also leaves out the tests whose subject is the text
# and grammar of the command line (every subcommand with every option, every message, help
# and completion): they run hundreds of short CLI processes through the same parsers, which
# the unit tests and the fuzz targets already run under ASan+UBSan (twice: GCC's and clang's).
SANITIZE_SKIPS=(--ignore=tests/integration/test_docs.py --ignore=tests/integration/test_install.py
                --ignore=tests/integration/test_python_package.py
                --ignore=tests/integration/test_python_units.py
                --ignore=tests/integration/test_client_parity.py
                --ignore=tests/integration/test_node_package.py
                --ignore=tests/integration/test_deps.py
                --ignore=tests/integration/test_client_options.py
                --ignore=tests/integration/test_cli_grammar.py
                --ignore=tests/integration/test_messages.py
                --ignore=tests/integration/test_cli_people.py)
# Runs each job named in the arguments ("name:function arg...") in the background, its output
# to a log of its own, then prints the logs in the order given and adds up their counts. A job
# that stopped before it counted anything is one failure.
side_by_side() {
  local logs="$top/build-test-logs" job name rc
  mkdir -p "$logs"
  declare -A pids
  for job in "$@"; do
    name=${job%%:*}
    (
      passed=0 failed=0
      # shellcheck disable=SC2086
      ${job#*:}
      echo "$passed $failed" >"$logs/$name.counts"
    ) >"$logs/$name.log" 2>&1 &
    pids[$name]=$!
  done
  for job in "$@"; do
    name=${job%%:*}
    rc=0
    wait "${pids[$name]}" || rc=$?
    cat "$logs/$name.log"
    if [ -s "$logs/$name.counts" ]; then
      # shellcheck disable=SC2046
      count $(cat "$logs/$name.counts")
    else
      echo "   $name stopped early (exit $rc): one failure"
      count 0 1
    fi
  done
}

# The tests whose subject is a release build of their own, the packages users install, or the
# documentation (install.sh's release build and its manifests, pip's wheel and venvs, npm's
# package, every README/docs block): run once, against the normal build, as a job of their
# own beside the other two, since they mostly wait on builds, installs and npm rather than on
# the CPU. They share one release build directory, so they run one after the other.
RELEASE_TESTS=(tests/integration/test_docs.py tests/integration/test_install.py
               tests/integration/test_python_package.py tests/integration/test_node_package.py)
RELEASE_SKIPS=()
for t in "${RELEASE_TESTS[@]}"; do RELEASE_SKIPS+=("--ignore=$t"); done

run_normal() { run_build normal "${RELEASE_SKIPS[@]}"; }
run_sanitize() { run_build sanitize "${SANITIZE_SKIPS[@]}"; }

# The release tests, once the normal build is there (its run writes its state).
run_release() {
  local dir="$top/build-test-normal" state="$top/build-test-logs/normal.build" waited=0
  local reports="$dir/sanitizer-reports-release" xml="$dir/release.xml" rc=0 counts
  while [ "$(cat "$state" 2>/dev/null)" != built ]; do
    if [ "$(cat "$state" 2>/dev/null)" = failed ] || [ "$waited" -ge 3600 ]; then
      echo "== release tests: no normal build to run them against"
      count 0 1
      return
    fi
    sleep 2
    waited=$((waited + 2))
  done
  echo "== release tests: documentation, install.sh, pip, npm"
  SNAPFS_REPORTS="$reports" integration_pytest "$dir" "$xml" "${RELEASE_TESTS[@]}" || rc=$?
  counts=$(junit_counts "$xml")
  # shellcheck disable=SC2086
  count $counts
  [ "$rc" -eq 0 ] || { [ "${counts#* }" != 0 ] || count 0 1; }
  unclaimed_reports "$dir" "$reports" || count 0 1
}
run_fuzz_and_clang_units() { run_fuzz; run_clang_units; }  # the second builds on the first's

# The Debian package's tests, once: the package does not depend on the build under test.
run_package() {
  local dir="$top/build-test-normal" rc=0 counts
  local xml="$dir/package.xml"
  echo "== Debian package: build, lintian, install and purge"
  run_package_test "$dir" "$xml" || rc=$?
  counts=$(junit_counts "$xml")
  # shellcheck disable=SC2086
  count $counts
  [ "$rc" -eq 0 ] || { [ "${counts#* }" != 0 ] || count 0 1; }
  unclaimed_reports "$dir" || count 0 1
}

# valgrind over every unit test binary of a build without sanitizers: 0 errors, 0 leaks.
run_valgrind() {
  local dir=$1 ok=0 bad=0 t name
  echo "== valgrind: unit tests ($dir)"
  for t in "$dir"/tests/unit/test_*; do
    [ -f "$t" ] && [ -x "$t" ] || continue
    name=$(basename "$t")
    # The exit status alone decides: the log also holds valgrind's warnings about syscalls
    # it does not know (openat2, statmount), which the code under test gets as ENOSYS.
    if valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 \
        --log-file="$dir/valgrind-$name.log" "$t" >"$dir/valgrind-$name.out" 2>&1; then
      echo "  ok    $name"
      ok=$((ok + 1))
    else
      echo "  FAIL  $name"
      tail -n 40 "$dir/valgrind-$name.log" "$dir/valgrind-$name.out"
      bad=$((bad + 1))
    fi
  done
  [ $((ok + bad)) -gt 0 ] || { echo "  no unit test binaries in $dir"; bad=1; }
  count "$ok" "$bad"
}

# Each fuzz target replays its committed corpus (regressions included), then fuzzes for a
# few seconds; a crash, a sanitizer report or a broken invariant fails it.
run_fuzz() {
  local dir="$top/build-test-fuzz" out rc=0 ok bad
  echo "== fuzz smoke"
  rm -rf "$dir"
  out=$(FUZZ_BUILD="$dir" scripts/fuzz.sh --smoke "${SNAPFS_FUZZ_SMOKE:-10}" 2>&1) || rc=$?
  printf '%s\n' "$out"
  ok=$(printf '%s\n' "$out" | grep -cE '^[a-z]+ +ok ' || true)
  bad=$(printf '%s\n' "$out" | grep -cE '^[a-z]+ +CRASH ' || true)
  [ "$rc" -eq 0 ] || [ "$bad" -gt 0 ] || bad=1
  [ $((ok + bad)) -gt 0 ] || bad=1
  count "$ok" "$bad"
}

# The unit tests once more, built by clang in the fuzz build (ASan + clang's UBSan, which
# checks what GCC's does not, such as arithmetic on a NULL pointer). Only the unit test
# binaries are built: their libraries are already there for the fuzz targets.
run_clang_units() {
  local dir="$top/build-test-fuzz" out rc=0 ok bad units
  echo "== unit tests: clang ASan+UBSan"
  units=$(cd "$dir" 2>/dev/null && ninja -t targets all |
    sed -n 's|^\(tests/unit/test_[a-z0-9_-]*\): .*|\1|p') || true
  # shellcheck disable=SC2086
  if [ -z "$units" ] || ! ninja -C "$dir" $units >/dev/null; then
    echo "  cannot build the unit tests in $dir"
    count 0 1
    return
  fi
  out=$(meson test -C "$dir" --suite unit --no-rebuild --print-errorlogs 2>&1) || rc=$?
  printf '%s\n' "$out" | grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Timeout):'
  ok=$(printf '%s\n' "$out" | grep -oE '[0-9]+ subtests passed' | awk '{s+=$1} END {print s+0}')
  bad=$(printf '%s\n' "$out" | grep -E '^ *[0-9]+/[0-9]+ ' | grep -cvE ' OK ' || true)
  [ "$rc" -eq 0 ] || { [ "$bad" -gt 0 ] || bad=1; printf '%s\n' "$out" | tail -40; }
  count "$ok" "$bad"
}

# Each phase says how long it took: the suite must stay well under 15 minutes on 2 CPUs.
phase() {
  local start=$SECONDS
  "$@"
  echo "   ($1: $((SECONDS - start)) s)"
}
rm -rf "$top/build-test-logs"
phase side_by_side "normal:run_normal" "sanitize:run_sanitize" "release:run_release"
# Then what needs the normal build (the package test, valgrind over its unit tests) beside the
# clang build (the fuzz smoke, then the unit tests once more): independent again.
phase side_by_side "package:run_package" "valgrind:run_valgrind $top/build-test-normal" \
  "fuzz:run_fuzz_and_clang_units"
echo "   (all: $SECONDS s)"

echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
