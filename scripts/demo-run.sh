#!/usr/bin/env bash
# The demo itself, against an existing build (scripts/demo.sh installs and builds first; the
# test suite runs this against each of its builds): in a private mount namespace, mount
# snapfs, publish an MCP config, show its binding and the mount, read it back, show a refused
# write, check the mount, and unmount. Exits non-zero if any step does not do what it shows.
#   scripts/demo-run.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/demo-run.sh BUILD_DIR}
[ -x "$build/cli/snapfs" ] || { echo "scripts/demo-run.sh: $build/cli/snapfs missing" >&2; exit 2; }
SNAPFS_BIN="$(cd "$build" && pwd)/cli/snapfs"
export SNAPFS_BIN

# Everything below runs in its own mount namespace: nothing it mounts is seen outside, and the
# mount goes away with the namespace even if a step fails.
exec unshare -m --propagation private -- bash -euo pipefail -c '
snapfs=$SNAPFS_BIN
work=$(mktemp -d /tmp/snapfs-demo.XXXXXX)
mnt=$work/mnt
mkdir "$mnt"
trap "umount \"$mnt\" 2>/dev/null || true; rm -rf \"$work\"" EXIT
step() { printf "\n\033[1m== %s\033[0m\n" "$*"; }

step "mount snapfs at $mnt (returns once the mount serves)"
"$snapfs" mount --audit-log "$work/audit.log" "$mnt"
grep " $mnt " /proc/self/mountinfo

step "publish an MCP config: write into .staging/, then rename to its SHA-256"
cat > "$work/mcp.json" <<JSON
{"mcpServers": {"filesystem": {"command": "npx",
  "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"],
  "env": {"API_TOKEN": "demo-token-not-a-secret"}}}}
JSON
cat "$work/mcp.json" > "$mnt/.staging/mcp"
digest=$(sha256sum < "$work/mcp.json" | cut -c1-64)
mv "$mnt/.staging/mcp" "$mnt/$digest"
echo "published $digest"

step "its binding (sha256, size, dev, ino) and the mount listing"
getfattr --absolute-names --only-values -n user.snapfs.binding "$mnt/$digest"; echo
ls -la "$mnt"

step "read it back with cat and sha256sum"
cat "$mnt/$digest"
sha256sum "$mnt/$digest"

step "a write is refused, whatever the uid (root here): the bytes stay as published"
if echo "tampered" 2>/dev/null > "$mnt/$digest"; then
  echo "UNEXPECTED: the write succeeded" >&2; exit 1
else
  echo "write refused: $(python3 -c "import errno,os,sys
try: os.open(sys.argv[1], os.O_WRONLY)
except OSError as e: print(errno.errorcode[e.errno], \"-\", e.strerror)" "$mnt/$digest")"
fi
if chmod 600 "$mnt/$digest" 2>/dev/null; then
  echo "UNEXPECTED: chmod succeeded" >&2; exit 1
else
  echo "chmod 600 refused (the first step of the O_TMPFILE tamper recipe)"
fi
sha256sum "$mnt/$digest"

step "snapfs check: the mount a pinned descriptor reaches is compliant"
"$snapfs" check --preset snapfs "$mnt" && echo "compliant"

step "snapfs verify: a verified open of the binding (mount check, identity, the content hashed)"
"$snapfs" verify --mount "$mnt" "$(getfattr --absolute-names --only-values -n user.snapfs.binding "$mnt/$digest")"

step "audit log"
# Written by a thread of the daemon, a moment after each request: wait for the publish.
for _ in $(seq 200); do grep -q publish "$work/audit.log" && break; sleep 0.05; done
cat "$work/audit.log"

step "unmount: the daemon exits and nothing stays mounted"
umount "$mnt"
for _ in $(seq 100); do grep -q " $mnt " /proc/self/mountinfo || break; sleep 0.05; done
if grep -q " $mnt " /proc/self/mountinfo; then echo "still mounted" >&2; exit 1; fi
echo "unmounted"
'
