package io.volumequota.broker;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.internals.Plugin;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.network.Session;
import org.apache.kafka.server.config.ClientQuotaManagerConfig;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.QuotaType;

/**
 * One principal's buffered producers through a PAUSE, on Kafka 4.3.1's {@link ClientQuotaManager}
 * and simulated time, with the callback either as shipped or with a quota epoch
 * ({@link EpochQuotaCallback}). Requests grow from one 16 KiB record to 1 MiB batches once
 * throttles let a backlog form ({@link BufferedProducer}); OPEN 60 s, PAUSE, OPEN 300 s; the
 * callback polls every 250 ms; base 10 MiB/s, floor 256 KiB/s, no PAUSE ceiling.
 */
final class EpochSimulation {

    static final double KIB = 1024;
    static final double MIB = 1024 * 1024;
    static final double BASE = 10 * MIB;
    static final double FLOOR = 256 * KIB;
    static final int RECORD = 16 * 1024;
    static final int BATCH = 1024 * 1024;
    private static final long OPEN_BEFORE_MS = 60_000;
    private static final long AFTER_MS = 300_000;
    private static final long TICK_MS = 250;

    /** How the callback sets the quota: production rules, or an epoch bumped on drops below 1 / dropRatio. */
    record Variant(String name, double dropRatio, boolean onTarget, Map<String, String> config) {
    }

    /** The client: {@code pipelined} 0 for Java-like, K for librdkafka-like with K requests written ahead. */
    record Scenario(int connections, int pipelined, boolean sharedClientId) {
        String client() {
            return (pipelined == 0 ? "Java-like" : "pipelined (" + pipelined + ")")
                    + (sharedClientId ? ", one client id" : "");
        }
    }

    /** What one run measured. */
    record Outcome(long maxThrottleMs, long stallAfterOpenMs, long recoveryMs, long maxGapMs, double pausedMax10s,
                   double pausedLast30s, double firstThirtySecondsBytes, long maxRecordAgeMs, long maxBlockedMs,
                   int bumps) {
    }

    private EpochSimulation() {
    }

    static Outcome run(Path dir, Variant variant, Scenario scenario, long pauseMs) throws IOException {
        return run(dir, variant, scenario, RECORD, pauseMs);
    }

