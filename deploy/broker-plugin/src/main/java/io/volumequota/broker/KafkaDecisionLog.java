package io.volumequota.broker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Partition 0 of the decisions topic through a {@link KafkaConsumer} (kafka-clients is on the
 * broker's classpath). {@code assign()}ed, never {@code subscribe()}d: no group, no commits, no
 * rebalances. Offsets are never reset automatically ({@code auto.offset.reset=none}): when the
 * position is lost, {@link TopicDecisionSource} seeks to the newest record again.
 */
final class KafkaDecisionLog implements DecisionLog {

    static final Factory FACTORY = KafkaDecisionLog::new;

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final TopicPartition partition;

    KafkaDecisionLog(VolumeQuotaConfig config) {
        Map<String, Object> properties = new HashMap<>(consumerProperties(config));
        partition = new TopicPartition(config.decisionTopic(), 0);
        consumer = new KafkaConsumer<>(properties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        try {
            consumer.assign(List.of(partition));
        } catch (RuntimeException e) {
            consumer.close(Duration.ZERO);
            throw e;
        }
    }

    /** The operator's {@code volume.quota.decision.consumer.*} settings over the callback's defaults. */
    static Map<String, String> consumerProperties(VolumeQuotaConfig config) {
        Map<String, String> properties = new HashMap<>();
        properties.put(ConsumerConfig.CLIENT_ID_CONFIG, "volume-quota-decisions");
        properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        // Decisions are a few KiB; a small fetch keeps the consumer's memory small.
        properties.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(1024 * 1024));
        properties.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "100");
        properties.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "2000");
        properties.putAll(config.consumerProperties());
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return properties;
    }

    @Override
    public long seekToNewest(Duration timeout) {
        Long end = consumer.endOffsets(List.of(partition), timeout).get(partition);
        if (end == null) {
            throw new IllegalStateException("no end offset for " + partition);
        }
        consumer.seek(partition, Math.max(0, end - 1));
        return end;
    }

    @Override
    public List<DecisionRecord> poll(Duration timeout) {
        List<DecisionRecord> records = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(timeout)) {
            byte[] key = record.key();
            records.add(new DecisionRecord(record.offset(),
                    key == null ? null : new String(key, java.nio.charset.StandardCharsets.UTF_8), record.value()));
        }
        return records;
    }

    @Override
    public BootstrapRotation.View brokers(Duration timeout) {
        Map<Integer, String> brokers = new HashMap<>();
        Set<Integer> leaders = new HashSet<>();
        for (PartitionInfo info : consumer.partitionsFor(partition.topic(), timeout)) {
            for (Node replica : info.replicas()) {
                if (replica != null && !replica.isEmpty()) {
                    brokers.put(replica.id(), BootstrapRotation.address(replica.host(), replica.port()));
                }
            }
            Node leader = info.leader();
            if (leader != null && !leader.isEmpty()) {
                brokers.put(leader.id(), BootstrapRotation.address(leader.host(), leader.port()));
                leaders.add(leader.id());
            }
        }
        return BootstrapRotation.View.of(brokers, leaders);
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(1));
    }
}
