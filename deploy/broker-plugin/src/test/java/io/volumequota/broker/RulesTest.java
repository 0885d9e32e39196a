package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;

import org.junit.jupiter.api.Test;

/** The pure rules: factor quantization, per-principal floor, shaped step-down, grid, validity. */
class RulesTest {

    private static final double MIB = 1024 * 1024;
    private static final double BASE = 10 * MIB;

    @Test
    void factorIsRoundedDownToItsStepAndHeldWithinHalfAStep() {
        FactorQuantizer q = new FactorQuantizer(0.05);
        assertEquals(0.60, q.apply(0.63), 1e-12);
        assertEquals(0.60, q.apply(0.579), 1e-12, "within half a step below: held");
        assertEquals(0.60, q.apply(0.674), 1e-12, "below 1.5 steps above: held");
        assertEquals(0.55, q.apply(0.574), 1e-12, "more than half a step below: moves");
        assertEquals(0.70, q.apply(0.70), 1e-12, "1.5 steps above 0.55: moves to the step of 0.70");
        assertEquals(1.0, q.apply(1.0), 1e-12);
        assertEquals(0.0, q.apply(0.01), 1e-12);
        q.reset();
        assertEquals(0.30, q.apply(0.3), 1e-12, "0.3 / 0.05 is 5.999..: still the 0.30 step");
    }

    @Test
    void aNoisyFactorChangesTheLevelRarely() {
        FactorQuantizer q = new FactorQuantizer(0.05);
        java.util.Random random = new java.util.Random(7);
        double previous = q.apply(0.5);
        int changes = 0;
        for (int i = 0; i < 1000; i++) {
            double level = q.apply(0.5 + (random.nextDouble() - 0.5) * 0.04); // +-0.02 noise
            if (level != previous) {
                changes++;
            }
            previous = level;
        }
        assertTrue(changes <= 2, "noise below the hysteresis moves the level at most once or twice: " + changes);
    }

    @Test
    void floorFollowsConnectionsTimesRequestSize() {
        double floor = 256 * 1024;
        assertEquals(floor, PrincipalQuota.floor(BASE, floor, 1, MIB, 12_000), "1 x 1 MiB / 12 s < 256 KiB/s");
        assertEquals(8 * MIB / 12, PrincipalQuota.floor(BASE, floor, 8, MIB, 12_000), 1e-6);
        assertEquals(BASE, PrincipalQuota.floor(BASE, floor, 1000, MIB, 12_000), "never above base");
        assertEquals(floor, PrincipalQuota.floor(BASE, floor, 0, 1024, 12_000), "at least one connection");
    }

    @Test
    void plannedRequestSizeIsWhatAConnectionProducesDuringOneMute() {
        // 32 connections sharing 3.2 MiB/s produce 100 KiB/s each; muted 8 s, each comes back
        // with 800 KiB, whatever the 16 KiB requests measured before the mute say.
        assertEquals(800 * 1024, PrincipalQuota.plannedRequestBytes(16 * 1024, 32 * 100 * 1024, 32, MIB, 8_000),
                1e-6);
        assertEquals(MIB, PrincipalQuota.plannedRequestBytes(16 * 1024, 8 * MIB, 8, MIB, 8_000),
                "never more than the largest request a producer forms");
        assertEquals(200 * 1024, PrincipalQuota.plannedRequestBytes(200 * 1024, 1024, 8, MIB, 8_000),
                "a slow principal keeps its measured size");
        assertEquals(8 * 1024, PrincipalQuota.plannedRequestBytes(0, 1024, 0, MIB, 8_000),
                "no connection seen counts as one");
    }

    @Test
    void shapedQuotaBoundsTheThrottleOfTheBytesInTheWindow() {
        long w = 11_000;
        long t = 8_000;
        double bytes = 88 * MIB; // 8 MiB/s over 11 s
        double q = PrincipalQuota.shaped(256 * 1024, BASE, bytes, w, t);
        assertEquals(88 * MIB / 19, q, 1e-6);
        // The broker's throttle for these bytes, bytes / q - W, is exactly T_step.
        assertEquals(8.0, bytes / q - 11.0, 1e-9);
        assertEquals(BASE, PrincipalQuota.shaped(BASE, BASE, bytes, w, t), "goal base: base");
        assertEquals(300_000.0, PrincipalQuota.shaped(300_000, BASE, 0, w, t), "empty window: the goal");
        assertEquals(BASE, PrincipalQuota.shaped(1, BASE, 1e12, w, t), "never above base");
    }

    @Test
    void noRiseKeepsTheQuotaUnlessTheGoalRises() {
        assertEquals(2.0, PrincipalQuota.noRise(3.0, 2.0, 1.0));
        assertEquals(3.0, PrincipalQuota.noRise(3.0, 5.0, 1.0), "a burst does not pull it up");
        assertEquals(4.0, PrincipalQuota.noRise(3.0, 5.0, 4.0), "a higher goal does");
        assertEquals(5.0, PrincipalQuota.noRise(Double.NaN, 5.0, 1.0));
    }

