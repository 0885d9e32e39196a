package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.internals.Plugin;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.network.Session;
import org.apache.kafka.server.config.ClientQuotaManagerConfig;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.apache.kafka.server.quota.QuotaType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the callback inside the broker's own {@link ClientQuotaManager} (kafka-server, same
 * version as the broker) on simulated time, so the throttle times below come from Kafka's real
 * Rate / QuotaUtils arithmetic, not from a re-derivation of it.
 *
 * <p>Model (deliberately simple; a real broker adds network, acks and client effects): one
 * producer principal, one connection, fixed request size, wanting either 2 x base (always
 * pushing against the quota) or 0.8 x base (steady, never throttled while OPEN). It sends its
 * next request when it is no longer muted by the previous throttle (KIP-219: the broker mutes
 * the channel and the client waits as well). The decision is OPEN for 60 s, then PAUSE, then
 * OPEN; the callback reloads every 250 ms of simulated time. Recovery is measured from the
 * moment the OPEN decision is in the file. The table goes to target/quota-simulation.md.
 */
class QuotaManagerSimulationTest {

    private static final double KIB = 1024;
    private static final double MIB = 1024 * 1024;
    private static final double BASE = 10 * MIB;
    private static final long OPEN_BEFORE_MS = 60_000;
    private static final long AFTER_MS = 60_000;
    private static final long TICK_MS = 250;
    private static final int[] REQUEST_SIZES = {16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024};
    private static final List<String> TABLE = new ArrayList<>();
    private static final List<String> TABLE_NOTES = new ArrayList<>();

    @TempDir
    Path dir;

    /** What one simulated run measured. */
    record Outcome(double openRate, double pausedRate, double firstMinuteOfPauseBytes,
                   long maxThrottleMs, long recoveryMs) {
    }


    private Outcome simulate(int requestBytes, double wantedRate, long pauseMs, Map<String, Object> extraConfig)
            throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        long start = clock.millis();
        Path file = dir.resolve("decision-" + TABLE.size() + ".json");
        writeDecision(file, "OPEN", 1.0, clock.instant());

