package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.internals.Plugin;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.network.Session;
import org.apache.kafka.server.config.ClientQuotaManagerConfig;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.QuotaType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PAUSE bound with several connections per principal (issue section 1), on the broker's own
 * {@link ClientQuotaManager} 4.3.1 and simulated time.
 *
 * <p>N connections of one principal, each with its own client id and a fixed request size,
 * together wanting a total rate; each sends its next request when its pacing allows and it is
 * no longer muted by its last throttle (KIP-219). OPEN 60 s, PAUSE 60 s, OPEN 60 s; the callback
 * polls every 250 ms of simulated time. The broker's metrics go to the platform MBean server
 * through Kafka's JmxReporter under {@code kafka.server}, as in a broker, so the callback's JMX
 * byte-rate reader runs against the real sensor MBeans. The "fallback" runs use no byte rates
 * at all (the rule the callback falls back to when JMX cannot be read).
 *
 * <p>Figures (written to target/pause-bound-simulation.md): longest throttle; the longest
 * time any connection stayed muted after the OPEN decision; time from OPEN until the total
 * trailing 5 s rate is back to 90 % of the pre-pause rate; the longest gap between two requests
 * of one connection (a record waits at most about that plus its linger, compared with
 * delivery.timeout.ms 120 s); the largest total rate over any 10 s of the second half of the
 * pause, against the principal's floor max(256 KiB/s, N x r / 12 s).
 */
class PauseBoundSimulationTest {

    private static final double KIB = 1024;
    private static final double MIB = 1024 * 1024;
    private static final double BASE = 10 * MIB;
    private static final double FLOOR = 256 * KIB;
    private static final long OPEN_BEFORE_MS = 60_000;
    private static final long PAUSE_MS = 60_000;
    /** A longer PAUSE for the paused rate once the descent is over (it takes about 50 s). */
    private static final long LONG_PAUSE_MS = 150_000;
    private static final long AFTER_MS = 60_000;
    private static final long TICK_MS = 250;
    private static final List<String> TABLE = new ArrayList<>();
    private static final List<String> NOTES = new ArrayList<>();

    @TempDir
    Path dir;

    record Outcome(double openRate, long maxThrottleMs, long stallAfterOpenMs, long recoveryMs, long maxGapMs,
                   double pausedRate10s, double pausedRate30s, double principalFloor, double descentBytes,
                   double fixedFloorRate10s) {
    }


