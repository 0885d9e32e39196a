package io.volumequota.broker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/** Shared helpers: a settable clock, decision files written like the sidecar does, polling. */
final class TestSupport {

    static final Instant T0 = Instant.parse("2026-11-22T12:00:00.123Z");

    private TestSupport() {
    }

    /** A clock tests move by hand. */
    static final class MutableClock extends Clock {
        private final AtomicLong millis;

        MutableClock(Instant start) {
            this.millis = new AtomicLong(start.toEpochMilli());
        }

        void advance(Duration duration) {
            millis.addAndGet(duration.toMillis());
        }

        void setMillis(long value) {
            millis.set(value);
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis.get());
        }

        @Override
        public long millis() {
            return millis.get();
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException();
        }
    }

    /** A decision JSON like the sidecar's, valid from {@code decidedAt} for {@code validFor}. */
    static String decisionJson(String state, double factor, Instant decidedAt, Duration validFor) {
        return String.format(Locale.ROOT,
                "{\"schemaVersion\": 1, \"decidedAt\": \"%s\", \"validUntil\": \"%s\", \"state\": \"%s\","
                        + " \"throttleFactor\": %s, \"causedByMissingData\": false, \"unknownBrokers\": [],"
                        + " \"reasons\": [{\"kind\": \"limit\", \"brokerId\": 2, \"state\": \"%s\","
                        + " \"throttleFactor\": %s, \"volumeName\": \"/dev/nvme1n1\", \"detail\": \"test\"}],"
                        + " \"reasonsOmitted\": 0, \"someFutureField\": {\"x\": 1}}",
                decidedAt, decidedAt.plus(validFor), state, factor, state, factor);
    }

    /** Writes like the sidecar: a temporary file in the same directory, then an atomic rename. */
    static void writeAtomically(Path target, String content) throws IOException {
        Path tmp = Files.createTempFile(target.getParent(), ".decision", ".tmp");
        Files.writeString(tmp, content, StandardCharsets.UTF_8);
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    static Map<String, Object> baseConfig(Path decisionFile) {
        Map<String, Object> config = new HashMap<>();
        config.put(VolumeQuotaConfig.DECISION_PATH, decisionFile.toString());
        config.put(VolumeQuotaConfig.BASE_BYTES_PER_SECOND, "10485760");
        config.put(VolumeQuotaConfig.PAUSE_BYTES_PER_SECOND, "131072");
        config.put(VolumeQuotaConfig.EXCLUDED_PRINCIPALS, "User:publisher;User:CN=ops,O=example");
        return config;
    }

    /** Ceilings no simulated principal reaches (1 TiB/s): the runs that measure the throttle bounds alone. */
    static void withoutPauseCeiling(Map<String, Object> config) {
        config.put(VolumeQuotaConfig.PAUSE_PRINCIPAL_CEILING, "1099511627776");
        config.put(VolumeQuotaConfig.PAUSE_BROKER_CEILING, "1099511627776");
    }

    /** Polls {@code condition} until it holds or {@code timeout} passes; returns whether it held. */
    static boolean eventually(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(5);
        }
        return condition.getAsBoolean();
    }
}