        Map<String, Object> config = TestSupport.baseConfig(file);
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000"); // the simulation reloads itself
        config.remove(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND); // the default floor
        TestSupport.withoutPauseCeiling(config); // the throttle bounds where no ceiling binds
        config.putAll(extraConfig);
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock);
        callback.configure(config);

        Metrics metrics = new Metrics(new SimulatedTime(clock));
        Plugin<ClientQuotaCallback> plugin = Plugin.wrapInstance(callback, metrics, "client.quota.callback.class");
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock), "sim-", Optional.of(plugin));
        Session session = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                InetAddress.getLoopbackAddress());
        try {
            long pauseAt = start + OPEN_BEFORE_MS;
            long openAt = pauseAt + pauseMs;
            long end = openAt + AFTER_MS;
            double nextSend = start;
            double nextTick = start + TICK_MS;
            List<long[]> sends = new ArrayList<>(); // {timeMs, bytes}
            long maxThrottle = 0;
            boolean pauseWritten = false;
            boolean openWritten = false;
            while (true) {
                double next = Math.min(nextSend, nextTick);
                if (next >= end) {
                    break;
                }
                clock.setMillis((long) next);
                long now = clock.millis();
                if (next == nextTick) {
                    if (!pauseWritten && now >= pauseAt) {
                        writeDecision(file, "PAUSE", 0.0, clock.instant());
                        pauseWritten = true;
                    }
                    if (!openWritten && now >= openAt) {
                        writeDecision(file, "OPEN", 1.0, clock.instant());
                        openWritten = true;
                    }
                    callback.reload();
                    nextTick += TICK_MS;
                    continue;
                }
                int throttle = KafkaApisProduce.produce(manager, session, "producer-1", requestBytes, now);
                sends.add(new long[] {now, requestBytes});
                maxThrottle = Math.max(maxThrottle, throttle);
                nextSend = Math.max(next + requestBytes / wantedRate * 1000.0, now + (double) throttle);
            }
            double openRate = bytes(sends, pauseAt - 30_000, pauseAt) / 30.0;
            double pausedRate = pauseMs >= 120_000 ? bytes(sends, openAt - 60_000, openAt) / 60.0 : Double.NaN;
            double firstMinute = bytes(sends, pauseAt, Math.min(openAt, pauseAt + 60_000));
            return new Outcome(openRate, pausedRate, firstMinute, maxThrottle, recovery(sends, openAt, end, openRate));
        } finally {
            manager.shutdown();
            metrics.close();
            callback.close();
        }
    }

    private static void writeDecision(Path file, String state, double factor, Instant now) throws IOException {
        TestSupport.writeAtomically(file, TestSupport.decisionJson(state, factor, now, Duration.ofDays(1)));
    }

    private static double bytes(List<long[]> sends, long from, long to) {
        double sum = 0;
        for (long[] send : sends) {
            if (send[0] >= from && send[0] < to) {
                sum += send[1];
            }
        }
        return sum;
    }

    /**
     * Time after openAt until the producer's trailing 5 s rate (counting only bytes sent after
     * openAt) first reaches 90 % of its average OPEN rate before the pause. From then on it is
     * in the plain OPEN regime again (quota = base, nearly empty rate window), so it does not
     * fall back; a producer that wants more than base oscillates there as it did before the
     * pause, which is why the OPEN rate is a 30 s average.
     */
    private static long recovery(List<long[]> sends, long openAt, long end, double openRate) {
        long windowMs = 5_000;
        for (long t = openAt + 100; t <= end; t += 100) {
            if (bytes(sends, Math.max(openAt, t - windowMs), t) >= 0.9 * openRate * windowMs / 1000.0) {
                return t - openAt;
            }
        }
        return Long.MAX_VALUE;
    }

    private static String row(String variant, int requestBytes, double wantedRate, long pauseMs, Outcome o) {
        return String.format(Locale.ROOT, "| %s | %d KiB | %.1f x base | %d s | %.2f MiB/s | %s | %.1f MiB | %.1f s | %s |",
                variant, requestBytes / 1024, wantedRate / BASE, pauseMs / 1000, o.openRate() / MIB,
                Double.isNaN(o.pausedRate()) ? "-" : String.format(Locale.ROOT, "%.0f KiB/s (%.2f %% of base)",
                        o.pausedRate() / KIB, 100 * o.pausedRate() / BASE),
                o.firstMinuteOfPauseBytes() / MIB, o.maxThrottleMs() / 1000.0,
                o.recoveryMs() == Long.MAX_VALUE ? "not within 60 s" : String.format(Locale.ROOT, "%.1f s",
                        o.recoveryMs() / 1000.0));
    }

    @Test
    void defaultsBoundEveryThrottleAndKeepPausedProducersSmall() throws IOException {
        for (double wanted : new double[] {2 * BASE, 0.8 * BASE}) {
            for (long pauseMs : new long[] {30_000, 180_000}) {
                for (int size : REQUEST_SIZES) {
                    Outcome o = simulate(size, wanted, pauseMs, Map.of());
                    TABLE.add(row("defaults", size, wanted, pauseMs, o));
                    double expectedOpenRate = Math.min(wanted, BASE);
                    assertTrue(o.openRate() >= 0.8 * expectedOpenRate && o.openRate() <= 1.05 * expectedOpenRate,
                            () -> "OPEN rate " + o);
                    assertTrue(o.maxThrottleMs() <= 22_000, () -> "longest throttle " + o);
                    assertTrue(o.recoveryMs() <= 25_000, () -> "recovery " + o);
                    if (pauseMs >= 120_000) {
                        assertTrue(o.pausedRate() <= 0.025 * BASE, () -> "paused rate " + o);
                    }
                }
            }
        }
    }

    /**
     * The recovery target must hold whenever OPEN comes back, including right after the longest
     * throttle of the descent: try every pause length from 5 s to 120 s in 2.5 s steps.
     */
    @Test
    void recoveryStaysWithinTargetWheneverOpenReturns() throws IOException {
        long worst = 0;
        String worstCase = "";
        for (int size : new int[] {64 * 1024, 1024 * 1024}) {
            for (double wanted : new double[] {2 * BASE, 0.8 * BASE}) {
                for (long pauseMs = 5_000; pauseMs <= 120_000; pauseMs += 2_500) {
                    Outcome o = simulate(size, wanted, pauseMs, Map.of());
                    if (o.recoveryMs() > worst) {
                        worst = o.recoveryMs();
                        worstCase = size / 1024 + " KiB requests, producer wants " + wanted / BASE
                                + " x base, pause " + pauseMs / 1000.0 + " s: " + o;
                    }
                }
            }
        }
        TABLE_NOTES.add(String.format(Locale.ROOT, "Slowest recovery over pause lengths 5..120 s (2.5 s steps),"
                + " 64 KiB and 1 MiB requests, both producers: %.1f s (%s)", worst / 1000.0, worstCase));
        long slowest = worst;
        assertTrue(slowest <= 27_000, () -> "slowest recovery " + slowest + " ms");
    }

    @Test
    void withoutTheStepDownLimitOneThrottleOutlastsThePause() throws IOException {
        Outcome o = simulate(64 * 1024, 2 * BASE, 180_000, Map.of(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1e12"));
        TABLE.add(row("no step-down limit", 64 * 1024, 2 * BASE, 180_000, o));
        // About (10 MiB/s / 256 KiB/s - 1) x 11 s: minutes muted, far beyond the 30 s target.
        assertTrue(o.maxThrottleMs() > 5 * 60_000, () -> "expected a throttle of many minutes: " + o);
        assertEquals(Long.MAX_VALUE, o.recoveryMs(), "still muted a minute after OPEN");
    }

    /** A callback with one fixed PRODUCE quota, to show what the broker does with extreme values. */
    private static ClientQuotaCallback fixedQuota(double quota) {
        return new ClientQuotaCallback() {
            @Override
            public void configure(Map<String, ?> configs) {
            }

            @Override
            public Map<String, String> quotaMetricTags(ClientQuotaType type,
                                                       KafkaPrincipal principal, String clientId) {
                return Map.of("user", principal.getName(), "client-id", "");
            }

            @Override
            public Double quotaLimit(ClientQuotaType type, Map<String, String> tags) {
                return quota;
            }

            @Override
            public void updateQuota(ClientQuotaType type,
                                    ClientQuotaEntity entity, double value) {
            }

            @Override
            public void removeQuota(ClientQuotaType type,
                                    ClientQuotaEntity entity) {
            }

            @Override
            public boolean quotaResetRequired(ClientQuotaType type) {
                return false;
            }

            @Override
            public boolean updateClusterMetadata(Cluster cluster) {
                return false;
            }

            @Override
            public void close() {
            }
        };
    }

    private static int[] throttlesWithFixedQuota(double quota, int requests, int requestBytes) {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        Metrics metrics = new Metrics(new SimulatedTime(clock));
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock), "sim-",
                Optional.of(Plugin.wrapInstance(fixedQuota(quota), metrics, "client.quota.callback.class")));
        try {
            Session session = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                    InetAddress.getLoopbackAddress());
            int[] throttles = new int[requests];
            for (int i = 0; i < requests; i++) {
                throttles[i] = KafkaApisProduce.produce(manager, session, "c", requestBytes, clock.millis());
                clock.advance(Duration.ofMillis(1));
            }
            return throttles;
        } finally {
            manager.shutdown();
            metrics.close();
        }
    }

    /**
     * Why PAUSE is a floor and not 0 or 1 B/s: the broker computes (rate - 0) / 0 = infinity,
     * rounds it to Long.MAX_VALUE and casts it to int, i.e. -1: a zero quota never throttles.
     * A 1 B/s quota throttles for days and then overflows the same int cast.
     */
    @Test
    void whyThePauseFloorExists() {
        int[] zero = throttlesWithFixedQuota(0.0, 5, 1024 * 1024);
        for (int throttle : zero) {
            assertEquals(-1, throttle, "quota 0: the broker does not throttle at all");
        }
        int[] tiny = throttlesWithFixedQuota(1.0, 5, 1024 * 1024);
        assertTrue(tiny[0] > 10L * 24 * 3600 * 1000, "1 B/s: first throttle of more than 10 days");
        boolean wrapped = false;
        for (int throttle : tiny) {
            wrapped |= throttle < 0;
        }
        assertTrue(wrapped, "1 B/s: later throttles overflow the int cast");
    }

    @Test
    void excludedPrincipalsAreNeverThrottledByTheRealQuotaManager() throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        Path file = dir.resolve("decision.json");
        writeDecision(file, "PAUSE", 0.0, clock.instant());
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock);
        callback.configure(TestSupport.baseConfig(file));
        Metrics metrics = new Metrics(new SimulatedTime(clock));
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock),
                "sim-", Optional.of(Plugin.wrapInstance(callback, metrics, "client.quota.callback.class")));
        try {
            Session publisher = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "publisher"),
                    InetAddress.getLoopbackAddress());
            Session alice = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                    InetAddress.getLoopbackAddress());
            int publisherThrottle = 0;
            for (int i = 0; i < 100; i++) {
                publisherThrottle += KafkaApisProduce.produce(manager, publisher, "p", 1024 * 1024, clock.millis());
                clock.advance(Duration.ofMillis(10));
            }
            assertEquals(0, publisherThrottle, "100 MiB in 1 s while PAUSE: excluded, never throttled");
            assertEquals(Long.MAX_VALUE, manager.quota("publisher", "p").bound(), "null limit = no quota");
            assertTrue(KafkaApisProduce.produce(manager, alice, "a", 4 * 1024 * 1024, clock.millis()) > 0);
            assertEquals(128 * 1024.0, manager.quota("alice", "a").bound(), "the floor set in TestSupport");
            assertNull(callback.quotaLimit(ClientQuotaType.FETCH,
                    Map.of("user", "alice", "client-id", "")));
        } finally {
            manager.shutdown();
            metrics.close();
            callback.close();
        }
    }

    @AfterAll
    static void writeTable() throws IOException {
        if (TABLE.isEmpty() && TABLE_NOTES.isEmpty()) {
            return;
        }
        List<String> lines = new ArrayList<>();
        lines.add("| variant | request | producer wants | pause | OPEN rate | paused rate (last 60 s) |"
                + " bytes in first 60 s of pause | longest throttle | recovery to >= 90 % |");
        lines.add("|---|---|---|---|---|---|---|---|---|");
        lines.addAll(TABLE);
        lines.add("");
        lines.addAll(TABLE_NOTES);
        Path out = Path.of("target", "quota-simulation.md");
        Files.createDirectories(out.getParent());
        Files.write(out, lines, StandardCharsets.UTF_8);
    }
}
