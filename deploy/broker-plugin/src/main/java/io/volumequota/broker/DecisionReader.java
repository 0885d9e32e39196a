package io.volumequota.broker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The engine's reader-thread half for decisions: re-reads the decision file when it changed, or
 * polls the decisions topic ({@link TopicDecisionSource}), parses new bytes alike and holds the
 * newest result ({@link #loaded()}) for the ticker. It judges no validity: the ticker does
 * ({@link ValidityClock}), on its own timer.
 */
final class DecisionReader {

    /** Larger decision files are treated as garbled (the real one is a few KiB at most). */
    static final long MAX_DECISION_FILE_BYTES = 1024 * 1024;

    /** The newest decision read (null if none), why there is none, and when it was read (monotonic ms). */
    record Loaded(Decision decision, String problem, long readAtMonoMs) {
    }

    private record FileStamp(FileTime modified, long size, Object fileKey) {
    }

    private final VolumeQuotaConfig config;
    private final LongSupplier monoMs;
    private final AtomicLong reloadErrors;
    /** The topic source (decision.source=topic); null for the file. */
    private final TopicDecisionSource topicSource;

    // Reader -> ticker.
    private volatile Loaded loaded;

    // Reader state, guarded by this.
    private FileStamp lastStamp;
    private byte[] lastContent;
    private String lastReadProblem;

    DecisionReader(VolumeQuotaConfig config, DecisionLog.Factory decisionLogs, LongSupplier monoMs, int engineId,
                   AtomicLong reloadErrors) {
        this.config = config;
        this.monoMs = monoMs;
        this.reloadErrors = reloadErrors;
        this.topicSource = config.decisionSource() == VolumeQuotaConfig.DecisionSource.TOPIC
                ? new TopicDecisionSource(config, decisionLogs, monoMs, engineId) : null;
        this.loaded = topicSource == null ? new Loaded(null, "not read yet", 0)
                : new Loaded(null, "no decision read from topic " + config.decisionTopic() + " yet", 0);
    }

    boolean readsTopic() {
        return topicSource != null;
    }

    Loaded loaded() {
        return loaded;
    }

    /** Decisions consumers rebuilt after silence (topic source; 0 for the file). */
    long rebuilds() {
        return topicSource == null ? 0 : topicSource.rebuilds();
    }

    /** Closes the decisions consumer; only once the reader thread has stopped. */
    void close() {
        if (topicSource != null) {
            topicSource.close();
        }
    }

    /** Reads the decision file if it changed, or polls the decisions topic. */
    synchronized void read() {
        if (topicSource != null) {
            readTopic();
        } else {
            readFileIfChanged();
        }
    }

    /** Longest a poll of the decisions topic holds the reader thread. */
    private long topicPollMs() {
        return Math.min(config.reloadIntervalMs(), 500);
    }

    private void readTopic() {
        TopicDecisionSource.Outcome outcome = topicSource.step(topicPollMs());
        if (outcome instanceof TopicDecisionSource.Outcome.Content content) {
            accept(content.bytes(), "decision at offset " + content.offset() + " of " + config.decisionTopic());
        } else if (outcome instanceof TopicDecisionSource.Outcome.Deleted deleted) {
            forget("decision deleted from " + config.decisionTopic() + " (tombstone at offset " + deleted.offset()
                    + ")", false);
        } else if (outcome instanceof TopicDecisionSource.Outcome.Trouble trouble) {
            String problem = trouble.problem();
            if (!problem.equals(lastReadProblem)) {
                lastReadProblem = problem;
                if (trouble.error()) {
                    reloadErrors.incrementAndGet();
                }
            }
            // A decision already read stays in force until its validUntil; only say why there is none.
            Loaded current = loaded;
            if (current.decision() == null && !problem.equals(current.problem())) {
                loaded = new Loaded(null, problem, monoMs.getAsLong());
            }
        }
    }

    /** New decision bytes from either source: parsed exactly alike. Unchanged bytes keep their first read time. */
    private void accept(byte[] content, String where) {
        if (Arrays.equals(content, lastContent)) {
            return;
        }
        lastContent = content;
        long now = monoMs.getAsLong();
        try {
            loaded = new Loaded(Decision.parse(content), null, now);
            lastReadProblem = null;
        } catch (Decision.InvalidDecisionException e) {
            reloadErrors.incrementAndGet();
            lastReadProblem = "garbled " + where + ": " + e.getMessage();
            loaded = new Loaded(null, lastReadProblem, now);
        }
    }

    private void readFileIfChanged() {
        Path path = config.decisionPath();
        try {
            BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
            FileStamp stamp = new FileStamp(attributes.lastModifiedTime(), attributes.size(), attributes.fileKey());
            if (stamp.equals(lastStamp)) {
                return;
            }
            if (!attributes.isRegularFile() || attributes.size() > MAX_DECISION_FILE_BYTES) {
                forget("not a regular file of at most " + MAX_DECISION_FILE_BYTES + " bytes: " + path, true);
                return;
            }
            byte[] content = Files.readAllBytes(path);
            lastStamp = stamp;
            accept(content, "decision file " + path);
        } catch (NoSuchFileException e) {
            forget("decision file not found: " + path, false);
        } catch (IOException e) {
            forget("cannot read decision file " + path + ": " + e, true);
        }
    }

    private void forget(String problem, boolean error) {
        lastStamp = null;
        lastContent = null;
        if (!problem.equals(lastReadProblem)) {
            lastReadProblem = problem;
            if (error) {
                reloadErrors.incrementAndGet();
            }
        }
        if (loaded.decision() != null || !problem.equals(loaded.problem())) {
            loaded = new Loaded(null, problem, monoMs.getAsLong());
        }
    }
}
