#!/bin/sh
# SPDX-License-Identifier: MIT
# Rootless podman (Debian 12: podman, crun, uidmap): a container of an unprivileged user gets
# the snapfs read view, read-only, at /run/snapfs, and the binding of a snapshot in it in
# $SNAPFS_BINDING. No image is pulled: the root filesystem is ROOTFS, made here from the
# host's own /usr (bound read-only), so the container runs the host's snapfs and tools.
#   usage (as the unprivileged user): podman-rootless.sh VIEW BINDING ROOTFS COMMAND [ARG...]
# What a host without systemd needs (cgroup manager, limits) belongs in the user's
# ~/.config/containers/containers.conf, not here.
set -eu
view=$1 binding=$2 rootfs=$3
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
    -e SNAPFS_BINDING="$binding" \
    --rootfs "$rootfs" "$@"
