#!/usr/bin/env bash
# Build the image that plays a plain Kafka host for tests/systemd/test_install_on_a_host.py: Debian
# bookworm with a real systemd as PID 1, Java 17 for the broker and Python 3.11 for the sidecar.
# Prints the image's name on the last line of standard output; progress goes to standard error.
#
#   bash tests/systemd/build-systemd-image.sh
#
# Idempotent: podman, runc and debootstrap are installed only when missing (apt-get), and the
# image is built only when no image has its tag. The tag ends in a hash of the package list and
# of this script's build steps, so changing either builds a new image; an unchanged script
# reuses the one it built (a warm run takes about a second).
#
# The same conventions as deploy/container/build.sh (see its comments for why):
# - no container registry is reachable, so the root filesystem comes from Debian's packages
#   (debootstrap) and is imported with `podman import`;
# - podman runs with runc (crun fails on this machine's cgroups v1), ulimits within the hard
#   limits, and the host's network.
# Nothing of volume-quota is in the image: the test installs it by following
# deploy/systemd/README.md, as a user would on a fresh host.
set -euo pipefail

DEBIAN_MIRROR="${VOLUME_QUOTA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What a Kafka host with this README's prerequisites has: systemd (PID 1, journald, logind's
# dbus), Python 3.11 with venv for the sidecar, Java 17 for the broker, and the CA bundle.
PACKAGES="systemd,systemd-sysv,dbus,python3,python3-venv,ca-certificates,openjdk-17-jre-headless,procps"
PODMAN=(podman --runtime runc)
# The recipe's own hash: a change of the package list or of the steps below makes a new tag.
RECIPE_HASH="$(
    { echo "$PACKAGES"; sed -n '/^# --- recipe/,$p' "$0"; } | sha256sum | cut -c1-12
)"
IMAGE="localhost/volume-quota-systemd-host:bookworm-$RECIPE_HASH"

say() { echo "systemd image: $*" >&2; }

source "$(dirname "$0")/../../deploy/container/podman-ready.sh"

# --- recipe (hashed into the tag)
if "${PODMAN[@]}" image exists "$IMAGE"; then
    say "$IMAGE exists, reused"
else
    say "building $IMAGE from Debian packages (debootstrap, a few minutes)"
    start=$SECONDS
    rootfs="$(mktemp -d /var/tmp/volume-quota-systemd-rootfs.XXXXXX)"
    trap 'rm -rf "$rootfs"' EXIT
    debootstrap --variant=minbase --include="$PACKAGES" bookworm "$rootfs" "$DEBIAN_MIRROR" >&2
    # A container gets its machine id from podman at start (an empty file is the signal).
    : >"$rootfs/etc/machine-id"
    echo kafka-host >"$rootfs/etc/hostname"
    # Units that only make sense on a machine with a console or real devices.
    for unit in getty@tty1.service console-getty.service systemd-udevd.service \
        systemd-udev-trigger.service systemd-modules-load.service; do
        ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
    done
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
    tar -C "$rootfs" -c . | "${PODMAN[@]}" import \
        --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' - "$IMAGE" >&2
    rm -rf "$rootfs"
    trap - EXIT
    say "built $IMAGE in $((SECONDS - start)) s"
fi
echo "$IMAGE"
