#!/usr/bin/env bash
# Set up and run volume-quota against a local Kafka cluster it starts for you (no Kafka needed):
# installs the package, builds the broker quota callback, starts real brokers on 127.0.0.1 with
# a sidecar each, and prints every broker's volumes and the cluster decision. Ctrl-C stops all.
# Extra arguments go to `volume-quota demo` (see `volume-quota demo --help`).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install --quiet --disable-pip-version-check -e . -e deploy/local
(cd deploy/broker-plugin && mvn -q -B -DskipTests package)
exec volume-quota demo --brokers 3 "$@"
