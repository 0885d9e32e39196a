package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.server.quota.ClientQuotaType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue section 4: how often quotas change (and every quota sensor is reset) while the decider
 * is in THROTTLE, with 1,000 producing principals, before and after quantizing the factor.
 *
 * <p>Trace (seeded, 60 minutes, one decision per second like the decider's 1 s snapshots): the
 * fullest volume's usage u = 88 % + 4 % x sin(2 pi t / 20 min) + a 1 % retention sawtooth every
 * 5 min + Gaussian measurement noise (0.05 % per sample, and 0.2 % for a noisy variant);
 * factor = (95 % - u) / 10 % clamped to [0, 1], so the decision stays in THROTTLE with a factor
 * between about 0.1 and 1. Each second the decision
 * file is rewritten, every principal sends one produce request, the callback polls once, and one
 * request asks quotaResetRequired (as the broker does on every request).
 *
 * <p>"Before" is a factor step of 1e-9 (no quantization, like the callback before this change);
 * "after" is the default step 0.05 with half a step of hysteresis. Writes target/quota-churn.md.
 * Not part of the default test run (about a minute); run it with
 * {@code mvn -q -B -f deploy/broker-plugin/pom.xml test -Dtest=QuotaChurnBenchmark}.
 */
class QuotaChurnBenchmark {

    private static final int PRINCIPALS = 1_000;
    private static final int SECONDS = 3_600;

    @TempDir
    Path dir;

    record Churn(double changesPerMinute, long maxChangesInAMinute, double resetsPerMinute, long maxResetsInAMinute,
                 double decisionsPerMinute, double millisPerPoll) {
    }

    static double[] factorTrace(double noise) {
        Random random = new Random(20261122L);
        double[] factors = new double[SECONDS];
        for (int t = 0; t < SECONDS; t++) {
            double usage = 0.88 + 0.04 * Math.sin(2 * Math.PI * t / 1200.0) + 0.01 * ((t % 300) / 300.0)
                    + noise * random.nextGaussian();
            factors[t] = Math.max(0, Math.min(1, (0.95 - usage) / 0.10));
        }
        return factors;
    }

    private Churn run(String factorStep, double[] factors) throws IOException {
        TestSupport.MutableClock clock = new TestSupport.MutableClock(TestSupport.T0);
        Path file = dir.resolve("decision-" + factorStep + ".json");
        TestSupport.writeAtomically(file, TestSupport.decisionJson("OPEN", 1.0, clock.instant(), Duration.ofSeconds(30)));
        Map<String, Object> config = TestSupport.baseConfig(file);
        config.put(VolumeQuotaConfig.RELOAD_INTERVAL_MS, "3600000");
        config.put(VolumeQuotaConfig.THROTTLE_FACTOR_STEP, factorStep);
        // Every principal writes 1 MiB/s as the broker measures it: well under every THROTTLE quota.
        Map<String, Double> rates = new HashMap<>();
        List<KafkaPrincipal> principals = new ArrayList<>();
        for (int i = 0; i < PRINCIPALS; i++) {
            principals.add(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "app-" + i));
            rates.put("app-" + i, 1024.0 * 1024);
        }
        VolumeQuotaCallback callback = new VolumeQuotaCallback(clock, clock::millis, () -> rates);
        callback.configure(config);
        try {
            long[] changesPerMinute = new long[SECONDS / 60];
            long[] resetsPerMinute = new long[SECONDS / 60];
            String lastDecision = null;
            long decisions = 0;
            long pollNanos = 0;
            for (int t = 0; t < SECONDS; t++) {
                clock.advance(Duration.ofSeconds(1));
                String json = TestSupport.decisionJson("THROTTLE", factors[t], clock.instant(), Duration.ofSeconds(30));
                TestSupport.writeAtomically(file, json);
                String factor = String.valueOf(factors[t]);
                if (!factor.equals(lastDecision)) {
                    decisions++;
                    lastDecision = factor;
                }
                for (KafkaPrincipal principal : principals) {
                    callback.quotaMetricTags(ClientQuotaType.PRODUCE, principal, "producer-1");
                }
                long before = callback.engine().quotaChanges.get();
                long start = System.nanoTime();
                callback.reload();
                pollNanos += System.nanoTime() - start;
                changesPerMinute[t / 60] += callback.engine().quotaChanges.get() - before;
                if (callback.quotaResetRequired(ClientQuotaType.PRODUCE)) {
                    resetsPerMinute[t / 60]++;
                }
            }
            long changes = 0;
            long maxChanges = 0;
            long resets = 0;
            long maxResets = 0;
            for (int m = 0; m < changesPerMinute.length; m++) {
                changes += changesPerMinute[m];
                maxChanges = Math.max(maxChanges, changesPerMinute[m]);
                resets += resetsPerMinute[m];
                maxResets = Math.max(maxResets, resetsPerMinute[m]);
            }
            double minutes = SECONDS / 60.0;
            return new Churn(changes / minutes, maxChanges, resets / minutes, maxResets, decisions / minutes,
                    pollNanos / 1e6 / SECONDS);
        } finally {
            callback.close();
        }
    }

    @Test
    void quantizingTheFactorCutsQuotaChurnWithAThousandPrincipals() throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add("| usage noise | factor range | distinct decisions / min | factor step | quota changes / min (mean) |"
                + " quota changes in the busiest minute | quota resets / min (mean) | resets in the busiest minute |"
                + " poll time (mean) |");
        lines.add("|---|---|---|---|---|---|---|---|---|");
        for (double noise : new double[] {0.0005, 0.002}) {
            double[] factors = factorTrace(noise);
            double min = 1;
            double max = 0;
            for (double f : factors) {
                min = Math.min(min, f);
                max = Math.max(max, f);
            }
            Churn before = run("1e-9", factors);
            Churn after = run(String.valueOf(VolumeQuotaConfig.DEFAULT_THROTTLE_FACTOR_STEP), factors);
            for (Object[] row : new Object[][] {{"none (1e-9)", before}, {"0.05 (default)", after}}) {
                Churn c = (Churn) row[1];
                lines.add(String.format(Locale.ROOT, "| %.2f %% | %.2f .. %.2f | %.1f | %s | %.0f | %d | %.1f | %d |"
                                + " %.2f ms |", noise * 100, min, max, c.decisionsPerMinute(), row[0],
                        c.changesPerMinute(), c.maxChangesInAMinute(), c.resetsPerMinute(), c.maxResetsInAMinute(),
                        c.millisPerPoll()));
            }
            assertTrue(before.changesPerMinute() > 50 * PRINCIPALS, "continuous factor: nearly every second: " + before);
            assertTrue(after.changesPerMinute() * 5 < before.changesPerMinute(), "at least 5 x fewer: " + after);
            assertTrue(after.resetsPerMinute() * 5 < before.resetsPerMinute(), "at least 5 x fewer resets: " + after);
        }
        Path out = Path.of("target", "quota-churn.md");
        Files.createDirectories(out.getParent());
        Files.write(out, lines, StandardCharsets.UTF_8);
        System.out.println(String.join(System.lineSeparator(), lines));
    }
}
