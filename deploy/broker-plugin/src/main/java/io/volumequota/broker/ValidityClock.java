package io.volumequota.broker;

import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The ticker's validity check: whether the decision the reader holds may still be applied, by
 * the rules of {@link DecisionValidity} for its source, counting each decision that stops being
 * valid once and remembering when the last valid one was read. No I/O: it runs on the ticker's
 * own timer, so a read that hangs cannot keep an expired decision in force.
 */
final class ValidityClock {

    /** The decision to apply (null: none valid) and, if none, why. */
    record Verdict(Decision valid, String problem) {
    }

    private final VolumeQuotaConfig config;
    private final AtomicLong expiries;
    /** The loaded decision whose expiry was counted. Ticker only. */
    private DecisionReader.Loaded expiryCounted;
    private volatile long lastValidReadMonoMs = Long.MIN_VALUE;

    ValidityClock(VolumeQuotaConfig config, AtomicLong expiries) {
        this.config = config;
        this.expiries = expiries;
    }

    Verdict check(DecisionReader.Loaded current, long nowMonoMs, Instant wallNow) {
        Decision valid = current.decision();
        if (valid == null) {
            return new Verdict(null, current.problem());
        }
        String invalid = config.decisionSource() == VolumeQuotaConfig.DecisionSource.TOPIC
                ? DecisionValidity.problemOfReceived(valid, nowMonoMs, current.readAtMonoMs(), config.maxValidityMs())
                : DecisionValidity.problem(valid, wallNow, nowMonoMs, current.readAtMonoMs(), config.maxValidityMs());
        if (invalid == null) {
            lastValidReadMonoMs = current.readAtMonoMs();
            return new Verdict(valid, null);
        }
        if (expiryCounted != current) {
            expiryCounted = current;
            expiries.incrementAndGet();
        }
        return new Verdict(null, invalid);
    }

    /** Seconds since the last decision that was valid when checked was read; -1 if none yet. */
    double lastValidDecisionAgeSeconds(long nowMonoMs) {
        long readAt = lastValidReadMonoMs;
        return readAt == Long.MIN_VALUE ? -1.0 : (nowMonoMs - readAt) / 1000.0;
    }
}