    @Test
    void gridRoundsUpAndHoldsWithinOneStep() {
        assertEquals(BASE / 2, PrincipalQuota.roundUp(BASE / 2, BASE), "a halving is exact");
        double r = PrincipalQuota.roundUp(3 * MIB, BASE);
        assertTrue(r >= 3 * MIB && r < 3 * MIB * PrincipalQuota.GRID_RATIO, "next grid value above: " + r);
        assertEquals(BASE / Math.pow(2, 1.5), r, 1e-6);
        // settle: the decision's own target is exact, grid values are held within one step.
        assertEquals(0.4 * BASE, PrincipalQuota.settle(BASE, 0.4 * BASE, 0.4 * BASE, BASE));
        assertEquals(r, PrincipalQuota.settle(r, 3.2 * MIB, MIB, BASE), "held: 3.2 MiB <= r <= 3.2 MiB x 1.19");
        assertEquals(PrincipalQuota.roundUp(2 * MIB, BASE), PrincipalQuota.settle(r, 2 * MIB, MIB, BASE));
        assertEquals(PrincipalQuota.roundUp(4 * MIB, BASE), PrincipalQuota.settle(r, 4 * MIB, MIB, BASE),
                "rises at once");
        assertEquals(BASE, PrincipalQuota.settle(MIB, BASE, BASE, BASE));
    }

    @Test
    void validityIsCappedOnTheMonotonicClockAndFutureDatesAreRefused() {
        Instant now = Instant.parse("2026-11-22T12:00:00Z");
        Decision farAhead = new Decision(Decision.State.OPEN, 1, now.plusSeconds(10L * 365 * 86400), "t", now, false);
        assertNull(DecisionValidity.problem(farAhead, now, 1_000, 1_000, 300_000));
        assertNull(DecisionValidity.problem(farAhead, now, 301_000, 1_000, 300_000), "exactly the maximum");
        assertNotNull(DecisionValidity.problem(farAhead, now, 301_001, 1_000, 300_000), "read 300.001 s ago");

        Decision expired = new Decision(Decision.State.OPEN, 1, now.minusMillis(1), "t", null, false);
        assertNotNull(DecisionValidity.problem(expired, now, 0, 0, 300_000));
        Decision datedAhead = new Decision(Decision.State.OPEN, 1, now.plusSeconds(86400 * 400), "t",
                now.plusSeconds(86400 * 365), false);
        assertTrue(DecisionValidity.problem(datedAhead, now, 0, 0, 300_000).contains("ahead"));
        Decision slightlyAhead = new Decision(Decision.State.OPEN, 1, now.plusSeconds(60), "t", now.plusSeconds(5),
                false);
        assertNull(DecisionValidity.problem(slightlyAhead, now, 0, 0, 300_000), "a few seconds of skew is fine");
    }

    @Test
    void aDecisionFromTheTopicIsTimedOnThisBrokersMonotonicClockWhateverItsWallClockSays() {
        Instant agentNow = Instant.parse("2026-11-22T12:00:00Z");
        // The agent decided at its 12:00:00, valid for 30 s; this broker's clock runs 40 s ahead.
        Decision decision = new Decision(Decision.State.OPEN, 1, agentNow.plusSeconds(30), "t", agentNow, false);
        Instant brokerNow = agentNow.plusSeconds(40);
        long received = 5_000;
        assertNotNull(DecisionValidity.problem(decision, brokerNow, received, received, 300_000),
                "by the wall clock it expired before it arrived: the reason a topic decision is timed otherwise");
        assertNull(DecisionValidity.problemOfReceived(decision, received, received, 300_000));
        assertNull(DecisionValidity.problemOfReceived(decision, received + 30_000, received, 300_000),
                "valid for the 30 s the agent gave it, counted from its arrival");
        assertTrue(DecisionValidity.problemOfReceived(decision, received + 30_001, received, 300_000)
                .contains("30 s"));

        Decision forAYear = new Decision(Decision.State.OPEN, 1, agentNow.plusSeconds(365L * 86400), "t", agentNow,
                false);
        assertNull(DecisionValidity.problemOfReceived(forAYear, received + 300_000, received, 300_000));
        assertNotNull(DecisionValidity.problemOfReceived(forAYear, received + 300_001, received, 300_000),
                "never longer than the maximum validity");
        Decision undated = new Decision(Decision.State.OPEN, 1, agentNow.plusSeconds(30), "t", null, false);
        assertNotNull(DecisionValidity.problemOfReceived(undated, received + 1, received, 300_000),
                "no decidedAt, no lifetime to measure: not applied");
        Decision backwards = new Decision(Decision.State.OPEN, 1, agentNow.minusSeconds(1), "t", agentNow, false);
        assertNotNull(DecisionValidity.problemOfReceived(backwards, received, received, 300_000));
    }
}
