package io.volumequota.broker;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.apache.kafka.clients.consumer.InvalidOffsetException;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decision from the compacted decisions topic: partition 0, newest record with key
 * {@value #KEY}, value = the decision JSON exactly as in the file. Runs on the engine's reader
 * thread only; {@link #step} never throws.
 *
 * <p>Trouble (no broker yet, authorization, missing topic, lost position) is reported as an
 * {@link Outcome.Trouble} and retried; it never removes a decision already read, which stays in
 * force until its {@code validUntil}, after which the engine applies the on-missing action.
 * A consumer that cannot be created or fails other than by a timeout is closed and re-created
 * after a backoff of {@value #MIN_BACKOFF_MS} ms doubling up to {@value #MAX_BACKOFF_MS} ms.
 *
 * <p>Silence is trouble too: a consumer that received no record for the silence threshold
 * ({@link BootstrapRotation#silenceThresholdMs}: half the lifetime of the newest decision, unless
 * {@code volume.quota.decision.rebuild.after.ms} is set) is closed and rebuilt, bootstrapped
 * from one broker that did not lead the topic, in turn ({@link BootstrapRotation#next}): a
 * leader cut off from its peers keeps answering with its stale metadata, and the consumer would
 * otherwise keep fetching nothing from it until its next metadata refresh. Each rebuild is
 * logged and counted ({@link #rebuilds()}).
 */
final class TopicDecisionSource implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(TopicDecisionSource.class);

    /** The key the cluster agent writes every decision under. */
    static final String KEY = "cluster";
    /** Longest a search for the end offset may hold the reader thread. */
    static final long POSITION_TIMEOUT_MS = 1_000;
    static final long MIN_BACKOFF_MS = 1_000;
    static final long MAX_BACKOFF_MS = 8_000;
    /** Longest a rebuild waits for the old consumer's view of the brokers (it normally has one cached). */
    static final long VIEW_TIMEOUT_MS = 200;

    /** What one step found. */
    sealed interface Outcome {
        /** The newest decision record's value. */
        record Content(byte[] bytes, long offset) implements Outcome {
        }

        /** The newest record for the key is a tombstone. */
        record Deleted(long offset) implements Outcome {
        }

        /** Why no decision can be read now; {@code error} false for an empty topic. */
        record Trouble(String problem, boolean error) implements Outcome {
        }
    }

    private final VolumeQuotaConfig config;
    private final DecisionLog.Factory factory;
    private final LongSupplier monoMs;
    private final int engineId;

    private DecisionLog log;
    private boolean positioned;
    private long retryAtMs = Long.MIN_VALUE;
    private long backoffMs = MIN_BACKOFF_MS;
    private String trouble;
    private boolean otherKeysLogged;
    /** Monotonic time of the last record received, or of the last (re)build of the consumer. */
    private long heardAtMs;
    /** Lifetime (validUntil - decidedAt) of the newest decision received; 0 before the first. */
    private long lifetimeMs;
    private BootstrapRotation.View view = BootstrapRotation.View.EMPTY;
    private int turn;
    private final AtomicLong rebuilds = new AtomicLong();

    TopicDecisionSource(VolumeQuotaConfig config, DecisionLog.Factory factory, LongSupplier monoMs, int engineId) {
        this.config = config;
        this.factory = factory;
        this.monoMs = monoMs;
        this.engineId = engineId;
    }

    /** Polls for at most {@code pollMs}; null when there is nothing new. Never throws. */
    Outcome step(long pollMs) {
        long now = monoMs.getAsLong();
        if (log == null) {
            if (now < retryAtMs) {
                return null;
            }
            try {
                log = factory.open(config);
                positioned = false;
                heardAtMs = now;
            } catch (Throwable t) {
                return failed("cannot create the decisions consumer", t);
            }
        } else if (now - heardAtMs >= silenceThresholdMs()) {
            Outcome rebuilt = rebuild(now);
            if (rebuilt != null || log == null) {
                return rebuilt;
            }
        }
        try {
            if (!positioned) {
                Outcome empty = position();
                if (empty != null) {
                    return empty;
                }
            }
            return pollNewest(pollMs);
        } catch (InvalidOffsetException e) {
            positioned = false; // compacted or truncated under us: take the newest record again
            return note(new Outcome.Trouble("position lost on " + config.decisionTopic() + ": " + e, true));
        } catch (TimeoutException e) {
            // No broker answered yet (e.g. the broker itself is still starting): keep the consumer.
            positioned = false;
            // A fixed text (the exception's says "in 1002ms"), so the WARN is logged once.
            return note(new Outcome.Trouble("no answer from " + config.consumerProperties().get("bootstrap.servers")
                    + " about the end of " + config.decisionTopic() + "-0 within " + POSITION_TIMEOUT_MS + " ms",
                    true));
        } catch (Throwable t) {
            closeLog();
            return failed("cannot read " + config.decisionTopic() + "-0", t);
        }
    }

    /** Seeks to the newest record; an empty topic is a (quiet) trouble, anything else null. */
    private Outcome position() {
        long end = log.seekToNewest(Duration.ofMillis(POSITION_TIMEOUT_MS));
        positioned = true;
        backoffMs = MIN_BACKOFF_MS;
        LOG.info("volume-quota engine #{}: reading {} from offset {} (end offset {}){}", engineId,
                config.decisionTopic() + "-0", Math.max(0, end - 1), end,
                trouble == null ? "" : "; recovered from: " + trouble);
        trouble = null;
        if (end == 0) {
            return note(new Outcome.Trouble("decisions topic " + config.decisionTopic()
                    + " is empty: no decision written yet", false));
        }
        return null;
    }

    /** The newest record of key {@link #KEY} in one poll, or null if none came. */
    private Outcome pollNewest(long pollMs) {
        DecisionLog.DecisionRecord newest = null;
        for (DecisionLog.DecisionRecord record : log.poll(Duration.ofMillis(pollMs))) {
            heardAtMs = monoMs.getAsLong();
            if (KEY.equals(record.key())) {
                newest = record;
            } else if (!otherKeysLogged) {
                otherKeysLogged = true;
                LOG.warn("volume-quota engine #{}: ignoring records of {} with key {} (only key {} is read;"
                        + " logged once)", engineId, config.decisionTopic(), record.key(), KEY);
            }
        }
        if (newest == null) {
            return null;
        }
        if (newest.value() != null) {
            noteLifetime(newest.value());
        }
        return newest.value() == null ? new Outcome.Deleted(newest.offset())
                : new Outcome.Content(newest.value(), newest.offset());
    }

    /** How long the reader may receive nothing before its consumer is rebuilt. */
    long silenceThresholdMs() {
        return BootstrapRotation.silenceThresholdMs(config.decisionRebuildAfterMs(), lifetimeMs,
                config.maxValidityMs());
    }

    /** Consumers rebuilt after silence since the start. */
    long rebuilds() {
        return rebuilds.get();
    }

    private void noteLifetime(byte[] value) {
        try {
            Decision decision = Decision.parse(value);
            if (decision.decidedAtInstant() != null) {
                long lifetime = Duration.between(decision.decidedAtInstant(), decision.validUntil()).toMillis();
                if (lifetime > 0) {
                    lifetimeMs = lifetime;
                }
            }
        } catch (Decision.InvalidDecisionException | RuntimeException e) {
            // the engine reports a garbled decision; the last lifetime stays
        }
    }

    /**
     * Replaces a silent consumer with one bootstrapped from one broker that did not lead, in
     * turn. Null when the new consumer is in place (it positions itself at the next step).
     */
    private Outcome rebuild(long now) {
        long silentMs = now - heardAtMs;
        try {
            BootstrapRotation.View known = log.brokers(Duration.ofMillis(VIEW_TIMEOUT_MS));
            if (!known.isEmpty()) {
                view = known;
            }
        } catch (Throwable t) {
            // a stuck consumer may not answer: keep what we knew
        }
        String configured = config.consumerProperties().get("bootstrap.servers");
        List<String> candidates = BootstrapRotation.candidates(view, BootstrapRotation.servers(configured));
        String address = candidates.isEmpty() ? configured : BootstrapRotation.next(view, candidates, turn);
        turn++;
        long count = rebuilds.incrementAndGet();
        if (!Thread.currentThread().isInterrupted()) {
            LOG.info("volume-quota engine #{}: no record of {} for {} ms: rebuilding the decisions consumer,"
                    + " bootstrapped from {} (rebuild {}; leaders seen {}; a leader cut off from its peers keeps"
                    + " answering with its stale metadata)", engineId, config.decisionTopic() + "-0", silentMs,
                    address, count, view.leaders().isEmpty() ? "none" : view.leaders());
        }
        closeLog();
        heardAtMs = now;
        try {
            log = factory.open(config.withBootstrapServers(address));
            positioned = false;
            return null;
        } catch (Throwable t) {
            return failed("cannot create the decisions consumer", t);
        }
    }

    private Outcome failed(String what, Throwable t) {
        long now = monoMs.getAsLong();
        retryAtMs = now + backoffMs;
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        return note(new Outcome.Trouble(what + ": " + t, true));
    }

    /** Logs a problem when it differs from the last one. */
    private Outcome note(Outcome.Trouble outcome) {
        if (!outcome.problem().equals(trouble) && !Thread.currentThread().isInterrupted()) {
            if (outcome.error()) {
                LOG.warn("volume-quota engine #{}: {} (retrying; a decision already read stays in force until its"
                        + " validUntil)", engineId, outcome.problem());
            } else {
                LOG.info("volume-quota engine #{}: {}", engineId, outcome.problem());
            }
        }
        trouble = outcome.problem();
        return outcome;
    }

    private void closeLog() {
        DecisionLog current = log;
        log = null;
        positioned = false;
        if (current != null) {
            try {
                current.close();
            } catch (Throwable ignored) {
                // closing is best effort
            }
        }
    }

    /** Closes the consumer; call only when the reader thread has stopped. */
    @Override
    public void close() {
        closeLog();
    }
}
