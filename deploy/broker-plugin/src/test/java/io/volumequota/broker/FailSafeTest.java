package io.volumequota.broker;

import static io.volumequota.broker.TestSupport.T0;
import static io.volumequota.broker.TestSupport.decisionJson;
import static io.volumequota.broker.TestSupport.eventually;
import static io.volumequota.broker.TestSupport.writeAtomically;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.MetricValueProvider;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue section 3 (fail-safe holes), section 5 (metrics) and section 7 (one engine per process). */
class FailSafeTest {

    private static final double BASE = 10 * 1024 * 1024;
    private static final double FLOOR = 128 * 1024;
    private static final Duration DEADLINE = Duration.ofSeconds(5);
    private static final KafkaPrincipal ALICE = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice");

    @TempDir
    Path dir;

    private final TestSupport.MutableClock clock = new TestSupport.MutableClock(T0);
    private final AtomicLong mono = new AtomicLong(1_000_000);
    private final List<VolumeQuotaCallback> toClose = new java.util.ArrayList<>();

    @AfterEach
    void closeAll() {
        toClose.forEach(VolumeQuotaCallback::close);
    }

    private Path file() {
        return dir.resolve("decision.json");
    }

    private void write(String state, double factor, Duration validFor) throws IOException {
        writeAtomically(file(), decisionJson(state, factor, clock.instant(), validFor));
    }

