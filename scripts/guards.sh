#!/usr/bin/env bash
# Is every refusal load-bearing? Replaces each refusal in the C sources, one at a time, by
# success ("return -EACCES;" becomes "return 0;", "r = -EROFS;" becomes "r = 0;",
# "fuse_reply_err(req, EROFS)" becomes "fuse_reply_err(req, 0)", a refusal helper's
# "return refuse(b, EINVAL, ...)" becomes "return 0 && refuse(...)", never called, and a
# mount check's finding, "mc_verdict_add(v, MC_...", is not added), rebuilds, and runs the
# unit tests: a refusal whose removal no test notices is a guard nobody checks.
#
#   scripts/guards.sh [--since REV] [--integration] [--list] [DIR-OR-FILE[:LINE]...]
#
# DIR-OR-FILE defaults to fs client mountcheck snapshot; FILE:LINE names one refusal. --since REV keeps only the refusals on
# lines added since REV (the work of one round). ENOMEM is not a refusal and is left alone.
# --integration runs the integration tests (stopping at the first failure) for a refusal the
# unit tests miss. --list prints the refusals and stops. One line per refusal:
#   unit         caught by the unit tests
#   integration  caught by the integration tests only
#   SURVIVED     no test noticed (or, without --integration: the unit tests did not)
#   no-build     the mutant does not compile (the refusal's value is used as a type check)
# Last line: the counts. Builds to build-guards (a debugoptimized build, like the suite's
# normal one, with warnings not errors: a mutant that leaves a variable unset for the compiler
# must still build and be tested). Exits 1 when a refusal survived. Root only for --integration.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

since=
integration=0
list=0
paths=()
while [ $# -gt 0 ]; do
  case $1 in
    --since) since=$2; shift 2 ;;
    --integration) integration=1; shift ;;
    --list) list=1; shift ;;
    -*) echo "usage: scripts/guards.sh [--since REV] [--integration] [--list] [DIR-OR-FILE[:LINE]...]" >&2
        exit 2 ;;
    *) paths+=("$1"); shift ;;
  esac
