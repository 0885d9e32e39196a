package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.internals.Plugin;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.network.Session;
import org.apache.kafka.server.config.ClientQuotaManagerConfig;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.QuotaType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each produce request is counted once, although the broker looks up a throttled request's
 * sensors twice (record, then {@code ClientQuotaManager.throttle}): the average request size is
 * bytes / requests, and counting a throttled request twice halves it.
 */
class RequestCountTest {

    @TempDir
    Path dir;

    @Test
    void requestsOfOneClientInARowAreEachCountedWhenNotThrottled() {
        SecondLookup lookups = new SecondLookup();
        for (int i = 0; i < 5; i++) {
            assertTrue(lookups.isNewRequest("alice", "producer-1"), "request " + i);
        }
        assertTrue(lookups.isNewRequest("bob", "producer-1"));
    }

    @Test
    void aThrottledRequestIsCountedOnceThoughTheBrokerLooksItUpTwice() throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        Path file = dir.resolve("decision.json");
        Files.writeString(file, TestSupport.decisionJson("PAUSE", 0.0, clock.instant(), java.time.Duration.ofMinutes(10)), StandardCharsets.UTF_8);
        Map<String, Object> config = TestSupport.baseConfig(file);
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000");
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, clock::millis, ObservedRates.NONE);
        callback.configure(config);
        Metrics metrics = new Metrics(Time.SYSTEM);
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, Time.SYSTEM, "count-",
                Optional.of(Plugin.wrapInstance(callback, metrics, "client.quota.callback.class")));
        Session alice = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                InetAddress.getLoopbackAddress());
        try {
            int throttled = 0;
            for (int i = 0; i < 40; i++) {
                if (KafkaApisProduce.produce(manager, alice, "producer-" + i % 8, 1024 * 1024, clock.millis()) > 0) {
                    throttled++;
                }
                clock.setMillis(clock.millis() + 10);
            }
            assertTrue(throttled >= 30, "the PAUSE quota throttles most of 40 MiB: " + throttled);
            assertEquals(40, callback.engine().countedRequests("alice"), "requests counted, " + throttled
                    + " of them throttled");
        } finally {
            manager.shutdown();
            metrics.close();
            callback.close();
        }
    }
}
