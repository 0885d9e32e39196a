package io.volumequota.broker;

import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything of the volume-quota broker callback except its metrics: the two classes the broker
 * is configured with, {@link VolumeQuotaCallback} (Kafka 4.1+, with metrics through
 * {@code Monitorable}) and {@link VolumeQuotaCallbackWithoutMetrics} (Kafka 4.0, which has no
 * {@code Monitorable}), extend it.
 *
 * <p>The decision (OPEN / THROTTLE factor / PAUSE) comes from a file written by the sidecar
 * ({@code volume.quota.decision.source=file}, the default) or from the compacted decisions topic
 * written by the cluster agent ({@code topic}, no sidecar); a {@link QuotaEngine}
 * (one per process, shared by the broker and controller callbacks of a combined node) re-reads
 * it and turns it into a PRODUCE quota (bytes per second) per principal, each principal with
 * its own quota on each broker, like Kafka's per-user quotas. Excluded principals and FETCH,
 * REQUEST and CONTROLLER_MUTATION are never limited. See docs/broker-plugin.md.
 *
 * <p>Everything called on request threads is a map lookup, a counter or a flag, and catches
 * everything: no exception from this class reaches a request thread.
 *
 * <p>Nothing here may name a class that Kafka 4.0 lacks ({@code org.apache.kafka.common.metrics
 * .Monitorable}, {@code PluginMetrics}), not even {@link VolumeQuotaCallback}: loading this class
 * on a 4.0 broker would fail (checked by {@code KafkaVersionCompatibilityTest}).
 */
abstract class QuotaCallbackCore implements ClientQuotaCallback {

