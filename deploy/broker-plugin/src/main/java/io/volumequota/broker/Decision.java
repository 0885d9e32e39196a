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
record Decision(State state, double throttleFactor, Instant validUntil, String decidedAt, Instant decidedAtInstant,
                boolean causedByMissingData) {

    /**
     * The only major schema version this callback understands. Newer minor versions of it
     * ({@code 1.1}, {@code "1.2"}) only add optional fields and are accepted; a new major version
     * ({@code 2}) changes meaning and counts as no valid decision. Upgrade order: callbacks
     * first, then the decider.
     */
    static final int SUPPORTED_SCHEMA_VERSION = 1;

    enum State { OPEN, THROTTLE, PAUSE }

    /** Strict like the decoder of every other wire document: no trailing text, no name given twice. */
    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY);

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
        if (version != null && majorVersion(version) != SUPPORTED_SCHEMA_VERSION) {
            throw new InvalidDecisionException("unsupported schemaVersion " + version
                    + " (this callback reads " + SUPPORTED_SCHEMA_VERSION + " and its minor versions "
                    + SUPPORTED_SCHEMA_VERSION + ".x)");
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
        Instant decidedAtInstant = decidedAt == null ? null : instant(root, "decidedAt");
        JsonNode missing = root.get("causedByMissingData");
        return new Decision(state, factorNode.doubleValue(), validUntil,
                decidedAt == null ? "?" : decidedAt.asText(), decidedAtInstant,
                missing != null && missing.asBoolean(false));
    }

    /** The same decision with another throttle factor (the quantized one). */
    Decision withFactor(double factor) {
        return new Decision(state, factor, validUntil, decidedAt, decidedAtInstant, causedByMissingData);
    }

    /**
     * The major part of a schema version: 1 for {@code 1}, {@code 1.3} or {@code "1.3"};
     * -1 for anything that is not a non-negative version number.
     */
    static int majorVersion(JsonNode version) {
        String text;
        if (version.isIntegralNumber() && version.canConvertToInt()) {
            return version.intValue() >= 0 ? version.intValue() : -1;
        } else if (version.isFloatingPointNumber() || version.isBigDecimal()) {
            double value = version.doubleValue();
            return value >= 0 && value < Integer.MAX_VALUE ? (int) Math.floor(value) : -1;
        } else if (version.isTextual()) {
            text = version.textValue();
        } else {
            return -1;
        }
        if (!text.matches("[0-9]{1,9}(\\.[0-9]{1,9})?")) {
            return -1;
        }
        int dot = text.indexOf('.');
        return Integer.parseInt(dot < 0 ? text : text.substring(0, dot));
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
