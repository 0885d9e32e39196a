package io.volumequota.broker;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A quota epoch instead of rule 1 (docs/broker-plugin.md, "A quota epoch instead of rule 1"):
 * the same buffered producers through the same PAUSE under the callback as shipped, under epoch
 * variants ({@link EpochQuotaCallback}) and under a control without the epoch, on Kafka 4.3.1's
 * quota manager ({@link EpochSimulation}). Each row:
 * a 60 s PAUSE (throttles, mutes after OPEN, recovery, gaps, record ages, the first 30 s) and a
 * 150 s PAUSE (the paused rate once the descent is over). The table goes to
 * target/quota-epoch-simulation.md. Rules 2 and 3 are switched off through the settings they
 * read; rule 1 is reduced to the T_max rise by T_step = T_max.
 *
 * <p>A comparison, not a check of the callback (PauseBoundSimulationTest holds the shipped
 * bound): not part of the default test run (about 3 minutes); run it with
 * {@code mvn -q -B -f deploy/broker-plugin/pom.xml test -Dtest=QuotaEpochBenchmark}.
 */
class QuotaEpochBenchmark {

    private static final long PAUSE_MS = 60_000;
    private static final long LONG_PAUSE_MS = 150_000;
    private static final double NEVER = Double.POSITIVE_INFINITY;

    static final EpochSimulation.Variant SHIPPED = new EpochSimulation.Variant("rules 1-3 (as shipped)", NEVER,
            false, Map.of());
    /** The epoch bumped when the decision's target falls by more than half (PAUSE, or a THROTTLE step). */
    static final EpochSimulation.Variant EPOCH = new EpochSimulation.Variant("epoch, rules 2 and 3", 2.0, true,
            Map.of());
    static final EpochSimulation.Variant EPOCH_NO_RULE_3 = new EpochSimulation.Variant("epoch, rule 2", 2.0, true,
            Map.of(VolumeQuotaConfig.ASSUMED_REQUEST_BYTES, "1")); // no backlog planned for: rule 3 off
    static final EpochSimulation.Variant EPOCH_ALONE = new EpochSimulation.Variant("epoch alone", 2.0, true,
            Map.of(VolumeQuotaConfig.PAUSE_THROTTLE_MS, "1000000000")); // floor 256 KiB/s: rules 2 and 3 off
    /** Rule 1 reduced to the T_max rise (T_step = T_max): quota = max(target, floor, B / (W + T_max)). */
    static final EpochSimulation.Variant EPOCH_T_MAX = new EpochSimulation.Variant("epoch, T_max only", 2.0, true,
            Map.of(VolumeQuotaConfig.PAUSE_THROTTLE_MS, "1000000000", VolumeQuotaConfig.STEP_DOWN_THROTTLE_MS,
                    String.valueOf(VolumeQuotaConfig.DEFAULT_MAX_THROTTLE_MS)));
    /** The same without the epoch: does the fresh window matter, or the rules left out? */
    static final EpochSimulation.Variant T_MAX = new EpochSimulation.Variant("no epoch, T_max only", NEVER, false,
            EPOCH_T_MAX.config());
    /** The epoch bumped when a principal's own quota falls below half its highest in the epoch. */
    static final EpochSimulation.Variant EPOCH_ON_QUOTA = new EpochSimulation.Variant(
            "epoch on the principal's quota, rules 2 and 3", 2.0, false, Map.of());
    static final List<EpochSimulation.Variant> VARIANTS = List.of(SHIPPED, EPOCH, EPOCH_NO_RULE_3, EPOCH_ALONE,
            EPOCH_T_MAX, T_MAX, EPOCH_ON_QUOTA);

    private static final EpochSimulation.Scenario[] SCENARIOS = {
        new EpochSimulation.Scenario(1, 0, false),
        new EpochSimulation.Scenario(8, 0, false),
        new EpochSimulation.Scenario(32, 0, false),
        new EpochSimulation.Scenario(1, 5, false),
        new EpochSimulation.Scenario(8, 5, false),
        new EpochSimulation.Scenario(32, 5, false),
        new EpochSimulation.Scenario(8, 0, true),
        new EpochSimulation.Scenario(32, 0, true),
        new EpochSimulation.Scenario(8, 5, true),
        new EpochSimulation.Scenario(32, 5, true),
    };

