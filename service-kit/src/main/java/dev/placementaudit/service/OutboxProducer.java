package dev.placementaudit.service;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.util.HashMap;
import java.util.Map;

/**
 * The producer of what waits in a table (an outbox): its rows are marked published only after the broker acknowledged
 * every one of them ({@link Sends#all}), so a failure leaves them to a later sweep and a success never loses one.
 */
public final class OutboxProducer {
    private OutboxProducer() {
    }

    /**
     * An outbox's producer settings: idempotent, acknowledged by every replica, and bounded in time, since publishing
     * runs between ingest batches: it may fail (what it publishes waits in its table), never hold ingestion up.
     */
    private static Map<String, Object> config(Map<String, Object> kafka, String clientId) {
        Map<String, Object> config = new HashMap<>(kafka);
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        return config;
    }

    /** A producer with {@link #config} settings, string keys and values written by {@code values}. */
    public static <V> Producer<String, V> open(Map<String, Object> kafka, String clientId, Serializer<V> values) {
        return new KafkaProducer<>(config(kafka, clientId), new StringSerializer(), values);
    }
}
