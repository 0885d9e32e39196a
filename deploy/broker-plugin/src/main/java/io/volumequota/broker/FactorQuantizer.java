package io.volumequota.broker;

/**
 * Quantizes the THROTTLE factor so that a decider whose factor moves a little with every
 * snapshot does not change every principal's quota (and reset every quota sensor) each time.
 *
 * <p>Levels are multiples of {@code step}; a factor f maps to the level below it
 * ({@code floor(f / step) x step}, never more throttle than one step). The level in force is
 * kept while f stays within half a step of its band {@code [level, level + step)}: it moves only
 * when f is below {@code level - step/2} or at least {@code level + 1.5 step}. Factor 1 is 1.
 * Not thread-safe: used on the poller thread only.
 */
final class FactorQuantizer {

    private final double step;
    private double level = Double.NaN;

    FactorQuantizer(double step) {
        this.step = step;
    }

    /** The level for {@code factor} in [0, 1], given the level in force. */
    double apply(double factor) {
        if (!Double.isNaN(level) && factor >= level - step / 2 && factor < level + 1.5 * step
                && !(factor >= 1.0 && level < 1.0)) {
            return level;
        }
        level = factor >= 1.0 ? 1.0 : Math.floor(factor / step + 1e-9) * step;
        level = Math.min(1.0, Math.max(0.0, level));
        return level;
    }

    /** Forget the level in force (the decision left THROTTLE). */
    void reset() {
        level = Double.NaN;
    }
}
