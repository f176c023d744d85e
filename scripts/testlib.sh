# shellcheck shell=bash
# What scripts/test.sh and scripts/stress.sh share: the sanitizer settings, the two builds, and
# one run of the integration tests against a build. Source it with the repository's top
# directory as the current one.

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87

# The meson options of the two builds every test runs against.
build_options() { # $1 = normal | sanitize
  case $1 in
    normal) echo "-Dbuildtype=debugoptimized" ;;
    sanitize) echo "-Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false" ;;
    *) echo "no build named $1" >&2; return 2 ;;
  esac
}

# A fresh build of snapfs in $1 with the meson options that follow.
fresh_build() {
  local dir=$1; shift
  rm -rf "$dir"
  meson setup "$dir" "$@" >/dev/null
  ninja -C "$dir" >/dev/null
}

# Runs the integration tests against the build in $1, writing JUnit XML to $2; the rest of the
# arguments go to pytest. Returns pytest's exit status. All but the Debian package's: that one
# builds the package from the checkout, whatever the build, so run_package_test runs it alone.
run_integration() {
  local dir=$1 xml=$2; shift 2
  integration_pytest "$dir" "$xml" --ignore=tests/integration/test_package.py "$@" \
    tests/integration
}

# tests/integration/test_package.py (scripts/package.sh's .deb, installed and purged in a
# booted copy of this host), with the build in $1 as the others, JUnit XML to $2.
run_package_test() {
  integration_pytest "$1" "$2" tests/integration/test_package.py
}

# pytest over what the arguments after $1 (the build) and $2 (JUnit XML) name.
integration_pytest() {
  local dir=$1 xml=$2; shift 2
  # Every ASan/LSan report, whichever process writes it (a daemonized daemon's standard error
  # is /dev/null), lands in its own file here; conftest.py fails the test during which one
  # appears. 1777: a sanitized binary run as another uid must be able to report too. (GCC's
  # UBSan ignores log_path when linked with ASan: the tests search standard error for it.)
  # ($SNAPFS_REPORTS names another directory, for a second run against the same build.)
  local reports=${SNAPFS_REPORTS:-$dir/sanitizer-reports}
  rm -rf "$reports"
  mkdir -p "$reports"
  chmod 1777 "$reports"
  # A private mount namespace: a failing test can never leak a mount into the host. A test
  # still running after $SNAPFS_TEST_TIMEOUT seconds (default 600, far above the slowest test
  # under the sanitizers) is failed with its stack: a hang costs one test, not the whole run.
  SNAPFS_BUILD="$dir" SNAPFS_SANITIZER_REPORTS="$reports" \
  ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$reports/report" \
  UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$reports/report" \
    unshare -m --propagation private -- \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider --timeout="${SNAPFS_TEST_TIMEOUT:-600}" \
      --timeout-method=signal --junitxml="$xml" "$@"
}

# "PASSED FAILED" of the JUnit XML in $1; a skipped test counts as failed so it cannot hide,
# and an unreadable or empty report is one failure.
junit_counts() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 1); sys.exit()
suites = [root] if root.tag == "testsuite" else list(root)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f + sk if t else 1)
PY
}

# The names of the tests that failed, errored or were skipped in the JUnit XML in $1.
junit_failures() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("(no report)"); sys.exit()
for case in root.iter("testcase"):
    if any(child.tag in ("failure", "error", "skipped") for child in case):
        print(f"{case.get('classname')}::{case.get('name')}")
PY
}

# Prints the sanitizer reports of build $1 that no test claimed (written after a test's
# checks ran); returns 1 when there is one.
unclaimed_reports() { # $1 = the build; $2 = its reports directory, if not the usual one
  local reports=${2:-$1/sanitizer-reports} f
  [ -z "$(ls -A "$reports" 2>/dev/null)" ] && return 0
  echo "sanitizer reports not attributed to a test:"
  for f in "$reports"/*; do echo "---- $f"; cat "$f"; done
  return 1
}
