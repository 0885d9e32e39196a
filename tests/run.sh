#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks (idempotent), then runs every suite -
# unit, property, fuzz, real filesystem, real Kafka broker and Spark. Nothing is deselected.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]' -e deploy/local

echo "== static checks"
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy

echo "== broker quota callback (Java): JUnit tests and the jar"
(cd deploy/broker-plugin && mvn -q -B package)
(cd deploy/strimzi/validation && mvn -q -B test)

echo "== chart tools (helm built with go install, CRD validators from npm; cached)"
bash deploy/helm/install-helm.sh

echo "== container image"
bash deploy/container/build.sh

bash tests/spark/install_chromium.sh
# tests/faults cuts one process off the network with iptables' cgroup match.
if ! command -v iptables >/dev/null; then
    echo "== iptables for the fault tests (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null
fi
echo "== tests"
python3 -m pytest "$@"
