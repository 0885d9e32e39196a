package io.volumequota.broker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
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
 */
final class QuotaEngine {

    private static final Logger LOG = LoggerFactory.getLogger(QuotaEngine.class);
    private static final AtomicInteger ENGINES = new AtomicInteger();
    /** Engines shared by the callbacks of this process, by configuration. Guarded by itself. */
    private static final Map<VolumeQuotaConfig, QuotaEngine> SHARED = new HashMap<>();

    /** Larger decision files are treated as garbled (the real one is a few KiB at most). */
    static final long MAX_DECISION_FILE_BYTES = 1024 * 1024;
    /** A client id counts as a connection while it sent a produce request within this time. */
    static final long CONNECTION_LOOKBACK_MS = 60_000;
    /** Time constant of the average request size (bytes / requests, both faded). */
    static final long REQUEST_SIZE_AVERAGE_MS = 30_000;
    /**
     * For this long after the target falls to PAUSE, the shaped step-down (which keeps the first
     * throttles within T_step) may stay above the PAUSE ceiling; after it, the ceiling caps every quota.
     */
    static final long CEILING_AFTER_MS = 30_000;
    /** Principals without a produce request for this long are forgotten (Kafka drops their sensors after 1 h). */
    static final long IDLE_PRINCIPAL_MS = 3_600_000;

    enum StateCode {
        NONE(-1), OPEN(0), THROTTLE(1), PAUSE(2);

        final int code;

        StateCode(int code) {
            this.code = code;
        }
    }

    final VolumeQuotaConfig config;
    final int id = ENGINES.incrementAndGet();
    private final Clock wall;
    private final LongSupplier monoMs;
    private final ObservedRates observedRates;
    private final long staleRatesMs;
    private int users; // guarded by SHARED, for shared engines

    // Read on request threads.
    private final ConcurrentHashMap<String, Principal> principals = new ConcurrentHashMap<>();
    private volatile double defaultQuota = Double.NaN;
    private final CopyOnWriteArrayList<AtomicBoolean> resetFlags = new CopyOnWriteArrayList<>();

    // Reader -> ticker.
    private volatile Loaded loaded = new Loaded(null, "not read yet", 0);
    private volatile RateSample rateSample;

    // Metrics.
    private volatile StateCode state = StateCode.NONE;
    private volatile double factorInForce = Double.NaN;
    private volatile double targetQuota = Double.NaN;
    private volatile double highestQuota = Double.NaN;
    private volatile long lastValidReadMonoMs = Long.MIN_VALUE;
    private volatile boolean ratesAvailable;
    final AtomicLong reloadErrors = new AtomicLong();
    final AtomicLong expiries = new AtomicLong();
    final AtomicLong stepDowns = new AtomicLong();
    final AtomicLong quotaResets = new AtomicLong();
    final AtomicLong quotaChanges = new AtomicLong();
    final AtomicLong pollerErrors = new AtomicLong();

    // Ticker state, guarded by tickLock.
    private final Object tickLock = new Object();
    private final StepDownLimiter defaultLimiter;
    private final FactorQuantizer quantizer;
    private String lastStatus;
    private boolean reRaise;
    private Loaded expiryCounted;
    private Boolean ratesLogged;
    private long targetFellAtMs = Long.MIN_VALUE / 2;

    // Reader state, guarded by readLock.
    private final Object readLock = new Object();
    private FileStamp lastStamp;
    private byte[] lastContent;
    private String lastReadProblem;

    /** The topic source (decision.source=topic), used on the reader thread only; null for the file. */
    private final TopicDecisionSource topicSource;

    private ScheduledExecutorService reader;
    private ScheduledExecutorService ticker;
    private volatile Thread tickerThread;
    private volatile boolean closed;

    /** One producing principal as the broker sees it. */
    static final class Principal {
        final String name;
        final LongAdder requests = new LongAdder();
        final ConcurrentHashMap<String, Long> clients = new ConcurrentHashMap<>();
        volatile long lastRequestMs;
        volatile double quota = Double.NaN;
        // Ticker only.
        long lastTickMs = Long.MIN_VALUE;
        long lastCount;
        double bytesSum;
        double requestsSum;
        double demandAtFall; // its byte rate when the target last fell
        StepDownLimiter limiter;
        int connections;

