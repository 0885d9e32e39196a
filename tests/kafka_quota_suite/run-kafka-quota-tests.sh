#!/usr/bin/env bash
# Runs Kafka's own quota integration tests (the test jar kafka_2.13:<version>:test from Maven
# Central) with volume-quota's ClientQuotaCallback installed on every broker and an OPEN decision:
# the subclasses in src/test/java only add the callback's broker properties, write its decision
# file and check that the callback is in force; Kafka's assertions run unchanged.
#
# Usage: bash tests/kafka_quota_suite/run-kafka-quota-tests.sh [--all | --resolve-only | SELECTOR...]
#   (none)          the CI subset (see SUBSET below and tests/kafka_quota_suite/README.md)
#   --all           every test of Kafka's four classes (both consumer group protocols) and both
#                   PAUSE decision tests
#   --resolve-only  resolve the classpath and compile the subclasses, run nothing
#   SELECTOR...     console launcher selectors, e.g. --select-class=io.volumequota.kafkasuite.VolumeQuotaUserQuotaTest
#
# Environment:
#   VOLUME_QUOTA_PLUGIN_JAR    the callback jar (default deploy/broker-plugin/target/volume-quota-broker-plugin-0.1.0.jar)
#   KAFKA_QUOTA_SUITE_VERSION  Kafka version (default: kafka.version of deploy/local/kafka-jars/pom.xml)
#   KAFKA_QUOTA_SUITE_OUT      output directory (default: a new temporary directory); it gets
#                              console.txt (the launcher's tree and summary), markers.txt (a
#                              line each time a test saw every broker's callback report its
#                              decision: OPEN after the set-up, PAUSE in the PAUSE tests),
#                              brokers.log (the brokers' WARN and the callback's INFO lines)
# Cache: ${XDG_CACHE_HOME:-~/.cache}/volume-quota/kafka-quota-suite-<version>/ holds the resolved
# classpath (keyed by the POM's hash) and the compiled subclasses (keyed by the sources' hash).
# Exit status: the console launcher's (0 only if every selected test passed).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

version="${KAFKA_QUOTA_SUITE_VERSION:-$(sed -n 's:.*<kafka\.version>\s*\([^<[:space:]]*\)\s*</kafka\.version>.*:\1:p' \
    "$repo/deploy/local/kafka-jars/pom.xml" | head -n 1)}"
[[ -n "$version" ]] || { echo "run-kafka-quota-tests.sh: no Kafka version" >&2; exit 2; }
plugin_jar="${VOLUME_QUOTA_PLUGIN_JAR:-$repo/deploy/broker-plugin/target/volume-quota-broker-plugin-0.1.0.jar}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/volume-quota/kafka-quota-suite-$version"
package="io.volumequota.kafkasuite"

# The CI subset (README.md explains the choice): every quota level, each with Kafka's default
# quota of that level checked in the set-up and an unlimited override; the request-time quota
# for every API; the removal of a client-id and of a user override; a PAUSE decision against an
# unlimited operator quota and against a stricter one. The consumer group protocol plays no part
# in quotas: the classic one only (iteration [0]). --all also runs the slow
# testProducerConsumerOverrideLowerQuota (80 to 110 s each) and testThrottledProducerConsumer.
iteration() { echo "--select-iteration=method:$package.$1(java.lang.String)[0]"; }
SUBSET=(
    "--select-class=$package.VolumeQuotaRequestQuotaTest"
    "$(iteration VolumeQuotaClientIdQuotaTest#testProducerConsumerOverrideUnthrottled)"
    "$(iteration VolumeQuotaClientIdQuotaTest#testThrottledRequest)"
    "$(iteration VolumeQuotaClientIdQuotaTest#testQuotaOverrideDelete)"
    "$(iteration VolumeQuotaUserQuotaTest#testProducerConsumerOverrideUnthrottled)"
    "$(iteration VolumeQuotaUserQuotaTest#testQuotaOverrideDelete)"
    "$(iteration VolumeQuotaUserClientIdQuotaTest#testProducerConsumerOverrideUnthrottled)"
    "$(iteration VolumeQuotaUserClientIdQuotaTest#testThrottledRequest)"
    "--select-method=$package.VolumeQuotaPauseDecisionTest#thePauseFloorIsStricterThanAnUnlimitedOperatorQuota"
    "--select-method=$package.VolumeQuotaPauseDecisionTest#anOperatorQuotaStricterThanThePauseFloorStaysInForce"
)
ALL=(
    "--select-method=$package.VolumeQuotaPauseDecisionTest#thePauseFloorIsStricterThanAnUnlimitedOperatorQuota"
    "--select-method=$package.VolumeQuotaPauseDecisionTest#anOperatorQuotaStricterThanThePauseFloorStaysInForce"
    "--select-class=$package.VolumeQuotaClientIdQuotaTest"
    "--select-class=$package.VolumeQuotaUserQuotaTest"
    "--select-class=$package.VolumeQuotaUserClientIdQuotaTest"
    "--select-class=$package.VolumeQuotaRequestQuotaTest"
)

