#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks (idempotent), then runs every suite.
# Fast tier first (lint, types, the Java and Python unit tests), so a plain mistake fails in
# minutes; then the builds (helm, a Kubernetes control plane, the images), then every suite that
# needs them: chart and Kubernetes, systemd, the images, real filesystems, real Kafka brokers,
# the fault matrix, end to end, Spark. Nothing is deselected: the two pytest runs below take
# disjoint halves of tests/, and the second one takes every folder the first does not name.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]' -e deploy/local

# The Java lane runs beside the Python checks (each mostly keeps one core busy): the broker
# quota callback's JUnit tests (the Jazzer decoder fuzz target among them) and its jar, the
# Strimzi recipe's validation, and the classpath of Kafka's own quota tests. Its output is shown
# when it ends; a failure stops the run there.
java_log="$(mktemp)"
(
    set -e
    (cd deploy/broker-plugin && mvn -q -B package)
    (cd deploy/strimzi/validation && mvn -q -B test)
    bash tests/kafka_quota_suite/run-kafka-quota-tests.sh --resolve-only
) >"$java_log" 2>&1 &
java_lane=$!
stop_tree() {
    local child
    for child in $(pgrep -P "$1" || true); do stop_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
trap 'stop_tree "$java_lane"; rm -f "$java_log"' EXIT

echo "== static checks"
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy

echo "== unit tests (no broker, no network, no image)"
fast=(tests/schemas tests/consumer tests/publisher tests/cli tests/volume_quota tests/test_architecture.py)
python3 -m pytest -q "${fast[@]}"

echo "== Java: the broker quota callback (JUnit, the jar), the Strimzi recipe's validation,"
echo "   the classpath of Kafka's own quota tests (Maven Central, cached by version)"
java_status=0
wait "$java_lane" || java_status=$?
cat "$java_log"
if [[ $java_status -ne 0 ]]; then
    echo "the Java lane failed (exit status $java_status)" >&2
    exit "$java_status"
fi

echo "== chart tools (helm built with go install, CRD validators from npm; cached)"
bash deploy/helm/install-helm.sh

echo "== Kubernetes control plane (kube-apiserver, controller-manager, scheduler, kubectl built from the Go module proxy; etcd from Debian; cached)"
bash tests/kubernetes/install-control-plane.sh

echo "== container images (podman: the sidecar, the history job, a Debian host with systemd as PID 1)"
bash deploy/container/build.sh
bash deploy/container/build.sh history
bash tests/systemd/build-systemd-image.sh >/dev/null

bash tests/spark/install_chromium.sh
# tests/faults cuts one process off the network with iptables' cgroup match.
if ! command -v iptables >/dev/null; then
    echo "== iptables for the fault tests (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null
fi

# tests/real_broker/test_broker_clock_ahead.py runs one broker under libfaketime (Debian's).
bash tests/real_broker/install-faketime.sh >/dev/null
echo "== every other suite"
slow=()
for path in tests/*/ tests/test_*.py; do
    path="${path%/}"
    [[ " ${fast[*]} " == *" $path "* ]] || slow+=("$path")
done
python3 -m pytest --durations=40 "${slow[@]}" "$@"