        Principal(String name) {
            this.name = name;
        }
    }

    private record Loaded(Decision decision, String problem, long readAtMonoMs) {
    }

    private record RateSample(Map<String, Double> rates, long atMonoMs) {
    }

    private record FileStamp(FileTime modified, long size, Object fileKey) {
    }

    QuotaEngine(VolumeQuotaConfig config, Clock wall, LongSupplier monoMs, ObservedRates observedRates) {
        this(config, wall, monoMs, observedRates, KafkaDecisionLog.FACTORY);
    }

    QuotaEngine(VolumeQuotaConfig config, Clock wall, LongSupplier monoMs, ObservedRates observedRates,
                DecisionLog.Factory decisionLogs) {
        this.config = config;
        this.topicSource = config.decisionSource() == VolumeQuotaConfig.DecisionSource.TOPIC
                ? new TopicDecisionSource(config, decisionLogs, monoMs, id) : null;
        if (topicSource != null) {
            loaded = new Loaded(null, "no decision read from topic " + config.decisionTopic() + " yet", 0);
        }
        this.wall = wall;
        this.monoMs = monoMs;
        this.observedRates = observedRates;
        this.staleRatesMs = Math.max(2_000, 4 * config.reloadIntervalMs());
        this.defaultLimiter = new StepDownLimiter(config.maxStepDownRatio(), config.stepDownIntervalMs());
        this.quantizer = new FactorQuantizer(config.throttleFactorStep());
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
        if (topicSource == null) {
            readOnce();
        }
        tickOnce();
        reader = Executors.newSingleThreadScheduledExecutor(runnable -> daemon(runnable, "volume-quota-reader-" + id));
        ticker = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = daemon(runnable, "volume-quota-ticker-" + id);
            tickerThread = thread;
            return thread;
        });
        long period = config.reloadIntervalMs();
        reader.scheduleWithFixedDelay(() -> guarded("reader", this::readOnce), topicSource == null ? period : 0,
                period, TimeUnit.MILLISECONDS);
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
        for (ScheduledExecutorService executor : new ScheduledExecutorService[] {reader, ticker}) {
            if (executor == null) {
                continue;
            }
            executor.shutdownNow();
            try {
                if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                    LOG.warn("volume-quota engine #{}: a poller thread did not stop within 5 s", id);
                    readerStopped &= executor != reader;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                readerStopped &= executor != reader;
            }
        }
        if (topicSource != null) {
            if (readerStopped) {
                topicSource.close(); // the reader has stopped: the consumer is ours alone now
            } else {
                LOG.warn("volume-quota engine #{}: the decisions consumer is left to the stuck reader thread", id);
            }
        }
    }

    // ---------------------------------------------------------------- request threads

    /** Counts one PRODUCE request of {@code user} from {@code clientId}. Cheap; never throws. */
    void onProduceRequest(String user, String clientId) {
        Principal principal = principals.get(user);
        if (principal == null) {
            principal = principals.computeIfAbsent(user, Principal::new);
        }
        long now = monoMs.getAsLong();
        principal.requests.increment();
        principal.lastRequestMs = now;
        String client = clientId == null ? "" : clientId;
        Long seen = principal.clients.get(client);
        if (seen == null || now - seen >= 1_000) {
            principal.clients.put(client, now);
        }
    }

    /** The PRODUCE quota for {@code user} (not excluded). */
    double quotaFor(String user) {
        Principal principal = principals.get(user);
        double quota = principal == null ? Double.NaN : principal.quota;
        return Double.isNaN(quota) ? defaultQuota : quota;
    }

    /** The produce requests counted for {@code user} since it was first seen (tests). */
    long countedRequests(String user) {
        Principal principal = principals.get(user);
        return principal == null ? 0 : principal.requests.sum();
    }

    void addResetFlag(AtomicBoolean flag) {
        resetFlags.add(flag);
    }

    void removeResetFlag(AtomicBoolean flag) {
        resetFlags.remove(flag);
    }

    double defaultQuota() {
        return defaultQuota;
    }

    /** Decisions consumers rebuilt after silence (topic source; 0 for the file). */
    long decisionReaderRebuilds() {
        return topicSource == null ? 0 : topicSource.rebuilds();
    }

    Thread tickerThread() {
        return tickerThread;
    }

    // ---------------------------------------------------------------- reader thread

    /** Reads the decision file if it changed (or polls the decisions topic), then samples the broker's byte rates. */
    void readOnce() {
        synchronized (readLock) {
            if (closed) {
                return;
            }
            if (topicSource != null) {
                readTopic();
            } else {
                readFileIfChanged();
            }
        }
        sampleRates();
    }

    /** Longest a poll of the decisions topic holds the reader thread. */
    private long topicPollMs() {
        return Math.min(config.reloadIntervalMs(), 500);
    }

    private void readTopic() {
        TopicDecisionSource.Outcome outcome = topicSource.step(topicPollMs());
        if (outcome instanceof TopicDecisionSource.Outcome.Content content) {
            accept(content.bytes(), "decision at offset " + content.offset() + " of " + config.decisionTopic());
        } else if (outcome instanceof TopicDecisionSource.Outcome.Deleted deleted) {
            forget("decision deleted from " + config.decisionTopic() + " (tombstone at offset " + deleted.offset()
                    + ")", false);
        } else if (outcome instanceof TopicDecisionSource.Outcome.Trouble trouble) {
            String problem = trouble.problem();
            if (!problem.equals(lastReadProblem)) {
                lastReadProblem = problem;
                if (trouble.error()) {
                    reloadErrors.incrementAndGet();
                }
            }
            // A decision already read stays in force until its validUntil; only say why there is none.
            Loaded current = loaded;
            if (current.decision() == null && !problem.equals(current.problem())) {
                loaded = new Loaded(null, problem, monoMs.getAsLong());
            }
        }
    }

    /** New decision bytes from either source: parsed exactly alike. Unchanged bytes keep their first read time. */
    private void accept(byte[] content, String where) {
        if (Arrays.equals(content, lastContent)) {
            return;
        }
        lastContent = content;
        long now = monoMs.getAsLong();
        try {
            loaded = new Loaded(Decision.parse(content), null, now);
            lastReadProblem = null;
        } catch (Decision.InvalidDecisionException e) {
            reloadErrors.incrementAndGet();
            lastReadProblem = "garbled " + where + ": " + e.getMessage();
            loaded = new Loaded(null, lastReadProblem, now);
        }
    }

    private void readFileIfChanged() {
        Path path = config.decisionPath();
        try {
            BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
            FileStamp stamp = new FileStamp(attributes.lastModifiedTime(), attributes.size(), attributes.fileKey());
            if (stamp.equals(lastStamp)) {
                return;
            }
            if (!attributes.isRegularFile() || attributes.size() > MAX_DECISION_FILE_BYTES) {
                forget("not a regular file of at most " + MAX_DECISION_FILE_BYTES + " bytes: " + path, true);
                return;
            }
            byte[] content = Files.readAllBytes(path);
            lastStamp = stamp;
            accept(content, "decision file " + path);
        } catch (NoSuchFileException e) {
            forget("decision file not found: " + path, false);
        } catch (IOException e) {
            forget("cannot read decision file " + path + ": " + e, true);
        }
    }

    private void forget(String problem, boolean error) {
        lastStamp = null;
        lastContent = null;
        if (!problem.equals(lastReadProblem)) {
            lastReadProblem = problem;
            if (error) {
                reloadErrors.incrementAndGet();
            }
        }
        if (loaded.decision() != null || !problem.equals(loaded.problem())) {
            loaded = new Loaded(null, problem, monoMs.getAsLong());
        }
    }

    private void sampleRates() {
        if (principals.isEmpty()) {
            return;
        }
        Map<String, Double> rates;
        try {
            rates = observedRates.produceByteRates();
        } catch (Exception | LinkageError e) {
            rates = null;
            if (!Boolean.FALSE.equals(ratesLogged)) {
                ratesLogged = Boolean.FALSE;
                LOG.warn("volume-quota engine #{}: cannot read the broker's produce byte rates ({}); stepping down"
                        + " by at most x1/{} per {} ms and assuming {}-byte requests until they can be read", id,
                        e.toString(), config.maxStepDownRatio(), config.stepDownIntervalMs(),
                        (long) config.assumedRequestBytes());
            }
        }
        if (rates != null && !Boolean.TRUE.equals(ratesLogged)) {
            ratesLogged = Boolean.TRUE;
            LOG.info("volume-quota engine #{}: reading the broker's produce byte rates", id);
        }
        rateSample = new RateSample(rates, monoMs.getAsLong());
    }

    // ---------------------------------------------------------------- ticker thread

    /** Checks validity, computes every quota, publishes them and raises the reset flags. */
    void tickOnce() {
        synchronized (tickLock) {
            if (closed) {
                return;
            }
            tick();
        }
    }

    private void tick() {
        long now = monoMs.getAsLong();
        Instant wallNow = wall.instant();
        Loaded current = loaded;
        Decision valid = current.decision();
        String problem = current.problem();
        if (valid != null) {
            String invalid = config.decisionSource() == VolumeQuotaConfig.DecisionSource.TOPIC
                    ? DecisionValidity.problemOfReceived(valid, now, current.readAtMonoMs(), config.maxValidityMs())
                    : DecisionValidity.problem(valid, wallNow, now, current.readAtMonoMs(), config.maxValidityMs());
            if (invalid != null) {
                problem = invalid;
                valid = null;
                if (expiryCounted != current) {
                    expiryCounted = current;
                    expiries.incrementAndGet();
                }
            } else {
                lastValidReadMonoMs = current.readAtMonoMs();
            }
        }
        Decision applied = valid;
        if (valid != null && valid.state() == Decision.State.THROTTLE) {
            applied = valid.withFactor(quantizer.apply(valid.throttleFactor()));
        } else {
            quantizer.reset();
        }
        double base = config.baseBytesPerSecond();
        double target = QuotaMapping.targetBytesPerSecond(applied, config);
        state = applied == null ? StateCode.NONE : StateCode.valueOf(applied.state().name());
        factorInForce = applied == null ? Double.NaN
                : switch (applied.state()) {
                    case OPEN -> 1.0;
                    case PAUSE -> 0.0;
                    case THROTTLE -> applied.throttleFactor();
                };
        if (target < targetQuota) { // false while NaN
            targetFellAtMs = now;
        }
        targetQuota = target;

        RateSample sample = rateSample;
        Map<String, Double> rates = sample != null && sample.rates() != null && now - sample.atMonoMs() <= staleRatesMs
                ? sample.rates() : null;
        ratesAvailable = rates != null;

        int changed = 0;
        int down = 0;
        double highest = Double.NaN;
        long windowMs = config.stepDownIntervalMs();
        // Under PAUSE the ceilings are shared among the principals that produced in the last 60 s.
        int pausedPrincipals = 0;
        if (target < base && target <= config.pauseBytesPerSecond()) {
            for (Principal principal : principals.values()) {
                if (now - principal.lastRequestMs <= CONNECTION_LOOKBACK_MS) {
                    pausedPrincipals++;
                }
            }
        }
        boolean ceilingInForce = target < base && target <= config.pauseBytesPerSecond()
                && now - targetFellAtMs >= CEILING_AFTER_MS;
        for (Principal principal : principals.values()) {
            if (now - principal.lastRequestMs > IDLE_PRINCIPAL_MS) {
                principals.remove(principal.name, principal);
                continue;
            }
            // What its sensor has: its own quota, or the default it was created with.
            double previous = Double.isNaN(principal.quota) ? defaultQuota : principal.quota;
            double next = principalQuota(principal, target, rates, now, windowMs, ceilingInForce,
                    pausedPrincipals);
            principal.quota = next;
            if (Double.compare(next, previous) != 0) {
                changed++;
                if (!Double.isNaN(previous) && next < previous) {
                    down++;
                }
                LOG.debug("volume-quota engine #{}: PRODUCE quota of {} {} -> {} B/s ({} connection(s))", id,
                        principal.name, previous, next, principal.connections);
            }
            highest = Double.isNaN(highest) ? next : Math.max(highest, next);
        }

        double defaultGoal = target >= base ? base
                : Math.max(target, PrincipalQuota.floor(base, config.pauseBytesPerSecond(), 1,
                        config.assumedRequestBytes(), config.pauseThrottleMs()));
        double defaultWanted = defaultLimiter.apply(defaultGoal, now);
        double previousDefault = defaultQuota;
        double nextDefault = PrincipalQuota.settle(previousDefault, defaultWanted, target, base);
        if (ceilingInForce) {
            nextDefault = Math.min(nextDefault, PauseCeiling.cap(config.pausePrincipalCeiling(),
                    config.pauseBrokerCeiling(), pausedPrincipals + 1, 1, config.assumedRequestBytes(), windowMs, base));
        }
        defaultLimiter.force(nextDefault, now);
        if (Double.compare(nextDefault, previousDefault) != 0) {
            defaultQuota = nextDefault; // publish before raising the flags
            changed++;
            if (!Double.isNaN(previousDefault) && nextDefault < previousDefault) {
                down++;
            }
        }
        highestQuota = Double.isNaN(highest) ? nextDefault : Math.max(highest, nextDefault);

        logStatus(valid, problem, target);
        if (changed > 0) {
            quotaChanges.addAndGet(changed);
            stepDowns.addAndGet(down);
            raiseResetFlags();
            // A sensor created with the old quota just after the broker's reset scan would keep
            // it until the next change: ask for one more scan at the next tick.
            reRaise = true;
            LOG.info("volume-quota engine #{}: {} PRODUCE quota(s) changed, {} of them down (per-principal quotas and"
                            + " the default for new principals); target {} B/s, default {} B/s, highest in force {} B/s,"
                            + " {} principal(s) tracked", id,
                    changed, down, target, nextDefault, highestQuota, principals.size());
        } else if (reRaise) {
            reRaise = false;
            raiseResetFlags();
        }
    }

    /** One principal's quota at this tick. */
    /**
     * @param ceilingInForce the PAUSE ceiling caps the quota (false in OPEN and THROTTLE, and in the
     *                       first CEILING_AFTER_MS of a PAUSE, when it caps only the goal and the rise)
     * @param pausedPrincipals principals that share the broker's PAUSE ceiling (0 unless PAUSE)
     */
    private double principalQuota(Principal principal, double target, Map<String, Double> rates, long now,
                                  long windowMs, boolean ceilingInForce, int pausedPrincipals) {
        double base = config.baseBytesPerSecond();
        long count = principal.requests.sum();
        principal.clients.values().removeIf(seen -> now - seen > CONNECTION_LOOKBACK_MS);
        principal.connections = Math.max(1, principal.clients.size());

        Double rate = rates == null ? null : rates.get(principal.name);
        double bytesInWindow = rate == null ? Double.NaN : rate * windowMs / 1000.0;
        double requestBytes = config.assumedRequestBytes();
        if (principal.lastTickMs != Long.MIN_VALUE && now > principal.lastTickMs) {
            if (rate != null) {
                // Average request size = bytes / requests, both summed with exponentially fading
                // weights (time constant REQUEST_SIZE_AVERAGE_MS) over the polls.
                double fade = Math.exp(-(now - principal.lastTickMs) / (double) REQUEST_SIZE_AVERAGE_MS);
                principal.bytesSum = principal.bytesSum * fade + rate * (now - principal.lastTickMs) / 1000.0;
                principal.requestsSum = principal.requestsSum * fade + (count - principal.lastCount);
            }
        }
        principal.lastTickMs = now;
        principal.lastCount = count;
        if (targetFellAtMs == now) {
            principal.demandAtFall = rate == null ? 0.0 : rate;
        }
        if (rates != null && principal.requestsSum >= 1 && principal.bytesSum > 0) {
            requestBytes = principal.bytesSum / principal.requestsSum;
            if (now - targetFellAtMs < REQUEST_SIZE_AVERAGE_MS) {
                // Until the average has seen the requests that grew during the first mute.
                requestBytes = PrincipalQuota.plannedRequestBytes(requestBytes, principal.demandAtFall,
                        principal.connections, config.assumedRequestBytes(), config.stepDownThrottleMs());
            }
        }
        double floor = PrincipalQuota.floor(base, config.pauseBytesPerSecond(), principal.connections, requestBytes,
                config.pauseThrottleMs());
        double goal = target >= base ? base : Math.max(target, floor);
        double cap = pausedPrincipals == 0 ? base : PauseCeiling.cap(config.pausePrincipalCeiling(),
                config.pauseBrokerCeiling(), pausedPrincipals, principal.connections, requestBytes, windowMs, base);
        goal = Math.min(goal, cap);
        if (principal.limiter == null) {
            // Its sensor was created with the default quota: start from the default's history.
            principal.limiter = defaultLimiter.copy();
        }
        double wanted = Double.isNaN(bytesInWindow)
                ? principal.limiter.apply(goal, now)
                : PrincipalQuota.shaped(goal, base, bytesInWindow, windowMs, config.stepDownThrottleMs());
        double current = Double.isNaN(principal.quota) ? defaultQuota : principal.quota;
        if (!Double.isNaN(bytesInWindow)) {
            // Fall with the window, do not rise with bursts, but rise when the bytes in the window
            // would otherwise earn a throttle over T_max (more connections than client ids seen).
            wanted = Math.max(PrincipalQuota.noRise(current, wanted, goal),
                    Math.min(cap, PrincipalQuota.shaped(goal, base, bytesInWindow, windowMs, config.maxThrottleMs())));
        }
        double next = PrincipalQuota.settle(current, wanted, target, base);
        if (ceilingInForce) {
            // The disk wins over the throttle bounds, but the quota halves at most once per window
            // on its way to the ceiling: a jump would earn one throttle of bytesInWindow / cap - W.
            next = Math.min(next, principal.limiter.peek(cap, now));
        }
        principal.limiter.force(next, now);
        return next;
    }

    private void raiseResetFlags() {
        for (AtomicBoolean flag : resetFlags) {
            flag.set(true);
        }
    }

    private void logStatus(Decision valid, String problem, double target) {
        String status = valid != null
                ? "decision " + valid.state() + " factor " + valid.throttleFactor()
                        + (valid.causedByMissingData() ? " (caused by missing data)" : "")
                : "no valid decision (" + problem + "), applying on-missing " + config.onMissing();
        if (status.equals(lastStatus)) {
            return;
        }
        lastStatus = status;
        if (valid != null) {
            LOG.info("volume-quota engine #{}: {} decided at {}, target {} B/s", id, status, valid.decidedAt(), target);
        } else {
            LOG.warn("volume-quota engine #{}: {}, target {} B/s", id, status, target);
        }
    }

    // ---------------------------------------------------------------- metrics

    StateCode state() {
        return state;
    }

    double factorInForce() {
        return factorInForce;
    }

    double targetQuota() {
        return targetQuota;
    }

    double highestQuota() {
        return highestQuota;
    }

    boolean ratesAvailable() {
        return ratesAvailable;
    }

    int trackedPrincipals() {
        return principals.size();
    }

    /** Seconds since the last decision that was valid when checked was read; -1 if none yet. */
    double lastValidDecisionAgeSeconds() {
        long readAt = lastValidReadMonoMs;
        return readAt == Long.MIN_VALUE ? -1.0 : (monoMs.getAsLong() - readAt) / 1000.0;
    }
}
