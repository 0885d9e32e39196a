package io.volumequota.broker;

/**
 * Decision to PRODUCE quota (bytes per second, per principal, per broker), before the
 * step-down limit is applied.
 *
 * <ul>
 *   <li>OPEN: the base quota.</li>
 *   <li>THROTTLE: base x throttleFactor, but never below the PAUSE floor.</li>
 *   <li>PAUSE: the PAUSE floor (never 0: a zero quota divides by zero in the broker, and a
 *       tiny one throttles a client for hours; see docs/broker-plugin.md).</li>
 *   <li>no valid decision: the on-missing action (PAUSE floor or base).</li>
 * </ul>
 */
final class QuotaMapping {

    private QuotaMapping() {
    }

    /** @param decision a valid, unexpired decision, or null when there is none */
    static double targetBytesPerSecond(Decision decision, VolumeQuotaConfig config) {
        if (decision == null) {
            return config.onMissing() == VolumeQuotaConfig.OnMissing.OPEN
                    ? config.baseBytesPerSecond()
                    : config.pauseBytesPerSecond();
        }
        return switch (decision.state()) {
            case OPEN -> config.baseBytesPerSecond();
            case PAUSE -> config.pauseBytesPerSecond();
            case THROTTLE -> Math.max(config.pauseBytesPerSecond(),
                    config.baseBytesPerSecond() * Math.min(1.0, decision.throttleFactor()));
        };
    }
}
