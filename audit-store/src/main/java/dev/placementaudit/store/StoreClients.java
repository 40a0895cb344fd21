package dev.placementaudit.store;

import dev.placementaudit.store.config.StoreConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.util.HashMap;
import java.util.Map;

/** The store's own Kafka clients, as its ingest needs them; the user's {@code kafka.*} settings pass through beneath. */
final class StoreClients {
    private StoreClients() {
    }

    /** The ingest consumer: its group, read_committed, offsets committed with the projection's rows, never by the client. */
    static KafkaConsumer<byte[], byte[]> ingest(StoreConfig config) {
        Map<String, Object> consumerConfig = new HashMap<>(config.kafka());
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
        // Static membership: a store restarted after a crash rejoins as itself and gets its partitions back at once,
        // instead of waiting out the dead member's session (45 s by default) with nothing assigned.
        consumerConfig.putIfAbsent(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, config.instanceId());
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerConfig.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(config.maxPollRecords()));
        // A poll's records are one transaction: fetch enough per partition (1 MiB by default, ~2,000 decisions) to fill one, within -Xmx256m.
        consumerConfig.putIfAbsent(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(4 << 20));
        consumerConfig.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerConfig.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "audit-store-ingest");
        return new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** The producer of dead letters and chain heads: idempotent, acknowledged by every in-sync replica. */
    static KafkaProducer<byte[], byte[]> deadLetters(StoreConfig config) {
        Map<String, Object> producerConfig = new HashMap<>(config.kafka());
        producerConfig.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        producerConfig.put(ProducerConfig.ACKS_CONFIG, "all");
        producerConfig.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "audit-store-dlq");
        return new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
