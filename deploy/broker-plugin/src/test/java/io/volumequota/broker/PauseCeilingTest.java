package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The PAUSE ceiling's pure rules ({@link PauseCeiling}), alone and as properties over many principals. */
class PauseCeilingTest {

    private static final double KIB = 1024;
    private static final double MIB = 1024 * 1024;
    private static final double BASE = 10 * MIB;
    private static final long W = 11_000;
    private static final double PRINCIPAL = VolumeQuotaConfig.DEFAULT_PAUSE_PRINCIPAL_CEILING;
    private static final double BROKER = VolumeQuotaConfig.DEFAULT_PAUSE_BROKER_CEILING;

    @Test
    void eachPausedPrincipalGetsTheSmallerOfItsCeilingAndAnEqualShareOfTheBrokers() {
        assertEquals(2 * MIB, PauseCeiling.share(2 * MIB, 8 * MIB, 1));
        assertEquals(2 * MIB, PauseCeiling.share(2 * MIB, 8 * MIB, 4));
        assertEquals(0.4 * MIB, PauseCeiling.share(2 * MIB, 8 * MIB, 20), 1e-6);
        assertEquals(2 * MIB, PauseCeiling.share(2 * MIB, 8 * MIB, 0), "no principal seen yet counts as one");
    }

    @Test
    void theQuotaForARateIsTheInverseOfTheRateKafkaLetsThroughAtAQuota() {
        for (int n : new int[] {1, 8, 32, 120, 1000}) {
            for (double r : new double[] {16 * KIB, 256 * KIB, MIB}) {
                double quota = PauseCeiling.quotaForRate(2 * MIB, n, r, W);
                assertEquals(2 * MIB, PauseCeiling.rateAtQuota(quota, n, r, W), 1e-3, n + " x " + r);
                assertTrue(quota < 2 * MIB, "Kafka lets more than the quota through");
            }
        }
    }

    @Test
    void oneConnectionOfSmallRequestsGetsAboutTheCeilingAsItsQuota() {
        assertEquals(2 * MIB, PauseCeiling.quotaForRate(2 * MIB, 1, 16 * KIB, W), 0.001 * 2 * MIB);
    }

    @Test
    void manyConnectionsGetASmallerQuotaSoThatTheirRateStaysAtTheCeiling() {
        // 120 producers of 1 MiB requests (Kafka Connect, Streams, a producer per unit of work).
        double quota = PauseCeiling.quotaForRate(2 * MIB, 120, MIB, W);
        assertEquals(2 * MIB / (1 + 120 * MIB / 11.0 / (2 * MIB)), quota, 1e-6);
        assertTrue(quota > 300 * KIB && quota < 330 * KIB, "quota " + quota);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 8, 32, 120, 500, 2000})
    void aPrincipalsRateStaysUnderItsCeilingWhateverItsNumberOfClientIds(int connections) {
        for (double r = 4 * KIB; r <= 4 * MIB; r *= 2) {
            double cap = PauseCeiling.cap(PRINCIPAL, BROKER, 1, connections, r, W, BASE);
            assertTrue(PauseCeiling.rateAtQuota(cap, connections, r, W) <= PRINCIPAL / PauseCeiling.BURST_FACTOR
                    || cap == PauseCeiling.MIN_QUOTA_BYTES_PER_SECOND, connections + " x " + r);
            assertTrue(cap >= PauseCeiling.MIN_QUOTA_BYTES_PER_SECOND);
        }
    }

    @Test
    void theCapIsAGridValueSoThatItDoesNotMoveWithEveryMeasurement() {
        double quota = PauseCeiling.quotaForRate(PRINCIPAL / PauseCeiling.BURST_FACTOR, 8, MIB, W);
        double cap = PauseCeiling.cap(PRINCIPAL, BROKER, 1, 8, MIB, W, BASE);
        assertEquals(cap, PrincipalQuota.roundUp(cap, BASE), 1e-6 * cap);
        assertTrue(cap <= quota && cap > quota / PrincipalQuota.GRID_RATIO, cap + " vs " + quota);
        assertEquals(cap, PauseCeiling.cap(PRINCIPAL, BROKER, 1, 8, 1.001 * MIB, W, BASE));
    }

    @Test
    void noQuotaFallsBelowTheMinimumWhateverTheShare() {
        double cap = PauseCeiling.cap(PRINCIPAL, 256 * KIB, 10_000, 500, MIB, W, BASE);
        assertEquals(PauseCeiling.MIN_QUOTA_BYTES_PER_SECOND, cap);
    }

    static IntStream seeds() {
        return IntStream.range(0, 200);
    }

    /**
     * Random brokers (ceilings, up to 200 paused principals, each with 1 to 500 client ids and
     * 1 KiB to 1 MiB requests, its own floor): the quotas, and the rates Kafka lets through at
     * those quotas, summed over the principals, never exceed the broker's ceiling.
     */
    @ParameterizedTest
    @MethodSource("seeds")
    void theSumOverPausedPrincipalsNeverExceedsTheBrokerCeiling(int seed) {
        Random random = new Random(seed);
        for (int round = 0; round < 10; round++) {
            int principals = 1 + random.nextInt(200);
            double floor = (64 + random.nextInt(448)) * KIB;
            // Shares of at least 512 KiB/s, so that no quota is held at the minimum (up to 700 MiB per window).
            double principalCeiling = Math.max(floor, 512 * KIB) * (1 + 8 * random.nextDouble());
            double brokerCeiling = Math.max(floor, principals * 512 * KIB) * (1 + 4 * random.nextDouble());
            double quotas = 0;
            double rates = 0;
            for (int p = 0; p < principals; p++) {
                int n = 1 + random.nextInt(random.nextBoolean() ? 8 : 500);
                double r = KIB * Math.pow(2, 10 * random.nextDouble());
                double principalFloor = PrincipalQuota.floor(BASE, floor, n, r, 12_000);
                double cap = PauseCeiling.cap(principalCeiling, brokerCeiling, principals, n, r, W, BASE);
                assertTrue(cap > PauseCeiling.MIN_QUOTA_BYTES_PER_SECOND, "not held at the minimum");
                double quota = Math.min(principalFloor, cap);
                assertTrue(PauseCeiling.rateAtQuota(quota, n, r, W)
                        <= principalCeiling / PauseCeiling.BURST_FACTOR * (1 + 1e-9));
                quotas += quota;
                rates += PauseCeiling.rateAtQuota(quota, n, r, W);
            }
            assertTrue(quotas <= brokerCeiling, "quotas " + quotas + " > " + brokerCeiling);
            assertTrue(rates <= brokerCeiling / PauseCeiling.BURST_FACTOR * (1 + 1e-9),
                    "rates " + rates + " > half of " + brokerCeiling);
        }
    }
}
