package io.volumequota.broker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Jazzer fuzz target for the decision-file reader: what the callback does with the bytes of a
 * decision file, from the parse to the quota it would apply. Run by
 * {@code python -m benchmarks.decoder_fuzz --targets java-decision} (a million executions) and,
 * for a short run, by tests/schemas/test_decode_fuzz.py.
 *
 * <p>The contract: {@link Decision#parse} returns a decision or throws
 * {@link Decision.InvalidDecisionException}; anything else it throws is a crash (Jazzer keeps the
 * input). An accepted decision has a state, a factor in [0, 1] and a validUntil, and the quota it
 * maps to lies between the PAUSE floor and the base rate. Every outcome is counted and written, as
 * JSON, to the file named by the {@code FUZZ_COUNTS_FILE} environment variable at the end.
 */
public final class DecisionFileFuzzTarget {

    private static final Map<String, LongAdder> OUTCOMES = new ConcurrentHashMap<>();
    private static final double BASE = 1024 * 1024;
    private static final double PAUSE = 64 * 1024;
    private static final VolumeQuotaConfig CONFIG = VolumeQuotaConfig.parse(Map.of(
            VolumeQuotaConfig.DECISION_PATH, "/nonexistent/decision.json",
            VolumeQuotaConfig.BASE_BYTES_PER_SECOND, String.valueOf(BASE),
            VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, String.valueOf(PAUSE)));
    /** The host's clock during the run: a fixed instant, so that every run is repeatable. */
    private static final Instant NOW = Instant.parse("2026-11-22T12:00:00Z");

    private DecisionFileFuzzTarget() {
    }

    public static void fuzzerTestOneInput(byte[] data) {
        Decision decision;
        try {
            decision = Decision.parse(data);
        } catch (Decision.InvalidDecisionException rejected) {
            count("rejected: " + category(rejected.getMessage()));
            return;
        }
        if (decision.state() == null || decision.validUntil() == null) {
            throw new IllegalStateException("accepted without a state or validUntil: " + decision);
        }
        if (!(decision.throttleFactor() >= 0.0 && decision.throttleFactor() <= 1.0)) {
            throw new IllegalStateException("accepted a factor outside [0, 1]: " + decision);
        }
        String problem = DecisionValidity.problem(decision, NOW, 0, 0, CONFIG.maxValidityMs());
        double quota = QuotaMapping.targetBytesPerSecond(problem == null ? decision : null, CONFIG);
        if (!(quota >= PAUSE && quota <= BASE)) {
            throw new IllegalStateException("quota " + quota + " B/s outside [floor, base] for " + decision);
        }
        count(problem == null ? "applied: " + decision.state() : "not applied: " + category(problem));
    }

    /** Jazzer calls this once, when the run ends. */
    public static void fuzzerTearDown() {
        String target = System.getenv("FUZZ_COUNTS_FILE");
        if (target == null) {
            return;
        }
        StringBuilder json = new StringBuilder("{");
        new TreeMap<>(OUTCOMES).forEach((name, count) -> json.append(json.length() > 1 ? ", " : "")
                .append('"').append(name.replace("\"", "'")).append("\": ").append(count.sum()));
        try {
            Files.writeString(Path.of(target), json.append('}').toString(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + target, e);
        }
    }

    private static void count(String outcome) {
        OUTCOMES.computeIfAbsent(outcome, key -> new LongAdder()).increment();
    }

    /** Up to three leading words of a reason, without the input it quotes: "state must be". */
    private static String category(String message) {
        StringBuilder words = new StringBuilder();
        int taken = 0;
        for (String word : message.split("[ :,(]+")) {
            if (taken == 3 || !word.matches("[A-Za-z]+")) {
                break;
            }
            words.append(taken++ > 0 ? " " : "").append(word);
        }
        return words.toString();
    }
}