    private Map<String, Object> config(long reloadMs, Map<String, Object> extra) {
        Map<String, Object> config = TestSupport.baseConfig(file());
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, String.valueOf(reloadMs));
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
        config.putAll(extra);
        return config;
    }

    private VolumeQuotaCallback callback(long reloadMs, Map<String, Object> extra, ObservedRates rates) {
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, mono::get, rates);
        callback.configure(config(reloadMs, extra));
        toClose.add(callback);
        return callback;
    }

    private static double limit(VolumeQuotaCallback callback, KafkaPrincipal principal) {
        Map<String, String> tags = callback.quotaMetricTags(ClientQuotaType.PRODUCE, principal, "c");
        return callback.quotaLimit(ClientQuotaType.PRODUCE, tags);
    }

    @Test
    void anErrorOnThePollerNeitherStopsItNorTheExpiryCheck() throws Exception {
        write("OPEN", 1.0, Duration.ofSeconds(30));
        AtomicInteger calls = new AtomicInteger();
        VolumeQuotaCallback callback = callback(10, Map.of(), () -> {
            calls.incrementAndGet();
            throw new StackOverflowError("simulated Error on the poller thread");
        });
        limit(callback, ALICE); // a producing principal, so the poller reads the byte rates
        assertTrue(eventually(DEADLINE, () -> calls.get() >= 5), "the reader keeps running after Errors");
        assertTrue(callback.engine().pollerErrors.get() >= 3);

        write("THROTTLE", 0.5, Duration.ofSeconds(30));
        assertTrue(eventually(DEADLINE, () -> limit(callback, ALICE) == BASE * 0.5), "new decisions still read");
        clock.advance(Duration.ofSeconds(31));
        assertTrue(eventually(DEADLINE, () -> limit(callback, ALICE) == FLOOR), "and expiry still applies");
    }

    @Test
    void aHangingReadDoesNotFreezeAnExpiredDecision() throws Exception {
        write("OPEN", 1.0, Duration.ofSeconds(30));
        CountDownLatch hung = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        VolumeQuotaCallback callback = callback(10, Map.of(), () -> {
            hung.countDown();
            release.await(); // an I/O call that never returns
            return Map.of();
        });
        try {
            limit(callback, ALICE);
            assertTrue(hung.await(5, java.util.concurrent.TimeUnit.SECONDS), "the reader is stuck");
            assertEquals(BASE, limit(callback, ALICE));
            clock.advance(Duration.ofSeconds(31));
            assertTrue(eventually(DEADLINE, () -> limit(callback, ALICE) == FLOOR),
                    "the ticker expires the decision although the reader hangs");
            assertEquals(1, callback.engine().expiries.get());
        } finally {
            release.countDown();
        }
    }

    @Test
    void aDecisionValidForYearsIsCappedAtTheMaximumValidity() throws IOException {
        write("OPEN", 1.0, Duration.ofDays(3650));
        VolumeQuotaCallback callback = callback(3_600_000, Map.of(VolumeQuotaConfig.MAX_VALIDITY_MS, "60000"),
                ObservedRates.NONE);
        assertEquals(BASE, limit(callback, ALICE));
        mono.addAndGet(60_000);
        callback.reload();
        assertEquals(BASE, limit(callback, ALICE), "valid for exactly the maximum");
        mono.addAndGet(1);
        callback.reload();
        assertEquals(FLOOR, limit(callback, ALICE), "not trusted longer than max.validity.ms after it was read");
        // The sidecar renews it: a new read starts a new maximum.
        clock.advance(Duration.ofSeconds(1));
        write("OPEN", 1.0, Duration.ofDays(3650));
        callback.reload();
        assertEquals(BASE, limit(callback, ALICE));
    }

    @Test
    void aDecisionDatedFarAheadIsRefused() throws IOException {
        writeAtomically(file(), decisionJson("OPEN", 1.0, clock.instant().plus(Duration.ofDays(365)),
                Duration.ofSeconds(30)));
        VolumeQuotaCallback callback = callback(3_600_000, Map.of(), ObservedRates.NONE);
        assertEquals(FLOOR, limit(callback, ALICE), "decidedAt a year ahead: on-missing PAUSE");
        assertEquals(VolumeQuotaCallback.class, callback.getClass());
        assertEquals(QuotaEngine.StateCode.NONE, callback.engine().state());
    }

    @Test
    void theStepDownRunsOnTheMonotonicClockWhateverTheWallClockDoes() throws IOException {
        write("PAUSE", 0.0, Duration.ofDays(3650));
        Map<String, Object> extra = Map.of(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "2",
                VolumeQuotaConfig.MAX_VALIDITY_MS, "2000000000");
        writeAtomically(file(), decisionJson("OPEN", 1.0, clock.instant(), Duration.ofDays(3650)));
        VolumeQuotaCallback callback = callback(3_600_000, extra, ObservedRates.NONE);
        write("PAUSE", 0.0, Duration.ofDays(3650));
        callback.reload();
        assertEquals(BASE / 2, callback.produceQuotaBytesPerSecond());
        // The wall clock jumps five years ahead and back (NTP): the limiter does not notice.
        clock.advance(Duration.ofDays(5 * 365));
        callback.reload();
        clock.advance(Duration.ofDays(-5 * 365));
        callback.reload();
        assertEquals(BASE / 2, callback.produceQuotaBytesPerSecond(), "no monotonic time has passed");
        for (int step = 2; step <= 7; step++) {
            mono.addAndGet(11_000);
            callback.reload();
        }
        assertEquals(FLOOR, callback.produceQuotaBytesPerSecond(),
                "5 MiB/s halves 5 times in 5 windows of 11 s (160 KiB/s), then the 128 KiB/s floor");
    }

    @Test
    void aNewerMinorSchemaVersionIsApplied() throws IOException {
        writeAtomically(file(), decisionJson("THROTTLE", 0.5, clock.instant(), Duration.ofSeconds(30))
                .replace("\"schemaVersion\": 1", "\"schemaVersion\": 1.3"));
        VolumeQuotaCallback callback = callback(3_600_000, Map.of(), ObservedRates.NONE);
        assertEquals(BASE * 0.5, limit(callback, ALICE), 1e-6);
    }

    @Test
    void excludedPrincipalsWithSurroundingSpacesAreReported() {
        Map<String, Object> config = config(250, Map.of(VolumeQuotaConfig.EXCLUDED_PRINCIPALS,
                "User:publisher; User: ops ;User:admin"));
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(config);
        assertEquals(java.util.Set.of("publisher", " ops", "admin"), parsed.excludedUserNames());
        assertEquals(1, parsed.warnings().size(), parsed.warnings().toString());
        assertTrue(parsed.warnings().get(0).contains("'User: ops'"), parsed.warnings().toString());
        List<String> harmless = VolumeQuotaConfig.parse(config(250, Map.of(VolumeQuotaConfig.EXCLUDED_PRINCIPALS,
                "User:publisher; User:admin"))).warnings();
        assertEquals(1, harmless.size(), "space after ';' is dropped, and said so");
        assertTrue(harmless.get(0).contains("ignored"), harmless.toString());
        assertTrue(VolumeQuotaConfig.parse(config(250, Map.of(VolumeQuotaConfig.EXCLUDED_PRINCIPALS,
                "User:publisher;User:admin"))).warnings().isEmpty());
    }

    @Test
    void twoCallbacksOfOneProcessShareOneEngine() throws Exception {
        write("THROTTLE", 0.5, Duration.ofMinutes(5));
        Map<String, Object> config = config(20, Map.of());
        VolumeQuotaCallback broker = new VolumeQuotaCallback();
        VolumeQuotaCallback controller = new VolumeQuotaCallback();
        broker.configure(config);
        controller.configure(new HashMap<>(config));
        try {
            assertSame(broker.engine(), controller.engine(), "combined KRaft node: one engine, one poller");
            assertSame(broker.pollerThread(), controller.pollerThread());
            assertTrue(broker.quotaResetRequired(ClientQuotaType.PRODUCE));
            assertTrue(controller.quotaResetRequired(ClientQuotaType.PRODUCE), "each role gets its own reset");
            broker.close();
            write("PAUSE", 0.0, Duration.ofMinutes(5));
            assertTrue(eventually(DEADLINE, () -> controller.produceQuotaBytesPerSecond() == FLOOR),
                    "the engine keeps running for the remaining callback");
            Thread poller = controller.pollerThread();
            controller.close();
            poller.join(DEADLINE.toMillis());
            assertFalse(poller.isAlive(), "the last callback stops it");
            VolumeQuotaCallback again = new VolumeQuotaCallback();
            again.configure(config);
            assertNotSame(broker.engine(), again.engine(), "a new engine after the last one stopped");
            again.close();
        } finally {
            broker.close();
            controller.close();
        }
    }

    @Test
    void aControllerOnlyNodeStartsNoEngineAndKeepsKafkasOwnQuotas() throws Exception {
        write("PAUSE", 0.0, Duration.ofMinutes(5));
        Map<String, Object> config = new HashMap<>(config(20, Map.of()));
        config.put("process.roles", "controller");
        VolumeQuotaCallback controllerOnly = new VolumeQuotaCallback();
        controllerOnly.configure(config);
        try {
            assertNull(controllerOnly.engine(), "no engine: controllers serve no PRODUCE request");
            assertNull(controllerOnly.pollerThread(), "no poller thread, no decision reader");
            assertNull(controllerOnly.quotaLimit(ClientQuotaType.PRODUCE, Map.of("user", "alice", "client-id", "")),
                    "no operator quota set, none of ours");
        } finally {
            controllerOnly.close();
        }
        config.put("process.roles", "broker,controller");
        VolumeQuotaCallback combined = new VolumeQuotaCallback();
        combined.configure(config);
        try {
            assertNotNull(combined.engine(), "a combined node serves PRODUCE: it has the engine");
        } finally {
            combined.close();
        }
    }

    /** A PluginMetrics that keeps what the callback registers. */
    static final class FakePluginMetrics implements PluginMetrics {
        final Map<String, MetricValueProvider<?>> metrics = new LinkedHashMap<>();

        @Override
        public MetricName metricName(String name, String description, LinkedHashMap<String, String> tags) {
            return new MetricName(name, "plugins", description, tags);
        }

        @Override
        public void addMetric(MetricName name, MetricValueProvider<?> provider) {
            metrics.put(name.name(), provider);
        }

        @Override
        public void removeMetric(MetricName name) {
            metrics.remove(name.name());
        }

        @Override
        public Sensor addSensor(String name) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void removeSensor(String name) {
        }

        double value(String name) {
            return ((Number) ((Gauge<?>) metrics.get(name)).value(new MetricConfig(), 0)).doubleValue();
        }
    }

    @Test
    void metricsShowStateQuotaAgeAndCounters() throws IOException {
        write("THROTTLE", 0.42, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback(3_600_000, Map.of(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "2"),
                ObservedRates.NONE);
        FakePluginMetrics metrics = new FakePluginMetrics();
        callback.withPluginMetrics(metrics);
        assertEquals(List.of("volume-quota-state", "volume-quota-throttle-factor",
                "volume-quota-produce-quota-bytes-per-second", "volume-quota-produce-quota-target-bytes-per-second",
                "volume-quota-produce-quota-max-bytes-per-second", "volume-quota-decision-age-seconds",
                "volume-quota-reload-errors-total", "volume-quota-expiries-total", "volume-quota-step-downs-total",
                "volume-quota-quota-changes-total", "volume-quota-quota-resets-total",
                "volume-quota-poller-errors-total", "volume-quota-decision-reader-rebuilds-total",
                "volume-quota-tracked-principals", "volume-quota-quota-limit-errors-total",
                "volume-quota-observed-rate-available"), List.copyOf(metrics.metrics.keySet()));
        assertEquals(1, metrics.value("volume-quota-state"));
        assertEquals(0.40, metrics.value("volume-quota-throttle-factor"), 1e-9);
        assertEquals(0.40 * BASE, metrics.value("volume-quota-produce-quota-bytes-per-second"), 1e-6);
        assertEquals(0, metrics.value("volume-quota-decision-age-seconds"));
        assertEquals(0, metrics.value("volume-quota-observed-rate-available"));

        mono.addAndGet(2_500);
        callback.reload();
        assertEquals(2.5, metrics.value("volume-quota-decision-age-seconds"), 1e-9);
        assertEquals(1, callback.quotaResetRequired(ClientQuotaType.PRODUCE) ? 1 : 0);
        assertEquals(1, metrics.value("volume-quota-quota-resets-total"));

        writeAtomically(file(), "{garbled");
        callback.reload();
        assertEquals(1, metrics.value("volume-quota-reload-errors-total"));
        assertEquals(-1, metrics.value("volume-quota-state"));
        assertEquals(BASE / Math.pow(2, 2.25), metrics.value("volume-quota-produce-quota-bytes-per-second"), 1e-6,
                "on-missing PAUSE, stepping down from 0.4 x base by at most half, rounded up to the grid");
        assertEquals(1, metrics.value("volume-quota-step-downs-total"));
        assertEquals(FLOOR, metrics.value("volume-quota-produce-quota-target-bytes-per-second"));

        write("OPEN", 1.0, Duration.ofSeconds(30));
        callback.reload();
        clock.advance(Duration.ofSeconds(31));
        callback.reload();
        assertEquals(1, metrics.value("volume-quota-expiries-total"));
        limit(callback, ALICE);
        assertEquals(1, metrics.value("volume-quota-tracked-principals"));
    }
}