    /** @param smallestRequest a request holds at least this (RECORD: one record; BATCH: full batches only) */
    static Outcome run(Path dir, Variant variant, Scenario scenario, int smallestRequest, long pauseMs)
            throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        Path file = dir.resolve("decision-" + System.nanoTime() + ".json");
        write(file, "OPEN", 1.0, clock);
        Map<String, Object> config = TestSupport.baseConfig(file);
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000"); // the simulation polls itself
        config.remove(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND); // the default floor, 256 KiB/s
        TestSupport.withoutPauseCeiling(config); // the throttle bounds where no ceiling binds
        config.putAll(variant.config());
        EpochQuotaCallback callback = EpochQuotaCallback.create(clock, variant.dropRatio(), variant.onTarget());
        callback.configure(config);
        Metrics metrics = new Metrics(new SimulatedTime(clock));
        callback.attach(metrics);
        ClientQuotaManager manager = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                QuotaType.PRODUCE, new SimulatedTime(clock), "epoch-",
                Optional.of(Plugin.<ClientQuotaCallback>wrapInstance(callback, metrics,
                        "client.quota.callback.class")));
        try {
            return new Run(clock, file, callback, manager, scenario, smallestRequest, pauseMs).go();
        } finally {
            manager.shutdown();
            metrics.close();
            callback.close();
        }
    }

    /** The event loop of one run and what it records. */
    private static final class Run {
        final TestSupport.MutableClock clock;
        final Path file;
        final EpochQuotaCallback callback;
        final ClientQuotaManager manager;
        final Scenario scenario;
        final Session session = new Session(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"),
                InetAddress.getLoopbackAddress());
        final long start;
        final long pauseAt;
        final long openAt;
        final long end;
        final BufferedProducer[] producers;
        final List<long[]> reads = new ArrayList<>(); // {timeMs, bytes}
        long maxThrottle;
        long maxGap;
        long maxAge;
        double[] mutedAtOpen;
        /** Bytes read before each read, for sums over time ranges. */
        double[] before;

        Run(TestSupport.MutableClock clock, Path file, EpochQuotaCallback callback, ClientQuotaManager manager,
            Scenario scenario, int smallestRequest, long pauseMs) {
            this.clock = clock;
            this.file = file;
            this.callback = callback;
            this.manager = manager;
            this.scenario = scenario;
            this.start = clock.millis();
            this.pauseAt = start + OPEN_BEFORE_MS;
            this.openAt = pauseAt + pauseMs;
            this.end = openAt + AFTER_MS;
            int n = scenario.connections();
            double demand = 0.8 * BASE;
            producers = new BufferedProducer[n];
            for (int i = 0; i < n; i++) {
                // Staggered starts, so that the connections do not send in lockstep.
                double offset = smallestRequest / (demand / n) * 1000.0 * i / n;
                producers[i] = new BufferedProducer(demand / n, 32 * MIB, smallestRequest, BATCH, scenario.pipelined(),
                        start - offset);
            }
        }

        Outcome go() throws IOException {
            double nextTick = start + TICK_MS;
            boolean pauseWritten = false;
            while (true) {
                int who = -1;
                double next = nextTick;
                for (int i = 0; i < producers.length; i++) {
                    double ready = producers[i].readyAtMs();
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
                if (who >= 0) {
                    read(who, now);
                    continue;
                }
                if (!pauseWritten && now >= pauseAt) {
                    write(file, "PAUSE", 0.0, clock);
                    pauseWritten = true;
                }
                if (mutedAtOpen == null && now >= openAt) {
                    write(file, "OPEN", 1.0, clock);
                    mutedAtOpen = new double[producers.length];
                    for (int i = 0; i < producers.length; i++) {
                        mutedAtOpen[i] = producers[i].mutedUntilMs;
                    }
                }
                callback.reload();
                nextTick += TICK_MS;
            }
            return outcome();
        }

        private void read(int who, long now) {
            BufferedProducer producer = producers[who];
            maxGap = Math.max(maxGap, (long) (now - producer.lastReadMs));
            double[] request = producer.read(now);
            maxAge = Math.max(maxAge, (long) request[1]);
            reads.add(new long[] {now, (long) request[0]});
            String clientId = scenario.sharedClientId() ? "perf-producer-client" : "producer-" + who;
            int throttle = KafkaApisProduce.produce(manager, session, clientId, request[0], now);
            maxThrottle = Math.max(maxThrottle, throttle);
            producer.mutedUntilMs = now + Math.max(0, throttle);
        }

        private Outcome outcome() {
            before = new double[reads.size() + 1];
            for (int i = 0; i < reads.size(); i++) {
                before[i + 1] = before[i] + reads.get(i)[1];
            }
            long stall = 0;
            long blocked = 0;
            for (int i = 0; i < producers.length; i++) {
                stall = Math.max(stall, (long) (mutedAtOpen[i] - openAt));
                blocked = Math.max(blocked, producers[i].maxBlockedMs(end));
                maxAge = Math.max(maxAge, (long) producers[i].oldestUnsentAgeMs(end));
                maxGap = Math.max(maxGap, (long) (end - producers[i].lastReadMs));
            }
            double paused10 = 0;
            for (long t = Math.max(pauseAt + (openAt - pauseAt) / 2, openAt - 60_000); t + 10_000 <= openAt;
                    t += 100) {
                paused10 = Math.max(paused10, bytes(t, t + 10_000) / 10.0);
            }
            double openRate = bytes(pauseAt - 30_000, pauseAt) / 30.0;
            return new Outcome(maxThrottle, stall, recovery(openRate), maxGap, paused10,
                    bytes(openAt - 30_000, openAt) / 30.0, bytes(pauseAt, pauseAt + 30_000), maxAge, blocked,
                    callback.bumps());
        }

        /** Time after OPEN until the trailing 5 s total rate reaches 90 % of the pre-pause rate. */
        private long recovery(double openRate) {
            for (long t = openAt + 100; t <= end; t += 100) {
                if (bytes(Math.max(openAt, t - 5_000), t) >= 0.9 * openRate * 5.0) {
                    return t - openAt;
                }
            }
            return Long.MAX_VALUE;
        }

        private double bytes(long from, long to) {
            return before[firstAtOrAfter(to)] - before[firstAtOrAfter(from)];
        }

        /** Index of the first read at or after {@code timeMs} (reads are in time order). */
        private int firstAtOrAfter(long timeMs) {
            int lo = 0;
            int hi = reads.size();
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (reads.get(mid)[0] >= timeMs) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            return lo;
        }
    }

    private static void write(Path file, String state, double factor, TestSupport.MutableClock clock)
            throws IOException {
        TestSupport.writeAtomically(file, TestSupport.decisionJson(state, factor, clock.instant(), Duration.ofDays(1)));
    }
}
