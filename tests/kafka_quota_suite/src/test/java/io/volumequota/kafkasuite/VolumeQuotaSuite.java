package io.volumequota.kafkasuite;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Properties;

import kafka.server.KafkaBroker;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What every Kafka quota test class of this suite shares: the broker properties that install
 * volume-quota's ClientQuotaCallback, the decision file it reads, and the check that the callback
 * really is in force on every broker (written to a marker file the pytest wrapper counts).
 */
final class VolumeQuotaSuite {

    static final String CALLBACK_CLASS = "io.volumequota.broker.VolumeQuotaCallback";

    /**
     * OPEN applies the base quota. Kafka's tests expect an operator's quota of Long.MAX_VALUE
     * ("unlimited") to be the quota in force, so an OPEN decision must be no stricter than that.
     */
    static final String BASE_BYTES_PER_SECOND = Long.toString(Long.MAX_VALUE);

    /** Longer than any test class runs: the decision stays valid without being rewritten. */
    static final Duration DECISION_VALIDITY = Duration.ofHours(2);

    /** The callback's metric for the decision in force: 0 OPEN, 1 THROTTLE, 2 PAUSE, -1 none. */
    static final String STATE_METRIC = "volume-quota-state";

    /** System property: the file each test appends one line to once the callback is in force. */
    static final String MARKER_FILE_PROPERTY = "volume.quota.suite.marker.file";

    private static final Duration CALLBACK_WAIT = Duration.ofSeconds(30);

    private VolumeQuotaSuite() {
    }

    enum State {
        OPEN(0), THROTTLE(1), PAUSE(2);

        final int metricValue;

        State(int metricValue) {
            this.metricValue = metricValue;
        }
    }

    /** A fresh decision file in its own temporary directory. */
    static Path newDecisionFile(State state, double throttleFactor) {
        try {
            Path dir = Files.createTempDirectory("volume-quota-decision-");
            Path file = dir.resolve("decision.json");
            dir.toFile().deleteOnExit();
            file.toFile().deleteOnExit(); // deleted first: the reverse order of registration
            writeDecision(file, state, throttleFactor);
            return file;
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the decision file", e);
        }
    }

    /** Writes a decision (schemas/quota-decision.schema.json) as the sidecar does: temp + rename. */
    static void writeDecision(Path file, State state, double throttleFactor) throws IOException {
        Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        String json = "{\"schemaVersion\": 1, \"state\": \"" + state.name() + "\", \"throttleFactor\": "
                + throttleFactor + ", \"decidedAt\": \"" + now + "\", \"validUntil\": \""
                + now.plus(DECISION_VALIDITY) + "\", \"causedByMissingData\": false, \"reasons\": []}\n";
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, json, StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The broker properties of docs/broker-plugin.md "Configuration", for this decision file. */
    static void addCallbackConfig(Properties props, Path decisionFile) {
        props.setProperty("client.quota.callback.class", CALLBACK_CLASS);
        props.setProperty("volume.quota.decision.path", decisionFile.toString());
        props.setProperty("volume.quota.produce.base.bytes.per.second", BASE_BYTES_PER_SECOND);
        // Fail safe, the default: a decision that is not read or not valid pauses every producer.
        props.setProperty("volume.quota.on.missing", "PAUSE");
        props.setProperty("volume.quota.max.validity.ms", Long.toString(DECISION_VALIDITY.toMillis()));
    }

    /**
     * Waits until every broker's callback reports the expected decision through its own metric,
     * which exists only if the broker loaded and configured the callback, then records it.
     */
    static void assertCallbackInForce(scala.collection.Iterable<KafkaBroker> brokers, State expected,
                                      String testName) {
        long deadline = System.nanoTime() + CALLBACK_WAIT.toNanos();
        StringBuilder brokerIds = new StringBuilder();
        for (KafkaBroker broker : CollectionConverters.asJava(brokers)) {
            Double state = null;
            while (true) {
                state = stateMetric(broker);
                if (state != null && state == expected.metricValue) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    fail("broker " + broker.config().brokerId() + ": " + CALLBACK_CLASS
                            + (state == null ? " is not loaded (no " + STATE_METRIC + " metric)"
                                : " reports " + STATE_METRIC + "=" + state + ", expected "
                                    + expected.metricValue + " (" + expected + ")"));
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            brokerIds.append(brokerIds.length() == 0 ? "" : ",").append(broker.config().brokerId());
        }
        recordMarker("callback-in-force state=" + expected + " brokers=" + brokerIds + " test=" + testName);
    }

    private static Double stateMetric(KafkaBroker broker) {
        for (Map.Entry<MetricName, KafkaMetric> entry : broker.metrics().metrics().entrySet()) {
            MetricName name = entry.getKey();
            if (STATE_METRIC.equals(name.name()) && "VolumeQuotaCallback".equals(name.tags().get("class"))
                    && "broker".equals(name.tags().get("role"))) {
                Object value = entry.getValue().metricValue();
                return value instanceof Number number ? number.doubleValue() : null;
            }
        }
        return null;
    }

    private static void recordMarker(String line) {
        String file = System.getProperty(MARKER_FILE_PROPERTY);
        if (file == null) {
            return;
        }
        try {
            Files.writeString(Paths.get(file), line + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the marker file " + file, e);
        }
    }
}
