package dev.placementaudit.testkit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;

/**
 * Reads a whole topic from the beginning as a read_committed consumer would, without a consumer group: what a
 * downstream service is allowed to see, and nothing of aborted transactions.
 */
public final class TopicReader {
    private TopicReader() {
    }

    /**
     * Waits until at least {@code atLeast} committed records are there, then reads on for {@code settle} so that
     * any record beyond the expected count (a duplicate) is caught too.
     */
    public static List<ConsumerRecord<byte[], byte[]>> readCommitted(KafkaBroker broker, String topic, int atLeast,
                                                                     Duration timeout, Duration settle) {
        Map<String, Object> config = broker.clientConfig();
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            await().atMost(Duration.ofSeconds(30)).until(() -> !consumer.partitionsFor(topic).isEmpty());
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            await().atMost(timeout).pollInterval(Duration.ofMillis(50)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                return records.size() >= atLeast;
            });
            long settleUntil = System.nanoTime() + settle.toNanos();
            while (System.nanoTime() < settleUntil) {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            }
        }
        return records;
    }

    public static List<ConsumerRecord<byte[], byte[]>> readCommitted(KafkaBroker broker, String topic, int atLeast) {
        return readCommitted(broker, topic, atLeast, Duration.ofSeconds(60), Duration.ofSeconds(1));
    }
}
