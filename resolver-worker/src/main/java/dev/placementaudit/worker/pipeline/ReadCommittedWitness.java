package dev.placementaudit.worker.pipeline;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
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
 * Reads the records read_committed, with a consumer of its own (no group, nothing committed), made for each question:
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
        this.timeout = timeout;
    }

    @Override
    public boolean visible(Map<TopicPartition, Long> records) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<TopicPartition, Long> unread = new HashMap<>(records);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(unread.keySet());
            unread.forEach(consumer::seek);
            while (!unread.isEmpty() && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(200));
                for (TopicPartition partition : polled.partitions()) {
                    Long wanted = unread.get(partition);
                    if (wanted == null) {
                        continue;
                    }
                    // read_committed skips an aborted record: the first one returned at or after it says which.
                    if (polled.records(partition).get(0).offset() != wanted) {
                        LOG.warn("the record at {}@{} is not visible read_committed (aborted)", partition, wanted);
                        return false;
                    }
                    unread.remove(partition);
                    consumer.pause(List.of(partition));
                }
                for (Map.Entry<TopicPartition, Long> left : unread.entrySet()) {
                    if (consumer.position(left.getKey(), Duration.ofNanos(Math.max(1, deadline - System.nanoTime()))) > left.getValue()) {
                        LOG.warn("the record at {}@{} is not visible read_committed (passed over)", left.getKey(), left.getValue());
                        return false;
                    }
                }
            }
            if (!unread.isEmpty()) {
                LOG.warn("could not tell within {} ms whether the records at {} committed; redoing from the group's offsets", timeout.toMillis(), unread);
                return false;
            }
            return true;
        } catch (KafkaException e) {
            LOG.warn("could not read {} read_committed ({}); redoing from the group's offsets", records, e.toString());
            return false;
        }
    }
}
