package io.volumequota.broker;

import java.time.Duration;
import java.time.Instant;

/**
 * Whether a parsed decision may still be applied. Pure: the caller passes both clocks.
 *
 * <p>A decision file ({@link #problem}) is written next to the broker, on its host's clock:
 *
 * <ul>
 *   <li>{@code validUntil} is compared with the wall clock (it is an absolute instant written by
 *       the decider on another host).</li>
 *   <li>It is never trusted for longer than {@code maxValidityMs} after the callback first read
 *       it, measured on the monotonic clock: a decision dated years ahead, or a wall clock that
 *       steps back, cannot keep a decision alive for ever.</li>
 *   <li>A decision whose {@code decidedAt} lies more than {@code maxValidityMs} ahead of the wall
 *       clock is refused: one of the two clocks is wrong.</li>
 * </ul>
 */
final class DecisionValidity {

    private DecisionValidity() {
    }

    /**
     * @param readAtMonoMs monotonic time at which this decision's bytes were first read
     * @return null if the decision may be applied, otherwise why not
     */
    static String problem(Decision decision, Instant wallNow, long nowMonoMs, long readAtMonoMs, long maxValidityMs) {
        if (wallNow.isAfter(decision.validUntil())) {
            return "decision expired at " + decision.validUntil();
        }
        if (nowMonoMs - readAtMonoMs > maxValidityMs) {
            return "decision read " + (nowMonoMs - readAtMonoMs) / 1000 + " s ago, longer than the maximum validity of "
                    + maxValidityMs / 1000 + " s (validUntil " + decision.validUntil() + ")";
        }
        Instant decidedAt = decision.decidedAtInstant();
        if (decidedAt != null && decidedAt.isAfter(wallNow.plusMillis(maxValidityMs))) {
            return "decision dated " + decidedAt + ", more than " + maxValidityMs / 1000
                    + " s ahead of this host's clock";
        }
        return null;
    }

    /**
     * A decision from the decisions topic ({@code volume.quota.decision.source=topic}) was written
     * by the cluster agent on another host, whose clock may differ from this broker's by any
     * amount: comparing its {@code validUntil} with this broker's wall clock would expire every
     * decision on a broker 30 s ahead, and PAUSE it for good. So it is valid for the lifetime the
     * agent gave it ({@code validUntil - decidedAt}, both on the agent's clock), counted on this
     * broker's monotonic clock from the moment it was received, and never longer than
     * {@code maxValidityMs}. A decision without {@code decidedAt} has no lifetime to measure.
     *
     * @param receivedAtMonoMs monotonic time at which this decision's record was received
     * @return null if the decision may be applied, otherwise why not
     */
    static String problemOfReceived(Decision decision, long nowMonoMs, long receivedAtMonoMs, long maxValidityMs) {
        Instant decidedAt = decision.decidedAtInstant();
        if (decidedAt == null) {
            return "decision from the topic has no decidedAt, so no lifetime to measure";
        }
        long lifetimeMs = Math.min(maxValidityMs, Duration.between(decidedAt, decision.validUntil()).toMillis());
        if (lifetimeMs < 0) {
            return "decision valid until " + decision.validUntil() + ", before its decidedAt " + decidedAt;
        }
        long ageMs = nowMonoMs - receivedAtMonoMs;
        if (ageMs > lifetimeMs) {
            return "decision received " + ageMs / 1000 + " s ago, valid for " + lifetimeMs / 1000
                    + " s from its arrival (decidedAt " + decidedAt + ", validUntil " + decision.validUntil() + ")";
        }
        return null;
    }
}
