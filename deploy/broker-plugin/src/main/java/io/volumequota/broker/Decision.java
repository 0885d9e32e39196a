package io.volumequota.broker;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The part of the sidecar's decision file (schemas/quota-decision.schema.json) that the
 * callback acts on. Unknown fields are ignored; {@code decidedAt} and
 * {@code causedByMissingData} are only kept for log lines.
 */
record Decision(State state, double throttleFactor, Instant validUntil, String decidedAt, boolean causedByMissingData) {

    /** The only major schema version this callback understands. */
    static final int SUPPORTED_SCHEMA_VERSION = 1;

    enum State { OPEN, THROTTLE, PAUSE }

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** Thrown for anything that is not a usable decision; the message says why. */
    static final class InvalidDecisionException extends Exception {
        private static final long serialVersionUID = 1L;

        InvalidDecisionException(String message) {
            super(message);
        }
    }

    static Decision parse(byte[] json) throws InvalidDecisionException {
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new InvalidDecisionException("not valid JSON: " + e.getOriginalMessage());
        } catch (java.io.IOException e) {
            throw new InvalidDecisionException("unreadable: " + e.getMessage());
        }
        if (root == null || !root.isObject()) {
            throw new InvalidDecisionException("not a JSON object");
        }
        JsonNode version = root.get("schemaVersion");
        // Absent means 1 (the schema's default).
        if (version != null && !(version.isIntegralNumber() && version.canConvertToInt()
                && version.intValue() == SUPPORTED_SCHEMA_VERSION)) {
            throw new InvalidDecisionException("unsupported schemaVersion " + version
                    + " (this callback reads " + SUPPORTED_SCHEMA_VERSION + ")");
        }
        State state;
        JsonNode stateNode = root.get("state");
        try {
            state = State.valueOf(stateNode == null || !stateNode.isTextual() ? "" : stateNode.textValue());
        } catch (IllegalArgumentException e) {
            throw new InvalidDecisionException("state must be OPEN, THROTTLE or PAUSE, got " + stateNode);
        }
        JsonNode factorNode = root.get("throttleFactor");
        if (factorNode == null || !factorNode.isNumber()
                || !(factorNode.doubleValue() >= 0.0 && factorNode.doubleValue() <= 1.0)) {
            throw new InvalidDecisionException("throttleFactor must be a number in [0, 1], got " + factorNode);
        }
        Instant validUntil = instant(root, "validUntil");
        JsonNode decidedAt = root.get("decidedAt");
        JsonNode missing = root.get("causedByMissingData");
        return new Decision(state, factorNode.doubleValue(), validUntil,
                decidedAt == null ? "?" : decidedAt.asText(),
                missing != null && missing.asBoolean(false));
    }

    private static Instant instant(JsonNode root, String field) throws InvalidDecisionException {
        JsonNode node = root.get(field);
        if (node == null || !node.isTextual()) {
            throw new InvalidDecisionException(field + " must be an ISO 8601 timestamp, got " + node);
        }
        try {
            return OffsetDateTime.parse(node.textValue()).toInstant();
        } catch (DateTimeParseException e) {
            throw new InvalidDecisionException(field + " must be an ISO 8601 timestamp with offset, got " + node);
        }
    }
}
