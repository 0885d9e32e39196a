package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.Test;

class QuotaMappingTest {

    private static final double BASE = 10 * 1024 * 1024;
    private static final double FLOOR = 128 * 1024;

    private static VolumeQuotaConfig config(String onMissing) {
        Map<String, Object> map = TestSupport.baseConfig(Path.of("/tmp/d.json"));
        map.put(VolumeQuotaConfig.ON_MISSING, onMissing);
        return VolumeQuotaConfig.parse(map);
    }

    private static double target(Decision.State state, double factor, String onMissing) {
        Decision d = new Decision(state, factor, Instant.MAX, "t", null, false);
        return QuotaMapping.targetBytesPerSecond(d, config(onMissing));
    }

    @Test
    void openIsTheBaseQuotaWhateverTheFactor() {
        assertEquals(BASE, target(Decision.State.OPEN, 1.0, "PAUSE"));
        assertEquals(BASE, target(Decision.State.OPEN, 0.3, "PAUSE"));
    }

    @Test
    void throttleIsBaseTimesFactorDownToThePauseFloor() {
        assertEquals(BASE * 0.42, target(Decision.State.THROTTLE, 0.42, "PAUSE"), 1e-6);
        assertEquals(BASE * 0.5, target(Decision.State.THROTTLE, 0.5, "PAUSE"), 1e-6);
        assertEquals(BASE, target(Decision.State.THROTTLE, 1.0, "PAUSE"), 1e-6);
        // base x 0.0125 = 131072 = floor; anything smaller is held at the floor
        assertEquals(FLOOR, target(Decision.State.THROTTLE, 0.0125, "PAUSE"), 1e-6);
        assertEquals(FLOOR, target(Decision.State.THROTTLE, 0.001, "PAUSE"));
        assertEquals(FLOOR, target(Decision.State.THROTTLE, 0.0, "PAUSE"));
        assertEquals(BASE * 0.02, target(Decision.State.THROTTLE, 0.02, "PAUSE"), 1e-6);
    }

    @Test
    void pauseIsTheFloorNeverZero() {
        assertEquals(FLOOR, target(Decision.State.PAUSE, 0.0, "PAUSE"));
        assertEquals(FLOOR, target(Decision.State.PAUSE, 0.0, "OPEN"));
    }

    @Test
    void noDecisionAppliesTheOnMissingAction() {
        assertEquals(FLOOR, QuotaMapping.targetBytesPerSecond(null, config("PAUSE")));
        assertEquals(BASE, QuotaMapping.targetBytesPerSecond(null, config("OPEN")));
    }
}