    /**
     * What Kafka itself lets the same connections send at a constant quota: the largest total
     * rate over any 10 s (between 30 s and 120 s) with a fixed quota from the start.
     */
    static double fixedQuotaRate10s(int connections, int requestBytes, double wantedTotal, double quota) {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        Metrics metrics = new Metrics(new SimulatedTime(clock));
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock), "fixed-",
                Optional.of(Plugin.wrapInstance(new FixedQuota(quota), metrics, "client.quota.callback.class")));
        try {
            Session session = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                    InetAddress.getLoopbackAddress());
            long start = clock.millis();
            double interval = requestBytes / (wantedTotal / connections) * 1000.0;
            double[] nextSend = new double[connections];
            for (int i = 0; i < connections; i++) {
                nextSend[i] = start + interval * i / connections;
            }
            List<long[]> sends = new ArrayList<>();
            while (true) {
                int who = 0;
                for (int i = 1; i < connections; i++) {
                    if (nextSend[i] < nextSend[who]) {
                        who = i;
                    }
                }
                if (nextSend[who] >= start + 120_000) {
                    break;
                }
                clock.setMillis((long) nextSend[who]);
                long now = clock.millis();
                int throttle = KafkaApisProduce.produce(manager, session, "producer-" + who, requestBytes, now);
                sends.add(new long[] {now, requestBytes});
                nextSend[who] = Math.max(nextSend[who] + interval, now + (double) Math.max(0, throttle));
            }
            double max = 0;
            for (long t = start + 30_000; t + 10_000 <= start + 120_000; t += 100) {
                max = Math.max(max, bytes(sends, t, t + 10_000) / 10.0);
            }
            return max;
        } finally {
            manager.shutdown();
            metrics.close();
        }
    }

    /** A callback with one constant PRODUCE quota. */
    private record FixedQuota(double quota) implements ClientQuotaCallback {
        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public Map<String, String> quotaMetricTags(org.apache.kafka.server.quota.ClientQuotaType type,
                                                   KafkaPrincipal principal, String clientId) {
            return Map.of("user", principal.getName(), "client-id", "");
        }

        @Override
        public Double quotaLimit(org.apache.kafka.server.quota.ClientQuotaType type, Map<String, String> tags) {
            return quota;
        }

        @Override
        public void updateQuota(org.apache.kafka.server.quota.ClientQuotaType type,
                                org.apache.kafka.server.quota.ClientQuotaEntity entity, double value) {
        }

        @Override
        public void removeQuota(org.apache.kafka.server.quota.ClientQuotaType type,
                                org.apache.kafka.server.quota.ClientQuotaEntity entity) {
        }

        @Override
        public boolean quotaResetRequired(org.apache.kafka.server.quota.ClientQuotaType type) {
            return false;
        }

        @Override
        public boolean updateClusterMetadata(org.apache.kafka.common.Cluster cluster) {
            return false;
        }

        @Override
        public void close() {
        }
    }

    Outcome simulate(int connections, int requestBytes, double wantedTotal, boolean jmx, long pauseMs)
            throws IOException {
        return simulate(connections, requestBytes, wantedTotal, jmx, pauseMs, false);
    }

    /** @param sharedClientId every connection uses the same client id (separate processes with one client.id) */
    Outcome simulate(int connections, int requestBytes, double wantedTotal, boolean jmx, long pauseMs,
                     boolean sharedClientId) throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        long start = clock.millis();
        Path file = dir.resolve("decision-" + System.nanoTime() + ".json");
        write(file, "OPEN", 1.0, clock);
        Map<String, Object> config = TestSupport.baseConfig(file);
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000"); // the simulation polls itself
        config.remove(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND); // the default floor, 256 KiB/s
        TestSupport.withoutPauseCeiling(config); // the throttle bounds where no ceiling binds
        for (String key : new String[] {VolumeQuotaConfig.STEP_DOWN_THROTTLE_MS, VolumeQuotaConfig.PAUSE_THROTTLE_MS,
            VolumeQuotaConfig.MAX_THROTTLE_MS}) {
            if (System.getProperty(key) != null) { // for sweeps: -Dvolume.quota.pause.throttle.ms=...
                config.put(key, System.getProperty(key));
            }
        }
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, clock::millis,
                jmx ? new JmxObservedRates() : ObservedRates.NONE);
        callback.configure(config);
        List<MetricsReporter> reporters = jmx ? List.of(new JmxReporter()) : List.of();
        Metrics metrics = new Metrics(new MetricConfig(), reporters, new SimulatedTime(clock), true,
                new KafkaMetricsContext("kafka.server"));
        Plugin<ClientQuotaCallback> plugin = Plugin.wrapInstance(callback, metrics, "client.quota.callback.class");
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock), "sim-", Optional.of(plugin));
        Session session = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                InetAddress.getLoopbackAddress());
        try {
            long pauseAt = start + OPEN_BEFORE_MS;
            long openAt = pauseAt + pauseMs;
            long end = openAt + AFTER_MS;
            double interval = requestBytes / (wantedTotal / connections) * 1000.0;
            double[] nextSend = new double[connections];
            long[] mutedUntil = new long[connections];
            long[] lastSend = new long[connections];
            long maxGap = 0;
            for (int i = 0; i < connections; i++) {
                nextSend[i] = start + interval * i / connections;
                lastSend[i] = start;
            }
            double nextTick = start + TICK_MS;
            List<long[]> sends = new ArrayList<>();
            long maxThrottle = 0;
            boolean pauseWritten = false;
            boolean openWritten = false;
            long[] mutedAtOpen = null;
            while (true) {
                int who = -1;
                double next = nextTick;
                for (int i = 0; i < connections; i++) {
                    if (nextSend[i] < next) {
                        next = nextSend[i];
                        who = i;
                    }
                }
                if (next >= end) {
                    break;
                }
                clock.setMillis((long) next);
                long now = clock.millis();
                if (who < 0) {
                    if (!pauseWritten && now >= pauseAt) {
                        write(file, "PAUSE", 0.0, clock);
                        pauseWritten = true;
                    }
                    if (!openWritten && now >= openAt) {
                        write(file, "OPEN", 1.0, clock);
                        openWritten = true;
                        mutedAtOpen = mutedUntil.clone();
                    }
                    callback.reload();
                    nextTick += TICK_MS;
                    continue;
                }
                int throttle = KafkaApisProduce.produce(manager, session,
                        sharedClientId ? "perf-producer-client" : "producer-" + who, requestBytes, now);
                sends.add(new long[] {now, requestBytes});
                maxThrottle = Math.max(maxThrottle, throttle);
                maxGap = Math.max(maxGap, now - lastSend[who]);
                lastSend[who] = now;
                mutedUntil[who] = now + Math.max(0, throttle);
                nextSend[who] = Math.max(next + interval, now + (double) Math.max(0, throttle));
            }
            for (int i = 0; i < connections; i++) {
                maxGap = Math.max(maxGap, end - lastSend[i]);
            }
            if (Boolean.getBoolean("sim.trace")) {
                StringBuilder line = new StringBuilder("trace " + connections + "x" + requestBytes / 1024 + ":");
                for (long t = pauseAt - 5_000; t < openAt + 20_000; t += 1_000) {
                    line.append(String.format(Locale.ROOT, " %.0f", bytes(sends, t, t + 1_000) / KIB));
                }
                System.out.println(line);
            }
            long stall = 0;
            for (long until : mutedAtOpen) {
                stall = Math.max(stall, until - openAt);
            }
            double openRate = bytes(sends, pauseAt - 30_000, pauseAt) / 30.0;
            double paused = 0;
            // The paused rate: the second half of the pause, at most its last 60 s.
            for (long t = Math.max(pauseAt + pauseMs / 2, openAt - 60_000); t + 10_000 <= openAt; t += 100) {
                paused = Math.max(paused, bytes(sends, t, t + 10_000) / 10.0);
            }
            double floor = PrincipalQuota.floor(BASE, FLOOR, connections, requestBytes,
                    Long.parseLong(System.getProperty(VolumeQuotaConfig.PAUSE_THROTTLE_MS,
                            String.valueOf(VolumeQuotaConfig.DEFAULT_PAUSE_THROTTLE_MS))));
            double paused30 = bytes(sends, openAt - 30_000, openAt) / 30.0;
            return new Outcome(openRate, maxThrottle, stall, recovery(sends, openAt, end, openRate), maxGap, paused,
                    paused30, floor, bytes(sends, pauseAt, pauseAt + 30_000),
                    fixedQuotaRate10s(connections, requestBytes, wantedTotal, floor));
        } finally {
            manager.shutdown();
            metrics.close();
            callback.close();
        }
    }

    private static void write(Path file, String state, double factor, TestSupport.MutableClock clock)
            throws IOException {
        TestSupport.writeAtomically(file, TestSupport.decisionJson(state, factor, clock.instant(), Duration.ofDays(1)));
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

    /** Time after openAt until the trailing 5 s total rate reaches 90 % of the pre-pause rate. */
    private static long recovery(List<long[]> sends, long openAt, long end, double openRate) {
        for (long t = openAt + 100; t <= end; t += 100) {
            if (bytes(sends, Math.max(openAt, t - 5_000), t) >= 0.9 * openRate * 5.0) {
                return t - openAt;
            }
        }
        return Long.MAX_VALUE;
    }

    private static String row(String source, int connections, int requestBytes, double wanted, Outcome o,
                              Outcome steady) {
        return String.format(Locale.ROOT,
                "| %s | %d | %d KiB | %.1f x base | %.1f s | %.1f s | %s | %.1f s | %.0f KiB/s | %.0f KiB/s"
                        + " | %.0f KiB/s | %.0f KiB/s | %.1f MiB |",
                source, connections, requestBytes / 1024, wanted / BASE, o.maxThrottleMs() / 1000.0,
                o.stallAfterOpenMs() / 1000.0,
                o.recoveryMs() == Long.MAX_VALUE ? "not within 60 s"
                        : String.format(Locale.ROOT, "%.1f s", o.recoveryMs() / 1000.0),
                o.maxGapMs() / 1000.0, steady.pausedRate10s() / KIB, steady.pausedRate30s() / KIB,
                o.principalFloor() / KIB, o.fixedFloorRate10s() / KIB, o.descentBytes() / MIB);
    }

    /**
     * Runs a 60 s PAUSE (throttles, mutes, recovery, gaps) and, if {@code pausedRate}, a 150 s
     * PAUSE for the paused rate after the descent, and checks both.
     */
    private void check(String source, int connections, int size, double wanted, boolean jmx, boolean shared,
                       boolean pausedRate) throws IOException {
        Outcome o = simulate(connections, size, wanted, jmx, PAUSE_MS, shared);
        Outcome steady = pausedRate ? simulate(connections, size, wanted, jmx, LONG_PAUSE_MS, shared) : o;
        TABLE.add(row(source, connections, size, wanted, o, steady));
        check(source, connections, size, wanted, o);
        if (pausedRate) {
            check(source + " (150 s pause)", connections, size, wanted, steady);
            String what = source + " " + connections + " x " + size / 1024 + " KiB, " + wanted / BASE + " x base: "
                    + steady;
            assertTrue(steady.pausedRate10s() <= 2 * steady.fixedFloorRate10s(),
                    () -> "paused rate over 10 s above twice what a fixed quota at the floor lets through: " + what);
        }
    }

    private void check(String source, int connections, int size, double wanted, Outcome o) {
        String what = source + " " + connections + " x " + size / 1024 + " KiB, " + wanted / BASE + " x base: " + o;
        if (Boolean.getBoolean("sim.noAssert")) {
            return;
        }
        assertTrue(o.maxThrottleMs() <= 30_000, () -> "longest throttle over 30 s: " + what);
        assertTrue(o.stallAfterOpenMs() <= 30_000, () -> "muted over 30 s after OPEN: " + what);
        assertTrue(o.recoveryMs() <= 30_000, () -> "not back to 90 % within 30 s: " + what);
        assertTrue(o.maxGapMs() <= 60_000, () -> "a connection idle for over 60 s: " + what);
    }

    @Test
    void pauseBoundHoldsForOneEightAndThirtyTwoConnectionsWithTheBrokersByteRates() throws IOException {
        for (int connections : new int[] {1, 8, 32}) {
            for (int size : new int[] {256 * 1024, 1024 * 1024}) {
                for (double wanted : new double[] {0.8 * BASE, 2 * BASE}) {
                    check("JMX byte rate", connections, size, wanted, true, false, true);
                }
            }
        }
    }

    /**
     * Separate producer processes often share one client.id, so the callback counts them as one
     * connection and the floor does not grow with them; the T_max rule must still bound the
     * throttles.
     */
    @Test
    void pauseBoundHoldsWhenAllConnectionsShareOneClientId() throws IOException {
        for (int connections : new int[] {8, 32}) {
            for (int size : new int[] {256 * 1024, 1024 * 1024}) {
                for (double wanted : new double[] {0.8 * BASE, 2 * BASE}) {
                    check("JMX, one client id", connections, size, wanted, true, true, true);
                }
            }
        }
    }

    /**
     * Without byte rates the callback steps down by at most half per window and assumes 1 MiB
     * requests. Throttles, mutes and recovery stay bounded; the descent takes 5 windows (55 s),
     * so the paused rate in the second half of a 60 s pause is not the floor yet (reported only).
     */
    @Test
    void pauseBoundHoldsWithoutByteRatesOnTheFallbackRule() throws IOException {
        for (int connections : new int[] {1, 8, 32}) {
            for (int size : new int[] {256 * 1024, 1024 * 1024}) {
                double wanted = 0.8 * BASE;
                check("fallback, no byte rates", connections, size, wanted, false, false, false);
            }
        }
    }

    /** Long enough after OPEN for every backlog to drain (demand 0.8 x base drains at 0.2 x base). */
    private static final long BUFFERED_AFTER_MS = 300_000;

    /** What a producer with a buffer sees: record ages at send and the longest blocked send(). */
    record Delivery(long maxRecordAgeMs, long maxBlockedMs, long maxThrottleMs, long oldestUnsentAtEndMs,
                    double pausedBytesPerSecond) {
    }

    /** Bytes a producer connection has created and sent, and when each byte was created. */
    private static final class ProducerBuffer {
        final double rate; // bytes per ms the application produces
        final double capacity; // buffer.memory
        double created;
        double sent;
        double lastMs;
        double blockedSinceMs = Double.NaN;
        long maxBlockedMs;
        final List<double[]> points = new ArrayList<>(); // {timeMs, createdBytes}, both increasing

        ProducerBuffer(double bytesPerSecond, double capacity, double startMs) {
            this.rate = bytesPerSecond / 1000.0;
            this.capacity = capacity;
            this.lastMs = startMs;
            points.add(new double[] {startMs, 0});
        }

        /** The application appends at its rate until the buffer is full; send() blocks then. */
        void advance(double nowMs) {
            if (Double.isNaN(blockedSinceMs)) {
                double room = sent + capacity - created;
                double wanted = rate * (nowMs - lastMs);
                if (wanted >= room) {
                    double fullAt = lastMs + room / rate;
                    created = sent + capacity;
                    points.add(new double[] {fullAt, created});
                    blockedSinceMs = fullAt;
                } else {
                    created += wanted;
                }
            }
            points.add(new double[] {nowMs, created});
            lastMs = nowMs;
        }

        /** When byte number {@code index} was created (piecewise linear between the points). */
        double createdAt(double index) {
            int lo = 0;
            int hi = points.size() - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (points.get(mid)[1] >= index) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            double[] p = points.get(lo);
            if (lo == 0 || p[1] == index) {
                return p[0];
            }
            double[] q = points.get(lo - 1);
            return q[0] + (p[0] - q[0]) * (index - q[1]) / (p[1] - q[1]);
        }

        /** Time at which the buffer holds {@code bytes} unsent bytes, if the application keeps producing. */
        double timeWhenQueued(double bytes) {
            double missing = bytes - (created - sent);
            return missing <= 0 ? lastMs : lastMs + missing / rate;
        }

        void send(double bytes, double nowMs) {
            sent += bytes;
            if (!Double.isNaN(blockedSinceMs)) {
                maxBlockedMs = Math.max(maxBlockedMs, (long) (nowMs - blockedSinceMs));
                blockedSinceMs = Double.NaN;
            }
        }
    }

    /**
     * Producers with a buffer (buffer.memory 32 MiB each, the Java producer's default) whose
     * application keeps producing at its rate during the pause: each connection sends a full
     * request (r bytes, oldest first) whenever it is not muted and has r bytes queued. A record
     * fails delivery when it waits longer than delivery.timeout.ms (120 s) from send() to the
     * request that carries it; send() fails when it blocks longer than max.block.ms (60 s).
     */
    Delivery simulateBuffered(int connections, int requestBytes, double wantedTotal, long pauseMs)
            throws IOException {
        return simulateBuffered(connections, requestBytes, requestBytes, wantedTotal, pauseMs);
    }

    /**
     * As above, but a connection sends as soon as it has {@code smallestRequest} bytes queued
     * (a record, then linger.ms), up to {@code requestBytes} (batch.size) per request: requests
     * are small while the producer keeps up and grow to {@code requestBytes} once a throttle
     * lets a backlog form, as a real producer's do.
     */
    Delivery simulateBuffered(int connections, int smallestRequest, int requestBytes, double wantedTotal,
                              long pauseMs) throws IOException {
        return simulateBuffered(BASE, connections, smallestRequest, requestBytes, wantedTotal, pauseMs);
    }

    /** As above, at another base (the real-cluster benchmark runs at 2 MiB/s too). */
    Delivery simulateBuffered(double base, int connections, int smallestRequest, int requestBytes,
                              double wantedTotal, long pauseMs) throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        long start = clock.millis();
        Path file = dir.resolve("decision-" + System.nanoTime() + ".json");
        write(file, "OPEN", 1.0, clock);
        Map<String, Object> config = TestSupport.baseConfig(file);
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000");
        config.put(VolumeQuotaConfig.BASE_BYTES_PER_SECOND, String.valueOf((long) base));
        config.remove(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND);
        TestSupport.withoutPauseCeiling(config); // the throttle bounds where no ceiling binds
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, clock::millis, new JmxObservedRates());
        callback.configure(config);
        Metrics metrics = new Metrics(new MetricConfig(), List.of(new JmxReporter()), new SimulatedTime(clock), true,
                new KafkaMetricsContext("kafka.server"));
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock), "sim-",
                Optional.of(Plugin.wrapInstance(callback, metrics, "client.quota.callback.class")));
        Session session = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                InetAddress.getLoopbackAddress());
        try {
            long pauseAt = start + OPEN_BEFORE_MS;
            long openAt = pauseAt + pauseMs;
            long end = openAt + BUFFERED_AFTER_MS;
            ProducerBuffer[] buffers = new ProducerBuffer[connections];
            double[] mutedUntil = new double[connections];
            for (int i = 0; i < connections; i++) {
                // Staggered starts, so that the connections do not send in lockstep.
                double offset = requestBytes / (wantedTotal / connections) * 1000.0 * i / connections;
                buffers[i] = new ProducerBuffer(wantedTotal / connections, 32 * MIB, start - offset);
            }
            double nextTick = start + TICK_MS;
            long maxAge = 0;
            long maxThrottle = 0;
            boolean pauseWritten = false;
            boolean openWritten = false;
            double pausedBytes = 0;
            while (true) {
                int who = -1;
                double next = nextTick;
                for (int i = 0; i < connections; i++) {
                    double ready = Math.max(mutedUntil[i], buffers[i].timeWhenQueued(smallestRequest));
                    if (ready < next) {
                        next = ready;
                        who = i;
                    }
                }
                if (next >= end) {
                    break;
                }
                clock.setMillis((long) Math.ceil(next));
                long now = clock.millis();
                if (who < 0) {
                    if (!pauseWritten && now >= pauseAt) {
                        write(file, "PAUSE", 0.0, clock);
                        pauseWritten = true;
                    }
                    if (!openWritten && now >= openAt) {
                        write(file, "OPEN", 1.0, clock);
                        openWritten = true;
                    }
                    callback.reload();
                    nextTick += TICK_MS;
                    continue;
                }
                ProducerBuffer buffer = buffers[who];
                buffer.advance(now);
                maxAge = Math.max(maxAge, (long) (now - buffer.createdAt(buffer.sent)));
                double request = Math.min(requestBytes, Math.floor(buffer.created - buffer.sent));
                buffer.send(request, now);
                if (now >= openAt - 30_000 && now < openAt) {
                    pausedBytes += request;
                }
                int throttle = KafkaApisProduce.produce(manager, session, "producer-" + who, request, now);
                maxThrottle = Math.max(maxThrottle, throttle);
                mutedUntil[who] = now + Math.max(0, throttle);
            }
            long oldestUnsent = 0;
            long maxBlocked = 0;
            for (ProducerBuffer buffer : buffers) {
                buffer.advance(end);
                oldestUnsent = Math.max(oldestUnsent, (long) (end - buffer.createdAt(buffer.sent)));
                maxBlocked = Math.max(maxBlocked, buffer.maxBlockedMs);
                if (!Double.isNaN(buffer.blockedSinceMs)) {
                    maxBlocked = Math.max(maxBlocked, (long) (end - buffer.blockedSinceMs));
                }
            }
            return new Delivery(maxAge, maxBlocked, maxThrottle, oldestUnsent, pausedBytes / 30.0);
        } finally {
            manager.shutdown();
            metrics.close();
            callback.close();
        }
    }

    /**
     * A 60 s PAUSE makes no record fail delivery: with the producers' buffers filling while
     * paused, every record still reaches the broker within delivery.timeout.ms (120 s), and no
     * send() blocks for longer than max.block.ms (60 s).
     */
    @Test
    void noRecordOutlivesTheDeliveryTimeoutInASixtySecondPause() throws IOException {
        for (int connections : new int[] {1, 8, 32}) {
            for (int size : new int[] {256 * 1024, 1024 * 1024}) {
                Delivery d = simulateBuffered(connections, size, 0.8 * BASE, PAUSE_MS);
                String what = connections + " x " + size / 1024 + " KiB: " + d;
                NOTES.add(String.format(Locale.ROOT, "Buffered producers, %d x %d KiB, 0.8 x base, PAUSE 60 s:"
                                + " oldest record at send %.1f s, longest blocked send() %.1f s, longest throttle"
                                + " %.1f s, oldest unsent record 300 s after OPEN %.1f s.", connections, size / 1024,
                        d.maxRecordAgeMs() / 1000.0, d.maxBlockedMs() / 1000.0, d.maxThrottleMs() / 1000.0,
                        d.oldestUnsentAtEndMs() / 1000.0));
                assertTrue(d.maxRecordAgeMs() < 120_000, () -> "a record older than delivery.timeout.ms: " + what);
                assertTrue(d.oldestUnsentAtEndMs() < 120_000, () -> "a record left to expire: " + what);
                assertTrue(d.maxBlockedMs() < 60_000, () -> "send() blocked beyond max.block.ms: " + what);
            }
        }
    }

    /**
     * Requests as a real producer makes them: one 16 KiB record per request while it keeps up
     * (0.8 x base shared by N connections), growing to full 1 MiB batches once throttles let a
     * backlog form. The callback's request size follows the broker's measurements, so it sees
     * small requests when the PAUSE begins and large ones a few seconds later.
     */
    @Test
    void boundHoldsWhenRequestsGrowFromRecordsToFullBatches() throws IOException {
        for (int connections : new int[] {1, 8, 32}) {
            Delivery d = simulateBuffered(connections, 16 * 1024, 1024 * 1024, 0.8 * BASE, PAUSE_MS);
            String what = connections + " x 16 KiB..1 MiB: " + d;
            NOTES.add(String.format(Locale.ROOT, "Requests growing from 16 KiB records to 1 MiB batches, %d"
                            + " connections, 0.8 x base, PAUSE 60 s: longest throttle %.1f s, oldest record at send"
                            + " %.1f s, longest blocked send() %.1f s.", connections, d.maxThrottleMs() / 1000.0,
                    d.maxRecordAgeMs() / 1000.0, d.maxBlockedMs() / 1000.0));
            if (Boolean.getBoolean("sim.noAssert")) {
                continue;
            }
            assertTrue(d.maxThrottleMs() <= 30_000, () -> "longest throttle over 30 s: " + what);
            assertTrue(d.maxRecordAgeMs() < 120_000, () -> "a record older than delivery.timeout.ms: " + what);
            assertTrue(d.maxBlockedMs() < 60_000, () -> "send() blocked beyond max.block.ms: " + what);
        }
    }

    /**
     * Growing requests at lower bases, where the backlog a connection builds during the first
     * mute is a large share of base: 16 KiB records growing to 1 MiB batches, 0.8 x base, 1 to
     * 10 MiB/s. All connections are muted together by the first step-down and come back
     * together with what they produced meanwhile: at base 4 MiB/s, 32 connections came back
     * with about 700 KiB each while the quota was planned for 16 KiB requests, and earned
     * throttles of 33 s before the floor planned for that backlog.
     */
    @Test
    void boundHoldsWhenRequestsGrowAtLowerBases() throws IOException {
        for (double base : new double[] {1 * MIB, 2 * MIB, 4 * MIB, 10 * MIB}) {
            for (int connections : new int[] {8, 32}) {
                Delivery d = simulateBuffered(base, connections, 16 * 1024, 1024 * 1024, 0.8 * base, PAUSE_MS);
                String what = String.format(Locale.ROOT, "base %.0f MiB/s, %d x 16 KiB..1 MiB: %s", base / MIB,
                        connections, d);
                NOTES.add(String.format(Locale.ROOT, "Requests growing from 16 KiB records to 1 MiB batches at base"
                                + " %.0f MiB/s, %d connections, 0.8 x base, PAUSE 60 s: longest throttle %.1f s,"
                                + " oldest record at send %.1f s, paused rate (last 30 s of PAUSE) %.0f KiB/s.",
                        base / MIB, connections, d.maxThrottleMs() / 1000.0, d.maxRecordAgeMs() / 1000.0,
                        d.pausedBytesPerSecond() / KIB));
                assertTrue(d.maxThrottleMs() <= 30_000, () -> "longest throttle over 30 s: " + what);
                assertTrue(d.maxRecordAgeMs() < 120_000, () -> "a record older than delivery.timeout.ms: " + what);
                assertTrue(d.maxBlockedMs() < 60_000, () -> "send() blocked beyond max.block.ms: " + what);
            }
        }
    }

    /**
     * OPEN can come back at any moment of the descent, including right after the longest
     * throttle: pauses of 5 to 90 s in 5 s steps, 8 and 32 connections of 1 MiB.
     */
    @Test
    void boundHoldsWheneverOpenReturns() throws IOException {
        long worstThrottle = 0;
        long worstStall = 0;
        long worstRecovery = 0;
        String worstCase = "";
        for (int connections : new int[] {8, 32}) {
            for (long pauseMs = 5_000; pauseMs <= 90_000; pauseMs += 5_000) {
                Outcome o = simulate(connections, 1024 * 1024, 0.8 * BASE, true, pauseMs);
                check("JMX byte rate, pause " + pauseMs / 1000 + " s", connections, 1024 * 1024, 0.8 * BASE, o);
                worstThrottle = Math.max(worstThrottle, o.maxThrottleMs());
                worstStall = Math.max(worstStall, o.stallAfterOpenMs());
                if (o.recoveryMs() > worstRecovery) {
                    worstRecovery = o.recoveryMs();
                    worstCase = connections + " x 1 MiB, pause " + pauseMs / 1000 + " s";
                }
            }
        }
        NOTES.add(String.format(Locale.ROOT, "OPEN after 5..90 s of PAUSE (5 s steps), 8 and 32 connections x 1 MiB,"
                + " 0.8 x base, JMX byte rate: longest throttle %.1f s, longest mute after OPEN %.1f s, slowest"
                + " recovery to 90 %% %.1f s (%s).", worstThrottle / 1000.0, worstStall / 1000.0,
                worstRecovery / 1000.0, worstCase));
    }

    @AfterAll
    static void writeTable() throws IOException {
        if (TABLE.isEmpty() && NOTES.isEmpty()) {
            return;
        }
        List<String> lines = new ArrayList<>();
        lines.add("| rate source | connections | request | wanted (total) | longest throttle | longest mute after OPEN |"
                + " back to 90 % | longest gap between a connection's requests | paused rate, max over 10 s |"
                + " paused rate, 30 s average | principal floor | fixed quota at the floor, max over 10 s |"
                + " bytes in first 30 s of PAUSE |");
        lines.add("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        lines.addAll(TABLE);
        lines.add("");
        lines.addAll(NOTES);
        Path out = Path.of("target", "pause-bound-simulation.md");
        Files.createDirectories(out.getParent());
        Files.write(out, lines, StandardCharsets.UTF_8);
    }
}
