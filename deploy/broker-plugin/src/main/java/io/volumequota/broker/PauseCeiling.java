package io.volumequota.broker;

/**
 * Pure rules for the PAUSE ceiling: what all paused principals of a broker may write together,
 * and each of them alone, whatever their number of client ids. See docs/broker-plugin.md, "The
 * PAUSE ceiling".
 *
 * <p>Kafka throttles a request by {@code bytesInWindow / Q - W} and forgets bytes older than the
 * window W (10 to 11 s). N connections of r bytes each, sending their next request when unmuted,
 * therefore settle at a rate λ with {@code λ x (λ / Q - 1) = N r / W}: each is muted
 * {@code (λ / Q - 1) x W = N r / λ} and comes back to a window that no longer holds its last
 * request. A principal's rate exceeds its quota by a factor that grows with N r, so the ceiling
 * is planned as a rate and turned into the quota that gives that rate ({@link #quotaForRate}).
 */
final class PauseCeiling {

    /**
     * Kafka's rate over 10 s swings around its average (connections that were muted together come
     * back together): measured up to about twice the average, so the quota is planned for half the ceiling.
     */
    static final double BURST_FACTOR = 2;
    /** No quota below this: at a few bytes/s Kafka's throttle overflows its int and throttles nothing. */
    static final double MIN_QUOTA_BYTES_PER_SECOND = 1024;

    private PauseCeiling() {
    }

    /** What one paused principal may write: {@code min(principalCeiling, brokerCeiling / pausedPrincipals)}. */
    static double share(double principalCeiling, double brokerCeiling, int pausedPrincipals) {
        return Math.min(principalCeiling, brokerCeiling / Math.max(1, pausedPrincipals));
    }

    /**
     * The quota at which N connections of r bytes write about {@code rate}:
     * {@code rate / (1 + N r / (W x rate))}, the inverse of {@link #rateAtQuota}.
     */
    static double quotaForRate(double rate, int connections, double requestBytes, long windowMs) {
        double perWindow = Math.max(1, connections) * requestBytes * 1000.0 / windowMs;
        return rate / (1 + perWindow / rate);
    }

    /**
     * The rate N connections of r bytes reach at quota Q once every connection is throttled:
     * the root of {@code λ x (λ / Q - 1) = N r / W}, at least Q.
     */
    static double rateAtQuota(double quota, int connections, double requestBytes, long windowMs) {
        double perWindow = Math.max(1, connections) * requestBytes * 1000.0 / windowMs;
        return (quota + Math.sqrt(quota * quota + 4 * quota * perWindow)) / 2;
    }

    /**
     * The highest quota a paused principal may have: the quota for half its share of the ceilings,
     * rounded down to the quota grid (so that it does not move with every measurement of r),
     * never below {@link #MIN_QUOTA_BYTES_PER_SECOND}.
     */
    static double cap(double principalCeiling, double brokerCeiling, int pausedPrincipals, int connections,
                      double requestBytes, long windowMs, double base) {
        double quota = quotaForRate(share(principalCeiling, brokerCeiling, pausedPrincipals) / BURST_FACTOR,
                connections, requestBytes, windowMs);
        return Math.max(MIN_QUOTA_BYTES_PER_SECOND, roundDown(quota, base));
    }

    /** The largest grid value base / 2^(k/4) that is <= value (value itself if >= base). */
    static double roundDown(double value, double base) {
        if (value >= base) {
            return base;
        }
        int k = (int) Math.ceil(Math.log(base / value) / Math.log(PrincipalQuota.GRID_RATIO) - 1e-9);
        double level = PrincipalQuota.level(base, k);
        return level <= value ? level : PrincipalQuota.level(base, k + 1);
    }
}
