package io.volumequota.broker;

import static io.volumequota.broker.TestSupport.T0;
import static io.volumequota.broker.TestSupport.decisionJson;
import static io.volumequota.broker.TestSupport.eventually;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, section 2: the decision from the compacted decisions topic. The consumer is a fake
 * behind {@link DecisionLog}; everything else (parser, validity, quotas, the engine's threads)
 * is the real thing.
 */
class TopicDecisionSourceTest {

    private static final double BASE = 10 * 1024 * 1024;
    private static final double FLOOR = 128 * 1024;
    private static final KafkaPrincipal ALICE = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice");
    private static final String TOPIC = "__volume_quota_decisions";

    private final TestSupport.MutableClock clock = new TestSupport.MutableClock(T0);
    private final AtomicLong mono = new AtomicLong(1_000_000);
    private final FakeTopic topic = new FakeTopic();
    private final List<VolumeQuotaCallback> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() {
        toClose.forEach(VolumeQuotaCallback::close);
    }

    /** Partition 0 of the decisions topic, with switches for the consumer's troubles. */
    static final class FakeTopic implements DecisionLog.Factory {
        final List<DecisionLog.DecisionRecord> records = new ArrayList<>();
        final AtomicInteger opens = new AtomicInteger();
        final AtomicInteger closes = new AtomicInteger();
        volatile RuntimeException openFailure;
        volatile RuntimeException seekFailure;
        volatile RuntimeException pollFailure;
        volatile CountDownLatch openBlocks;
        /** What each consumer's metadata says about the brokers; null: it throws (a stuck client). */
        volatile BootstrapRotation.View view = BootstrapRotation.View.EMPTY;
        final List<String> bootstraps = new java.util.concurrent.CopyOnWriteArrayList<>();

        synchronized void append(String key, String value) {
            records.add(new DecisionLog.DecisionRecord(records.size(), key,
                    value == null ? null : value.getBytes(StandardCharsets.UTF_8)));
        }

        synchronized List<DecisionLog.DecisionRecord> from(int position) {
            return new ArrayList<>(records.subList(Math.min(position, records.size()), records.size()));
        }

        @Override
        public DecisionLog open(VolumeQuotaConfig config) {
            assertEquals(TOPIC, config.decisionTopic());
            opens.incrementAndGet();
            bootstraps.add(config.consumerProperties().get("bootstrap.servers"));
            CountDownLatch blocks = openBlocks;
            if (blocks != null) {
                try {
                    blocks.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (openFailure != null) {
                throw openFailure;
            }
            return new DecisionLog() {
                private int position = -1;

                @Override
                public long seekToNewest(Duration timeout) {
                    if (seekFailure != null) {
                        throw seekFailure;
                    }
                    synchronized (FakeTopic.this) {
                        position = Math.max(0, records.size() - 1);
                        return records.size();
                    }
                }

                @Override
                public List<DecisionRecord> poll(Duration timeout) {
                    if (position < 0) {
                        throw new IllegalStateException("poll before seek");
                    }
                    if (pollFailure != null) {
                        throw pollFailure;
                    }
                    List<DecisionRecord> fetched = from(position);
                    position += fetched.size();
                    return fetched;
                }

                @Override
                public BootstrapRotation.View brokers(Duration timeout) {
                    BootstrapRotation.View known = view;
                    if (known == null) {
                        throw new TimeoutException("Timeout expired while fetching topic metadata");
                    }
                    return known;
                }

                @Override
                public void close() {
                    closes.incrementAndGet();
                }
            };
        }
    }

    private static Map<String, Object> topicConfig(Map<String, Object> extra) {
        Map<String, Object> config = new HashMap<>();
        config.put(VolumeQuotaConfig.DECISION_SOURCE, "topic");
        config.put(VolumeQuotaConfig.CONSUMER_PREFIX + "bootstrap.servers", "broker-0:9093");
        config.put(VolumeQuotaConfig.BASE_BYTES_PER_SECOND, "10485760");
        config.put(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, "131072");
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12");
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000"); // the test drives the reads
        config.putAll(extra);
        return config;
    }

    private VolumeQuotaCallback callback(Map<String, Object> extra) {
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, mono::get, ObservedRates.NONE, topic);
        callback.configure(topicConfig(extra));
        toClose.add(callback);
        // The reader's first run starts at once on its thread; let it take the consumer first, so
        // that the test's own reads (serialized with it) see a fixed order.
        try {
            assertTrue(eventually(Duration.ofSeconds(5), () -> topic.opens.get() >= 1));
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        return callback;
    }

    private VolumeQuotaCallback callback() {
        return callback(Map.of());
    }

    private static double limit(VolumeQuotaCallback callback) {
        Map<String, String> tags = callback.quotaMetricTags(ClientQuotaType.PRODUCE, ALICE, "c");
        return callback.quotaLimit(ClientQuotaType.PRODUCE, tags);
    }

    private void publish(String state, double factor, Duration validFor) {
        topic.append(TopicDecisionSource.KEY, decisionJson(state, factor, clock.instant(), validFor));
    }

    // ------------------------------------------------------------------ configuration

    @Test
    void theTopicSourceNeedsNoFileAndTakesPrefixedConsumerProperties() {
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(topicConfig(Map.of(
                VolumeQuotaConfig.CONSUMER_PREFIX + "security.protocol", "SSL",
                VolumeQuotaConfig.CONSUMER_PREFIX + "ssl.key.password", new Password("secret"),
                VolumeQuotaConfig.CONSUMER_PREFIX + "ssl.endpoint.identification.algorithm", "")));
        assertEquals(VolumeQuotaConfig.DecisionSource.TOPIC, parsed.decisionSource());
        assertNull(parsed.decisionPath());
        assertEquals(TOPIC, parsed.decisionTopic());
        assertEquals(Map.of("bootstrap.servers", "broker-0:9093", "security.protocol", "SSL",
                "ssl.key.password", "secret", "ssl.endpoint.identification.algorithm", ""),
                parsed.consumerProperties());
        assertEquals("[hidden]", parsed.consumerPropertiesForLog().get("ssl.key.password"));
        Map<String, String> consumer = KafkaDecisionLog.consumerProperties(parsed);
        assertEquals("false", consumer.get("enable.auto.commit"));
        assertEquals("none", consumer.get("auto.offset.reset"), "a lost position is handled by seeking again");
        assertNull(consumer.get("group.id"), "no group: partition 0 is assigned");
        assertEquals("SSL", consumer.get("security.protocol"));

        VolumeQuotaConfig named = VolumeQuotaConfig.parse(topicConfig(Map.of(
                VolumeQuotaConfig.DECISION_TOPIC, " decisions-eu ")));
        assertEquals("decisions-eu", named.decisionTopic());
        assertEquals(VolumeQuotaConfig.DecisionSource.FILE,
                VolumeQuotaConfig.parse(TestSupport.baseConfig(java.nio.file.Path.of("/d.json"))).decisionSource(),
                "file stays the default");
    }

    @Test
    void aBadTopicSourceSettingStopsTheBroker() {
        Map<String, Object> noBootstrap = topicConfig(Map.of());
        noBootstrap.remove(VolumeQuotaConfig.CONSUMER_PREFIX + "bootstrap.servers");
        assertTrue(assertThrows(ConfigException.class, () -> VolumeQuotaConfig.parse(noBootstrap)).getMessage()
                .contains("volume.quota.decision.consumer.bootstrap.servers"));
        assertTrue(assertThrows(ConfigException.class, () -> VolumeQuotaConfig.parse(topicConfig(Map.of(
                VolumeQuotaConfig.DECISION_SOURCE, "kafka")))).getMessage().contains("volume.quota.decision.source"));
        assertTrue(assertThrows(ConfigException.class, () -> VolumeQuotaConfig.parse(topicConfig(Map.of(
                VolumeQuotaConfig.CONSUMER_PREFIX + "value.deserializer", "x")))).getMessage()
                .contains("value.deserializer"));
        assertTrue(assertThrows(ConfigException.class, () -> VolumeQuotaConfig.parse(topicConfig(Map.of(
                VolumeQuotaConfig.CONSUMER_PREFIX + "enable.auto.commit", "true")))).getMessage()
                .contains("enable.auto.commit"));
    }

    // ------------------------------------------------------------------ reading

    @Test
    void takesTheNewestDecisionFromTheEndAndFollowsNewOnes() {
        topic.append(TopicDecisionSource.KEY, "{garbled, never read: the reader starts at end - 1");
        publish("PAUSE", 0.0, Duration.ofSeconds(30));
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback();
        callback.reload();
        assertEquals(BASE, limit(callback));
        assertEquals(0, callback.engine().reloadErrors.get(), "older records are not read");
        assertEquals(QuotaEngine.StateCode.OPEN, callback.engine().state());

        publish("THROTTLE", 0.5, Duration.ofSeconds(30));
        callback.reload();
        assertEquals(BASE * 0.5, limit(callback), 1e-6);
        publish("PAUSE", 0.0, Duration.ofSeconds(30));
        callback.reload();
        assertEquals(FLOOR, limit(callback));
        assertEquals(QuotaEngine.StateCode.PAUSE, callback.engine().state());
    }

    @Test
    void noDecisionYetAppliesOnMissingOpenOrPause() {
        VolumeQuotaCallback paused = callback();
        paused.reload();
        assertEquals(FLOOR, limit(paused), "empty topic: on-missing PAUSE");
        assertEquals(0, paused.engine().reloadErrors.get(), "an empty topic is not an error");
        topic.opens.set(0);
        VolumeQuotaCallback open = callback(Map.of(VolumeQuotaConfig.ON_MISSING, "OPEN"));
        open.reload();
        assertEquals(BASE, limit(open), "empty topic: on-missing OPEN");
        assertEquals(QuotaEngine.StateCode.NONE, open.engine().state());
    }

    @Test
    void aDecisionExpiresAtValidUntilWhenNoNewOneComes() {
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback();
        callback.reload();
        assertEquals(BASE, limit(callback));
        clock.advance(Duration.ofSeconds(30));
        mono.addAndGet(30_000);
        callback.reload();
        assertEquals(BASE, limit(callback), "valid up to validUntil");
        clock.advance(Duration.ofMillis(1));
        mono.addAndGet(1);
        callback.reload();
        assertEquals(FLOOR, limit(callback), "expired: on-missing PAUSE");
        assertEquals(1, callback.engine().expiries.get());
    }

    @Test
    void theSameBytesAgainDoNotRenewTheMaximumValidity() {
        String decision = decisionJson("OPEN", 1.0, clock.instant(), Duration.ofDays(3650));
        topic.append(TopicDecisionSource.KEY, decision);
        VolumeQuotaCallback callback = callback(Map.of(VolumeQuotaConfig.MAX_VALIDITY_MS, "60000"));
        callback.reload();
        assertEquals(BASE, limit(callback));
        mono.addAndGet(60_001);
        topic.append(TopicDecisionSource.KEY, decision); // a replay, like a file rewritten unchanged
        callback.reload();
        assertEquals(FLOOR, limit(callback), "counted from the first read of these bytes, as for the file");
        clock.advance(Duration.ofSeconds(1));
        topic.append(TopicDecisionSource.KEY, decisionJson("OPEN", 1.0, clock.instant(), Duration.ofDays(3650)));
        callback.reload();
        assertEquals(BASE, limit(callback), "a renewed decision starts a new maximum");
    }

    @Test
    void aGarbledRecordOrATombstoneIsNoDecision() {
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback();
        callback.reload();
        topic.append(TopicDecisionSource.KEY, "{\"state\": \"OPEN\"}");
        callback.reload();
        assertEquals(FLOOR, limit(callback), "validated exactly like the file: no validUntil, no decision");
        assertEquals(1, callback.engine().reloadErrors.get());
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        callback.reload();
        assertEquals(BASE, limit(callback));
        topic.append(TopicDecisionSource.KEY, null);
        callback.reload();
        assertEquals(FLOOR, limit(callback), "a tombstone deletes the decision");
        topic.append("someone-else", decisionJson("OPEN", 1.0, clock.instant(), Duration.ofSeconds(30)));
        callback.reload();
        assertEquals(FLOOR, limit(callback), "only key " + TopicDecisionSource.KEY + " is read");
    }

    @Test
    void consumerTroubleNeverThrowsAndEndsInOnMissingAfterValidUntil() {
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback();
        callback.reload();
        assertEquals(BASE, limit(callback));

        topic.pollFailure = new TopicAuthorizationException(Set.of(TOPIC));
        assertDoesNotThrow(callback::reload);
        assertEquals(BASE, limit(callback), "the decision read stays in force until its validUntil");
        assertEquals(1, topic.closes.get(), "a failed consumer is closed");
        assertDoesNotThrow(callback::reload);
        assertEquals(1, topic.opens.get(), "and re-created only after the backoff");
        mono.addAndGet(TopicDecisionSource.MIN_BACKOFF_MS);
        callback.reload();
        assertEquals(2, topic.opens.get());
        assertEquals(1, callback.engine().reloadErrors.get(), "the same problem is counted once");

        clock.advance(Duration.ofSeconds(31));
        mono.addAndGet(30_000);
        callback.reload();
        assertEquals(FLOOR, limit(callback), "past validUntil: on-missing PAUSE");

        topic.pollFailure = null;
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        mono.addAndGet(TopicDecisionSource.MAX_BACKOFF_MS);
        callback.reload();
        assertEquals(BASE, limit(callback), "readable again: the newest decision applies");
        assertEquals(0, callback.engine().pollerErrors.get(), "nothing escaped to the poller's guard");
    }

    @Test
    void noBrokerAtStartupKeepsTheConsumerAndRetries() {
        topic.seekFailure = new TimeoutException("Failed to get offsets by times in 1002ms");
        VolumeQuotaCallback callback = callback();
        callback.reload();
        topic.seekFailure = new TimeoutException("Failed to get offsets by times in 1001ms");
        callback.reload();
        assertEquals(FLOOR, limit(callback), "no decision: on-missing PAUSE");
        assertEquals(1, topic.opens.get(), "a timeout keeps the consumer (it is still connecting)");
        assertEquals(1, callback.engine().reloadErrors.get(), "one problem, whatever the timing in its message");
        topic.seekFailure = null;
        publish("THROTTLE", 0.5, Duration.ofSeconds(30));
        callback.reload();
        assertEquals(BASE * 0.5, limit(callback), 1e-6);
    }

    @Test
    void aConsumerThatCannotBeCreatedIsRetriedWithBackoff() {
        topic.openFailure = new org.apache.kafka.common.KafkaException("Failed to construct kafka consumer");
        VolumeQuotaCallback callback = callback();
        callback.reload();
        assertEquals(FLOOR, limit(callback));
        int opens = topic.opens.get();
        callback.reload();
        assertEquals(opens, topic.opens.get(), "not before the backoff");
        mono.addAndGet(TopicDecisionSource.MAX_BACKOFF_MS);
        topic.openFailure = null;
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        callback.reload();
        assertEquals(BASE, limit(callback));
    }

    @Test
    void aLostPositionTakesTheNewestRecordAgain() {
        publish("THROTTLE", 0.5, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback();
        callback.reload();
        topic.pollFailure = new OffsetOutOfRangeException("compacted away",
                Map.of(new TopicPartition(TOPIC, 0), 0L));
        callback.reload();
        topic.pollFailure = null;
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        callback.reload();
        assertEquals(BASE, limit(callback));
        assertEquals(1, topic.opens.get(), "the same consumer seeks again");
    }

    @Test
    void aHangingConsumerBlocksNeitherConfigureNorRequestsNorExpiry() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        topic.openBlocks = release;
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, mono::get, ObservedRates.NONE, topic);
        try {
            long started = System.nanoTime();
            callback.configure(topicConfig(Map.of(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "10",
                    VolumeQuotaConfig.ON_MISSING, "OPEN")));
            assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(2), "configure does no I/O");
            assertTrue(eventually(Duration.ofSeconds(5), () -> topic.opens.get() == 1), "the reader opens it");
            assertEquals(BASE, limit(callback), "on-missing OPEN while the reader hangs");
            assertTrue(callback.pollerThread().isAlive());
        } finally {
            release.countDown();
            callback.close();
        }
    }

    // ------------------------------------------------------------------ silence

    @Test
    void aSilentConsumerIsRebuiltFromTheBrokersThatDidNotLeadInTurn() {
        topic.view = BootstrapRotation.View.of(Map.of(0, "b0:9093", 1, "b1:9093", 2, "b2:9093"), Set.of(0));
        publish("OPEN", 1.0, Duration.ofSeconds(10)); // lifetime 10 s: rebuilt after 5 s of silence
        VolumeQuotaCallback callback = callback(Map.of(VolumeQuotaConfig.CONSUMER_PREFIX + "bootstrap.servers",
                "b0:9093,b1:9093,b2:9093"));
        callback.reload();
        assertEquals(BASE, limit(callback));
        mono.addAndGet(4_999);
        callback.reload();
        assertEquals(1, topic.opens.get(), "not before half the decision's lifetime");

        mono.addAndGet(1);
        callback.reload();
        assertEquals(2, topic.opens.get(), "rebuilt after 5 s without a record");
        assertEquals(1, topic.closes.get(), "the silent consumer is closed");
        assertEquals(List.of("b0:9093,b1:9093,b2:9093", "b1:9093"), topic.bootstraps,
                "bootstrapped from one broker that did not lead");
        assertEquals(1, callback.engine().decisionReaderRebuilds());
        assertEquals(BASE, limit(callback), "the decision in force stays until it expires");
        assertEquals(0, callback.engine().reloadErrors.get(), "silence is not a read error");

        // The rebuilt consumer re-read the newest record (the same bytes), then nothing for 5 s.
        mono.addAndGet(5_000);
        callback.reload();
        assertEquals(List.of("b0:9093,b1:9093,b2:9093", "b1:9093", "b2:9093"), topic.bootstraps, "in turn");
        topic.view = null; // a consumer whose metadata does not answer: the last view is kept
        mono.addAndGet(5_000);
        callback.reload();
        assertEquals("b1:9093", topic.bootstraps.get(3));
        assertEquals(3, callback.engine().decisionReaderRebuilds());
        assertEquals(3, topic.closes.get());
        assertEquals(0, callback.engine().pollerErrors.get());
    }

    @Test
    void aRecordRestartsTheSilenceAndTheSettingOverridesTheDerivedThreshold() {
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback(Map.of(VolumeQuotaConfig.DECISION_REBUILD_AFTER_MS, "2000"));
        callback.reload();
        mono.addAndGet(1_500);
        clock.advance(Duration.ofMillis(1_500));
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        callback.reload();
        mono.addAndGet(1_999);
        callback.reload();
        assertEquals(1, topic.opens.get(), "2 s counted from the last record");
        mono.addAndGet(1);
        callback.reload();
        assertEquals(List.of("broker-0:9093", "broker-0:9093"), topic.bootstraps,
                "no metadata view: the configured servers in turn");
        assertEquals(1, callback.engine().decisionReaderRebuilds());
    }

    @Test
    void theRebuildSettingMustBeAWholeNumberAboveZero() {
        assertEquals(0, VolumeQuotaConfig.parse(topicConfig(Map.of())).decisionRebuildAfterMs(), "derived");
        assertEquals(7_000, VolumeQuotaConfig.parse(topicConfig(Map.of(VolumeQuotaConfig.DECISION_REBUILD_AFTER_MS,
                "7000"))).decisionRebuildAfterMs());
        for (String bad : new String[] {"0", "-1", "1.5", "soon"}) {
            assertTrue(assertThrows(ConfigException.class, () -> VolumeQuotaConfig.parse(topicConfig(Map.of(
                    VolumeQuotaConfig.DECISION_REBUILD_AFTER_MS, bad)))).getMessage()
                    .contains(VolumeQuotaConfig.DECISION_REBUILD_AFTER_MS), bad);
        }
    }

    @Test
    void closeClosesTheConsumer() throws Exception {
        publish("OPEN", 1.0, Duration.ofSeconds(30));
        VolumeQuotaCallback callback = callback();
        callback.reload();
        callback.close();
        assertEquals(1, topic.closes.get());
    }
}
