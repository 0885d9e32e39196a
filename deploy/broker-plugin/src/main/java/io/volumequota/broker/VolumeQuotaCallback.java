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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaEntity;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka broker quota callback that applies the volume-quota sidecar's cluster decision.
 *
 * <p>The sidecar writes a decision file (OPEN / THROTTLE factor / PAUSE); a daemon thread
 * re-reads it every {@code volume.quota.reload.interval.ms} and turns it into one PRODUCE quota
 * (bytes per second) that applies to every principal except the excluded ones, each principal
 * with its own quota on each broker, like Kafka's per-user quotas. FETCH, REQUEST and
 * CONTROLLER_MUTATION are never limited. See docs/broker-plugin.md.
 *
 * <p>Install: {@code client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallback}.
 */
public final class VolumeQuotaCallback implements ClientQuotaCallback {

    private static final Logger LOG = LoggerFactory.getLogger(VolumeQuotaCallback.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    /** Larger decision files are treated as garbled (the real one is a few KiB at most). */
    static final long MAX_DECISION_FILE_BYTES = 1024 * 1024;

    /** Same tag keys as Kafka's own user quotas, so the usual quota metrics and dashboards apply. */
    static final String USER_TAG = "user";
    static final String CLIENT_ID_TAG = "client-id";

    private final Clock clock;
    private final int instance = INSTANCES.incrementAndGet();
    /** Set by the poller after the effective PRODUCE quota changed; cleared by the one request that sees it. */
    private final AtomicBoolean produceResetPending = new AtomicBoolean();
    private volatile double produceQuota = Double.NaN;
    private volatile VolumeQuotaConfig config;
    private ScheduledExecutorService poller;
    private volatile Thread pollerThread;
    private volatile boolean closed;

    // Poller state, guarded by "this".
    private StepDownLimiter limiter;
    private FileStamp lastStamp;
    private byte[] lastContent;
    private Decision lastDecision;
    private String lastProblem = "not read yet";
    private String lastStatus;

    public VolumeQuotaCallback() {
        this(Clock.systemUTC());
    }

    /** For tests: a clock to move validUntil expiry and the step-down limit along. */
    VolumeQuotaCallback(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    @Override
    public void configure(Map<String, ?> configs) {
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(configs);
        synchronized (this) {
            if (config != null) {
                throw new IllegalStateException("VolumeQuotaCallback.configure() called twice");
            }
            config = parsed;
            limiter = new StepDownLimiter(parsed.maxStepDownRatio(), parsed.stepDownIntervalMs());
            reload(); // a quota exists before the first request arrives
            poller = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread thread = new Thread(runnable, "volume-quota-poller-" + instance);
                thread.setDaemon(true);
                pollerThread = thread;
                return thread;
            });
            poller.scheduleWithFixedDelay(this::reloadQuietly, parsed.reloadIntervalMs(),
                    parsed.reloadIntervalMs(), TimeUnit.MILLISECONDS);
        }
        LOG.info("volume-quota callback #{} configured: decision file {}, base {} B/s, pause floor {} B/s, "
                        + "step down at most x1/{} per {} ms, on-missing {}, reload every {} ms, excluded users {}",
                instance, parsed.decisionPath(), parsed.baseBytesPerSecond(), parsed.pauseBytesPerSecond(),
                parsed.maxStepDownRatio(), parsed.stepDownIntervalMs(), parsed.onMissing(),
                parsed.reloadIntervalMs(), parsed.excludedUserNames());
    }

    @Override
    public Map<String, String> quotaMetricTags(ClientQuotaType quotaType, KafkaPrincipal principal, String clientId) {
        // One quota per principal (name) and broker, shared by all its connections and client ids.
        Map<String, String> tags = new LinkedHashMap<>(4);
        tags.put(USER_TAG, principal.getName());
        tags.put(CLIENT_ID_TAG, "");
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
        VolumeQuotaConfig current = config;
        String user = metricTags.get(USER_TAG);
        if (current == null || user == null || current.excludedUserNames().contains(user)) {
            return null;
        }
        return produceQuota;
    }

