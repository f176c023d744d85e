#!/bin/sh
# SPDX-License-Identifier: MIT
# One snapfs daemon on the host, one scope per sandbox: the runtime, outside, creates the
# sandbox's scope NAME with its view at VIEW, tied to this process (which becomes the
# sandbox: exec keeps the pid), publishes FILE and grants it to the scope alone as the entry
# "config", and binds only that view, read-only, at /run/snapfs. COMMAND opens the entry
# verified (snapfs exec --entry config --trust-user-namespace: inside bwrap's user namespace
# the mount's owner cannot be verified, and the runtime that set the sandbox up vouches for
# it). When the sandbox exits, the daemon removes the scope and its view by itself.
#   usage (as the mount owner, root): bwrap-sandbox.sh MNT NAME VIEW FILE COMMAND [ARG...]
# with the daemon started as: snapfs mount --allow-other MNT
set -eu
mnt=$1 name=$2 view=$3 file=$4
shift 4
snapfs=$(command -v snapfs)

snapfs scope create --mount "$mnt" "$name" --view "$view" --until-pid $$ >/dev/null
snapfs put --mount "$mnt" --scope "$name" --as config "$file" >/dev/null

exec bwrap --unshare-user --unshare-pid --unshare-net --unshare-ipc --die-with-parent \
    --new-session \
    --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
    --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp \
    --ro-bind "$snapfs" /run/bin/snapfs \
    --ro-bind "$view" /run/snapfs \
    --setenv PATH /run/bin:/usr/bin:/bin --setenv SNAPFS_MOUNT /run/snapfs \
    --setenv SNAPFS_ENTRY config \
    -- "$@"
