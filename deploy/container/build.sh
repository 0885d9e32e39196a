#!/usr/bin/env bash
# Build the volume-quota image with podman on this machine (CI, or a fresh Debian machine as root)
# and print its image id on the last line of standard output; progress goes to standard error.
#
#   bash deploy/container/build.sh            # the sidecar image: localhost/volume-quota:0.1.0
#   bash deploy/container/build.sh history    # the history job:  localhost/volume-quota-history:0.1.0
#
# Idempotent: podman, runc and debootstrap are installed only when missing, the base image is
# built only when no image has its tag, the callback jar only when missing, and podman's layer
# cache makes a rebuild without changes take seconds.
#
# How podman runs here, and why:
# - No container registry is reachable, only Debian's and the language package registries, so
#   the public base image (python:3.11-slim, the Dockerfile's default for users) cannot be
#   pulled. The base is built from Debian packages instead (debootstrap: bookworm's python3
#   3.11 with venv and ca-certificates), imported once with `podman import` and passed as
#   PYTHON_IMAGE.
# - The callback jar is built on the host with Maven (which reaches Maven Central here) and
#   taken from the build context (PLUGIN_JAR=context), since the Maven image cannot be pulled;
#   so is the Prometheus JMX exporter agent, fetched with mvn (dependency:copy).
# - Runtime: runc, passed explicitly. crun (podman's first choice when installed) fails on this
#   machine's cgroups (v1, hybrid mode); this script installs runc only, and naming it keeps a
#   crun installed later from being picked.
# - Ulimits: podman asks runc for nofile=1048576 by default, above this machine's hard limit
#   (20000), and runc's setrlimit then fails with EPERM ("error setting rlimit type 7"); so
#   every build and run passes nofile and nproc limits within the hard limits.
# - Storage driver: podman's default for root, overlay, works here (root filesystem ext4, kernel
#   overlayfs available), so none is forced. vfs would also work but copies every layer in
#   full; and podman refuses to open a store with a driver other than the one it was created
#   with, so forcing one here would break every later podman command that does not pass it
#   too. If `podman info` fails, this script stops and says so.
# - Network: host (no CNI setup needed; downloads during the build go through the host's
#   network and its TLS proxy).
# - The proxy's CA: the host's CA bundle is given to the build as the secret `ca`, mounted only
#   into the RUN steps that call pip (PIP_CERT), never copied into a layer.
set -euo pipefail
cd "$(dirname "$0")/../.."

TARGET="${1:-sidecar}"
case "$TARGET" in
    sidecar) IMAGE="localhost/volume-quota:0.1.0" ;;
    history) IMAGE="localhost/volume-quota-history:0.1.0" ;;
    *) echo "usage: $0 [sidecar|history]" >&2; exit 2 ;;
