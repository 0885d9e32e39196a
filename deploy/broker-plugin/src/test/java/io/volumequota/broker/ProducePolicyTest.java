package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link ProducePolicy} alone: values in, one principal's quota out. */
class ProducePolicyTest {

    private static final double MIB = 1024 * 1024;
    private static final double BASE = 10 * MIB;
    private static final double FLOOR = 256 * 1024;
    private static final long WINDOW_MS = 11_000;
    private static final long T_STEP_MS = 8_000;
    private static final long T_MAX_MS = 16_000;
    private static final double NO_CEILING = Double.POSITIVE_INFINITY;

    private static ProducePolicy.Inputs inputs(double target, double current, double cap, double bytesInWindow) {
        return new ProducePolicy.Inputs(target, BASE, current, cap, bytesInWindow, WINDOW_MS, T_STEP_MS, T_MAX_MS);
    }

    @Test
    void theGoalIsBaseInOpenAndTheFloorBelowItAndNeverAboveTheCap() {
        assertEquals(BASE, ProducePolicy.goal(BASE, BASE, FLOOR, BASE));
        assertEquals(FLOOR, ProducePolicy.goal(FLOOR / 2, BASE, FLOOR, BASE), "PAUSE maps below the floor");
        assertEquals(2 * MIB, ProducePolicy.goal(2 * MIB, BASE, FLOOR, BASE), "THROTTLE above the floor");
        assertEquals(MIB, ProducePolicy.goal(2 * MIB, BASE, FLOOR, MIB), "the PAUSE ceiling's share caps it");
    }

    @Test
    void inOpenTheQuotaIsTheBaseWhateverTheBytesInTheWindow() {
        assertEquals(BASE, ProducePolicy.next(BASE, inputs(BASE, FLOOR, BASE, 50 * MIB), Double.NaN, NO_CEILING));
    }

    @Test
    void withoutByteRatesTheFallbackStepDownIsSettledOnTheGrid() {
        double next = ProducePolicy.next(FLOOR, inputs(FLOOR, BASE, BASE, Double.NaN), BASE / 2, NO_CEILING);
        assertEquals(BASE / 2, next, "half the base is a grid level");
        double between = ProducePolicy.next(FLOOR, inputs(FLOOR, Double.NaN, BASE, Double.NaN), 0.45 * BASE,
                NO_CEILING);
        assertEquals(PrincipalQuota.roundUp(0.45 * BASE, BASE), between);
        assertTrue(between > 0.45 * BASE, "rounded up, never down");
    }

    @Test
    void theQuotaFallsNoFurtherThanTheBytesInTheWindowAllowWithinTStep() {
        double bytesInWindow = 19 * MIB; // / (11 s + 8 s) = 1 MiB/s
        double next = ProducePolicy.next(FLOOR, inputs(FLOOR, 2 * MIB, BASE, bytesInWindow), Double.NaN, NO_CEILING);
        assertTrue(next >= MIB, "at or above bytesInWindow / (W + T_step): " + next);
        assertEquals(PrincipalQuota.roundUp(MIB, BASE), next);
    }

    @Test
    void aBurstRaisesTheQuotaOnlyAsFarAsTMaxNeedsAndTheCapAllows() {
        double bytesInWindow = 19 * MIB; // T_max keeps 19 MiB / 27 s = 0.70 MiB/s
        double tMaxKeep = bytesInWindow * 1000.0 / (WINDOW_MS + T_MAX_MS);
        double risen = ProducePolicy.next(FLOOR, inputs(FLOOR, 512 * 1024, BASE, bytesInWindow), Double.NaN,
                NO_CEILING);
        assertEquals(PrincipalQuota.roundUp(tMaxKeep, BASE), risen, "up to what T_max needs, not T_step's 1 MiB/s");
        double capped = ProducePolicy.next(FLOOR, inputs(FLOOR, 512 * 1024, 600 * 1024, bytesInWindow), Double.NaN,
                NO_CEILING);
        assertEquals(PrincipalQuota.roundUp(600 * 1024, BASE), capped, "the cap bounds the rise");
        double quiet = ProducePolicy.next(FLOOR, inputs(FLOOR, 512 * 1024, BASE, 0.0), Double.NaN, NO_CEILING);
        assertEquals(FLOOR, quiet, "nothing in the window: straight to the goal");
    }

    @Test
    void theCeilingInForceWinsOverTheThrottleBounds() {
        double next = ProducePolicy.next(FLOOR, inputs(FLOOR, 2 * MIB, BASE, 19 * MIB), Double.NaN, 400 * 1024);
        assertEquals(400 * 1024, next);
    }
}
