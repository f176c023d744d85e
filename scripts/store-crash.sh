#!/usr/bin/env bash
# The --store crash test at length: the daemon is killed with SIGKILL at a random point of a
# stream of publishes and unlinks ROUNDS times (default 200), restarted each time, and every
# time each snapshot must be complete and served or absent, every answered publish served
# (unless an unlink of it started), and no answered unlink undone. The suite runs 6 rounds
# of the same test (tests/integration/test_store.py). Run as root, after a build:
#   scripts/store-crash.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
rounds=${2:-200}
[ "$(id -u)" -eq 0 ] || { echo "scripts/store-crash.sh: run as root" >&2; exit 2; }
SNAPFS_BUILD="$build" SNAPFS_STORE_CRASH_ROUNDS="$rounds" \
  unshare -m --propagation private -- /usr/bin/python3 -m pytest -q -s -p no:cacheprovider \
  tests/integration/test_store.py -k killed_during_publishes
