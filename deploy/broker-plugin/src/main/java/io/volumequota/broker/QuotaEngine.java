package io.volumequota.broker;

import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything behind the callback that is not a cheap flag or map read: the decision file, the
 * broker's measured rates, validity, and each principal's quota. One engine per process and
 * configuration ({@link #acquire}): a combined KRaft node creates two callbacks (broker and
 * controller roles), and both share one engine, so the file is polled and the quota stepped
 * down once.
 *
 * <p>Two daemon threads, each catching everything so that no error cancels its schedule:
 * <ul>
 *   <li>the reader ({@code volume-quota-reader-<n>}): file I/O or the decisions-topic consumer
 *       ({@link TopicDecisionSource}), and the JMX byte-rate sample;</li>
 *   <li>the ticker ({@code volume-quota-ticker-<n>}): validity against the clocks, the quota
 *       rules, publication and the reset flags. It never does I/O, so a read that hangs cannot
 *       keep an expired decision in force.</li>
 * </ul>
 * Request threads only call {@link #onProduceRequest} (a map lookup, a counter increment) and
 * {@link #quotaFor} (a map lookup and a volatile read).
 *
 * <p>The engine runs the threads and the tick; each concern is its own class: {@link DecisionReader}
 * (file or topic), {@link RateSampler} (the broker's byte rates), {@link ValidityClock} (expiry),
 * {@link ProducerTable} (the principals and their counts), {@link QuotaTicker} (one tick),
 * {@link ProducePolicy} (one principal's quota, a pure function) and {@link EngineMetrics} (what
 * the metrics show).
 */
final class QuotaEngine {

    private static final Logger LOG = LoggerFactory.getLogger(QuotaEngine.class);
    private static final AtomicInteger ENGINES = new AtomicInteger();
    /** Engines shared by the callbacks of this process, by configuration. Guarded by itself. */
    private static final Map<VolumeQuotaConfig, QuotaEngine> SHARED = new HashMap<>();

    /**
     * For this long after the target falls to PAUSE, the shaped step-down (which keeps the first
     * throttles within T_step) may stay above the PAUSE ceiling; after it, the ceiling caps every quota.
     */
    static final long CEILING_AFTER_MS = 30_000;

    enum StateCode {
        NONE(-1), OPEN(0), THROTTLE(1), PAUSE(2);

        final int code;

        StateCode(int code) {
            this.code = code;
        }
    }

    final VolumeQuotaConfig config;
    final int id = ENGINES.incrementAndGet();
    private final LongSupplier monoMs;
    private int users; // guarded by SHARED, for shared engines

    private final EngineMetrics metrics = new EngineMetrics();
    final AtomicLong reloadErrors = metrics.reloadErrors;
    final AtomicLong expiries = metrics.expiries;
    final AtomicLong stepDowns = metrics.stepDowns;
    final AtomicLong quotaResets = metrics.quotaResets;
    final AtomicLong quotaChanges = metrics.quotaChanges;
    final AtomicLong pollerErrors = metrics.pollerErrors;

    private final DecisionReader reader;
    private final RateSampler rates;
    private final ValidityClock validity;
    // Read on request threads.
    private final ProducerTable producers;
    private final CopyOnWriteArrayList<AtomicBoolean> resetFlags = new CopyOnWriteArrayList<>();
    /** The ticker's work, guarded by tickLock. */
    private final Object tickLock = new Object();
    private final QuotaTicker tick;

    private ScheduledExecutorService readerThread;
    private ScheduledExecutorService ticker;
    private volatile Thread tickerThread;
    private volatile boolean closed;

    QuotaEngine(VolumeQuotaConfig config, Clock wall, LongSupplier monoMs, ObservedRates observedRates) {
        this(config, wall, monoMs, observedRates, KafkaDecisionLog.FACTORY);
    }

    QuotaEngine(VolumeQuotaConfig config, Clock wall, LongSupplier monoMs, ObservedRates observedRates,
                DecisionLog.Factory decisionLogs) {
        this.config = config;
        this.monoMs = monoMs;
        this.reader = new DecisionReader(config, decisionLogs, monoMs, id, metrics.reloadErrors);
        this.rates = new RateSampler(config, monoMs, observedRates, id);
        this.validity = new ValidityClock(config, metrics.expiries);
        this.producers = new ProducerTable(monoMs);
        this.tick = new QuotaTicker(config, id, wall, monoMs, reader, rates, validity, producers, metrics, resetFlags);
    }

    /** The process-wide engine for this configuration, started on first use. */
    static QuotaEngine acquire(VolumeQuotaConfig config, ObservedRates rates) {
        synchronized (SHARED) {
            QuotaEngine engine = SHARED.get(config);
            if (engine == null) {
                engine = new QuotaEngine(config, Clock.systemUTC(), () -> System.nanoTime() / 1_000_000,
                        rates, KafkaDecisionLog.FACTORY);
                engine.start();
                SHARED.put(config, engine);
                LOG.info("volume-quota engine #{} started (shared by every callback of this process with the same"
                        + " configuration)", engine.id);
            } else {
                LOG.info("volume-quota engine #{} shared with another callback instance", engine.id);
            }
            engine.users++;
            return engine;
        }
    }

    /** Gives back a shared engine; the last user stops it. */
    void release() {
        synchronized (SHARED) {
            if (--users > 0) {
                return;
            }
            SHARED.remove(config, this);
        }
        close();
    }

    /**
     * Loads once (so a quota exists before the first request), then starts both threads. The
     * topic source is not read here: configure() runs on the broker's start-up thread before
     * the broker serves, so the on-missing action applies until the reader's first decision.
     */
    void start() {
        if (!reader.readsTopic()) {
            readOnce();
        }
        tickOnce();
        readerThread = Executors.newSingleThreadScheduledExecutor(
                runnable -> daemon(runnable, "volume-quota-reader-" + id));
        ticker = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = daemon(runnable, "volume-quota-ticker-" + id);
            tickerThread = thread;
            return thread;
        });
        long period = config.reloadIntervalMs();
        readerThread.scheduleWithFixedDelay(() -> guarded("reader", this::readOnce),
                reader.readsTopic() ? 0 : period, period, TimeUnit.MILLISECONDS);
        ticker.scheduleWithFixedDelay(() -> guarded("ticker", this::tickOnce), period, period, TimeUnit.MILLISECONDS);
    }

    private static Thread daemon(Runnable runnable, String name) {
        Thread thread = new Thread(runnable, name);
        thread.setDaemon(true);
        return thread;
    }

    /** Runs one poll step; catches everything (an escaping Error would cancel the schedule for good). */
    private void guarded(String what, Runnable step) {
        try {
            step.run();
        } catch (Throwable t) {
            pollerErrors.incrementAndGet();
            try {
                LOG.error("volume-quota engine #{} {}: unexpected error, will retry at the next poll", id, what, t);
            } catch (Throwable ignored) {
                // nothing left to do; the next run tries again
            }
        }
    }

    void close() {
        closed = true;
        boolean readerStopped = true;
        for (ScheduledExecutorService executor : new ScheduledExecutorService[] {readerThread, ticker}) {
            if (executor == null) {
                continue;
            }
            executor.shutdownNow();
            try {
                if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                    LOG.warn("volume-quota engine #{}: a poller thread did not stop within 5 s", id);
                    readerStopped &= executor != readerThread;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                readerStopped &= executor != readerThread;
            }
        }
        if (reader.readsTopic()) {
            if (readerStopped) {
                reader.close(); // the reader has stopped: the consumer is ours alone now
            } else {
                LOG.warn("volume-quota engine #{}: the decisions consumer is left to the stuck reader thread", id);
            }
        }
    }

    // ---------------------------------------------------------------- request threads

    /** Counts one PRODUCE request of {@code user} from {@code clientId}. Cheap; never throws. */
    void onProduceRequest(String user, String clientId) {
        producers.onProduceRequest(user, clientId);
    }

    /** The PRODUCE quota for {@code user} (not excluded). */
    double quotaFor(String user) {
        return producers.quotaFor(user, tick.defaultQuota());
    }

    /** The produce requests counted for {@code user} since it was first seen (tests). */
    long countedRequests(String user) {
        return producers.countedRequests(user);
    }

    void addResetFlag(AtomicBoolean flag) {
        resetFlags.add(flag);
    }

    void removeResetFlag(AtomicBoolean flag) {
        resetFlags.remove(flag);
    }

    double defaultQuota() {
        return tick.defaultQuota();
    }

    /** Decisions consumers rebuilt after silence (topic source; 0 for the file). */
    long decisionReaderRebuilds() {
        return reader.rebuilds();
    }

    Thread tickerThread() {
        return tickerThread;
    }

    // ---------------------------------------------------------------- reader thread

    /** Reads the decision file if it changed (or polls the decisions topic), then samples the broker's byte rates. */
    void readOnce() {
        synchronized (reader) {
            if (closed) {
                return;
            }
            reader.read();
        }
        if (!producers.isEmpty()) {
            rates.sample();
        }
    }

    // ---------------------------------------------------------------- ticker thread

    /** Checks validity, computes every quota, publishes them and raises the reset flags. */
    void tickOnce() {
        synchronized (tickLock) {
            if (closed) {
                return;
            }
            tick.tick();
        }
    }

    // ---------------------------------------------------------------- metrics

    StateCode state() {
        return metrics.state;
    }

    double factorInForce() {
        return metrics.factorInForce;
    }

    double targetQuota() {
        return metrics.targetQuota;
    }

    double highestQuota() {
        return metrics.highestQuota;
    }

    boolean ratesAvailable() {
        return metrics.ratesAvailable;
    }

    int trackedPrincipals() {
        return producers.size();
    }

    /** Seconds since the last decision that was valid when checked was read; -1 if none yet. */
    double lastValidDecisionAgeSeconds() {
        return validity.lastValidDecisionAgeSeconds(monoMs.getAsLong());
    }
}
