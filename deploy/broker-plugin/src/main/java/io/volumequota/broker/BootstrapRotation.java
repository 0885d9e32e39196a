package io.volumequota.broker;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * When to rebuild the decisions consumer, and which broker the rebuilt one bootstraps from
 * (pure: no clock, no I/O).
 *
 * <p>A partition leader cut off from its peers keeps answering clients with its own, stale
 * metadata ("I lead") after the controller moved the leadership: a consumer that asks it keeps
 * fetching nothing from it until its next metadata refresh ({@code metadata.max.age.ms}, 5 min).
 * A consumer rebuilt from a <em>different</em> broker learns the new leader, whose newer leader
 * epoch outranks the stale answer. The cluster agent writes a decision at least every third of
 * its lifetime, so a reader that received no record for half of that lifetime is rebuilt.
 *
 * <p>The rebuilt consumer is given one address only: the Java client sends its first metadata
 * request to a bootstrap server picked at random, so the order of a longer list would not decide
 * which broker answers. It learns every other broker from that answer.
 */
final class BootstrapRotation {

    /** Silence threshold before the first decision was received: half the agent's default 30 s validity. */
    static final long DEFAULT_SILENCE_MS = 15_000;
    /** The shortest silence threshold, whatever the decisions' lifetime. */
    static final long MIN_SILENCE_MS = 1_000;

    private BootstrapRotation() {
    }

    /**
     * What one metadata answer said about the decisions topic: each broker's advertised
     * {@code host:port} by id, and the brokers leading its partitions.
     */
    record View(SortedMap<Integer, String> brokers, Set<Integer> leaders) {
        static final View EMPTY = new View(new TreeMap<>(), Set.of());

        View {
            brokers = Collections.unmodifiableSortedMap(new TreeMap<>(brokers));
            leaders = Set.copyOf(leaders);
        }

        static View of(Map<Integer, String> brokers, Set<Integer> leaders) {
            return new View(new TreeMap<>(brokers), leaders);
        }

        boolean isEmpty() {
            return brokers.isEmpty();
        }
    }

    /**
     * The address the {@code turn}-th rebuild (0, 1, ...) bootstraps from: in turn, by broker id,
     * among the brokers of {@code view} that did not lead (all of them when every one led), so
     * repeated rebuilds try every candidate. With no view (no metadata answer yet), the
     * {@code configured} bootstrap servers in turn.
     */
    static String next(View view, List<String> configured, int turn) {
        List<String> candidates = candidates(view, configured);
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("no broker known and no bootstrap server configured");
        }
        return candidates.get(Math.floorMod(turn, candidates.size()));
    }

    /** Every address the rebuilds take in turn, the first rebuild's first. */
    static List<String> candidates(View view, List<String> configured) {
        List<String> notLeading = new ArrayList<>();
        view.brokers().forEach((id, address) -> {
            if (!view.leaders().contains(id)) {
                notLeading.add(address);
            }
        });
        if (!notLeading.isEmpty()) {
            return List.copyOf(notLeading);
        }
        if (!view.isEmpty()) {
            return List.copyOf(view.brokers().values());
        }
        return List.copyOf(configured);
    }

    /** The entries of a {@code bootstrap.servers} value, trimmed, empty ones dropped. */
    static List<String> servers(String bootstrapServers) {
        List<String> servers = new ArrayList<>();
        if (bootstrapServers != null) {
            for (String server : bootstrapServers.split(",")) {
                if (!server.isBlank()) {
                    servers.add(server.trim());
                }
            }
        }
        return List.copyOf(servers);
    }

    /** {@code host:port} for a broker's advertised address (IPv6 literals in brackets). */
    static String address(String host, int port) {
        return (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
    }

    /**
     * How long the reader may receive no record before its consumer is rebuilt.
     *
     * @param configuredMs {@code volume.quota.decision.rebuild.after.ms}; 0 when not set
     * @param lifetimeMs the lifetime of the newest decision received ({@code validUntil - decidedAt});
     *        0 or less when none was received yet
     * @param maxValidityMs {@code volume.quota.max.validity.ms}: no decision lives longer
     * @return {@code configuredMs} when set; otherwise half the decision's lifetime (capped by
     *         the maximum validity), at least {@value #MIN_SILENCE_MS} ms; before any decision
     *         {@value #DEFAULT_SILENCE_MS} ms (at most half the maximum validity)
     */
    static long silenceThresholdMs(long configuredMs, long lifetimeMs, long maxValidityMs) {
        if (configuredMs > 0) {
            return configuredMs;
        }
        long lifetime = lifetimeMs > 0 ? Math.min(lifetimeMs, maxValidityMs) : Math.min(2 * DEFAULT_SILENCE_MS,
                maxValidityMs);
        return Math.max(MIN_SILENCE_MS, lifetime / 2);
    }
}
