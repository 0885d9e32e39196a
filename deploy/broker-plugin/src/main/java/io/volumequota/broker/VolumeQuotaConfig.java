package io.volumequota.broker;

import java.nio.file.Path;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The callback's settings, read from the broker properties handed to {@code configure()}.
 * Every problem is a {@link ConfigException} that names the offending key, so a broker with a
 * bad setting refuses to start instead of running without the guard.
 */
record VolumeQuotaConfig(
        DecisionSource decisionSource,
        Path decisionPath,
        String decisionTopic,
        Map<String, String> consumerProperties,
        long decisionRebuildAfterMs,
        double baseBytesPerSecond,
        double pauseBytesPerSecond,
        double maxStepDownRatio,
        long stepDownIntervalMs,
        Set<String> excludedUserNames,
        OnMissing onMissing,
        long reloadIntervalMs,
        long maxValidityMs,
        long stepDownThrottleMs,
        long pauseThrottleMs,
        long maxThrottleMs,
        double assumedRequestBytes,
        double throttleFactorStep,
        double pausePrincipalCeiling,
        double pauseBrokerCeiling,
        java.util.List<String> warnings) {

    /** Kafka's node roles: a controller-only node gets no engine. */
    static final String PROCESS_ROLES = "process.roles";
    static final String PREFIX = "volume.quota.";
    static final String DECISION_SOURCE = PREFIX + "decision.source";
    static final String DECISION_PATH = PREFIX + "decision.path";
    static final String DECISION_TOPIC = PREFIX + "decision.topic";
    /** Every key under this prefix, without it, is a property of the topic source's KafkaConsumer. */
    static final String CONSUMER_PREFIX = PREFIX + "decision.consumer.";
    static final String DEFAULT_DECISION_TOPIC = "__volume_quota_decisions";
    /**
     * With the topic source: rebuild the decisions consumer, bootstrapped from another broker,
     * after this long without a record. Not set (0): half the lifetime of the newest decision
     * received, see {@link BootstrapRotation#silenceThresholdMs}.
     */
    static final String DECISION_REBUILD_AFTER_MS = PREFIX + "decision.rebuild.after.ms";
    static final String BASE_BYTES_PER_SECOND = PREFIX + "produce.base.bytes.per.second";
    static final String PAUSE_BYTES_PER_SECOND = PREFIX + "pause.bytes.per.second";
    static final String MAX_STEP_DOWN_RATIO = PREFIX + "max.step.down.ratio";
    static final String EXCLUDED_PRINCIPALS = PREFIX + "excluded.principals";
    static final String ON_MISSING = PREFIX + "on.missing";
    static final String RELOAD_INTERVAL_MS = PREFIX + "reload.interval.ms";
    static final String MAX_VALIDITY_MS = PREFIX + "max.validity.ms";
    static final String STEP_DOWN_THROTTLE_MS = PREFIX + "step.down.throttle.ms";
    static final String PAUSE_THROTTLE_MS = PREFIX + "pause.throttle.ms";
    static final String MAX_THROTTLE_MS = PREFIX + "max.throttle.ms";
    static final String ASSUMED_REQUEST_BYTES = PREFIX + "assumed.request.bytes";
    static final String THROTTLE_FACTOR_STEP = PREFIX + "throttle.factor.step";
    static final String PAUSE_PRINCIPAL_CEILING = PREFIX + "pause.principal.max.bytes.per.second";
    static final String PAUSE_BROKER_CEILING = PREFIX + "pause.broker.max.bytes.per.second";

    /** Kafka's own settings for the quota rate window; read so the step-down follows the broker's window. */
    static final String KAFKA_QUOTA_WINDOW_NUM = "quota.window.num";
    static final String KAFKA_QUOTA_WINDOW_SIZE_SECONDS = "quota.window.size.seconds";
    static final int KAFKA_DEFAULT_QUOTA_WINDOW_NUM = 11;
    static final int KAFKA_DEFAULT_QUOTA_WINDOW_SIZE_SECONDS = 1;

    /**
     * Default PAUSE floor: 256 KiB/s per principal and broker (2.5 % of a 10 MiB/s base).
     *
     * <p>A Kafka quota is a byte rate, not a delay, and it cannot be 0 (the broker computes an
     * infinite throttle, casts it to int and gets -1: no throttle at all). The broker answers a
     * request that breaks the quota with a throttle of {@code (observedRate - quota) / quota x
     * window} (QuotaUtils.throttleTime), about {@code bytesInWindow / quota - window}, uncapped
     * for produce. Near the floor the rate window can hold what the previous quota (at most
     * {@code maxStepDownRatio} times larger) let in plus a few requests, so the longest throttle
     * is roughly {@code (maxStepDownRatio - 1) x window + k x requestBytes / quota}, k about 2..3.
     * Run through the broker's own ClientQuotaManager (QuotaManagerSimulationTest, base 10 MiB/s,
     * requests 16 KiB .. 1 MiB, the default max.request.size), ratio 2 gives a longest throttle of
     * 28.4 s at 128 KiB/s, 21.6 s at 256 KiB/s and 16.3 s at 384 KiB/s; at 256 KiB/s the slowest
     * recovery to 90 % after OPEN, over every OPEN time tried, is 25.7 s: inside the 30 s target.
     * A paused producer still gets about this rate (2.5 % of a 10 MiB/s base).
     * See docs/broker-plugin.md.
     */
    static final double DEFAULT_PAUSE_BYTES_PER_SECOND = 256 * 1024;
    /**
     * Default maximum step down: the quota is never below half the highest quota in force during
     * the last quota window ({@code quota.window.num x quota.window.size.seconds}). A producer
     * that used quota Q and now faces Q/2 gets a first throttle of about one window (about 11 s
     * with Kafka's defaults) instead of {@code (Q/newQuota - 1) x window}, which is many minutes
     * for a jump from base to the floor. A larger ratio lets fewer bytes through while the quota
     * comes down but makes that first throttle longer ((ratio - 1) x window).
     */
    static final double DEFAULT_MAX_STEP_DOWN_RATIO = 2.0;
    static final long DEFAULT_RELOAD_INTERVAL_MS = 250;
    /**
     * A decision is never trusted for longer than this after the callback first read it, and one
     * dated (decidedAt) further than this ahead of the broker's clock is refused: validUntil
     * alone has no upper bound. The decider writes 30 s decisions and renews them every 10 s.
     */
    static final long DEFAULT_MAX_VALIDITY_MS = 300_000;
    /**
     * T_step: while the quota comes down, it is kept at or above (bytes in the broker's rate
     * window) / (window + T_step), so the throttle the broker computes for the bytes already in
     * the window is at most about T_step. See docs/broker-plugin.md, "The PAUSE bound".
     */
    static final long DEFAULT_STEP_DOWN_THROTTLE_MS = 8_000;
    /**
     * T_floor: a principal's floor is at least connections x request size / T_floor, so that the
     * one request each of its connections may add costs at most about T_floor in total.
     */
    static final long DEFAULT_PAUSE_THROTTLE_MS = 12_000;
    /**
     * T_max: the quota rises again whenever the bytes in the broker's window would earn a throttle
     * above this, e.g. because several producers share one client id and are counted as one
     * connection. At least T_step.
     */
    static final long DEFAULT_MAX_THROTTLE_MS = 16_000;
    /** Request size assumed when the broker's byte rate cannot be read: Kafka's default max.request.size. */
    static final double DEFAULT_ASSUMED_REQUEST_BYTES = 1024 * 1024;
    /** THROTTLE factors are rounded down to multiples of this, with half a step of hysteresis. */
    static final double DEFAULT_THROTTLE_FACTOR_STEP = 0.05;
    static final OnMissing DEFAULT_ON_MISSING = OnMissing.PAUSE;
    /**
     * The most one paused principal writes to a broker, whatever its number of client ids: 2 MiB/s
     * keeps 32 connections of 1 MiB requests at a 16 s throttle (N r / ceiling).
     */
    static final double DEFAULT_PAUSE_PRINCIPAL_CEILING = 2 * 1024 * 1024;
    /** The most all paused principals together write to a broker, shared equally among them. */
    static final double DEFAULT_PAUSE_BROKER_CEILING = 8 * 1024 * 1024;

    /** What to apply when there is no valid decision (missing, garbled, unknown schema, expired). */
    enum OnMissing { PAUSE, OPEN }

    /**
     * Where the decision comes from: a file written next to the broker (the sidecar mode), or
     * the compacted decisions topic written by {@code volume-quota cluster-agent} (no sidecar).
     */
    enum DecisionSource { FILE, TOPIC }

    /** Every {@code volume.quota.*} key (and Kafka's two quota window keys) with type, default, check and doc. */
    static final ConfigDef CONFIG = VolumeQuotaSettings.definition();

    static VolumeQuotaConfig parse(Map<String, ?> configs) {
        Map<String, Object> defined = defined(configs);
        // The decision's source comes first: without it nothing else matters.
        boolean file = "file".equalsIgnoreCase(String.valueOf(defined.getOrDefault(DECISION_SOURCE, "file")).trim());
        refuseIf(file && !defined.containsKey(DECISION_PATH), DECISION_PATH, configs.get(DECISION_PATH),
                "is required when " + DECISION_SOURCE + "=file");
        AbstractConfig values = new AbstractConfig(CONFIG, defined, false);
        DecisionSource source = DecisionSource.valueOf(values.getString(DECISION_SOURCE).toUpperCase(Locale.ROOT));
        Path path = source == DecisionSource.FILE ? Path.of(values.getString(DECISION_PATH)) : null;
        String topic = source == DecisionSource.TOPIC ? values.getString(DECISION_TOPIC) : null;
        Map<String, String> consumer = source == DecisionSource.TOPIC ? consumerProperties(configs) : Map.of();
        Long rebuildAfter = values.getLong(DECISION_REBUILD_AFTER_MS);
        double pause = values.getDouble(PAUSE_BYTES_PER_SECOND);
        double base = values.getDouble(BASE_BYTES_PER_SECOND);
        refuseIf(pause > base, PAUSE_BYTES_PER_SECOND, pause,
                "must not be larger than " + BASE_BYTES_PER_SECOND + " (" + base + ")");
        long stepDownThrottle = values.getLong(STEP_DOWN_THROTTLE_MS);
        long maxThrottle = values.getLong(MAX_THROTTLE_MS);
        refuseIf(maxThrottle < stepDownThrottle, MAX_THROTTLE_MS, maxThrottle,
                "must be at least " + STEP_DOWN_THROTTLE_MS + " (" + stepDownThrottle + ")");
        for (String ceiling : new String[] {PAUSE_PRINCIPAL_CEILING, PAUSE_BROKER_CEILING}) {
            double value = values.getDouble(ceiling);
            refuseIf(value < pause, ceiling, value,
                    "must not be smaller than " + PAUSE_BYTES_PER_SECOND + " (" + pause + ")");
        }
        java.util.List<String> warnings = new java.util.ArrayList<>();
        Object excludedSetting = configs.get(EXCLUDED_PRINCIPALS);
        Set<String> excluded = excludedUserNames(excludedSetting == null ? "" : excludedSetting.toString(), warnings);
        long windowMs = 1000L * values.getInt(KAFKA_QUOTA_WINDOW_NUM) * values.getInt(KAFKA_QUOTA_WINDOW_SIZE_SECONDS);
        return new VolumeQuotaConfig(source, path, topic, consumer, rebuildAfter == null ? 0 : rebuildAfter,
                base, pause, values.getDouble(MAX_STEP_DOWN_RATIO), windowMs,
                excluded, OnMissing.valueOf(values.getString(ON_MISSING).toUpperCase(Locale.ROOT)),
                values.getLong(RELOAD_INTERVAL_MS), values.getLong(MAX_VALIDITY_MS),
                stepDownThrottle, values.getLong(PAUSE_THROTTLE_MS), maxThrottle,
                values.getDouble(ASSUMED_REQUEST_BYTES),
                values.getDouble(THROTTLE_FACTOR_STEP), values.getDouble(PAUSE_PRINCIPAL_CEILING),
                values.getDouble(PAUSE_BROKER_CEILING), java.util.List.copyOf(warnings));
    }

    /**
     * The settings {@link #CONFIG} defines, without blank values: a key written with no value
     * (an empty Helm value, {@code key=} in a properties file) takes its default, as if absent.
     * Only these keys reach {@link AbstractConfig}: the broker's own settings stay the broker's.
     */
    private static Map<String, Object> defined(Map<String, ?> configs) {
        Map<String, Object> defined = new java.util.HashMap<>();
        for (String key : CONFIG.names()) {
            Object value = configs.get(key);
            if (value != null && !value.toString().isBlank()) {
                defined.put(key, value);
            }
        }
        return defined;
    }

    /** A setting that passed its own check but contradicts another one. */
    private static void refuseIf(boolean contradiction, String key, Object value, String message) {
        if (contradiction) {
            throw new ConfigException(key, value, message);
        }
    }

    /**
     * The {@code volume.quota.decision.consumer.*} keys without the prefix. {@code bootstrap.servers}
     * is required; the source sets its own deserializers and never commits, so those keys are
     * refused. {@code group.id} is not needed (partition 0 is assigned, no group is joined).
     */
    private static Map<String, String> consumerProperties(Map<String, ?> configs) {
        java.util.TreeMap<String, String> properties = new java.util.TreeMap<>();
        for (Map.Entry<String, ?> entry : configs.entrySet()) {
            if (entry.getKey().startsWith(CONSUMER_PREFIX) && entry.getValue() != null) {
                Object value = entry.getValue();
                // A Password (e.g. ssl.key.password) prints as [hidden]; take its value.
                String text = value instanceof org.apache.kafka.common.config.types.Password password
                        ? password.value() : value.toString();
                properties.put(entry.getKey().substring(CONSUMER_PREFIX.length()), text);
            }
        }
        String bootstrap = properties.get("bootstrap.servers");
        if (bootstrap == null || bootstrap.isBlank()) {
            throw new ConfigException(CONSUMER_PREFIX + "bootstrap.servers", bootstrap,
                    "is required when " + DECISION_SOURCE + "=topic");
        }
        for (String refused : new String[] {"key.deserializer", "value.deserializer", "enable.auto.commit"}) {
            if (properties.containsKey(refused)) {
                throw new ConfigException(CONSUMER_PREFIX + refused, properties.get(refused),
                        "is set by the callback (byte arrays, partition 0 assigned, no commits)");
            }
        }
        return java.util.Collections.unmodifiableMap(properties);
    }

    /**
     * The same settings with the consumer's {@code bootstrap.servers} replaced: for a decisions
     * consumer rebuilt from one broker ({@link BootstrapRotation}).
     */
    VolumeQuotaConfig withBootstrapServers(String bootstrapServers) {
        java.util.TreeMap<String, String> consumer = new java.util.TreeMap<>(consumerProperties);
        consumer.put("bootstrap.servers", bootstrapServers);
        return new VolumeQuotaConfig(decisionSource, decisionPath, decisionTopic,
                java.util.Collections.unmodifiableMap(consumer), decisionRebuildAfterMs, baseBytesPerSecond,
                pauseBytesPerSecond, maxStepDownRatio, stepDownIntervalMs, excludedUserNames, onMissing,
                reloadIntervalMs, maxValidityMs, stepDownThrottleMs, pauseThrottleMs, maxThrottleMs,
                assumedRequestBytes, throttleFactorStep, pausePrincipalCeiling, pauseBrokerCeiling, warnings);
    }

    /** The consumer properties for log lines: values of password-like keys hidden. */
    Map<String, String> consumerPropertiesForLog() {
        java.util.TreeMap<String, String> shown = new java.util.TreeMap<>();
        consumerProperties.forEach((key, value) -> shown.put(key,
                key.contains("password") || key.contains("jaas") || key.endsWith(".key") ? "[hidden]" : value));
        return shown;
    }

    /** Whether the node is a KRaft controller and no broker ({@code process.roles}). */
    static boolean controllerOnly(Map<String, ?> configs) {
        Object value = configs.get(PROCESS_ROLES);
        if (value == null) {
            return false;
        }
        Collection<?> roles = value instanceof Collection<?> list ? list : List.of(value.toString().split(","));
        Set<String> names = new HashSet<>();
        roles.forEach(role -> names.add(String.valueOf(role).trim()));
        return names.contains("controller") && !names.contains("broker");
    }

    /** The settings in force, for the log line at start. */
    String summary() {
        return "decision source " + describeSource() + ", base " + baseBytesPerSecond + " B/s, pause floor "
                + pauseBytesPerSecond + " B/s, step-down throttle " + stepDownThrottleMs + " ms, pause throttle "
                + pauseThrottleMs + " ms, fallback step down at most x1/" + maxStepDownRatio + " per "
                + stepDownIntervalMs + " ms, on-missing " + onMissing + ", reload every " + reloadIntervalMs
                + " ms, max validity " + maxValidityMs + " ms, factor step " + throttleFactorStep + ", excluded users "
                + excludedUserNames + ", PAUSE ceilings " + pausePrincipalCeiling + " B/s per principal and "
                + pauseBrokerCeiling + " B/s per broker";
    }

    /** Where decisions come from, for log lines. */
    String describeSource() {
        return decisionSource == DecisionSource.FILE ? "decision file " + decisionPath
                : "decisions topic " + decisionTopic + " (partition 0, newest record, key " + TopicDecisionSource.KEY
                        + ") through " + consumerProperties.get("bootstrap.servers");
    }

    /**
     * {@code ;}-separated principals written {@code User:<name>} (like super.users; {@code ;}
     * because TLS distinguished names contain commas). Quotas are keyed by principal name,
     * so only names of principal type {@code User} can be listed. Whitespace around an entry is
     * dropped; the name is everything after {@code User:} up to the next {@code ;}, taken
     * verbatim. A name that starts or ends with whitespace ({@code User: alice}) is kept as
     * written but almost certainly a typo, so it is reported in {@code warnings}.
     */
    static Set<String> excludedUserNames(String value, java.util.List<String> warnings) {
        Set<String> names = new LinkedHashSet<>();
        for (String entry : value.split(";")) {
            String trimmed = entry.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            if (!trimmed.startsWith("User:") || trimmed.length() == "User:".length()) {
                throw new ConfigException(EXCLUDED_PRINCIPALS, value,
                        "entries must look like User:<name>, separated by ';' (bad entry: '" + trimmed + "')");
            }
            String name = trimmed.substring("User:".length());
            if (!name.equals(name.strip())) {
                warnings.add(EXCLUDED_PRINCIPALS + ": the name in '" + trimmed + "' starts or ends with whitespace;"
                        + " it only matches a principal whose name has that whitespace. Write User:<name> with"
                        + " nothing between ':' and the name");
            } else if (!entry.equals(trimmed) && !entry.isBlank()) {
                warnings.add(EXCLUDED_PRINCIPALS + ": whitespace around '" + trimmed + "' was ignored");
            }
            names.add(name);
        }
        return Set.copyOf(names);
    }
}
