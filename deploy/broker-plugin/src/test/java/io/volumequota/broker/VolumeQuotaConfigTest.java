package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class VolumeQuotaConfigTest {

    private static final Path FILE = Path.of("/var/run/volume-quota/decision.json");

    private static Map<String, Object> valid() {
        return TestSupport.baseConfig(FILE);
    }

    private static ConfigException rejected(Map<String, Object> config, String key) {
        ConfigException e = assertThrows(ConfigException.class, () -> VolumeQuotaConfig.parse(config));
        assertTrue(e.getMessage().contains(key), () -> "message should name " + key + ": " + e.getMessage());
        return e;
    }

    @Test
    void defaults() {
        Map<String, Object> config = valid();
        config.remove(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND);
        config.remove(VolumeQuotaConfig.EXCLUDED_PRINCIPALS);
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(config);
        assertEquals(FILE, parsed.decisionPath());
        assertEquals(10485760.0, parsed.baseBytesPerSecond());
        assertEquals(256 * 1024.0, parsed.pauseBytesPerSecond());
        assertEquals(2.0, parsed.maxStepDownRatio());
        assertEquals(11_000L, parsed.stepDownIntervalMs(), "Kafka's default window: 11 x 1 s");
        assertEquals(Set.of(), parsed.excludedUserNames());
        assertEquals(VolumeQuotaConfig.OnMissing.PAUSE, parsed.onMissing());
        assertEquals(250L, parsed.reloadIntervalMs());
    }

    @Test
    void readsAllSettingsAndTheBrokersQuotaWindow() {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.ON_MISSING, " open ");
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, 100);
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, "1.5");
        config.put("quota.window.num", "5");
        config.put("quota.window.size.seconds", "2");
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(config);
        assertEquals(VolumeQuotaConfig.OnMissing.OPEN, parsed.onMissing());
        assertEquals(100L, parsed.reloadIntervalMs());
        assertEquals(1.5, parsed.maxStepDownRatio());
        assertEquals(10_000L, parsed.stepDownIntervalMs());
        assertEquals(131072.0, parsed.pauseBytesPerSecond());
        // ';' separates entries so that a TLS DN with commas stays one entry.
        assertEquals(Set.of("publisher", "CN=ops,O=example"), parsed.excludedUserNames());
    }

    @Test
    void decisionPathIsRequired() {
        Map<String, Object> config = valid();
        config.remove(VolumeQuotaConfig.DECISION_PATH);
        rejected(config, VolumeQuotaConfig.DECISION_PATH);
        config.put(VolumeQuotaConfig.DECISION_PATH, "  ");
        rejected(config, VolumeQuotaConfig.DECISION_PATH);
    }

    @Test
    void baseIsRequired() {
        Map<String, Object> config = valid();
        config.remove(VolumeQuotaConfig.BASE_BYTES_PER_SECOND);
        rejected(config, VolumeQuotaConfig.BASE_BYTES_PER_SECOND);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-5", "abc", "NaN", "Infinity"})
    void baseMustBeAPositiveNumber(String value) {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.BASE_BYTES_PER_SECOND, value);
        rejected(config, VolumeQuotaConfig.BASE_BYTES_PER_SECOND);
    }

    @Test
    void pauseCeilingsDefaultTo2And8MiBPerSecondAndMayNotFallBelowTheFloor() {
        Map<String, Object> config = valid();
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(config);
        assertEquals(2 * 1024 * 1024, parsed.pausePrincipalCeiling());
        assertEquals(8 * 1024 * 1024, parsed.pauseBrokerCeiling());
        config.put(VolumeQuotaConfig.PAUSE_PRINCIPAL_CEILING, "4194304");
        config.put(VolumeQuotaConfig.PAUSE_BROKER_CEILING, "33554432");
        parsed = VolumeQuotaConfig.parse(config);
        assertEquals(4 * 1024 * 1024, parsed.pausePrincipalCeiling());
        assertEquals(32 * 1024 * 1024, parsed.pauseBrokerCeiling());
        config.put(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, "262144");
        config.put(VolumeQuotaConfig.PAUSE_PRINCIPAL_CEILING, "262143");
        rejected(config, VolumeQuotaConfig.PAUSE_PRINCIPAL_CEILING);
        config.put(VolumeQuotaConfig.PAUSE_PRINCIPAL_CEILING, "262144");
        config.put(VolumeQuotaConfig.PAUSE_BROKER_CEILING, "100000");
        rejected(config, VolumeQuotaConfig.PAUSE_BROKER_CEILING);
    }

    @Test
    void pauseFloorMustBePositiveAndNotAboveBase() {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, "0");
        rejected(config, VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND);
        config.put(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, "20000000");
        rejected(config, VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND);
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "0.5", "x"})
    void stepDownRatioMustExceedOne(String value) {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.MAX_STEP_DOWN_RATIO, value);
        rejected(config, VolumeQuotaConfig.MAX_STEP_DOWN_RATIO);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-1", "2.5", "soon"})
    void reloadIntervalMustBeAPositiveWholeNumber(String value) {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, value);
        rejected(config, VolumeQuotaConfig.RELOAD_INTERVAL_MS);
    }

    @ParameterizedTest
    @ValueSource(strings = {"PAUSED", "close", "1"})
    void onMissingMustBePauseOrOpen(String value) {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.ON_MISSING, value);
        rejected(config, VolumeQuotaConfig.ON_MISSING);
    }

    @ParameterizedTest
    @ValueSource(strings = {"publisher", "User:", "User:a;Group:ops", "user:a"})
    void excludedPrincipalsMustBeUserEntries(String value) {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.EXCLUDED_PRINCIPALS, value);
        rejected(config, VolumeQuotaConfig.EXCLUDED_PRINCIPALS);
    }

    @Test
    void excludedPrincipalsToleratesBlanksAndEmptyEntries() {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.EXCLUDED_PRINCIPALS, " User:a ;; User:b;");
        assertEquals(Set.of("a", "b"), VolumeQuotaConfig.parse(config).excludedUserNames());
        config.put(VolumeQuotaConfig.EXCLUDED_PRINCIPALS, "");
        assertEquals(Set.of(), VolumeQuotaConfig.parse(config).excludedUserNames());
    }

    @Test
    void aBadValueIsRefusedWithItsKeyAndValue() {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.BASE_BYTES_PER_SECOND, "0");
        assertEquals("Invalid value 0.0 for configuration volume.quota.produce.base.bytes.per.second: must be a"
                + " number > 0", rejected(config, VolumeQuotaConfig.BASE_BYTES_PER_SECOND).getMessage());
        config.put(VolumeQuotaConfig.BASE_BYTES_PER_SECOND, "ten");
        assertTrue(rejected(config, VolumeQuotaConfig.BASE_BYTES_PER_SECOND).getMessage().contains("ten"));
    }

    @Test
    void aKeyWithoutAValueTakesItsDefault() {
        Map<String, Object> config = valid();
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "");
        config.put(VolumeQuotaConfig.ON_MISSING, " ");
        config.put(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, "");
        VolumeQuotaConfig parsed = VolumeQuotaConfig.parse(config);
        assertEquals(VolumeQuotaConfig.DEFAULT_RELOAD_INTERVAL_MS, parsed.reloadIntervalMs());
        assertEquals(VolumeQuotaConfig.OnMissing.PAUSE, parsed.onMissing());
        assertEquals(VolumeQuotaConfig.DEFAULT_PAUSE_BYTES_PER_SECOND, parsed.pauseBytesPerSecond());
    }

    @Test
    void theBrokersOwnSettingsDoNotReachTheDefinition() {
        Map<String, Object> config = valid();
        config.put("config.providers", "file");
        config.put("config.providers.file.class", "no.such.ConfigProvider");
        config.put("volume.quota.no.such.key", "x");
        assertEquals(10485760.0, VolumeQuotaConfig.parse(config).baseBytesPerSecond());
    }
}