    /** Called on every request: one volatile read, and a CAS only right after a change. */
    @Override
    public boolean quotaResetRequired(ClientQuotaType quotaType) {
        return quotaType == ClientQuotaType.PRODUCE
                && produceResetPending.get()
                && produceResetPending.compareAndSet(true, false);
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
     * stay implemented for the jar to load on 4.1 .. 4.3 brokers.
     */
    @Override
    public boolean updateClusterMetadata(Cluster cluster) {
        return false;
    }

    @Override
    public void close() {
        ScheduledExecutorService toStop;
        closed = true; // before the interrupt, so a poll cut short by it changes nothing
        synchronized (this) {
            toStop = poller;
        }
        if (toStop == null) {
            return;
        }
        toStop.shutdownNow();
        try {
            if (!toStop.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("volume-quota poller #{} did not stop within 5 s", instance);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The effective PRODUCE quota in bytes/s for non-excluded principals. */
    double produceQuotaBytesPerSecond() {
        return produceQuota;
    }

    /** The poller thread (null before configure), for tests. */
    Thread pollerThread() {
        return pollerThread;
    }

    private void reloadQuietly() {
        try {
            reload();
        } catch (RuntimeException e) {
            // Never let an exception cancel the scheduled task: the quota would freeze.
            LOG.error("volume-quota poller #{}: unexpected error, keeping quota {} B/s", instance, produceQuota, e);
        }
    }

    /** One poll: re-read the file if it changed, check expiry, move the quota. Package-private for tests. */
    synchronized void reload() {
        readFileIfChanged();
        if (closed) {
            return;
        }
        Instant now = clock.instant();
        Decision valid = lastDecision;
        String problem = lastProblem;
        if (valid != null && now.isAfter(valid.validUntil())) {
            problem = "decision expired at " + valid.validUntil();
            valid = null;
        }
        double target = QuotaMapping.targetBytesPerSecond(valid, config);
        double effective = limiter.apply(target, now.toEpochMilli());

        String status = valid != null
                ? "decision " + valid.state() + " factor " + valid.throttleFactor()
                        + (valid.causedByMissingData() ? " (caused by missing data)" : "")
                : "no valid decision (" + problem + "), applying on-missing " + config.onMissing();
        if (!status.equals(lastStatus)) {
            lastStatus = status;
            if (valid != null) {
                LOG.info("volume-quota #{}: {} decided at {}, target {} B/s", instance, status, valid.decidedAt(),
                        target);
            } else {
                LOG.warn("volume-quota #{}: {}, target {} B/s", instance, status, target);
            }
        }
        if (Double.compare(effective, produceQuota) != 0) {
            double previous = produceQuota;
            produceQuota = effective; // publish the value before raising the flag
            produceResetPending.set(true);
            LOG.info("volume-quota #{}: PRODUCE quota {} -> {} B/s per principal (target {} B/s)", instance,
                    previous, effective, target);
        }
    }

    /** Brings lastDecision / lastProblem up to date with the file. */
    private void readFileIfChanged() {
        Path path = config.decisionPath();
        try {
            BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
            FileStamp stamp = new FileStamp(attributes.lastModifiedTime(), attributes.size(), attributes.fileKey());
            if (stamp.equals(lastStamp)) {
                return;
            }
            if (!attributes.isRegularFile() || attributes.size() > MAX_DECISION_FILE_BYTES) {
                forget("not a regular file of at most " + MAX_DECISION_FILE_BYTES + " bytes: " + path);
                return;
            }
            byte[] content = Files.readAllBytes(path);
            lastStamp = stamp;
            if (Arrays.equals(content, lastContent)) {
                return;
            }
            lastContent = content;
            try {
                lastDecision = Decision.parse(content);
                lastProblem = null;
            } catch (Decision.InvalidDecisionException e) {
                lastDecision = null;
                lastProblem = "garbled decision file " + path + ": " + e.getMessage();
            }
        } catch (NoSuchFileException e) {
            forget("decision file not found: " + path);
        } catch (IOException e) {
            forget("cannot read decision file " + path + ": " + e);
        }
    }

    private void forget(String problem) {
        lastStamp = null;
        lastContent = null;
        lastDecision = null;
        lastProblem = problem;
    }

    /** What changes when the sidecar replaces the file: a rename gives a new inode (fileKey). */
    private record FileStamp(FileTime modified, long size, Object fileKey) {
    }
}
