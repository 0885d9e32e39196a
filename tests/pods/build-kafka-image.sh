#!/usr/bin/env bash
# Build the broker image tests/pods runs (kafka-image/Containerfile) and print its name on the
# last line of standard output; progress goes to standard error. Idempotent: the image is built
# only when no image has its tag (the tag carries the Kafka version and a hash of the recipe).
# Needs the base image of deploy/container/build.sh (built by it when missing) and the Maven
# jars of deploy/local (fetched by local_cluster.jars when missing). podman flags: see build.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
PODMAN=(podman --runtime runc)
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
BASE_IMAGE="localhost/volume-quota-base:bookworm-python3"
say() { echo "kafka image: $*" >&2; }

if ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
    say "no $BASE_IMAGE: building it with deploy/container/build.sh"
    bash deploy/container/build.sh >&2
fi
# The jars: deploy/local's Kafka (libs) and the kafka-tools jar (kafka-acls.sh).
read -r VERSION LIBS TOOLS < <(python3 -c '
from local_cluster.jars import ensure_kafka_jars, kafka_version
from tests.systemd.kafka_host import kafka_tools_jar_dir
print(kafka_version(), ensure_kafka_jars(), kafka_tools_jar_dir())')
RECIPE_HASH="$(cat tests/pods/kafka-image/* | sha256sum | cut -c1-12)"
IMAGE="localhost/volume-quota-test-kafka:$VERSION-$RECIPE_HASH"
if "${PODMAN[@]}" image exists "$IMAGE"; then
    say "$IMAGE exists, reused"
    echo "$IMAGE"
    exit 0
fi
context="$(mktemp -d /var/tmp/volume-quota-kafka-image.XXXXXX)"
trap 'rm -rf "$context"' EXIT
mkdir -p "$context/libs" "$context/bin" "$context/config"
cp "$LIBS"/*.jar "$TOOLS"/*.jar "$context/libs/"
run_class=/opt/kafka/bin/kafka-run-class.sh
install -m 0755 tests/pods/kafka-image/kafka-run-class.sh "$context/bin/kafka-run-class.sh"
launcher() {  # name, main class
    printf '#!/bin/bash\nexec %s %s "$@"\n' "$run_class" "$2" >"$context/bin/$1"
    chmod 0755 "$context/bin/$1"
}
launcher kafka-server-start.sh kafka.Kafka
launcher kafka-storage.sh kafka.tools.StorageTool
launcher kafka-configs.sh kafka.admin.ConfigCommand
launcher kafka-acls.sh org.apache.kafka.tools.AclCommand
launcher kafka-topics.sh org.apache.kafka.tools.TopicCommand
cp tests/pods/kafka-image/Containerfile "$context/"
cp tests/pods/kafka-image/tools-log4j2.properties "$context/config/"
say "building $IMAGE"
start=$SECONDS
"${PODMAN[@]}" build "${LIMITS[@]}" --network host --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    -f "$context/Containerfile" -t "$IMAGE" "$context" >&2
say "built $IMAGE in $((SECONDS - start)) s"
echo "$IMAGE"
