package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;

/** The JMX byte-rate reader against MBeans published by Kafka's own JmxReporter. */
class JmxObservedRatesTest {

    private static Sensor produceSensor(Metrics metrics, String user, String clientId) {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("user", user);
        tags.put("client-id", clientId);
        // The broker's quota sensors: quota.window.num = 11 samples of quota.window.size.seconds = 1.
        Sensor sensor = metrics.sensor("Produce-" + user + "-" + clientId,
                new MetricConfig().samples(11).timeWindow(1, java.util.concurrent.TimeUnit.SECONDS));
        sensor.add(new MetricName("byte-rate", "Produce", "", tags), new Rate());
        return sensor;
    }

    /** A settable clock for Kafka's metrics. */
    private static final class SettableTime implements Time {
        long ms = 1_700_000_000_000L;

        @Override
        public long milliseconds() {
            return ms;
        }

        @Override
        public long nanoseconds() {
            return ms * 1_000_000L;
        }

        @Override
        public void sleep(long duration) {
            ms += duration;
        }

        @Override
        public void waitObject(Object obj, java.util.function.Supplier<Boolean> condition, long deadlineMs) {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void readsEveryPrincipalsByteRateIncludingNamesJmxMustQuote() throws Exception {
        SettableTime time = new SettableTime();
        try (Metrics metrics = new Metrics(new MetricConfig(), List.of(new JmxReporter()), time, true,
                new KafkaMetricsContext("kafka.server"))) {
            Sensor alice = produceSensor(metrics, "alice", "");
            Sensor ops = produceSensor(metrics, "CN=ops,O=example", "");
            Sensor perClient = produceSensor(metrics, "bob", "app-1"); // another callback's tags: ignored
            for (int i = 0; i < 10; i++) {
                alice.record(1000, time.milliseconds());
                ops.record(500, time.milliseconds());
                perClient.record(7, time.milliseconds());
                time.sleep(1000);
            }
            Map<String, Double> rates = new JmxObservedRates().produceByteRates();
            // 10 x 1000 bytes in 10 one-second samples: about 1000 B/s, exactly what the metric says.
            Map<String, String> aliceTags = new LinkedHashMap<>();
            aliceTags.put("user", "alice");
            aliceTags.put("client-id", "");
            assertEquals((Double) metrics.metric(new MetricName("byte-rate", "Produce", "", aliceTags)).metricValue(),
                    rates.get("alice"));
            assertEquals(1000.0, rates.get("alice"), 100.0);
            assertEquals(rates.get("alice") / 2, rates.get("CN=ops,O=example"), 1e-9);
            assertFalse(rates.containsKey("bob"));
        }
    }

    @Test
    void withoutJmxReporterInMetricReportersTheRatesAreNeverAvailable() {
        ObservedRates rates = JmxObservedRates.forBroker(Map.of("metric.reporters", "com.example.OtherReporter"));
        assertThrows(IllegalStateException.class, rates::produceByteRates);
        assertFalse(JmxObservedRates.jmxReporterListed(Map.of("metric.reporters", "")));
        // Kafka's default metric.reporters lists JmxReporter; a list value is read like a string.
        assertTrue(JmxObservedRates.jmxReporterListed(Map.of()));
        assertTrue(JmxObservedRates.jmxReporterListed(
                Map.of("metric.reporters", "com.example.A, org.apache.kafka.common.metrics.JmxReporter")));
        assertTrue(JmxObservedRates.jmxReporterListed(
                Map.of("metric.reporters", List.of("org.apache.kafka.common.metrics.JmxReporter"))));
        assertInstanceOf(JmxObservedRates.class, JmxObservedRates.forBroker(Map.of()));
    }
}
