#!/bin/sh
# SPDX-License-Identifier: MIT
# Rootless podman (Debian 12: podman, crun, uidmap): a container of an unprivileged user gets
# its own scope's view, read-only, at /run/snapfs, and the name of the entry to open in
# $SNAPFS_ENTRY. The runtime (root, the mount owner) made the scope beforehand for this
# user's uid (snapfs scope create NAME --view VIEW --uid UID) and granted the config under
# ENTRY: the container sees that scope's grants and nothing else. No image is pulled: the
# root filesystem is ROOTFS, made here from the host's own /usr (bound read-only), so the
# container runs the host's snapfs and tools.
#   usage (as the unprivileged user): podman-rootless.sh VIEW ENTRY ROOTFS COMMAND [ARG...]
# What a host without systemd needs (cgroup manager, limits) belongs in the user's
# ~/.config/containers/containers.conf, not here.
set -eu
view=$1 entry=$2 rootfs=$3
shift 3
snapfs=$(command -v snapfs)

mkdir -p "$rootfs/usr" "$rootfs/proc" "$rootfs/dev" "$rootfs/sys" "$rootfs/tmp" \
    "$rootfs/etc" "$rootfs/run/snapfs" "$rootfs/run/bin"
for d in bin lib lib64 sbin; do
    [ -L "$rootfs/$d" ] || ln -s "usr/$d" "$rootfs/$d"
done
: >"$rootfs/run/bin/snapfs"

# --rootfs is a flag: the first argument after the options is the root filesystem.
exec podman run --rm --network=none --read-only \
    -v /usr:/usr:ro \
    -v "$snapfs:/run/bin/snapfs:ro" \
    -v "$view:/run/snapfs:ro" \
    -e PATH=/run/bin:/usr/bin:/bin -e SNAPFS_MOUNT=/run/snapfs \
    -e SNAPFS_ENTRY="$entry" \
    --rootfs "$rootfs" "$@"