    @TempDir
    Path dir;

    /** Both runs of one row. */
    record Row(EpochSimulation.Variant variant, EpochSimulation.Scenario scenario, EpochSimulation.Outcome pause,
               EpochSimulation.Outcome longPause) {

        long maxThrottleMs() {
            return Math.max(pause.maxThrottleMs(), longPause.maxThrottleMs());
        }


        /** The principal's floor by rule 2 for full 1 MiB batches: max(256 KiB/s, N x 1 MiB / 12 s). */
        double ruleTwoFloor() {
            return PrincipalQuota.floor(EpochSimulation.BASE, EpochSimulation.FLOOR, scenario.connections(),
                    EpochSimulation.BATCH, VolumeQuotaConfig.DEFAULT_PAUSE_THROTTLE_MS);
        }
    }

    /**
     * Every variant through every scenario. The epoch bumped when the target falls holds the bound
     * with or without rules 2 and 3, and with rule 1 reduced to the T_max rise; without the epoch,
     * that reduced rule does not hold it, nor does an epoch bumped on each principal's own quota
     * (its bump lands while the old window's throttles are still running).
     */
    @Test
    void quotaEpochAgainstTheDescentRules() throws IOException {
        Map<EpochSimulation.Variant, List<Row>> rows = new LinkedHashMap<>();
        for (EpochSimulation.Variant variant : VARIANTS) {
            List<Row> variantRows = new ArrayList<>();
            for (EpochSimulation.Scenario scenario : SCENARIOS) {
                variantRows.add(new Row(variant, scenario, EpochSimulation.run(dir, variant, scenario, PAUSE_MS),
                        EpochSimulation.run(dir, variant, scenario, LONG_PAUSE_MS)));
            }
            rows.put(variant, variantRows);
        }
        writeTable(rows);
        Map<Integer, Double> fixedQuotaRates = new HashMap<>();
        for (EpochSimulation.Variant variant : List.of(SHIPPED, EPOCH, EPOCH_NO_RULE_3, EPOCH_ALONE, EPOCH_T_MAX)) {
            for (Row row : rows.get(variant)) {
                assertBoundHolds(row);
                double fixed = fixedQuotaRates.computeIfAbsent(row.scenario().connections(),
                        n -> PauseBoundSimulationTest.fixedQuotaRate10s(n, EpochSimulation.BATCH,
                                0.8 * EpochSimulation.BASE, row.ruleTwoFloor()));
                assertTrue(row.longPause().pausedMax10s() <= 2 * fixed, () -> "paused rate over 10 s above twice"
                        + " what a constant quota at the rule-2 floor lets through: " + row);
            }
        }
        for (EpochSimulation.Variant variant : List.of(T_MAX, EPOCH_ON_QUOTA)) {
            assertTrue(rows.get(variant).stream().anyMatch(row -> row.maxThrottleMs() > 30_000),
                    () -> variant.name() + " was expected to miss the 30 s bound somewhere: " + rows.get(variant));
        }
    }

