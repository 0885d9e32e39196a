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

echo "== static checks"
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy

echo "== broker quota callback (Java): JUnit tests and the jar (the decoder fuzz tests run it)"
(cd deploy/broker-plugin && mvn -q -B package)
(cd deploy/strimzi/validation && mvn -q -B test)
echo "== Kafka's own quota tests: their test jars' classpath (Maven Central, cached by version)"
bash tests/kafka_quota_suite/run-kafka-quota-tests.sh --resolve-only

echo "== unit tests (no broker, no network, no image)"
fast=(tests/schemas tests/consumer tests/publisher tests/cli tests/volume_quota tests/test_architecture.py)
python3 -m pytest -q "${fast[@]}"

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
