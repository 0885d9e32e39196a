package io.volumequota.broker;

/**
 * One principal's PRODUCE quota at one tick, as a pure function of values: the engine measures
 * (connections, request size, bytes in the broker's rate window) and keeps the step-down history;
 * this decides. The rules themselves are {@link PrincipalQuota}'s and {@link PauseCeiling}'s.
 * See docs/broker-plugin.md, "The PAUSE bound with many connections".
 */
final class ProducePolicy {

    /**
     * What one principal's quota is computed from.
     *
     * @param target        what the decision maps to (base in OPEN)
     * @param current       the quota its sensor has now (its own, or the default it was created with; NaN if none)
     * @param cap           the PAUSE ceiling's share for it (base unless PAUSE)
     * @param bytesInWindow its bytes in the broker's rate window; NaN when the byte rates cannot be read
     */
    record Inputs(double target, double base, double current, double cap, double bytesInWindow, long windowMs,
                  long stepDownThrottleMs, long maxThrottleMs) {
    }

    private ProducePolicy() {
    }

    /** Where the quota is heading: base in OPEN, else the target but not below the floor, never above the cap. */
    static double goal(double target, double base, double floor, double cap) {
        double goal = target >= base ? base : Math.max(target, floor);
        return Math.min(goal, cap);
    }

    /**
     * The quota for this tick.
     *
     * @param limited the fallback step-down's value for {@code goal}, used when the byte rates cannot be read
     * @param ceiling the limit of the PAUSE ceiling on its way down (it halves at most once per window);
     *                {@code Double.POSITIVE_INFINITY} while the ceiling is not in force
     */
    static double next(double goal, Inputs in, double limited, double ceiling) {
        double wanted = limited;
        if (!Double.isNaN(in.bytesInWindow())) {
            // Fall with the window, do not rise with bursts, but rise when the bytes in the window
            // would otherwise earn a throttle over T_max (more connections than client ids seen).
            double shaped = PrincipalQuota.shaped(goal, in.base(), in.bytesInWindow(), in.windowMs(),
                    in.stepDownThrottleMs());
            wanted = Math.max(PrincipalQuota.noRise(in.current(), shaped, goal), Math.min(in.cap(),
                    PrincipalQuota.shaped(goal, in.base(), in.bytesInWindow(), in.windowMs(), in.maxThrottleMs())));
        }
        // The disk wins over the throttle bounds: the ceiling caps the settled value.
        return Math.min(PrincipalQuota.settle(in.current(), wanted, in.target(), in.base()), ceiling);
    }
}