esac
BASE_IMAGE="localhost/volume-quota-base:bookworm-python3"
DEBIAN_MIRROR="${VOLUME_QUOTA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DEBIAN_KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"
CA_BUNDLE="${VOLUME_QUOTA_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
JAR="deploy/broker-plugin/target/volume-quota-broker-plugin-0.1.0.jar"
# The JMX exporter agent: its version and SHA-256 are the Dockerfile's ARGs; fetched with mvn
# (Maven Central) into deploy/container/target/ for the build context, and kept only when its
# SHA-256 is the pinned one (fetch-jmx-exporter.sh; the image checks it again).
JMX_EXPORTER_VERSION="$(sed -n 's/^ARG JMX_EXPORTER_VERSION=//p' deploy/container/Dockerfile)"
JMX_EXPORTER_SHA256="$(sed -n 's/^ARG JMX_EXPORTER_SHA256=//p' deploy/container/Dockerfile)"
AGENT="deploy/container/target/jmx_prometheus_javaagent.jar"
# The history target's Spark Kafka source: the jars spark_history/connector.py names, for the
# pyspark pin of pyproject.toml, fetched with mvn into the build context (the image never runs
# mvn). fetch_dependencies keeps the directory complete or fetches it again.
SPARK_VERSION="$(sed -n 's/^ *"pyspark==\([^"]*\)".*/\1/p' pyproject.toml)"
CONNECTOR_DIR="deploy/container/target/spark-kafka-connector"
# The flags every podman command needs here (see above); tests/container passes the same.
PODMAN=(podman --runtime runc)
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

say() { echo "container image: $*" >&2; }

source deploy/container/podman-ready.sh

if "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
    say "base image $BASE_IMAGE exists, reused"
else
    say "building base image $BASE_IMAGE from Debian packages (debootstrap, about a minute)"
    rootfs="$(mktemp -d /var/tmp/volume-quota-rootfs.XXXXXX)"
    trap 'rm -rf "$rootfs"' EXIT
    # The suite is pinned by its code name (bookworm, never "stable"), and the Release file's
    # signature is checked against Debian's archive keys: with --keyring debootstrap refuses an
    # unsigned or wrongly signed archive instead of going on unchecked, and every package is
    # then checked against the SHA-256 in the signed index. The package versions are those of
    # the archive on the day of the build (deb.debian.org keeps no older ones): they are
    # printed below and kept in the image as /etc/volume-quota-base-packages.txt.
    debootstrap --variant=minbase --keyring="$DEBIAN_KEYRING" \
        --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "$DEBIAN_MIRROR" >&2
    chroot "$rootfs" dpkg-query -W -f '${Package}=${Version}\n' \
        | tee "$rootfs/etc/volume-quota-base-packages.txt" >&2
    # What a container never needs: downloaded .deb files, package lists, documentation.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
    tar -C "$rootfs" -c . \
        | "${PODMAN[@]}" import --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >&2
    rm -rf "$rootfs"
    trap - EXIT
fi

if [[ -f "$JAR" ]]; then
    say "callback jar $JAR exists, reused"
else
    say "building the callback jar (mvn package; its tests run in tests/run.sh)"
    (cd deploy/broker-plugin && mvn -q -B -DskipTests package) >&2
fi

# Reused when its SHA-256 is the pinned one, else fetched again; never used unchecked.
bash deploy/container/fetch-jmx-exporter.sh "$JMX_EXPORTER_VERSION" "$JMX_EXPORTER_SHA256" "$AGENT"

if [[ "$TARGET" == history ]]; then
    [[ -n "$SPARK_VERSION" ]] || { say "no pyspark==<version> pin in pyproject.toml"; exit 1; }
    say "Spark Kafka connector $SPARK_VERSION into $CONNECTOR_DIR (mvn, once)"
    python3 -c 'import sys; from pathlib import Path
from spark_history.connector import ensure_connector_jars
print(*ensure_connector_jars(sys.argv[1], Path(sys.argv[2]).resolve()), sep="\n")' \
        "$SPARK_VERSION" "$CONNECTOR_DIR" >&2
fi

say "building $IMAGE (target $TARGET)"
start=$SECONDS
"${PODMAN[@]}" build "${LIMITS[@]}" --network host \
    --secret "id=ca,src=$CA_BUNDLE" \
    --build-arg "PYTHON_IMAGE=$BASE_IMAGE" \
    --build-arg PLUGIN_JAR=context \
    --build-arg "JMX_EXPORTER_VERSION=$JMX_EXPORTER_VERSION" \
    --build-arg "JMX_EXPORTER_SHA256=$JMX_EXPORTER_SHA256" \
    --build-arg "SPARK_VERSION=$SPARK_VERSION" \
    --ignorefile deploy/container/Dockerfile.dockerignore \
    -f deploy/container/Dockerfile --target "$TARGET" -t "$IMAGE" . >&2
say "built $IMAGE in $((SECONDS - start)) s, $("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE") bytes"
"${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE"