resolve_only=false
selectors=("${SUBSET[@]}")
if [[ $# -gt 0 ]]; then
    case "$1" in
        --all) selectors=("${ALL[@]}") ;;
        --resolve-only) resolve_only=true ;;
        *) selectors=("$@") ;;
    esac
fi

start=$SECONDS
mkdir -p "$cache"
pom_hash="$(sha256sum "$here/pom.xml" | cut -c1-16)"
classpath_file="$cache/classpath-$pom_hash.txt"
classpath_complete() { # every jar of the cached classpath still in the local Maven repository
    local jar
    [[ -s "$classpath_file" ]] || return 1
    while IFS= read -r -d: jar; do [[ -f "$jar" ]] || return 1; done < <(cat "$classpath_file"; echo :)
}
if classpath_complete; then
    echo "== Kafka $version test classpath: cached ($classpath_file)" >&2
else
    echo "== Kafka $version test classpath: resolving with Maven (kafka_2.13:test and its test jars)" >&2
    partial="$classpath_file.partial"
    mvn -q -B -f "$here/pom.xml" -Dkafka.version="$version" \
        dependency:build-classpath -Dmdep.outputFile="$partial" >&2
    mv -f "$partial" "$classpath_file"
    echo "== resolved in $((SECONDS - start)) s" >&2
fi
classpath="$(cat "$classpath_file")"

sources_hash="$( (cd "$here" && find src -name '*.java' -print0 | sort -z | xargs -0 sha256sum;
    sha256sum log4j2.properties; echo "$pom_hash") | sha256sum | cut -c1-16)"
classes="$cache/classes-$sources_hash"
if [[ -d "$classes" ]]; then
    echo "== subclasses: compiled ($classes)" >&2
else
    echo "== subclasses: compiling" >&2
    staging="$(mktemp -d "$cache/.classes.XXXXXX")"
    find "$here/src/test/java" -name '*.java' -print0 |
        xargs -0 javac -nowarn --release 17 -encoding UTF-8 -cp "$classpath" -d "$staging"
    cp "$here/log4j2.properties" "$staging/"
    mv "$staging" "$classes"
fi
if $resolve_only; then
    echo "== ready in $((SECONDS - start)) s" >&2
    exit 0
fi

[[ -f "$plugin_jar" ]] || {
    echo "run-kafka-quota-tests.sh: $plugin_jar is missing (cd deploy/broker-plugin && mvn -q -B package)" >&2
    exit 2
}
out="${KAFKA_QUOTA_SUITE_OUT:-$(mktemp -d -t kafka-quota-suite.XXXXXX)}"
mkdir -p "$out"
rm -f "$out/console.txt" "$out/markers.txt" "$out/brokers.log"
echo "== Kafka $version quota tests with $(basename "$plugin_jar") (output in $out)" >&2
status=0
# MiniKdc (UserQuotaTest's Kerberos) resets the JDK's Kerberos configuration, as Kafka's build lets it.
java -Xmx2g --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED \
    -Dlog4j2.configurationFile="$classes/log4j2.properties" \
    -Dvolume.quota.suite.log.file="$out/brokers.log" \
    -Dvolume.quota.suite.marker.file="$out/markers.txt" \
    -cp "$classes:$classpath:$plugin_jar" \
    org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --disable-ansi-colors --details=tree \
    "${selectors[@]}" >"$out/console.txt" 2>&1 || status=$?
# The tree, each failure's message and the summary (the brokers' own output stays in the file).
awk '/^[│├└]|Test run finished|tests (found|successful|failed|skipped|aborted|started)|=> /' \
    "$out/console.txt" >&2
echo "== Kafka quota tests: exit $status after $((SECONDS - start)) s; $(wc -l <"$out/markers.txt" 2>/dev/null || echo 0) test(s) saw the callback in force" >&2
echo "$out"
exit "$status"
