package io.volumequota.broker;

import java.util.ArrayDeque;

/**
 * Limits how fast the effective quota may fall: it is never below
 * {@code (highest quota in force during the last intervalMs) / maxRatio}, where intervalMs is
 * the broker's quota window. Increases apply at once.
 *
 * <p>Why: the broker throttles a request by {@code (observedRate - quota) / quota x window}
 * (QuotaUtils.throttleTime), and observedRate is the average over the last window, which the
 * quotas in force during that window allowed. Jumping from Q to a much smaller q gives one
 * throttle of about {@code (Q/q - 1) x window}: hours for PAUSE, and a client muted that long
 * stays muted after the decision returns to OPEN. With this limit the ratio Q/q is at most
 * maxRatio, so each such throttle stays near {@code (maxRatio - 1) x window}. A sidecar that
 * lowers its factor gradually is followed without delay.
 */
final class StepDownLimiter {

    private final double maxRatio;
    private final long intervalMs;
    /** The quotas in force during the last intervalMs, oldest first; the last one is current. */
    private final ArrayDeque<InForce> history = new ArrayDeque<>();

    private static final class InForce {
        final double quota;
        long untilMs = Long.MAX_VALUE;

        InForce(double quota) {
            this.quota = quota;
        }
    }

    StepDownLimiter(double maxRatio, long intervalMs) {
        this.maxRatio = maxRatio;
        this.intervalMs = intervalMs;
    }

    /** An independent limiter with the same settings and history. */
    StepDownLimiter copy() {
        StepDownLimiter copy = new StepDownLimiter(maxRatio, intervalMs);
        for (InForce value : history) {
            InForce entry = new InForce(value.quota);
            entry.untilMs = value.untilMs;
            copy.history.addLast(entry);
        }
        return copy;
    }

    /** Records that {@code quota} is in force from {@code nowMs} on (set by another rule). */
    void force(double quota, long nowMs) {
        while (!history.isEmpty() && history.peekFirst().untilMs <= nowMs - intervalMs) {
            history.removeFirst();
        }
        if (history.isEmpty() || history.peekLast().quota != quota) {
            if (!history.isEmpty()) {
                history.peekLast().untilMs = nowMs;
            }
            history.addLast(new InForce(quota));
        }
    }

    /** What {@link #apply} would answer at {@code nowMs}, without recording it. */
    double peek(double target, long nowMs) {
        double ceiling = 0;
        for (InForce value : history) {
            if (value.untilMs > nowMs - intervalMs) {
                ceiling = Math.max(ceiling, value.quota);
            }
        }
        return history.isEmpty() ? target : Math.max(target, ceiling / maxRatio);
    }

    /** The effective quota at {@code nowMs}, moving from the previous one towards {@code target}. */
    double apply(double target, long nowMs) {
        if (history.isEmpty()) {
            history.addLast(new InForce(target));
            return target;
        }
        while (history.peekFirst().untilMs <= nowMs - intervalMs) {
            history.removeFirst(); // no longer in the broker's rate window
        }
        double ceiling = 0;
        for (InForce value : history) {
            ceiling = Math.max(ceiling, value.quota);
        }
        double next = Math.max(target, ceiling / maxRatio);
        InForce current = history.peekLast();
        if (next != current.quota) {
            current.untilMs = nowMs;
            history.addLast(new InForce(next));
        }
        return next;
    }
}
