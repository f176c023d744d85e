#!/bin/sh
# SPDX-License-Identifier: MIT
# One snapfs daemon on the host; a bubblewrap sandbox gets its read view, read-only, at
# /run/snapfs. The runtime, outside, publishes FILE through MNT and hands the sandboxed
# COMMAND the binding of FILE in the view ($SNAPFS_BINDING); COMMAND verifies before it reads
# (snapfs exec --trust-user-namespace: inside bwrap's user namespace the mount's owner cannot
# be verified, and the runtime that set the sandbox up vouches for it).
#   usage: bwrap-sandbox.sh MNT VIEW FILE COMMAND [ARG...]
# with the daemon started as: snapfs mount --allow-other --read-view VIEW MNT
set -eu
mnt=$1 view=$2 file=$3
shift 3
snapfs=$(command -v snapfs)

snapfs put --mount "$mnt" "$file" >/dev/null
digest=$(sha256sum <"$file" | cut -d' ' -f1)
# The view has a device number of its own: the binding a sandboxed reader checks is the view's.
binding=$(getfattr --only-values -n user.snapfs.binding "$view/$digest")

exec bwrap --unshare-user --unshare-pid --unshare-net --unshare-ipc --die-with-parent \
    --new-session \
    --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
    --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp \
    --ro-bind "$snapfs" /run/bin/snapfs \
    --ro-bind "$view" /run/snapfs \
    --setenv PATH /run/bin:/usr/bin:/bin --setenv SNAPFS_MOUNT /run/snapfs \
    --setenv SNAPFS_BINDING "$binding" \
    -- "$@"
