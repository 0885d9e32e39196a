package io.volumequota.broker;

import java.time.Clock;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Sanitizer;
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
 * its own quota on each broker, like Kafka's per-user quotas. The quotas an operator sets with
 * kafka-configs stay in force: Kafka's own default callback keeps them ({@link OperatorQuotas}),
 * all four quota types, and PRODUCE gets the smaller of the operator's quota and ours while the
 * decision restricts (THROTTLE, PAUSE). Excluded principals get the operator's quotas only.
 * See docs/broker-plugin.md, "Kafka's quotas and ours".
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
    /** A throttled request's second sensor look-up (ClientQuotaManager.throttle) is not a request. */
    private final SecondLookup secondLookup = new SecondLookup();
    /** Set by the engine after a quota changed; cleared by the one request that sees it. */
    private final AtomicBoolean produceResetPending = new AtomicBoolean();
    /** Set when the operator changed a quota of that type; cleared by the one request that sees it. */
    private final Map<ClientQuotaType, AtomicBoolean> operatorResetPending = new EnumMap<>(ClientQuotaType.class);
    /** Kafka's own quotas per type, as the operator set them (null before configure). */
    private volatile Map<ClientQuotaType, OperatorQuotas> operator;
    private volatile VolumeQuotaConfig config;
    private volatile QuotaEngine engine;
    private volatile boolean closed;

    QuotaCallbackCore() {
        this.testWall = null;
        this.testMono = null;
        this.testRates = null;
        this.decisionLogs = KafkaDecisionLog.FACTORY;
        addOperatorResetFlags();
    }

    /** For tests: a private engine on these clocks, reading the decisions topic through {@code decisionLogs}. */
    QuotaCallbackCore(Clock wall, LongSupplier monoMs, ObservedRates rates, DecisionLog.Factory decisionLogs) {
        this.testWall = Objects.requireNonNull(wall, "wall");
        this.testMono = Objects.requireNonNull(monoMs, "monoMs");
        this.testRates = Objects.requireNonNull(rates, "rates");
        this.decisionLogs = Objects.requireNonNull(decisionLogs, "decisionLogs");
        addOperatorResetFlags();
    }

    private void addOperatorResetFlags() {
        for (ClientQuotaType type : ClientQuotaType.values()) {
            operatorResetPending.put(type, new AtomicBoolean());
        }
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
            operator = kafkasOwnQuotas();
            if (VolumeQuotaConfig.controllerOnly(configs)) {
                config = parsed;
                LOG.info("volume-quota callback #{} configured on a controller-only node (process.roles={}): no"
                        + " engine and no decision reader, Kafka's own quotas only (controllers serve no PRODUCE)",
                        instance, configs.get(VolumeQuotaConfig.PROCESS_ROLES));
                return;
            }
            QuotaEngine chosen;
            if (testWall != null) {
                chosen = new QuotaEngine(parsed, testWall, testMono, testRates, decisionLogs);
                chosen.addResetFlag(produceResetPending);
                chosen.start();
            } else {
                if (!JmxObservedRates.jmxReporterListed(configs)) {
                    LOG.warn("volume-quota callback #{}: {} does not list {}: the broker's byte rates cannot be"
                            + " read, the fallback rule applies (observed-rate-available 0)", instance,
                            JmxObservedRates.METRIC_REPORTERS, JmxObservedRates.JMX_REPORTER);
                }
                chosen = QuotaEngine.acquire(parsed, JmxObservedRates.forBroker(configs));
                chosen.addResetFlag(produceResetPending);
            }
            produceResetPending.set(true); // sensors may exist already (a second role's instance)
            config = parsed;
            engine = chosen;
            LOG.info("volume-quota callback #{} configured with engine #{}: {}", instance, chosen.id, parsed.summary());
            if (parsed.decisionSource() == VolumeQuotaConfig.DecisionSource.TOPIC) {
                LOG.info("volume-quota callback #{}: decisions consumer properties {}", instance,
                        parsed.consumerPropertiesForLog());
            }
        }
    }

    /** One {@link OperatorQuotas} per quota type, as the broker's four quota managers have. */
    private Map<ClientQuotaType, OperatorQuotas> kafkasOwnQuotas() {
        Map<ClientQuotaType, OperatorQuotas> quotas = new EnumMap<>(ClientQuotaType.class);
        ClassLoader loader = ClientQuotaCallback.class.getClassLoader();
        try {
            for (ClientQuotaType type : ClientQuotaType.values()) {
                quotas.put(type, OperatorQuotas.create(type, loader, "volume-quota-" + instance + "-operator-"));
            }
        } catch (RuntimeException e) {
            quotas.values().forEach(OperatorQuotas::close);
            throw e;
        }
        return quotas;
    }

    /**
     * Kafka's tags for every type but PRODUCE and for excluded principals. PRODUCE: Kafka's tags
     * where an operator's quota applies, else the principal's own sensor {@code user=<principal>,
     * client-id=""} shared by all its client ids (our per-principal quota).
     */
    @Override
    public Map<String, String> quotaMetricTags(ClientQuotaType quotaType, KafkaPrincipal principal, String clientId) {
        try {
            Map<String, String> kafkaTags = operator.get(quotaType).metricTags(principal, clientId);
            if (quotaType != ClientQuotaType.PRODUCE || excluded(principal.getName())) {
                return kafkaTags;
            }
            try {
                String client = clientId == null ? "" : clientId;
                QuotaEngine current = engine; // none on a controller-only node
                if (current != null && secondLookup.isNewRequest(principal.getName(), client)) {
                    current.onProduceRequest(principal.getName(), client);
                }
            } catch (Throwable t) {
                // Counting is best effort; never fail a request over it.
            }
            String kafkaUser = kafkaTags.get(USER_TAG); // Kafka's sanitised name, or "" (client-id levels)
            String user = kafkaUser.isEmpty() ? Sanitizer.sanitize(principal.getName()) : kafkaUser;
            if (operator.get(quotaType).limit(kafkaTags) == null) {
                return tags(user, "");
            }
            if (!kafkaUser.isEmpty() || !decisionRestricts()) {
                return kafkaTags;
            }
            // A client-id quota's sensor is shared by every user of that client id: under THROTTLE
            // or PAUSE, one per principal and client id, so that each carries our quota as well.
            return tags(user, kafkaTags.get(CLIENT_ID_TAG));
        } catch (Throwable t) {
            return tags(Sanitizer.sanitize(principal.getName()), "");
        }
    }

    private static Map<String, String> tags(String sanitizedUser, String clientId) {
        Map<String, String> tags = new LinkedHashMap<>(4);
        tags.put(USER_TAG, sanitizedUser);
        tags.put(CLIENT_ID_TAG, clientId);
        return tags;
    }

    private boolean excluded(String principalName) {
        VolumeQuotaConfig settings = config;
        return settings == null || settings.excludedUserNames().contains(principalName);
    }

    /** Whether the decision holds producers below the base (THROTTLE, PAUSE, on-missing PAUSE). */
    private boolean decisionRestricts() {
        QuotaEngine current = engine;
        VolumeQuotaConfig settings = config;
        return current != null && settings != null && current.targetQuota() < settings.baseBytesPerSecond();
    }

    /**
     * Kafka's quota for every type but PRODUCE. PRODUCE, in bytes/s: the smaller of the operator's
     * quota and ours while the decision restricts, the operator's in OPEN, ours where the operator
     * set none; null (no quota: the broker bounds with Long.MAX_VALUE, which never trips) if neither.
     */
    @Override
    public Double quotaLimit(ClientQuotaType quotaType, Map<String, String> metricTags) {
        if (quotaType != ClientQuotaType.PRODUCE) {
            try {
                return operator.get(quotaType).limit(metricTags);
            } catch (Throwable t) {
                return null;
            }
        }
        try {
            String user = metricTags.get(USER_TAG);
            Double operatorLimit = operatorProduceLimit(user, metricTags);
            QuotaEngine currentEngine = engine;
            if (user == null || user.isEmpty() || currentEngine == null || excluded(Sanitizer.desanitize(user))) {
                return operatorLimit;
            }
            double quota = currentEngine.quotaFor(Sanitizer.desanitize(user));
            if (Double.isNaN(quota)) {
                return operatorLimit;
            }
            if (operatorLimit == null) {
                return quota;
            }
            return decisionRestricts() ? Math.min(operatorLimit, quota) : operatorLimit;
        } catch (Throwable t) {
            return pauseFloorAfter(t);
        }
    }

    /** The operator's PRODUCE quota for a sensor, including a client-id quota on a per-principal sensor. */
    private Double operatorProduceLimit(String user, Map<String, String> metricTags) {
        OperatorQuotas produce = operator.get(ClientQuotaType.PRODUCE);
        Double limit = produce.limit(metricTags);
        String clientId = metricTags.get(CLIENT_ID_TAG);
        if (limit == null && user != null && !user.isEmpty() && clientId != null && !clientId.isEmpty()) {
            limit = produce.limit(tags("", clientId)); // /config/clients/<client-id> or <default>
        }
        return limit;
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
        AtomicBoolean operatorChanged = operatorResetPending.get(quotaType);
        if (operatorChanged != null && operatorChanged.get() && operatorChanged.compareAndSet(true, false)) {
            return true;
        }
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

    /** An operator's quota (kafka-configs, alterClientQuotas), handed to Kafka's own callback. */
    @Override
    public void updateQuota(ClientQuotaType quotaType, ClientQuotaEntity entity, double newValue) {
        changeOperatorQuota(quotaType, entity, newValue);
    }

    @Override
    public void removeQuota(ClientQuotaType quotaType, ClientQuotaEntity entity) {
        changeOperatorQuota(quotaType, entity, null);
    }

    private void changeOperatorQuota(ClientQuotaType quotaType, ClientQuotaEntity entity, Double value) {
        try {
            operator.get(quotaType).set(entity, value);
            operatorResetPending.get(quotaType).set(true);
            LOG.info("volume-quota callback #{}: operator's {} quota for {} {}", instance, quotaType,
                    entity.configEntities(), value == null ? "removed" : "set to " + value);
        } catch (Throwable t) {
            LOG.error("volume-quota callback #{}: could not apply the operator's {} quota {} for {}", instance,
                    quotaType, value, entity.configEntities(), t);
        }
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
        Map<ClientQuotaType, OperatorQuotas> kafkaQuotas = operator;
        if (kafkaQuotas != null) {
            kafkaQuotas.values().forEach(OperatorQuotas::close);
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
