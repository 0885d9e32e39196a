package io.volumequota.broker;

import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;

import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;

/**
 * Kafka broker quota callback that applies the volume-quota cluster decision, with its own
 * metrics (Kafka 4.1+).
 *
 * <p>What it does is in {@link QuotaCallbackCore}. This class adds Kafka's {@code Monitorable}
 * (KIP-877, Kafka 4.1+): the broker hands it a {@link PluginMetrics} because the configured
 * class itself implements the interface. Kafka 4.0 has no {@code Monitorable}, so this class
 * does not load there: use {@link VolumeQuotaCallbackWithoutMetrics} on 4.0.
 *
 * <p>Install (Kafka 4.1+): {@code client.quota.callback.class=io.volumequota.broker.VolumeQuotaCallback}.
 */
public final class VolumeQuotaCallback extends QuotaCallbackCore implements Monitorable {

    /** Prefix of every metric this callback registers (group "plugins", see docs/broker-plugin.md). */
    static final String METRIC_PREFIX = "volume-quota-";

    public VolumeQuotaCallback() {
    }

    /** For tests: a private engine whose wall and monotonic clock are {@code clock}, without byte rates. */
    VolumeQuotaCallback(Clock clock) {
        this(clock, clock::millis, ObservedRates.NONE);
    }

    /** For tests: a private engine on these clocks with this byte-rate source. */
    VolumeQuotaCallback(Clock wall, LongSupplier monoMs, ObservedRates rates) {
        this(wall, monoMs, rates, KafkaDecisionLog.FACTORY);
    }

    /** For tests: a private engine on these clocks, reading the decisions topic through {@code decisionLogs}. */
    VolumeQuotaCallback(Clock wall, LongSupplier monoMs, ObservedRates rates, DecisionLog.Factory decisionLogs) {
        super(wall, monoMs, rates, decisionLogs);
    }

    /**
     * Kafka 4.1+ (KIP-877) hands the plugin its metrics registry; the broker publishes them in
     * group {@code plugins} with tags {@code config=client.quota.callback.class} and
     * {@code class=VolumeQuotaCallback}. Names: see docs/broker-plugin.md, "Metrics".
     */
    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        gauge(metrics, "state", "decision in force: 0 OPEN, 1 THROTTLE, 2 PAUSE, -1 none valid (on-missing applies)",
                e -> e.state().code);
        gauge(metrics, "throttle-factor", "factor in force after quantization (1 OPEN, 0 PAUSE, NaN none valid)",
                QuotaEngine::factorInForce);
        gauge(metrics, "produce-quota-bytes-per-second",
                "PRODUCE quota of a principal with one connection and no step-down in progress",
                QuotaEngine::defaultQuota);
        gauge(metrics, "produce-quota-target-bytes-per-second",
                "PRODUCE quota the decision maps to, before per-principal floors and the step-down",
                QuotaEngine::targetQuota);
        gauge(metrics, "produce-quota-max-bytes-per-second", "highest PRODUCE quota in force for any principal",
                QuotaEngine::highestQuota);
        gauge(metrics, "decision-age-seconds",
                "seconds since the last decision that was valid was read (-1: none yet)",
                QuotaEngine::lastValidDecisionAgeSeconds);
        gauge(metrics, "reload-errors-total",
                "decisions (file or topic) that could not be read or parsed, and decisions-topic consumer problems",
                e -> e.reloadErrors.get());
        gauge(metrics, "expiries-total", "decisions that expired (validUntil, maximum validity or future date)",
                e -> e.expiries.get());
        gauge(metrics, "step-downs-total", "quota decreases applied (per principal and the default)",
                e -> e.stepDowns.get());
        gauge(metrics, "quota-changes-total", "quota changes applied (per principal and the default)",
                e -> e.quotaChanges.get());
        gauge(metrics, "quota-resets-total", "quota resets handed to the broker (re-read of every quota)",
                e -> e.quotaResets.get());
        gauge(metrics, "poller-errors-total", "unexpected errors caught on the poller threads",
                e -> e.pollerErrors.get());
        gauge(metrics, "decision-reader-rebuilds-total",
                "decisions-topic consumers closed and rebuilt from another broker after receiving no record for the"
                        + " silence threshold (topic source)",
                QuotaEngine::decisionReaderRebuilds);
        gauge(metrics, "tracked-principals", "producing principals with their own quota state",
                e -> e.trackedPrincipals());
        gauge(metrics, "quota-limit-errors-total",
                "unexpected errors while computing a PRODUCE quota, each answered with the PAUSE floor",
                e -> quotaLimitErrors());
        gauge(metrics, "observed-rate-available", "1 if the broker's byte rates could be read at the last poll",
                e -> e.ratesAvailable() ? 1 : 0);
    }

    private void gauge(PluginMetrics metrics, String name, String description, ToDoubleFunction<QuotaEngine> value) {
        metrics.addMetric(metrics.metricName(METRIC_PREFIX + name, description, new LinkedHashMap<>()),
                (Gauge<Double>) (metricConfig, now) -> {
                    QuotaEngine current = engine();
                    return current == null ? Double.NaN : value.applyAsDouble(current);
                });
    }
}
