#!/usr/bin/env bash
# Fetches the Prometheus JMX exporter java agent (io.prometheus.jmx:jmx_prometheus_javaagent)
# from Maven Central with mvn and keeps it only when its SHA-256 is the pinned one:
#
#   bash deploy/container/fetch-jmx-exporter.sh VERSION SHA256 DESTINATION
#
# The jar is written to DESTINATION (and VERSION to DESTINATION's .version file, beside it)
# only after the check passes; on a mismatch nothing is written and the exit status is 1.
# An existing DESTINATION with the pinned SHA-256 is kept without a download.
#
# The pin is the Dockerfile's ARG JMX_EXPORTER_SHA256 (build.sh passes it). To move to another
# version: fetch it, compare its SHA-1 with the .sha1 file Maven Central publishes beside the jar
# (https://repo1.maven.org/maven2/io/prometheus/jmx/jmx_prometheus_javaagent/VERSION/), then pin
# `sha256sum` of that jar.
set -euo pipefail

if (($# != 3)); then
    echo "usage: $0 VERSION SHA256 DESTINATION" >&2
    exit 2
fi
version="$1" expected="$2" destination="$3"
if [[ ! "$expected" =~ ^[0-9a-f]{64}$ ]]; then
    echo "fetch-jmx-exporter.sh: '$expected' is not a SHA-256 (64 lower-case hex digits)" >&2
    exit 2
fi
sha256() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$destination" && "$(sha256 "$destination")" == "$expected" ]]; then
    echo "JMX exporter agent $version exists with the pinned SHA-256, reused" >&2
    echo "$version" >"${destination%.jar}.version"
    exit 0
fi
mkdir -p "$(dirname "$destination")"
staging="$(mktemp -d "$(dirname "$destination")/.jmx-exporter.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
echo "fetching the JMX exporter agent $version (mvn dependency:copy)" >&2
mvn -q -B dependency:copy \
    "-Dartifact=io.prometheus.jmx:jmx_prometheus_javaagent:$version" \
    "-DoutputDirectory=$staging" >&2
jar="$staging/jmx_prometheus_javaagent-$version.jar"
actual="$(sha256 "$jar")"
if [[ "$actual" != "$expected" ]]; then
    echo "fetch-jmx-exporter.sh: SHA-256 mismatch for jmx_prometheus_javaagent-$version.jar:" \
        "expected $expected, got $actual; not used" >&2
    rm -f "$destination" "${destination%.jar}.version"
    exit 1
fi
mv -f "$jar" "$destination"
echo "$version" >"${destination%.jar}.version"
echo "JMX exporter agent $version fetched, SHA-256 $actual as pinned" >&2
