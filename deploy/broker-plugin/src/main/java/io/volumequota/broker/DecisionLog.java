package io.volumequota.broker;

import java.time.Duration;
import java.util.List;

/**
 * The few consumer calls the topic source makes on partition 0 of the decisions topic:
 * {@link KafkaDecisionLog} in a broker, a fake in the unit tests. Used by one thread only (the
 * engine's reader). Any method may throw; {@link TopicDecisionSource} catches everything.
 */
interface DecisionLog extends AutoCloseable {

    /** One record of the decisions topic; {@code value} null is a tombstone. */
    record DecisionRecord(long offset, String key, byte[] value) {
    }

    /** Opens a log for these settings; must not do network I/O (the consumer connects lazily). */
    interface Factory {
        DecisionLog open(VolumeQuotaConfig config);
    }

    /**
     * Positions the reader on the newest record (end offset - 1, or 0 when the partition is
     * empty). May block up to {@code timeout}; throws if the end offset cannot be learnt.
     *
     * @return the end offset found
     */
    long seekToNewest(Duration timeout);

    /** The records fetched since the last call, oldest first; may block up to {@code timeout}. */
    List<DecisionRecord> poll(Duration timeout);

    /**
     * The brokers this consumer knows for the decisions topic (its replicas) and which of them
     * lead, from the consumer's own metadata; may block up to {@code timeout} when it has none.
     * Empty when unknown.
     */
    default BootstrapRotation.View brokers(Duration timeout) {
        return BootstrapRotation.View.EMPTY;
    }

    @Override
    void close();
}
