package io.volumequota.broker;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What the engine publishes for the callback's metrics ({@link VolumeQuotaCallback}): gauges the
 * ticker sets at every tick and counters that only grow. Written by the engine's threads (and
 * {@code quotaResets} by request threads), read by the metrics reporter.
 */
final class EngineMetrics {

    volatile QuotaEngine.StateCode state = QuotaEngine.StateCode.NONE;
    volatile double factorInForce = Double.NaN;
    volatile double targetQuota = Double.NaN;
    volatile double highestQuota = Double.NaN;
    volatile boolean ratesAvailable;
    final AtomicLong reloadErrors = new AtomicLong();
    final AtomicLong expiries = new AtomicLong();
    final AtomicLong stepDowns = new AtomicLong();
    final AtomicLong quotaResets = new AtomicLong();
    final AtomicLong quotaChanges = new AtomicLong();
    final AtomicLong pollerErrors = new AtomicLong();

    /** Publishes the decision applied at this tick (null: none valid, on-missing applies) and its target. */
    void publishDecision(Decision applied, double target) {
        state = applied == null ? QuotaEngine.StateCode.NONE : QuotaEngine.StateCode.valueOf(applied.state().name());
        factorInForce = applied == null ? Double.NaN
                : switch (applied.state()) {
                    case OPEN -> 1.0;
                    case PAUSE -> 0.0;
                    case THROTTLE -> applied.throttleFactor();
                };
        targetQuota = target;
    }

    /** Counts the quota changes of one tick, {@code down} of them decreases. */
    void countChanges(int changed, int down) {
        quotaChanges.addAndGet(changed);
        stepDowns.addAndGet(down);
    }
}
