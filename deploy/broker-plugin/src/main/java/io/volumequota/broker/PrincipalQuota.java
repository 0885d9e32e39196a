package io.volumequota.broker;

/**
 * Pure rules for one principal's PRODUCE quota below base. See docs/broker-plugin.md, "The
 * PAUSE bound".
 *
 * <p>The broker throttles a request by {@code bytesInWindow / quota - W} (QuotaUtils.throttleTime
 * with Rate's window W of 10 to 11 s). Two things can make that long:
 * <ol>
 *   <li>bytes the previous, higher quota let into the window: kept at or below T_step by never
 *       setting the quota below {@code bytesInWindow / (W + T_step)} ({@link #shaped});</li>
 *   <li>the one request each connection may still send before it is muted: N connections of
 *       request size r add {@code N x r / quota}, kept at or below T_floor by a floor of
 *       {@code N x r / T_floor} per principal ({@link #floor}).</li>
 * </ol>
 * Values below base are rounded up to a geometric grid with hysteresis ({@link #settle}) so
 * that small changes of the inputs do not change the quota.
 */
final class PrincipalQuota {

    /** Grid ratio: quotas below base are base / 2^(k/4). */
    static final double GRID_RATIO = Math.pow(2, 0.25);

    private PrincipalQuota() {
    }

    /**
     * The request size to plan the floor for: what a connection sends when it is unmuted. A
     * buffering producer that is throttled keeps producing while muted, so its next request holds
     * what it produced meanwhile: {@code demand / connections x longestMute}, up to the largest
     * request it forms ({@code largestRequest}, its {@code max.request.size}). The measured
     * average lags that growth (requests grow from one record to full batches within one mute),
     * so it only counts when larger. {@code demandBytesPerSecond} is the principal's byte rate
     * when the target fell.
     */
    static double plannedRequestBytes(double measuredAverage, double demandBytesPerSecond, int connections,
                                      double largestRequest, long longestMuteMs) {
        double backlog = demandBytesPerSecond / Math.max(1, connections) * longestMuteMs / 1000.0;
        return Math.max(measuredAverage, Math.min(largestRequest, backlog));
    }

    /** The principal's floor: {@code min(base, max(pauseFloor, connections x requestBytes / T_floor))}. */
    static double floor(double base, double pauseFloor, int connections, double requestBytes, long pauseThrottleMs) {
        double shared = Math.max(1, connections) * requestBytes * 1000.0 / pauseThrottleMs;
        return Math.min(base, Math.max(pauseFloor, shared));
    }

    /**
     * The quota while stepping down with the broker's measured window content:
     * {@code min(base, max(goal, bytesInWindow / (W + T_step)))}.
     */
    static double shaped(double goal, double base, double bytesInWindow, long windowMs, long stepDownThrottleMs) {
        if (goal >= base) {
            return base;
        }
        double keep = bytesInWindow * 1000.0 / (windowMs + stepDownThrottleMs);
        return Math.min(base, Math.max(goal, keep));
    }

    /**
     * While below base, the shaped value may fall but not rise again, except to a higher goal:
     * a rise would let the bursts that follow a mute (Kafka's rate window empties while every
     * connection is muted) pull the quota up and keep a paused principal well above its floor.
     */
    static double noRise(double current, double wanted, double goal) {
        if (Double.isNaN(current) || wanted <= current) {
            return wanted;
        }
        return Math.max(goal, current);
    }

    /**
     * The value to publish, given the one in force ({@code current}, NaN if none) and the wanted
     * one ({@code wanted}, at least the decision's {@code target}). Base and the decision's own
     * target (already quantized) are used exactly. Other values come from the floor and step-down
     * rules and move with every measurement, so they are rounded up to the grid, and a quota in
     * force within one grid step above the wanted value is kept. Never below {@code wanted}.
     */
    static double settle(double current, double wanted, double target, double base) {
        if (wanted >= base) {
            return base;
        }
        if (wanted == target) {
            return target;
        }
        if (!Double.isNaN(current) && current >= wanted && current <= wanted * GRID_RATIO) {
            return current;
        }
        return roundUp(wanted, base);
    }

    /** The smallest grid value base / GRID_RATIO^k that is >= value (value <= base). */
    static double roundUp(double value, double base) {
        if (value >= base) {
            return base;
        }
        int k = (int) Math.floor(Math.log(base / value) / Math.log(GRID_RATIO) + 1e-9);
        double level = level(base, k);
        return level >= value ? level : level(base, k - 1);
    }

    /** base / 2^(k/4), exact for multiples of 4 (halvings). */
    static double level(double base, int k) {
        return Math.scalb(base, -Math.floorDiv(k, 4)) / Math.pow(2, Math.floorMod(k, 4) / 4.0);
    }
}
