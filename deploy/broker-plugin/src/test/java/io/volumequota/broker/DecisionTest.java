package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DecisionTest {

    private static Decision parse(String json) throws Decision.InvalidDecisionException {
        return Decision.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    private static String rejected(String json) {
        return assertThrows(Decision.InvalidDecisionException.class, () -> parse(json)).getMessage();
    }

    @Test
    void readsTheSidecarsDecisionAndIgnoresUnknownFields() throws Exception {
        Decision d = parse(TestSupport.decisionJson("THROTTLE", 0.42, TestSupport.T0, Duration.ofSeconds(30)));
        assertEquals(Decision.State.THROTTLE, d.state());
        assertEquals(0.42, d.throttleFactor());
        assertEquals(Instant.parse("2026-11-22T12:00:30.123Z"), d.validUntil());
        assertEquals("2026-11-22T12:00:00.123Z", d.decidedAt());
        assertEquals(Instant.parse("2026-11-22T12:00:00.123Z"), d.decidedAtInstant());
    }

    @Test
    void aNameGivenTwiceIsRefusedLikeTheDecoderOfEveryOtherWireDocument() {
        // A lenient reader keeps the last "state": one reader could see OPEN where another sees PAUSE.
        rejected("{\"state\":\"PAUSE\",\"state\":\"OPEN\",\"throttleFactor\":1,"
                + "\"validUntil\":\"2026-11-22T12:00:30Z\"}");
        rejected("{\"state\":\"OPEN\",\"throttleFactor\":NaN,\"validUntil\":\"2026-11-22T12:00:30Z\"}");
    }

    @Test
    void anUnparseableDecidedAtIsRefused() {
        rejected("{\"state\":\"OPEN\",\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30Z\","
                + "\"decidedAt\":\"yesterday\"}");
    }

    @Test
    void acceptsAnyOffsetAndAMissingSchemaVersion() throws Exception {
        Decision d = parse("{\"state\":\"PAUSE\",\"throttleFactor\":0,\"validUntil\":\"2026-11-22T13:00:30+01:00\"}");
        assertEquals(Decision.State.PAUSE, d.state());
        assertEquals(Instant.parse("2026-11-22T12:00:30Z"), d.validUntil());
    }

    /** A newer minor version of schema 1 only adds optional fields: read it (callbacks upgrade first). */
    @ParameterizedTest
    @ValueSource(strings = {"1", "\"1\"", "1.5", "\"1.12\"", "1.0"})
    void acceptsSchemaOneAndItsMinorVersions(String version) throws Exception {
        Decision d = parse("{\"schemaVersion\":" + version
                + ",\"state\":\"THROTTLE\",\"throttleFactor\":0.5,\"validUntil\":\"2026-11-22T12:00:30Z\","
                + "\"aFieldFromVersion1x\":[1,2]}");
        assertEquals(Decision.State.THROTTLE, d.state());
        assertEquals(0.5, d.throttleFactor());
    }

    @ParameterizedTest
    @ValueSource(strings = {"2", "0", "2.0", "\"2.1\"", "-1", "\"1.x\"", "\"\"", "true", "null", "[1]"})
    void rejectsOtherSchemaVersions(String version) {
        String message = rejected("{\"schemaVersion\":" + version
                + ",\"state\":\"OPEN\",\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30Z\"}");
        assertTrue(message.contains("schemaVersion"), message);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",
        "{",
        "[]",
        "null",
        "{\"state\":\"OPEN\",\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30Z\"} trailing",
        "{\"state\":\"open\",\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"state\":\"STOP\",\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"state\":\"THROTTLE\",\"throttleFactor\":1.5,\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"state\":\"THROTTLE\",\"throttleFactor\":-0.1,\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"state\":\"THROTTLE\",\"throttleFactor\":\"0.5\",\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"state\":\"THROTTLE\",\"validUntil\":\"2026-11-22T12:00:30Z\"}",
        "{\"state\":\"OPEN\",\"throttleFactor\":1}",
        "{\"state\":\"OPEN\",\"throttleFactor\":1,\"validUntil\":\"2026-11-22T12:00:30\"}",
        "{\"state\":\"OPEN\",\"throttleFactor\":1,\"validUntil\":1795000000}",
    })
    void rejectsGarbledDecisions(String json) {
        rejected(json);
    }
}
