package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class StepDownLimiterTest {

    private static final double BASE = 10 * 1024 * 1024;
    private static final double FLOOR = 128 * 1024;

    @Test
    void firstValueAndIncreasesApplyAtOnce() {
        StepDownLimiter limiter = new StepDownLimiter(2.0, 11_000);
        assertEquals(FLOOR, limiter.apply(FLOOR, 0));
        assertEquals(BASE, limiter.apply(BASE, 100));
    }

    @Test
    void decreasesAtMostHalveOncePerWindow() {
        StepDownLimiter limiter = new StepDownLimiter(2.0, 11_000);
        assertEquals(BASE, limiter.apply(BASE, 0));
        assertEquals(BASE / 2, limiter.apply(FLOOR, 1_000), "first step is immediate");
        assertEquals(BASE / 2, limiter.apply(FLOOR, 11_999), "no second step within the window");
        assertEquals(BASE / 4, limiter.apply(FLOOR, 12_000));
        long t = 12_000;
        double expected = BASE / 4;
        while (expected / 2 > FLOOR) {
            t += 11_000;
            expected /= 2;
            assertEquals(expected, limiter.apply(FLOOR, t));
        }
        assertEquals(FLOOR, limiter.apply(FLOOR, t + 11_000), "the last step stops at the target");
        assertEquals(FLOOR, limiter.apply(FLOOR, t + 99_000));
        // 10 MiB/s -> 128 KiB/s is a factor 80: 7 steps, the 7th after 6 windows (66 s)
        assertEquals(1_000 + 6 * 11_000, t + 11_000);
    }

    @Test
    void gradualDecreasesAreFollowedUntilTheyAddUpToTheRatio() {
        StepDownLimiter limiter = new StepDownLimiter(2.0, 11_000);
        limiter.apply(BASE, 0);
        assertEquals(BASE * 0.6, limiter.apply(BASE * 0.6, 10));
        assertEquals(BASE * 0.55, limiter.apply(BASE * 0.55, 2_000));
        assertEquals(BASE * 0.5, limiter.apply(BASE * 0.4, 4_000), "BASE was in force 4 s ago");
        assertEquals(BASE * 0.5, limiter.apply(BASE * 0.4, 11_009));
        assertEquals(BASE * 0.4, limiter.apply(BASE * 0.4, 11_010), "BASE has left the window");
    }

    @Test
    void anIncreaseDuringTheDescentIsImmediateAndCountsInTheWindow() {
        StepDownLimiter limiter = new StepDownLimiter(2.0, 11_000);
        limiter.apply(BASE, 0);
        assertEquals(BASE / 2, limiter.apply(FLOOR, 0));
        assertEquals(BASE, limiter.apply(BASE, 5_000), "OPEN again: back to base at once");
        assertEquals(BASE / 2, limiter.apply(FLOOR, 6_000));
        assertEquals(BASE / 2, limiter.apply(FLOOR, 16_999), "BASE was in force until 6 s");
        assertEquals(BASE / 4, limiter.apply(FLOOR, 17_000));
    }

    @Test
    void neverBelowTheTargetAndNeverAboveItAfterAnIncrease() {
        StepDownLimiter limiter = new StepDownLimiter(1e12, 11_000);
        limiter.apply(BASE, 0);
        assertEquals(FLOOR, limiter.apply(FLOOR, 1));
        assertEquals(BASE * 0.3, limiter.apply(BASE * 0.3, 2));
    }

    @Test
    void aCopyKeepsTheHistoryAndForceRecordsAnotherRulesQuota() {
        StepDownLimiter limiter = new StepDownLimiter(2, 11_000);
        limiter.apply(100, 0);
        assertEquals(50, limiter.apply(1, 1_000));
        StepDownLimiter copy = limiter.copy();
        assertEquals(50, copy.apply(1, 5_000), "the copy remembers 100 in force until 1 s");
        assertEquals(25, copy.apply(1, 12_001), "100 left the window, 50 is the highest");
        assertEquals(50, limiter.apply(1, 5_000), "the original is independent of the copy");
        StepDownLimiter forced = new StepDownLimiter(2, 11_000);
        forced.force(80, 0);
        assertEquals(40, forced.apply(1, 100), "a forced value counts as in force");
        assertEquals(20, forced.apply(1, 11_101), "80 left the window at 11.1 s, 40 is the highest");
    }
}
