#!/usr/bin/env bash
# README's first command: watch volume-quota keep a Kafka cluster from filling its disk.
# Installs the package and the local cluster, builds the broker quota callback, then runs the
# scripted demo on three real brokers on 127.0.0.1 with a sidecar each: producers at full rate
# (OPEN), a broker's log dir filling with Kafka records (THROTTLE), the hard limit (PAUSE), and
# the space freed with DeleteRecords (OPEN again). Ctrl-C stops everything and removes its data.
# Extra arguments go to `volume-quota demo` (see `volume-quota demo --help`), e.g.
# `--scenario none` to only start the cluster and watch.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install --quiet --disable-pip-version-check -e . -e deploy/local
(cd deploy/broker-plugin && mvn -q -B -DskipTests package)
exec volume-quota demo --brokers 3 "$@"