done
[ ${#paths[@]} -gt 0 ] || paths=(fs client mountcheck snapshot)
if [ "$integration" -eq 1 ] && [ "$(id -u)" -ne 0 ]; then
  echo "scripts/guards.sh: --integration runs as root (the tests mount in a private namespace)" >&2
  exit 2
fi

# The sites, "file:line", each a line of its own.
sites=$(python3 - "$since" "${paths[@]}" <<'PY'
import re, subprocess, sys
since, args = sys.argv[1], sys.argv[2:]
# FILE:LINE keeps that one line of FILE.
only = {}
paths = []
for a in args:
    m = re.fullmatch(r'(.+):(\d+)', a)
    if m:
        only.setdefault(m.group(1), set()).add(int(m.group(2)))
        paths.append(m.group(1))
    else:
        paths.append(a)
pat = re.compile(r'^\s*(return -E[A-Z0-9]+;|[A-Za-z_][A-Za-z0-9_>.\[\]-]* = -E[A-Z0-9]+;)\s*(/\*.*)?$'
                 r'|^\s*fuse_reply_err\(req, E[A-Z0-9]+\);'
                 r'|^\s*return (refuse|bad_reply|report|msg|SAY|sfs_tree_refuse|sfc_report_fail)'
                 r'\(.*\bE[A-Z][A-Z0-9]+\b'
                 r'|^\s*mc_verdict_add\(v, MC_[A-Z_]+,')
files = subprocess.run(['git', 'ls-files', '--', *paths], check=True, capture_output=True,
                       text=True).stdout.split()
files = [f for f in files if f.endswith('.c')]
added = None
if since:
    added = {}
    diff = subprocess.run(['git', 'diff', '-M', '-U0', since, '--', *files], check=True,
                          capture_output=True, text=True).stdout
    cur = None
    for line in diff.splitlines():
        if line.startswith('+++ '):
            cur = line[6:] if line.startswith('+++ b/') else None
        elif line.startswith('@@') and cur:
            m = re.search(r'\+(\d+)(?:,(\d+))?', line)
            start, n = int(m.group(1)), int(m.group(2) or 1)
            added.setdefault(cur, set()).update(range(start, start + n))
for f in files:
    with open(f, encoding='utf-8') as fh:
        for i, text in enumerate(fh, 1):
            if pat.match(text) and 'ENOMEM' not in text and \
               (added is None or i in added.get(f, ())) and \
               (f not in only or i in only[f]):
                print(f'{f}:{i}')
PY
)
n_sites=$(printf '%s\n' "$sites" | grep -c . || true)
if [ "$list" -eq 1 ]; then
  printf '%s\n' "$sites" | while IFS=: read -r f l; do
    [ -n "$f" ] && printf '%s:%s\t%s\n' "$f" "$l" "$(sed -n "${l}p" "$f" | sed 's/^[[:space:]]*//')"
  done
  echo "$n_sites refusals"
  exit 0
fi

# shellcheck source=scripts/testlib.sh
. scripts/testlib.sh
dir=$top/build-guards
# shellcheck disable=SC2046
fresh_build "$dir" $(build_options normal) -Dwerror=false

saved=
restore() {
  if [ -n "$saved" ]; then
    # A new mtime: the next build compiles the restored file again instead of keeping the
    # mutant's object.
    cp "$saved" "${saved%.guards-orig}"
    rm -f "$saved"
    saved=
  fi
}
trap restore EXIT
trap 'exit 130' INT TERM

n_unit=0 n_integ=0 n_survived=0 n_nobuild=0
while IFS=: read -r f l; do
  [ -n "$f" ] || continue
  text=$(sed -n "${l}p" "$f" | sed 's/^[[:space:]]*//')
  cp "$f" "$f.guards-orig"
  saved=$f.guards-orig
  case $text in
    # sizeof: the call is not made, and the statement stays one statement (an if/else
    # keeps its shape).
    mc_verdict_add*) sed -i -E "${l}s/mc_verdict_add\(/(void)sizeof mc_verdict_add(/" "$f" ;;
    fuse_reply_err*) sed -i -E "${l}s/\(req, E[A-Z0-9]+\)/(req, 0)/" "$f" ;;
    # A refusal helper that records its reason and returns the errno: not called at all
    # (a "0 * call" mutant would still record the reason a test may be reading).
    "return "[A-Za-z_]*\(*) sed -i -E "${l}s/return ([A-Za-z_]+)\(/return 0 \&\& \1(/" "$f" ;;
    *) sed -i -E "${l}s/-E[A-Z0-9]+;/0;/" "$f" ;;
  esac
  if ! ninja -C "$dir" >"$dir/mutant.log" 2>&1; then
    verdict=no-build
    n_nobuild=$((n_nobuild + 1))
  elif ! timeout 600 meson test -C "$dir" --no-rebuild --suite unit >>"$dir/mutant.log" 2>&1; then
    verdict=unit
    n_unit=$((n_unit + 1))
  elif [ "$integration" -eq 1 ] &&
       ! run_integration "$dir" "$dir/mutant.xml" -x -q >>"$dir/mutant.log" 2>&1; then
    verdict=integration
    n_integ=$((n_integ + 1))
  else
    verdict=SURVIVED
    n_survived=$((n_survived + 1))
  fi
  restore
  printf '%-12s %s:%s\t%s\n' "$verdict" "$f" "$l" "$text"
done <<<"$sites"
# The build left as the sources are.
ninja -C "$dir" >/dev/null

echo "$n_sites refusals: $n_unit caught by the unit tests, $n_integ by the integration tests only, $n_survived survived, $n_nobuild did not build"
[ "$n_survived" -eq 0 ]
