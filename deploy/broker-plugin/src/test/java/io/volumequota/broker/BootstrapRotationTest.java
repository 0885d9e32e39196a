package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

class BootstrapRotationTest {

    private static final List<String> CONFIGURED = List.of("bootstrap-a:9093", "bootstrap-b:9093");
    private static final BootstrapRotation.View THREE_LED_BY_1 = BootstrapRotation.View.of(
            Map.of(2, "b2:9093", 0, "b0:9093", 1, "b1:9093"), Set.of(1));

    private static List<String> firstRebuilds(BootstrapRotation.View view, List<String> configured, int count) {
        return IntStream.range(0, count).mapToObj(turn -> BootstrapRotation.next(view, configured, turn)).toList();
    }

    @Test
    void rebuildsTakeTheBrokersThatDidNotLeadInTurnByBrokerId() {
        assertEquals(List.of("b0:9093", "b2:9093", "b0:9093", "b2:9093", "b0:9093"),
                firstRebuilds(THREE_LED_BY_1, CONFIGURED, 5), "never the leader that went silent");
    }

    @Test
    void whenEveryBrokerLedEveryBrokerIsTriedInTurn() {
        BootstrapRotation.View allLead = BootstrapRotation.View.of(Map.of(0, "b0:9093", 1, "b1:9093"), Set.of(0, 1));
        assertEquals(List.of("b0:9093", "b1:9093", "b0:9093"), firstRebuilds(allLead, CONFIGURED, 3));
        BootstrapRotation.View single = BootstrapRotation.View.of(Map.of(4, "only:9093"), Set.of(4));
        assertEquals(List.of("only:9093", "only:9093"), firstRebuilds(single, CONFIGURED, 2));
    }

    @Test
    void withoutAViewTheConfiguredServersAreTakenInTurn() {
        assertEquals(List.of("bootstrap-a:9093", "bootstrap-b:9093", "bootstrap-a:9093"),
                firstRebuilds(BootstrapRotation.View.EMPTY, CONFIGURED, 3));
        assertEquals(List.of("bootstrap-a:9093", "bootstrap-b:9093"),
                BootstrapRotation.servers(" bootstrap-a:9093 ,, bootstrap-b:9093,"));
        assertThrows(IllegalArgumentException.class,
                () -> BootstrapRotation.next(BootstrapRotation.View.EMPTY, List.of(), 0));
    }

    @Test
    void aLargeTurnCountNeverFails() {
        assertEquals("b2:9093", BootstrapRotation.next(THREE_LED_BY_1, CONFIGURED, Integer.MAX_VALUE));
        assertEquals("b0:9093", BootstrapRotation.next(THREE_LED_BY_1, CONFIGURED, Integer.MIN_VALUE));
    }

    @Test
    void addressesAreHostColonPortWithIpv6InBrackets() {
        assertEquals("kafka-0.kafka-brokers:9093", BootstrapRotation.address("kafka-0.kafka-brokers", 9093));
        assertEquals("[::1]:9093", BootstrapRotation.address("::1", 9093));
        assertEquals("[::1]:9093", BootstrapRotation.address("[::1]", 9093));
    }

    @Test
    void theSilenceThresholdIsHalfTheDecisionsLifetimeUnlessSet() {
        long maxValidity = VolumeQuotaConfig.DEFAULT_MAX_VALIDITY_MS;
        assertEquals(15_000, BootstrapRotation.silenceThresholdMs(0, 30_000, maxValidity),
                "the agent's default 30 s validity: rewritten every 10 s at the latest");
        assertEquals(5_000, BootstrapRotation.silenceThresholdMs(0, 10_000, maxValidity));
        assertEquals(15_000, BootstrapRotation.silenceThresholdMs(0, 0, maxValidity), "before the first decision");
        assertEquals(150_000, BootstrapRotation.silenceThresholdMs(0, 3_600_000, maxValidity),
                "no decision lives longer than the maximum validity");
        assertEquals(5_000, BootstrapRotation.silenceThresholdMs(0, 0, 10_000),
                "before the first decision, at most half the maximum validity");
        assertEquals(BootstrapRotation.MIN_SILENCE_MS, BootstrapRotation.silenceThresholdMs(0, 200, maxValidity));
        assertEquals(2_000, BootstrapRotation.silenceThresholdMs(2_000, 30_000, maxValidity), "the setting wins");
    }
}
