package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the record read_committed, with a consumer of its own (no group, nothing committed), made for each question:
 * asked only after an outage, and only when the group's offsets are behind what the worker saw commit.
 */
final class ReadCommittedWitness implements CommitWitness {
    private static final Logger LOG = LoggerFactory.getLogger(ReadCommittedWitness.class);

    private final Map<String, Object> settings;
    private final Duration timeout;

    /** @param kafka the worker's client settings (bootstrap servers, security); group and isolation are set here */
    ReadCommittedWitness(Map<String, Object> kafka, String clientId, Duration timeout) {
        this.settings = new HashMap<>(kafka);
        settings.remove(ConsumerConfig.GROUP_ID_CONFIG);
        settings.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        settings.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        settings.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        settings.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "1");
        this.timeout = timeout;
    }

    @Override
    public boolean visible(TopicPartition partition, long offset) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, offset);
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    // read_committed skips an aborted record: the first one returned at or after it says which.
                    return record.offset() == offset;
                }
                if (consumer.position(partition, Duration.ofNanos(Math.max(1, deadline - System.nanoTime()))) > offset) {
                    return false;
                }
            }
            LOG.warn("could not tell within {} ms whether the record at {}@{} committed; redoing from the group's offsets", timeout.toMillis(),
                    partition, offset);
            return false;
        } catch (KafkaException e) {
            LOG.warn("could not read {}@{} read_committed ({}); redoing from the group's offsets", partition, offset, e.toString());
            return false;
        }
    }
}