    /** Every callback class logs as {@code io.volumequota.broker.VolumeQuotaCallback} (a name, not the class). */
    static final String LOGGER_NAME = "io.volumequota.broker.VolumeQuotaCallback";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER_NAME);
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    private static final long LOG_ERRORS_EVERY_NANOS = 60_000_000_000L;
    /** Unexpected errors in {@link #quotaLimit}, process-wide (the metric quota-limit-errors-total). */
    private static final AtomicLong QUOTA_LIMIT_ERRORS = new AtomicLong();
    /** When an error of quotaLimit was last logged (System.nanoTime), so that it logs once a minute at most. */
    private static final AtomicLong QUOTA_LIMIT_ERROR_LOGGED = new AtomicLong(System.nanoTime() - LOG_ERRORS_EVERY_NANOS);

    /** Same tag keys as Kafka's own user quotas, so the usual quota metrics and dashboards apply. */
    static final String USER_TAG = "user";
    static final String CLIENT_ID_TAG = "client-id";

    private final int instance = INSTANCES.incrementAndGet();
    /** For tests: a private engine on these clocks and this rate source; null = the shared engine. */
    private final Clock testWall;
    private final LongSupplier testMono;
    private final ObservedRates testRates;
    private final DecisionLog.Factory decisionLogs;
    /** Set by the engine after a quota changed; cleared by the one request that sees it. */
    private final AtomicBoolean produceResetPending = new AtomicBoolean();
    private volatile VolumeQuotaConfig config;
    private volatile QuotaEngine engine;
    private volatile boolean closed;

    QuotaCallbackCore() {
        this.testWall = null;
        this.testMono = null;
        this.testRates = null;
        this.decisionLogs = KafkaDecisionLog.FACTORY;
    }

    /** For tests: a private engine on these clocks, reading the decisions topic through {@code decisionLogs}. */
    QuotaCallbackCore(Clock wall, LongSupplier monoMs, ObservedRates rates, DecisionLog.Factory decisionLogs) {
        this.testWall = Objects.requireNonNull(wall, "wall");
        this.testMono = Objects.requireNonNull(monoMs, "monoMs");
        this.testRates = Objects.requireNonNull(rates, "rates");
        this.decisionLogs = Objects.requireNonNull(decisionLogs, "decisionLogs");
    }

    @Override
    public void configure(Map<String, ?> configs) {
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(configs);
        synchronized (this) {
            if (config != null) {
                throw new IllegalStateException(getClass().getSimpleName() + ".configure() called twice");
            }
            for (String warning : parsed.warnings()) {
                LOG.warn("volume-quota callback #{}: {}", instance, warning);
            }
            QuotaEngine chosen;
            if (testWall != null) {
                chosen = new QuotaEngine(parsed, testWall, testMono, testRates, decisionLogs);
                chosen.addResetFlag(produceResetPending);
                chosen.start();
            } else {
                chosen = QuotaEngine.acquire(parsed);
                chosen.addResetFlag(produceResetPending);
            }
            produceResetPending.set(true); // sensors may exist already (a second role's instance)
            config = parsed;
            engine = chosen;
            LOG.info("volume-quota callback #{} configured with engine #{}: decision source {}, base {} B/s, pause floor"
                            + " {} B/s, step-down throttle {} ms, pause throttle {} ms, fallback step down at most"
                            + " x1/{} per {} ms, on-missing {}, reload every {} ms, max validity {} ms, factor step {},"
                            + " excluded users {}",
                    instance, chosen.id, parsed.describeSource(), parsed.baseBytesPerSecond(),
                    parsed.pauseBytesPerSecond(), parsed.stepDownThrottleMs(), parsed.pauseThrottleMs(),
                    parsed.maxStepDownRatio(), parsed.stepDownIntervalMs(), parsed.onMissing(),
                    parsed.reloadIntervalMs(), parsed.maxValidityMs(), parsed.throttleFactorStep(),
                    parsed.excludedUserNames());
            if (parsed.decisionSource() == VolumeQuotaConfig.DecisionSource.TOPIC) {
                LOG.info("volume-quota callback #{}: decisions consumer properties {}", instance,
                        parsed.consumerPropertiesForLog());
            }
        }
    }

    @Override
    public Map<String, String> quotaMetricTags(ClientQuotaType quotaType, KafkaPrincipal principal, String clientId) {
        // One quota per principal (name) and broker, shared by all its connections and client ids.
        Map<String, String> tags = new LinkedHashMap<>(4);
        tags.put(USER_TAG, principal.getName());
        tags.put(CLIENT_ID_TAG, "");
        if (quotaType == ClientQuotaType.PRODUCE) {
            try {
                QuotaEngine current = engine;
                VolumeQuotaConfig settings = config;
                if (current != null && !settings.excludedUserNames().contains(principal.getName())) {
                    current.onProduceRequest(principal.getName(), clientId);
                }
            } catch (Throwable t) {
                // Counting is best effort; never fail a request over it.
            }
        }
        return tags;
    }

    /**
     * The PRODUCE quota in bytes/s, or null for "no quota" (excluded principals and all other
     * quota types): ClientQuotaManager then uses Long.MAX_VALUE as the bound, which never trips.
     */
    @Override
    public Double quotaLimit(ClientQuotaType quotaType, Map<String, String> metricTags) {
        if (quotaType != ClientQuotaType.PRODUCE) {
            return null;
        }
        try {
            VolumeQuotaConfig current = config;
            QuotaEngine currentEngine = engine;
            String user = metricTags.get(USER_TAG);
            if (current == null || currentEngine == null || user == null
                    || current.excludedUserNames().contains(user)) {
                return null;
            }
            double quota = currentEngine.quotaFor(user);
            return Double.isNaN(quota) ? null : quota;
        } catch (Throwable t) {
            return pauseFloorAfter(t);
        }
    }

    /**
     * A bug must not open the gate: null would mean "no quota" for this principal, so an
     * unexpected error answers the PAUSE floor instead, is counted, and is logged once a minute.
     */
    private Double pauseFloorAfter(Throwable t) {
        QUOTA_LIMIT_ERRORS.incrementAndGet();
        try {
            long now = System.nanoTime();
            long last = QUOTA_LIMIT_ERROR_LOGGED.get();
            if (now - last >= LOG_ERRORS_EVERY_NANOS && QUOTA_LIMIT_ERROR_LOGGED.compareAndSet(last, now)) {
                LOG.error("volume-quota callback #{}: unexpected error computing a PRODUCE quota; answering the"
                        + " PAUSE floor ({} such errors so far, logged once a minute)", instance,
                        QUOTA_LIMIT_ERRORS.get(), t);
            }
        } catch (Throwable ignored) {
            // logging must not turn the floor into an exception on a request thread
        }
        VolumeQuotaConfig current = config;
        return current != null ? current.pauseBytesPerSecond() : VolumeQuotaConfig.DEFAULT_PAUSE_BYTES_PER_SECOND;
    }

    /** Unexpected errors in {@link #quotaLimit} since the broker started, all callbacks of the process. */
    static long quotaLimitErrors() {
        return QUOTA_LIMIT_ERRORS.get();
    }

    /** Called on every request: one volatile read, and a CAS only right after a change. */
    @Override
    public boolean quotaResetRequired(ClientQuotaType quotaType) {
        if (quotaType == ClientQuotaType.PRODUCE
                && produceResetPending.get()
                && produceResetPending.compareAndSet(true, false)) {
            QuotaEngine current = engine;
            if (current != null) {
                current.quotaResets.incrementAndGet();
            }
            return true;
        }
        return false;
    }

    @Override
    public void updateQuota(ClientQuotaType quotaType, ClientQuotaEntity entity, double newValue) {
        LOG.info("Ignoring {} quota {} for {}: quotas are set by the volume-quota callback", quotaType, newValue,
                entity.configEntities());
    }

    @Override
    public void removeQuota(ClientQuotaType quotaType, ClientQuotaEntity entity) {
        LOG.debug("Ignoring removal of {} quota for {}", quotaType, entity.configEntities());
    }

    /**
     * Not used: quotas do not depend on partitions or brokers, and under KRaft the broker does
     * not call this reliably. Abstract up to Kafka 4.3 (a default method from 4.4), so it must
     * stay implemented for the jar to load on 4.0 .. 4.3 brokers.
     */
    @Override
    public boolean updateClusterMetadata(Cluster cluster) {
        return false;
    }

    @Override
    public void close() {
        QuotaEngine toRelease;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            toRelease = engine;
        }
        if (toRelease == null) {
            return;
        }
        toRelease.removeResetFlag(produceResetPending);
        if (testWall != null) {
            toRelease.close();
        } else {
            toRelease.release();
        }
    }

    /** The PRODUCE quota in bytes/s of a principal without state of its own (tests). */
    double produceQuotaBytesPerSecond() {
        QuotaEngine current = engine;
        return current == null ? Double.NaN : current.defaultQuota();
    }

    /** The engine's ticker thread (null before configure), for tests. */
    Thread pollerThread() {
        QuotaEngine current = engine;
        return current == null ? null : current.tickerThread();
    }

    QuotaEngine engine() {
        return engine;
    }

    /** One poll (read, then tick), for tests that drive time themselves. */
    void reload() {
        QuotaEngine current = engine;
        current.readOnce();
        current.tickOnce();
    }
}
