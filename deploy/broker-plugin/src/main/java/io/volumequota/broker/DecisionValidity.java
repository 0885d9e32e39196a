package io.volumequota.broker;

import java.time.Instant;

/**
 * Whether a parsed decision may still be applied. Pure: the caller passes both clocks.
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
}
