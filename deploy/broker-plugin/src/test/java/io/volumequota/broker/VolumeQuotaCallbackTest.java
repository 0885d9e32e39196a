package io.volumequota.broker;

import static io.volumequota.broker.TestSupport.T0;
import static io.volumequota.broker.TestSupport.decisionJson;
import static io.volumequota.broker.TestSupport.eventually;
import static io.volumequota.broker.TestSupport.writeAtomically;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class VolumeQuotaCallbackTest {

    private static final double BASE = 10 * 1024 * 1024;
    private static final double FLOOR = 128 * 1024;
    private static final Duration VALID_FOR = Duration.ofSeconds(30);
    private static final Duration DEADLINE = Duration.ofSeconds(5);
    private static final KafkaPrincipal ALICE = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice");
    private static final KafkaPrincipal PUBLISHER = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "publisher");

    @TempDir
    Path dir;

    private final TestSupport.MutableClock clock = new TestSupport.MutableClock(T0);
    private VolumeQuotaCallback callback;

    @AfterEach
    void closeCallback() {
        if (callback != null) {
            callback.close();
        }
    }

    private Path file() {
        return dir.resolve("decision.json");
    }

    /**
     * A callback whose poller practically never fires, so the test drives reload() itself;
     * the step-down limit is switched off unless the test is about it.
     */
    private VolumeQuotaCallback manual(Map<String, Object> extra) {
        Map<String, Object> config = TestSupport.baseConfig(file());
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000");
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
        config.putAll(extra);
        callback = new VolumeQuotaCallback(clock);
        callback.configure(config);
        return callback;
    }

    private VolumeQuotaCallback polling(Map<String, Object> extra) {
        Map<String, Object> config = TestSupport.baseConfig(file());
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "10");
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
        config.putAll(extra);
        callback = new VolumeQuotaCallback(clock);
        callback.configure(config);
        return callback;
    }

    private void write(String state, double factor) throws IOException {
        writeAtomically(file(), decisionJson(state, factor, clock.instant(), VALID_FOR));
    }

    private Double produceLimit(KafkaPrincipal principal, String clientId) {
        Map<String, String> tags = callback.quotaMetricTags(ClientQuotaType.PRODUCE, principal, clientId);
        return callback.quotaLimit(ClientQuotaType.PRODUCE, tags);
    }

    /** How many of n consecutive calls (as n requests would make) report a reset. */
    private int resets(int n) {
        int count = 0;
        for (int i = 0; i < n; i++) {
            if (callback.quotaResetRequired(ClientQuotaType.PRODUCE)) {
                count++;
            }
        }
        return count;
    }

    /** Tags whose every read fails, as a bug anywhere under quotaLimit would. */
    private static final class FailingTags extends java.util.HashMap<String, String> {
        @Override
        public String get(Object key) {
            throw new IllegalStateException("broken on purpose");
        }
    }

    @Test
    void anUnexpectedErrorInQuotaLimitFailsToThePauseFloorAndIsCounted() throws IOException {
        write("OPEN", 1.0);
        manual(Map.of());
        long before = QuotaCallbackCore.quotaLimitErrors();
        // No quota (null) would let the producer write at any rate: fail safe, to the floor.
        assertEquals(FLOOR, callback.quotaLimit(ClientQuotaType.PRODUCE, new FailingTags()), 1e-6);
        assertEquals(FLOOR, callback.quotaLimit(ClientQuotaType.PRODUCE, new FailingTags()), 1e-6);
        assertEquals(before + 2, QuotaCallbackCore.quotaLimitErrors());
        assertEquals(BASE, produceLimit(ALICE, "producer-1"), 1e-6, "the next sound call is unaffected");
    }

    @Test
    void throttlesEveryPrincipalButTheExcludedOnes() throws IOException {
        write("THROTTLE", 0.42);
        manual(Map.of());
        // 0.42 is quantized down to the 0.05 step below it.
        assertEquals(BASE * 0.40, produceLimit(ALICE, "producer-1"), 1e-6);
        assertEquals(BASE * 0.40, produceLimit(new KafkaPrincipal("User", "bob"), ""), 1e-6);
        assertNull(produceLimit(PUBLISHER, "publisher-1"));
        assertNull(produceLimit(new KafkaPrincipal("User", "CN=ops,O=example"), "admin"));
    }

    @Test
    void onePerPrincipalQuotaWithKafkasUsualTags() throws IOException {
        write("OPEN", 1.0);
        manual(Map.of());
        Map<String, String> a = callback.quotaMetricTags(ClientQuotaType.PRODUCE, ALICE, "client-a");
        Map<String, String> b = callback.quotaMetricTags(ClientQuotaType.PRODUCE, ALICE, "client-b");
        assertEquals(Map.of("user", "alice", "client-id", ""), a);
        assertEquals(a, b, "all client ids of a principal share its quota");
    }

    @ParameterizedTest
    @EnumSource(value = ClientQuotaType.class, names = {"FETCH", "REQUEST", "CONTROLLER_MUTATION"})
    void otherQuotaTypesAreNeverLimited(ClientQuotaType type) throws IOException {
        write("PAUSE", 0.0);
        manual(Map.of());
        Map<String, String> tags = callback.quotaMetricTags(type, ALICE, "c");
        assertNull(callback.quotaLimit(type, tags));
        write("OPEN", 1.0);
        callback.reload();
        assertFalse(callback.quotaResetRequired(type));
        assertTrue(callback.quotaResetRequired(ClientQuotaType.PRODUCE));
    }

    @Test
    void aChangedQuotaAsksForOneResetOnly() throws IOException {
        write("OPEN", 1.0);
        manual(Map.of());
        resets(1); // the initial load
        assertEquals(0, resets(100), "nothing changed");

        write("THROTTLE", 0.5);
        assertEquals(0, resets(10), "not picked up before the next reload");
        callback.reload();
        assertEquals(1, resets(1000));
        assertEquals(BASE * 0.5, produceLimit(ALICE, "c"), 1e-6);
        callback.reload();
        assertEquals(1, resets(1000), "raised once more at the next poll, for sensors created during the scan");

        // The sidecar renews the same decision (new decidedAt / validUntil): no reset.
        clock.advance(Duration.ofSeconds(5));
        write("THROTTLE", 0.5);
        callback.reload();
        assertEquals(0, resets(1000));
        // A factor that moves by less than the quantization step and its hysteresis: no reset either.
        write("THROTTLE", 0.48);
        callback.reload();
        write("THROTTLE", 0.57);
        callback.reload();
        assertEquals(0, resets(1000));
        assertEquals(BASE * 0.5, produceLimit(ALICE, "c"), 1e-6);
        write("THROTTLE", 0.58); // 1.5 steps above the level in force: move to 0.55
        callback.reload();
        assertEquals(1, resets(1000));
        assertEquals(BASE * 0.55, produceLimit(ALICE, "c"), 1e-6);

        write("PAUSE", 0.0);
        callback.reload();
        callback.reload();
        assertEquals(1, resets(1000));
        assertEquals(FLOOR, produceLimit(ALICE, "c"));
    }

    @Test
    void resetIsHandedToExactlyOneOfManyConcurrentRequests() throws Exception {
        write("OPEN", 1.0);
        manual(Map.of());
        resets(1);
        write("THROTTLE", 0.3);
        callback.reload();
        int threads = 8;
        java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int j = 0; j < 10_000; j++) {
                    if (callback.quotaResetRequired(ClientQuotaType.PRODUCE)) {
                        seen.incrementAndGet();
                    }
                }
            });
            workers[i].start();
        }
        start.countDown();
        for (Thread worker : workers) {
            worker.join(DEADLINE.toMillis());
        }
        assertEquals(1, seen.get());
    }

    @ParameterizedTest
    @ValueSource(strings = {"PAUSE", "OPEN"})
    void missingFileAppliesTheOnMissingAction(String onMissing) throws IOException {
        manual(Map.of(VolumeQuotaConfig.ON_MISSING, onMissing));
        double expected = onMissing.equals("PAUSE") ? FLOOR : BASE;
        assertEquals(expected, produceLimit(ALICE, "c"), "no file at start-up");

        write("THROTTLE", 0.5);
        callback.reload();
        assertEquals(BASE * 0.5, produceLimit(ALICE, "c"), 1e-6);
        resets(1);

        Files.delete(file());
        callback.reload();
        assertEquals(expected, produceLimit(ALICE, "c"), "file deleted");
        assertEquals(1, resets(1000));
    }

    @ParameterizedTest
    @ValueSource(strings = {"PAUSE", "OPEN"})
    void garbledFileAppliesTheOnMissingAction(String onMissing) throws IOException {
        write("THROTTLE", 0.5);
        manual(Map.of(VolumeQuotaConfig.ON_MISSING, onMissing));
        resets(1);
        double expected = onMissing.equals("PAUSE") ? FLOOR : BASE;

        writeAtomically(file(), "{\"schemaVersion\": 1, \"state\": \"THROTTLE\", \"throttleF");
        callback.reload();
        assertEquals(expected, produceLimit(ALICE, "c"));
        assertEquals(1, resets(1000));

        write("THROTTLE", 0.5);
        callback.reload();
        assertEquals(BASE * 0.5, produceLimit(ALICE, "c"), 1e-6, "a good file again");
    }

    @ParameterizedTest
    @ValueSource(strings = {"PAUSE", "OPEN"})
    void unknownSchemaVersionAppliesTheOnMissingAction(String onMissing) throws IOException {
        writeAtomically(file(), decisionJson("THROTTLE", 0.5, clock.instant(), VALID_FOR)
                .replace("\"schemaVersion\": 1", "\"schemaVersion\": 2"));
        manual(Map.of(VolumeQuotaConfig.ON_MISSING, onMissing));
        assertEquals(onMissing.equals("PAUSE") ? FLOOR : BASE, produceLimit(ALICE, "c"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"PAUSE", "OPEN"})
    void expiredDecisionAppliesTheOnMissingActionWithoutAnyFileChange(String onMissing) throws IOException {
        write("THROTTLE", 0.5);
        manual(Map.of(VolumeQuotaConfig.ON_MISSING, onMissing));
        resets(1);
        callback.reload(); // the re-raise after the initial load
        resets(1);
        clock.advance(VALID_FOR);
        callback.reload();
        assertEquals(BASE * 0.5, produceLimit(ALICE, "c"), 1e-6, "valid up to and including validUntil");
        assertEquals(0, resets(10));

        clock.advance(Duration.ofMillis(1));
        callback.reload();
        assertEquals(onMissing.equals("PAUSE") ? FLOOR : BASE, produceLimit(ALICE, "c"));
        assertEquals(1, resets(1000));
    }

    @Test
    void backgroundPollerPicksUpAnAtomicRename() throws Exception {
        write("OPEN", 1.0);
        polling(Map.of());
        assertEquals(BASE, produceLimit(ALICE, "c"));
        resets(1);

        write("THROTTLE", 0.25);
        assertTrue(eventually(DEADLINE, () -> callback.produceQuotaBytesPerSecond() == BASE * 0.25),
                "poller should pick up the renamed file");
        assertEquals(1, resets(1000));

        write("PAUSE", 0.0);
        assertTrue(eventually(DEADLINE, () -> callback.produceQuotaBytesPerSecond() == FLOOR));
        assertEquals(1, resets(1000));
    }

    @Test
    void backgroundPollerNoticesExpiryOfAnUnchangedFile() throws Exception {
        write("OPEN", 1.0);
        polling(Map.of());
        assertEquals(BASE, callback.produceQuotaBytesPerSecond());
        clock.advance(VALID_FOR.plusMillis(1));
        assertTrue(eventually(DEADLINE, () -> callback.produceQuotaBytesPerSecond() == FLOOR),
                "expired decision must fall back to on-missing PAUSE");
    }

    @Test
    void stepDownLimitAppliesThroughTheCallback() throws IOException {
        write("OPEN", 1.0);
        manual(Map.of(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "2"));
        resets(1);
        write("PAUSE", 0.0);
        callback.reload();
        assertEquals(BASE / 2, produceLimit(ALICE, "c"));
        assertEquals(1, resets(1000));
        clock.advance(Duration.ofSeconds(5));
        callback.reload();
        assertEquals(BASE / 2, produceLimit(ALICE, "c"), "one step per 11 s quota window");
        assertEquals(1, resets(1000), "only the re-raise after the change");
        callback.reload();
        assertEquals(0, resets(1000));
        clock.advance(Duration.ofSeconds(6));
        write("PAUSE", 0.0); // renewed by the sidecar
        callback.reload();
        assertEquals(BASE / 4, produceLimit(ALICE, "c"));
        assertEquals(1, resets(1000));
        write("OPEN", 1.0);
        callback.reload();
        assertEquals(BASE, produceLimit(ALICE, "c"), "back up at once");
    }

    @Test
    void closeStopsThePoller() throws Exception {
        write("OPEN", 1.0);
        polling(Map.of());
        Thread poller = callback.pollerThread();
        assertNotNull(poller);
        assertTrue(poller.isAlive());
        assertTrue(poller.isDaemon(), "must not keep the broker JVM alive");
        callback.close();
        poller.join(DEADLINE.toMillis());
        assertFalse(poller.isAlive());

        // Nothing is applied after close.
        write("PAUSE", 0.0);
        Thread.sleep(50);
        assertEquals(BASE, callback.produceQuotaBytesPerSecond());
        callback = null;
    }

    @Test
    void badConfigurationFailsConfigure() {
        callback = new VolumeQuotaCallback(clock);
        ConfigException e = assertThrows(ConfigException.class, () -> callback.configure(Map.of()));
        assertTrue(e.getMessage().contains(VolumeQuotaConfig.DECISION_PATH));
        assertNull(callback.pollerThread());
    }

    @Test
    void twoInstancesWithTheirOwnTestEnginesAreIndependent() throws IOException {
        // Callbacks made with a test clock get a private engine each (production callbacks of one
        // process share one: FailSafeTest.twoCallbacksOfOneProcessShareOneEngine).
        write("THROTTLE", 0.5);
        VolumeQuotaCallback first = manual(Map.of());
        VolumeQuotaCallback second = new VolumeQuotaCallback(clock);
        try {
            Map<String, Object> config = TestSupport.baseConfig(file());
            config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
            second.configure(config);
            assertEquals(first.produceQuotaBytesPerSecond(), second.produceQuotaBytesPerSecond());
            assertFalse(first.pollerThread().getName().equals(second.pollerThread().getName()));
        } finally {
            second.close();
        }
    }
}
