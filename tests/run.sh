#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks (idempotent), then runs every suite.
# Fast tier first (lint, types, the Java and Python unit tests), so a plain mistake fails in
# minutes; then the builds (helm, a Kubernetes control plane, the images), then every suite that
# needs them: chart and Kubernetes, systemd, the images, real filesystems, real Kafka brokers,
# the fault matrix, end to end, Spark. Nothing is deselected: the fast tier and the two lanes of
# slow suites take disjoint parts of tests/, and the first lane takes every folder the others do
# not name.
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
fast=(tests/schemas tests/consumer tests/publisher tests/cli tests/volume_quota tests/spark_history_pure
    tests/test_architecture.py)
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
# Kafka's own quota integration tests run first, alone: their throttle-time assertions are
# Kafka's, made for a machine whose CPU their brokers do not share (under the second lane's load
# one of 17 failed). Then the slow suites run in two lanes at once, one per core, each mostly
# waiting on brokers, containers or the JVM: the Kafka brokers on this host (real brokers,
# faults, end to end, the demo) in one; Spark, the images, systemd and Kubernetes in the other.
# Each lane has its own pytest temporary root; the second lane's report follows the first's.
echo "== Kafka's own quota tests with the callback installed (alone)"
quota_status=0
python3 -m pytest -p no:cacheprovider --durations=5 tests/kafka_quota_suite "$@" || quota_status=$?
second=(tests/spark tests/real_history tests/chart tests/kubernetes tests/pods tests/container
    tests/systemd tests/strimzi tests/supply_chain tests/benchmarks)
first=()
for path in tests/*/ tests/test_*.py; do
    path="${path%/}"
    [[ " ${fast[*]} ${second[*]} tests/kafka_quota_suite " == *" $path "* ]] || first+=("$path")
done
echo "== every other suite, in two lanes:"
echo "   ${first[*]}"
echo "   ${second[*]}"
second_log="$(mktemp)"
lanes_root="$(mktemp -d)"
python3 -m pytest -p no:cacheprovider --basetemp="$lanes_root/second" --durations=20 \
    "${second[@]}" "$@" >"$second_log" 2>&1 &
second_lane=$!
trap 'stop_tree "$java_lane"; stop_tree "$second_lane"; rm -rf "$java_log" "$second_log" "$lanes_root"' EXIT
first_log="$lanes_root/first.log"
first_status=0
python3 -m pytest --basetemp="$lanes_root/first" --durations=20 "${first[@]}" "$@" 2>&1 |
    tee "$first_log" || first_status=$?
second_status=0
wait "$second_lane" || second_status=$?
echo "== the second lane: ${second[*]}"
cat "$second_log"
if [[ $quota_status -ne 0 || $first_status -ne 0 || $second_status -ne 0 ]]; then
    # The run's last lines name what failed in either lane (a reader of the tail sees the
    # second lane's log; the first lane's summary is far above it).
    echo "== what failed in the lanes"
    grep -h -E '^(FAILED|ERROR) ' "$first_log" "$second_log" ||
        echo "(no FAILED or ERROR line; the lanes' logs are above)"
    echo "failed: Kafka's quota tests exit status $quota_status, first lane $first_status," \
        "second lane $second_status" >&2
    exit 1
fi
