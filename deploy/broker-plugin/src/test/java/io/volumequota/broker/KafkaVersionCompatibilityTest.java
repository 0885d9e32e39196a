package io.volumequota.broker;

import static io.volumequota.broker.TestSupport.decisionJson;
import static io.volumequota.broker.TestSupport.eventually;
import static io.volumequota.broker.TestSupport.writeAtomically;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The callback classes on a Kafka 4.0 classpath, which lacks {@code Monitorable} and
 * {@code PluginMetrics} (added in 4.1 by KIP-877).
 *
 * <p>A class loader that hides those two interfaces loads the plugin's own classes afresh from
 * the build output, the rest (kafka-clients, kafka-server) from the test class path. That
 * {@link VolumeQuotaCallback} fails to load there exactly as it does on a real 4.0 broker shows
 * the simulation is faithful; {@code tests/real_broker/test_kafka_versions.py} runs real 4.0
 * to 4.3 brokers.
 */
class KafkaVersionCompatibilityTest {

    private static final Set<String> ADDED_IN_KAFKA_4_1 = Set.of(
            "org.apache.kafka.common.metrics.Monitorable",
            "org.apache.kafka.common.metrics.PluginMetrics");
    private static final double FLOOR = 128 * 1024;
    private static final KafkaPrincipal ALICE = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice");

    @TempDir
    Path dir;

    /** Parent: the test class path minus the 4.1 interfaces and minus the plugin's own classes. */
    private static final class Kafka40Parent extends ClassLoader {
        Kafka40Parent() {
            super(KafkaVersionCompatibilityTest.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (ADDED_IN_KAFKA_4_1.contains(name) || name.startsWith("io.volumequota.")) {
                throw new ClassNotFoundException(name);
            }
            return super.loadClass(name, resolve);
        }
    }

    private static URLClassLoader kafka40Loader() {
        URL pluginClasses = QuotaCallbackCore.class.getProtectionDomain().getCodeSource().getLocation();
        return new URLClassLoader(new URL[] {pluginClasses}, new Kafka40Parent());
    }

    @Test
    void theCallbackWithMetricsCannotLoadWithoutMonitorable() throws IOException {
        try (URLClassLoader loader = kafka40Loader()) {
            NoClassDefFoundError error = assertThrows(NoClassDefFoundError.class,
                    () -> Class.forName(VolumeQuotaCallback.class.getName(), true, loader));
            assertTrue(error.getMessage().contains("org/apache/kafka/common/metrics/Monitorable"),
                    error.getMessage());
        }
    }

    @Test
    void theCallbackWithoutMetricsLoadsAndAppliesTheDecisionWithoutMonitorable() throws Exception {
        Path decision = dir.resolve("decision.json");
        writeAtomically(decision, decisionJson("PAUSE", 0.0, Instant.now(), Duration.ofMinutes(5)));
        Map<String, Object> config = TestSupport.baseConfig(decision);
        config.put(VolumeQuotaConfig.ON_MISSING, "OPEN"); // only the file can pause
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "20");
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
        try (URLClassLoader loader = kafka40Loader()) {
            Class<?> loaded = Class.forName(VolumeQuotaCallbackWithoutMetrics.class.getName(), true, loader);
            assertSame(loader, loaded.getClassLoader(), "loaded afresh, without Monitorable");
            ClientQuotaCallback callback = (ClientQuotaCallback) loaded.getDeclaredConstructor().newInstance();
            try {
                callback.configure(config);
                Map<String, String> tags = callback.quotaMetricTags(ClientQuotaType.PRODUCE, ALICE, "c");
                assertTrue(eventually(Duration.ofSeconds(10),
                        () -> Double.valueOf(FLOOR).equals(callback.quotaLimit(ClientQuotaType.PRODUCE, tags))),
                        "PAUSE from the decision file: the floor, got "
                                + callback.quotaLimit(ClientQuotaType.PRODUCE, tags));
            } finally {
                callback.close();
            }
        }
    }

    @Test
    void theCallbackWithoutMetricsTellsWhetherTheBrokerCouldHaveHadMetrics() throws IOException {
        try (URLClassLoader loader = kafka40Loader()) {
            assertFalse(VolumeQuotaCallbackWithoutMetrics.brokerHasPluginMetrics(loader), "Kafka 4.0");
        }
        assertTrue(VolumeQuotaCallbackWithoutMetrics.brokerHasPluginMetrics(
                KafkaVersionCompatibilityTest.class.getClassLoader()), "Kafka 4.1+: use VolumeQuotaCallback");
    }
}