    /**
     * OPEN at any moment of the descent, full 1 MiB requests from the start (8 and 32 Java-like
     * connections, PAUSE of 5 to 90 s): as shipped and with the epoch and the T_max rise alone.
     */
    @Test
    void boundHoldsWheneverOpenReturnsWithTheEpoch() {
        List<String> lines = new ArrayList<>();
        for (EpochSimulation.Variant variant : List.of(SHIPPED, EPOCH_T_MAX)) {
            long worstThrottle = 0;
            long worstStall = 0;
            long worstRecovery = 0;
            for (int connections : new int[] {8, 32}) {
                for (long pauseMs = 5_000; pauseMs <= 90_000; pauseMs += 17_000) {
                    EpochSimulation.Outcome o = run(variant, new EpochSimulation.Scenario(connections, 0, false),
                            EpochSimulation.BATCH, pauseMs);
                    String what = variant.name() + ", " + connections + " x 1 MiB, PAUSE " + pauseMs + " ms: " + o;
                    assertTrue(o.maxThrottleMs() <= 30_000, () -> "longest throttle over 30 s: " + what);
                    assertTrue(o.stallAfterOpenMs() <= 30_000, () -> "muted over 30 s after OPEN: " + what);
                    assertTrue(o.recoveryMs() <= 30_000, () -> "not back to 90 % within 30 s: " + what);
                    worstThrottle = Math.max(worstThrottle, o.maxThrottleMs());
                    worstStall = Math.max(worstStall, o.stallAfterOpenMs());
                    worstRecovery = Math.max(worstRecovery, o.recoveryMs());
                }
            }
            lines.add(String.format(Locale.ROOT, "OPEN after 5..90 s of PAUSE, 8 and 32 x 1 MiB, %s: longest"
                            + " throttle %.1f s, longest mute after OPEN %.1f s, slowest recovery to 90 %% %.1f s.",
                    variant.name(), worstThrottle / 1000.0, worstStall / 1000.0, worstRecovery / 1000.0));
        }
        write(Path.of("target", "quota-epoch-open-sweep.md"), lines);
    }

    private EpochSimulation.Outcome run(EpochSimulation.Variant variant, EpochSimulation.Scenario scenario,
                                        int smallestRequest, long pauseMs) {
        try {
            return EpochSimulation.run(dir, variant, scenario, smallestRequest, pauseMs);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void assertBoundHolds(Row row) {
        EpochSimulation.Outcome o = row.pause();
        String what = row.variant().name() + ", " + row.scenario().client() + " x " + row.scenario().connections()
                + ": " + o + " / 150 s PAUSE: " + row.longPause();
        assertTrue(row.maxThrottleMs() <= 30_000, () -> "longest throttle over 30 s: " + what);
        assertTrue(o.stallAfterOpenMs() <= 30_000, () -> "muted over 30 s after OPEN: " + what);
        assertTrue(o.recoveryMs() <= 30_000, () -> "not back to 90 % within 30 s: " + what);
        assertTrue(o.maxGapMs() <= 60_000, () -> "a connection idle for over 60 s: " + what);
        assertTrue(o.maxRecordAgeMs() < 120_000, () -> "a record older than delivery.timeout.ms: " + what);
        assertTrue(o.maxBlockedMs() < 60_000, () -> "send() blocked beyond max.block.ms: " + what);
    }

    private static void write(Path out, List<String> lines) {
        try {
            Files.createDirectories(out.getParent());
            Files.write(out, lines, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void writeTable(Map<EpochSimulation.Variant, List<Row>> rows) {
        List<String> lines = new ArrayList<>();
        lines.add("| variant | client | N | longest throttle | longest mute after OPEN | back to 90 % | longest gap"
                + " | oldest record at send | paused, max over 10 s | paused, last 30 s | rule-2 floor F"
                + " | bytes in first 30 s of PAUSE | epochs bumped |");
        lines.add("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (List<Row> variantRows : rows.values()) {
            for (Row row : variantRows) {
                lines.add(line(row));
            }
        }
        write(Path.of("target", "quota-epoch-simulation.md"), lines);
    }

    private static String line(Row row) {
        EpochSimulation.Outcome o = row.pause();
        EpochSimulation.Outcome steady = row.longPause();
        return String.format(Locale.ROOT, "| %s | %s | %d | %.1f s | %.1f s | %s | %.1f s | %.1f s | %.0f KiB/s"
                        + " | %.0f KiB/s | %.0f KiB/s | %.1f MiB | %d |",
                row.variant().name(), row.scenario().client(), row.scenario().connections(),
                row.maxThrottleMs() / 1000.0, o.stallAfterOpenMs() / 1000.0,
                o.recoveryMs() == Long.MAX_VALUE ? "never" : String.format(Locale.ROOT, "%.1f s",
                        o.recoveryMs() / 1000.0),
                o.maxGapMs() / 1000.0, o.maxRecordAgeMs() / 1000.0, steady.pausedMax10s() / 1024,
                steady.pausedLast30s() / 1024, row.ruleTwoFloor() / 1024, o.firstThirtySecondsBytes() / (1024 * 1024),
                o.bumps());
    }

}
